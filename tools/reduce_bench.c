/* reduce_bench: the reduce family's ops (reductions, scans, sorts) on tensors of --mib MiB
 * (default 64), through the replay engine (what a user's replay measures), next to the device's
 * own device-to-device copy of as many bytes, measured just before each op.
 *
 *   bazel run -c opt //tools:reduce_bench -- [--driver cpu|opencl] [--mib N] [--only SUBSTRING]
 *
 * GB/s counts the bytes each op must move (its plan's reads + writes: a last-dim sum reads the
 * tensor once and writes one value per row); the copy's figure counts its read and its write
 * (2 x payload), so "of copy" compares memory traffic with memory traffic, best-of figures on
 * both sides (as tools/norm_bench.c). The target for a last-dim sum of f32 or bf16 is at least
 * half the copy's traffic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/replay.h"
#include "tools/copy_ratio_bench.h"

/* An op over self [rows, cols] of `dtype` (`size` bytes): TraceLens IR with %1$lld for rows and
 * %2$lld for cols, and the arguments after self. */
typedef struct bench_op {
  const char *label, *op, *dtype;
  int size;
  long long cols; /* 0: a 1-D tensor of the whole size */
  const char *args;
} bench_op_t;

#define DIM(d) "{\"arg_name\": \"dim\", \"arg_type\": \"int[1]?\", \"value\": " d "}, " \
               "{\"arg_name\": \"keepdim\", \"arg_type\": \"bool\", \"value\": false}"

static const bench_op_t ops[] = {
    {"sum f32 [R, 4096] dim -1", "aten::sum", "float", 4, 4096, DIM("[-1]")},
    {"sum bf16 [R, 4096] dim -1", "aten::sum", "c10::BFloat16", 2, 4096, DIM("[-1]")},
    {"sum f32 [N] (every element)", "aten::sum", "float", 4, 0, DIM("null")},
    {"sum bf16 [R, 4096] dim 0", "aten::sum", "c10::BFloat16", 2, 4096, DIM("[0]")},
    {"mean bf16 [R, 4096] dim -1", "aten::mean", "c10::BFloat16", 2, 4096, DIM("[-1]")},
    {"amax f32 [R, 4096] dim -1", "aten::amax", "float", 4, 4096,
     "{\"arg_name\": \"dim\", \"arg_type\": \"int[1]\", \"value\": [-1]}"},
    {"max.dim bf16 [R, 4096] dim -1", "aten::max", "c10::BFloat16", 2, 4096,
     "{\"arg_name\": \"dim\", \"arg_type\": \"int\", \"value\": -1}"},
    {"var f32 [R, 4096] dim -1", "aten::var", "float", 4, 4096,
     "{\"arg_name\": \"dim\", \"arg_type\": \"int[1]?\", \"value\": [-1]}"},
    {"logsumexp f32 [R, 4096] dim -1", "aten::logsumexp", "float", 4, 4096,
     "{\"arg_name\": \"dim\", \"arg_type\": \"int[1]\", \"value\": [-1]}"},
    {"cumsum f32 [R, 4096] dim -1", "aten::cumsum", "float", 4, 4096,
     "{\"arg_name\": \"dim\", \"arg_type\": \"int\", \"value\": -1}"},
    {"topk bf16 [R, 151936] k 50", "aten::topk", "c10::BFloat16", 2, 151936,
     "{\"arg_name\": \"k\", \"arg_type\": \"SymInt\", \"value\": 50}"},
    {"sort f32 [R, 4096] dim -1", "aten::sort", "float", 4, 4096,
     "{\"arg_name\": \"dim\", \"arg_type\": \"int\", \"value\": -1}"},
};

static int bench_device(const char *device, long long mib, const char *only) {
  xr_hal_device_t *probe;
  if (xr_hal_device_create(device, &probe) != XR_OK) {
    printf("%s: unavailable: %s\n\n", device, xr_last_error());
    return 0;
  }
  xr_hal_device_properties_t props;
  xr_hal_device_properties(probe, &props);
  xr_hal_device_destroy(probe);
  const long long bytes = mib << 20;
  printf("%s (%s): inputs of %lld MiB, a device-to-device copy of as much just before each op\n",
         device, props.name, mib);
  printf("  %-34s %-16s %10s %10s %9s %9s %8s\n", "op", "kernel", "best us", "median us", "GB/s",
         "copy GB/s", "of copy");
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
    const bench_op_t *b = &ops[i];
    if (only && !strstr(b->label, only)) continue;
    long long numel = bytes / b->size, cols = b->cols, rows = cols ? numel / cols : numel;
    if (rows < 1) rows = 1;
    char shape[64], json[2048];
    if (cols) snprintf(shape, sizeof shape, "[%lld, %lld]", rows, cols);
    else snprintf(shape, sizeof shape, "[%lld]", rows);
    snprintf(json, sizeof json,
             "{\"op_name\": \"%s\", \"replay_ir\": {\"list_pos_args\": [{\"arg_name\": \"self\", "
             "\"arg_type\": \"Tensor\", \"value\": {\"shape\": %s, \"dtype\": \"%s\", \"init\": "
             "\"uniform\"}}, %s]}}",
             b->op, shape, b->dtype, b->args);
    if (xr_bench_copy_ratio_row("reduce_bench", device, b->label, 34, json, (size_t)bytes))
      return 1;
  }
  printf("\n");
  return 0;
}

int main(int argc, char **argv) {
  const char *only = NULL, *op_filter = NULL;
  long long mib = 64;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--driver") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--mib") && i + 1 < argc) mib = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) op_filter = argv[++i];
    else {
      fprintf(stderr, "usage: reduce_bench [--driver cpu|opencl] [--mib N] [--only SUBSTRING]\n");
      return 2;
    }
  }
  if (mib < 1) mib = 1;
  const char *devices[] = {"cpu", "opencl"};
  for (size_t d = 0; d < 2; d++)
    if (!only || !strcmp(only, devices[d]))
      if (bench_device(devices[d], mib, op_filter)) return 1;
  return 0;
}
