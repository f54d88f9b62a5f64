#!/bin/sh
# Bazel's workspace status (.bazelrc): the commit a build comes from, stamped into
# `replay --version` by //tools:build_info_h. "-dirty" when the tree differs from it; "unknown"
# outside a git checkout.
commit=$(git rev-parse --short=12 HEAD 2>/dev/null) || commit=unknown
if [ "$commit" != unknown ] && ! git diff --quiet HEAD -- 2>/dev/null; then
  commit="$commit-dirty"
fi
echo "STABLE_XR_COMMIT $commit"
