// kernels/gpu/scatter.cu's kernels executed on the CPU under tests/gpu/cuda_emulation.h,
// launched as kernels/scatter_device.c launches them (the parameter blocks from
// xr_sc_device_params, the out-of-place copy, the mask's count / scan / write, the main pass),
// against ref.scatter on the same inputs (seeded contents, then the family's initializer, with
// default and with wild indices). A machine without a GPU thus runs the device code's logic;
// tests/kernels:scatter_matrix_{cuda,hip} run it on devices. Each sequence runs twice: the second run must
// repeat the first (out-of-place ops), so nothing a run leaves behind leaks into the next.
#include <criterion/criterion.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tests/gpu/cuda_emulation.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#include "tests/gpu/scatter_emulated.inc"
#pragma GCC diagnostic pop

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"  // hal.h's C initialisers
extern "C" {
#include "formats/bundle.h"
#include "kernels/dtype.h"
#include "kernels/initializer.h"
#include "kernels/scatter.h"
}
#pragma GCC diagnostic pop

namespace {

typedef std::vector<unsigned char> bytes_t;

constexpr unsigned kThreads = 32;  // the kernels do not depend on the block's size

xr_emu_dim grid_for(long long items) {
  return xr_emu_dim{(unsigned)((items + kThreads - 1) / kThreads), 1, 1};
}

// The emulated device sequence on host copies of the tensors (binding order).
void run_device(const xr_scatter_problem_t *p, const std::vector<xr_tensor_t> &t,
                std::vector<bytes_t> &mem, bytes_t &positions, bytes_t &chunk_base, bytes_t &count,
                bytes_t &acc, bytes_t &cnt) {
  xr_sc_dev_params_t q, cq;
  xr_sc_device_params(p, t.data(), false, 65536, &q);
  static unsigned char dummy[64];
  unsigned char *dst = mem[p->dst.tensor].data();
  const unsigned char *src = p->src.tensor >= 0 ? mem[p->src.tensor].data() : dummy;
  const unsigned char *index[4] = {dummy, dummy, dummy, dummy};
  for (int k = 0; k < p->slot_count; k++)
    if (p->slots[k].source == XR_SC_INDEX) index[k] = mem[p->slots[k].tensor].data();
  long long *pos = (long long *)positions.data(), *n = (long long *)count.data();
  long long *base = (long long *)chunk_base.data();
  if (p->copy_src >= 0) {
    xr_sc_device_params(p, t.data(), true, 0, &cq);
    const unsigned char *self = mem[p->copy_src].data();
    if (cq.numel > 0)
      xr_emu_launch(grid_for(cq.numel), kThreads,
                    [&] { xr_sc_gather(cq, dst, self, dummy, dummy, dummy, dummy, pos, n); });
  }
  if (p->mask >= 0 && p->mask_numel > 0) {
    const unsigned char *mask = mem[p->mask].data();
    xr_emu_launch(grid_for(q.mask_chunks), kThreads, [&] { xr_sc_mask_count(q, mask, base); });
    xr_emu_launch(grid_for(1), kThreads, [&] { xr_sc_mask_scan(q, base, n); });
    xr_emu_launch(grid_for(q.mask_chunks), kThreads, [&] { xr_sc_mask_write(q, mask, base, pos); });
  }
  if (p->numel == 0) return;
  if (p->kind == XR_SC_GATHER) {
    xr_emu_launch(grid_for(q.numel), kThreads, [&] {
      xr_sc_gather(q, dst, src, index[0], index[1], index[2], index[3], pos, n);
    });
  } else if (p->kind == XR_SC_SCATTER) {
    xr_emu_launch(grid_for(q.nf * q.chunks), kThreads, [&] {
      xr_sc_scatter(q, dst, src, index[0], index[1], index[2], index[3], pos, n, acc.data(),
                    (int *)cnt.data());
    });
  } else {
    xr_emu_launch(grid_for(q.shape[0]), kThreads,
                  [&] { xr_sc_nonzero(q, (long long *)dst, pos, n); });
  }
}

// ref.scatter through the kernels API on the cpu device, over copies of `mem`.
void run_reference(const xr_op_plan_t *plan, std::vector<xr_tensor_t> t,
                   std::vector<bytes_t> &mem) {
  xr_hal_device_t *device;
  cr_assert_eq(xr_hal_device_create("cpu", &device), XR_OK, "%s", xr_last_error());
  const xr_kernel_impl_t *impl;
  cr_assert_eq(xr_kernel_select(plan, device, XR_KERNEL_REFERENCE, &impl), XR_OK);
  for (size_t i = 0; i < t.size(); i++) {
    cr_assert_eq(xr_hal_buffer_alloc(device, mem[i].size(), &t[i].buffer), XR_OK);
    cr_assert_eq(xr_hal_buffer_write(t[i].buffer, 0, mem[i].data(), mem[i].size()), XR_OK);
  }
  xr_kernel_instance_t *instance;
  xr_hal_stream_t *stream;
  cr_assert_eq(xr_kernel_prepare(plan, impl, device, t.data(), &instance), XR_OK, "%s",
               xr_last_error());
  cr_assert_eq(xr_hal_stream_create(device, &stream), XR_OK);
  cr_assert_eq(xr_kernel_enqueue(instance, stream), XR_OK);
  cr_assert_eq(xr_hal_stream_synchronize(stream), XR_OK);
  for (size_t i = 0; i < t.size(); i++) {
    cr_assert_eq(xr_hal_buffer_read(mem[i].data(), t[i].buffer, 0, mem[i].size()), XR_OK);
    xr_hal_buffer_free(t[i].buffer);
  }
  xr_hal_stream_destroy(stream);
  xr_kernel_instance_destroy(instance);
  xr_hal_device_destroy(device);
}

// NMSE of the view's elements (both as doubles); NaN where they differ in NaN-ness.
double nmse(const xr_tensor_t &t, const bytes_t &a, const bytes_t &b) {
  long long n = 1;
  for (int d = 0; d < t.rank; d++) n *= t.shape[d];
  double num = 0, den = 0;
  for (long long e = 0; e < n; e++) {
    long long at = t.offset, rest = e;
    for (int d = t.rank - 1; d >= 0; d--)
      at += (rest % t.shape[d]) * t.strides[d], rest /= t.shape[d];
    double x = xr_load_element(a.data(), t.dtype, at), y = xr_load_element(b.data(), t.dtype, at);
    if (std::isnan(x) != std::isnan(y)) return NAN;
    if (std::isnan(x)) continue;
    num += (x - y) * (x - y);
    den += y * y;
  }
  return den > 0 ? num / den : num;
}

void check_case(const std::string &json, const char *policy) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json.data(), json.size(), "case", ".", NULL, &b),
               XR_OK, "%s", xr_last_error());
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&b->ops[0], &plan), XR_OK, "%s", xr_last_error());
  const xr_scatter_problem_t *p = (const xr_scatter_problem_t *)plan.problem;
  size_t n = plan.input_count + plan.return_count;
  std::vector<xr_tensor_t> t(n);
  std::vector<bytes_t> mem(n);
  std::vector<void *> host(n);
  std::vector<size_t> sizes(n);
  std::vector<unsigned char> has_data(n, 0);
  for (size_t i = 0; i < n; i++) {
    memset(&t[i], 0, sizeof t[i]);
    if (i < plan.input_count) {
      const xr_tensor_spec_t *s = plan.inputs[i];
      cr_assert_eq(xr_tensor_storage_bytes(s, &sizes[i]), XR_OK);
      t[i].dtype = s->dtype;
      t[i].rank = s->rank;
      memcpy(t[i].shape, s->shape, sizeof(int64_t) * (size_t)s->rank);
      memcpy(t[i].strides, s->strides, sizeof(int64_t) * (size_t)s->rank);
      t[i].offset = s->storage_offset;
    } else {
      const xr_tensor_desc_t *d = &plan.returns[i - plan.input_count];
      int64_t e = 1;
      for (int k = d->rank - 1; k >= 0; k--) t[i].strides[k] = e, e *= d->shape[k];
      t[i].dtype = d->dtype;
      t[i].rank = d->rank;
      memcpy(t[i].shape, d->shape, sizeof(int64_t) * (size_t)d->rank);
      sizes[i] = (size_t)e * xr_dtype_size(d->dtype);
    }
    mem[i].assign(sizes[i] + 8, 0xff);  // returns stay poisoned (NaN / -1)
    host[i] = mem[i].data();
    size_t count = sizes[i] / xr_dtype_size(t[i].dtype);
    for (size_t e = 0; i < plan.input_count && e < count; e++) {
      double v = t[i].dtype == XR_DTYPE_BOOL        ? (double)((e * 5) % 3 == 0)
                 : xr_dtype_is_floating(t[i].dtype) ? ((double)((e * 7919) % 23) - 11.0) / 4.0
                                                    : (double)((e * 31) % 16);
      xr_store_element(host[i], t[i].dtype, (int64_t)e, v);
    }
  }
  char text[256] = "";
  xr_init_context_t ctx = {};
  ctx.op = plan.op;
  ctx.plan = &plan;
  ctx.host = host.data();
  ctx.sizes = sizes.data();
  ctx.has_data = (const bool *)has_data.data();
  ctx.seed = 5;
  ctx.params = policy;
  ctx.policy = text;
  ctx.policy_size = sizeof text;
  xr_initializer_fn fn = xr_kernel_initializer(&plan);
  cr_assert(fn != NULL);
  cr_assert_eq(fn(&ctx), XR_OK);
  std::vector<bytes_t> ref = mem, dev = mem;
  run_reference(&plan, t, ref);
  size_t extent = (size_t)(p->dst_extent > 0 ? p->dst_extent : 1);
  bytes_t positions(8 * (size_t)(p->mask_numel + 1)), chunk_base(8 * 65537), count(8, 0);
  bytes_t acc(8 * extent), cnt(4 * extent, 0);
  run_device(p, t, dev, positions, chunk_base, count, acc, cnt);
  const char *op = b->ops[0].name;
  for (size_t i = 0; i < n; i++) {
    if (i < plan.input_count && !plan.input_written[i]) continue;
    double e = nmse(t[i], dev[i], ref[i]);
    double tol = xr_dtype_is_floating(t[i].dtype) ? 1e-5 : 0;
    if (t[i].dtype == XR_DTYPE_BF16) tol = 1e-3;
    if (t[i].dtype == XR_DTYPE_F16) tol = 1e-4;
    cr_assert(e <= tol, "%s (%s): tensor %zu nmse %g against the reference\n%s", op,
              policy ? policy : "default indices", i, e, json.c_str());
  }
  bool out_of_place = true;
  for (size_t i = 0; i < plan.input_count; i++) out_of_place &= !plan.input_written[i];
  if (out_of_place) {
    std::vector<bytes_t> again = dev;
    run_device(p, t, again, positions, chunk_base, count, acc, cnt);
    cr_assert(again[p->dst.tensor] == dev[p->dst.tensor], "%s: the second run differs", op);
  }
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
}

std::string tensor(const char *dtype, const char *shape, const char *extra = "") {
  return std::string("{\"dtype\": \"") + dtype + "\", \"shape\": [" + shape + "]" + extra + "}";
}

std::string arg(const char *name, const char *type, const std::string &value) {
  return std::string("{\"name\": \"") + name + "\", \"type\": \"" + type +
         "\", \"value\": " + value + "}";
}

std::string op(const char *name, const std::vector<std::string> &args,
               const std::vector<std::string> &kwargs = {}) {
  std::string a, k;
  for (const std::string &s : args) a += (a.empty() ? "" : ", ") + s;
  for (const std::string &s : kwargs) k += (k.empty() ? "" : ", ") + s;
  return "{\"format\": \"xreplay-bundle\", \"format_version\": 1, \"ops\": [{\"name\": \"" +
         std::string(name) + "\", \"args\": [" + a + "], \"kwargs\": [" + k + "]}]}";
}

void both(const std::string &json) {
  check_case(json, NULL);
  check_case(json, "wild");
}

}  // namespace

Test(scatter_emulated, gathers) {
  both(op("aten::gather",
          {arg("self", "Tensor", tensor("c10::BFloat16", "4, 6, 33", ", \"strides\": [1, 132, 4]")),
           arg("dim", "int", "-1"),
           arg("index", "Tensor",
               tensor("int", "3, 5, 40", ", \"strides\": [400, 80, 2], \"storage_offset\": 1"))}));
  both(op("aten::take", {arg("self", "Tensor", tensor("float", "7, 9", ", \"strides\": [1, 7]")),
                         arg("index", "Tensor", tensor("long int", "4, 17"))}));
  both(op("aten::index",
          {arg("self", "Tensor", tensor("c10::Half", "5, 4, 6, 3")),
           arg("indices", "Tensor?[]",
               "[" + tensor("long int", "2, 7") + ", null, " + tensor("int", "7") + "]")}));
}

Test(scatter_emulated, scatters_and_reductions) {
  both(op("aten::scatter_add",
          {arg("self", "Tensor", tensor("c10::BFloat16", "5, 17")), arg("dim", "int", "0"),
           arg("index", "Tensor", tensor("long int", "8, 17")),
           arg("src", "Tensor", tensor("c10::BFloat16", "9, 18"))}));
  both(op("aten::scatter_",
          {arg("self", "Tensor(a!)", tensor("c10::Half", "129, 10")), arg("dim", "int", "1"),
           arg("index", "Tensor", tensor("int", "129, 2")), arg("value", "Scalar", "1.5")}));
  const char *reductions[] = {"\"sum\"", "\"prod\"", "\"mean\"", "\"amax\"", "\"amin\""};
  const char *dtypes[] = {"float", "c10::BFloat16", "long int", "int"};
  for (const char *r : reductions)
    for (const char *d : dtypes)
      for (const char *self : {"true", "false"})
        both(op("aten::scatter_reduce",
                {arg("self", "Tensor", tensor(d, "6, 17")), arg("dim", "int", "0"),
                 arg("index", "Tensor", tensor("long int", "9, 17")),
                 arg("src", "Tensor", tensor(d, "9, 17")), arg("reduce", "str", r)},
                {arg("include_self", "bool", self)}));
  both(op("aten::scatter_reduce",
          {arg("self", "Tensor", tensor("float", "1000")), arg("dim", "int", "0"),
           arg("index", "Tensor", tensor("long int", "3000")),
           arg("src", "Tensor", tensor("float", "3000")), arg("reduce", "str", "\"mean\"")}));
  both(op("aten::index_add",
          {arg("self", "Tensor", tensor("c10::BFloat16", "17, 24")), arg("dim", "int", "0"),
           arg("index", "Tensor", tensor("long int", "34")),
           arg("source", "Tensor", tensor("c10::BFloat16", "34, 24"))},
          {arg("alpha", "Scalar", "0.5")}));
  both(op(
      "aten::index_put_",
      {arg("self", "Tensor(a!)", tensor("float", "5, 6, 3", ", \"strides\": [1, 15, 5]")),
       arg("indices", "Tensor?[]", "[" + tensor("long int", "4") + ", " + tensor("int", "4") + "]"),
       arg("values", "Tensor", tensor("float", "3")), arg("accumulate", "bool", "true")}));
}

Test(scatter_emulated, masks_and_nonzero) {
  both(op("aten::index",
          {arg("self", "Tensor", tensor("c10::BFloat16", "40, 33")),
           arg("indices", "Tensor?[]", "[" + tensor("bool", "40, 33") + "]")},
          {arg("out", "Tensor(a!)", tensor("c10::BFloat16", "500"))}));
  both(op("aten::masked_scatter_", {arg("self", "Tensor(a!)", tensor("c10::BFloat16", "2, 17, 24")),
                                    arg("mask", "Tensor", tensor("bool", "2, 17, 1")),
                                    arg("source", "Tensor", tensor("c10::BFloat16", "9, 24"))}));
  both(op("aten::masked_select",
          {arg("self", "Tensor", tensor("float", "1000, 3")),
           arg("mask", "Tensor", tensor("bool", "3"))},
          {arg("out", "Tensor(a!)", tensor("float", "2000"))}));
  both(op("aten::index_put_", {arg("self", "Tensor(a!)", tensor("c10::BFloat16", "4, 20, 6")),
                               arg("indices", "Tensor?[]", "[null, " + tensor("bool", "20") + "]"),
                               arg("values", "Tensor", tensor("c10::BFloat16", "4, 7, 6")),
                               arg("accumulate", "bool", "true")}));
  both(op("aten::nonzero",
          {arg("self", "Tensor", tensor("float", "5, 7, 129", ", \"strides\": [1, 645, 5]"))},
          {arg("out", "Tensor(a!)", tensor("long int", "333, 3"))}));
  both(op("aten::nonzero_static", {arg("self", "Tensor", tensor("bool", "40, 17"))},
          {arg("size", "int", "500"), arg("fill_value", "int", "-7")}));
}
