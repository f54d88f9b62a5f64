/* Our own declarations of the MIOpen enum values and the one struct kernels/gpu/miopen_conv.c
 * uses, so that no ROCm header is needed to build. Self-contained (standard headers only):
 * tests/gpu:miopen_abi_test compiles it next to the real miopen/miopen.h where ROCm is
 * installed (Debian 12 packages no MIOpen, so that case skips on our CI). The values are those
 * of include/miopen/miopen.h of MIOpen 2.x (ROCm 5 to 7), unchanged since its convolution API
 * was introduced. */
#ifndef XR_KERNELS_GPU_MIOPEN_ABI_H
#define XR_KERNELS_GPU_MIOPEN_ABI_H

#include <stddef.h>

#define XR_MIOPEN_STATUS_SUCCESS 0
#define XR_MIOPEN_HALF 0
#define XR_MIOPEN_FLOAT 1
#define XR_MIOPEN_BFLOAT16 5
#define XR_MIOPEN_CONVOLUTION 0 /* miopenConvolution: cross-correlation */

/* miopenConvAlgoPerf_t: the algorithm (a union of three enums), its time and workspace. */
typedef struct xr_miopen_algo_perf {
  int algo;
  float time;
  size_t memory;
} xr_miopen_algo_perf_t;

#endif
