#!/bin/sh
# Installs xreplay's shared libraries, public headers and pkg-config files under a prefix:
#   ./bazelw run //:install -- --prefix=DIR
# DIR/lib/libxreplay-hal.so.0, libxreplay-kernels.so.0, libxreplay.so.0 (+ .so links),
# DIR/include/xreplay/<layer>/*.h, DIR/lib/pkgconfig/xreplay-hal.pc and xreplay.pc. Then:
#   cc prog.c $(PKG_CONFIG_PATH=DIR/lib/pkgconfig pkg-config --cflags --libs xreplay)
# A relative DIR is taken from the directory `bazel run` was started in.
set -eu
usage="usage: install --prefix=DIR"
prefix=
for arg in "$@"; do
  case "$arg" in
    --prefix=?*) prefix=${arg#--prefix=} ;;
    -h | --help) echo "$usage"; exit 0 ;;
    *) echo "install: unexpected $arg" >&2; echo "$usage" >&2; exit 2 ;;
  esac
done
[ -n "$prefix" ] || { echo "$usage" >&2; exit 2; }
case "$prefix" in
  /*) ;;
  *) prefix="${BUILD_WORKING_DIRECTORY:-$PWD}/$prefix" ;;
esac

# The libraries and headers sit at their workspace paths in the runfiles tree, which `bazel run`
# and tests start in; bazel-bin/install started by hand looks beside itself.
[ -f hal/hal.h ] || cd "$0.runfiles/xreplay"
libraries="hal/libxreplay-hal.so.0 kernels/libxreplay-kernels.so.0 replay/libxreplay.so.0"
headers="base/status.h base/dtype.h base/dtype_table.h base/file.h hal/hal.h formats/model.h
  formats/bundle.h formats/model_config.h formats/trace_extract.h kernels/kernels.h replay/replay.h replay/report.h
  replay/categories.h replay/report_compare.h replay/report_html.h replay/report_read.h replay/shard.h
  replay/trace_ratio.h"

mkdir -p "$prefix/lib/pkgconfig" "$prefix/include/xreplay"
for lib in $libraries; do
  name=$(basename "$lib")
  # cp, not install(1): this script is itself `install` on the PATH of `bazel run` and tests.
  cp -f "$lib" "$prefix/lib/$name"
  chmod 0755 "$prefix/lib/$name"
  ln -sf "$name" "$prefix/lib/${name%.0}"
done
for header in $headers; do
  mkdir -p "$prefix/include/xreplay/$(dirname "$header")"
  cp -f "$header" "$prefix/include/xreplay/$header"
  chmod 0644 "$prefix/include/xreplay/$header"
done
for pc in xreplay-hal xreplay; do
  sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$(cat VERSION)|" "tools/$pc.pc.in" \
    > "$prefix/lib/pkgconfig/$pc.pc"
done
echo "installed xreplay in $prefix (pkg-config: PKG_CONFIG_PATH=$prefix/lib/pkgconfig)"
