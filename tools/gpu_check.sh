#!/usr/bin/env bash
# gpu_check.sh: the GPU check from a checkout, on a machine that has Bazel and the GPU: builds
# the GPU kit (tools/gpu_kit.sh) and runs its check.sh there. On a GPU box without Bazel, build
# the kit elsewhere, copy it over and run KIT/check.sh (docs/gpu.md, "The GPU kit").
#   tools/gpu_check.sh [cuda|hip] [RESULT_DIR] [--part=1|2] [--budget=SECONDS]
# RESULT_DIR (default ./gpu-check) receives summary.md, summary.json and logs.tar.gz. Whether
# there is a GPU is decided by loading the vendor runtime (`replay devices`), as the HAL does,
# not by the loader's cache: check.sh exits 3 with the reason when there is none.
set -uo pipefail
cd "$(dirname "$0")/.."

driver=${1:-cuda}
results=${2:-gpu-check}
case "$driver" in
  cuda | hip) ;;
  *) echo "usage: tools/gpu_check.sh [cuda|hip] [RESULT_DIR] [--part=1|2] [--budget=SECONDS]" >&2
     exit 2 ;;
esac
kit=$(mktemp -d)
trap 'rm -rf "$kit"' EXIT
tools/gpu_kit.sh "$kit" || exit 2
"$kit/check.sh" "$driver" "$results" "${@:3}"
