"""Cpu kernel suites run again with the wider instruction sets switched off."""

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

# The instruction sets the GEMM micro-kernels are held to (kernels/cpu/fma_micro.h), by target
# suffix: AVX2, and plain C.
FMA_TWINS = [
    ("_avx2_test", {"XR_CPU_AVX512": "off"}),
    ("_plain_c_test", {"XR_CPU_AVX2": "off", "XR_CPU_AVX512": "off"}),
]

def fma_isa_twins(name, srcs, deps, tags, filter, cases):
    """`<name>_avx2_test` and `<name>_plain_c_test`: the cases matching `filter` with the GEMM
    micro-kernels held to AVX2 (XR_CPU_AVX512=off) and to plain C (XR_CPU_AVX2=off as well), so
    that each path runs on any CPU (kernels/cpu/fma_micro.h); each fails if fewer than `cases`
    ran."""
    for suffix, env in FMA_TWINS:
        cc_test(
            name = name + suffix,
            size = "medium",
            srcs = srcs,
            args = ["--filter=" + filter],
            env = dict(env, XR_MIN_CASES = str(cases)),
            tags = tags,
            deps = deps + ["//tests/support:min_cases"],
        )
