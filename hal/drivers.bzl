"""The drivers compiled into the HAL, in the order `replay devices` lists them: the one list.

hal/BUILD writes hal/core/driver_list.h from it (one XR_HAL_DRIVER(name) line each, naming the
`const xr_hal_driver_t xr_hal_<name>_driver` defined in hal/drivers/<name>/, except cuda and
hip, which share hal/drivers/gpu/), and tests/cts/BUILD makes one conformance target per entry.
"""

HAL_DRIVERS = [
    "cpu",
    "opencl",
    "cuda",
    "hip",
]

# The drivers of kernels/gpu's one CUDA C++ source (their devices' kernel_family is "gpu"):
# tests/gpu builds each device suite once per entry.
GPU_DRIVERS = [
    "cuda",
    "hip",
]
