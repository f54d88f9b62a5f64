/* cpu.reduce: the reduce family (kernels/reduce.h) on the host thread pool, f32, f16 and bf16
 * inputs computed in float (blocks) and double (across blocks), each output rounded once.
 *
 * Reductions take one of two shapes:
 *  - rows: each output reads its reduced elements as runs along the innermost reduced dim,
 *    loaded into float blocks of up to 512 (in place when contiguous f32; sums of contiguous
 *    f32, bf16 and f16 runs widen and add in one loop, 8192 elements at a time) and reduced by
 *    fixed-width loops of 16 lanes that the compiler vectorises (built for AVX-512, AVX2 and
 *    SSE2, picked at load time). A block's statistic (sum, extreme with its first position,
 *    count, mean and squared deviations, maximum and exp-sum) merges into a double state, so
 *    two-pass ops (var, logsumexp) read memory once.
 *  - columns: when the innermost kept dim is contiguous in the input and the reduced dims are
 *    not, a tile of up to 256 neighbouring outputs is reduced together, a contiguous run of the
 *    tile per reduced position (var and logsumexp in two passes).
 * Few outputs over many elements (a full sum) split the reduced range into chunks whose states
 * a host step merges in order, so the first extreme still wins and every thread works.
 * Scans run along rows (or tiles of columns) with a double running sum or product; sorts are a
 * stable LSD radix sort of (ordered float bits, position) per row: NaN above every number,
 * -0 equal to 0, descending by inverting the keys, so ties keep their order; integer and bool
 * rows sort their values' bits the same way (int64 in two passes of 32 bits). Integer elements
 * converted to a float dtype= (xr_reduce_int_to_float) are loaded as floats. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/elementwise_cpu.h"
#include "kernels/cpu/vector_ext.h"
#include "kernels/reduce.h"

enum {
  BLOCK = XR_EW_CPU_BLOCK, /* floats per loaded run */
  FUSED_RUN = 8192,        /* elements per contiguous run a sum reads where it lies */
  LANES = 16,
  CHUNK = 1 << 16,         /* reduced elements per chunk of a split reduction */
  TILE = 256,              /* outputs per columns tile */
  MIN_TILE = 16,           /* narrower contiguous kept dims run as rows */
  MAX_CHUNKS = 64,
};

/* ------------------------------------------------------------------------------------------ */
/* block statistics                                                                            */

XR_CPU_CLONES static float block_sum(const float *restrict v, int64_t n) {
  float acc[LANES] = {0};
  int64_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int j = 0; j < LANES; j++) acc[j] += v[i + j];
  float s = 0;
  for (int j = 0; j < LANES; j++) s += acc[j];
  for (; i < n; i++) s += v[i];
  return s;
}

/* Sums of contiguous bf16 and f16 runs, widened in the same loop (no scratch block). */
XR_CPU_CLONES static float block_sum_bf16(const uint16_t *restrict v, int64_t n) {
  float acc[LANES] = {0};
  int64_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int j = 0; j < LANES; j++) acc[j] += xr_bits_to_f32((uint32_t)v[i + j] << 16);
  float s = 0;
  for (int j = 0; j < LANES; j++) s += acc[j];
  for (; i < n; i++) s += xr_bits_to_f32((uint32_t)v[i] << 16);
  return s;
}

XR_CPU_CLONES static float block_sum_f16(const uint16_t *restrict v, int64_t n) {
  float acc[LANES] = {0};
  int64_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int j = 0; j < LANES; j++) acc[j] += xr_f16_to_f32(v[i + j]);
  float s = 0;
  for (int j = 0; j < LANES; j++) s += acc[j];
  for (; i < n; i++) s += xr_f16_to_f32(v[i]);
  return s;
}

XR_CPU_CLONES static float block_sum_nan0(const float *restrict v, int64_t n) {
  float acc[LANES] = {0};
  int64_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int j = 0; j < LANES; j++) {
      float x = v[i + j];
      acc[j] += xr_select_f(xr_mask_if(x == x), x, 0.0f);
    }
  float s = 0;
  for (int j = 0; j < LANES; j++) s += acc[j];
  for (; i < n; i++) s += v[i] == v[i] ? v[i] : 0.0f;
  return s;
}

XR_CPU_CLONES static float block_sum_abs(const float *restrict v, int64_t n) {
  float acc[LANES] = {0};
  int64_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int j = 0; j < LANES; j++) acc[j] += fabsf(v[i + j]);
  float s = 0;
  for (int j = 0; j < LANES; j++) s += acc[j];
  for (; i < n; i++) s += fabsf(v[i]);
  return s;
}

/* Sum of (x - shift)^2. */
XR_CPU_CLONES static float block_sum_sq(const float *restrict v, int64_t n, float shift) {
  float acc[LANES] = {0};
  int64_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int j = 0; j < LANES; j++) {
      float d = v[i + j] - shift;
      acc[j] += d * d;
    }
  float s = 0;
  for (int j = 0; j < LANES; j++) s += acc[j];
  for (; i < n; i++) s += (v[i] - shift) * (v[i] - shift);
  return s;
}

XR_CPU_CLONES static double block_prod(const float *restrict v, int64_t n) {
  double acc[LANES];
  for (int j = 0; j < LANES; j++) acc[j] = 1;
  int64_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int j = 0; j < LANES; j++) acc[j] *= (double)v[i + j];
  double s = 1;
  for (int j = 0; j < LANES; j++) s *= acc[j];
  for (; i < n; i++) s *= (double)v[i];
  return s;
}

XR_CPU_CLONES static int64_t block_count_nonzero(const float *restrict v, int64_t n) {
  int32_t acc[LANES] = {0};
  int64_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int j = 0; j < LANES; j++) acc[j] += v[i + j] != 0.0f; /* NaN counts */
  int64_t c = 0;
  for (int j = 0; j < LANES; j++) c += acc[j];
  for (; i < n; i++) c += v[i] != 0.0f;
  return c;
}

/* The largest (smallest) value of a block and whether it holds a NaN; with `absolute`, of |x|.
 * In 16-float vectors (vector_ext.h): the per-lane select and NaN test as scalar code stayed
 * scalar at -O2 (amax f32 ran at a tenth of sum's rate). */
#define BLOCK_EXTREME(name, cmp, start)                                                      \
  XR_CPU_CLONES static float name(const float *restrict v, int64_t n, bool absolute,          \
                                  bool *out_nan) {                                           \
    vf m = (vf){0} + (start);                                                                \
    vi nan = (vi){0};                                                                        \
    const vi magnitude = (vi){0} + (absolute ? 0x7fffffff : -1);                             \
    int64_t i = 0;                                                                           \
    for (; i + VW <= n; i += VW) {                                                           \
      vf x = (vf)((vi)vload(v + i) & magnitude);                                             \
      nan |= x != x;                                                                         \
      vi take = x cmp m;                                                                     \
      m = (vf)(((vi)x & take) | ((vi)m & ~take));                                            \
    }                                                                                        \
    float r = start;                                                                         \
    int any = 0;                                                                             \
    for (int j = 0; j < VW; j++) {                                                           \
      any |= nan[j];                                                                         \
      r = m[j] cmp r ? m[j] : r;                                                             \
    }                                                                                        \
    for (; i < n; i++) {                                                                     \
      float x = absolute ? fabsf(v[i]) : v[i];                                               \
      any |= x != x;                                                                         \
      r = x cmp r ? x : r;                                                                   \
    }                                                                                        \
    *out_nan = any != 0;                                                                     \
    return r;                                                                                \
  }
BLOCK_EXTREME(block_max, >, -INFINITY)
BLOCK_EXTREME(block_min, <, INFINITY)

/* The first extreme of a block: {value, position}, position -1 when no element beats the
 * start value (every element -inf for max); a NaN wins, with the first NaN's position.
 * Lane j follows elements j, j + VW, ...; a strict compare keeps each lane's first extreme
 * and the lanes merge by value, then by the smaller position. */
typedef struct located {
  float value;
  int64_t at;
} located_t;

#define BLOCK_LOCATE(name, type, load, element, cmp, start)                               \
  XR_CPU_CLONES static located_t name(const type *restrict v, int64_t n) {                \
    vf m = (vf){0} + (start);                                                             \
    vi at = (vi){0} - 1, nan = (vi){0}, lane;                                             \
    for (int j = 0; j < VW; j++) lane[j] = j;                                             \
    int64_t i = 0;                                                                        \
    for (; i + VW <= n; i += VW) {                                                        \
      vf x = load(v + i);                                                                 \
      vi better = x cmp m;                                                                \
      nan |= x != x;                                                                      \
      m = (vf)(((vi)x & better) | ((vi)m & ~better));                                     \
      at = ((lane + (int32_t)i) & better) | (at & ~better);                               \
    }                                                                                     \
    located_t best = {start, -1};                                                         \
    bool any_nan = false;                                                                 \
    for (int j = 0; j < VW; j++) {                                                        \
      any_nan |= nan[j] != 0;                                                             \
      if (at[j] >= 0 && (m[j] cmp best.value || (m[j] == best.value && at[j] < best.at))) \
        best.value = m[j], best.at = at[j];                                               \
    }                                                                                     \
    if (any_nan) /* a NaN among the vectors' elements: the first one */                   \
      for (int64_t k = 0;; k++)                                                           \
        if (element(v[k]) != element(v[k])) return (located_t){NAN, k};                   \
    for (; i < n; i++) {                                                                  \
      float x = element(v[i]);                                                            \
      if (x != x) return (located_t){NAN, i};                                             \
      if (x cmp best.value) best.value = x, best.at = i;                                  \
    }                                                                                     \
    return best;                                                                          \
  }
#define AS_FLOAT(x) (x)
BLOCK_LOCATE(block_locate_max, float, vload, AS_FLOAT, >, -INFINITY)
BLOCK_LOCATE(block_locate_min, float, vload, AS_FLOAT, <, INFINITY)
/* bf16 runs read where they lie, widened in registers (max.dim of bf16 ran at 30% of copy
 * through a float copy of each block) */
BLOCK_LOCATE(block_locate_max_bf16, uint16_t, vload_bf16, xr_bf16_to_f32, >, -INFINITY)
BLOCK_LOCATE(block_locate_min_bf16, uint16_t, vload_bf16, xr_bf16_to_f32, <, INFINITY)

/* e^x for x <= 0: x = k ln2 + r, |r| <= ln2/2, e^r by the minimax polynomial of
 * kernels/cpu/elementwise_cpu.h, 2^k in the exponent bits; inputs below -87 give ~2^-126. */
static inline float exp_nonpositive(float x) {
  uint32_t bits = xr_f32_to_bits(x), floor_bits = 0xc2ae0000u; /* -87.0f; x <= 0 compares as bits */
  x = xr_bits_to_f32(bits < floor_bits ? bits : floor_bits);
  float k = (x * 1.44269504f + 12582912.0f) - 12582912.0f;
  float r = (x - k * 0.693145752f) - k * 1.42860677e-6f;
  float q = XR_EXP_MINIMAX_5;
  q = q * r + XR_EXP_MINIMAX_4;
  q = q * r + XR_EXP_MINIMAX_3;
  q = q * r + XR_EXP_MINIMAX_2;
  q = q * r + XR_EXP_MINIMAX_1;
  q = q * r + XR_EXP_MINIMAX_0;
  return q * xr_bits_to_f32(((uint32_t)(int32_t)k + 127u) << 23);
}

/* logsumexp's first pass: the largest finite value, and whether NaN (flag 1), +inf (2) or a
 * finite value (4) occur. In 16-float vectors, as the extremes (the scalar form took per-lane
 * masks through memory); +inf turns -inf for the compare, since GCC lowers the AND of two
 * vector compares to scalar code. */
XR_CPU_CLONES static float block_finite_max(const float *restrict v, int64_t n, uint32_t *flags) {
  vf m = (vf){0} - INFINITY;
  vi nan = (vi){0}, posinf = (vi){0};
  int64_t i = 0;
  for (; i + VW <= n; i += VW) {
    vf x = vload(v + i);
    vi is_posinf = x == INFINITY;
    nan |= x != x;
    posinf |= is_posinf;
    vi take = (vf)((vi)x ^ (is_posinf & INT32_MIN)) > m; /* NaN and -inf never beat m */
    m = (vf)(((vi)x & take) | ((vi)m & ~take));
  }
  float r = -INFINITY;
  uint32_t any = 0;
  for (int j = 0; j < VW; j++) {
    any |= (nan[j] ? 1u : 0u) | (posinf[j] ? 2u : 0u);
    r = m[j] > r ? m[j] : r;
  }
  for (; i < n; i++) {
    float x = v[i];
    any |= (x != x ? 1u : 0u) | (x == INFINITY ? 2u : 0u);
    if (fabsf(x) < INFINITY && x > r) r = x;
  }
  *flags = any | (r > -INFINITY ? 4u : 0u); /* a finite value makes the maximum finite */
  return r;
}

/* Sum of e^(x - m) over the finite x (x <= m); `all_finite`: the block holds no inf or NaN,
 * so no element needs leaving out. */
XR_CPU_CLONES static float block_sum_exp(const float *restrict v, int64_t n, float m,
                                         bool all_finite) {
  vf acc = (vf){0};
  int64_t i = 0;
  if (all_finite) {
    for (; i + VW <= n; i += VW) acc += vexp_nonpositive(vload(v + i) - m);
  } else {
    const vf left_out = (vf){0} - 100.0f; /* vexp_nonpositive gives exactly 0 below -87 */
    for (; i + VW <= n; i += VW) {
      vf x = vload(v + i);
      vi finite = ((vi)x & 0x7fffffff) < 0x7f800000; /* as integers: below the bits of inf */
      acc += vexp_nonpositive((vf)(((vi)(x - m) & finite) | ((vi)left_out & ~finite)));
    }
  }
  float s = 0;
  for (int j = 0; j < VW; j++) s += acc[j];
  for (; i < n; i++)
    if (fabsf(v[i]) < INFINITY) s += exp_nonpositive(v[i] - m);
  return s;
}

/* ------------------------------------------------------------------------------------------ */
/* states                                                                                      */

/* What a range of one output's elements has accumulated. */
typedef struct state {
  double a;      /* sum, product, squared deviations (var), exp-sum (logsumexp), norm's sum */
  double mean;   /* var: the mean of the elements seen */
  int64_t n;     /* var: elements seen; all / any / count_nonzero / the 0-norm: nonzeros */
  int64_t at;    /* max / min: the position of m */
  float m;       /* max / min / the inf-norms: the extreme; logsumexp: the finite maximum */
  uint8_t nan;   /* max / min / inf-norms / logsumexp: a NaN was seen */
  uint8_t posinf; /* logsumexp: +inf was seen */
  uint8_t seen;  /* max / min / inf-norms: an element was seen; logsumexp: a finite one */
} state_t;

typedef enum shape {
  SHAPE_ROWS = 0,
  SHAPE_SUM_ROWS, /* SHAPE_ROWS' sums and means of one contiguous run each: no state per output */
  SHAPE_COLUMNS,
  SHAPE_SUM_COLUMNS, /* SHAPE_COLUMNS' sums and means along one reduced dim, likewise */
  SHAPE_SCAN_ROWS,
  SHAPE_SCAN_COLUMNS,
  SHAPE_SORT,
} shape_t;

typedef struct cpu_reduce {
  const xr_reduce_problem_t *p;
  xr_reduce_norm_kind_t norm;
  const char *in;            /* the input's first element */
  size_t in_size;
  char *out[XR_REDUCE_OUTPUTS];
  shape_t shape;
  bool round;                /* elements are rounded to p->cast after loading */
  bool int_sort;             /* xr_reduce_int_sort: integer keys */
  bool indices;              /* max / min: the positions are wanted */
  int64_t columns;           /* columns: the innermost kept dim's length */
  int64_t tiles;             /* columns: tiles per run of that dim */
  int64_t units;             /* outputs (rows) or tiles (columns) */
  int64_t chunks;            /* per unit */
  state_t *partials;         /* units x chunks x (1 or TILE) when chunks > 1 */
  size_t items;              /* sorts: work items, each with its scratch */
  int64_t sort_n;
  uint32_t *sort_scratch;    /* sorts: items x 4 x n */
  int64_t grain;
} cpu_reduce_t;

static bool is_extreme(const xr_reduce_problem_t *p, xr_reduce_norm_kind_t norm) {
  return p->op == XR_REDUCE_MAX || p->op == XR_REDUCE_MIN ||
         (p->op == XR_REDUCE_NORM && (norm == XR_NORM_INF || norm == XR_NORM_NEG_INF));
}

static bool wants_max(const xr_reduce_problem_t *p, xr_reduce_norm_kind_t norm) {
  return p->op == XR_REDUCE_MAX || (p->op == XR_REDUCE_NORM && norm == XR_NORM_INF);
}

static state_t state_init(const cpu_reduce_t *s) {
  state_t st = {0};
  st.a = s->p->op == XR_REDUCE_PROD;
  st.m = wants_max(s->p, s->norm) || s->p->op == XR_REDUCE_LOGSUMEXP ? -INFINITY : INFINITY;
  return st;
}

/* Merges b (later elements) into a (earlier ones). */
static void state_merge(const cpu_reduce_t *s, state_t *a, const state_t *b) {
  const xr_reduce_problem_t *p = s->p;
  if (is_extreme(p, s->norm)) {
    if (!b->seen) return;
    bool max = wants_max(p, s->norm);
    if (!a->seen || (!a->nan && (b->nan || (max ? b->m > a->m : b->m < a->m)))) {
      a->m = b->m, a->at = b->at, a->nan = b->nan;
      a->seen = 1;
    }
    return;
  }
  switch (p->op) {
    case XR_REDUCE_PROD: a->a *= b->a; break;
    case XR_REDUCE_ALL:
    case XR_REDUCE_ANY:
    case XR_REDUCE_COUNT_NONZERO: a->n += b->n; break;
    case XR_REDUCE_LOGSUMEXP:
      a->nan |= b->nan, a->posinf |= b->posinf;
      if (!b->seen) break;
      if (!a->seen) {
        a->m = b->m, a->a = b->a, a->seen = 1;
      } else {
        float m = a->m > b->m ? a->m : b->m;
        a->a = a->a * exp((double)a->m - m) + b->a * exp((double)b->m - m);
        a->m = m;
      }
      break;
    case XR_REDUCE_VAR:
    case XR_REDUCE_STD: {
      if (b->n == 0) break;
      if (a->n == 0) {
        a->n = b->n, a->mean = b->mean, a->a = b->a;
        break;
      }
      /* Chan et al.'s pairwise update. */
      double n = (double)(a->n + b->n), d = b->mean - a->mean;
      a->a += b->a + d * d * (double)a->n * (double)b->n / n;
      a->mean += d * (double)b->n / n;
      a->n += b->n;
      break;
    }
    case XR_REDUCE_NORM:
      if (s->norm == XR_NORM_0) a->n += b->n;
      else a->a += b->a;
      break;
    default: a->a += b->a; break; /* sum, nansum, mean */
  }
}

/* A block's first extreme (at: its position in the block, that of the first NaN when value is
 * NaN, -1 when none beat the start value) found at reduced position k, into st. */
static void merge_located(const cpu_reduce_t *s, state_t *st, located_t l, int64_t k) {
  state_t b = {
      .seen = 1, .m = l.value, .at = k + (l.at >= 0 ? l.at : 0), .nan = l.value != l.value};
  state_merge(s, st, &b);
}

/* Block v[0, n) of elements starting at reduced position k into st. */
static void state_add_block(const cpu_reduce_t *s, state_t *st, const float *v, int64_t n,
                            int64_t k) {
  const xr_reduce_problem_t *p = s->p;
  if (n <= 0) return;
  if (is_extreme(p, s->norm)) {
    bool max = wants_max(p, s->norm);
    if (s->indices) {
      merge_located(s, st, max ? block_locate_max(v, n) : block_locate_min(v, n), k);
    } else {
      bool nan, absolute = p->op == XR_REDUCE_NORM;
      state_t b = {.seen = 1};
      b.m = max ? block_max(v, n, absolute, &nan) : block_min(v, n, absolute, &nan);
      b.nan = nan;
      state_merge(s, st, &b);
    }
    return;
  }
  switch (p->op) {
    case XR_REDUCE_SUM:
    case XR_REDUCE_MEAN: st->a += block_sum(v, n); break;
    case XR_REDUCE_NANSUM: st->a += block_sum_nan0(v, n); break;
    case XR_REDUCE_PROD: st->a *= block_prod(v, n); break;
    case XR_REDUCE_ALL:
    case XR_REDUCE_ANY:
    case XR_REDUCE_COUNT_NONZERO: st->n += block_count_nonzero(v, n); break;
    case XR_REDUCE_LOGSUMEXP: {
      uint32_t flags;
      state_t b = {0};
      b.m = block_finite_max(v, n, &flags);
      b.nan = (flags & 1u) != 0, b.posinf = (flags & 2u) != 0, b.seen = (flags & 4u) != 0;
      if (b.seen) b.a = block_sum_exp(v, n, b.m, flags == 4u);
      state_merge(s, st, &b);
      break;
    }
    case XR_REDUCE_VAR:
    case XR_REDUCE_STD: {
      float mean = block_sum(v, n) / (float)n;
      state_t b = {.n = n, .mean = mean, .a = block_sum_sq(v, n, mean)};
      state_merge(s, st, &b);
      break;
    }
    case XR_REDUCE_NORM:
      switch (s->norm) {
        case XR_NORM_0: st->n += block_count_nonzero(v, n); break;
        case XR_NORM_1: st->a += block_sum_abs(v, n); break;
        case XR_NORM_2: st->a += block_sum_sq(v, n, 0.0f); break;
        default: {
          float q = (float)p->p, acc = 0;
          for (int64_t i = 0; i < n; i++) acc += powf(fabsf(v[i]), q);
          st->a += acc;
        }
      }
      break;
    default: break;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* loads and stores                                                                            */

/* Rounds v[0, n) to float dtype d and back (the conversion of dtype=). */
XR_CPU_CLONES static void round_block(float *restrict v, int64_t n, xr_dtype_t d) {
  if (d == XR_DTYPE_BF16)
    for (int64_t i = 0; i < n; i++) v[i] = xr_bits_to_f32((uint32_t)xr_f32_to_bf16(v[i]) << 16);
  else if (d == XR_DTYPE_F16)
    for (int64_t i = 0; i < n; i++) v[i] = xr_f16_to_f32(xr_f32_to_f16(v[i]));
}

/* n (<= BLOCK) input elements from `src` (stride in elements) as floats: in place when they are
 * contiguous f32 and need no rounding, else widened into buf. */
static const float *load_run(const cpu_reduce_t *s, const char *src, int64_t stride, int64_t n,
                             float *buf) {
  const xr_reduce_problem_t *p = s->p;
  if (p->in_dtype == XR_DTYPE_F32 && stride == 1 && !s->round) return (const float *)src;
  xr_ew_cpu_load(buf, src, p->in_dtype, stride, n);
  if (s->round) round_block(buf, n, p->cast);
  return buf;
}

/* Output slot k's element at (element) index i: v rounded once to the output dtype. */
static void store_value(const cpu_reduce_t *s, int k, int64_t i, double v) {
  char *b = s->out[k];
  switch (s->p->out[k].dtype) {
    case XR_DTYPE_F32: ((float *)b)[i] = (float)v; break;
    case XR_DTYPE_BF16: ((uint16_t *)b)[i] = xr_f32_to_bf16((float)v); break;
    case XR_DTYPE_F16: ((uint16_t *)b)[i] = xr_f32_to_f16((float)v); break;
    case XR_DTYPE_BOOL: ((uint8_t *)b)[i] = v != 0; break;
    case XR_DTYPE_I64: ((int64_t *)b)[i] = (int64_t)v; break;
    default: break; /* xr_reduce_check_fast admits no other */
  }
}

/* Output slot 0's n floats v[] at index i, stride os (elements): scans, and the sums of
 * sum_columns (outputs f32, bf16 or f16). */
static void store_run(const cpu_reduce_t *s, int64_t i, int64_t os, const float *v, int64_t n) {
  char *b = s->out[0];
  switch (s->p->out[0].dtype) {
    case XR_DTYPE_F32:
      if (os == 1)
        memcpy((float *)b + i, v, sizeof(float) * (size_t)n);
      else
        for (int64_t j = 0; j < n; j++) ((float *)b)[i + j * os] = v[j];
      break;
    case XR_DTYPE_BF16:
      for (int64_t j = 0; j < n; j++) ((uint16_t *)b)[i + j * os] = xr_f32_to_bf16(v[j]);
      break;
    default:
      for (int64_t j = 0; j < n; j++) ((uint16_t *)b)[i + j * os] = xr_f32_to_f16(v[j]);
      break;
  }
}

/* The outputs of output position o from its state. */
static void finish(const cpu_reduce_t *s, const state_t *st, int64_t o) {
  const xr_reduce_problem_t *p = s->p;
  const xr_reduce_output_t *ov = &p->out[XR_REDUCE_VALUES], *oi = &p->out[XR_REDUCE_INDICES];
  const double n = (double)p->red_numel;
  double v = st->a;
  switch (p->op) {
    case XR_REDUCE_MEAN: v = st->a / n; break;
    case XR_REDUCE_MAX:
    case XR_REDUCE_MIN: v = st->nan ? NAN : st->m; break;
    case XR_REDUCE_ALL: v = (double)st->n == n; break;
    case XR_REDUCE_ANY: v = st->n > 0; break;
    case XR_REDUCE_COUNT_NONZERO: v = (double)st->n; break;
    case XR_REDUCE_LOGSUMEXP:
      v = st->nan ? NAN : st->posinf ? INFINITY : !st->seen ? -INFINITY : log(st->a) + st->m;
      break;
    case XR_REDUCE_VAR:
    case XR_REDUCE_STD: {
      double divisor = n - p->correction;
      v = st->a / (divisor > 0 ? divisor : 0); /* empty: 0/0 */
      if (p->op == XR_REDUCE_STD) v = sqrt(v);
      if (oi->index >= 0)
        store_value(s, 1, xr_reduce_outer_offset(p, oi->outer_strides, o), st->n ? st->mean : NAN);
      break;
    }
    case XR_REDUCE_NORM:
      switch (s->norm) {
        case XR_NORM_INF:
        case XR_NORM_NEG_INF: v = st->nan ? NAN : st->m; break;
        case XR_NORM_0: v = (double)st->n; break;
        case XR_NORM_2: v = sqrt(st->a); break;
        case XR_NORM_P: v = pow(st->a, 1.0 / p->p); break;
        default: break;
      }
      break;
    default: break;
  }
  if (ov->index >= 0) store_value(s, 0, xr_reduce_outer_offset(p, ov->outer_strides, o), v);
  if (oi->index >= 0 && (p->op == XR_REDUCE_MAX || p->op == XR_REDUCE_MIN))
    ((int64_t *)s->out[1])[xr_reduce_outer_offset(p, oi->outer_strides, o)] = st->at;
}

/* ------------------------------------------------------------------------------------------ */
/* rows                                                                                        */

static inline void prefetch_bytes(const char *p, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b);
}

/* Reduced positions [k0, k1) of output o into st, as runs along the innermost reduced dim. */
static void rows_range(const cpu_reduce_t *s, int64_t o, int64_t k0, int64_t k1, state_t *st) {
  const xr_reduce_problem_t *p = s->p;
  const char *base = s->in + xr_reduce_outer_offset(p, p->in_outer, o) * (int64_t)s->in_size;
  const int r = p->red_rank;
  const int64_t rn = r ? p->red_shape[r - 1] : 1, rs = r ? p->in_red[r - 1] : 0;
  /* Sums of contiguous runs read them where they lie, widening as they add. */
  const bool fused = (p->op == XR_REDUCE_SUM || p->op == XR_REDUCE_MEAN) && rs == 1 &&
                     !s->round && xr_reduce_fast_dtype(p->in_dtype);
  /* max.dim / min.dim of contiguous bf16 runs: located where they lie */
  const bool fused_locate =
      s->indices && is_extreme(p, s->norm) && rs == 1 && !s->round && p->in_dtype == XR_DTYPE_BF16;
  float buf[BLOCK];
  for (int64_t k = k0; k < k1;) {
    int64_t len = rn - k % rn;
    if (len > k1 - k) len = k1 - k;
    if (len > (fused || fused_locate ? FUSED_RUN : BLOCK))
      len = fused || fused_locate ? FUSED_RUN : BLOCK;
    const char *src = base + xr_reduce_red_offset(p, k) * (int64_t)s->in_size;
    /* The block after this one, while this one computes: a block's passes (logsumexp's max and
     * exp-sum, max.dim's compare) leave the memory idle otherwise. */
    if (rs == 1 && !fused)
      prefetch_bytes(src + len * (int64_t)s->in_size, len * (int64_t)s->in_size);
    if (fused_locate) {
      const uint16_t *h = (const uint16_t *)src;
      merge_located(
          s, st,
          wants_max(p, s->norm) ? block_locate_max_bf16(h, len) : block_locate_min_bf16(h, len), k);
    } else if (fused) {
      const uint16_t *h = (const uint16_t *)src;
      st->a += p->in_dtype == XR_DTYPE_F32    ? block_sum((const float *)src, len)
               : p->in_dtype == XR_DTYPE_BF16 ? block_sum_bf16(h, len)
                                              : block_sum_f16(h, len);
    } else {
      state_add_block(s, st, load_run(s, src, rs, len, buf), len, k);
    }
    k += len;
  }
}

static void chunk_range(const cpu_reduce_t *s, int64_t c, int64_t *k0, int64_t *k1) {
  int64_t n = s->p->red_numel;
  *k0 = c * n / s->chunks;
  *k1 = (c + 1) * n / s->chunks;
}

static void rows_items(void *ctx, size_t begin, size_t end) {
  const cpu_reduce_t *s = ctx;
  for (size_t item = begin; item < end; item++) {
    int64_t o = (int64_t)item / s->chunks, c = (int64_t)item % s->chunks, k0, k1;
    chunk_range(s, c, &k0, &k1);
    state_t st = state_init(s);
    rows_range(s, o, k0, k1, &st);
    if (s->chunks == 1) finish(s, &st, o);
    else s->partials[item] = st;
  }
}

/* Sums and means whose outputs each read one contiguous run of at most FUSED_RUN elements, at
 * a fixed input stride, into outputs at a fixed stride (a mean over H x W, a sum over the last
 * dim): rows_range and finish's arithmetic without their per-output state. */
static void sum_rows(void *ctx, size_t begin, size_t end) {
  const cpu_reduce_t *s = ctx;
  const xr_reduce_problem_t *p = s->p;
  const int64_t n = p->red_shape[0], in_stride = p->in_outer[0] * (int64_t)s->in_size;
  const int64_t out_stride = p->out[XR_REDUCE_VALUES].outer_strides[0];
  const double divisor = p->op == XR_REDUCE_MEAN ? (double)p->red_numel : 1.0;
  for (size_t o = begin; o < end; o++) {
    const char *src = s->in + (int64_t)o * in_stride;
    const uint16_t *h = (const uint16_t *)src;
    double a = p->in_dtype == XR_DTYPE_F32    ? block_sum((const float *)src, n)
               : p->in_dtype == XR_DTYPE_BF16 ? block_sum_bf16(h, n)
                                              : block_sum_f16(h, n);
    store_value(s, 0, (int64_t)o * out_stride, a / divisor);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* columns                                                                                     */

/* Unit u's outputs: [o0, o0 + t) along the innermost kept dim. */
static void tile_of(const cpu_reduce_t *s, int64_t u, int64_t *o0, int64_t *t) {
  int64_t run = u / s->tiles, first = (u % s->tiles) * TILE;
  *o0 = run * s->columns + first;
  *t = s->columns - first < TILE ? s->columns - first : TILE;
}

/* Reduced positions [k0, k1) of the tile's outputs into st[0, t). */
XR_CPU_CLONES static void columns_range(const cpu_reduce_t *s, int64_t o0, int64_t t, int64_t k0,
                                        int64_t k1, state_t *st) {
  const xr_reduce_problem_t *p = s->p;
  const char *base = s->in + xr_reduce_outer_offset(p, p->in_outer, o0) * (int64_t)s->in_size;
  const int64_t esize = (int64_t)s->in_size;
  float buf[TILE];
  double acc[TILE], mean[TILE];
  float m[TILE];
  int64_t count[TILE], at[TILE];
  uint8_t nan[TILE], posinf[TILE];
  const bool max = wants_max(p, s->norm), extreme = is_extreme(p, s->norm);
  const float start = max || p->op == XR_REDUCE_LOGSUMEXP ? -INFINITY : INFINITY;
  for (int64_t j = 0; j < t; j++) {
    acc[j] = p->op == XR_REDUCE_PROD, count[j] = 0, at[j] = 0, m[j] = start;
    nan[j] = posinf[j] = 0;
  }
  const xr_reduce_op_t op = p->op;
  const bool var = op == XR_REDUCE_VAR || op == XR_REDUCE_STD, lse = op == XR_REDUCE_LOGSUMEXP;
  const float q = (float)p->p;
  for (int64_t k = k0; k < k1; k++) {
    const float *v = load_run(s, base + xr_reduce_red_offset(p, k) * esize, 1, t, buf);
    if (extreme) {
      for (int64_t j = 0; j < t; j++) {
        float x = op == XR_REDUCE_NORM ? fabsf(v[j]) : v[j];
        if (!nan[j] && (x != x || (max ? x > m[j] : x < m[j]) || k == k0))
          m[j] = x, at[j] = k, nan[j] = x != x;
      }
    } else if (op == XR_REDUCE_PROD) {
      for (int64_t j = 0; j < t; j++) acc[j] *= (double)v[j];
    } else if (op == XR_REDUCE_ALL || op == XR_REDUCE_ANY || op == XR_REDUCE_COUNT_NONZERO ||
               (op == XR_REDUCE_NORM && s->norm == XR_NORM_0)) {
      for (int64_t j = 0; j < t; j++) count[j] += v[j] != 0.0f;
    } else if (lse) {
      for (int64_t j = 0; j < t; j++) {
        float x = v[j];
        nan[j] |= x != x, posinf[j] |= x == INFINITY;
        if (fabsf(x) < INFINITY && x > m[j]) m[j] = x;
      }
    } else if (op == XR_REDUCE_NANSUM) {
      for (int64_t j = 0; j < t; j++) acc[j] += v[j] == v[j] ? (double)v[j] : 0.0;
    } else if (op == XR_REDUCE_NORM && s->norm == XR_NORM_1) {
      for (int64_t j = 0; j < t; j++) acc[j] += fabsf(v[j]);
    } else if (op == XR_REDUCE_NORM && s->norm == XR_NORM_2) {
      for (int64_t j = 0; j < t; j++) acc[j] += (double)v[j] * v[j];
    } else if (op == XR_REDUCE_NORM) {
      for (int64_t j = 0; j < t; j++) acc[j] += powf(fabsf(v[j]), q);
    } else { /* sum, mean, var's first pass */
      for (int64_t j = 0; j < t; j++) acc[j] += v[j];
    }
  }
  if (var || lse) { /* the second pass: squared deviations from the mean, exp-sums */
    for (int64_t j = 0; j < t; j++) {
      mean[j] = var ? (k1 > k0 ? acc[j] / (double)(k1 - k0) : 0) : 0;
      acc[j] = 0;
    }
    for (int64_t k = k0; k < k1; k++) {
      const float *v = load_run(s, base + xr_reduce_red_offset(p, k) * esize, 1, t, buf);
      if (var) {
        for (int64_t j = 0; j < t; j++) {
          double d = v[j] - mean[j];
          acc[j] += d * d;
        }
      } else {
        for (int64_t j = 0; j < t; j++)
          if (fabsf(v[j]) < INFINITY) acc[j] += exp_nonpositive(v[j] - m[j]);
      }
    }
  }
  for (int64_t j = 0; j < t; j++) {
    state_t *x = &st[j];
    *x = (state_t){.a = acc[j], .n = count[j], .at = at[j], .m = m[j], .nan = nan[j]};
    if (extreme) x->seen = k1 > k0;
    if (var) x->n = k1 - k0, x->mean = mean[j];
    if (lse) x->posinf = posinf[j], x->seen = m[j] > -INFINITY;
  }
}

/* Runs `body` (using j) for j in [0, t), with a constant trip count for full tiles so that the
 * compiler's cheap vectoriser takes the loop. */
#define TILE_LOOP(t, ...)                                                     \
  do {                                                                        \
    if ((t) == TILE) {                                                        \
      for (int64_t j = 0; j < TILE; j++) { __VA_ARGS__; }                     \
    } else {                                                                  \
      for (int64_t j = 0; j < (t); j++) { __VA_ARGS__; }                      \
    }                                                                         \
  } while (0)

enum { ROWS_AHEAD = 8 };

/* Sums and means of tiles of contiguous outputs along one reduced dim (a sum over the batch
 * dim): columns_range's first pass and finish's arithmetic, without the per-output state. */
XR_CPU_CLONES static void sum_columns(void *ctx, size_t begin, size_t end) {
  const cpu_reduce_t *s = ctx;
  const xr_reduce_problem_t *p = s->p;
  const int64_t n = p->red_shape[0], step = p->in_red[0] * (int64_t)s->in_size;
  const int64_t out_stride = p->out[XR_REDUCE_VALUES].outer_strides[0];
  const double divisor = p->op == XR_REDUCE_MEAN ? (double)p->red_numel : 1.0;
  float buf[TILE];
  double acc[TILE];
  for (size_t u = begin; u < end; u++) {
    int64_t o0, t;
    tile_of(s, (int64_t)u, &o0, &t);
    const char *src = s->in + o0 * p->in_outer[0] * (int64_t)s->in_size;
    TILE_LOOP(t, acc[j] = 0);
    for (int64_t k = 0; k < n; k++, src += step) {
      const float *f = (const float *)src;
      const uint16_t *h = (const uint16_t *)src;
      /* A tile's run of each row is a few lines a page apart from the next row's: more than
       * the hardware prefetcher follows. Fetch the run ROWS_AHEAD rows down. */
      if (k + ROWS_AHEAD < n) prefetch_bytes(src + ROWS_AHEAD * step, t * (int64_t)s->in_size);
      if (p->in_dtype == XR_DTYPE_F32) TILE_LOOP(t, acc[j] += f[j]);
      else if (p->in_dtype == XR_DTYPE_BF16) TILE_LOOP(t, acc[j] += xr_bits_to_f32((uint32_t)h[j] << 16));
      else TILE_LOOP(t, acc[j] += xr_f16_to_f32(h[j]));
    }
    TILE_LOOP(t, buf[j] = (float)(acc[j] / divisor));
    store_run(s, o0 * out_stride, out_stride, buf, t);
  }
}

static void columns_items(void *ctx, size_t begin, size_t end) {
  const cpu_reduce_t *s = ctx;
  state_t st[TILE];
  for (size_t item = begin; item < end; item++) {
    int64_t u = (int64_t)item / s->chunks, c = (int64_t)item % s->chunks, o0, t, k0, k1;
    tile_of(s, u, &o0, &t);
    chunk_range(s, c, &k0, &k1);
    columns_range(s, o0, t, k0, k1, s->chunks == 1 ? st : &s->partials[item * TILE]);
    if (s->chunks == 1)
      for (int64_t j = 0; j < t; j++) finish(s, &st[j], o0 + j);
  }
}

/* Merges every unit's chunks in order and writes the outputs. */
static void combine(void *ctx) {
  const cpu_reduce_t *s = ctx;
  const int64_t width = s->shape == SHAPE_COLUMNS ? TILE : 1;
  for (int64_t u = 0; u < s->units; u++) {
    int64_t o0 = u, t = 1;
    if (s->shape == SHAPE_COLUMNS) tile_of(s, u, &o0, &t);
    for (int64_t j = 0; j < t; j++) {
      state_t st = state_init(s);
      for (int64_t c = 0; c < s->chunks; c++)
        state_merge(s, &st, &s->partials[(u * s->chunks + c) * width + j]);
      finish(s, &st, o0 + j);
    }
  }
}

/* ------------------------------------------------------------------------------------------ */
/* scans                                                                                       */

/* Scans GROUP rows side by side: a row's running sum is a chain of dependent double adds (4
 * cycles each), and GROUP independent chains keep the adder busy (cumsum f32 ran at 37% of copy
 * one row at a time). */
enum { GROUP = 8 };

XR_CPU_CLONES static void scan_rows(void *ctx, size_t begin, size_t end) {
  const cpu_reduce_t *s = ctx;
  const xr_reduce_problem_t *p = s->p;
  const xr_reduce_output_t *ov = &p->out[0];
  const int64_t n = p->red_shape[0], is = p->in_red[0], os = ov->dim_stride;
  const bool prod = p->op == XR_REDUCE_CUMPROD;
  float buf[GROUP][BLOCK], res[GROUP][BLOCK];
  for (size_t o0 = begin; o0 < end; o0 += GROUP) {
    const int g_count = end - o0 < GROUP ? (int)(end - o0) : GROUP;
    const char *src[GROUP];
    int64_t at[GROUP];
    double acc[GROUP];
    for (int g = 0; g < g_count; g++) {
      int64_t o = (int64_t)o0 + g;
      src[g] = s->in + xr_reduce_outer_offset(p, p->in_outer, o) * (int64_t)s->in_size;
      at[g] = xr_reduce_outer_offset(p, ov->outer_strides, o);
      acc[g] = prod;
    }
    for (int64_t j = 0; j < n; j += BLOCK) {
      int64_t len = n - j < BLOCK ? n - j : BLOCK;
      const float *v[GROUP];
      for (int g = 0; g < g_count; g++)
        v[g] = load_run(s, src[g] + j * is * (int64_t)s->in_size, is, len, buf[g]);
      if (g_count == GROUP && !prod) {
        /* spelled out, so that the eight sums and row pointers stay in registers (as a loop
         * over g, GCC kept them in memory) */
        double a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
        double a4 = acc[4], a5 = acc[5], a6 = acc[6], a7 = acc[7];
        const float *v0 = v[0], *v1 = v[1], *v2 = v[2], *v3 = v[3];
        const float *v4 = v[4], *v5 = v[5], *v6 = v[6], *v7 = v[7];
        for (int64_t i = 0; i < len; i++) {
          res[0][i] = (float)(a0 += v0[i]), res[1][i] = (float)(a1 += v1[i]);
          res[2][i] = (float)(a2 += v2[i]), res[3][i] = (float)(a3 += v3[i]);
          res[4][i] = (float)(a4 += v4[i]), res[5][i] = (float)(a5 += v5[i]);
          res[6][i] = (float)(a6 += v6[i]), res[7][i] = (float)(a7 += v7[i]);
        }
        acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
        acc[4] = a4, acc[5] = a5, acc[6] = a6, acc[7] = a7;
      } else {
        for (int g = 0; g < g_count; g++)
          for (int64_t i = 0; i < len; i++)
            res[g][i] = (float)(prod ? (acc[g] *= v[g][i]) : (acc[g] += v[g][i]));
      }
      for (int g = 0; g < g_count; g++) store_run(s, at[g] + j * os, os, res[g], len);
    }
  }
}

static void scan_columns(void *ctx, size_t begin, size_t end) {
  const cpu_reduce_t *s = ctx;
  const xr_reduce_problem_t *p = s->p;
  const xr_reduce_output_t *ov = &p->out[0];
  const int64_t n = p->red_shape[0], is = p->in_red[0], os = ov->dim_stride;
  const int64_t ocol = ov->outer_strides[p->outer_rank - 1];
  const bool prod = p->op == XR_REDUCE_CUMPROD;
  float buf[TILE], res[TILE];
  double acc[TILE];
  for (size_t u = begin; u < end; u++) {
    int64_t o0, t;
    tile_of(s, (int64_t)u, &o0, &t);
    const char *src = s->in + xr_reduce_outer_offset(p, p->in_outer, o0) * (int64_t)s->in_size;
    const int64_t at = xr_reduce_outer_offset(p, ov->outer_strides, o0);
    for (int64_t c = 0; c < t; c++) acc[c] = prod;
    for (int64_t j = 0; j < n; j++) {
      const float *v = load_run(s, src + j * is * (int64_t)s->in_size, 1, t, buf);
      if (prod)
        for (int64_t c = 0; c < t; c++) res[c] = (float)(acc[c] *= v[c]);
      else
        for (int64_t c = 0; c < t; c++) res[c] = (float)(acc[c] += v[c]);
      store_run(s, at + j * os, ocol, res, t);
    }
  }
}

/* ------------------------------------------------------------------------------------------ */
/* sorts                                                                                       */

/* Float bits in an order where unsigned comparison is the sort's: NaN last, -0 equal to 0. */
static inline uint32_t sort_key(float f, bool descending) {
  uint32_t u;
  if (f != f) u = 0xffffffffu;
  else {
    u = f == 0 ? 0 : xr_f32_to_bits(f);
    u = u & 0x80000000u ? ~u : u | 0x80000000u;
  }
  return descending ? ~u : u;
}

/* Sorts (key, position) pairs by key, stably: insertion for short rows, else an LSD radix sort
 * by bytes between (k, i) and (k2, i2), skipping a byte every key shares. Returns the arrays
 * holding the result. */
static uint32_t *sort_pairs(uint32_t *k, uint32_t *i, uint32_t *k2, uint32_t *i2, int64_t n,
                            uint32_t **out_keys) {
  if (n <= 32) {
    for (int64_t a = 1; a < n; a++) {
      uint32_t key = k[a], pos = i[a];
      int64_t b = a;
      for (; b > 0 && k[b - 1] > key; b--) k[b] = k[b - 1], i[b] = i[b - 1];
      k[b] = key, i[b] = pos;
    }
    *out_keys = k;
    return i;
  }
  for (int shift = 0; shift < 32; shift += 8) {
    int64_t count[256] = {0};
    for (int64_t a = 0; a < n; a++) count[(k[a] >> shift) & 255u]++;
    if (count[(k[0] >> shift) & 255u] == n) continue;
    int64_t sum = 0;
    for (int d = 0; d < 256; d++) {
      int64_t c = count[d];
      count[d] = sum, sum += c;
    }
    for (int64_t a = 0; a < n; a++) {
      int64_t at = count[(k[a] >> shift) & 255u]++;
      k2[at] = k[a], i2[at] = i[a];
    }
    uint32_t *t = k;
    k = k2, k2 = t;
    t = i, i = i2, i2 = t;
  }
  *out_keys = k;
  return i;
}

/* An integer or bool element, exactly. */
static int64_t load_integer(const char *src, xr_dtype_t d) {
  switch (d) {
    case XR_DTYPE_I8: return *(const int8_t *)src;
    case XR_DTYPE_I16: return *(const int16_t *)src;
    case XR_DTYPE_I32: return *(const int32_t *)src;
    case XR_DTYPE_I64: return *(const int64_t *)src;
    case XR_DTYPE_BOOL: return *(const uint8_t *)src != 0;
    default: return *(const uint8_t *)src; /* uint8 */
  }
}

/* A row of integers (xr_reduce_int_sort): 32-bit keys (value ^ sign bit) for types of 32 bits
 * and less; int64 sorts by the low half of its 64-bit key, then (stably) by the high half.
 * Returns the positions in order. */
static uint32_t *sort_integers(const cpu_reduce_t *s, const char *src, uint32_t *k, uint32_t *i,
                               uint32_t *k2, uint32_t *i2) {
  const xr_reduce_problem_t *p = s->p;
  const int64_t n = s->sort_n, step = p->in_red[0] * (int64_t)s->in_size;
  const bool wide = p->in_dtype == XR_DTYPE_I64;
  const uint64_t flip = p->descending ? ~(uint64_t)0 : 0;
  for (int64_t j = 0; j < n; j++) {
    int64_t v = load_integer(src + j * step, p->in_dtype);
    k[j] = wide ? (uint32_t)(((uint64_t)v ^ 0x8000000000000000u) ^ flip)
                : ((uint32_t)v ^ 0x80000000u) ^ (uint32_t)flip;
    i[j] = (uint32_t)j;
  }
  uint32_t *keys, *pos = sort_pairs(k, i, k2, i2, n, &keys);
  if (!wide) return pos;
  for (int64_t a = 0; a < n; a++) {
    int64_t v = load_integer(src + (int64_t)pos[a] * step, p->in_dtype);
    keys[a] = (uint32_t)((((uint64_t)v ^ 0x8000000000000000u) ^ flip) >> 32);
  }
  uint32_t *other_k = keys == k ? k2 : k, *other_i = pos == i ? i2 : i;
  return sort_pairs(keys, pos, other_k, other_i, n, &keys);
}

static void sort_items(void *ctx, size_t begin, size_t end) {
  const cpu_reduce_t *s = ctx;
  const xr_reduce_problem_t *p = s->p;
  const xr_reduce_output_t *ov = &p->out[0], *oi = &p->out[1];
  const int64_t n = s->sort_n, is = p->in_red[0], esize = (int64_t)s->in_size;
  float buf[BLOCK];
  for (size_t item = begin; item < end; item++) {
    uint32_t *k = s->sort_scratch + (size_t)(4 * n) * item, *i = k + n, *k2 = i + n, *i2 = k2 + n;
    int64_t r0 = (int64_t)item * p->outer_numel / (int64_t)s->items;
    int64_t r1 = ((int64_t)item + 1) * p->outer_numel / (int64_t)s->items;
    for (int64_t o = r0; o < r1; o++) {
      const char *src = s->in + xr_reduce_outer_offset(p, p->in_outer, o) * esize;
      for (int64_t j = 0; !s->int_sort && j < n; j += BLOCK) {
        int64_t len = n - j < BLOCK ? n - j : BLOCK;
        xr_ew_cpu_load(buf, src + j * is * esize, p->in_dtype, is, len);
        for (int64_t a = 0; a < len; a++) {
          k[j + a] = sort_key(buf[a], p->descending);
          i[j + a] = (uint32_t)(j + a);
        }
      }
      uint32_t *keys, *pos = s->int_sort ? sort_integers(s, src, k, i, k2, i2)
                                          : sort_pairs(k, i, k2, i2, n, &keys);
      (void)keys;
      if (ov->index >= 0) {
        char *dst = s->out[0] + xr_reduce_outer_offset(p, ov->outer_strides, o) * esize;
        for (int64_t j = 0; j < p->k; j++)
          memcpy(dst + j * ov->dim_stride * esize, src + (int64_t)pos[j] * is * esize, (size_t)esize);
      }
      if (oi->index >= 0) {
        int64_t *dst = (int64_t *)s->out[1] + xr_reduce_outer_offset(p, oi->outer_strides, o);
        for (int64_t j = 0; j < p->k; j++) dst[j * oi->dim_stride] = pos[j];
      }
    }
  }
}

/* ------------------------------------------------------------------------------------------ */
/* the implementation                                                                          */

static xr_status_t cpu_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_reduce_problem_t *p = plan->problem;
  xr_status_t st = xr_reduce_int_sort(p) ? XR_OK : xr_reduce_check_fast(plan, "cpu");
  if (st != XR_OK) return st;
  if (p->op == XR_REDUCE_SORT && p->red_shape[0] > (int64_t)UINT32_MAX)
    return xr_error(XR_UNIMPLEMENTED, "cpu kernels: %s: rows of 2^32 elements or more",
                    plan->op->name);
  return XR_OK;
}

static void cpu_release(void *state) {
  cpu_reduce_t *s = state;
  if (!s) return;
  free(s->partials);
  free(s->sort_scratch);
  free(s);
}

static int64_t thread_count(xr_hal_device_t *device) {
  xr_hal_device_properties_t props;
  return xr_hal_device_properties(device, &props) == XR_OK && props.compute_units
             ? (int64_t)props.compute_units
             : 1;
}

static xr_status_t cpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  const xr_reduce_problem_t *p = plan->problem;
  cpu_reduce_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->p = p;
  s->norm = xr_reduce_norm_kind(p->p);
  s->in_size = xr_dtype_size(p->in_dtype);
  s->round = p->cast != p->in_dtype && p->cast != XR_DTYPE_F32;
  s->indices = p->out[XR_REDUCE_INDICES].index >= 0;
  s->int_sort = xr_reduce_int_sort(p);
  void *base;
  xr_status_t st = xr_tensor_host(&tensors[p->self], &base);
  s->in = (const char *)base + tensors[p->self].offset * (int64_t)s->in_size;
  for (int k = 0; st == XR_OK && k < XR_REDUCE_OUTPUTS; k++) {
    const xr_reduce_output_t *o = &p->out[k];
    if (o->index < 0) continue;
    st = xr_tensor_host(&tensors[o->index], &base);
    s->out[k] = (char *)base + tensors[o->index].offset * (int64_t)xr_dtype_size(o->dtype);
  }
  if (st != XR_OK) {
    free(s);
    return st;
  }
  const int64_t threads = thread_count(device), last = p->outer_rank - 1;
  /* A contiguous innermost kept dim of at least MIN_TILE outputs goes by tiles of columns,
   * unless the reduced (or scanned) dim is contiguous itself. */
  bool columns = last >= 0 && p->in_outer[last] == 1 && p->outer_shape[last] >= MIN_TILE &&
                 !(p->red_rank > 0 && p->in_red[p->red_rank - 1] == 1);
  if (columns) {
    s->columns = p->outer_shape[last];
    s->tiles = (s->columns + TILE - 1) / TILE;
  }
  s->chunks = 1;
  if (p->op == XR_REDUCE_SORT) {
    s->shape = SHAPE_SORT;
    s->sort_n = p->red_shape[0];
    int64_t per_item = 16 * (s->sort_n ? s->sort_n : 1), items = 8 * threads;
    int64_t cap = ((int64_t)64 << 20) / per_item;
    if (items > cap) items = cap;
    if (items > p->outer_numel) items = p->outer_numel;
    s->items = (size_t)(items > 0 ? items : 1);
    s->sort_scratch = malloc((size_t)per_item * s->items);
    if (!s->sort_scratch) {
      free(s);
      return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory for the sort's scratch",
                      plan->op->name);
    }
  } else if (xr_reduce_is_scan(p->op)) {
    s->shape = columns ? SHAPE_SCAN_COLUMNS : SHAPE_SCAN_ROWS;
    s->units = columns ? p->outer_numel / s->columns * s->tiles : p->outer_numel;
  } else {
    s->shape = columns ? SHAPE_COLUMNS : SHAPE_ROWS;
    s->units = columns ? p->outer_numel / s->columns * s->tiles : p->outer_numel;
    int64_t width = columns ? (s->columns < TILE ? s->columns : TILE) : 1;
    /* Few units over many elements: chunks of the reduced range, merged by combine(). */
    if (s->units < 2 * threads && p->red_numel * width > 2 * CHUNK) {
      s->chunks = p->red_numel * width / CHUNK;
      if (s->chunks > MAX_CHUNKS) s->chunks = MAX_CHUNKS;
      if (s->chunks > p->red_numel) s->chunks = p->red_numel;
    }
    /* Sums and means over one dim into one run of outputs skip the general state. */
    bool plain_sum = s->chunks == 1 && (p->op == XR_REDUCE_SUM || p->op == XR_REDUCE_MEAN) &&
                     !s->round && xr_reduce_fast_dtype(p->in_dtype) && p->outer_rank == 1 &&
                     p->red_rank == 1 && p->out[XR_REDUCE_INDICES].index < 0;
    if (plain_sum && s->shape == SHAPE_ROWS && p->in_red[0] == 1 && p->red_shape[0] <= FUSED_RUN)
      s->shape = SHAPE_SUM_ROWS;
    if (plain_sum && s->shape == SHAPE_COLUMNS) s->shape = SHAPE_SUM_COLUMNS;
    if (s->chunks > 1) {
      s->partials = malloc(sizeof *s->partials * (size_t)(s->units * s->chunks * (columns ? TILE : 1)));
      if (!s->partials) {
        free(s);
        return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
      }
    }
  }
  /* Enough elements per parallel task to pay for it. */
  int64_t per_unit = (p->red_numel ? p->red_numel : 1) * (columns ? TILE : 1) / s->chunks;
  s->grain = per_unit >= 16384 ? 1 : 16384 / (per_unit ? per_unit : 1);
  *out_state = s;
  return XR_OK;
}

static xr_status_t cpu_enqueue(void *state, xr_hal_stream_t *stream) {
  cpu_reduce_t *s = state;
  const xr_reduce_problem_t *p = s->p;
  if (p->outer_numel == 0) return XR_OK;
  switch (s->shape) {
    case SHAPE_SORT:
      if (s->sort_n == 0) return XR_OK;
      return xr_hal_stream_enqueue_parallel(stream, s->items, 1, sort_items, s);
    case SHAPE_SCAN_ROWS:
    case SHAPE_SCAN_COLUMNS:
      if (p->red_shape[0] == 0) return XR_OK;
      if (s->shape == SHAPE_SCAN_COLUMNS)
        return xr_hal_stream_enqueue_parallel(stream, (size_t)s->units, (size_t)s->grain,
                                              scan_columns, s);
      /* whole groups of rows per task, so that scan_rows runs them side by side */
      return xr_hal_stream_enqueue_parallel(
          stream, (size_t)s->units, (size_t)((s->grain + GROUP - 1) / GROUP * GROUP), scan_rows, s);
    default: {
      size_t items = (size_t)(s->units * s->chunks);
      xr_status_t st = xr_hal_stream_enqueue_parallel(
          stream, items, s->chunks > 1 ? 1 : (size_t)s->grain,
          s->shape == SHAPE_SUM_ROWS      ? sum_rows
          : s->shape == SHAPE_SUM_COLUMNS ? sum_columns
          : s->shape == SHAPE_ROWS        ? rows_items
                                          : columns_items,
          s);
      if (st == XR_OK && s->chunks > 1) st = xr_hal_stream_enqueue_host(stream, combine, s);
      return st;
    }
  }
}

const xr_kernel_impl_t xr_cpu_reduce = {
    .name = "cpu.reduce",
    .driver = "cpu",
    .supports = cpu_supports,
    .prepare = cpu_prepare,
    .enqueue = cpu_enqueue,
    .release = cpu_release,
};
