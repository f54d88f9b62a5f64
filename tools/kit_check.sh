#!/usr/bin/env bash
# check.sh: the GPU kit's check (tools/gpu_kit.sh builds the kit; docs/gpu.md says how to use
# it). Needs bash, coreutils, grep, sed, awk, tar and the vendor driver; nothing of Bazel or
# Debian's development packages.
#   ./check.sh cuda|hip|cpu RESULT_DIR [--part=1|2] [--budget=SECONDS]
# Steps, each time-boxed so that a hang costs only that step:
#   part 1  machine   the machine (GPU, driver, where the vendor libraries are)
#           devices   bin/replay devices: the drivers and the library files each took
#           warm      bin/gpu_warm: every kernel source compiled for the device into the
#                     check's kernel cache, so that the suites' parallel cases do not all
#                     compile the same source at once (each source's compile time in its log)
#           suites    the driver's CTS and every gpu suite: passed / failed / skipped each
#           examples  bin/replay --check of every shipped example and of the self-test bundle
#                     (every op family, every dtype it claims) against the CPU reference
#   part 2  gemm      bin/gpu_gemm_bench: the vendor Lt library next to our tiled kernel
#           sweep     examples/gemm_sweep.json replayed (bf16, fp16, fp8 GEMMs at 4096, 8192)
#           copy      bin/hal_bench: copy bandwidth and event overhead
#           launch    the example bundle with --launch=eager and --launch=graph, side by side
#           framework the same bundles (and the LLM example) timed by PyTorch through
#                     bin/torch_baseline.py where `python3 -c "import torch"` works, each set
#                     beside the replay with `replay compare`
#           compile   the kernel compile test (NVRTC / hiprtc for sm_80, sm_90, gfx90a, gfx942)
# RESULT_DIR receives summary.md (the tables), summary.json and logs.tar.gz (every step's log
# and report), rewritten after every step so that a check cut short still says what it did.
# --budget (default 470 s) caps the whole check: each step's time box shrinks to what is left,
# and steps that no longer fit are recorded as SKIP. Exit 0 only if every step that ran
# passed; 3 when the driver has no device.
set -uo pipefail

usage="usage: check.sh cuda|hip|cpu RESULT_DIR [--part=1|2] [--budget=SECONDS]"
[[ $# -ge 2 ]] || { echo "$usage" >&2; exit 2; }
driver=$1
results=$2
part=all
budget=470
shift 2
for arg in "$@"; do
  case "$arg" in
    --part=1 | --part=2) part=${arg#--part=} ;;
    --budget=[0-9]*) budget=${arg#--budget=} ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
case "$driver" in cuda | hip | cpu) ;; *) echo "$usage" >&2; exit 2 ;; esac

kit=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$results" || exit 2
results=$(cd "$results" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
logs=$work/logs
mkdir -p "$logs"
export TEST_TMPDIR=$work/tmp XR_HAL_CACHE_DIR=$work/kernel-cache
mkdir -p "$TEST_TMPDIR" "$XR_HAL_CACHE_DIR"
# MIOpen compiles kernels on first use unless told to take what its database has.
export MIOPEN_FIND_MODE=FAST
replay=$kit/bin/replay
examples=$kit/share/xreplay/examples
started=$(date +%s)

say() { printf 'check [%3ss] %s\n' "$(($(date +%s) - started))" "$*"; }

# One row per step: name, result (PASS FAIL SKIP TIMEOUT), passed, failed, skipped, seconds,
# detail. Rows are tab-separated in $work/steps.
: >"$work/steps"
record() {
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$work/steps"
  summarize
}

# Runs one command under a time box (its own limit or what is left of the budget, the smaller),
# its output in logs/NAME.log; sets $rc (124 or 137: timed out, 125: no time left).
boxed() {
  local name=$1 limit=$2 left
  shift 2
  left=$((budget - ($(date +%s) - started) - 5))
  ((left < limit)) && limit=$left
  if ((limit < 5)); then
    echo "not run: the check's budget of $budget s is spent" >"$logs/$name.log"
    rc=125
    return
  fi
  timeout --kill-after=5 "$limit" "$@" >"$logs/$name.log" 2>&1
  rc=$?
}

# PASS, SKIP (no time left), TIMEOUT or FAIL from $rc.
result_of() {
  case $rc in
    0) echo PASS ;;
    125) echo SKIP ;;
    124 | 137) echo TIMEOUT ;;
    *) echo FAIL ;;
  esac
}

# One Criterion binary as a step: its totals (Criterion's synthesis line; skips are counted
# from their "[SKIP]" lines, which the synthesis leaves out) and its first failure.
# usage: criterion_step NAME LIMIT BINARY
criterion_step() {
  local name=$1 limit=$2 binary=$3 t0=$(date +%s) line pass fail crash
  boxed "$name" "$limit" "$binary" --verbose
  line=$(grep -a "Synthesis: Tested" "$logs/$name.log" | tail -n 1)
  pass=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' <<<"$line")
  fail=$(sed -n 's/.*Failing: \([0-9]*\).*/\1/p' <<<"$line")
  crash=$(sed -n 's/.*Crashing: \([0-9]*\).*/\1/p' <<<"$line")
  record "$name" "$(result_of)" "${pass:-0}" $((${fail:-0} + ${crash:-0})) \
    "$(grep -ac '\[SKIP\]' "$logs/$name.log")" $(($(date +%s) - t0)) \
    "$(grep -a -m1 -E '\[FAIL\]|\[----\].*(Assertion|Caught)' "$logs/$name.log" | head -c 300)"
}

# Steps that did not pass (a skip for want of time is not a failure).
count_failures() {
  awk -F'\t' '$2 != "PASS" && $2 != "SKIP"' "$work/steps" | wc -l
}

# ---- machine ---------------------------------------------------------------------------------
machine() {
  {
    echo "uname: $(uname -srm)"
    echo "glibc: $(getconf GNU_LIBC_VERSION 2>/dev/null)"
    echo "kit: $(tr '\n' ' ' <"$kit/VERSION")"
    echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
    echo "CUDA_HOME=${CUDA_HOME:-} ROCM_PATH=${ROCM_PATH:-}"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total \
      --format=csv,noheader 2>&1
    command -v rocm-smi >/dev/null && rocm-smi --showproductname 2>&1 | head -n 20
    echo "python3: $(command -v python3 || echo absent)"
    ls -d /usr/local/cuda* /opt/rocm* /usr/local/nvidia/lib* 2>/dev/null
    echo "vendor libraries in the loader's cache:"
    ldconfig -p 2>/dev/null | grep -E 'lib(cuda|nvrtc|cublasLt|cudnn|nccl|amdhip64|hiprtc|hipblaslt)\.' |
      head -n 12
  } >"$logs/machine.log" 2>&1
  record machine PASS - - - 0 "$(grep -m1 -E "^(glibc|NVIDIA|GPU)" "$logs/machine.log" | head -c 80)"
}

# ---- devices -----------------------------------------------------------------------------------
device_ready=0
devices() {
  local t0=$(date +%s)
  boxed devices 60 "$replay" devices
  local line
  line=$(grep -E "^$driver " "$logs/devices.log" | head -n 1)
  if [[ $line == *available* && $line != *UNAVAILABLE* ]]; then
    device_ready=1
    record devices PASS - - - $(($(date +%s) - t0)) "${line:0:200}"
  else
    record devices FAIL - - - $(($(date +%s) - t0)) "${line:0:400}"
  fi
}

# ---- warm --------------------------------------------------------------------------------------
warm() {
  local t0=$(date +%s)
  boxed warm 180 "$kit/bin/gpu_warm" "$driver"
  record warm "$(result_of)" - - - $(($(date +%s) - t0)) "$(tail -n 1 "$logs/warm.log" | head -c 200)"
}

# ---- suites ------------------------------------------------------------------------------------
# The driver's suites, one path per line: the CTS, then the device-code test (warp width,
# reductions: a failure there explains the others), then the rest.
suite_binaries() {
  if [[ $driver == cpu ]]; then
    echo "$kit/tests/cts_cpu"
    return
  fi
  echo "$kit/tests/cts_$driver"
  echo "$kit/tests/device_test_$driver"
  ls "$kit"/tests/*_"$driver" | grep -v -e "/cts_$driver\$" -e "/device_test_$driver\$"
}

suites() {
  local binary binaries
  mapfile -t binaries < <(suite_binaries)
  for binary in "${binaries[@]}"; do
    [[ -x $binary ]] && criterion_step "$(basename "$binary")" 150 "$binary"
  done
}

# ---- examples ----------------------------------------------------------------------------------
# Each shipped bundle replayed with --check against the CPU reference. On cpu (a dry run of the
# steps) one timed iteration, and the MoE layer unchecked: there the layer takes 8 s an
# execution and its plain-C reference 90 s (tests/kernels check that kernel on smaller cases).
examples() {
  local bundle name args t0 result summary iterations=(--warmup=1 --iters=5)
  [[ $driver == cpu ]] && iterations=(--warmup=0 --iters=1)
  for bundle in "$examples"/llm_small.msgpack "$examples"/selftest.json \
                "$examples"/gpt_oss_moe.json "$examples"/allreduce_tp2.json; do
    [[ -f $bundle ]] || continue
    name=example_$(basename "${bundle%.*}")
    args=(--hal="$driver" "${iterations[@]}" --report="$logs/$name.json")
    [[ $driver == cpu && $bundle == *gpt_oss_moe* ]] || args+=(--check)
    [[ $bundle == *gpt_oss_moe* ]] && args+=(--model-config="$examples/gpt-oss-20b.json")
    [[ $bundle == *allreduce* ]] && args+=(--scale-collectives)
    t0=$(date +%s)
    boxed "$name" 120 "$replay" "${args[@]}" "$bundle"
    result=$(result_of)
    summary=$(grep -a -m1 -E '^[0-9]+ ops?:|ops? (ran|succeeded)|failed' "$logs/$name.log")
    [[ " ${args[*]} " == *" --check "* ]] || summary="unchecked; $summary"
    record "$name" "$result" - - - $(($(date +%s) - t0)) "exit $rc; ${summary:0:200}"
  done
}

# ---- part 2 ------------------------------------------------------------------------------------
bench() { # name limit command...
  local name=$1 t0=$(date +%s)
  boxed "$@"
  record "$name" "$(result_of)" - - - $(($(date +%s) - t0)) "exit $rc"
}

# The GEMM sweep on the device, at the iterations a peak figure needs.
sweep() {
  local t0=$(date +%s)
  boxed sweep 150 "$replay" --hal="$driver" --warmup=5 --iters=20 --report="$logs/sweep.json" \
    "$examples/gemm_sweep.json"
  record sweep "$(result_of)" - - - $(($(date +%s) - t0)) \
    "$(grep -a -m1 '^summary' "$logs/sweep.log" | head -c 200)"
}

# PyTorch on the same bundles, each report set beside the replay's with `replay compare`.
framework() {
  local t0=$(date +%s) device=cuda name bundle replayed result=PASS
  [[ $driver == cpu ]] && device=cpu
  if ! command -v python3 >/dev/null ||
     ! python3 -c "import torch, sys; sys.exit(0 if '$device' == 'cpu' or torch.cuda.is_available() else 1)" \
       >"$logs/framework_probe.log" 2>&1; then
    record framework SKIP - - - 0 "no PyTorch for $device here: $(tail -n 1 "$logs/framework_probe.log")"
    return
  fi
  for name in llm_small sweep; do
    bundle=$examples/llm_small.json replayed=$logs/launch_eager.json
    [[ $name == sweep ]] && bundle=$examples/gemm_sweep.json replayed=$logs/sweep.json
    [[ $driver == cpu && $name == sweep ]] && continue
    [[ -s $replayed ]] || continue
    boxed "torch_$name" 150 python3 "$kit/bin/torch_baseline.py" "$bundle" --device "$device" \
      --warmup 5 --iters 20 -o "$logs/torch_$name.json"
    ((rc == 0)) || { result=$(result_of); continue; }
    boxed "compare_$name" 30 "$replay" compare "$logs/torch_$name.json" "$replayed"
    ((rc == 0)) || result=$(result_of)
  done
  record framework "$result" - - - $(($(date +%s) - t0)) "torch $(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)"
}

launch() {
  local t0=$(date +%s) result=PASS mode
  for mode in eager graph; do
    boxed "launch_$mode" 120 "$replay" --hal="$driver" --launch="$mode" --iters=50 \
      --report="$logs/launch_$mode.json" "$examples/llm_small.msgpack"
    ((rc == 0)) || result=$(result_of)
  done
  if [[ $result == PASS ]]; then
    boxed launch_compare 30 "$replay" compare "$logs/launch_eager.json" "$logs/launch_graph.json"
  fi
  record launch "$result" - - - $(($(date +%s) - t0)) "eager then graph, 50 iterations"
}

# ---- summary -----------------------------------------------------------------------------------
# summary.md, summary.json and logs.tar.gz from the steps so far.
summarize() {
  {
    echo "# xreplay GPU kit check: $driver, part $part"
    echo
    echo "kit $(tr '\n' ' ' <"$kit/VERSION"); $(date -u +%Y-%m-%dT%H:%M:%SZ); $(($(date +%s) - started)) s"
    echo
    echo "| step | result | passed | failed | skipped | s | detail |"
    echo "|---|---|---|---|---|---|---|"
    awk -F'\t' '{gsub(/\|/, "/", $7); printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7}' \
      "$work/steps"
    echo
    echo "## machine"
    echo '```'; cat "$logs/machine.log"; echo '```'
    echo
    echo "## replay devices ($driver)"
    if [[ -f $logs/devices.log ]]; then
      echo '```'
      awk -v d="$driver" '$1 == d { on = 1; print; next } /^[^ ]/ { on = 0 } on' \
        "$logs/devices.log" | head -n 30
      echo '```'
    fi
    for log in warm gemm sweep compare_sweep compare_llm_small copy launch_compare; do
      [[ -s $logs/$log.log ]] || continue
      echo
      echo "## $log"
      echo '```'; head -c 6000 "$logs/$log.log"; echo '```'
    done
  } >"$results/summary.md"
  {
    printf '{"driver": "%s", "part": "%s", "kit": "%s", "seconds": %d, "failures": %d, "steps": [' \
      "$driver" "$part" "$(head -n 1 "$kit/VERSION")" $(($(date +%s) - started)) "$(count_failures)"
    awk -F'\t' 'function q(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); gsub(/\t/, " ", s); return "\"" s "\"" }
                function n(s) { return s == "-" ? "null" : s }
                { printf "%s{\"name\": %s, \"result\": %s, \"passed\": %s, \"failed\": %s, \"skipped\": %s, \"seconds\": %s, \"detail\": %s}",
                         (NR > 1 ? ", " : ""), q($1), q($2), n($3), n($4), n($5), n($6), q($7) }' "$work/steps"
    echo "]}"
  } >"$results/summary.json"
  tar -C "$work" -czf "$results/logs.tar.gz" logs
}

# ---- run ---------------------------------------------------------------------------------------
say "kit $(tr '\n' ' ' <"$kit/VERSION"), driver $driver, part $part, results in $results"
machine
devices
if ((device_ready == 0)); then
  say "no $driver device: $(grep -E "^$driver " "$logs/devices.log")"
fi
if [[ $part != 2 ]] && ((device_ready)); then
  [[ $driver != cpu ]] && { say "warm"; warm; }
  say "suites"; suites
  say "examples"; examples
fi
if [[ $part != 1 ]] && ((device_ready)); then
  if [[ $driver != cpu ]]; then
    say "gemm"; bench gemm 150 "$kit/bin/gpu_gemm_bench" "$driver"
    say "sweep"; sweep
  fi
  say "copy"; bench copy 90 "$kit/bin/hal_bench" --driver "$driver" --max-mib 1024
  say "launch"; launch
  say "framework"; framework
  say "compile"; criterion_step compile_test 240 "$kit/tests/compile_test"
fi

summarize
failures=$(count_failures)
say "done: $failures step(s) not passed; $results/summary.md"
((device_ready)) || exit 3
((failures == 0))
