/* formats_bench: loads a synthetic 100,000-op bundle from JSON and from MessagePack and prints
 * ms, MB/s and the ratio. Both files hold the same bundle; each load is the full public path
 * (read file, decode, validate), best of several runs with a warm page cache.
 *
 *   bazel run -c opt //tools:formats_bench [-- OPS]                                          */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "formats/bundle.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void set_tensor(xr_bundle_t *b, xr_arg_t *a, const char *name, const char *type,
                       xr_dtype_t dtype, int rank, const int64_t *shape, bool transposed) {
  a->name = xr_arena_strdup(b->arena, name);
  a->type = xr_arena_strdup(b->arena, type);
  xr_value_make_tensor(b->arena, &a->value, rank);
  xr_tensor_spec_t *t = a->value.as.tensor;
  memcpy(t->shape, shape, (size_t)rank * sizeof *shape);
  xr_tensor_set_contiguous(t);
  if (transposed && rank == 2) t->strides[0] = 1, t->strides[1] = shape[0];
  t->dtype = dtype;
  t->init = XR_INIT_NORMAL;
}

static void set_int(xr_bundle_t *b, xr_arg_t *a, const char *name, int64_t v) {
  a->name = xr_arena_strdup(b->arena, name);
  a->type = xr_arena_strdup(b->arena, "int");
  a->value.kind = XR_VALUE_INT;
  a->value.as.i = v;
}

static void set_float(xr_bundle_t *b, xr_arg_t *a, const char *name, double v) {
  a->name = xr_arena_strdup(b->arena, name);
  a->type = xr_arena_strdup(b->arena, "Scalar");
  a->value.kind = XR_VALUE_FLOAT;
  a->value.as.f = v;
}

/* A mix like real serving traces: GEMMs with transposed weights, attention with many scalar
 * arguments, normalisation. Shapes vary with i so no two ops are identical. */
static xr_bundle_t *synthetic_bundle(size_t n) {
  xr_bundle_t *b;
  if (xr_bundle_create(&b) != XR_OK) return NULL;
  b->meta.tool_version = xr_arena_strdup(b->arena, "formats_bench");
  for (size_t i = 0; i < n; i++) {
    xr_op_t *op = xr_bundle_append_op(b);
    int64_t m = 1 + (int64_t)(i % 512), k = 4096, nn = 1024 + 64 * (int64_t)(i % 7);
    switch (i % 4) {
      case 0: {
        op->name = xr_arena_strdup(b->arena, "aten::mm");
        xr_op_alloc_args(b->arena, op, 2, 0);
        int64_t a[] = {m, k}, w[] = {k, nn};
        set_tensor(b, &op->args[0], "self", "Tensor", XR_DTYPE_BF16, 2, a, false);
        set_tensor(b, &op->args[1], "mat2", "Tensor", XR_DTYPE_BF16, 2, w, true);
        break;
      }
      case 1: {
        op->name = xr_arena_strdup(b->arena, "aten::addmm");
        xr_op_alloc_args(b->arena, op, 3, 2);
        int64_t bias[] = {nn}, a[] = {m, k}, w[] = {k, nn};
        set_tensor(b, &op->args[0], "self", "Tensor", XR_DTYPE_BF16, 1, bias, false);
        set_tensor(b, &op->args[1], "mat1", "Tensor", XR_DTYPE_BF16, 2, a, false);
        set_tensor(b, &op->args[2], "mat2", "Tensor", XR_DTYPE_BF16, 2, w, true);
        set_float(b, &op->kwargs[0], "beta", 1.0);
        set_float(b, &op->kwargs[1], "alpha", 1.0);
        break;
      }
      case 2: {
        op->name = xr_arena_strdup(b->arena, "_C::paged_attention_v1");
        xr_op_alloc_args(b->arena, op, 12, 0);
        int64_t q[] = {m, 32, 128}, kc[] = {4096, 8, 16, 16, 8}, vc[] = {4096, 8, 128, 16},
                bt[] = {m, 64}, sl[] = {m};
        set_tensor(b, &op->args[0], "out", "Tensor(a!)", XR_DTYPE_F16, 3, q, false);
        set_tensor(b, &op->args[1], "query", "Tensor", XR_DTYPE_F16, 3, q, false);
        set_tensor(b, &op->args[2], "key_cache", "Tensor", XR_DTYPE_F16, 5, kc, false);
        set_tensor(b, &op->args[3], "value_cache", "Tensor", XR_DTYPE_F16, 4, vc, false);
        set_int(b, &op->args[4], "num_kv_heads", 8);
        set_float(b, &op->args[5], "scale", 0.08838834764831845);
        set_tensor(b, &op->args[6], "block_tables", "Tensor", XR_DTYPE_I32, 2, bt, false);
        set_tensor(b, &op->args[7], "seq_lens", "Tensor", XR_DTYPE_I32, 1, sl, false);
        set_int(b, &op->args[8], "block_size", 16);
        set_int(b, &op->args[9], "max_seq_len", 1024);
        op->args[10].name = xr_arena_strdup(b->arena, "alibi_slopes");
        op->args[10].type = xr_arena_strdup(b->arena, "Tensor?");
        op->args[11].name = xr_arena_strdup(b->arena, "kv_cache_dtype");
        op->args[11].type = xr_arena_strdup(b->arena, "str");
        xr_value_make_string(b->arena, &op->args[11].value, "auto");
        break;
      }
      default: {
        op->name = xr_arena_strdup(b->arena, "_C::rms_norm");
        xr_op_alloc_args(b->arena, op, 4, 0);
        int64_t x[] = {m, k}, w[] = {k};
        set_tensor(b, &op->args[0], "result", "Tensor(a!)", XR_DTYPE_BF16, 2, x, false);
        set_tensor(b, &op->args[1], "input", "Tensor", XR_DTYPE_BF16, 2, x, false);
        set_tensor(b, &op->args[2], "weight", "Tensor", XR_DTYPE_BF16, 1, w, false);
        set_float(b, &op->args[3], "epsilon", 1e-6);
        break;
      }
    }
    op->count = 1 + (int64_t)(i % 3);
  }
  return b;
}

/* Best-of-`runs` time of xr_bundle_load(path). */
static double time_load(const char *path, int runs, size_t expect_ops) {
  double best = 1e30;
  for (int r = 0; r < runs; r++) {
    xr_bundle_t *b;
    double t0 = now_ms();
    xr_status_t st = xr_bundle_load(path, &b);
    double dt = now_ms() - t0;
    if (st != XR_OK) {
      fprintf(stderr, "formats_bench: %s\n", xr_last_error());
      return -1;
    }
    if (b->op_count != expect_ops) fprintf(stderr, "formats_bench: %s: wrong op count\n", path);
    xr_bundle_destroy(b);
    if (dt < best) best = dt;
  }
  return best;
}

static long file_size(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fclose(f);
  return n;
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
  const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  char json[1024], mp[1024];
  snprintf(json, sizeof json, "%s/xreplay-bench-%d.json", tmp, (int)getpid());
  snprintf(mp, sizeof mp, "%s/xreplay-bench-%d.msgpack", tmp, (int)getpid());

  xr_bundle_t *b = synthetic_bundle(n);
  if (!b || xr_bundle_save(b, json, XR_FORMAT_JSON) != XR_OK ||
      xr_bundle_save(b, mp, XR_FORMAT_MSGPACK) != XR_OK) {
    fprintf(stderr, "formats_bench: %s\n", xr_last_error());
    return 1;
  }
  xr_bundle_destroy(b);
  long json_bytes = file_size(json), mp_bytes = file_size(mp);
  const int runs = 5;
  double json_ms = time_load(json, runs, n), mp_ms = time_load(mp, runs, n);
  remove(json);
  remove(mp);
  if (json_ms < 0 || mp_ms < 0) return 1;

  printf("synthetic bundle: %zu ops (best of %d loads each: read + decode + validate)\n", n, runs);
  printf("%-12s %10s %10s %10s %12s\n", "format", "MB", "ms", "MB/s", "ops/s");
  printf("%-12s %10.1f %10.1f %10.1f %12.0f\n", "json", json_bytes / 1e6, json_ms,
         json_bytes / 1e3 / json_ms, n / json_ms * 1e3);
  printf("%-12s %10.1f %10.1f %10.1f %12.0f\n", "msgpack", mp_bytes / 1e6, mp_ms,
         mp_bytes / 1e3 / mp_ms, n / mp_ms * 1e3);
  printf("msgpack size / json size: %.1f%%\n", 100.0 * (double)mp_bytes / (double)json_bytes);
  printf("msgpack load speed-up over json: %.2fx (goal: >= 3x)\n", json_ms / mp_ms);
  return 0;
}
