"""xr_shared_library: an installable shared library made of whole layers (tools/link_shared.sh)."""

def xr_shared_library(name, soname, layers, libraries = [], linkopts = []):
    """Links `soname` (lib<name>.so.N) from every object of `layers`.

    Args:
      name: the target.
      soname: the file and its ELF soname, e.g. "libxreplay-hal.so.0".
      layers: cc_library targets whose own objects the library holds (not their deps).
      libraries: xr_shared_library targets of the layers below, linked by soname.
      linkopts: system libraries ("-ldl").
    """
    native.genrule(
        name = name,
        srcs = layers + libraries,
        outs = [soname],
        cmd = " ".join(
            ["$(location //tools:link_shared.sh) \"$(CC)\" $@", soname, "--"] +
            ["$(locations %s)" % target for target in layers + libraries] +
            ["--"] + linkopts,
        ) + select({
            # The layers' objects are instrumented under --config=asan; so is the library.
            "//tools:asan": " -fsanitize=address,undefined",
            "//conditions:default": "",
        }),
        toolchains = ["@bazel_tools//tools/cpp:current_cc_toolchain"],
        tools = ["//tools:link_shared.sh"],
    )
