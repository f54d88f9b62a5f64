/* The quant family: vLLM's fp8 activation quantization (csrc/quantization/w8a8/fp8/common.cu),
 *   _C::static_scaled_fp8_quant(Tensor! result, Tensor input, Tensor scale,
 *                               int[]? group_shape=None)
 *   _C::dynamic_scaled_fp8_quant(Tensor! result, Tensor input, Tensor! scale)
 *   _C::dynamic_per_token_scaled_fp8_quant(Tensor! result, Tensor input, Tensor! scale,
 *                                          Tensor? scale_ub)
 * over the input's rows (tokens): input [..., hidden] f32/f16/bf16, last dim contiguous; result
 * the input's shape (a 2-D result may have more rows, vLLM's num_token_padding: those stay
 * untouched) in e4m3fn (CUDA) or e4m3fnuz (ROCm MI300). With M the quantization maximum (448 for
 * e4m3fn; 224 for e4m3fnuz, vLLM's ROCm value, below the format's 240) every element is
 *   fp8(clamp(x * (1 / s), -M, M))      static and dynamic (s computed first)
 *   fp8(clamp(x / s_t, -M, M))          per token
 * in float arithmetic as the CUDA kernels do it (fminf/fmaxf: a NaN input becomes +M), rounded
 * to nearest even. dynamic: s = max|x| / M over the whole tensor (NaN ignored; 0 for an all-zero
 * input, which then becomes +M everywhere, as vLLM's 0 * (1 / 0) does). per token:
 *   s_t = max(min(max|row t|, scale_ub[0] when given) / M, 1 / (M * 512)), written to scale[t]
 * (scale [tokens, 1], or any shape with at least `rows` elements laid out evenly).
 * The static scale of element (r, c) is scale[(r / group_m) * si + (c / group_n) * sj]: one
 * element (per tensor), a [hidden] scale without group_shape (per channel, vLLM up to 0.11), or
 * vLLM's newer forms: a 1-D scale with group_shape (group_m, group_n; -1 for the whole
 * dimension: (-1, 1) per channel, (1, -1) per token) or a 2-D [rows / group_m, hidden / group_n]
 * scale. */
#ifndef XR_KERNELS_QUANT_H
#define XR_KERNELS_QUANT_H

#include <stdbool.h>

#include "kernels/kernels.h"

typedef enum xr_quant_op {
  XR_QUANT_STATIC = 0,
  XR_QUANT_DYNAMIC = 1,
  XR_QUANT_PER_TOKEN = 2,
} xr_quant_op_t;

/* The parsed op, shared by every implementation. Offsets and strides count elements of each
 * tensor's own dtype; a row's columns are contiguous. */
typedef struct xr_quant_problem {
  xr_quant_op_t op;
  int result, input, scale, scale_ub;      /* binding indices; scale_ub -1 when None */
  xr_dtype_t in_dtype, out_dtype;          /* f32 / f16 / bf16; e4m3fn / e4m3fnuz */
  int64_t rows, hidden;                    /* the input's rows (tokens) of `hidden` elements */
  int64_t in_off, in_rs, out_off, out_rs;  /* row r starts at off + r * rs */
  int64_t scale_off;                       /* static (r, c): scale_off + (r / group_m) * scale_si */
  int64_t scale_si, scale_sj;              /*   + (c / group_n) * scale_sj; per token: r * scale_si */
  int64_t group_m, group_n;                /* static: each at least 1 */
  int64_t ub_off;
  bool grouped;                            /* static with more than one scale */
  float fp8_max;                           /* M */
  float min_scale;                         /* per token: 1 / (M * 512), in float */
} xr_quant_problem_t;

/* The host storage of a problem's tensors (cpu implementations); ub NULL when absent. */
typedef struct xr_quant_host {
  const void *in;
  uint8_t *out;
  float *scale;
  const float *ub;
} xr_quant_host_t;

xr_status_t xr_quant_host(const xr_quant_problem_t *p, const xr_tensor_t *tensors, xr_quant_host_t *out_host);

/* M for a result dtype (448 or 224). */
float xr_quant_fp8_max(xr_dtype_t result_dtype);

/* Implementations (kernels/cpu/quant_cpu.c; kernels/quant_device.c for opencl and gpu). */
extern const xr_kernel_impl_t xr_quant_cpu_impl, xr_quant_opencl_impl, xr_quant_gpu_impl;

#endif
