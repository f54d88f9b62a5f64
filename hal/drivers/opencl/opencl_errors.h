/* OpenCL error codes as names, for messages like "clBuildProgram: CL_BUILD_PROGRAM_FAILURE
 * (-11)". */
#ifndef XR_HAL_DRIVERS_OPENCL_OPENCL_ERRORS_H
#define XR_HAL_DRIVERS_OPENCL_OPENCL_ERRORS_H

/* The macro name of an OpenCL error code ("CL_OUT_OF_RESOURCES"), "CL_UNKNOWN_ERROR" if none. */
const char *xr_opencl_error_name(int code);

#endif
