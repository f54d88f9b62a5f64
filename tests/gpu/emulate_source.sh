#!/bin/sh
# Makes a kernels/gpu source compilable by a host C++ compiler under tests/gpu/cuda_emulation.h:
# inlines its local headers, the argument blocks of kernels/ and the base/ headers it includes,
# recursively (as kernels/embed_sources.sh does), turns __shared__ variables into
# function statics and the dynamic shared array into the emulation's buffer, and drops the
# unroll hints the host compiler does not know.
# usage: emulate_source.sh IN.cu OUT
dir=$(dirname "$1")
while IFS= read -r line || [ -n "$line" ]; do
  header=$(printf '%s\n' "$line" | sed -n 's/^#include "\([^"]*\)".*/\1/p')
  if [ -n "$header" ] && [ -f "$dir/$header" ]; then
    "$0" "$dir/$header" /dev/stdout # a local header, with its own includes
  elif [ -n "$header" ] && [ -f "$dir/../$header" ]; then
    "$0" "$dir/../$header" /dev/stdout # kernels/*_args.h, shared with OpenCL: their own includes
  elif [ -n "$header" ] && [ -f "$header" ]; then
    "$0" "$header" /dev/stdout # from the workspace root: base/float_formats.h
  else
    printf '%s\n' "$line"
  fi
done < "$1" |
  sed -e '/^ *#pragma unroll/d' \
      -e 's/extern __shared__ float \([a-z_]*\)\[\];/float *\1 = xr_emu_dynamic_shared;/' \
      -e 's/__shared__/static/g' > "$2"
