/* Pieces of the replay engine shared between its files; not part of the public API. */
#ifndef XR_REPLAY_INTERNAL_H
#define XR_REPLAY_INTERNAL_H

#include <stdio.h>

#include "replay/replay.h"

/* A seed for tensor `tensor_index` of op `op_index`: independent of which ops are filtered. */
uint64_t xr_seed_for(uint64_t seed, size_t op_index, size_t tensor_index);

/* Default initialisation of a tensor's storage by its init (or dtype when unset). */
const char *xr_fill_policy(const xr_tensor_spec_t *t, bool written);
void xr_fill(void *host, const xr_tensor_spec_t *t, size_t bytes, uint64_t seed);
/* NaN for floats, -1 for integers: any element a kernel fails to write shows. */
void xr_poison(void *host, xr_dtype_t dtype, size_t bytes);

/* The initializer for a planned op: one registered for its name, else its family's; or NULL. */
xr_initializer_fn xr_find_initializer(const xr_op_plan_t *plan);

/* Over the logical elements of one view of two storages, element by element (no copies, so an
 * output of billions of elements is compared in place): the sum of (a - e)^2 where finite, the
 * sum of e^2 over finite e, and whether a is NaN or Inf anywhere e is finite. */
void xr_compare_views(const void *actual, const void *expected, xr_dtype_t dtype, int32_t rank,
                      const int64_t *shape, const int64_t *strides, int64_t offset,
                      double *out_sum_sq_diff, double *out_sum_sq, bool *out_nonfinite);

/* Writes the logical tensor as .npy in its own dtype (bf16 as '<u2', fp8 as '|u1'). */
xr_status_t xr_npy_write(const char *path, const void *storage, xr_dtype_t dtype, int32_t rank,
                         const int64_t *shape, const int64_t *strides, int64_t offset);

/* Timing statistics over `n` samples (sorted in place). */
void xr_stats(double *samples_us, int n, xr_op_result_t *result);

/* NMSE threshold used by --check for an output dtype. */
double xr_check_threshold(xr_dtype_t dtype);

#endif
