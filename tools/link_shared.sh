#!/bin/sh
# Links an installable shared library from whole layers: every object of the given static
# archives, against the shared libraries below it, with no undefined symbol left (so a layer
# that needs a library it does not name fails here, not in a user's program).
# usage: link_shared.sh CC OUT SONAME -- FILE... -- LINKOPT...
#   FILE: a layer's outputs (its .a is taken whole; anything else is ignored) or one of our
#         shared libraries (lib*.so.N, linked by name, found beside the output at run time).
set -eu
cc=$1 out=$2 soname=$3
shift 4
archives= libraries=
while [ "$1" != -- ]; do
  case "$1" in
    *.a) archives="$archives $1" ;;
    *.so.[0-9]*) libraries="$libraries -L$(dirname "$1") -l:$(basename "$1")" ;;
  esac
  shift
done
shift
# shellcheck disable=SC2086 # word splitting is wanted
$cc -shared -o "$out" -Wl,-soname,"$soname" -Wl,--no-undefined -Wl,--as-needed \
  -Wl,-rpath,'$ORIGIN' -Wl,--whole-archive $archives -Wl,--no-whole-archive $libraries "$@"
