"""gpu_suite: one cc_test per GPU driver for the suites that need a real device."""

load("@rules_cc//cc:defs.bzl", "cc_test")

def gpu_suite(name, srcs, deps, size = "small", **kwargs):
    """Declares `<name>_cuda` and `<name>_hip`.

    Each is built with XR_GPU_DRIVER set to its driver, tagged `gpu` (tools/gpu_check.sh runs
    them with --test_tag_filters=gpu), and skips with the reason where the device is absent.
    """
    for driver in ["cuda", "hip"]:
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
