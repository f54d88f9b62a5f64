/* cpu.routing: TopK and SortTokens (kernels/routing.h) on the host.
 *
 * TopK: rows in parallel on the device's pool; a row streams its columns once through a
 * k-entry list kept in selection order (insertion; a column enters only if it is selected
 * before the list's last), then the list is re-sorted by column, and the softmax is taken in
 * column order in fp32 as ref.routing does. SortTokens: a counting sort, one host step:
 * histogram, prefix sums, then one stable pass placing every selection; O(n k + E) where the
 * reference scans every selection per expert. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/family.h"
#include "kernels/routing.h"

typedef struct pick {
  uint32_t key;
  int32_t col;
} pick_t;

typedef struct cpu_routing {
  const xr_routing_problem_t *p;
  xr_tensor_t t[10];
  void *host[10];
  pick_t *picks;   /* TopK: rows x k */
  int32_t *cursor; /* SortTokens: E next places */
} cpu_routing_t;

static uint32_t load_key(const void *x, xr_dtype_t dt, int64_t i) {
  return dt == XR_DTYPE_F32 ? xr_routing_key(((const uint32_t *)x)[i], 32)
                            : xr_routing_key(((const uint16_t *)x)[i], 16);
}

static void topk_rows(void *context, size_t begin, size_t end) {
  cpu_routing_t *s = context;
  const xr_routing_problem_t *p = s->p;
  const void *x = s->host[p->x];
  const int64_t k = p->k;
  for (size_t r = begin; r < end; r++) {
    pick_t *list = s->picks + (int64_t)r * k;
    const int64_t base = s->t[p->x].offset + (int64_t)r * p->x_rs;
    int64_t n = 0;
    for (int64_t c = 0; c < p->cols; c++) {
      uint32_t key = load_key(x, p->dtype, base + c * p->x_cs);
      if (n == k && !xr_routing_before(key, c, list[k - 1].key, list[k - 1].col)) continue;
      int64_t i = n < k ? n++ : k - 1;
      for (; i > 0 && xr_routing_before(key, c, list[i - 1].key, list[i - 1].col); i--)
        list[i] = list[i - 1];
      list[i] = (pick_t){key, (int32_t)c};
    }
    for (int64_t j = 1; j < k; j++) /* by column */
      for (int64_t i = j; i > 0 && list[i - 1].col > list[i].col; i--) {
        pick_t v = list[i];
        list[i] = list[i - 1], list[i - 1] = v;
      }
    float m = 0, sum = 0;
    for (int64_t j = 0; j < k; j++) {
      float v = (float)xr_load_element(x, p->dtype, base + list[j].col * p->x_cs);
      if (j == 0 || v > m) m = v;
    }
    if (p->softmax)
      for (int64_t j = 0; j < k; j++)
        sum += expf((float)xr_load_element(x, p->dtype, base + list[j].col * p->x_cs) - m);
    uint32_t *w = (uint32_t *)s->host[p->bits] + (int64_t)r * p->words;
    memset(w, 0, sizeof *w * (size_t)p->words);
    for (int64_t j = 0; j < k; j++) {
      int32_t c = list[j].col;
      float v = (float)xr_load_element(x, p->dtype, base + c * p->x_cs);
      xr_store_element(s->host[p->vals], p->dtype, (int64_t)r * k + j,
                       p->softmax ? expf(v - m) / sum : v);
      ((int16_t *)s->host[p->indx])[(int64_t)r * k + j] = (int16_t)c;
      w[c / 32] |= 1u << (c % 32);
    }
  }
}

static void sort_tokens(void *context) {
  cpu_routing_t *s = context;
  const xr_routing_problem_t *p = s->p;
  const int64_t E = p->cols, k = p->k, gates = p->rows * k;
  const size_t es = xr_dtype_size(p->scal_dtype);
  const void *ids = s->host[p->ids];
  const char *scal = s->host[p->scal];
  int32_t *h = s->host[p->hist], *ci = s->host[p->combine], *di = s->host[p->dispatch];
  int32_t *offs = s->host[p->offs_raw], *pad = s->host[p->offs_pad], *map = s->host[p->pid_map];
  char *gate = s->host[p->gate];
  const int64_t ids_off = s->t[p->ids].offset, scal_off = s->t[p->scal].offset;
  memset(h, 0, sizeof *h * (size_t)E);
  for (int64_t r = 0; r < p->rows; r++)
    for (int64_t j = 0; j < k; j++) {
      int64_t e = xr_routing_load_id(ids, p->ids_dtype, ids_off + r * p->ids_rs + j * p->ids_cs);
      if (e >= 0 && e < E) h[e]++;
    }
  offs[0] = 0;
  for (int64_t e = 0; e < E; e++) offs[e + 1] = offs[e] + h[e], s->cursor[e] = offs[e];
  for (int64_t r = 0; r < p->rows; r++)
    for (int64_t j = 0; j < k; j++) {
      int64_t i = r * k + j;
      int64_t e = xr_routing_load_id(ids, p->ids_dtype, ids_off + r * p->ids_rs + j * p->ids_cs);
      if (e < 0 || e >= E) {
        di[i] = -1;
        continue;
      }
      int32_t at = s->cursor[e]++;
      ci[at] = (int32_t)i, di[i] = at;
      memcpy(gate + (size_t)at * es, scal + (size_t)(scal_off + r * p->scal_rs + j * p->scal_cs) * es,
             es);
    }
  for (int64_t i = offs[E]; i < gates; i++) {
    ci[i] = -1;
    memset(gate + (size_t)i * es, 0, es);
  }
  for (int b = 0; b < XR_ROUTING_BLOCK_SIZES; b++) {
    const int64_t bm = (int64_t)XR_ROUTING_BLOCK_M_MIN << b;
    int32_t *row = pad + b * (E + 1), *tiles = map + b * p->tiles;
    for (int64_t c = 0; c < p->tiles; c++) tiles[c] = -1;
    row[0] = 0;
    for (int64_t e = 0; e < E; e++) {
      int64_t n = (h[e] + bm - 1) / bm;
      for (int64_t c = 0; c < n && row[e] + c < p->tiles; c++)
        tiles[row[e] + c] = (int32_t)(e | c << 16);
      row[e + 1] = (int32_t)(row[e] + n);
    }
  }
}

static void cpu_release(void *state) {
  cpu_routing_t *s = state;
  if (!s) return;
  free(s->picks);
  free(s->cursor);
  free(s);
}

static xr_status_t cpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_routing_problem_t *p = plan->problem;
  size_t n = plan->input_count + plan->return_count;
  if (n > 10) return xr_error(XR_INTERNAL, "cpu.routing: %s: %zu tensors", plan->op->name, n);
  cpu_routing_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "cpu.routing: %s: out of memory", plan->op->name);
  s->p = p;
  xr_status_t st = XR_OK;
  for (size_t i = 0; i < n && st == XR_OK; i++) {
    s->t[i] = tensors[i];
    st = xr_tensor_host(&tensors[i], &s->host[i]);
  }
  if (st == XR_OK && p->op == XR_ROUTING_TOPK) {
    s->picks = malloc(sizeof *s->picks * (size_t)(p->rows * p->k > 0 ? p->rows * p->k : 1));
    if (!s->picks) st = xr_error(XR_RESOURCE_EXHAUSTED, "cpu.routing: TopK: out of memory");
  }
  if (st == XR_OK && p->op == XR_ROUTING_SORT) {
    s->cursor = malloc(sizeof *s->cursor * (size_t)p->cols);
    if (!s->cursor) st = xr_error(XR_RESOURCE_EXHAUSTED, "cpu.routing: SortTokens: out of memory");
  }
  if (st != XR_OK) {
    cpu_release(s);
    return st;
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t cpu_enqueue(void *state, xr_hal_stream_t *stream) {
  cpu_routing_t *s = state;
  if (s->p->op == XR_ROUTING_SORT) return xr_hal_stream_enqueue_host(stream, sort_tokens, s);
  if (s->p->rows == 0) return XR_OK;
  return xr_hal_stream_enqueue_parallel(stream, (size_t)s->p->rows, 16, topk_rows, s);
}

const xr_kernel_impl_t xr_routing_cpu = {
    .name = "cpu.routing",
    .driver = "cpu",
    .prepare = cpu_prepare,
    .enqueue = cpu_enqueue,
    .release = cpu_release,
};
