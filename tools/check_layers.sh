#!/usr/bin/env bash
# Checks the one-way layering of DESIGN.md, from the workspace root (.ci/run calls it):
#   base <- hal <- kernels <- replay        base <- model <- kernels, codecs
# 1. Bazel: //kernels reaches no codec library (cJSON, msgpack-c, zlib); //hal and //base reach
#    no other xreplay target; //formats:model reaches //base only; //replay no codec library
#    but cJSON (its reports); //replay:history only reports read back and SQLite.
# 2. Sources: each layer's files include headers of the layers below it only.
# Prints every violation and exits 1 when there is one.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
violation() {
  echo "layering: $*" >&2
  status=1
}

# 1. Bazel dependencies.
query() { ./bazelw query --noshow_progress "$1" 2>/dev/null; }
check_deps() { # target, allowed-label regex, what (rules only: a library's own files are its own)
  local bad
  bad=$(query "kind(rule, deps($1))" | grep -E '^(//|@)' |
        grep -vE '^@(bazel_tools|local_config_[a-z_]+|rules_cc|rules_java)//' | grep -vE "$2")
  [[ -z "$bad" ]] || violation "$1 depends on $3: $(echo $bad)"
}
check_deps //base '^//base:' "targets above base/"
check_deps //hal '^//(base|hal):' "targets above the HAL"
check_deps //formats:model '^//(base:|formats:model)' "more than base/"
check_deps //kernels '^//(base|hal|formats:model|kernels)' "a codec or a layer above it"
check_deps //replay '^(//(base|hal|formats:model|kernels|replay)|@cjson//)' "a codec or a layer above it"
# The history of runs reads reports back and needs no engine (replay/history.h).
check_deps //replay:history '^(//(base|replay:(history|report_read))|@(cjson|sqlite3)//)' "the engine"

# 2. #include "..." lines against the layer of the file that includes.
layer_of() {
  case "$1" in
    base/*) echo base ;;
    hal/*) echo hal ;;
    formats/model.*) echo model ;;
    formats/*) echo codecs ;;
    kernels/*) echo kernels ;;
    replay/*) echo replay ;;
    *) echo other ;;
  esac
}
declare -A allowed=(
  [base]="base"
  [hal]="base hal"
  [model]="base model"
  [codecs]="base model codecs"
  [kernels]="base hal model kernels"
  [replay]="base hal model kernels replay"
)
while IFS=: read -r file line include; do
  include=${include#*\"}
  include=${include%%\"*}
  [[ "$include" == */* ]] || continue # a header beside the file (device sources)
  from=$(layer_of "$file") to=$(layer_of "$include")
  [[ " ${allowed[$from]} " == *" $to "* ]] || violation "$file:$line: the $from layer includes $include ($to)"
done < <(grep -rnE '^#include "' base hal formats kernels replay)

[[ $status -eq 0 ]] && echo "layering: base <- hal <- kernels <- replay, base <- model <- codecs: ok"
exit $status
