/* Element loads and stores for every bundle dtype, and the microscaling formats, shared by the
 * CPU kernels, the reference and the replay engine's initialisers. The scalar conversions
 * themselves (bf16, f16, fp8, e2m1, e8m0) are base/float_formats.h's.
 *
 * Microscaling (OCP Microscaling Formats v1.0; NVIDIA's NVFP4): a block of consecutive elements
 * along the last dim shares one scale. mxfp4 = e2m1 codes + an e8m0 scale per 32, mxfp8 = e4m3fn
 * or e5m2 codes + an e8m0 scale per 32, nvfp4 = e2m1 codes + an e4m3fn scale per 16 and one fp32
 * scale per tensor. e2m1 codes (sign bit 3; magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6) are packed two
 * per byte, the lower index in the low nibble (dtype f4e2m1x2: a byte is one element, as torch's
 * float4_e2m1fn_x2); an e8m0 byte b is 2^(b - 127), 0xFF NaN. */
#ifndef XR_KERNELS_DTYPE_H
#define XR_KERNELS_DTYPE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/float_formats.h"
#include "formats/model.h"

typedef enum xr_mx_format {
  XR_MX_FP4 = 0,     /* mxfp4 */
  XR_MX_FP8_E4M3,    /* mxfp8 with e4m3fn elements */
  XR_MX_FP8_E5M2,    /* mxfp8 with e5m2 elements */
  XR_MX_NVFP4,       /* nvfp4 */
} xr_mx_format_t;

int xr_mx_block_size(xr_mx_format_t f); /* 32, or 16 for nvfp4 */

/* Quantizes row-major x [rows, k] (k a multiple of the block size). codes: [rows, k/2] bytes for
 * e2m1, [rows, k] for fp8; scales [rows, k/block] bytes (e8m0, or e4m3fn for nvfp4). MX: shared
 * exponent floor(log2(amax)) - emax of the element, clamped to [-127, 127]; elements rounded to
 * nearest even, saturating. NVFP4: *global_scale = amax / (6 * 448) over the whole tensor (the
 * decode scale), block scale e4m3(amax_b / (6 * global)), elements e2m1(x / (scale * global)).
 * global_scale may be NULL for the MX formats. */
void xr_mx_quantize(xr_mx_format_t f, const float *x, int64_t rows, int64_t k, uint8_t *codes,
                    uint8_t *scales, float *global_scale);
/* Bytes of codes in a row of k elements. */
static inline int64_t xr_mx_code_bytes(xr_mx_format_t f, int64_t k) {
  return f == XR_MX_FP4 || f == XR_MX_NVFP4 ? k / 2 : k;
}
/* Element i of one row, decoded: `codes` and `scales` point at the row's first code byte and
 * first scale as xr_mx_quantize writes them; global = the nvfp4 tensor scale (1 for MX). */
float xr_mx_dequant(xr_mx_format_t f, const uint8_t *codes, const uint8_t *scales, int64_t i,
                    float global);

/* Element `index` (in elements from base) as double; integers and bools exactly. The MX dtypes:
 * an f4e2m1x2 element is its byte (a pair of codes), an f8e8m0 element its scale. */
double xr_load_element(const void *base, xr_dtype_t dtype, int64_t index);
/* Stores v converted to dtype (rounded; integers truncated toward zero; bool v != 0; f4e2m1x2
 * takes the byte v, f8e8m0 the nearest power of two). */
void xr_store_element(void *base, xr_dtype_t dtype, int64_t index, double v);

#endif
