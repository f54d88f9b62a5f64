#!/usr/bin/env bash
# dist: the relocatable release archive.
#   ./bazelw run //:dist -- OUT_DIR
# writes OUT_DIR/xreplay-<version>-linux-x86_64.tar.gz, one folder holding
#   bin/      replay, hal_bench, gpu_gemm_bench, gpu_warm, and torch_baseline.py (PyTorch on the
#             same bundles, where the machine has it)
#   lib/      libxreplay*.so.0 as //:install writes them, pkgconfig/, and every library the
#             binaries need that a bare glibc system lacks (cJSON, msgpack-c, zlib, ...)
#   include/  the public headers
#   share/xreplay/examples/, README, VERSION (version and commit)
# Every ELF file's RUNPATH is $ORIGIN/../lib (libraries: $ORIGIN), so the folder runs wherever
# it is unpacked, with no LD_LIBRARY_PATH. Vendor runtimes (CUDA, HIP, OpenCL, BLAS, DNN, NCCL,
# MPI) stay dlopen'ed from the machine, never shipped. glibc itself, libstdc++ and libgcc_s are
# not shipped either: every glibc system has them, and an older copy loaded first would break
# the vendor libraries that need the machine's newer one (tools/relocate.sh does the relocation,
# for tools/gpu_kit.sh's test binaries too).
set -euo pipefail

usage="usage: dist OUT_DIR"
[[ $# -eq 1 && $1 != -* ]] || { echo "$usage" >&2; exit 2; }
out=$1
[[ $out == /* ]] || out="${BUILD_WORKING_DIRECTORY:-$PWD}/$out"
for tool in patchelf strip ldd tar; do
  command -v "$tool" >/dev/null || { echo "dist: $tool is not installed (./bazelw installs it)" >&2; exit 2; }
done

# The files sit at their workspace paths in the runfiles tree that `bazel run` starts in.
[[ -f VERSION ]] || cd "$0.runfiles/xreplay"
source tools/relocate.sh
version=$(cat VERSION)
commit=$(tools/replay --version | sed -n 's/.*, commit \([^,]*\),.*/\1/p')
name="xreplay-$version-linux-x86_64"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/$name"

mkdir -p "$root/bin" "$root/share/xreplay/examples"
for tool in replay hal_bench gpu_gemm_bench gpu_warm; do
  cp -L "tools/$tool" "$root/bin/$tool"
  chmod 0755 "$root/bin/$tool"
done
sh tools/install.sh --prefix="$root" >/dev/null
# pkg-config files relative to their own folder, so the prefix moves with the archive.
sed -i "s|^prefix=.*|prefix=\${pcfiledir}/../..|" "$root"/lib/pkgconfig/*.pc
cp -L examples/*.json examples/*.msgpack "$root/share/xreplay/examples/"
cp -L tools/release_readme.md "$root/README"
printf '%s\ncommit %s\n' "$version" "$commit" >"$root/VERSION"

bundle_libraries "$root/lib" "$root"/bin/* "$root"/lib/libxreplay*.so.0
cp -L tools/torch_baseline.py "$root/bin/torch_baseline.py"
chmod 0755 "$root/bin/torch_baseline.py"

mkdir -p "$out"
tar -C "$stage" -czf "$out/$name.tar.gz" "$name"
echo "dist: $out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1), commit $commit)"
