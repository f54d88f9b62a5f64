"""The GPU suites' macros: gpu_suite, one cc_test per GPU driver for the suites that need a real
device; emulated_source, a kernels/gpu source made compilable on the host for the emulated
suites."""

load("@rules_cc//cc:defs.bzl", "cc_test")
load("//hal:drivers.bzl", "GPU_DRIVERS")

def gpu_suite(name, srcs, deps, size = "small", **kwargs):
    """Declares `<name>_cuda` and `<name>_hip`.

    Each is built with XR_GPU_DRIVER set to its driver, tagged `gpu` (tools/gpu_check.sh runs
    them with --test_tag_filters=gpu), and skips with the reason where the device is absent.
    """
    for driver in GPU_DRIVERS:
        cc_test(
            name = name + "_" + driver,
            size = size,
            srcs = srcs,
            args = ["--verbose"],
            local_defines = ["XR_GPU_DRIVER=" + driver],
            tags = ["gpu"],
            deps = deps,
            **kwargs
        )

def emulated_source(source):
    """`<source>_emulated`: kernels/gpu/<source>.cu as `<source>_emulated.inc`, its headers inlined
    and its shared memory turned into statics (emulate_source.sh), for tests/gpu/cuda_emulation.h.
    """
    cu = "//kernels:gpu/%s.cu" % source
    native.genrule(
        name = source + "_emulated",
        srcs = [cu, "//kernels:gpu_headers"],
        outs = [source + "_emulated.inc"],
        cmd = "$(location emulate_source.sh) $(location %s) $@" % cu,
        tools = ["emulate_source.sh"],
    )
