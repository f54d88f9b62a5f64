/* cpu.scatter: the scatter family on the host thread pool (xr_hal_stream_enqueue_parallel).
 *
 * The iteration is reordered free dims first, serial dims last (xr_sc_reorder).
 *  - GATHER: rows of the innermost dim in parallel; where no index varies along that dim the
 *    slots are read once per row and the row moves as one strided (or contiguous) copy.
 *  - SCATTER: work items are (a block of up to 64 consecutive free positions, a chunk of the
 *    destination's indexed range). Each walks the serial dims in row-major order for its block
 *    and applies only the updates whose destination falls in its chunk, so every destination
 *    element has one owner and sees its updates in the reference's order: deterministic, no
 *    atomics; with duplicate indices the last write wins. Chunks (up to 16, each re-reading the
 *    indices) give the pool work when there are few free positions. Reductions accumulate in
 *    the destination where that is exact in its own type (f32 and f64 sums and products,
 *    integer ones wrapping, every amax/amin); otherwise (f16/bf16/fp8 sums and products, means,
 *    include_self=False) in a float (f64: double; integers: int64) accumulator per element with
 *    a count, rounded once by a second walk that also clears the counts.
 *  - Compaction (masks, nonzero): per-chunk counts in parallel, an exclusive scan on the host,
 *    then the positions written in parallel.
 * Every dtype moves as raw elements; reductions take every float dtype and the integers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/family.h"
#include "kernels/scatter.h"

enum { FREE_BLOCK = 64, MAX_CHUNKS = 16, TARGET_ITEMS = 64, MASK_CHUNK = 1 << 14 };
#define OPS (2 + XR_SC_MAX_SLOTS) /* dst, src, slots */

typedef struct cpu_scatter {
  const xr_scatter_problem_t *p;
  char *dst;
  const char *src, *copy, *mask;
  const char *index[XR_SC_MAX_SLOTS];
  size_t es;
  /* the reordered iteration; strides[0] dst, [1] src, [2 + i] slot i */
  int rank, free_rank, count_dim;
  int64_t shape[XR_MAX_RANK], strides[OPS][XR_MAX_RANK];
  int64_t nf, ns;
  /* GATHER rows */
  int64_t rows, row_len;
  bool row_const; /* no slot varies along the innermost dim */
  /* SCATTER items */
  int64_t fblocks, chunks, range; /* range: the destination's indexed range (slot numels) */
  bool scratch, floating;
  void *acc;
  int32_t *cnt;
  /* compaction */
  int64_t *positions, *chunk_base, mask_chunks, count;
} cpu_scatter_t;

/* ------------------------------------------------------------------------------------------ */
/* element helpers                                                                             */

static inline float load_f(const char *base, xr_dtype_t dt, int64_t i) {
  switch (dt) {
    case XR_DTYPE_F32: return ((const float *)base)[i];
    case XR_DTYPE_BF16: return xr_bf16_to_f32(((const uint16_t *)base)[i]);
    case XR_DTYPE_F16: return xr_f16_to_f32(((const uint16_t *)base)[i]);
    default: return xr_fp8_to_f32(((const uint8_t *)base)[i], dt);
  }
}

static inline void store_f(char *base, xr_dtype_t dt, int64_t i, float v) {
  switch (dt) {
    case XR_DTYPE_F32: ((float *)base)[i] = v; break;
    case XR_DTYPE_BF16: ((uint16_t *)base)[i] = xr_f32_to_bf16(v); break;
    case XR_DTYPE_F16: ((uint16_t *)base)[i] = xr_f32_to_f16(v); break;
    default: ((uint8_t *)base)[i] = xr_f32_to_fp8(v, dt); break;
  }
}

static inline void move(char *dst, const char *src, size_t es) {
  switch (es) {
    case 1: *dst = *src; break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    default: memcpy(dst, src, 8); break;
  }
}

/* A strided row of n elements. */
static void move_row(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n, size_t es) {
  if (ds == 1 && ss == 1) {
    memcpy(dst, src, (size_t)n * es);
    return;
  }
  int64_t d = ds * (int64_t)es, s = ss * (int64_t)es;
  switch (es) {
    case 1:
      for (int64_t i = 0; i < n; i++) dst[i * d] = src[i * s];
      break;
    case 2:
      for (int64_t i = 0; i < n; i++) memcpy(dst + i * d, src + i * s, 2);
      break;
    case 4:
      for (int64_t i = 0; i < n; i++) memcpy(dst + i * d, src + i * s, 4);
      break;
    default:
      for (int64_t i = 0; i < n; i++) memcpy(dst + i * d, src + i * s, 8);
      break;
  }
}

static inline float combine_f(xr_sc_reduce_t r, float a, float c) {
  switch (r) {
    case XR_SC_MUL: return a * c;
    case XR_SC_MAX: return isnan(a) || isnan(c) ? NAN : a > c ? a : c;
    case XR_SC_MIN: return isnan(a) || isnan(c) ? NAN : a < c ? a : c;
    default: return a + c;
  }
}

static inline double combine_d(xr_sc_reduce_t r, double a, double c) {
  switch (r) {
    case XR_SC_MUL: return a * c;
    case XR_SC_MAX: return isnan(a) || isnan(c) ? NAN : a > c ? a : c;
    case XR_SC_MIN: return isnan(a) || isnan(c) ? NAN : a < c ? a : c;
    default: return a + c;
  }
}

static inline int64_t combine_i(xr_sc_reduce_t r, int64_t a, int64_t c) {
  switch (r) {
    case XR_SC_MUL: return (int64_t)((uint64_t)a * (uint64_t)c);
    case XR_SC_MAX: return a > c ? a : c;
    case XR_SC_MIN: return a < c ? a : c;
    default: return (int64_t)((uint64_t)a + (uint64_t)c);
  }
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Offsets of operands [0, nops) at a reordered position given by its coordinates. */
static void decode(const cpu_scatter_t *s, int d0, int d1, int64_t linear, int nops, int64_t *coord,
                   int64_t *off) {
  for (int k = 0; k < nops; k++) off[k] = 0;
  for (int d = d1 - 1; d >= d0; d--) {
    coord[d] = linear % s->shape[d];
    linear /= s->shape[d];
    for (int k = 0; k < nops; k++) off[k] += coord[d] * s->strides[k][d];
  }
}

/* Steps the coordinates of dims [d0, d1) by one, row-major, keeping the offsets. */
static void step(const cpu_scatter_t *s, int d0, int d1, int nops, int64_t *coord, int64_t *off) {
  for (int d = d1 - 1; d >= d0; d--) {
    for (int k = 0; k < nops; k++) off[k] += s->strides[k][d];
    if (++coord[d] < s->shape[d]) return;
    for (int k = 0; k < nops; k++) off[k] -= s->shape[d] * s->strides[k][d];
    coord[d] = 0;
  }
}

/* Slot i's clamped value, read at offset `at`. */
static inline int64_t slot_value(const cpu_scatter_t *s, int i, int64_t at) {
  const xr_sc_slot_t *sl = &s->p->slots[i];
  int64_t v;
  if (sl->source == XR_SC_INDEX) {
    v = sl->dtype == XR_DTYPE_I64 ? ((const int64_t *)s->index[i])[at]
                                  : ((const int32_t *)s->index[i])[at];
  } else if (sl->source == XR_SC_POSITIONS) {
    v = s->positions[at];
  } else {
    v = at;
  }
  return xr_sc_clamp(v, sl->numel);
}

/* ------------------------------------------------------------------------------------------ */
/* the out-of-place copy                                                                       */

static void copy_rows(void *ctx, size_t begin, size_t end) {
  const cpu_scatter_t *s = ctx;
  const xr_scatter_problem_t *p = s->p;
  int r = p->copy_rank;
  int64_t len = r ? p->copy_shape[r - 1] : 1;
  int64_t ds = r ? p->copy_dst_strides[r - 1] : 1, ss = r ? p->copy_src_strides[r - 1] : 1;
  for (size_t row = begin; row < end; row++) {
    int64_t rest = (int64_t)row, d = 0, o = 0;
    for (int k = r - 2; k >= 0; k--) {
      int64_t c = rest % p->copy_shape[k];
      rest /= p->copy_shape[k];
      d += c * p->copy_dst_strides[k];
      o += c * p->copy_src_strides[k];
    }
    move_row(s->dst + d * (int64_t)s->es, ds, s->copy + o * (int64_t)s->es, ss, len, s->es);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* compaction                                                                                  */

static int64_t mask_offset(const xr_scatter_problem_t *p, int64_t e) {
  int64_t off = 0;
  for (int d = p->mask_rank - 1; d >= 0; d--) {
    off += (e % p->mask_shape[d]) * p->mask_strides[d];
    e /= p->mask_shape[d];
  }
  return off;
}

static int64_t mask_scan(cpu_scatter_t *s, int64_t chunk, bool write) {
  const xr_scatter_problem_t *p = s->p;
  int64_t e0 = chunk * MASK_CHUNK, e1 = e0 + MASK_CHUNK, n = 0;
  if (e1 > p->mask_numel) e1 = p->mask_numel;
  int64_t *out = write ? s->positions + s->chunk_base[chunk] : NULL;
  bool flat = p->mask_rank == 1 && p->mask_strides[0] == 1 && xr_dtype_size(p->mask_dtype) == 1;
  for (int64_t e = e0; e < e1; e++) {
    bool set = flat ? ((const uint8_t *)s->mask)[e] != 0
                    : xr_sc_element_nonzero(s->mask, p->mask_dtype, mask_offset(p, e));
    if (!set) continue;
    if (out) out[n] = e;
    n++;
  }
  return n;
}

static void count_chunks(void *ctx, size_t begin, size_t end) {
  cpu_scatter_t *s = ctx;
  for (size_t c = begin; c < end; c++) s->chunk_base[c] = mask_scan(s, (int64_t)c, false);
}

static void scan_chunks(void *ctx) {
  cpu_scatter_t *s = ctx;
  int64_t total = 0;
  for (int64_t c = 0; c < s->mask_chunks; c++) {
    int64_t n = s->chunk_base[c];
    s->chunk_base[c] = total;
    total += n;
  }
  s->count = total;
}

static void write_chunks(void *ctx, size_t begin, size_t end) {
  cpu_scatter_t *s = ctx;
  for (size_t c = begin; c < end; c++) mask_scan(s, (int64_t)c, true);
}

/* ------------------------------------------------------------------------------------------ */
/* GATHER and NONZERO                                                                          */

static void gather_rows(void *ctx, size_t begin, size_t end) {
  const cpu_scatter_t *s = ctx;
  const xr_scatter_problem_t *p = s->p;
  int nops = 2 + p->slot_count, last = s->rank - 1;
  int64_t coord[XR_MAX_RANK] = {0}, off[OPS];
  size_t es = s->es;
  for (size_t row = begin; row < end; row++) {
    decode(s, 0, last > 0 ? last : 0, (int64_t)row, nops, coord, off);
    if (s->count_dim >= 0 && s->count_dim < last && coord[s->count_dim] >= s->count) {
      for (int64_t i = 0; i < s->row_len; i++)
        memset(s->dst + (off[0] + i * s->strides[0][last]) * (int64_t)es, 0, es);
      continue;
    }
    if (s->row_const && (s->count_dim < 0 || s->count_dim != last)) {
      int64_t src = off[1], dst = off[0];
      for (int i = 0; i < p->slot_count; i++)
        src += xr_sc_unravel(&p->slots[i], slot_value(s, i, off[2 + i]));
      int64_t ds = s->rank ? s->strides[0][last] : 1, ss = s->rank ? s->strides[1][last] : 1;
      move_row(s->dst + dst * (int64_t)es, ds, s->src + src * (int64_t)es, ss, s->row_len, es);
      continue;
    }
    for (int64_t j = 0; j < s->row_len; j++) {
      int64_t dst = off[0] + j * s->strides[0][last];
      if (s->count_dim == last && j >= s->count) {
        memset(s->dst + dst * (int64_t)es, 0, es);
        continue;
      }
      int64_t src = off[1] + j * s->strides[1][last];
      for (int i = 0; i < p->slot_count; i++)
        src +=
            xr_sc_unravel(&p->slots[i], slot_value(s, i, off[2 + i] + j * s->strides[2 + i][last]));
      move(s->dst + dst * (int64_t)es, s->src + src * (int64_t)es, es);
    }
  }
}

static void nonzero_rows(void *ctx, size_t begin, size_t end) {
  const cpu_scatter_t *s = ctx;
  const xr_scatter_problem_t *p = s->p;
  int64_t *out = (int64_t *)s->dst;
  int64_t r = p->shape[1];
  for (size_t k = begin; k < end; k++) {
    int64_t rest = (int64_t)k < s->count ? s->positions[k] : -1;
    for (int64_t d = r - 1; d >= 0; d--) {
      int64_t v = p->fill;
      if (rest >= 0) {
        v = rest % p->mask_shape[d];
        rest /= p->mask_shape[d];
      }
      out[(int64_t)k * p->dst.strides[0] + d * p->dst.strides[1]] = v;
    }
  }
}

/* ------------------------------------------------------------------------------------------ */
/* SCATTER                                                                                     */

/* One update of the destination element at `dst` (direct: in its own dtype). */
static void update(const cpu_scatter_t *s, int64_t dst, int64_t src) {
  const xr_scatter_problem_t *p = s->p;
  xr_dtype_t dt = p->dst.dtype;
  char *d = s->dst;
  if (p->reduce == XR_SC_ASSIGN) {
    if (p->src_scalar)
      memcpy(d + dst * (int64_t)s->es, &p->pattern, s->es);
    else
      move(d + dst * (int64_t)s->es, s->src + src * (int64_t)s->es, s->es);
    return;
  }
  if (dt == XR_DTYPE_F64) {
    double c = p->src_scalar ? p->value : ((const double *)s->src)[src];
    if (p->reduce == XR_SC_ADD) c *= p->alpha;
    ((double *)d)[dst] = combine_d(p->reduce, ((double *)d)[dst], c);
  } else if (s->floating) {
    float c = p->src_scalar ? (float)p->value : load_f(s->src, dt, src);
    if (p->reduce == XR_SC_ADD) c *= (float)p->alpha;
    store_f(d, dt, dst, combine_f(p->reduce, load_f(d, dt, dst), c));
  } else {
    int64_t c = p->src_scalar ? p->ivalue : xr_sc_load_int(s->src, dt, src);
    if (p->reduce == XR_SC_ADD) c = (int64_t)((uint64_t)c * (uint64_t)(int64_t)p->alpha);
    xr_sc_store_int(d, dt, dst, combine_i(p->reduce, xr_sc_load_int(d, dt, dst), c));
  }
}

/* One update into the accumulator of element `dst` (first: from dst's own value or alone). */
static void accumulate(const cpu_scatter_t *s, int64_t dst, int64_t src) {
  const xr_scatter_problem_t *p = s->p;
  xr_dtype_t dt = p->dst.dtype;
  int32_t n = s->cnt[dst]++;
  bool start = n == 0, with_self = start && p->include_self;
  if (dt == XR_DTYPE_F64) {
    double *acc = s->acc, c = p->src_scalar ? p->value : ((const double *)s->src)[src];
    if (p->reduce == XR_SC_ADD) c *= p->alpha;
    if (with_self)
      acc[dst] = combine_d(p->reduce, ((const double *)s->dst)[dst], c);
    else
      acc[dst] = start ? c : combine_d(p->reduce, acc[dst], c);
  } else if (s->floating) {
    float *acc = s->acc, c = p->src_scalar ? (float)p->value : load_f(s->src, dt, src);
    if (p->reduce == XR_SC_ADD) c *= (float)p->alpha;
    if (with_self)
      acc[dst] = combine_f(p->reduce, load_f(s->dst, dt, dst), c);
    else
      acc[dst] = start ? c : combine_f(p->reduce, acc[dst], c);
  } else {
    int64_t *acc = s->acc, c = p->src_scalar ? p->ivalue : xr_sc_load_int(s->src, dt, src);
    if (p->reduce == XR_SC_ADD) c = (int64_t)((uint64_t)c * (uint64_t)(int64_t)p->alpha);
    if (with_self)
      acc[dst] = combine_i(p->reduce, xr_sc_load_int(s->dst, dt, dst), c);
    else
      acc[dst] = start ? c : combine_i(p->reduce, acc[dst], c);
  }
}

/* The accumulated result of element `dst`, once (its count cleared for the next run). */
static void finish(const cpu_scatter_t *s, int64_t dst) {
  const xr_scatter_problem_t *p = s->p;
  int32_t n = s->cnt[dst];
  if (!n) return;
  s->cnt[dst] = 0;
  xr_dtype_t dt = p->dst.dtype;
  int64_t count = n + (p->include_self ? 1 : 0);
  if (dt == XR_DTYPE_F64) {
    double v = ((double *)s->acc)[dst];
    ((double *)s->dst)[dst] = p->reduce == XR_SC_MEAN ? v / (double)count : v;
  } else if (s->floating) {
    float v = ((float *)s->acc)[dst];
    store_f(s->dst, dt, dst, p->reduce == XR_SC_MEAN ? v / (float)count : v);
  } else {
    int64_t v = xr_sc_wrap_int(((int64_t *)s->acc)[dst], dt);
    xr_sc_store_int(s->dst, dt, dst, p->reduce == XR_SC_MEAN ? floor_div(v, count) : v);
  }
}

static void scatter_items(void *ctx, size_t begin, size_t end) {
  const cpu_scatter_t *s = ctx;
  const xr_scatter_problem_t *p = s->p;
  int nops = 2 + p->slot_count, fr = s->free_rank;
  int64_t fcoord[XR_MAX_RANK] = {0}, scoord[XR_MAX_RANK] = {0};
  int64_t foff[FREE_BLOCK][OPS], soff[OPS], f_count[FREE_BLOCK];
  for (size_t item = begin; item < end; item++) {
    int64_t block = (int64_t)item % s->fblocks, chunk = (int64_t)item / s->fblocks;
    int64_t f0 = block * FREE_BLOCK, f1 = f0 + FREE_BLOCK < s->nf ? f0 + FREE_BLOCK : s->nf;
    int64_t lo = chunk * s->range / s->chunks, hi = (chunk + 1) * s->range / s->chunks;
    decode(s, 0, fr, f0, nops, fcoord, foff[0]);
    for (int64_t f = f0; f < f1; f++) {
      if (f > f0) {
        memcpy(foff[f - f0], foff[f - f0 - 1], sizeof(int64_t) * (size_t)nops);
        step(s, 0, fr, nops, fcoord, foff[f - f0]);
      }
      f_count[f - f0] = s->count_dim >= 0 && s->count_dim < fr ? fcoord[s->count_dim] : -1;
    }
    for (int pass = 0; pass < (s->scratch ? 2 : 1); pass++) {
      decode(s, fr, s->rank, 0, nops, scoord, soff);
      for (int64_t sp = 0; sp < s->ns; sp++, step(s, fr, s->rank, nops, scoord, soff)) {
        if (s->count_dim >= fr && scoord[s->count_dim] >= s->count) continue;
        for (int64_t f = f0; f < f1; f++) {
          if (f_count[f - f0] >= s->count) continue;
          const int64_t *fo = foff[f - f0];
          int64_t dst = fo[0] + soff[0], src = fo[1] + soff[1], j = 0;
          for (int i = 0; i < p->slot_count; i++) {
            const xr_sc_slot_t *sl = &p->slots[i];
            int64_t v = slot_value(s, i, fo[2 + i] + soff[2 + i]);
            int64_t off = xr_sc_unravel(sl, v);
            if (sl->on_src) {
              src += off;
            } else {
              dst += off;
              j = j * sl->numel + v;
            }
          }
          if (s->chunks > 1 && (j < lo || j >= hi)) continue;
          if (!s->scratch)
            update(s, dst, src);
          else if (pass == 0)
            accumulate(s, dst, src);
          else
            finish(s, dst);
        }
      }
    }
  }
}

/* ------------------------------------------------------------------------------------------ */
/* the implementation                                                                          */

static xr_status_t cpu_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_scatter_problem_t *p = plan->problem;
  for (int i = 0; i < p->slot_count; i++)
    if (p->slots[i].source == XR_SC_INDEX &&
        !(p->slots[i].dtype == XR_DTYPE_I32 || p->slots[i].dtype == XR_DTYPE_I64))
      return xr_error(XR_UNIMPLEMENTED, "index dtype %s", xr_dtype_name(p->slots[i].dtype));
  return XR_OK;
}

static void cpu_release(void *state) {
  cpu_scatter_t *s = state;
  if (!s) return;
  free(s->acc);
  free(s->cnt);
  free(s->positions);
  free(s->chunk_base);
  free(s);
}

static xr_status_t cpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_scatter_problem_t *p = plan->problem;
  cpu_scatter_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->p = p;
  s->es = xr_dtype_size(p->dst.dtype);
  xr_status_t st = XR_OK;
  s->dst = (char *)xr_sc_host_at(&tensors[p->dst.tensor], &st);
  if (p->src.tensor >= 0) s->src = xr_sc_host_at(&tensors[p->src.tensor], &st);
  if (p->copy_src >= 0) s->copy = xr_sc_host_at(&tensors[p->copy_src], &st);
  if (p->mask >= 0) s->mask = xr_sc_host_at(&tensors[p->mask], &st);
  for (int i = 0; i < p->slot_count; i++)
    if (p->slots[i].source == XR_SC_INDEX) s->index[i] = xr_sc_host_at(&tensors[p->slots[i].tensor], &st);
  if (st != XR_OK) {
    cpu_release(s);
    return st;
  }
  int perm[XR_MAX_RANK];
  xr_sc_reorder(p, perm, &s->rank, &s->free_rank);
  s->count_dim = -1;
  s->nf = s->ns = 1;
  for (int i = 0; i < s->rank; i++) {
    int d = perm[i];
    s->shape[i] = p->shape[d];
    s->strides[0][i] = p->dst.strides[d];
    s->strides[1][i] = p->src.strides[d];
    for (int k = 0; k < p->slot_count; k++) s->strides[2 + k][i] = p->slots[k].strides[d];
    if (d == p->count_dim) s->count_dim = i;
    if (i < s->free_rank)
      s->nf *= s->shape[i];
    else
      s->ns *= s->shape[i];
  }
  s->count = INT64_MAX;
  bool ok = true;
  if (p->mask >= 0) {
    s->mask_chunks = (p->mask_numel + MASK_CHUNK - 1) / MASK_CHUNK;
    s->positions = malloc(sizeof(int64_t) * (size_t)(p->mask_numel ? p->mask_numel : 1));
    s->chunk_base = malloc(sizeof(int64_t) * (size_t)(s->mask_chunks ? s->mask_chunks : 1));
    ok = s->positions && s->chunk_base;
  }
  if (p->kind == XR_SC_GATHER) {
    s->row_len = s->rank ? s->shape[s->rank - 1] : 1;
    s->rows = s->row_len ? p->numel / s->row_len : 0;
    s->row_const = true;
    for (int k = 0; k < p->slot_count && s->rank; k++)
      s->row_const &= s->strides[2 + k][s->rank - 1] == 0;
  } else if (p->kind == XR_SC_SCATTER) {
    s->floating = xr_dtype_is_floating(p->dst.dtype);
    s->fblocks = (s->nf + FREE_BLOCK - 1) / FREE_BLOCK;
    double range = 1;
    for (int k = 0; k < p->slot_count; k++)
      if (!p->slots[k].on_src) range *= (double)p->slots[k].numel;
    s->range = range < 0x1p40 ? (int64_t)range : 1;
    s->chunks = s->fblocks ? (TARGET_ITEMS + s->fblocks - 1) / s->fblocks : 1;
    if (s->chunks > MAX_CHUNKS) s->chunks = MAX_CHUNKS;
    if (s->chunks > s->range) s->chunks = s->range > 0 ? s->range : 1;
    if (range >= 0x1p40) s->chunks = 1; /* j is only formed when there are chunks */
    s->scratch = xr_sc_needs_scratch(p);
    if (s->scratch && ok) {
      size_t n = (size_t)(p->dst_extent ? p->dst_extent : 1);
      s->acc = malloc(n * 8);
      s->cnt = calloc(n, sizeof *s->cnt);
      ok = s->acc && s->cnt;
    }
  }
  if (!ok) {
    cpu_release(s);
    return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t cpu_enqueue(void *state, xr_hal_stream_t *stream) {
  cpu_scatter_t *s = state;
  const xr_scatter_problem_t *p = s->p;
  xr_status_t st = XR_OK;
  if (p->copy_src >= 0 && p->copy_numel > 0) {
    int64_t len = p->copy_rank ? p->copy_shape[p->copy_rank - 1] : 1;
    st = xr_hal_stream_enqueue_parallel(stream, (size_t)(p->copy_numel / len),
                                        (size_t)(1 + 4096 / len), copy_rows, s);
  }
  if (st == XR_OK && p->mask >= 0 && p->mask_numel > 0) {
    st = xr_hal_stream_enqueue_parallel(stream, (size_t)s->mask_chunks, 1, count_chunks, s);
    if (st == XR_OK) st = xr_hal_stream_enqueue_host(stream, scan_chunks, s);
    if (st == XR_OK)
      st = xr_hal_stream_enqueue_parallel(stream, (size_t)s->mask_chunks, 1, write_chunks, s);
  } else if (p->mask >= 0) {
    s->count = 0;
  }
  if (st != XR_OK || p->numel == 0) return st;
  switch (p->kind) {
    case XR_SC_GATHER:
      return xr_hal_stream_enqueue_parallel(stream, (size_t)s->rows,
                                            (size_t)(1 + 4096 / s->row_len), gather_rows, s);
    case XR_SC_NONZERO:
      return xr_hal_stream_enqueue_parallel(stream, (size_t)p->shape[0], 1024, nonzero_rows, s);
    default:
      return xr_hal_stream_enqueue_parallel(stream, (size_t)(s->fblocks * s->chunks), 1,
                                            scatter_items, s);
  }
}

const xr_kernel_impl_t xr_cpu_scatter = {
    .name = "cpu.scatter",
    .driver = "cpu",
    .supports = cpu_supports,
    .prepare = cpu_prepare,
    .enqueue = cpu_enqueue,
    .release = cpu_release,
};
