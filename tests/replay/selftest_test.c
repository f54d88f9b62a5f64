/* examples/selftest.json, the GPU self-test (`replay --hal=cuda --check examples/selftest.json`
 * runs every family's GPU kernels against the CPU reference in one command), keeps what it
 * promises:
 *   - every op family of kernels/family_list.h has an op in it (found by planning each op:
 *     plan.family is the registry's answer, no list of op names here);
 *   - each family's ops cover the dtypes its cuda/hip implementation takes (the table below,
 *     each row citing the supports() it comes from), f32, f16 and bf16 for every family;
 *   - each op is one its family's GPU implementation takes, as far as the host can tell
 *     (gpu_implementations_take_every_op, below);
 *   - it replays on the cpu with --check through the engine, every op succeeded and checked.
 * No family is left out: collectives are all-reduces of a group of one, which run alone on one
 * rank (gpu.collective_alone) without a launcher or --scale-collectives, and the MoE layers
 * (vllm::moe_forward) carry their weights as tensors, so no --model-config is needed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "base/dtype.h"
#include "formats/bundle.h"
#include "hal/hal.h"
#include "kernels/kernels.h"
#include "replay/replay.h"

#define SELFTEST "examples/selftest.json"

/* Every family, from the registry's own table. */
static const char *const families[] = {
#define XR_FAMILY(name) #name,
#include "kernels/family_list.h"
#undef XR_FAMILY
};
enum { FAMILY_COUNT = sizeof families / sizeof *families };

/* What the cuda/hip implementation of each family takes, as far as the self-test must cover it:
 * short dtype names (xr_dtype_parse) and where the claim is made. */
static const struct gpu_claim {
  const char *family;
  const char *dtypes;
  const char *source;
} gpu_claims[] = {
    {"gemm", "f32 f16 bf16 f8e4m3fn f8e5m2 f8e4m3fnuz f8e5m2fnuz f4e2m1x2 f8e8m0",
     "kernels/gemm_device.c gemm_gpu_supports (gpu_dtype: f32/f16/bf16) and scaled_supports "
     "(aten::_scaled_mm: the four fp8 types, block-scaled fp8 and f4e2m1x2 with e8m0 scales)"},
    {"elementwise", "f32 f16 bf16 f8e4m3fn f8e5m2 f8e4m3fnuz f8e5m2fnuz i32 i64",
     "kernels/elementwise_device.c ew_supports (float results of any float dtype but f64; "
     "integer results from integer operands in 64-bit integers)"},
    {"argmax", "f32 f16 bf16 f8e4m3fn",
     "kernels/elementwise_device.c argmax_supports (floating dtypes but f64)"},
    {"reduce", "f32 f16 bf16 i8 i32 i64 bool",
     "kernels/reduce_device.c reduce_supports: xr_reduce_check_fast (f32/f16/bf16) and "
     "xr_reduce_int_pipeline (int8/16/32/64, uint8, bool sums, extremes, counts, scans)"},
    {"loss", "f32 f16 bf16", "kernels/loss_device.c loss_supports (f32/f16/bf16 operands)"},
    {"softmax", "f32 f16 bf16", "kernels/norm_device.c rows_supports: xr_rows_check_fast"},
    {"norm", "f32 f16 bf16", "kernels/norm_device.c rows_supports: xr_rows_check_fast"},
    {"conv", "f32 f16 bf16", "kernels/conv_device.c conv_supports (gpu.conv)"},
    {"pool", "f32 f16 bf16", "kernels/vision_device.c pool_supports (gpu.pool)"},
    {"channel_norm", "f32 f16 bf16", "kernels/vision_device.c cn_supports (gpu.channel_norm)"},
    {"rotary", "f32 f16 bf16", "kernels/norm_device.c rotary_supports: xr_rotary_check_fast"},
    {"attention", "f32 f16 bf16",
     "kernels/attention_device.c attn_supports (gpu: typed kernels: one float type)"},
    {"paged_attention", "f32 f16 bf16 f8e4m3fn",
     "kernels/attention_device.c paged_supports (gpu: float queries over float or fp8 caches)"},
    {"kv_cache", "f32 f16 bf16 f8e4m3fn",
     "kernels/attention_device.c cache_supports (gpu: float into the same type or fp8)"},
    {"unified_attention", "f32 f16 bf16 f8e4m3fn f8e4m3fnuz",
     "kernels/attention_device.c xr_ua_gpu_impl: the kv_cache and paged_attention "
     "kernels (fp8 caches, fp8 queries and outputs)"},
    {"quant", "f32 f16 bf16 f8e4m3fn f8e4m3fnuz",
     "kernels/quant_device.c (no supports(): what kernels/quant.c plans, f32/f16/bf16 into "
     "e4m3fn or e4m3fnuz)"},
    {"moe", "f32 f16 bf16 i32 i64 f4e2m1x2 f8e8m0 f8e4m3fn",
     "kernels/moe_device.c moe_supports (gpu: dtype_code: f32/f16/bf16 activations; int32/int64 "
     "ids; moe_forward's mxfp4 and fp8 expert weights)"},
    {"routing", "f32 f16 bf16 i16 i32 i64 u32",
     "kernels/routing_device.c (no supports(): TopK's f32/f16/bf16 logits, int16 ids and uint32 "
     "bitmatrix; SortTokens' float weights and int16/int32/int64 ids)"},
    {"sync", "f32 f16 bf16 i64 bool",
     "kernels/host_sync.c gpu.read_scalar (no supports(): any dtype)"},
    {"scatter", "f32 f16 bf16 i64 f8e4m3fn",
     "kernels/scatter.c xr_sc_device_supports (gpu.scatter: raw moves of any dtype, reductions "
     "in float for every float dtype but f64, in int64 for integers)"},
    {"collective", "f32 f16 bf16",
     "kernels/collective.c gpu.collective_alone / gpu.nccl (no dtype limit)"},
};
enum { CLAIM_COUNT = sizeof gpu_claims / sizeof *gpu_claims };

static xr_bundle_t *load_selftest(void) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_load(SELFTEST, &b), XR_OK, "%s", xr_last_error());
  return b;
}

static int family_index(const char *name) {
  for (int f = 0; f < FAMILY_COUNT; f++)
    if (!strcmp(families[f], name)) return f;
  return -1;
}

/* Per family: the ops the bundle has of it, the dtypes of their tensors (inputs, the tensors
 * the family completes the op with, and returns), and the family itself. */
typedef struct coverage {
  size_t ops[FAMILY_COUNT];
  bool dtypes[FAMILY_COUNT][XR_DTYPE_COUNT];
  const xr_op_family_t *family[FAMILY_COUNT];
} coverage_t;

static void cover(const xr_bundle_t *b, coverage_t *c) {
  memset(c, 0, sizeof *c);
  for (size_t i = 0; i < b->op_count; i++) {
    xr_op_plan_t plan;
    cr_assert_eq(xr_kernel_plan(&b->ops[i], &plan), XR_OK, "ops[%zu] %s: %s", i, b->ops[i].name,
                 xr_last_error());
    int f = family_index(plan.family->name);
    cr_assert_geq(f, 0, "ops[%zu] %s: family %s is not in kernels/family_list.h", i, b->ops[i].name,
                  plan.family->name);
    c->ops[f]++;
    c->family[f] = plan.family;
    for (size_t k = 0; k < plan.input_count; k++) c->dtypes[f][plan.inputs[k]->dtype] = true;
    for (size_t k = 0; k < plan.return_count; k++) c->dtypes[f][plan.returns[k].dtype] = true;
    xr_kernel_plan_free(&plan);
  }
}

/* Appends `item` to a space-separated list. */
static void append(char *list, size_t size, const char *item) {
  size_t used = strlen(list);
  snprintf(list + used, size - used, "%s%s", used ? " " : "", item);
}

/* The GPU implementation of a family: one serving cuda and hip, or either alone. */
static bool has_gpu_impl(const xr_op_family_t *family) {
  for (const xr_kernel_impl_t *const *i = family->impls; *i; i++)
    if (!strcmp((*i)->driver, "gpu") || !strcmp((*i)->driver, "cuda") ||
        !strcmp((*i)->driver, "hip"))
      return true;
  return false;
}

Test(selftest, has_an_op_of_every_family) {
  xr_bundle_t *b = load_selftest();
  static coverage_t c;
  cover(b, &c);
  char missing[1024] = "";
  for (int f = 0; f < FAMILY_COUNT; f++)
    if (!c.ops[f]) append(missing, sizeof missing, families[f]);
  cr_assert_str_empty(missing, SELFTEST " has no op of the families %s", missing);
  xr_bundle_destroy(b);
}

Test(selftest, the_claims_table_is_every_family_with_a_gpu_implementation) {
  xr_bundle_t *b = load_selftest();
  static coverage_t c;
  cover(b, &c);
  for (int k = 0; k < CLAIM_COUNT; k++)
    cr_assert_geq(family_index(gpu_claims[k].family), 0, "gpu_claims: no family %s",
                  gpu_claims[k].family);
  for (int f = 0; f < FAMILY_COUNT; f++) {
    if (!c.family[f]) continue; /* has_an_op_of_every_family says so */
    bool claimed = false;
    for (int k = 0; k < CLAIM_COUNT; k++) claimed |= !strcmp(gpu_claims[k].family, families[f]);
    cr_assert_eq(has_gpu_impl(c.family[f]), claimed,
                 "family %s: %s GPU implementation, %s row in gpu_claims", families[f],
                 has_gpu_impl(c.family[f]) ? "a" : "no", claimed ? "a" : "no");
  }
  xr_bundle_destroy(b);
}

Test(selftest, covers_the_dtypes_each_gpu_implementation_takes) {
  xr_bundle_t *b = load_selftest();
  static coverage_t c;
  cover(b, &c);
  static char missing[8192];
  missing[0] = '\0';
  for (int k = 0; k < CLAIM_COUNT; k++) {
    int f = family_index(gpu_claims[k].family);
    cr_assert_geq(f, 0);
    bool claimed[XR_DTYPE_COUNT] = {false};
    char list[256], lacking[256] = "";
    snprintf(list, sizeof list, "%s", gpu_claims[k].dtypes);
    for (char *save, *name = strtok_r(list, " ", &save); name; name = strtok_r(NULL, " ", &save)) {
      xr_dtype_t d = xr_dtype_parse(name);
      cr_assert_neq(d, XR_DTYPE_INVALID, "gpu_claims %s: unknown dtype %s", gpu_claims[k].family,
                    name);
      claimed[d] = true;
      if (!c.dtypes[f][d]) append(lacking, sizeof lacking, name);
    }
    cr_assert(claimed[XR_DTYPE_F32] && claimed[XR_DTYPE_F16] && claimed[XR_DTYPE_BF16],
              "gpu_claims %s: every GPU implementation takes f32, f16 and bf16",
              gpu_claims[k].family);
    if (lacking[0]) {
      size_t used = strlen(missing);
      snprintf(missing + used, sizeof missing - used, "\n  %s: no %s tensor (%s)",
               gpu_claims[k].family, lacking, gpu_claims[k].source);
    }
  }
  cr_assert_str_empty(missing, SELFTEST " lacks dtypes the GPU implementations take:%s", missing);
  xr_bundle_destroy(b);
}

/* Would each op run on a GPU? There is none here: each op's plan is put to its family's "gpu"
 * implementations' supports() (the one source serving cuda and hip) on the host, the cpu device
 * standing in for the GPU. Those read the problem, not the device, but for the attention
 * kernels' warp width (kernels/attention_device.c warp_width: 32 to 256 lanes, where the cpu
 * reports its SIMD width), which they check after every dtype, layout and size check but the
 * grid's: that refusal alone is accepted. A collective of a group of one is
 * gpu.collective_alone's; gpu.nccl declines it, as it would on a GPU. */
Test(selftest, gpu_implementations_take_every_op) {
  xr_bundle_t *b = load_selftest();
  xr_hal_device_t *stand_in;
  cr_assert_eq(xr_hal_device_create("cpu", &stand_in), XR_OK, "%s", xr_last_error());
  static char refused[8192];
  refused[0] = '\0';
  for (size_t i = 0; i < b->op_count; i++) {
    xr_op_plan_t plan;
    cr_assert_eq(xr_kernel_plan(&b->ops[i], &plan), XR_OK, "ops[%zu] %s: %s", i, b->ops[i].name,
                 xr_last_error());
    bool taken = false, warp_only = true;
    char why[1024] = "";
    for (const xr_kernel_impl_t *const *impl = plan.family->impls; *impl; impl++) {
      if (strcmp((*impl)->driver, "gpu")) continue;
      if (!(*impl)->supports || (*impl)->supports(&plan, stand_in) == XR_OK) {
        taken = true;
        break;
      }
      warp_only &= strstr(xr_last_error(), ": a warp of ") != NULL;
      size_t used = strlen(why);
      snprintf(why + used, sizeof why - used, "%s%s", used ? "; " : "", xr_last_error());
    }
    if (!taken && (!why[0] || !warp_only)) {
      size_t used = strlen(refused);
      snprintf(refused + used, sizeof refused - used, "\n  ops[%zu] %s: %s", i, b->ops[i].name,
               why[0] ? why : "no gpu implementation in its family");
    }
    xr_kernel_plan_free(&plan);
  }
  xr_hal_device_destroy(stand_in);
  cr_assert_str_empty(refused, "ops no GPU implementation takes:%s", refused);
  xr_bundle_destroy(b);
}

/* ------------------------------------------------------------------------------------------ */
/* replayed on the cpu with --check                                                            */

typedef struct run {
  size_t count, bad;
  char why[4096];
} run_t;

static void observe(void *context, const xr_op_result_t *r, size_t position, size_t count) {
  (void)count;
  run_t *s = context;
  s->count++;
  const char *problem = NULL;
  if (r->outcome != XR_OP_SUCCEEDED)
    problem = xr_op_outcome_name(r->outcome);
  else if (!r->checked)
    problem = "not checked";
  else if (!r->check_passed)
    problem = "check failed";
  if (!problem) return;
  s->bad++;
  size_t used = strlen(s->why);
  snprintf(s->why + used, sizeof s->why - used, "\n  ops[%zu] %s (%s): %s %s", position,
           r->op ? r->op->name : "?", r->kernel[0] ? r->kernel : "no kernel", problem, r->message);
}

Test(selftest, replays_on_the_cpu_every_op_checked, .timeout = 120) {
  xr_bundle_t *b = load_selftest();
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = "cpu";
  o.check = true;
  o.warmup = 0;
  o.iters = 1;
  static run_t run;
  memset(&run, 0, sizeof run);
  xr_replay_observer_t observer = {.result = observe, .context = &run};
  xr_replay_summary_t summary;
  cr_assert_eq(xr_replay_run(b, &o, &observer, &summary), XR_OK, "%s", xr_last_error());
  cr_assert_eq(run.count, b->op_count);
  cr_assert_eq(run.bad, 0, "%zu of %zu ops did not succeed with a passing check:%s", run.bad,
               run.count, run.why);
  cr_assert_eq(summary.succeeded, b->op_count);
  xr_bundle_destroy(b);
}
