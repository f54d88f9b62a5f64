/* A one-op GEMM bundle planned on the host and mapped onto the vendor BLAS's column-major
 * strided-batched call (kernels/gpu/blas_layout.h): which problems cuBLASLt / hipBLASLt take,
 * without a device. */
#ifndef XR_TESTS_GPU_BLAS_CASE_H
#define XR_TESTS_GPU_BLAS_CASE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "formats/bundle.h"
#include "kernels/gemm.h"
#include "kernels/gpu/blas_layout.h"
#include "kernels/kernels.h"

typedef struct blas_case {
  xr_bundle_t *bundle;
  xr_op_plan_t plan;
  const xr_gemm_problem_t *problem;
  xr_status_t mapped;   /* XR_OK, or why not (in reason) */
  char reason[1024];
  xr_blas_gemm_t g;
} blas_case_t;

static inline void blas_case_open(const char *json, const xr_blas_limits_t *limits,
                                  blas_case_t *out) {
  memset(out, 0, sizeof *out);
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL,
                                &out->bundle), XR_OK, "%s", xr_last_error());
  cr_assert_eq(xr_kernel_plan(&out->bundle->ops[0], &out->plan), XR_OK, "%s: %s", json,
               xr_last_error());
  cr_assert_str_eq(out->plan.family->name, "gemm");
  out->problem = out->plan.problem;
  out->mapped = xr_blas_gemm_map(&out->plan, limits, &out->g);
  if (out->mapped != XR_OK) snprintf(out->reason, sizeof out->reason, "%s", xr_last_error());
}

static inline void blas_case_close(blas_case_t *c) {
  xr_kernel_plan_free(&c->plan);
  xr_bundle_destroy(c->bundle);
}

#endif
