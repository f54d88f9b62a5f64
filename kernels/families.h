/* Every op family the registry knows, in lookup order. Adding a family: write kernels/<name>.c
 * defining `const xr_op_family_t xr_family_<name>`, declare it here, list it in families.c. */
#ifndef XR_KERNELS_FAMILIES_H
#define XR_KERNELS_FAMILIES_H

#include "kernels/kernels.h"

extern const xr_op_family_t xr_family_gemm;

extern const xr_op_family_t *const xr_op_families[];

#endif
