/* The drivers compiled into the HAL, in the order `replay devices` lists them. Each entry names
 * a `const xr_hal_driver_t xr_hal_<name>_driver` defined in hal/drivers/<name>/, except cuda and
 * hip, which share hal/drivers/gpu/. */
XR_HAL_DRIVER(cpu)
XR_HAL_DRIVER(opencl)
XR_HAL_DRIVER(cuda)
XR_HAL_DRIVER(hip)
