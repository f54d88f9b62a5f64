"""family_matrix: a family's cases on every driver of hal/drivers.bzl (ggml's "every case on
every backend"), from the lists in its cases header (tests/kernels/matrix.c); family_matrices:
one per entry of a table."""

load("@rules_cc//cc:defs.bzl", "cc_test")
load("//hal:drivers.bzl", "GPU_DRIVERS", "HAL_DRIVERS")
load(":defs.bzl", "FMA_TWINS")

def family_matrix(family, tags, deps = [":cases"], timeout_s = 600, size = "medium",
                  driver_sizes = {}, portable_cases = 0, fma_twins = None):
    """`<family>_matrix_<driver>` for every driver: matrix.c over `<FAMILY>_MATRIX` and
    `<FAMILY>_MATRIX_GAPS` of tests/kernels/<family>_cases.h. The GPU drivers' targets are tagged
    `gpu` (the GPU kit runs them); every target skips with the reason where its device is absent.

    driver_sizes overrides `size` for some drivers ({"opencl": "large"}). With portable_cases,
    `<family>_matrix_cpu_portable` runs the cpu target's cases again with the AVX-512 paths off
    (the portable loops other CPUs run), and fails if fewer than portable_cases ran. With
    fma_twins ({"filter": .., "cases": ..}), `<family>_matrix_cpu_avx2_test` and
    `_plain_c_test` run the cpu cases it selects with the GEMM micro-kernels held to AVX2 and to
    plain C (defs.bzl's fma_isa_twins)."""
    for driver in HAL_DRIVERS:
        defines = [
            "XR_MATRIX_HEADER=\\\"tests/kernels/%s_cases.h\\\"" % family,
            "XR_MATRIX_GROUPS=%s_MATRIX" % family.upper(),
            "XR_MATRIX_GAPS=%s_MATRIX_GAPS" % family.upper(),
            "XR_MATRIX_DRIVER=" + driver,
            "XR_MATRIX_SUITE=%s_%s" % (family, driver),
            "XR_MATRIX_TIMEOUT=%d" % timeout_s,
        ]
        gpu = ["gpu"] if driver in GPU_DRIVERS else []
        cc_test(
            name = "%s_matrix_%s" % (family, driver),
            size = driver_sizes.get(driver, size),
            srcs = ["matrix.c", family + "_cases.h"],
            args = ["--verbose"],
            local_defines = defines,
            tags = tags + gpu,
            deps = deps + ["@criterion"],
        )
        if driver == "cpu" and portable_cases:
            cc_test(
                name = "%s_matrix_cpu_portable" % family,
                size = size,
                srcs = ["matrix.c", family + "_cases.h"],
                args = ["--verbose"],
                env = {"XR_CPU_AVX512": "off", "XR_MIN_CASES": str(portable_cases)},
                local_defines = defines,
                tags = tags,
                deps = deps + ["@criterion", "//tests/support:min_cases"],
            )
        for suffix, env in (FMA_TWINS if driver == "cpu" and fma_twins else []):
            cc_test(
                name = "%s_matrix_cpu%s" % (family, suffix),
                size = size,
                srcs = ["matrix.c", family + "_cases.h"],
                args = ["--verbose", "--filter=" + fma_twins["filter"]],
                env = dict(env, XR_MIN_CASES = str(fma_twins["cases"])),
                local_defines = defines,
                tags = tags,
                deps = deps + ["@criterion", "//tests/support:min_cases"],
            )

def family_matrices(families):
    """family_matrix(family = name, **options) for every `name: options` of `families`."""
    for family, options in families.items():
        family_matrix(family = family, **options)
