#!/usr/bin/env python3
"""The framework baseline: each op of a bundle timed with the installed PyTorch.

usage: tools/torch_baseline.py BUNDLE_OR_IR [--device cpu|cuda[:N]] [--warmup N] [--iters N]
                               [--seed N] [--op-filter TEXT] [--op-limit N] [--replay PATH]
                               -o REPORT.json

BUNDLE_OR_IR is an xreplay bundle (our JSON or MessagePack) or TraceLens EventReplay IR: the
replay binary reads it (`replay convert` to our JSON: one set of codecs, formats/, with their
validation and error sentences), so it must be at hand, beside this script as in the release's
bin/, or named with --replay. Each op gets tensors of the
recorded shapes, strides, storage offsets and dtypes (as_strided views of a storage large enough),
the recorded scalars and lists, and is called through torch's dispatcher:
`torch.ops.<namespace>.<name>` from the op name (`aten::addmm`; `aten::add.Tensor` names the
overload), torch's own schema matching choosing the overload; positional arguments in order,
keyword ones by their names. One first execution, --warmup more, then --iters timed ones:
torch.cuda.Event pairs on GPUs, time.perf_counter_ns on the CPU. The median and the other figures
go to REPORT.json in the replay's own report format (replay/report.c), with `hal` "torch-cpu",
"torch-cuda" (or "torch-hip" for a ROCm build) and each op's kernel "torch <version>", so that

    replay compare torch.json replay.cpu.json
    replay report torch.json replay.cpu.json -o page.html

set the framework beside the replay op by op. An op torch cannot run (no such op, no kernel for
the device or dtype, arguments its schemas refuse) is `unsupported`, with torch's own exception
text as the message.

Contents: floats N(0, 1) (U(-1, 1), zeros or ones when the bundle's `init` says so); integer
tensors uniform in [0, B), B the smallest positive dimension of the op's tensors, so that
index-like arguments stay in range; bools 0/1; outputs (`init: null`) zeros; fp4 pairs random
bytes, e8m0 scales powers of two near 1. Recorded contents (`.npy` files, embedded bytes) are
not loaded: such tensors get the plain fill, and the op's `init_policy` in the report says so.
The replay's per-op custom initializers (paged attention's sequence lengths, MoE routings) have
no counterpart here. Arguments marked `defaulted` (and TraceLens' "" strings) are left to
torch's own defaults. An op whose storages exceed the memory available is unsupported ("does
not fit"), as in the replay, before anything is allocated.

Exit codes, as `replay`'s: 0 every op ran or was unsupported; 2 usage or input error (the
message names the file and the field); 3 torch or the device is unavailable. Needs torch
(Debian: python3-torch).
"""
import argparse
import datetime
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

REPORT_VERSION = 2  # replay/report.h XR_REPORT_VERSION

# base/dtype_table.h: profiler spelling -> (short name, torch dtype attribute, class, bytes).
DTYPES = {
    "float": ("f32", "float32", "float", 4),
    "double": ("f64", "float64", "float", 8),
    "c10::Half": ("f16", "float16", "float", 2),
    "c10::BFloat16": ("bf16", "bfloat16", "float", 2),
    "c10::Float8_e4m3fn": ("f8e4m3fn", "float8_e4m3fn", "float", 1),
    "c10::Float8_e5m2": ("f8e5m2", "float8_e5m2", "float", 1),
    "c10::Float8_e4m3fnuz": ("f8e4m3fnuz", "float8_e4m3fnuz", "float", 1),
    "c10::Float8_e5m2fnuz": ("f8e5m2fnuz", "float8_e5m2fnuz", "float", 1),
    "signed char": ("i8", "int8", "int", 1),
    "short int": ("i16", "int16", "int", 2),
    "int": ("i32", "int32", "int", 4),
    "long int": ("i64", "int64", "int", 8),
    "unsigned char": ("u8", "uint8", "int", 1),
    "unsigned short": ("u16", "uint16", "int", 2),
    "unsigned int": ("u32", "uint32", "int", 4),
    "unsigned long": ("u64", "uint64", "int", 8),
    "bool": ("bool", "bool", "bool", 1),
    "c10::Float4_e2m1fn_x2": ("f4e2m1x2", "float4_e2m1fn_x2", "mx", 1),
    "c10::Float8_e8m0fnu": ("f8e8m0", "float8_e8m0fnu", "mx", 1),
}
# base/dtype.c's other spellings (compared without regard to case).
DTYPE_ALIASES = {
    "float32": "float", "fp32": "float", "float64": "double", "half": "c10::Half",
    "float16": "c10::Half", "fp16": "c10::Half", "bfloat16": "c10::BFloat16",
    "float8_e4m3fn": "c10::Float8_e4m3fn", "float8_e5m2": "c10::Float8_e5m2",
    "float8_e4m3fnuz": "c10::Float8_e4m3fnuz", "float8_e5m2fnuz": "c10::Float8_e5m2fnuz",
    "float4_e2m1fn_x2": "c10::Float4_e2m1fn_x2", "float8_e8m0fnu": "c10::Float8_e8m0fnu",
    "int8": "signed char", "char": "signed char", "short": "short int", "int16": "short int",
    "int32": "int", "long": "long int", "int64": "long int", "long long": "long int",
    "uint8": "unsigned char", "uint16": "unsigned short", "unsigned short int": "unsigned short",
    "uint32": "unsigned int", "uint64": "unsigned long", "unsigned long int": "unsigned long",
}


class InputError(Exception):
    """A bad bundle or option: the message names the file and the field (exit 2)."""


class Unavailable(Exception):
    """torch or the device asked for is not there (exit 3)."""


class Unsupported(Exception):
    """An op this torch cannot run; the message says why."""


def parse_dtype(text):
    """The profiler spelling of a dtype name as base/dtype.c reads it, or None."""
    if text.startswith("torch."):
        text = text[6:]
    for name, (short, *_) in DTYPES.items():
        if text == name or (name.startswith("c10::") and text == name[5:]) \
                or text.lower() == short:
            return name
    return DTYPE_ALIASES.get(text.lower())


# ------------------------------------------------------------------------------------------
# Reading bundles: our JSON, as `replay convert` writes any bundle.

class Tensor:
    """A tensor spec: shape, strides, storage offset and size, dtype, init, recorded contents."""

    def __init__(self, shape, strides, offset, storage_size, dtype, init, contents):
        self.shape, self.strides, self.offset = shape, strides, offset
        self.storage_size, self.dtype = storage_size, dtype
        self.init, self.contents = init, contents

    def extent(self):
        """Elements of the storage the view needs (docs/bundle-format.md)."""
        if any(d == 0 for d in self.shape):
            return 0
        need = self.offset + 1 + sum((d - 1) * s for d, s in zip(self.shape, self.strides))
        return max(need, self.storage_size or 0)

    def contiguous(self):
        expected = 1
        for d, s in reversed(list(zip(self.shape, self.strides))):
            if d != 1 and s != expected:
                return False
            expected *= max(d, 1)
        return True


class Arg:
    def __init__(self, name, type_, value, defaulted):
        self.name, self.type, self.value, self.defaulted = name, type_, value, defaulted


class Op:
    def __init__(self, name, args, kwargs, count, gpu_time_us):
        self.name, self.args, self.kwargs = name, args, kwargs
        self.count, self.gpu_time_us = count, gpu_time_us


def contiguous_strides(shape):
    strides, step = [], 1
    for d in reversed(shape):
        strides.insert(0, step)
        step *= max(d, 1)
    return strides


def tensor_of(v):
    dtype = parse_dtype(v["dtype"])
    if dtype is None:  # the C dtype table has one this script's DTYPES lacks
        raise InputError("dtype %s is not in torch_baseline.py's table" % v["dtype"])
    contents = None
    if v.get("data"):
        contents = "data file %s" % v["data"]
    elif v.get("data_base64"):
        contents = "embedded contents"
    shape = v["shape"]
    return Tensor(shape, v.get("strides") or contiguous_strides(shape),
                  v.get("storage_offset", 0), v.get("storage_size"), dtype,
                  v.get("init", "default"), contents)  # init null: an output


def value_of(v):
    if isinstance(v, list):
        return [value_of(e) for e in v]
    return tensor_of(v) if isinstance(v, dict) else v


def op_of(o):
    def args(key):
        return [Arg(a.get("name"), a.get("type"), value_of(a["value"]), a.get("defaulted") is True)
                for a in o.get(key, [])]
    timing = o.get("timing") or {}
    return Op(o["name"], args("args"), args("kwargs"), o.get("count", 1),
              timing.get("gpu_time_us"))


def replay_binary(explicit):
    """The replay beside this script (the release's bin/, Bazel's runfiles), else a checkout's
    bazel-bin, else the PATH's."""
    if explicit:
        return explicit
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "replay"),
                      os.path.join(here, "..", "bazel-bin", "tools", "replay")):
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("replay")
    if not found:
        raise InputError("no replay binary beside %s, in bazel-bin or on PATH: pass --replay PATH"
                         % __file__)
    return found


def read_bundle(file, replay):
    """(ops, metadata) of a bundle in any format the replay reads: `replay convert` (the C codecs
    of formats/, which validate it and name the file and field of any problem) writes it as our
    JSON, and only that is read here."""
    with tempfile.TemporaryDirectory() as tmp:
        converted = os.path.join(tmp, "bundle.json")
        try:
            done = subprocess.run([replay, "convert", file, converted, "--to=json"],
                                  capture_output=True, text=True)
        except OSError as e:
            raise InputError("cannot run %s to read %s: %s" % (replay, file, e.strerror))
        if done.returncode != 0:
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            message = lines[-1] if lines else "replay convert exited %d" % done.returncode
            raise InputError(message[len("replay: "):] if message.startswith("replay: ")
                             else message)
        with open(converted) as f:
            root = json.load(f)
    return [op_of(o) for o in root["ops"]], root.get("metadata") or {}


# ------------------------------------------------------------------------------------------
# The args line, as xr_op_describe_args writes it (formats/model.c).

def describe(v):
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        text = "%.6g" % v
        return text if any(c in text for c in ".eEna") else text + ".0"
    if isinstance(v, str):
        return "'%s'" % v
    if isinstance(v, list):
        return "[" + ", ".join(describe(e) for e in v) + "]"
    text = "%s[%s]" % (DTYPES[v.dtype][0], ",".join(str(d) for d in v.shape))
    if not v.contiguous():
        text += "{%s}" % ",".join(str(s) for s in v.strides)
    return text + ("+%d" % v.offset if v.offset else "")


def describe_args(op):
    return " ".join(("%s=" % a.name if a.name else "") + describe(a.value)
                    for a in op.args + op.kwargs)


# ------------------------------------------------------------------------------------------
# Running an op with torch.

def tensors_in(v):
    if isinstance(v, Tensor):
        yield v
    elif isinstance(v, list):
        for e in v:
            yield from tensors_in(e)


class Builder:
    """Turns an op's recorded values into torch values on one device."""

    def __init__(self, torch, device, generator, op):
        self.torch, self.device, self.gen, self.notes = torch, device, generator, []
        dims = [d for a in op.args + op.kwargs for t in tensors_in(a.value)
                for d in t.shape if d > 0]
        self.int_bound = min(dims) if dims else 1

    def dtype(self, name):
        dt = getattr(self.torch, DTYPES[name][1], None)
        if not isinstance(dt, self.torch.dtype):
            raise Unsupported("torch %s has no dtype %s" % (self.torch.__version__, name))
        return dt

    def tensor(self, t, arg_name):
        torch, n, kind_ = self.torch, t.extent(), DTYPES[t.dtype][2]
        dtype = self.dtype(t.dtype)
        if t.contents:
            self.notes.append("%s: %s not loaded, filled plainly" % (arg_name, t.contents))
        if kind_ == "float":
            if t.init in (None, "zeros"):
                base = torch.zeros(n)
            elif t.init == "ones":
                base = torch.ones(n)
            elif t.init == "uniform":
                base = torch.rand(n, generator=self.gen) * 2 - 1
            else:
                base = torch.randn(n, generator=self.gen)
        elif kind_ == "mx":  # fp4 pairs: any byte; e8m0 scales: powers of two near 1
            low, high = (0, 256) if DTYPES[t.dtype][0] == "f4e2m1x2" else (125, 130)
            bits = torch.randint(low, high, (n,), generator=self.gen, dtype=torch.uint8)
            return bits.to(self.device).view(dtype).as_strided(t.shape, t.strides, t.offset)
        elif t.init in (None, "zeros", "ones"):
            base = (torch.ones if t.init == "ones" else torch.zeros)(n, dtype=torch.int64)
        else:
            hi = 2 if kind_ == "bool" else min(self.int_bound, int_max(torch, dtype) + 1)
            base = torch.randint(0, max(hi, 1), (n,), generator=self.gen, dtype=torch.int64)
        base = base.to(dtype).to(self.device)
        return base.as_strided(t.shape, t.strides, t.offset)

    def value(self, arg, v):
        if isinstance(v, Tensor):
            return self.tensor(v, arg.name or "?")
        if isinstance(v, list):
            return [self.value(arg, e) for e in v]
        type_ = arg.type or ""
        if v is None and "Tensor[]" in type_:
            raise Unsupported("%s: a Tensor[] whose value is null (the trace did not record the "
                              "list): its shapes are unknown" % (arg.name or "?"))
        if isinstance(v, str) and type_.startswith("Device"):
            return self.device
        if isinstance(v, str) and type_.startswith("ScalarType") and parse_dtype(v):
            return self.dtype(parse_dtype(v))
        return v


def int_max(torch, dtype):
    return torch.iinfo(dtype).max if dtype != torch.bool else 1


def resolve(torch, name):
    """torch.ops.<namespace>.<name>[.<overload>]; torch's own exception when it has none."""
    if "::" not in name:
        raise Unsupported("op name '%s' has no namespace (namespace::name)" % name)
    namespace, rest = name.split("::", 1)
    op_name, _, overload = rest.partition(".")
    try:
        packet = getattr(getattr(torch.ops, namespace), op_name)
        return getattr(packet, overload) if overload else packet
    except Exception as e:
        raise Unsupported(first_line(e))


def first_line(e):
    """An exception's own text: its first line (torch's long lists of backends follow), with the
    lines after it when it ends with a colon (schema matching's reasons); at most 1023
    characters, the replay's own limit."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()] or [type(e).__name__]
    text = " ".join(lines) if lines[0].endswith(":") else lines[0]
    return text if len(text) < 1024 else text[:1020] + "..."


def host_available():
    """MemAvailable in bytes, or None where /proc/meminfo does not say."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_fits(torch, device, op):
    """Unsupported, as the replay's "does not fit", when the op's storages (plus the largest one's
    fill, made on the host in 32 or 64 bits) exceed the memory available, rather than meeting
    the OOM killer."""
    tensors = [t for a in op.args + op.kwargs for t in tensors_in(a.value)]
    stored = sum(t.extent() * DTYPES[t.dtype][3] for t in tensors)
    fill = max([t.extent() * 8 for t in tensors] or [0])
    on_gpu = device.type == "cuda"
    needs = [("host", fill * 2 if on_gpu else stored + fill, host_available())]
    if on_gpu:
        needs.append(("device", stored, torch.cuda.mem_get_info(device)[0]))
    for where, need, available in needs:
        if available is not None and need > available:
            raise Unsupported("does not fit: its tensors need %.2f GiB of %s memory, %.2f GiB "
                              "available" % (need / 2**30, where, available / 2**30))


def call_of(torch, device, generator, op):
    """A function calling the op with fresh tensors, and the notes on what was not honoured."""
    fn = resolve(torch, op.name)
    check_fits(torch, device, op)
    b = Builder(torch, device, generator, op)
    positional, keywords, by_name = [], {}, False
    for i, a in enumerate(op.args):
        if a.defaulted:
            by_name = True  # left to torch's default: the arguments after it go by name
        elif not by_name:
            positional.append(b.value(a, a.value))
        elif a.name:
            keywords[a.name] = b.value(a, a.value)
        else:
            raise Unsupported("args[%d] has no name and follows a defaulted argument" % i)
    for i, a in enumerate(op.kwargs):
        if a.defaulted:
            continue
        if not a.name:
            raise Unsupported("kwargs[%d] has no name" % i)
        keywords[a.name] = b.value(a, a.value)
    return (lambda: fn(*positional, **keywords)), b.notes


# ------------------------------------------------------------------------------------------
# Timing and statistics.

def sample_times(torch, device, call, warmup, iters):
    """Per-iteration microseconds after one first execution and `warmup` more; wall ms."""
    cuda = device.type == "cuda"
    sync = (lambda: torch.cuda.synchronize(device)) if cuda else (lambda: None)
    for _ in range(1 + warmup):
        call()
    sync()
    wall = time.perf_counter_ns()
    if cuda:
        events = []
        for _ in range(iters):
            start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
            start.record()
            call()
            end.record()
            events.append((start, end))
        sync()
        samples = [s.elapsed_time(e) * 1e3 for s, e in events]
    else:
        samples = []
        for _ in range(iters):
            t = time.perf_counter_ns()
            call()
            samples.append((time.perf_counter_ns() - t) / 1e3)
    return samples, (time.perf_counter_ns() - wall) / 1e6


def percentile(s, p):
    """Nearest rank, as replay/timing.c."""
    k = int(p / 100.0 * (len(s) - 1) + 0.5)
    return s[min(max(k, 0), len(s) - 1)]


def statistics_of(samples):
    s, n = sorted(samples), len(samples)
    median = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    out = {"iterations": n, "min_us": s[0], "median_us": median, "mean_us": sum(s) / n,
           "p10_us": percentile(s, 10), "p25_us": percentile(s, 25),
           "p75_us": percentile(s, 75), "p90_us": percentile(s, 90)}
    out["iqr_us"] = out["p75_us"] - out["p25_us"]
    return out


def same_model(a, b):
    """replay/trace_ratio.c's xr_trace_device_same_model."""
    def words(name):
        w = " ".join(name.split()).lower()
        for vendor in ("nvidia ", "amd "):
            if w.startswith(vendor):
                w = w[len(vendor):]
                break
        return w[:-3] if len(w) > 3 and w.endswith(" vf") else w
    return bool(a and b and words(a) and words(a) == words(b))


def trace_ratios(results, trace_device, device):
    """summary.replay_vs_trace over the ops timed with a recorded time, or None."""
    ratios = [(r["index"], r["name"], r["median_us"] / r["trace_us"]) for r in results
              if r["outcome"] == "ok" and r.get("trace_us", 0) > 0]
    if not ratios:
        return None
    values = sorted(x for _, _, x in ratios)
    n = len(values)
    out = {"trace_device": trace_device} if trace_device else {}
    out.update({
        "same_device": same_model(device, trace_device),
        "count": n,
        "median": values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2,
        "geomean": math.exp(sum(math.log(x) for x in values) / n),
        "within_10_percent": 100.0 * sum(0.9 <= x <= 1.1 for x in values) / n,
        "worst": [{"index": i, "name": name, "ratio": x} for i, name, x in
                  sorted(ratios, key=lambda t: (-abs(math.log(t[2])), t[0]))[:5]],
    })
    return out


# ------------------------------------------------------------------------------------------
# The report.

def open_device(torch, spec):
    """(torch.device, hal, device name, runtime version), or Unavailable."""
    try:
        device = torch.device(spec)
    except RuntimeError as e:
        raise InputError("--device: %s" % first_line(e))
    if device.type == "cpu":
        threads = torch.get_num_threads()
        return device, "torch-cpu", cpu_name(), "Python %s, %d thread%s" % (
            platform.python_version(), threads, "" if threads == 1 else "s")
    if device.type != "cuda":
        raise InputError("--device: %s: expected cpu or cuda[:N]" % spec)
    if not torch.cuda.is_available():
        raise Unavailable("--device %s: torch %s sees no CUDA/HIP device (built with %s)"
                          % (spec, torch.__version__, gpu_runtime(torch) or "no GPU runtime"))
    if device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    if device.index >= torch.cuda.device_count():
        raise Unavailable("--device %s: torch sees %d devices" % (spec, torch.cuda.device_count()))
    torch.cuda.set_device(device)  # the events record on this device's current stream
    hal = "torch-hip" if getattr(torch.version, "hip", None) else "torch-cuda"
    return device, hal, torch.cuda.get_device_name(device), gpu_runtime(torch)


def gpu_runtime(torch):
    if getattr(torch.version, "hip", None):
        return "HIP " + torch.version.hip
    return "CUDA " + torch.version.cuda if torch.version.cuda else ""


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def json_clean(v):
    """Non-finite figures as null, as replay/report.c writes them."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: json_clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [json_clean(x) for x in v]
    return v


def write_report(path, head, results, summary):
    """The whole document, replaced atomically: complete after every op, as the replay's."""
    doc = dict(head, ops=results, summary=summary)
    tmp = path + ".tmp"
    try:
        with open(tmp, "w") as f:
            json.dump(json_clean(doc), f, allow_nan=False)
            f.write("\n")
        os.replace(tmp, path)
    except OSError as e:
        raise InputError("%s: cannot write the report: %s" % (path, e.strerror))


def report_head(torch, args, metadata, op_count, hal, device_name, runtime):
    head = {"xreplay_report": REPORT_VERSION, "bundle": args.bundle, "bundle_ops": op_count}
    source = {k: metadata[m] for k, m in (("trace", "source_trace"), ("device", "device_name"))
              if isinstance(metadata.get(m), str)}
    if source:
        head["source"] = source
    head.update({
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "hal": hal, "device": device_name, "driver": "torch",
        "driver_version": torch.__version__, "runtime_version": runtime, "peaks": {},
    })
    options = {"warmup": args.warmup, "stop": "iterations", "iters": args.iters,
               "min_time_ms": 0, "launch": "eager", "seed": args.seed, "cache": "warm",
               "rotate": 1, "check": False, "ranks": 1}
    if args.op_filter is not None:
        options["op_filter"] = args.op_filter
    if args.op_limit is not None:
        options["op_limit"] = args.op_limit
    head["options"] = options
    return head


def run_op(torch, device, args, index, op):
    """One op's entry of the report."""
    r = {"index": index, "name": op.name, "args": describe_args(op), "count": op.count or 1,
         "outcome": "ok", "kernel": "torch " + torch.__version__}
    if op.gpu_time_us is not None and op.gpu_time_us >= 0:
        r["trace_us"] = op.gpu_time_us / (op.count if op.count and op.count > 0 else 1)
    generator = torch.Generator().manual_seed(args.seed * 1000003 + index)
    try:
        call, notes = call_of(torch, device, generator, op)
        if notes:
            r["init_policy"] = "; ".join(notes)
        with torch.no_grad():
            samples, wall_ms = sample_times(torch, device, call, args.warmup, args.iters)
    except KeyboardInterrupt:
        raise
    except Unsupported as e:
        return dict(r, outcome="unsupported", message=str(e))
    except Exception as e:  # torch's own refusal: no kernel, dtype, schema, memory
        return dict(r, outcome="unsupported", message=first_line(e))
    r.update(statistics_of(samples))
    r.update({"noise_met": False, "stop_reason": "iterations", "launch": "eager", "rotate": 1,
              "timed_wall_ms": wall_ms, "host_us_per_iteration": wall_ms * 1e3 / args.iters})
    if "trace_us" in r and r["trace_us"] > 0:
        r["replay_over_trace"] = r["median_us"] / r["trace_us"]
    return r


def summary_of(ops, results, cancelled, trace_device, device_name):
    def trace_total(op):
        return op.gpu_time_us if op.gpu_time_us is not None and op.gpu_time_us >= 0 else 0
    ok = [r for r in results if r["outcome"] == "ok"]
    s = {"total": len(ops), "attempted": len(results), "succeeded": len(ok),
         "failed": sum(r["outcome"] == "failed" for r in results),
         "unsupported": sum(r["outcome"] == "unsupported" for r in results),
         "cancelled": cancelled,
         "trace_total_us": sum(trace_total(op) for op in ops),
         "trace_covered_us": sum(trace_total(ops[r["index"]]) for r in ok)}
    ratios = trace_ratios(results, trace_device, device_name)
    if ratios:
        s["replay_vs_trace"] = ratios
    return s


def selected_ops(ops, op_filter, op_limit):
    chosen = [i for i, op in enumerate(ops) if op_filter is None or op_filter in op.name]
    return chosen if op_limit is None else chosen[:op_limit]


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="torch_baseline.py",
        description="Times each op of a bundle with the installed PyTorch and writes a replay "
                    "report (docs/replay.md) that `replay compare` and `replay report` read.")
    p.add_argument("bundle", metavar="BUNDLE_OR_IR")
    p.add_argument("-o", "--output", required=True, metavar="REPORT.json")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N] (default cpu)")
    p.add_argument("--warmup", type=int, default=3, help="untimed runs before timing (3)")
    p.add_argument("--iters", type=int, default=20, help="timed iterations (20)")
    p.add_argument("--seed", type=int, default=0, help="initialisation seed (0)")
    p.add_argument("--op-filter", metavar="TEXT", help="only ops whose name contains TEXT")
    p.add_argument("--op-limit", type=int, metavar="N", help="at most N ops")
    p.add_argument("--replay", metavar="PATH",
                   help="the replay binary that reads the bundle (default: the one beside this "
                        "script, a checkout's bazel-bin/tools/replay, or the PATH's)")
    args = p.parse_args(argv)  # exits 2 with argparse's own message on a usage error
    if args.warmup < 0 or args.iters < 1 or args.seed < 0 or \
            (args.op_limit is not None and args.op_limit < 0):
        p.error("--warmup, --seed and --op-limit must be at least 0, --iters at least 1")
    if not args.output.endswith(".json"):
        p.error("-o %s: the report is a .json file" % args.output)
    return args


def import_torch():
    try:
        import torch
    except ImportError as e:
        raise Unavailable("cannot import torch (%s): install PyTorch for %s (Debian: python3-torch "
                          "for /usr/bin/python3)" % (e, sys.executable))
    return torch


def main(argv):
    args = parse_args(argv)
    ops, metadata = read_bundle(args.bundle, replay_binary(args.replay))  # before torch
    torch = import_torch()
    device, hal, device_name, runtime = open_device(torch, args.device)
    head = report_head(torch, args, metadata, len(ops), hal, device_name, runtime)
    trace_device = metadata.get("device_name")
    trace_device = trace_device if isinstance(trace_device, str) else None
    chosen = selected_ops(ops, args.op_filter, args.op_limit)
    results, cancelled = [], False
    write_report(args.output, head, results, None)
    for k, i in enumerate(chosen):
        try:
            r = run_op(torch, device, args, i, ops[i])
        except KeyboardInterrupt:
            cancelled = True
            break
        results.append(r)
        write_report(args.output, head, results, None)
        print(op_line(r), flush=True)
    summary = summary_of(ops, results, cancelled, trace_device, device_name)
    write_report(args.output, head, results, summary)
    print("summary [%s]: %d of %d ops attempted: %d succeeded, %d failed, %d unsupported%s; "
          "wrote %s" % (hal, summary["attempted"], summary["total"], summary["succeeded"],
                        summary["failed"], summary["unsupported"],
                        " (interrupted)" if cancelled else "", args.output))
    return 1 if summary["failed"] else 0


def op_line(r):
    """One op on the console: index, name, median or outcome, and the reason, cut short."""
    name = r["name"] if len(r["name"]) <= 44 else r["name"][:41] + "..."
    figure = "%12.2f us" % r["median_us"] if r["outcome"] == "ok" else "%15s" % r["outcome"]
    why = r.get("message", "")
    return "%4d %-44s %s%s" % (r["index"], name, figure,
                               "  " + (why if len(why) <= 100 else why[:97] + "...") if why else "")


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except InputError as e:
        print("torch_baseline: %s" % e, file=sys.stderr)
        sys.exit(2)
    except Unavailable as e:
        print("torch_baseline: %s" % e, file=sys.stderr)
        sys.exit(3)
