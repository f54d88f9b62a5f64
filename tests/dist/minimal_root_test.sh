#!/usr/bin/env bash
# The release and the GPU kit on a machine that has nothing of ours: a minimal Debian 12 root
# (debootstrap --variant=minbase, from the archive apt uses here), with the kit unpacked into
# it twice, once under a path with spaces. Inside the root (chroot):
#   1. every binary and library of the kit resolves all its libraries (ldd: no "not found");
#   2. the shipped examples replay on cpu with --check;
#   3. check.sh cpu RESULT_DIR runs its steps and writes summary.md / summary.json, every step
#      passed (or skipped where this root has no compiler, say);
#   4. a suite that fails (a stand-in for cts_cpu) makes check.sh exit 1 with that step FAIL and
#      its counts in the summary.
# The root is cached as a tarball in /var/cache/xreplay (XR_MINROOT_CACHE) between runs.
# Needs root (debootstrap, chroot, mounts). .ci/run runs it; by hand:
#   tests/dist/minimal_root_test.sh [KIT_DIR]     (default: builds one with tools/gpu_kit.sh)
# Prints "minimal_root: N passed, N failed" and exits 1 on any failure.
set -uo pipefail
cd "$(dirname "$0")/../.."

passed=0
failed=0
ok() { echo "minimal_root: ok: $*"; passed=$((passed + 1)); }
not_ok() { echo "minimal_root: FAILED: $*" >&2; failed=$((failed + 1)); }
finish() {
  echo "minimal_root: $passed passed, $failed failed"
  ((failed == 0))
  exit
}

if [[ $(id -u) -ne 0 ]]; then
  echo "minimal_root: needs root (debootstrap, chroot)" >&2
  exit 2
fi
work=$(mktemp -d /tmp/xreplay-minroot-XXXXXX)
root=$work/root
mounted=()
cleanup() {
  local m
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

# ---- the kit ----------------------------------------------------------------------------------
kit=${1:-}
if [[ -z $kit ]]; then
  kit=$work/kit
  if ! tools/gpu_kit.sh "$kit" >"$work/kit.log" 2>&1; then
    tail -n 20 "$work/kit.log" >&2
    not_ok "tools/gpu_kit.sh failed"
    finish
  fi
fi
ok "kit built: $(du -sm "$kit" | cut -f1) MiB"

# ---- the root ---------------------------------------------------------------------------------
# The Debian archive apt uses here (deb822 or one-line sources).
mirror=$(awk '/^URIs:/ { uri = $2 } /^Suites:/ && / bookworm( |$)/ { print uri; exit }' \
           /etc/apt/sources.list.d/*.sources 2>/dev/null)
[[ -n $mirror ]] || mirror=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' \
                               /etc/apt/sources.list 2>/dev/null)
mirror=${mirror:-http://deb.debian.org/debian}
cache_dir=${XR_MINROOT_CACHE:-/var/cache/xreplay}
cache=$cache_dir/minbase-bookworm.tar.gz
mkdir -p "$root" "$cache_dir"
if [[ ! -s $cache ]]; then
  echo "minimal_root: debootstrap --variant=minbase bookworm from $mirror (cached in $cache)"
  if ! debootstrap --variant=minbase bookworm "$work/fresh" "$mirror" >"$work/debootstrap.log" 2>&1; then
    tail -n 20 "$work/debootstrap.log" >&2
    not_ok "debootstrap failed"
    finish
  fi
  tar -C "$work/fresh" -czf "$cache.part" . && mv "$cache.part" "$cache"
  rm -rf "$work/fresh"
fi
tar -C "$root" -xzf "$cache" || { not_ok "unpacking $cache"; finish; }
for fs in proc sys dev; do
  mkdir -p "$root/$fs"
  case $fs in
    proc) mount -t proc proc "$root/proc" ;;
    *) mount --rbind "/$fs" "$root/$fs" && mount --make-rslave "$root/$fs" ;;
  esac && mounted+=("$root/$fs")
done
ok "minimal root: $(cat "$root/etc/debian_version"), $(du -sm "$root" --exclude=proc --exclude=sys --exclude=dev 2>/dev/null | cut -f1) MiB"

inside() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }

# Nothing of ours may be in the root: the kit must bring it.
for library in libcjson.so.1 libmsgpackc.so.2 libcriterion.so.3 libOpenCL.so.1 libdnnl.so.2; do
  if inside /sbin/ldconfig -p | grep -q "$library"; then
    not_ok "the minimal root already has $library"
  fi
done

# ---- the checks, under a plain path and under one with spaces --------------------------------
for place in "/opt/xreplay" "/opt/x replay kit"; do
  mkdir -p "$root$place"
  cp -a "$kit/." "$root$place/"
  label="under '$place'"

  missing=$(inside /bin/bash -c 'cd "$1" && for f in bin/* tests/* lib/*.so*; do
                                   ldd "$f" 2>&1 | sed -n "s|^|$f: |; /not found/p"; done' \
              _ "$place")
  [[ -z $missing ]] && ok "$label: every binary resolves its libraries" ||
    not_ok "$label: unresolved libraries: $missing"

  version=$(inside "$place/bin/replay" --version 2>&1)
  [[ $version == "replay (xreplay) "*", commit "* ]] && ok "$label: $version" ||
    not_ok "$label: replay --version said: $version"

  for example in llm_small.msgpack allreduce_tp2.json; do
    args=(--hal=cpu --check --warmup=1 --iters=3)
    [[ $example == allreduce* ]] && args+=(--scale-collectives)
    if out=$(inside "$place/bin/replay" "${args[@]}" "$place/share/xreplay/examples/$example" 2>&1); then
      ok "$label: replay --check $example: $(grep -m1 'summary' <<<"$out")"
    else
      not_ok "$label: replay --check $example: $(tail -n 5 <<<"$out")"
    fi
  done

  results="$place/results"
  inside "$place/check.sh" cpu "$results" --budget=240 >"$work/check.log" 2>&1
  rc=$?
  summary=$root$results/summary.json
  if [[ ! -s $summary || ! -s $root$results/summary.md || ! -s $root$results/logs.tar.gz ]]; then
    not_ok "$label: check.sh cpu wrote no summary (exit $rc): $(tail -n 5 "$work/check.log")"
    continue
  fi
  bad=$(grep -o '"name": "[^"]*", "result": "\(FAIL\|TIMEOUT\)"' "$summary")
  steps=$(grep -o '"result": "PASS"' "$summary" | wc -l)
  if [[ $rc -eq 0 && -z $bad && $steps -ge 4 ]]; then
    ok "$label: check.sh cpu: $steps steps passed"
  else
    not_ok "$label: check.sh cpu exited $rc; $steps passed; not passed: ${bad:-none}"
    sed -n '/^| step/,/^$/p' "$root$results/summary.md" >&2
  fi
done

# A failing suite is reported as one: a stand-in cts_cpu that prints Criterion's lines for one
# passing and one failing case.
place=/opt/xreplay
cat >"$root$place/tests/cts_cpu" <<'EOF_SUITE'
#!/bin/sh
echo "[FAIL] stand_in::fails: (0.00s)"
echo "[====] Synthesis: Tested: 2 | Passing: 1 | Failing: 1 | Crashing: 0"
exit 1
EOF_SUITE
inside "$place/check.sh" cpu "$place/failing" --part=1 >"$work/check.log" 2>&1
rc=$?
row=$(grep -o '{"name": "cts_cpu", "result": "[A-Z]*", "passed": [0-9]*, "failed": [0-9]*' \
        "$root$place/failing/summary.json")
if [[ $rc -eq 1 && $row == *'"result": "FAIL", "passed": 1, "failed": 1'* ]]; then
  ok "a failing suite: check.sh cpu exits 1, cts_cpu FAIL with 1 passed, 1 failed"
else
  not_ok "a failing suite: check.sh cpu exited $rc; its row: ${row:-none}"
fi
finish
