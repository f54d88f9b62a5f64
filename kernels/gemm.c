/* The GEMM family: aten::mm, addmm, bmm, baddbmm, matmul, linear, and the same products under
 * the names serving stacks give them (aiter::gemm_a16w16, vllm::rocm_unquantized_gemm, which
 * have linear's semantics: x @ weight^T + bias), and aten::_scaled_mm (fp8 x fp8 with float32
 * per-tensor / row-wise scales, and the block-scaled mxfp8, mxfp4 and nvfp4 forms: see
 * analyze_scaled_mm for every accepted form).
 *
 * Every op is reduced to one batched problem: out[b][m][n] = alpha * sum_k A[b][m][k] B[b][k][n]
 * + beta * C[b][m][n], each operand addressed through its own strides (0 where it broadcasts),
 * so transposed weights and views need no copies. Accumulation is in fp32 or better; the
 * output is rounded once to its dtype. */
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/family.h"
#include "kernels/gemm.h"

static const char *const gemm_ops[] = {
    "aten::mm",     "aten::addmm",        "aten::bmm",
    "aten::baddbmm", "aten::matmul",      "aten::linear",
    "aiter::gemm_a16w16", "vllm::rocm_unquantized_gemm", "aten::_scaled_mm", NULL,
};

/* Sets an operand's strides from a tensor of rank >= 2 (or 1 when `vector_dim` says which of
 * row/col it fills), aligning its batch dims to the right of the output's batch dims. */
static void set_matrix(const xr_tensor_spec_t *t, int index, bool transpose, int batch_rank,
                       const int64_t *batch_shape, xr_gemm_operand_t *o) {
  o->index = index;
  int r = t->rank;
  int64_t rs = r >= 2 ? t->strides[r - 2] : 0, cs = r >= 1 ? t->strides[r - 1] : 0;
  o->row_stride = transpose ? cs : rs;
  o->col_stride = transpose ? rs : cs;
  int tb = r - 2; /* the tensor's own batch dims */
  for (int d = 0; d < batch_rank; d++) {
    int td = d - (batch_rank - tb);
    o->batch_strides[d] = (td >= 0 && t->shape[td] == batch_shape[d] && batch_shape[d] != 1)
                              ? t->strides[td]
                              : 0;
  }
}

/* Broadcasts a bias/self tensor of any rank <= batch_rank + 2 onto [batch..., M, N]. */
static xr_status_t set_addend(const xr_op_plan_t *plan, int index, const xr_gemm_problem_t *p,
                              xr_gemm_operand_t *o) {
  const xr_tensor_spec_t *t = plan->inputs[index];
  int out_rank = p->batch_rank + 2;
  if (t->rank > out_rank)
    return xr_plan_error(plan, "the added tensor has %d dimensions, the product %d", t->rank,
                         out_rank);
  int64_t out_shape[XR_MAX_RANK + 2];
  for (int d = 0; d < p->batch_rank; d++) out_shape[d] = p->batch_shape[d];
  out_shape[p->batch_rank] = p->M;
  out_shape[p->batch_rank + 1] = p->N;
  int64_t strides[XR_MAX_RANK + 2] = {0};
  for (int d = 0; d < t->rank; d++) {
    int od = out_rank - t->rank + d;
    if (t->shape[d] != 1 && t->shape[d] != out_shape[od])
      return xr_plan_error(plan, "the added tensor's dimension %d (%lld) does not broadcast to %lld",
                           d, (long long)t->shape[d], (long long)out_shape[od]);
    strides[od] = t->shape[d] == 1 ? 0 : t->strides[d];
  }
  o->index = index;
  for (int d = 0; d < p->batch_rank; d++) o->batch_strides[d] = strides[d];
  o->row_stride = strides[p->batch_rank];
  o->col_stride = strides[p->batch_rank + 1];
  return XR_OK;
}

static xr_status_t need_rank(const xr_op_plan_t *plan, int index, const char *name, int lo, int hi) {
  int r = plan->inputs[index]->rank;
  if (r < lo || r > hi)
    return lo == hi ? xr_plan_error(plan, "%s: expected a %d-D tensor, got %d-D", name, lo, r)
                    : xr_plan_error(plan, "%s: expected %d-D to %d-D, got %d-D", name, lo, hi, r);
  return XR_OK;
}

static bool is_float_dtype(xr_dtype_t d) {
  return d == XR_DTYPE_F32 || d == XR_DTYPE_F16 || d == XR_DTYPE_BF16 || d == XR_DTYPE_F64;
}

/* A float32 scale of n values (or one): stride between them, 0 for a single value. */
static xr_status_t set_scale(const xr_op_plan_t *plan, int index, const char *name, int64_t n,
                             xr_gemm_scale_t *s) {
  const xr_tensor_spec_t *t = plan->inputs[index];
  s->index = index;
  s->stride = 0;
  if (t->dtype != XR_DTYPE_F32)
    return xr_plan_error(plan, "%s: expected float32 scales, got %s", name,
                         xr_dtype_name(t->dtype));
  int64_t numel = xr_spec_numel(t);
  if (numel == 1) return XR_OK;
  if (numel != n)
    return xr_plan_error(plan, "%s: expected 1 (per-tensor) or %lld (row-/column-wise) values, got %lld",
                         name, (long long)n, (long long)numel);
  for (int d = 0; d < t->rank; d++)
    if (t->shape[d] == n) s->stride = t->strides[d];
  return XR_OK;
}

static int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/* The block scales of one operand of a block-scaled _scaled_mm: `rows` rows (M for scale_a, N
 * for scale_b) of kb = ceil(K / block) scales, bytes of `dtype`, contiguous, of any shape whose
 * element count is rows * kb (read row-major, [rows][kb]) or torch's count for the swizzled
 * layout, round_up(rows, 128) * round_up(kb, 4) (read row-major too, [round_up(rows, 128)]
 * [round_up(kb, 4)], the first rows x kb used: see analyze_scaled_mm). */
static xr_status_t set_block_scale(const xr_op_plan_t *plan, int index, const char *name,
                                   const char *format, int64_t rows, const xr_gemm_problem_t *p,
                                   xr_gemm_scale_t *s) {
  const xr_tensor_spec_t *t = plan->inputs[index];
  s->index = index;
  if (t->dtype != p->scale_dtype)
    return xr_plan_error(plan, "%s: %s takes %s block scales, got %s", name, format,
                         xr_dtype_name(p->scale_dtype), xr_dtype_name(t->dtype));
  int64_t kb = (p->K + p->block - 1) / p->block, numel = xr_spec_numel(t);
  int64_t padded = round_up(rows, 128) * round_up(kb, 4);
  if (numel == rows * kb) {
    s->stride = kb;
  } else if (numel == padded) {
    s->stride = round_up(kb, 4);
  } else {
    return xr_plan_error(plan, "%s: %s with %lld rows and K = %lld takes one scale per %d K "
                         "elements: %lld x %lld = %lld values (row-major), or %lld (torch's count "
                         "for swizzled scales, padded to 128 x 4 blocks); got %lld", name, format,
                         (long long)rows, (long long)p->K, p->block, (long long)rows, (long long)kb,
                         (long long)(rows * kb), (long long)padded, (long long)numel);
  }
  if (!xr_tensor_is_contiguous(t))
    return xr_plan_error(plan, "%s: block scales must be contiguous (as torch requires)", name);
  return XR_OK;
}

/* aten::_scaled_mm(self, mat2, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None,
 * use_fast_accum=False) (torch >= 2.4; older releases take the same names as keywords):
 *   out = (scale_a * scale_b * (self @ mat2) + bias) * scale_result, rounded once to out_dtype.
 * bias is a float [N]; use_fast_accum changes accumulation precision on NVIDIA only, we always
 * accumulate in fp32 or better. The forms, told apart by the operands' and scales' dtypes:
 *  - per-tensor / row-wise: self [M, K] and mat2 [K, N] fp8 (e4m3fn, e5m2 and the fnuz
 *    variants); scale_a holds 1 or M float32 values ([M, 1], row-wise), scale_b 1 or N ([1, N],
 *    column-wise); out_dtype defaults to self's dtype.
 *  - mxfp8: the same fp8 operands, f8e8m0 scales, one per 32 consecutive K elements of each row
 *    of self (scale_a) and of each column of mat2 (scale_b): ceil(K / 32) per row, as torch
 *    counts them (a shorter last block when K is not a multiple of 32); out_dtype as above.
 *  - mxfp4 / nvfp4: self [M, K/2] and mat2 [K/2, N] f4e2m1x2 (bytes of two e2m1 codes along K,
 *    the lower k in the low nibble; torch's mat2 is the transpose of an [N, K/2] row-major
 *    tensor, but any strides are read), K a multiple of 32 (torch: self's trailing dimension
 *    divisible by 16); f8e8m0 scales per 32 (mxfp4) or f8e4m3fn scales per 16 (nvfp4);
 *    out_dtype defaults to bfloat16 (torch's default, self's dtype, is no output type). nvfp4's
 *    per-tensor global scales are not an argument of aten::_scaled_mm (torch's single-level
 *    recipe): callers apply them to the result, or torch's _scaled_mm_v2 multiplies them into
 *    alpha.
 * Block scales are read row-major ([M][ceil(K / block)] for scale_a, [N][...] for scale_b),
 * whatever their shape. torch on NVIDIA requires them swizzled (to_blocked's 32x4x4 layout, an
 * element count of round_up(rows, 128) * round_up(kb, 4)); a replay has no pre-swizzled copies
 * and the FLOPs and bytes are the same, so a tensor of that padded count is accepted too and
 * read as a row-major [round_up(rows, 128)][round_up(kb, 4)] grid of which the first rows x kb
 * are used (exactly the plain layout when rows and kb are multiples of 128 and 4, as on ROCm,
 * which takes them unswizzled). Real swizzled contents in a bundle are thus not unswizzled.
 * scale_result is cuBLASLt's D scale: it multiplies the result and, as on CUDA, only applies to
 * fp8 outputs (PyTorch's CPU emulation divides by it instead; GPU traces are what we replay). */
static xr_status_t analyze_scaled_mm(xr_op_plan_t *plan, xr_gemm_problem_t *p) {
  const xr_op_t *op = plan->op;
  int a = -1, b = -1, sa = -1, sb = -1, bias = -1, sr = -1, out = -1;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "self", true, &a)) ||
      (st = xr_arg_tensor(plan, 1, "mat2", true, &b)) ||
      (st = xr_arg_tensor(plan, 2, "scale_a", true, &sa)) ||
      (st = xr_arg_tensor(plan, 3, "scale_b", true, &sb)) ||
      (st = xr_arg_tensor(plan, 4, "bias", false, &bias)) ||
      (st = xr_arg_tensor(plan, 5, "scale_result", false, &sr)) ||
      (st = xr_arg_tensor(plan, -1, "out", false, &out)) ||
      (st = need_rank(plan, a, "self", 2, 2)) || (st = need_rank(plan, b, "mat2", 2, 2)))
    return st;
  const xr_tensor_spec_t *ta = plan->inputs[a], *tb = plan->inputs[b];
  bool fp4 = ta->dtype == XR_DTYPE_F4E2M1X2 || tb->dtype == XR_DTYPE_F4E2M1X2;
  if (fp4 && ta->dtype != tb->dtype)
    return xr_plan_error(plan, "self and mat2 must both be %s or both fp8 (got %s and %s)",
                         xr_dtype_name(XR_DTYPE_F4E2M1X2), xr_dtype_name(ta->dtype),
                         xr_dtype_name(tb->dtype));
  if (!fp4 && (!xr_dtype_is_fp8(ta->dtype) || !xr_dtype_is_fp8(tb->dtype)))
    return xr_plan_error(plan, "self and mat2 must be fp8 or %s (got %s and %s)",
                         xr_dtype_name(XR_DTYPE_F4E2M1X2), xr_dtype_name(ta->dtype),
                         xr_dtype_name(tb->dtype));
  if (ta->shape[1] != tb->shape[0])
    return xr_plan_error(plan, "self is [%lld, %lld] but mat2 has %lld rows: inner dimensions differ",
                         (long long)ta->shape[0], (long long)ta->shape[1], (long long)tb->shape[0]);
  p->M = ta->shape[0];
  p->K = fp4 ? 2 * ta->shape[1] : ta->shape[1];
  p->N = tb->shape[1];
  p->a_dtype = ta->dtype;
  p->b_dtype = tb->dtype;
  p->out_dtype = fp4 ? XR_DTYPE_BF16 : ta->dtype;

  /* The form, from the scales' dtype. */
  xr_dtype_t sdt = plan->inputs[sa]->dtype;
  const char *format = NULL;
  if (fp4) {
    if (sdt == XR_DTYPE_F8E8M0) {
      format = "mxfp4";
      p->block = 32;
    } else if (sdt == XR_DTYPE_F8E4M3FN) {
      format = "nvfp4";
      p->block = 16;
    } else {
      return xr_plan_error(plan, "scale_a: %s operands take %s (mxfp4) or %s (nvfp4) block "
                           "scales, got %s", xr_dtype_name(XR_DTYPE_F4E2M1X2),
                           xr_dtype_name(XR_DTYPE_F8E8M0), xr_dtype_name(XR_DTYPE_F8E4M3FN),
                           xr_dtype_name(sdt));
    }
    if (p->K % 32)
      return xr_plan_error(plan, "self: K = %lld (2 x %lld %s bytes) is not a multiple of 32, as "
                           "torch requires of fp4 operands", (long long)p->K,
                           (long long)ta->shape[1], xr_dtype_name(XR_DTYPE_F4E2M1X2));
  } else if (sdt == XR_DTYPE_F8E8M0) {
    format = "mxfp8";
    p->block = 32;
  } else if (sdt != XR_DTYPE_F32) {
    return xr_plan_error(plan, "scale_a: fp8 operands take float (per-tensor, row-wise) or %s "
                         "(mxfp8) scales, got %s", xr_dtype_name(XR_DTYPE_F8E8M0),
                         xr_dtype_name(sdt));
  }
  p->scale_dtype = p->block ? sdt : XR_DTYPE_F32;

  const xr_value_t *od = xr_op_arg(op, 6, "out_dtype");
  if (od && od->kind == XR_VALUE_INT) {
    p->out_dtype = xr_dtype_from_torch_code(od->as.i);
    if (!xr_dtype_is_floating(p->out_dtype))
      return xr_plan_error(plan, "out_dtype: ScalarType %lld is not a float type", (long long)od->as.i);
  } else if (od && od->kind == XR_VALUE_STRING) {
    p->out_dtype = xr_dtype_parse(od->as.s);
    if (!xr_dtype_is_floating(p->out_dtype))
      return xr_plan_error(plan, "out_dtype: \"%s\" is not a float type", od->as.s);
  } else if (od && od->kind != XR_VALUE_NULL) {
    return xr_plan_error(plan, "out_dtype: expected a ScalarType (int or string)");
  }
  p->a = (xr_gemm_operand_t){.index = a, .row_stride = ta->strides[0], .col_stride = ta->strides[1]};
  p->b = (xr_gemm_operand_t){.index = b, .row_stride = tb->strides[0], .col_stride = tb->strides[1]};
  if (p->block) {
    if ((st = set_block_scale(plan, sa, "scale_a", format, p->M, p, &p->scale_a)) ||
        (st = set_block_scale(plan, sb, "scale_b", format, p->N, p, &p->scale_b)))
      return st;
  } else if ((st = set_scale(plan, sa, "scale_a", p->M, &p->scale_a)) ||
             (st = set_scale(plan, sb, "scale_b", p->N, &p->scale_b))) {
    return st;
  }
  if (sr >= 0) {
    if (plan->inputs[sr]->dtype != XR_DTYPE_F32 || xr_spec_numel(plan->inputs[sr]) != 1)
      return xr_plan_error(plan, "scale_result: expected one float32 value");
    if (xr_dtype_is_fp8(p->out_dtype)) p->scale_result = sr;
  }
  p->c_dtype = p->out_dtype;
  if (bias >= 0) {
    const xr_tensor_spec_t *tc = plan->inputs[bias];
    if (tc->rank != 1 || tc->shape[0] != p->N || !is_float_dtype(tc->dtype))
      return xr_plan_error(plan, "bias: expected a float [%lld] tensor", (long long)p->N);
    p->c = (xr_gemm_operand_t){.index = bias, .row_stride = 0, .col_stride = tc->strides[0]};
    p->c_dtype = tc->dtype;
  }
  int64_t shape[2] = {p->M, p->N};
  p->out_rank = 2;
  if (out >= 0) {
    const xr_tensor_spec_t *to = plan->inputs[out];
    if (to->rank != 2 || to->dtype != p->out_dtype || to->shape[0] != p->M || to->shape[1] != p->N)
      return xr_plan_error(plan, "out: expected a %s [%lld, %lld] tensor", xr_dtype_name(p->out_dtype),
                           (long long)p->M, (long long)p->N);
    p->out = (xr_gemm_operand_t){.index = out, .row_stride = to->strides[0], .col_stride = to->strides[1]};
    plan->return_count = 0;
  } else {
    p->out = (xr_gemm_operand_t){.index = (int)plan->input_count, .row_stride = p->N, .col_stride = 1};
    plan->return_count = 1;
    xr_desc_set(&plan->returns[0], p->out_dtype, 2, shape);
  }
  p->batch = 1;
  plan->flops = 2.0 * (double)p->M * (double)p->N * (double)p->K;
  /* Operand bytes as stored (half a byte per fp4 element); block scales as rows x kb bytes,
   * whichever layout holds them; float scales (per tensor or per row) and scale_result as
   * bound. */
  double kb = p->block ? (double)((p->K + p->block - 1) / p->block) : 0.0;
  double scales = ((double)p->M + (double)p->N) * kb;
  if (!p->block)
    scales = 4.0 * (double)(xr_spec_numel(plan->inputs[sa]) + xr_spec_numel(plan->inputs[sb]));
  if (p->scale_result >= 0) scales += 4.0;
  plan->bytes = (double)p->M * (double)p->K * (fp4 ? 0.5 : (double)xr_dtype_size(p->a_dtype)) +
                (double)p->K * (double)p->N * (fp4 ? 0.5 : (double)xr_dtype_size(p->b_dtype)) +
                scales + (double)p->M * (double)p->N * (double)xr_dtype_size(p->out_dtype) +
                (bias >= 0 ? (double)p->N * (double)xr_dtype_size(p->c_dtype) : 0.0);
  return XR_OK;
}

static xr_status_t analyze(xr_op_plan_t *plan) {
  const xr_op_t *op = plan->op;
  const char *name = op->name;
  xr_gemm_problem_t *p = calloc(1, sizeof *p);
  if (!p) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", name);
  plan->problem = p;
  p->alpha = 1.0;
  p->beta = 1.0;
  p->c.index = -1;
  p->scale_a.index = p->scale_b.index = p->scale_result = -1;
  if (!strcmp(name, "aten::_scaled_mm")) return analyze_scaled_mm(plan, p);
  int a = -1, b = -1, c = -1, out = -1;
  bool b_transposed = false; /* B given as [N, K] (linear's weight) */
  xr_status_t st = XR_OK;
  const char *a_name = "self", *b_name = "mat2";

  if (!strcmp(name, "aten::mm") || !strcmp(name, "aten::bmm")) {
    bool batched = name[6] == 'b';
    if ((st = xr_arg_tensor(plan, 0, "self", true, &a)) ||
        (st = xr_arg_tensor(plan, 1, "mat2", true, &b)) ||
        (st = xr_arg_tensor(plan, -1, "out", false, &out)) ||
        (st = need_rank(plan, a, "self", batched ? 3 : 2, batched ? 3 : 2)) ||
        (st = need_rank(plan, b, "mat2", batched ? 3 : 2, batched ? 3 : 2)))
      return st;
  } else if (!strcmp(name, "aten::addmm") || !strcmp(name, "aten::baddbmm")) {
    bool batched = name[6] == 'b';
    a_name = batched ? "batch1" : "mat1";
    b_name = batched ? "batch2" : "mat2";
    if ((st = xr_arg_tensor(plan, 0, "self", true, &c)) ||
        (st = xr_arg_tensor(plan, 1, a_name, true, &a)) ||
        (st = xr_arg_tensor(plan, 2, b_name, true, &b)) ||
        (st = xr_arg_tensor(plan, -1, "out", false, &out)) ||
        (st = xr_arg_double(op, 3, "beta", false, &p->beta)) ||
        (st = xr_arg_double(op, 4, "alpha", false, &p->alpha)) ||
        (st = need_rank(plan, a, a_name, batched ? 3 : 2, batched ? 3 : 2)) ||
        (st = need_rank(plan, b, b_name, batched ? 3 : 2, batched ? 3 : 2)))
      return st;
  } else if (!strcmp(name, "aten::matmul")) {
    b_name = "other";
    if ((st = xr_arg_tensor(plan, 0, "self", true, &a)) ||
        (st = xr_arg_tensor(plan, 1, "other", true, &b)) ||
        (st = need_rank(plan, a, "self", 1, XR_MAX_RANK)) ||
        (st = need_rank(plan, b, "other", 1, XR_MAX_RANK)))
      return st;
  } else { /* linear semantics: aten::linear, aiter::gemm_a16w16, vllm::rocm_unquantized_gemm */
    bool aiter = !strcmp(name, "aiter::gemm_a16w16");
    bool vllm = !strcmp(name, "vllm::rocm_unquantized_gemm");
    a_name = aiter ? "A" : vllm ? "x" : "input";
    b_name = aiter ? "B" : "weight";
    b_transposed = true;
    if ((st = xr_arg_tensor(plan, 0, a_name, true, &a)) ||
        (st = xr_arg_tensor(plan, 1, b_name, true, &b)) ||
        (st = xr_arg_tensor(plan, 2, "bias", false, &c)) ||
        (st = need_rank(plan, a, a_name, 1, XR_MAX_RANK)) ||
        (st = need_rank(plan, b, b_name, 2, 2)))
      return st;
  }
  if (a < 0 || b < 0) return xr_plan_error(plan, "tensor arguments are not bound");

  const xr_tensor_spec_t *ta = plan->inputs[a], *tb = plan->inputs[b];
  p->a_dtype = ta->dtype;
  p->b_dtype = tb->dtype;
  if (!is_float_dtype(ta->dtype) || ta->dtype != tb->dtype)
    return xr_plan_error(plan, "%s and %s must share a float dtype (got %s and %s)", a_name, b_name,
                         xr_dtype_name(ta->dtype), xr_dtype_name(tb->dtype));
  p->out_dtype = p->c_dtype = ta->dtype;

  /* Matrix dims of A ([.., M, K], 1-D: [K]) and B ([.., K, N], 1-D: [K]; transposed: [N, K]). */
  bool a_vec = ta->rank == 1, b_vec = tb->rank == 1 && !b_transposed;
  int64_t K = ta->shape[ta->rank - 1];
  p->M = a_vec ? 1 : ta->shape[ta->rank - 2];
  int64_t kb = b_transposed ? tb->shape[1] : b_vec ? tb->shape[0] : tb->shape[tb->rank - 2];
  p->N = b_transposed ? tb->shape[0] : b_vec ? 1 : tb->shape[tb->rank - 1];
  if (kb != K)
    return xr_plan_error(plan, "%s is [.., %lld] but %s has %lld rows: inner dimensions differ",
                         a_name, (long long)K, b_name, (long long)kb);
  p->K = K;

  /* Batch dims: A's leading dims (matmul/linear: all but the last one or two), broadcast with
   * B's leading dims for matmul. */
  int a_batch = a_vec ? 0 : ta->rank - 2, b_batch = (b_vec || b_transposed) ? 0 : tb->rank - 2;
  p->batch_rank = a_batch > b_batch ? a_batch : b_batch;
  for (int d = 0; d < p->batch_rank; d++) {
    int da = d - (p->batch_rank - a_batch), db = d - (p->batch_rank - b_batch);
    int64_t sa = da >= 0 ? ta->shape[da] : 1, sb = db >= 0 ? tb->shape[db] : 1;
    if (sa != sb && sa != 1 && sb != 1)
      return xr_plan_error(plan, "batch dimension %d: %lld and %lld do not broadcast", d,
                           (long long)sa, (long long)sb);
    p->batch_shape[d] = sa > sb ? sa : sb;
  }
  if (!strcmp(name, "aten::bmm") || !strcmp(name, "aten::baddbmm")) {
    if (ta->shape[0] != tb->shape[0])
      return xr_plan_error(plan, "batch sizes differ: %lld and %lld", (long long)ta->shape[0],
                           (long long)tb->shape[0]);
  }

  /* Operand strides. A 1-D A is a single row [1, K]; a 1-D B a single column [K, 1]. */
  if (a_vec) {
    p->a = (xr_gemm_operand_t){.index = a, .row_stride = 0, .col_stride = ta->strides[0]};
  } else {
    set_matrix(ta, a, false, p->batch_rank, p->batch_shape, &p->a);
  }
  if (b_vec) {
    p->b = (xr_gemm_operand_t){.index = b, .row_stride = tb->strides[0], .col_stride = 0};
  } else {
    set_matrix(tb, b, b_transposed, p->batch_rank, p->batch_shape, &p->b);
  }
  if (c >= 0) {
    if (plan->inputs[c]->dtype != p->out_dtype)
      return xr_plan_error(plan, "the added tensor is %s, the product %s",
                           xr_dtype_name(plan->inputs[c]->dtype), xr_dtype_name(p->out_dtype));
    if ((st = set_addend(plan, c, p, &p->c))) return st;
  }

  /* The result: [batch..., M, N] without the dims a 1-D operand does not have. */
  int64_t shape[XR_MAX_RANK];
  int rank = 0;
  for (int d = 0; d < p->batch_rank; d++) shape[rank++] = p->batch_shape[d];
  if (!a_vec) shape[rank++] = p->M;
  if (!b_vec) shape[rank++] = p->N;
  if (rank > XR_MAX_RANK) return xr_plan_error(plan, "result rank exceeds %d", XR_MAX_RANK);
  p->out_rank = rank;
  if (out >= 0) {
    const xr_tensor_spec_t *to = plan->inputs[out];
    if (to->rank != rank || to->dtype != p->out_dtype)
      return xr_plan_error(plan, "out: expected a %s tensor of rank %d", xr_dtype_name(p->out_dtype),
                           rank);
    for (int d = 0; d < rank; d++)
      if (to->shape[d] != shape[d])
        return xr_plan_error(plan, "out: dimension %d is %lld, the product's is %lld", d,
                             (long long)to->shape[d], (long long)shape[d]);
    p->out.index = out;
    plan->return_count = 0;
  } else {
    p->out.index = (int)plan->input_count;
    plan->return_count = 1;
    xr_desc_set(&plan->returns[0], p->out_dtype, rank, shape);
  }
  /* Output strides (returns are contiguous; out= may be any view). */
  int64_t ostrides[XR_MAX_RANK];
  if (out >= 0) {
    memcpy(ostrides, plan->inputs[out]->strides, sizeof(int64_t) * (size_t)rank);
  } else {
    xr_contiguous_strides(rank, shape, ostrides);
  }
  int od = rank - 1;
  p->out.col_stride = b_vec ? 0 : ostrides[od--];
  p->out.row_stride = a_vec ? 0 : ostrides[od--];
  for (int d = p->batch_rank - 1; d >= 0; d--) p->out.batch_strides[d] = ostrides[od--];

  p->batch = 1;
  for (int d = 0; d < p->batch_rank; d++) p->batch *= p->batch_shape[d];
  double elems_out = (double)p->batch * (double)p->M * (double)p->N;
  plan->flops = 2.0 * elems_out * (double)p->K;
  /* Each operand's distinct elements (an expanded dim once; the operands share one dtype); the
   * added tensor not at all when beta is 0, since then it is not read (torch ignores it). */
  bool reads_c = c >= 0 && p->beta != 0.0;
  plan->bytes = (double)xr_dtype_size(p->out_dtype) *
                (xr_spec_distinct_numel(ta) + xr_spec_distinct_numel(tb) + elems_out +
                 (reads_c ? xr_spec_distinct_numel(plan->inputs[c]) : 0.0));
  return XR_OK;
}

int64_t xr_gemm_offset(const xr_gemm_operand_t *o, const xr_gemm_problem_t *p, int64_t batch) {
  int64_t off = 0;
  for (int d = p->batch_rank - 1; d >= 0; d--) {
    off += (batch % p->batch_shape[d]) * o->batch_strides[d];
    batch /= p->batch_shape[d];
  }
  return off;
}

void xr_gemm_bindings(const xr_gemm_problem_t *p, int out_index[XR_GEMM_OPERANDS]) {
  out_index[XR_GEMM_A] = p->a.index;
  out_index[XR_GEMM_B] = p->b.index;
  out_index[XR_GEMM_C] = p->beta != 0 ? p->c.index : -1;
  out_index[XR_GEMM_OUT] = p->out.index;
  out_index[XR_GEMM_SCALE_A] = p->scale_a.index;
  out_index[XR_GEMM_SCALE_B] = p->scale_b.index;
  out_index[XR_GEMM_SCALE_RESULT] = p->scale_result;
}

/* ------------------------------------------------------------------------------------------ */
/* CPU reference: widen everything to double, one output row per work item.                  */

typedef struct ref_state {
  const xr_gemm_problem_t *p;
  void *base[XR_GEMM_OPERANDS]; /* storage of each operand (NULL when absent) */
  int64_t offset[XR_GEMM_OPERANDS];
} ref_state_t;

/* A row (scale_a) or column (scale_b) scale factor; 1 for block scales, applied per element. */
static double ref_scale(const ref_state_t *s, int which, int64_t stride, int64_t i) {
  if (!s->base[which] || s->p->block) return 1.0;
  return xr_load_element(s->base[which], XR_DTYPE_F32, s->offset[which] + i * stride);
}

/* Element k of row r of a block-scaled operand (A: r = m; B: r = n, its column), dequantized
 * exactly: the code (an fp8 byte, or e2m1 nibble k % 2 of the byte holding k / 2) times the
 * scale of block k / block of row r. `at` is the operand's storage offset plus its batch
 * offset; r_stride and k_stride its strides along r and k, in stored elements (bytes). */
static double ref_block_element(const ref_state_t *s, int which, int scale, xr_dtype_t dtype,
                                int64_t at, int64_t r_stride, int64_t k_stride, int64_t r,
                                int64_t k) {
  const xr_gemm_problem_t *p = s->p;
  const uint8_t *codes = s->base[which];
  double v;
  if (dtype == XR_DTYPE_F4E2M1X2) {
    uint8_t byte = codes[at + r * r_stride + (k / 2) * k_stride];
    v = xr_e2m1_to_f32(k % 2 ? byte >> 4 : byte & 0x0f);
  } else {
    v = xr_fp8_to_f32(codes[at + r * r_stride + k * k_stride], dtype);
  }
  const xr_gemm_scale_t *sc = scale == XR_GEMM_SCALE_A ? &p->scale_a : &p->scale_b;
  const uint8_t *scales = s->base[scale];
  uint8_t sbyte = scales[s->offset[scale] + r * sc->stride + k / p->block];
  double sv = p->scale_dtype == XR_DTYPE_F8E8M0 ? xr_e8m0_to_f32(sbyte)
                                                : xr_fp8_to_f32(sbyte, p->scale_dtype);
  return v * sv;
}

static double ref_a(const ref_state_t *s, int64_t ao, int64_t m, int64_t k) {
  const xr_gemm_problem_t *p = s->p;
  if (p->block)
    return ref_block_element(s, XR_GEMM_A, XR_GEMM_SCALE_A, p->a_dtype, ao, p->a.row_stride,
                             p->a.col_stride, m, k);
  return xr_load_element(s->base[XR_GEMM_A], p->a_dtype,
                         ao + m * p->a.row_stride + k * p->a.col_stride);
}

static double ref_b(const ref_state_t *s, int64_t bo, int64_t k, int64_t n) {
  const xr_gemm_problem_t *p = s->p;
  if (p->block)
    return ref_block_element(s, XR_GEMM_B, XR_GEMM_SCALE_B, p->b_dtype, bo, p->b.col_stride,
                             p->b.row_stride, n, k);
  return xr_load_element(s->base[XR_GEMM_B], p->b_dtype,
                         bo + k * p->b.row_stride + n * p->b.col_stride);
}

static void ref_rows(void *ctx, size_t begin, size_t end) {
  const ref_state_t *s = ctx;
  const xr_gemm_problem_t *p = s->p;
  double *arow = malloc(sizeof(double) * (size_t)(p->K ? p->K : 1));
  if (!arow) return; /* the output stays poisoned; the check reports it */
  double result_scale = s->base[XR_GEMM_SCALE_RESULT]
                            ? xr_load_element(s->base[XR_GEMM_SCALE_RESULT], XR_DTYPE_F32,
                                              s->offset[XR_GEMM_SCALE_RESULT])
                            : 1.0;
  for (size_t row = begin; row < end; row++) {
    int64_t bi = (int64_t)row / p->M, m = (int64_t)row % p->M;
    int64_t ao = s->offset[XR_GEMM_A] + xr_gemm_offset(&p->a, p, bi);
    int64_t bo = s->offset[XR_GEMM_B] + xr_gemm_offset(&p->b, p, bi);
    int64_t oo = s->offset[XR_GEMM_OUT] + xr_gemm_offset(&p->out, p, bi) + m * p->out.row_stride;
    double row_scale = p->alpha * ref_scale(s, XR_GEMM_SCALE_A, p->scale_a.stride, m);
    for (int64_t k = 0; k < p->K; k++) arow[k] = ref_a(s, ao, m, k);
    for (int64_t n = 0; n < p->N; n++) {
      double acc = 0;
      for (int64_t k = 0; k < p->K; k++) acc += arow[k] * ref_b(s, bo, k, n);
      double v = row_scale * ref_scale(s, XR_GEMM_SCALE_B, p->scale_b.stride, n) * acc;
      if (s->base[XR_GEMM_C]) {
        int64_t co = s->offset[XR_GEMM_C] + xr_gemm_offset(&p->c, p, bi) + m * p->c.row_stride +
                     n * p->c.col_stride;
        v += p->beta * xr_load_element(s->base[XR_GEMM_C], p->c_dtype, co);
      }
      xr_store_element(s->base[XR_GEMM_OUT], p->out_dtype, oo + n * p->out.col_stride,
                       v * result_scale);
    }
  }
  free(arow);
}

static xr_status_t ref_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_gemm_problem_t *p = plan->problem;
  ref_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  s->p = p;
  int idx[XR_GEMM_OPERANDS];
  xr_gemm_bindings(p, idx);
  for (int i = 0; i < XR_GEMM_OPERANDS; i++) {
    if (idx[i] < 0) continue;
    xr_status_t st = xr_tensor_host(&tensors[idx[i]], &s->base[i]);
    if (st != XR_OK) {
      free(s);
      return st;
    }
    s->offset[i] = tensors[idx[i]].offset;
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t ref_enqueue(void *state, xr_hal_stream_t *stream) {
  ref_state_t *s = state;
  size_t rows = (size_t)(s->p->batch * s->p->M);
  return xr_hal_stream_enqueue_parallel(stream, rows, 1, ref_rows, s);
}

static const xr_kernel_impl_t ref_gemm = {
    .name = "ref.gemm",
    .driver = "cpu",
    .reference = true,
    .prepare = ref_prepare,
    .enqueue = ref_enqueue,
    .release = free,
};

/* Vendor libraries first, our own kernels next, the reference last. */
static const xr_kernel_impl_t *const gemm_impls[] = {
    &xr_gemm_onednn_impl, &xr_gemm_cpu_blocked_impl, &xr_gemm_clblast_impl,
    &xr_gemm_opencl_tiled_impl, &xr_gemm_cublaslt_impl, &xr_gemm_hipblaslt_impl,
    &xr_gemm_gpu_impl, &ref_gemm, NULL,
};

/* --check on a slice (xr_kernel_result_rows): a product without batch dims whose A is a matrix
 * splits by A's rows; the added C and an out= tensor go with them when they hold M rows, a
 * broadcast bias is read whole. Scaled products (row-wise scales) stay whole. */
static int64_t result_rows(const xr_op_plan_t *plan, bool *row_inputs) {
  const xr_gemm_problem_t *p = plan->problem;
  if (p->batch_rank > 0 || p->scale_a.index >= 0 || plan->inputs[p->a.index]->rank != 2) return 0;
  row_inputs[p->a.index] = true;
  if (p->c.index >= 0) {
    const xr_tensor_spec_t *c = plan->inputs[p->c.index];
    bool rows = c->rank == 2 && c->shape[0] == p->M && p->M > 1 && c->strides[0] != 0;
    bool broadcast = c->rank < 2 || c->shape[0] == 1 || c->strides[0] == 0;
    if (!rows && !broadcast) return 0;
    row_inputs[p->c.index] = rows;
  }
  if (p->out.index < (int)plan->input_count) row_inputs[p->out.index] = true;
  return p->M;
}

const xr_op_family_t xr_family_gemm = {
    .name = "gemm",
    .op_names = gemm_ops,
    .analyze = analyze,
    .free_problem = free,
    .result_rows = result_rows,
    .impls = gemm_impls,
};

