#!/bin/bash
# Replays BUNDLE in N shards on N nodes of a Slurm cluster, then merges their reports:
#
#   examples/slurm/submit.sh N BUNDLE OUTDIR [REPLAY OPTIONS...]
#
# Submits replay.sbatch as an array of N tasks and merge.sbatch depending on it (afterok), and
# prints both job IDs. OUTDIR, on a file system every node sees, receives report.<task>.json per
# shard, the jobs' output (slurm-<job>_<task>.out, slurm-<job>.out) and, at the end,
# report.json. XR_REPLAY names the replay binary (default: replay on the PATH); sbatch's own
# environment variables (SBATCH_PARTITION, SBATCH_ACCOUNT, SBATCH_GPUS_PER_NODE, ...) apply to
# both jobs.
set -euo pipefail
if [[ $# -lt 3 || ! "$1" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 N BUNDLE OUTDIR [REPLAY OPTIONS...]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
shards=$1 bundle=$2 outdir=$3
shift 3
mkdir -p "$outdir"
array=$(sbatch --parsable --array="0-$((shards - 1))" --output="$outdir/slurm-%A_%a.out" \
  "$here/replay.sbatch" "$bundle" "$outdir" "$@")
array=${array%%;*} # "id;cluster" on a multi-cluster installation
merge=$(sbatch --parsable --dependency="afterok:$array" --output="$outdir/slurm-%j.out" \
  "$here/merge.sbatch" "$outdir")
merge=${merge%%;*}
echo "replay: array job $array ($shards shards), merge job $merge: $outdir/report.json"
