/* Op categories (replay/categories.h). */
#include "replay/categories.h"

#include <string.h>

const char *xr_category_name(xr_category_t category) {
  static const char *const names[XR_CATEGORY_COUNT] = {
      [XR_CATEGORY_GEMM] = "GEMM",
      [XR_CATEGORY_ATTENTION] = "attention",
      [XR_CATEGORY_MOE] = "MoE",
      [XR_CATEGORY_NORMALIZATION] = "normalization",
      [XR_CATEGORY_ELEMENTWISE] = "elementwise and reductions",
      [XR_CATEGORY_CONV_POOL] = "convolution and pooling",
      [XR_CATEGORY_COLLECTIVE] = "collectives",
      [XR_CATEGORY_COPY] = "copies",
      [XR_CATEGORY_OTHER] = "other",
  };
  return category >= 0 && category < XR_CATEGORY_COUNT ? names[category] : "other";
}

/* The part of "ns::op.overload" between the namespace and the overload. */
static void base_name(const char *op_name, char *out, size_t size) {
  const char *start = strrchr(op_name, ':');
  start = start ? start + 1 : op_name;
  size_t n = strcspn(start, ".");
  if (n >= size) n = size - 1;
  memcpy(out, start, n);
  out[n] = '\0';
}

static bool any_of(const char *name, const char *const *words) {
  for (; *words; words++)
    if (strstr(name, *words)) return true;
  return false;
}

/* Data movement, whatever family runs it: copies and casts, joins, gathers and scatters. */
static bool is_copy(const char *base) {
  static const char *const exact[] = {"copy_",  "_to_copy", "to",     "clone",         "contiguous",
                                      "cat",    "stack",    "index",  "index_select",  "gather",
                                      "scatter", "scatter_", "scatter_add", "scatter_add_",
                                      "index_put_", "index_put", "index_copy_", "embedding",
                                      "repeat", "repeat_interleave", "masked_select", "take",
                                      "flip", "roll", "narrow_copy", "_unsafe_view", NULL};
  for (const char *const *e = exact; *e; e++)
    if (!strcmp(base, *e)) return true;
  return false;
}

xr_category_t xr_op_category(const char *family, const char *op_name) {
  char base[128];
  base_name(op_name ? op_name : "", base, sizeof base);
  if (is_copy(base)) return XR_CATEGORY_COPY;
  static const struct {
    const char *family;
    xr_category_t category;
  } families[] = {
      {"gemm", XR_CATEGORY_GEMM},
      {"attention", XR_CATEGORY_ATTENTION},
      {"paged_attention", XR_CATEGORY_ATTENTION},
      {"unified_attention", XR_CATEGORY_ATTENTION},
      {"kv_cache", XR_CATEGORY_ATTENTION},
      {"moe", XR_CATEGORY_MOE},
      {"routing", XR_CATEGORY_MOE},
      {"norm", XR_CATEGORY_NORMALIZATION},
      {"channel_norm", XR_CATEGORY_NORMALIZATION},
      {"softmax", XR_CATEGORY_NORMALIZATION},
      {"elementwise", XR_CATEGORY_ELEMENTWISE},
      {"argmax", XR_CATEGORY_ELEMENTWISE},
      {"reduce", XR_CATEGORY_ELEMENTWISE},
      {"rotary", XR_CATEGORY_ELEMENTWISE},
      {"quant", XR_CATEGORY_ELEMENTWISE},
      {"conv", XR_CATEGORY_CONV_POOL},
      {"pool", XR_CATEGORY_CONV_POOL},
      {"collective", XR_CATEGORY_COLLECTIVE},
      {"scatter", XR_CATEGORY_COPY},
  };
  if (family && family[0])
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
      if (!strcmp(family, families[i].family)) return families[i].category;
  /* No family planned it (unsupported here, or a report without families): by name. */
  const char *name = op_name ? op_name : "";
  static const char *const collective[] = {"all_reduce", "allreduce", "all_gather", "allgather",
                                           "reduce_scatter", "all_to_all", "alltoall", "broadcast",
                                           "nccl", "rccl", "c10d", NULL};
  static const char *const attention[] = {"attention", "attn", "sdpa", "flash", "cache", NULL};
  static const char *const moe[] = {"moe", "expert", "topk_softmax", NULL};
  static const char *const gemm[] = {"mm", "linear", "matmul", "gemm", "addmm", "baddbmm", NULL};
  static const char *const norm[] = {"norm", "softmax", NULL};
  static const char *const conv[] = {"conv", "pool", NULL};
  if (any_of(name, collective)) return XR_CATEGORY_COLLECTIVE;
  if (any_of(name, attention)) return XR_CATEGORY_ATTENTION;
  if (any_of(name, moe)) return XR_CATEGORY_MOE;
  if (any_of(base, gemm)) return XR_CATEGORY_GEMM;
  if (any_of(base, norm)) return XR_CATEGORY_NORMALIZATION;
  if (any_of(base, conv)) return XR_CATEGORY_CONV_POOL;
  return XR_CATEGORY_OTHER;
}

void xr_category_add(xr_category_total_t totals[XR_CATEGORY_COUNT], const char *family,
                     const char *op_name, double count, double median_us, double trace_us) {
  xr_category_total_t *t = &totals[xr_op_category(family, op_name)];
  if (!(count >= 1)) count = 1;
  t->ops++;
  bool timed = median_us > 0;
  if (timed) {
    t->timed++;
    t->replay_us += count * median_us;
  }
  if (trace_us >= 0) {
    t->trace_us += count * trace_us;
    if (timed) t->trace_timed_us += count * trace_us;
  }
}

void xr_report_category_totals(const xr_report_contents_t *c,
                               xr_category_total_t totals[XR_CATEGORY_COUNT]) {
  memset(totals, 0, sizeof(xr_category_total_t) * XR_CATEGORY_COUNT);
  for (size_t i = 0; i < c->op_count; i++) {
    const xr_report_entry_t *e = &c->ops[i];
    xr_category_add(totals, e->family, e->name, e->count, e->median_us, e->trace_us);
  }
}
