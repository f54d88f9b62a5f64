#!/usr/bin/env bash
# The installed libraries, used the way a program outside Bazel uses them: //:install into a
# fresh prefix, every public header compiled on its own, the two embedding examples built with
# plain cc and pkg-config against the prefix, run, and their output checked. The installed HAL
# must link nothing but the C runtime. Arguments: extra compiler flags (the sanitizers under
# --config=asan, so that the programs match the instrumented libraries).
set -euo pipefail
flags=("$@")
prefix="$TEST_TMPDIR/prefix"
work="$TEST_TMPDIR/work"
mkdir -p "$work"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

./install --prefix="$prefix" || fail "//:install --prefix=$prefix"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
export LD_LIBRARY_PATH="$prefix/lib"
hal_flags=$(pkg-config --cflags --libs xreplay-hal) || fail "pkg-config xreplay-hal"
all_flags=$(pkg-config --cflags --libs xreplay) || fail "pkg-config xreplay"
[[ "$hal_flags" != *-lxreplay-kernels* ]] || fail "xreplay-hal.pc pulls in the kernels: $hal_flags"
for pc in xreplay xreplay-hal; do
  version=$(pkg-config --modversion "$pc")
  [[ $version == "$(cat VERSION)" ]] || fail "$pc.pc says version '$version', VERSION '$(cat VERSION)'"
done

# Each public header compiles alone, as C11 with every warning an error.
for header in $(cd "$prefix/include/xreplay" && find . -name '*.h' ! -name dtype_table.h); do
  printf '#include "%s"\n' "${header#./}" > "$work/one_header.c"
  # shellcheck disable=SC2086 # pkg-config's output is a list of words
  cc -std=c11 -Wall -Wextra -Werror -fsyntax-only $(pkg-config --cflags xreplay) \
    "$work/one_header.c" || fail "$header does not compile on its own"
done

# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror "${flags[@]}" examples/embed/time_copy.c $hal_flags \
  -o "$work/time_copy" || fail "building time_copy.c against xreplay-hal"
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror "${flags[@]}" examples/embed/mm.c $all_flags \
  -o "$work/mm" || fail "building mm.c against xreplay"

out=$(XR_HAL_DEVICE=cpu "$work/time_copy") || fail "time_copy: $out"
echo "$out"
[[ "$out" =~ ^cpu:0\ \(.*\):\ 10\ x\ 64\ MiB\ device\ copy\ in\ [0-9.]+\ ms:\ [0-9.]+\ GB/s$ ]] ||
  fail "time_copy printed: $out"
# One OpenMP thread: LeakSanitizer's exit-time tracer (under --config=asan) sometimes crashed
# stopping oneDNN's idle worker threads ("Tracer caught signal 11") on a loaded machine.
out=$(OMP_NUM_THREADS=1 "$work/mm" cpu) || fail "mm: $out"
echo "$out"
[[ "$out" =~ ^aten::mm\ on\ .*:\ cpu\.[a-z_]+,\ [0-9.]+\ us,\ .*\ nmse\ [-0-9.e]+\ against ]] ||
  fail "mm printed: $out"
if "$work/mm" no_such_driver > "$work/bad.txt" 2>&1; then fail "mm on an unknown device succeeded"; fi
grep -q 'unknown HAL' "$work/bad.txt" || fail "mm on an unknown device: $(cat "$work/bad.txt")"

# The HAL library needs the C runtime only (libdl and pthreads are part of libc since glibc 2.34).
while read -r needed _; do
  case "$needed" in
    linux-vdso.so.* | libc.so.* | libdl.so.* | libpthread.so.* | /lib64/ld-linux-x86-64.so.* | \
      libasan.so.* | libubsan.so.* | libstdc++.so.* | libgcc_s.so.* | libm.so.*)
      # The sanitizer runtimes (and what they bring) appear only under --config=asan.
      if [[ ${#flags[@]} -eq 0 && "$needed" =~ ^lib(asan|ubsan|stdc\+\+|gcc_s|m)\. ]]; then
        fail "libxreplay-hal.so.0 needs $needed"
      fi
      ;;
    *) fail "libxreplay-hal.so.0 needs $needed" ;;
  esac
done < <(ldd "$prefix/lib/libxreplay-hal.so.0")
echo "PASS: installed, built outside Bazel, ran"
