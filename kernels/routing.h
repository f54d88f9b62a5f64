/* The routing family: the MoE routing ops of triton_kernels (OpenAI's, which vLLM runs GPT-OSS
 * with on ROCm), recorded by the profiler under their autograd.Function names, bare:
 *   TopK(x [n, E], k, apply_softmax, dim, return_bitmatrix, y_indx, n_rows)
 *       -> y_vals [n, k] (x's dtype), y_indx [n, k] int16, bitmatrix [n, ceil(E / 32)] uint32
 *   SortTokens(expt_scal [n, k], expt_indx [n, k], n_expts_tot, bitmatrix)
 *       -> hist [E], combine_indx [n k], dispatch_indx [n k], gate_scal [n k] (expt_scal's
 *          dtype), token_offs_raw [E + 1], token_offs_pad [B, E + 1], block_pid_map [B, T]
 *          (int32 but gate_scal; B block sizes 16 << b, T max_n_tiles)
 * docs/replay.md ("MoE routing: TopK and SortTokens") says what each computes. The parsed
 * problem, read by ref.routing (kernels/routing.c), cpu.routing (kernels/cpu/routing_cpu.c) and
 * the device hosts (kernels/routing_device.c). */
#ifndef XR_KERNELS_ROUTING_H
#define XR_KERNELS_ROUTING_H

#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/routing_args.h"

typedef enum xr_routing_op { XR_ROUTING_TOPK = 0, XR_ROUTING_SORT = 1 } xr_routing_op_t;

typedef struct xr_routing_problem {
  xr_routing_op_t op;
  int64_t rows, cols, k; /* n, E (TopK: x's columns; SortTokens: n_expts_tot), k */
  /* TopK */
  int x, vals, indx, bits;        /* binding indices */
  xr_dtype_t dtype;               /* x and y_vals: f32, f16 or bf16 */
  int64_t x_rs, x_cs, words;      /* x's strides; uint32 words per bitmatrix row */
  bool softmax;
  /* SortTokens */
  int scal, ids, hist, combine, dispatch, gate, offs_raw, offs_pad, pid_map; /* binding */
  xr_dtype_t scal_dtype, ids_dtype; /* ids: int16, int32 or int64 */
  int64_t scal_rs, scal_cs, ids_rs, ids_cs;
  int64_t tiles;                  /* T: block_pid_map's columns */
} xr_routing_problem_t;

/* The order key of a float's bits (`nbits` 16 or 32), triton_kernels' fpval_to_key: unsigned
 * keys order as the floats do, -0 below +0, NaN above +inf (a positive NaN). */
static inline uint32_t xr_routing_key(uint32_t bits, int nbits) {
  uint32_t top = 1u << (nbits - 1), full = nbits == 32 ? 0xffffffffu : (1u << nbits) - 1;
  return bits ^ ((bits & top) ? full : top);
}

/* Whether (key a, column ia) is selected before (key b, column ib): the larger value, the
 * smaller column on ties. */
static inline bool xr_routing_before(uint32_t a, int64_t ia, uint32_t b, int64_t ib) {
  return a > b || (a == b && ia < ib);
}

/* max_n_tiles of triton_kernels' routing: block_pid_map's columns for n_gates selections. */
static inline int64_t xr_routing_max_tiles(int64_t experts, int64_t gates) {
  if (gates <= experts) return gates;
  int64_t m = XR_ROUTING_BLOCK_M_MIN;
  return experts - 1 + (gates - experts + 1 + m - 1) / m;
}

/* Element i of an int16, int32 or int64 tensor storage, as int64. */
static inline int64_t xr_routing_load_id(const void *base, xr_dtype_t dt, int64_t i) {
  if (dt == XR_DTYPE_I16) return ((const int16_t *)base)[i];
  if (dt == XR_DTYPE_I32) return ((const int32_t *)base)[i];
  return ((const int64_t *)base)[i];
}

extern const xr_kernel_impl_t xr_routing_cpu;    /* kernels/cpu/routing_cpu.c */
extern const xr_kernel_impl_t xr_routing_opencl; /* kernels/routing_device.c */
extern const xr_kernel_impl_t xr_routing_gpu;    /* kernels/routing_device.c */

#endif
