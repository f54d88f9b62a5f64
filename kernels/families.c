#include "kernels/families.h"

const xr_op_family_t *const xr_op_families[] = {
    &xr_family_gemm,
    NULL,
};
