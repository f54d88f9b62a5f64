/* Helpers for the families' custom initializers (xr_op_family_t.initializers): seeded random
 * numbers, index tensors that stay in range, even splits of packed tokens, permutations, and
 * poison for the cache cells no sequence uses. Each initializer reads and writes the host
 * copies in its xr_init_context_t (kernels/kernels.h), in the tensors' own dtypes. */
#ifndef XR_KERNELS_INITIALIZER_H
#define XR_KERNELS_INITIALIZER_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/kernels.h"

/* Seeded random numbers (splitmix64): reproducible for a seed, fast enough to fill tensors. */
uint64_t xr_rng_next(uint64_t *state);
double xr_rng_uniform(uint64_t *state); /* [0, 1) */
double xr_rng_normal(uint64_t *state);  /* N(0, 1) */

/* The binding index of the tensor argument `name`, or -1. */
int xr_init_input(const xr_init_context_t *c, const char *name);
/* An int argument, or `fallback` when absent or not an int. */
int64_t xr_init_int_arg(const xr_init_context_t *c, const char *name, int64_t fallback);
/* An int hint the trace recorded for the op (op->hints); false when absent. */
bool xr_init_hint(const xr_init_context_t *c, const char *name, int64_t *out);
/* Where the op's cache was compacted (xr_kernel_compact: the hint recorded_cache_blocks), adds
 * "cache: compact, N of M <unit>" to the policy, N being `blocks`, what the op now holds. */
void xr_init_describe_compact(xr_init_context_t *c, int64_t blocks, const char *unit);
/* Appends "what" to the policy line, "; "-separated. */
void xr_init_describe(xr_init_context_t *c, const char *what);

/* Element i of 1-D input `index` (its strides and offset honoured), and of 2-D (i, j). */
int64_t xr_init_load(const xr_init_context_t *c, int index, int64_t i);
int64_t xr_init_load_2d(const xr_init_context_t *c, int index, int64_t i, int64_t j);
void xr_init_store(xr_init_context_t *c, int index, int64_t i, double value);

/* Cumulative starts (count + 1 values) of `count` sequences sharing `total` tokens as evenly as
 * possible, each at most max_len (0: no limit); tokens past the last sequence stay unused. */
void xr_init_even_split(xr_init_context_t *c, int index, int64_t count, int64_t total,
                        int64_t max_len);
/* The first `take` entries of a random permutation of [0, n) (a partial Fisher-Yates shuffle
 * seeded from *seed); `perm` holds n entries. */
void xr_init_shuffle(int64_t *perm, int64_t n, int64_t take, uint64_t *seed);
/* Fills integer input `index` with values uniform in [0, rows) so that it indexes rows that
 * exist; `what` names it in the policy. Float tensors and real contents are left alone. */
void xr_init_indices(xr_init_context_t *c, int index, int64_t rows, const char *what);
/* NaN into every element of input `index` whose cell is not live, the cell of an element being
 * its index along dim_a times cells_b plus its index along dim_b (0 when dim_b < 0): a kernel
 * that reads a cell no sequence uses then shows it in its output. uint8/int8 caches hold fp8
 * bytes (e4m3fnuz on _rocm_C, whose NaN is 0x80; 0x7f in the OCP formats). Real contents and
 * non-float tensors are left alone. */
void xr_init_poison_dead_cells(const xr_init_context_t *c, int index, int dim_a, int dim_b,
                               int64_t cells_b, const bool *live);

#endif
