#!/usr/bin/env bash
# gpu_check.sh: the GPU checks in one go, for a machine with a real GPU (CI has none).
#   1. finds the GPU (device node + vendor runtime) and stops with the reason when there is none;
#   2. builds the tool, the bench and the GPU test targets (-c opt);
#   3. confirms with `replay devices` that the HAL driver opens the device;
#   4. runs the HAL conformance suite on the driver, the kernel compile test, and every test
#      tagged `gpu` (the kernel suites: tests/gpu:device_test_*, gemm_gpu_test_*, graph_test_*,
#      ...);
#   5. prints a table: target, result, cases passed / failed / skipped;
#   6. replays examples/llm_small.msgpack with --launch=eager and --launch=graph and prints each
#      op's median side by side (graph / eager ratio): graphs leave the host's launch cost out;
#   7. measures copy bandwidth and event overhead with hal_bench;
#   8. replays examples/allreduce_tp2.json's all-reduces through NCCL / RCCL on one mpirun rank.
# Budget: under 8 minutes on an H100/H200-class machine (a cold build is most of it).
#
# usage: tools/gpu_check.sh [cuda|hip]      (default cuda)
# exit:  0 all passed, 1 a test failed, 2 the build failed or a tool is missing, 3 no GPU
set -uo pipefail
cd "$(dirname "$0")/.."

driver=${1:-cuda}
case "$driver" in
  cuda | hip) ;;
  *) echo "usage: tools/gpu_check.sh [cuda|hip]" >&2; exit 2 ;;
esac
started=$(date +%s)
elapsed() { echo $(($(date +%s) - started)); }
say() { printf 'gpu_check [%3ss] %s\n' "$(elapsed)" "$*"; }

# ---- 1. is there a GPU for this driver? ----------------------------------------------------
library_present() { # soname [override]
  [[ -n "${2:-}" && -e "$2" ]] && return 0
  ldconfig -p 2>/dev/null | grep -q "$1"
}
missing=()
if [[ $driver == cuda ]]; then
  [[ -e /dev/nvidiactl ]] || missing+=("/dev/nvidiactl absent (no NVIDIA kernel driver)")
  library_present "libcuda.so.1" "${XR_CUDA_LIBRARY:-}" ||
    missing+=("libcuda.so.1 not in the loader cache and XR_CUDA_LIBRARY unset")
else
  [[ -e /dev/kfd ]] || missing+=("/dev/kfd absent (no amdgpu kernel driver)")
  library_present "libamdhip64.so" "${XR_HIP_LIBRARY:-}" ||
    missing+=("libamdhip64 not in the loader cache and XR_HIP_LIBRARY unset")
fi
if ((${#missing[@]})); then
  reason=$(printf '%s; ' "${missing[@]}")
  say "no $driver GPU on this machine: ${reason%; }"
  say "nothing to check here; CI covers the rest (tests/gpu:compile_test, tests/gpu:driver_test)"
  exit 3
fi

if [[ -x ./bazelw ]] && command -v bazel >/dev/null; then
  bazel_cmd=(./bazelw)
elif command -v bazel >/dev/null; then
  bazel_cmd=(bazel)
else
  say "bazel is not installed: install Debian's bazel-bootstrap (./bazelw lists every package)"
  exit 2
fi

# ---- 2. build ------------------------------------------------------------------------------
log_dir=$(mktemp -d)
trap 'rm -rf "$log_dir"' EXIT
targets=(//tools:replay //tools:hal_bench "//tests/cts:cts_$driver" //tests/gpu:compile_test)
say "building ${targets[*]} and the tests tagged gpu"
if ! timeout 300 "${bazel_cmd[@]}" build -c opt "${targets[@]}" >"$log_dir/build.txt" 2>&1 ||
   ! timeout 300 "${bazel_cmd[@]}" build -c opt --build_tests_only --test_tag_filters=gpu \
       //tests/... >>"$log_dir/build.txt" 2>&1; then
  tail -n 30 "$log_dir/build.txt"
  say "build failed"
  exit 2
fi

# ---- 3. does the HAL open the device? ------------------------------------------------------
devices=$(bazel-bin/tools/replay devices 2>&1)
if ! grep -qE "^$driver +available" <<<"$devices"; then
  grep -E "^$driver " <<<"$devices"
  say "the $driver driver cannot open the GPU (reason above)"
  exit 3
fi
grep -A6 -E "^$driver +available" <<<"$devices"

# ---- 4. tests ------------------------------------------------------------------------------
say "running the conformance suite, the compile test and the gpu-tagged suites"
timeout 420 "${bazel_cmd[@]}" test -c opt --test_output=errors "//tests/cts:cts_$driver" \
  //tests/gpu:compile_test >"$log_dir/test.txt" 2>&1
timeout 420 "${bazel_cmd[@]}" test -c opt --test_output=errors --build_tests_only \
  --test_tag_filters=gpu //tests/... >>"$log_dir/test.txt" 2>&1

failures=0
printf '\n%-44s %-8s %6s %6s %7s\n' "target" "result" "passed" "failed" "skipped"
while read -r target status; do
  log="bazel-testlogs/${target#//}"
  log="${log/://}/test.log"
  line=$(grep -a "Synthesis: Tested" "$log" 2>/dev/null | tail -n 1)
  pass=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' <<<"$line")
  fail=$(sed -n 's/.*Failing: \([0-9]*\).*/\1/p' <<<"$line")
  crash=$(sed -n 's/.*Crashing: \([0-9]*\).*/\1/p' <<<"$line")
  skip=$(grep -ac "\[SKIP\]" "$log" 2>/dev/null)
  printf '%-44s %-8s %6s %6s %7s\n' "$target" "$status" "${pass:-?}" \
    "$((${fail:-0} + ${crash:-0}))" "${skip:-0}"
  [[ $status == PASSED ]] || failures=$((failures + 1))
done < <(grep -E '^//[^ ]+ +(\(cached\) )?(PASSED|FAILED|TIMEOUT|NO STATUS)' "$log_dir/test.txt" |
         sed -E 's/^(\/\/[^ ]+) +(\(cached\) )?(PASSED|FAILED|TIMEOUT|NO STATUS).*/\1 \3/' |
         sed 's/ NO STATUS$/ NO_STATUS/')
if ((failures)); then
  echo
  grep -a -E "^\[----\]|\[FAIL\]" bazel-testlogs/tests/*/*/test.log 2>/dev/null | head -n 40
fi

# ---- 6. the example bundle, eager against graph launches -----------------------------------
# Each report's "ops" array holds one object per op, in bundle order, with "name" and
# "median_us" (absent for an op that did not run); rows pair the two runs' ops by position.
bundle=examples/llm_small.msgpack
echo
say "replaying $bundle on $driver: --launch=eager and --launch=graph"
for launch in eager graph; do
  report="$log_dir/$launch.json"
  if ! timeout 180 bazel-bin/tools/replay --hal="$driver" --launch="$launch" --report="$report" \
       "$bundle" >"$log_dir/replay_$launch.txt" 2>&1; then
    tail -n 5 "$log_dir/replay_$launch.txt"
    say "replay --launch=$launch failed"
    failures=$((failures + 1))
  fi
done
report_eager=$log_dir/eager.json report_graph=$log_dir/graph.json  # one HAL: FILE itself
if [[ -f $report_eager && -f $report_graph ]] && command -v python3 >/dev/null; then
  python3 - "$report_eager" "$report_graph" <<'PY'
import json, sys
eager, graph = (json.load(open(path)).get("ops", []) for path in sys.argv[1:3])
print("%-44s %12s %12s %7s" % ("op", "eager us", "graph us", "ratio"))
for e, g in zip(eager, graph):
    a, b = e.get("median_us"), g.get("median_us")
    ratio = "%7.2f" % (b / a) if a and b else "%7s" % "-"
    fmt = lambda v: "%12.2f" % v if v is not None else "%12s" % "-"
    print("%-44s %s %s %s" % (e.get("name", "?")[:44], fmt(a), fmt(b), ratio))
PY
elif [[ -f $report_eager && -f $report_graph ]]; then
  say "python3 is not installed: no eager / graph table"
fi

# ---- 7. copy bandwidth and event overhead --------------------------------------------------
echo
say "hal_bench: copy bandwidth (GB/s of payload, best of several) and event overhead"
timeout 120 bazel-bin/tools/hal_bench --driver "$driver" --max-mib 256 || say "hal_bench failed"

# ---- 8. a collective through NCCL / RCCL -----------------------------------------------------
# One rank (mpirun -np 1): the all-reduces of examples/allreduce_tp2.json scaled to it, checked.
echo
if command -v mpirun >/dev/null; then
  say "NCCL / RCCL: mpirun -np 1 replay --hal=$driver --check --scale-collectives"
  if ! OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 mpirun -np 1 \
       bazel-bin/tools/replay --hal="$driver" --check --scale-collectives --iters=10 \
       examples/allreduce_tp2.json; then
    say "the collective replay failed"
    failures=$((failures + 1))
  fi
else
  say "mpirun is not installed (openmpi-bin): no NCCL / RCCL check"
fi

say "done in $(elapsed) s (budget 480 s): $failures failing target(s)"
((failures == 0))
