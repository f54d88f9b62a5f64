/* The op families, in the order `replay inspect`-style listings give their ops. Each entry names
 * a `const xr_op_family_t xr_family_<name>` defined in kernels/ (a family's ops, planning,
 * completion, initializers and implementations live together there). An op name belongs to
 * exactly one family (tests/kernels:registry_test checks). No include guard: included once per
 * expansion. */
XR_FAMILY(gemm)
XR_FAMILY(elementwise)
XR_FAMILY(argmax)
XR_FAMILY(reduce)
XR_FAMILY(loss)
XR_FAMILY(softmax)
XR_FAMILY(norm)
XR_FAMILY(conv)
XR_FAMILY(pool)
XR_FAMILY(channel_norm)
XR_FAMILY(rotary)
XR_FAMILY(attention)
XR_FAMILY(paged_attention)
XR_FAMILY(kv_cache)
XR_FAMILY(unified_attention)
XR_FAMILY(quant)
XR_FAMILY(moe)
XR_FAMILY(routing)
XR_FAMILY(sync)
XR_FAMILY(scatter)
XR_FAMILY(collective)
