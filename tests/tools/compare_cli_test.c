/* The cross-vendor case the tool is for: the same BERT model traced on an MI300X and on an H100
 * (tests/data/fixtures/traces), each extracted and replayed here on cpu and opencl, then compared.
 * Pairs must compute the same thing (no two shapes side by side), ops left alone are listed, and
 * each side's time by category stands beside its trace's. Op categories are checked here too. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "replay/categories.h"
#include "tests/tools/cli_util.h"

#define TRACES "tests/data/fixtures/traces/"

/* The two bundles, extracted once per process. */
static const char *bundle(const char *vendor) {
  static char paths[2][1024];
  int k = !strcmp(vendor, "h100");
  if (!paths[k][0]) {
    snprintf(paths[k], sizeof paths[k], "%s", scratch(k ? "h100.msgpack" : "mi300.msgpack"));
    char args[4096];
    snprintf(args, sizeof args, "extract " TRACES "%s_bert_small.json.gz -o %s", vendor,
             paths[k]);
    cr_assert_eq(replay(args), 0, "%s", err_text);
  }
  return paths[k];
}

/* Every pair row of `compare`'s table: its two op positions and both args lines, looked up in
 * the reports (the table prints names; the reports hold the args). */
static void assert_pairs_compute_the_same(const char *a_path, const char *b_path, size_t *pairs) {
  cJSON *a = read_json(a_path), *b = read_json(b_path);
  const cJSON *a_ops = cJSON_GetObjectItem(a, "ops"), *b_ops = cJSON_GetObjectItem(b, "ops");
  *pairs = 0;
  for (const char *line = out_text; (line = strchr(line, '\n')); line++) {
    long long ia, ib;
    char name[256];
    if (sscanf(line + 1, " %lld/%lld %255s", &ia, &ib, name) != 3) continue;
    const cJSON *oa = cJSON_GetArrayItem(a_ops, (int)ia), *ob = cJSON_GetArrayItem(b_ops, (int)ib);
    cr_assert(oa && ob, "row %lld/%lld is not in the reports", ia, ib);
    cr_assert_str_eq(json_str(oa, "name"), name);
    cr_assert_str_eq(json_str(ob, "name"), name);
    cr_assert_str_eq(json_str(oa, "args"), json_str(ob, "args"), "pair %lld/%lld %s", ia, ib,
                     name);
    (*pairs)++;
  }
  cJSON_Delete(a);
  cJSON_Delete(b);
}

static void compare_on(const char *hal) {
  char args[4096], reports[2][1100];
  const char *vendors[2] = {"mi300", "h100"};
  for (int k = 0; k < 2; k++) {
    char name[64];
    snprintf(name, sizeof name, "%s.%s.json", vendors[k], hal);
    snprintf(reports[k], sizeof reports[k], "%s", scratch(name));
    snprintf(args, sizeof args, "--hal=%s --iters=10 --warmup=1 --report=%s %s", hal, reports[k],
             bundle(vendors[k]));
    int rc = replay(args);
    if (rc == 3) cr_skip_test("%s is unavailable: %s", hal, err_text);
    cr_assert_eq(rc, 0, "%s", err_text);
    /* The console's own table of time by category, beside the trace's. */
    cr_assert(strstr(out_text, "time by category") && strstr(out_text, "  GEMM ") &&
                  strstr(out_text, "  attention "),
              "%s", out_text);
  }
  snprintf(args, sizeof args, "compare %s %s", reports[0], reports[1]);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "different bundles: ops paired by signature"), "%s", out_text);
  size_t pairs;
  assert_pairs_compute_the_same(reports[0], reports[1], &pairs);
  /* Both traces hold the same 16 ops (in another order): every one pairs. */
  cr_assert_eq(pairs, 16, "%zu pairs in\n%s", pairs, out_text);
  cr_assert_null(strstr(out_text, "unmatched in"), "%s", out_text);
  cr_assert(strstr(out_text, "over the 16 matched ops timed on both"), "%s", out_text);
  cr_assert(strstr(out_text, "verdicts at a 10% threshold: "), "%s", out_text);
  cr_assert(strstr(out_text, "time by category") && strstr(out_text, "  GEMM "), "%s", out_text);
  /* The report's summary carries the same totals: every op in some category, the projected sum
   * equal to the categories'. */
  cJSON *r = read_json(reports[0]);
  const cJSON *summary = cJSON_GetObjectItem(r, "summary");
  const cJSON *cat, *projected = cJSON_GetObjectItem(summary, "projected");
  double ops = 0, replay_us = 0;
  cJSON_ArrayForEach(cat, cJSON_GetObjectItem(summary, "categories")) {
    ops += json_number(cat, "ops");
    replay_us += json_number(cat, "replay_us");
  }
  cr_assert_eq(ops, 16);
  cr_assert_eq(json_number(projected, "ops"), 16);
  cr_assert_float_eq(json_number(projected, "replay_us"), replay_us, 1e-6 * replay_us);
  cr_assert_float_eq(json_number(projected, "trace_us"), json_number(summary, "trace_total_us"),
                     1e-3, "the categories hold the whole trace's time");
  cJSON_Delete(r);
}

Test(compare_cli, bert_across_vendors_on_cpu) { compare_on("cpu"); }
Test(compare_cli, bert_across_vendors_on_opencl) { compare_on("opencl"); }

/* Reports of different bundles paired by position put a 512x512 addmm beside a 512x30522 one;
 * here an op whose args differ stays unmatched, with its share of its side's time. */
Test(compare_cli, an_op_without_a_partner_is_listed_with_its_share) {
  const char *a = scratch("a.json"), *b = scratch("b.json");
  write_text(a,
             "{\"xreplay_report\": 2, \"bundle_hash\": \"00000000000000aa\", \"hal\": \"cpu\", "
             "\"ops\": [{\"index\": 0, \"name\": \"aten::addmm\", \"args\": \"mat2=f32[512,512]\", "
             "\"count\": 1, \"outcome\": \"ok\", \"median_us\": 30}, {\"index\": 1, \"name\": "
             "\"aten::addmm\", \"args\": \"mat2=f32[512,30522]\", \"count\": 1, \"outcome\": "
             "\"ok\", \"median_us\": 70}]}");
  write_text(b,
             "{\"xreplay_report\": 2, \"bundle_hash\": \"00000000000000bb\", \"hal\": \"cpu\", "
             "\"ops\": [{\"index\": 0, \"name\": \"aten::addmm\", \"args\": \"mat2=f32[512,512]\", "
             "\"count\": 1, \"outcome\": \"ok\", \"median_us\": 15}]}");
  char args[4096];
  snprintf(args, sizeof args, "compare %s %s", a, b);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "over the 1 matched ops timed on both: 2.000x"), "%s", out_text);
  cr_assert(strstr(out_text, "unmatched in A: 1 ops, 70.0% of A's timed time (count x median): "
                             "#1 aten::addmm mat2=f32[512,30522]"),
            "%s", out_text);
  snprintf(args, sizeof args, "compare %s %s --threshold=0", a, b);
  cr_assert_eq(replay(args), 2);
  cr_assert(strstr(err_text, "--threshold=0: not a percentage above 0"), "%s", err_text);
}

Test(categories, by_family_then_by_name) {
  static const struct {
    const char *family, *name;
    xr_category_t want;
  } cases[] = {
      {"gemm", "aten::addmm", XR_CATEGORY_GEMM},
      {"attention", "aten::_flash_attention_forward", XR_CATEGORY_ATTENTION},
      {"kv_cache", "_C_cache_ops::reshape_and_cache_flash", XR_CATEGORY_ATTENTION},
      {"moe", "vllm::outplace_fused_experts", XR_CATEGORY_MOE},
      {"norm", "aten::native_layer_norm", XR_CATEGORY_NORMALIZATION},
      {"softmax", "aten::_softmax", XR_CATEGORY_NORMALIZATION},
      {"elementwise", "aten::gelu", XR_CATEGORY_ELEMENTWISE},
      {"reduce", "aten::sum.dim_IntList", XR_CATEGORY_ELEMENTWISE},
      {"elementwise", "aten::copy_", XR_CATEGORY_COPY},
      {"elementwise", "aten::index_select", XR_CATEGORY_COPY},
      {"scatter", "aten::scatter_add_", XR_CATEGORY_COPY},
      {"conv", "aten::convolution", XR_CATEGORY_CONV_POOL},
      {"collective", "c10d::allreduce_", XR_CATEGORY_COLLECTIVE},
      {"sync", "aten::_local_scalar_dense", XR_CATEGORY_OTHER},
      /* Unsupported here, no family: by name. */
      {"", "sglang_profiler::attention_paged_attention_ragged", XR_CATEGORY_ATTENTION},
      {"", "TopK", XR_CATEGORY_OTHER},
      {NULL, "_moe_C::moe_sum", XR_CATEGORY_MOE},
      {"", "nccl:all_reduce", XR_CATEGORY_COLLECTIVE},
      {"", "aten::_scaled_mm", XR_CATEGORY_GEMM},
      {"", "aten::cat", XR_CATEGORY_COPY},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    cr_assert_eq(xr_op_category(cases[i].family, cases[i].name), cases[i].want, "%s: %s, not %s",
                 cases[i].name, xr_category_name(xr_op_category(cases[i].family, cases[i].name)),
                 xr_category_name(cases[i].want));
  /* Sums: count x median over the timed, count x recorded time over those with one. */
  xr_category_total_t t[XR_CATEGORY_COUNT] = {{0}};
  xr_category_add(t, "gemm", "aten::mm", 3, 10, 2);
  xr_category_add(t, "gemm", "aten::mm", 0, -1, 5); /* not timed; count 0 counts once */
  xr_category_add(t, "gemm", "aten::mm", 2, 4, -1); /* no recorded time */
  cr_assert_eq(t[XR_CATEGORY_GEMM].ops, 3);
  cr_assert_eq(t[XR_CATEGORY_GEMM].timed, 2);
  cr_assert_float_eq(t[XR_CATEGORY_GEMM].replay_us, 38, 1e-12);
  cr_assert_float_eq(t[XR_CATEGORY_GEMM].trace_us, 11, 1e-12);
  cr_assert_float_eq(t[XR_CATEGORY_GEMM].trace_timed_us, 6, 1e-12);
}

/* Which kernel ran: the trace's kernels (the MI300X's Tensile GEMM, `Cijk_..._MT16x16x128...`)
 * beside the implementation that ran here and what a vendor library chose in it, in inspect,
 * the report, the CSV and the page. */
Test(kernels, the_traces_kernels_beside_the_one_that_ran) {
  const char *b = bundle("mi300");
  char args[4096];
  snprintf(args, sizeof args, "inspect %s", b);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "recorded kernel Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x128"),
            "%s", out_text);
  snprintf(args, sizeof args, "inspect --json %s", b);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cJSON *j = cJSON_Parse(out_text);
  cr_assert_not_null(j);
  const cJSON *kernels = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "ops"), 1),
                                             "trace_kernels");
  cr_assert(cJSON_GetArraySize(kernels) >= 1);
  cr_assert(strstr(json_str(cJSON_GetArrayItem(kernels, 0), "name"), "Cijk_"));
  cJSON_Delete(j);

  const char *report = scratch("kernels.json"), *csv = scratch("kernels.csv");
  snprintf(args, sizeof args, "--hal=cpu --iters=2 --op-filter=addmm --report=%s %s", report, b);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cJSON *r = read_json(report);
  const cJSON *op;
  size_t onednn = 0;
  cJSON_ArrayForEach(op, cJSON_GetObjectItem(r, "ops")) {
    const cJSON *k = cJSON_GetArrayItem(cJSON_GetObjectItem(op, "trace_kernels"), 0);
    cr_assert(strstr(json_str(k, "name"), "Cijk_"), "op %g", json_number(op, "index"));
    cr_assert_gt(json_number(k, "count"), 0);
    if (strcmp(json_str(op, "kernel"), "cpu.onednn_matmul")) continue;
    /* oneDNN's own name for the implementation it picked. */
    cr_assert(!strncmp(json_str(op, "algorithm"), "oneDNN ", 7), "%s", json_str(op, "algorithm"));
    onednn++;
  }
  cJSON_Delete(r);
  if (!onednn) cr_log_info("oneDNN took no addmm here: no algorithm to check");
  snprintf(args, sizeof args, "--hal=cpu --iters=2 --op-filter=addmm --report=%s %s", csv, b);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  char text[1 << 16];
  slurp(csv, text, sizeof text);
  cr_assert(strstr(text, ",algorithm,trace_kernels,") && strstr(text, "Cijk_"), "%.400s", text);
}
