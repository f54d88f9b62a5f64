# relocate.sh, sourced by tools/dist.sh (the release) and tools/gpu_kit.sh (its test binaries):
# makes ELF files run wherever their folder is unpacked, with the libraries they need beside them.
# Needs patchelf, strip and ldd.

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

