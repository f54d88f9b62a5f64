/* bf16 GEMMs on Intel AMX for the fused-experts path (kernels/cpu/moe_cpu.c), with its epilogues
 * fused: GEMM-1 computes an expert's gate and up columns together and stores silu(g) * u, GEMM-2
 * stores its columns times each row's routing weight. Both read the next slice's weights ahead
 * (software prefetch into L2, spread over the slice's K loop): at a few hundred rows per expert
 * every slice's weights come from memory, and a core left to fetch them on demand spends a third
 * of its time waiting (measured with oneDNN's kernels, which do not prefetch them).
 *
 * Matrices are stored as 16 x 32 bf16 tiles of 1 KB, the operands AMX loads:
 *   - activations (rows x depth): tile (r / 16, k / 32) at (r / 16 * depth / 32 + k / 32) * 512
 *     elements, element (r % 16) * 32 + k % 32 within it (xr_amx_tiled_at);
 *   - weights, packed once by xr_amx_pack: 16 output columns x 32 k per tile, k pairs
 *     interleaved (the VNNI order TDPBF16PS reads).
 * Rows come in multiples of 16 (the caller pads), depth in multiples of 32. */
#ifndef XR_KERNELS_CPU_MOE_AMX_H
#define XR_KERNELS_CPU_MOE_AMX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when the CPU has AMX-BF16 (and AVX-512 BF16), Linux granted this process the tile state,
 * and XR_CPU_AMX is not "off" (which leaves the fused experts to oneDNN: for tests of that path
 * and for comparisons). */
bool xr_amx_usable(void);

/* Elements from the start of a tiled rows x depth matrix to element (r, k). */
static inline size_t xr_amx_tiled_at(int64_t depth, int64_t r, int64_t k) {
  return (size_t)(((r >> 4) * (depth >> 5) + (k >> 5)) * 512 + (r & 15) * 32 + (k & 31));
}

/* Packs `cols` output columns of a weight matrix, column c's k-th weight at
 * w[c * col_stride + k * k_stride], for `depth` k: tiles of 16 columns, column tile by column tile,
 * each the depth / 32 tiles along k (cols * depth elements). */
void xr_amx_pack(const uint16_t *w, int64_t col_stride, int64_t k_stride, int64_t cols, int64_t depth,
                 uint16_t *out);

/* The weights of the slice a kernel call reads next, to be fetched into L2 while it computes. */
typedef struct xr_amx_ahead {
  const void *at;
  size_t bytes;
} xr_amx_ahead_t;

/* Packs like xr_amx_pack from mxfp4 weights, decoded to bf16 (exactly: an e2m1 value times a
 * power of two): column c's code pair for k, k + 1 (k even) is the byte codes[c * col_stride +
 * k / 2], its scale the e8m0 byte scales[c * scale_stride + k / 32]. */
void xr_amx_pack_mxfp4(const uint8_t *codes, int64_t col_stride, const uint8_t *scales, int64_t scale_stride,
                       int64_t cols, int64_t depth, uint16_t *out);

/* GEMM-1's epilogue: biases (the slice's gate and up columns from its first, or NULL) added to
 * the accumulators before the bf16 rounding, then silu(g) * u, or with `swiglu` GPT-OSS's
 * min(g, limit) * sigmoid(alpha * min(g, limit)) * (clamp(u, -limit, limit) + 1). */
typedef struct xr_amx_act {
  bool swiglu;
  float alpha, limit;
  const float *gate_bias, *up_bias;
} xr_amx_act_t;

/* GEMM-1 of one slice: for every row r < rows and column c < cols (cols a multiple of 16),
 * g = bf16(A[r] . gate[c] + gate_bias[c]), u likewise (vLLM stores GEMM-1's output in bf16), and
 * H(r, h_col0 + c) = bf16(act(g, u)). A: tiled rows x depth; gate_up: packed, per 16 columns
 * the gate tile column then the up tile column (2 * cols * depth elements); H: tiled rows x h_depth. */
void xr_amx_gate_up(const uint16_t *A, int64_t rows, int64_t depth, const uint16_t *gate_up,
                    int64_t cols, uint16_t *H, int64_t h_depth, int64_t h_col0, const xr_amx_act_t *act,
                    xr_amx_ahead_t ahead);

/* GEMM-2 of one slice: Y[r * ldy + c] = bf16(scale[r] * (A[r] . w[c] + bias[c])) for r < rows
 * and c < cols (a multiple of 32); bias the slice's columns from its first, or NULL. A: tiled
 * rows x depth; w: packed (cols * depth elements); Y plain row-major, the slice's first column at Y. */
void xr_amx_scaled(const uint16_t *A, int64_t rows, int64_t depth, const uint16_t *w, int64_t cols,
                   const float *scale, const float *bias, uint16_t *Y, int64_t ldy, xr_amx_ahead_t ahead);

#endif
