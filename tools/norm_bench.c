/* norm_bench: softmax, layer norm, RMS norm, fused add + RMS norm and rotary embedding on large
 * tensors, through the replay engine (what a user's replay measures), next to the device's own
 * device-to-device copy measured in the same run.
 *
 *   bazel run -c opt //tools:norm_bench -- [--driver cpu|opencl] [--rows N] [--only SUBSTRING]
 *
 * GB/s counts the bytes each op must move (its plan's reads + writes); the copy's figure counts
 * both its read and its write (2 x payload), so "of copy" compares memory traffic with memory
 * traffic. Both sides are best-of figures (the op: the engine's fastest event-timed iteration
 * after a warm-up; the copy: its fastest of 7), so that load from other processes on the
 * machine, which only ever adds time, hurts neither more than the other. The copy is measured
 * again right before each op, so that load that drifts during the run (a shared CI box)
 * compares each op with the bandwidth it had at that moment. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/replay.h"
#include "tools/copy_ratio_bench.h"

#define TENSOR(name, type, dtype, shape) \
  "{\"arg_name\": \"" name "\", \"arg_type\": \"" type "\", \"value\": {\"shape\": " shape \
  ", \"dtype\": \"" dtype "\", \"init\": \"uniform\"}}"

/* The benchmarked ops, as TraceLens IR with %lld for the row count (tokens). */
typedef struct bench_op {
  const char *label;
  const char *ir;
} bench_op_t;

static const bench_op_t ops[] = {
    {"_C::rms_norm bf16 [R, 4096]",
     "{\"op_name\": \"_C::rms_norm\", \"replay_ir\": {\"list_pos_args\": ["
     TENSOR("result", "Tensor(a!)", "c10::BFloat16", "[%1$lld, 4096]") ", "
     TENSOR("input", "Tensor", "c10::BFloat16", "[%1$lld, 4096]") ", "
     TENSOR("weight", "Tensor", "c10::BFloat16", "[4096]") ", "
     "{\"arg_name\": \"epsilon\", \"arg_type\": \"float\", \"value\": 1e-06}]}}"},
    {"_C::rms_norm fp32 [R, 4096]",
     "{\"op_name\": \"_C::rms_norm\", \"replay_ir\": {\"list_pos_args\": ["
     TENSOR("result", "Tensor(a!)", "float", "[%1$lld, 4096]") ", "
     TENSOR("input", "Tensor", "float", "[%1$lld, 4096]") ", "
     TENSOR("weight", "Tensor", "float", "[4096]") ", "
     "{\"arg_name\": \"epsilon\", \"arg_type\": \"float\", \"value\": 1e-06}]}}"},
    {"_C::fused_add_rms_norm bf16 [R, 4096]",
     "{\"op_name\": \"_C::fused_add_rms_norm\", \"replay_ir\": {\"list_pos_args\": ["
     TENSOR("input", "Tensor(a!)", "c10::BFloat16", "[%1$lld, 4096]") ", "
     TENSOR("residual", "Tensor(b!)", "c10::BFloat16", "[%1$lld, 4096]") ", "
     TENSOR("weight", "Tensor", "c10::BFloat16", "[4096]") ", "
     "{\"arg_name\": \"epsilon\", \"arg_type\": \"float\", \"value\": 1e-06}]}}"},
    {"aten::native_layer_norm bf16 [R, 4096]",
     "{\"op_name\": \"aten::native_layer_norm\", \"replay_ir\": {\"list_pos_args\": ["
     TENSOR("input", "Tensor", "c10::BFloat16", "[%1$lld, 4096]") ", "
     "{\"arg_name\": \"normalized_shape\", \"arg_type\": \"SymInt[]\", \"value\": [4096]}, "
     TENSOR("weight", "Tensor?", "c10::BFloat16", "[4096]") ", "
     TENSOR("bias", "Tensor?", "c10::BFloat16", "[4096]") ", "
     "{\"arg_name\": \"eps\", \"arg_type\": \"float\", \"value\": 1e-05}]}}"},
    {"aten::_softmax fp32 [R, 4096] dim -1",
     "{\"op_name\": \"aten::_softmax\", \"replay_ir\": {\"list_pos_args\": ["
     TENSOR("self", "Tensor", "float", "[%1$lld, 4096]") ", "
     "{\"arg_name\": \"dim\", \"arg_type\": \"int\", \"value\": -1}, "
     "{\"arg_name\": \"half_to_float\", \"arg_type\": \"bool\", \"value\": false}]}}"},
    {"aten::_softmax bf16 [R, 4096] dim -1",
     "{\"op_name\": \"aten::_softmax\", \"replay_ir\": {\"list_pos_args\": ["
     TENSOR("self", "Tensor", "c10::BFloat16", "[%1$lld, 4096]") ", "
     "{\"arg_name\": \"dim\", \"arg_type\": \"int\", \"value\": -1}, "
     "{\"arg_name\": \"half_to_float\", \"arg_type\": \"bool\", \"value\": false}]}}"},
    {"_C::rotary_embedding bf16 neox T=R, 32/8 heads x 128",
     "{\"op_name\": \"_C::rotary_embedding\", \"replay_ir\": {\"list_pos_args\": ["
     "{\"arg_name\": \"positions\", \"arg_type\": \"Tensor\", \"value\": {\"shape\": [%1$lld], "
     "\"dtype\": \"long int\"}}, "
     TENSOR("query", "Tensor(a!)", "c10::BFloat16", "[%1$lld, 4096]") ", "
     TENSOR("key", "Tensor(b!)", "c10::BFloat16", "[%1$lld, 1024]") ", "
     "{\"arg_name\": \"head_size\", \"arg_type\": \"int\", \"value\": 128}, "
     TENSOR("cos_sin_cache", "Tensor", "c10::BFloat16", "[4096, 128]") ", "
     "{\"arg_name\": \"is_neox\", \"arg_type\": \"bool\", \"value\": true}]}}"},
};

static int bench_device(const char *device, long long rows, const char *only) {
  xr_hal_device_t *probe;
  if (xr_hal_device_create(device, &probe) != XR_OK) {
    printf("%s: unavailable: %s\n\n", device, xr_last_error());
    return 0;
  }
  xr_hal_device_properties_t props;
  xr_hal_device_properties(probe, &props);
  xr_hal_device_destroy(probe);
  /* The copy moves as much as the largest tensor here: rows x 4096 fp32. */
  printf("%s (%s): device-to-device copy of %lld MiB (read + write) just before each op\n",
         device, props.name, rows * 4096 * 4 >> 20);
  printf("  %-52s %-16s %10s %10s %9s %9s %8s\n", "op", "kernel", "best us", "median us", "GB/s",
         "copy GB/s", "of copy");
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
    if (only && !strstr(ops[i].label, only)) continue;
    char json[4096];
    snprintf(json, sizeof json, ops[i].ir, rows);
    if (xr_bench_copy_ratio_row("norm_bench", device, ops[i].label, 52, json,
                                (size_t)rows * 4096 * 4))
      return 1;
  }
  printf("\n");
  return 0;
}

int main(int argc, char **argv) {
  const char *only = NULL, *op_filter = NULL;
  long long rows = 8192;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--driver") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--rows") && i + 1 < argc) rows = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) op_filter = argv[++i];
    else {
      fprintf(stderr, "usage: norm_bench [--driver cpu|opencl] [--rows N] [--only SUBSTRING]\n");
      return 2;
    }
  }
  if (rows < 1) rows = 1;
  const char *devices[] = {"cpu", "opencl"};
  for (size_t d = 0; d < 2; d++)
    if (!only || !strcmp(only, devices[d]))
      if (bench_device(devices[d], rows, op_filter)) return 1;
  return 0;
}
