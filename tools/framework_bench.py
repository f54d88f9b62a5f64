#!/usr/bin/env python3
"""The replay beside the framework, op by op, on one CPU.

usage: tools/framework_bench.py BUNDLE_OR_IR [--rounds N] [--warmup N] [--iters N]
                                [--replay PATH] [--op-filter TEXT] [--keep DIR]

Times every op of BUNDLE_OR_IR (an xreplay bundle or TraceLens EventReplay IR) through PyTorch
eager (tools/torch_baseline.py) and through the replay (`replay --hal=cpu`), in alternating
rounds: torch then replay in odd rounds, replay then torch in even ones, so that a machine that
warms up or gets busier over the run does not favour one side. Both take the same warm-up and
timed iterations (50 and 100 by default); contents are each side's own fills. Per op it prints each
side's median over the rounds (their range) and the ratio torch / replay (> 1: the replay is
faster), the median of the rounds' ratios with their range; an op whose ratios all lie below 1
is marked SLOWER, one whose range holds 1 is marked ~. The reports stay in --keep DIR when given
(torch.N.json, replay.N.json: `replay compare` and `replay report` read them).

Exit codes: 0 done; 2 usage or input error; 3 torch or the replay could not run.
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def replay_binary(given):
    for path in (given, os.path.join(HERE, "replay"),
                 os.path.join(HERE, "..", "bazel-bin", "tools", "replay"), shutil.which("replay")):
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise SystemExit("framework_bench: no replay binary: build //tools:replay or give --replay PATH")


def run(cmd):
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode not in (0, 1):  # 1: some op failed, which the table shows
        sys.stderr.write(done.stdout[-2000:] + done.stderr[-2000:])
        raise SystemExit(3 if done.returncode == 3 else 2)


def medians(path):
    """index -> (name, args, median_us) of the ops that ran, from a report."""
    with open(path) as f:
        report = json.load(f)
    return {op["index"]: (op["name"], op.get("args", ""), op["median_us"])
            for op in report.get("ops", []) if op.get("outcome") == "ok"}


def span(values, fmt):
    lo, hi = min(values), max(values)
    return fmt % statistics.median(values) + (" [" + fmt % lo + "–" + fmt % hi + "]" if len(values) > 1 else "")


def main(argv):
    p = argparse.ArgumentParser(prog="framework_bench.py", description=__doc__.split("\n\n")[0])
    p.add_argument("bundle", metavar="BUNDLE_OR_IR")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--replay", metavar="PATH")
    p.add_argument("--op-filter", metavar="TEXT")
    p.add_argument("--keep", metavar="DIR", help="keep the reports here")
    args = p.parse_args(argv)
    if args.rounds < 1 or args.warmup < 0 or args.iters < 1:
        p.error("--rounds and --iters must be at least 1, --warmup at least 0")
    if not os.path.isfile(args.bundle):
        p.error("%s: no such file" % args.bundle)
    replay = replay_binary(args.replay)
    out = args.keep or tempfile.mkdtemp(prefix="framework_bench.")
    os.makedirs(out, exist_ok=True)
    common = ["--warmup=%d" % args.warmup, "--iters=%d" % args.iters]
    if args.op_filter:
        common.append("--op-filter=%s" % args.op_filter)
    torch_cmd = [sys.executable, os.path.join(HERE, "torch_baseline.py"), args.bundle,
                 "--replay", replay, "--warmup", str(args.warmup), "--iters", str(args.iters)] + \
        (["--op-filter", args.op_filter] if args.op_filter else [])
    # The replay's stop rule is the iteration count, as torch's: the same timed executions.
    replay_cmd = [replay, "--hal=cpu", "--stop=iters"] + common
    rounds = []
    for r in range(args.rounds):
        t, x = os.path.join(out, "torch.%d.json" % r), os.path.join(out, "replay.%d.json" % r)
        steps = [(torch_cmd + ["-o", t]), (replay_cmd + ["--report=" + x, args.bundle])]
        for cmd in steps if r % 2 == 0 else reversed(steps):
            run(cmd)
        rounds.append((medians(t), medians(x)))
        print("round %d of %d done" % (r + 1, args.rounds), file=sys.stderr, flush=True)

    indices = sorted(set().union(*(set(t) | set(x) for t, x in rounds)))
    print("%4s %-34s %-40s %22s %22s %22s" % ("op", "name", "args", "torch us", "replay us",
                                               "torch / replay"))
    ratios_all, slower, both = [], 0, 0
    for i in indices:
        pairs = [(t[i][2], x[i][2]) for t, x in rounds if i in t and i in x]
        name, shapes = next((s[i][0], s[i][1]) for pair in rounds for s in pair if i in s)
        shapes = shapes if len(shapes) <= 40 else shapes[:37] + "..."
        if not pairs:
            ran = "torch only" if any(i in t for t, _ in rounds) else "replay only"
            print("%4d %-34s %-40s %s" % (i, name[:34], shapes, ran))
            continue
        both += 1
        ratios = [a / b for a, b in pairs if b > 0]
        mark = "SLOWER" if max(ratios) < 1 else "~" if min(ratios) < 1 else ""
        slower += mark == "SLOWER"
        ratios_all.append(statistics.median(ratios))
        print("%4d %-34s %-40s %22s %22s %22s %s" % (
            i, name[:34], shapes, span([a for a, _ in pairs], "%.1f"),
            span([b for _, b in pairs], "%.1f"), span(ratios, "%.2fx"), mark))
    if ratios_all:
        geo = math.exp(sum(math.log(r) for r in ratios_all) / len(ratios_all))
        print("%d ops ran on both sides over %d rounds: geometric mean of the median ratios %.2fx; "
              "%d at or above 1.0x, %d SLOWER in every round" % (
                  both, args.rounds, geo, sum(r >= 1 for r in ratios_all), slower))
    if not args.keep:
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
