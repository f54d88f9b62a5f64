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
# the vendor libraries that need the machine's newer one.
#
# tools/gpu_kit.sh calls the functions below (with XR_DIST_LIBRARY_ONLY=1) to make its test
# binaries relocatable the same way.
set -euo pipefail

# Sonames a glibc system always has (glibc's own, the C++ runtime, the kernel's vDSO).
system_soname() {
  case "$1" in
    linux-vdso.so.* | ld-linux-x86-64.so.* | libc.so.* | libm.so.* | libdl.so.* | \
    libpthread.so.* | librt.so.* | libresolv.so.* | libutil.so.* | libanl.so.* | \
    libstdc++.so.* | libgcc_s.so.*) return 0 ;;
  esac
  return 1
}

# Copies every non-system library that the ELF files given need (ldd's transitive closure, with
# LIB_DIR searched first) into LIB_DIR, and points each file's RUNPATH at LIB_DIR.
# usage: bundle_libraries LIB_DIR FILE...
bundle_libraries() {
  local lib_dir=$1 file name path rpath
  shift
  for file in "$@"; do
    while read -r name path; do
      system_soname "$name" && continue
      if [[ $path == "not" || -z $path ]]; then
        echo "dist: $file needs $name, which ldd cannot find here" >&2
        return 1
      fi
      [[ -e $lib_dir/$name ]] && continue
      cp -L "$path" "$lib_dir/$name"
      chmod 0755 "$lib_dir/$name"
      set_runpath "$lib_dir/$name" '$ORIGIN'
    done < <(LD_LIBRARY_PATH=$lib_dir ldd "$file" | sed -n 's/^\t\([^ ]*\) => \([^ ]*\).*/\1 \2/p')
  done
  for file in "$@"; do
    rpath=$(realpath --relative-to="$(dirname "$file")" "$lib_dir")
    [[ $rpath == . ]] && rpath='$ORIGIN' || rpath="\$ORIGIN/$rpath"
    set_runpath "$file" "$rpath"
  done
}

# Sets a file's RUNPATH (DT_RUNPATH, not the old DT_RPATH that overrides LD_LIBRARY_PATH) and
# drops its debug sections (symbols stay, for backtraces).
set_runpath() {
  chmod u+w "$1"
  patchelf --set-rpath "$2" "$1"
  strip --strip-debug "$1"
}

[[ ${XR_DIST_LIBRARY_ONLY:-} == 1 ]] && return 0

usage="usage: dist OUT_DIR"
[[ $# -eq 1 && $1 != -* ]] || { echo "$usage" >&2; exit 2; }
out=$1
[[ $out == /* ]] || out="${BUILD_WORKING_DIRECTORY:-$PWD}/$out"
for tool in patchelf strip ldd tar; do
  command -v "$tool" >/dev/null || { echo "dist: $tool is not installed (./bazelw installs it)" >&2; exit 2; }
done

# The files sit at their workspace paths in the runfiles tree that `bazel run` starts in.
[[ -f VERSION ]] || cd "$0.runfiles/xreplay"
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
