#!/usr/bin/env bash
# tools/fuzz.sh SECONDS [TARGET...]: builds the fuzz targets of tests/fuzz with clang's libFuzzer
# (-fsanitize=fuzzer,address,undefined; a UB report aborts) and runs each for SECONDS, starting
# from its corpus in tests/fuzz/corpus/TARGET. Targets: bundle npy trace capture details report model_config
# (all by default). The sources of a target are what bazel says //tests/fuzz:TARGET_regression is built
# from, minus the plain-test main.
#
# New inputs the fuzzer finds go to $XR_FUZZ_DIR/TARGET/corpus (default
# /var/tmp/xreplay-fuzz), never into the repository; a finding is written there as crash-* (or
# leak-*, timeout-*) and the script fails. Minimize one with
#   $XR_FUZZ_DIR/bin/TARGET -minimize_crash=1 -runs=10000 CRASH
# then add it to tests/fuzz/corpus/TARGET, where the regression test replays it for good.
# Prints one line per target: executions, coverage (cov), corpus size.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:?usage: tools/fuzz.sh SECONDS [TARGET...]}
shift
targets=("$@")
((${#targets[@]})) || targets=(bundle npy trace capture details report model_config)
work=${XR_FUZZ_DIR:-/var/tmp/xreplay-fuzz}
mkdir -p "$work/bin"

if ! command -v clang-14 >/dev/null; then
  echo "fuzz: clang-14 is missing; ./bazelw installs it (clang-14, libclang-rt-14-dev)" >&2
  exit 1
fi

flags=(-g -O1 -std=c11 -D_GNU_SOURCE -fno-omit-frame-pointer
       -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -I.)
libs=(-lcjson -lmsgpackc -lz -ldl -lm -lpthread)

status=0
for t in "${targets[@]}"; do
  if [[ ! -f "tests/fuzz/${t}_fuzz.c" ]]; then
    echo "fuzz: no target '$t' (tests/fuzz/${t}_fuzz.c)" >&2
    exit 2
  fi
  mapfile -t srcs < <(./bazelw query --noshow_progress \
      "kind('source file', deps(//tests/fuzz:${t}_regression))" 2>/dev/null |
    grep -v '^@' | grep '\.c$' | grep -v regress_main | sed -e 's|^//||' -e 's|:|/|')
  clang-14 "${flags[@]}" "${srcs[@]}" "${libs[@]}" -o "$work/bin/$t"
  mkdir -p "$work/$t/corpus"
  log="$work/$t/run.log"
  dict=()
  [[ -f "tests/fuzz/dict/$t.dict" ]] && dict=(-dict="tests/fuzz/dict/$t.dict")
  # -rss_limit_mb: extraction of a hostile trace must stay small; -max_len: seeds are < 64 KiB.
  if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 TMPDIR="$work/$t" \
      "$work/bin/$t" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 \
      -timeout=25 -artifact_prefix="$work/$t/" -print_final_stats=1 "${dict[@]}" \
      "$work/$t/corpus" "tests/fuzz/corpus/$t" >"$log" 2>&1; then
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    cov=$(grep -ao 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    files=$(find "$work/$t/corpus" -type f | wc -l)
    echo "fuzz $t: ${seconds} s, ${execs:-?} executions, cov ${cov:-?}, corpus ${files} files: no finding"
  else
    echo "fuzz $t: FINDING (log: $log)"
    grep -a -m 5 -E 'ERROR|runtime error|fuzz property failed|Test unit written' "$log" || tail -n 20 "$log"
    status=1
  fi
done
exit $status
