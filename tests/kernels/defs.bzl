"""A cpu kernel suite and its portable twin: the same cases with the AVX-512 paths off."""

load("@rules_cc//cc:defs.bzl", "cc_test")

def suite_with_portable_twin(name, srcs, tags, portable_filter, portable_cases):
    """`name` runs every case; `<name minus _test>_portable_test` runs the cases matching
    `portable_filter` with XR_CPU_AVX512=off, and fails if fewer than `portable_cases` ran."""
    deps = [":check", "//kernels", "@criterion"]
    cc_test(name = name, size = "medium", srcs = srcs, tags = tags, deps = deps)
    cc_test(
        name = name[:-len("_test")] + "_portable_test",
        size = "medium",
        srcs = srcs,
        args = ["--filter=" + portable_filter],
        env = {"XR_CPU_AVX512": "off", "XR_MIN_CASES": str(portable_cases)},
        tags = tags,
        deps = deps + ["//tests/support:min_cases"],
    )
