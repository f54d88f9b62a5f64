/* TopK and SortTokens (kernels/routing.h) on embedded data against results worked out by hand
 * from triton_kernels' definitions (docs/replay.md "MoE routing"), exactly, on ref.routing,
 * cpu.routing and opencl.routing (skipped where PoCL is absent): ties by column, -0 below +0,
 * a softmax whose values are exact, ids routed nowhere, an expert spanning two 16-row tiles.
 * The matrix (routing_cases.h) compares the implementations with the reference; this file
 * checks the reference itself. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/bundle.h"
#include "kernels/kernels.h"
#include "tests/kernels/exact.h"

static char *b64(const void *data, size_t n) {
  static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const uint8_t *p = data;
  char *s = malloc(4 * ((n + 2) / 3) + 1), *o = s;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                 (i + 2 < n ? p[i + 2] : 0);
    *o++ = abc[v >> 18 & 63], *o++ = abc[v >> 12 & 63];
    *o++ = i + 1 < n ? abc[v >> 6 & 63] : '=', *o++ = i + 2 < n ? abc[v & 63] : '=';
  }
  *o = 0;
  return s;
}

static const exact_run_t runs[] = {{"cpu", XR_KERNEL_REFERENCE, "ref.routing"},
                                   {"cpu", XR_KERNEL_BEST, "cpu.routing"},
                                   {"opencl", XR_KERNEL_BEST, "opencl.routing"}};
enum { RUNS = sizeof runs / sizeof *runs };

/* Result `index` of the dump equals `want` (`n` elements of `size` bytes) bit for bit. */
static void expect_return(const char *dir, const char *kernel, int index, const void *want,
                          size_t n, size_t size) {
  char path[4400];
  snprintf(path, sizeof path, "%s/op0_return%d.npy", dir, index);
  xr_npy_t got;
  cr_assert_eq(xr_npy_load(path, &got), XR_OK, "%s", xr_last_error());
  cr_assert_eq((size_t)got.numel, n, "%s: return%d has %lld elements, expected %zu", kernel, index,
               (long long)got.numel, n);
  cr_assert_eq(got.item_size, size, "%s: return%d", kernel, index);
  for (size_t i = 0; i < n; i++) {
    int64_t g = 0, w = 0;
    memcpy(&g, got.data + i * size, size);
    memcpy(&w, (const char *)want + i * size, size);
    if (size == 2) g = (int16_t)g, w = (int16_t)w;
    if (size == 4) g = (int32_t)g, w = (int32_t)w;
    cr_assert_eq(g, w, "%s: return%d[%zu] is %lld (bits), expected %lld", kernel, index, i,
                 (long long)g, (long long)w);
  }
  xr_npy_free(&got);
}

typedef struct expected {
  const void *data;
  size_t n, size;
} expected_t;

static void expect_everywhere(const char *json, const expected_t *want, int count) {
  int ran = 0;
  for (int k = 0; k < RUNS; k++) {
    char dir[4096];
    if (!exact_run_dump(json, "routing", &runs[k], (size_t)k, dir, sizeof dir)) {
      cr_log_info("%s absent: not run there", runs[k].device);
      continue;
    }
    for (int i = 0; i < count; i++)
      expect_return(dir, runs[k].kernel, i, want[i].data, want[i].n, want[i].size);
    ran++;
  }
  cr_assert_geq(ran, 2, "the reference and cpu.routing must run");
}

static const char *topk_json(const char *dtype, const void *x, size_t bytes, int rows, int cols,
                             int k, bool softmax) {
  static char json[4096];
  char *data = b64(x, bytes);
  snprintf(json, sizeof json,
           "{\"format\": \"xreplay-bundle\", \"format_version\": 1, \"ops\": [{\"name\": \"TopK\", "
           "\"args\": [{\"type\": \"Tensor\", \"value\": {\"shape\": [%d, %d], \"dtype\": \"%s\", "
           "\"data_base64\": \"%s\"}}, {\"type\": \"int\", \"value\": %d}, {\"type\": \"bool\", "
           "\"value\": %s}, {\"type\": \"int\", \"value\": 1}, {\"type\": \"bool\", \"value\": "
           "true}]}]}",
           rows, cols, dtype, data, k, softmax ? "true" : "false");
  free(data);
  return json;
}

/* Equal values go to the smaller column; +0 ranks above -0; without the softmax the values are
 * the selected ones, in column order. */
Test(routing, topk_ties_and_signed_zeros) {
  const float x[2][6] = {{1, 3, 3, -0.0f, 0.0f, 2}, {-0.0f, 0.0f, -1, -0.0f, 0.0f, -5}};
  const float vals[2][3] = {{3, 3, 2}, {-0.0f, 0.0f, 0.0f}};
  const int16_t indx[2][3] = {{1, 2, 5}, {0, 1, 4}};
  const uint32_t bits[2] = {1u << 1 | 1u << 2 | 1u << 5, 1u << 0 | 1u << 1 | 1u << 4};
  const expected_t want[] = {{vals, 6, 4}, {indx, 6, 2}, {bits, 2, 4}};
  expect_everywhere(topk_json("float", x, sizeof x, 2, 6, 3, false), want, 3);
}

/* bf16 logits, k 2 with the softmax: two equal selected values each get exactly 0.5. */
Test(routing, topk_softmax_bf16) {
  const uint16_t one = 0x3f80, two = 0x4000, zero = 0, half = 0x3f00;
  const uint16_t x[2][4] = {{one, one, zero, zero}, {zero, two, two, two}};
  const uint16_t vals[2][2] = {{half, half}, {half, half}};
  const int16_t indx[2][2] = {{0, 1}, {1, 2}};
  const uint32_t bits[2] = {3, 6};
  const expected_t want[] = {{vals, 4, 2}, {indx, 4, 2}, {bits, 2, 4}};
  expect_everywhere(topk_json("c10::BFloat16", x, sizeof x, 2, 4, 2, true), want, 3);
}

static const char *sort_json(const float *scal, const int16_t *ids, int rows, int k, int experts) {
  static char json[8192];
  char *s = b64(scal, sizeof(float) * (size_t)(rows * k)), *i = b64(ids, 2 * (size_t)(rows * k));
  snprintf(json, sizeof json,
           "{\"format\": \"xreplay-bundle\", \"format_version\": 1, \"ops\": [{\"name\": "
           "\"SortTokens\", \"args\": [{\"type\": \"Tensor\", \"value\": {\"shape\": [%d, %d], "
           "\"dtype\": \"float\", \"data_base64\": \"%s\"}}, {\"type\": \"Tensor\", \"value\": "
           "{\"shape\": [%d, %d], \"dtype\": \"short int\", \"data_base64\": \"%s\"}}, {\"type\": "
           "\"int\", \"value\": %d}]}]}",
           rows, k, s, rows, k, i, experts);
  free(s);
  free(i);
  return json;
}

/* 3 tokens x 2 over 3 experts, one id (5) no expert has. Flat ids 2 0 2 1 5 2: sorted by expert
 * (stably) the positions 1 | 3 | 0 2 5, then the unrouted place. 6 gates > 3 experts: 2 +
 * ceil(4 / 16) = 3 tiles, one per expert at every block size. */
Test(routing, sort_tokens_small_with_an_unrouted_id) {
  const float scal[6] = {10, 11, 20, 21, 30, 31};
  const int16_t ids[6] = {2, 0, 2, 1, 5, 2};
  const int32_t hist[3] = {1, 1, 3}, combine[6] = {1, 3, 0, 2, 5, -1};
  const int32_t dispatch[6] = {2, 0, 3, 1, -1, 4}, raw[4] = {0, 1, 2, 5};
  const float gate[6] = {11, 21, 10, 20, 31, 0};
  int32_t pad[5][4], map[5][3];
  for (int b = 0; b < 5; b++) {
    pad[b][0] = 0, pad[b][1] = 1, pad[b][2] = 2, pad[b][3] = 3;
    map[b][0] = 0, map[b][1] = 1, map[b][2] = 2;
  }
  const expected_t want[] = {{hist, 3, 4}, {combine, 6, 4}, {dispatch, 6, 4}, {gate, 6, 4},
                             {raw, 4, 4},  {pad, 20, 4},    {map, 15, 4}};
  expect_everywhere(sort_json(scal, ids, 3, 2, 3), want, 7);
}

/* 20 tokens, k 1, all on expert 1 of 2: two 16-row tiles (the second e | 1 << 16) at block 16,
 * one at 32 and above; 1 + ceil(19 / 16) = 3 tile slots, the rest -1. */
Test(routing, sort_tokens_one_expert_two_tiles) {
  float scal[20];
  int16_t ids[20];
  int32_t order[20];
  for (int i = 0; i < 20; i++) scal[i] = (float)i / 4, ids[i] = 1, order[i] = i;
  const int32_t hist[2] = {0, 20}, raw[3] = {0, 0, 20};
  int32_t pad[5][3], map[5][3];
  for (int b = 0; b < 5; b++) {
    pad[b][0] = 0, pad[b][1] = 0, pad[b][2] = b == 0 ? 2 : 1;
    map[b][0] = 1, map[b][1] = b == 0 ? 1 | 1 << 16 : -1, map[b][2] = -1;
  }
  const expected_t want[] = {{hist, 2, 4}, {order, 20, 4}, {order, 20, 4}, {scal, 20, 4},
                             {raw, 3, 4},  {pad, 15, 4},   {map, 15, 4}};
  expect_everywhere(sort_json(scal, ids, 20, 1, 2), want, 7);
}
