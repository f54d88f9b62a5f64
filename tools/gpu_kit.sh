#!/usr/bin/env bash
# gpu_kit.sh: the GPU kit, for a GPU box that has a driver and nothing of ours (no Bazel, no
# Debian packages).
#   tools/gpu_kit.sh OUT_DIR
# OUT_DIR receives the release (//:dist: bin/, lib/, include/, share/), the Criterion binaries
# of the cuda and hip CTS and of every suite tagged `gpu` plus the kernel compile test in
# tests/ (and the cpu CTS, for a dry run anywhere), and check.sh (tools/kit_check.sh), which needs only bash, coreutils and the vendor
# driver there:
#   OUT_DIR/check.sh cuda|hip|cpu RESULT_DIR [--part=1|2]
# Every binary finds its libraries in OUT_DIR/lib by RUNPATH. At most 48 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."

[[ $# -eq 1 && $1 != -* ]] || { echo "usage: tools/gpu_kit.sh OUT_DIR" >&2; exit 2; }
out=$(mkdir -p "$1" && cd "$1" && pwd)
[[ -x ./bazelw ]] || { echo "gpu_kit: run from a checkout" >&2; exit 2; }

tests=(//tests/cts:cts_cpu //tests/cts:cts_cuda //tests/cts:cts_hip //tests/gpu:compile_test)
gpu_tests=$(./bazelw query 'attr(tags, "\bgpu\b", tests(//tests/...))' 2>/dev/null)
./bazelw build "${tests[@]}" $gpu_tests
./bazelw run //:dist -- "$out/.dist" >/dev/null

rm -rf "${out:?}/bin" "$out/lib" "$out/include" "$out/share" "$out/tests"
tar -C "$out" --strip-components=1 -xzf "$out"/.dist/xreplay-*.tar.gz
rm -rf "$out/.dist"
mkdir -p "$out/tests"
bin=$(./bazelw info bazel-bin 2>/dev/null)
for target in "${tests[@]}" $gpu_tests; do
  path=${target#//}
  cp -L "$bin/${path/://}" "$out/tests/${target##*:}"
  chmod 0755 "$out/tests/${target##*:}"
done

# The same relocation as the release: test binaries and the libraries they need (the shared
# objects Bazel links tests with, Criterion and its dependencies) with RUNPATH into lib/.
solibs=()
for solib in "$bin"/_solib_k8/*.so; do
  cp -L "$solib" "$out/lib/"
  solibs+=("$out/lib/$(basename "$solib")")
done
source tools/relocate.sh
bundle_libraries "$out/lib" "$out"/tests/* "${solibs[@]}"
cp tools/kit_check.sh "$out/check.sh"
chmod 0755 "$out/check.sh"

size=$(du -sm "$out" | cut -f1)
echo "gpu_kit: $out ($size MiB; $(ls "$out/tests" | wc -l) test binaries)"
if ((size > 48)); then
  echo "gpu_kit: the kit is larger than 48 MiB" >&2
  exit 1
fi
