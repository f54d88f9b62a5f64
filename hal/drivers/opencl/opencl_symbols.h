/* The OpenCL API symbols xreplay uses, each listed once as REQUIRED or OPTIONAL in the list
 * style of base/dynload.h. Types come from <CL/cl.h>, which is included for types and
 * constants only. Everything here is OpenCL 1.2, which every ICD loader exports. */
#ifndef XR_HAL_DRIVERS_OPENCL_SYMBOLS_H
#define XR_HAL_DRIVERS_OPENCL_SYMBOLS_H
#define XR_OPENCL_SYMBOLS(X) \
  X(REQUIRED, cl_int, clGetPlatformIDs, (cl_uint, cl_platform_id *, cl_uint *)) \
  X(REQUIRED, cl_int, clGetPlatformInfo, (cl_platform_id, cl_platform_info, size_t, void *, size_t *)) \
  X(REQUIRED, cl_int, clGetDeviceIDs, (cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *)) \
  X(REQUIRED, cl_int, clGetDeviceInfo, (cl_device_id, cl_device_info, size_t, void *, size_t *)) \
  X(REQUIRED, cl_context, clCreateContext, (const cl_context_properties *, cl_uint, const cl_device_id *, void(CL_CALLBACK *)(const char *, const void *, size_t, void *), void *, cl_int *)) \
  X(REQUIRED, cl_int, clReleaseContext, (cl_context)) \
  X(REQUIRED, cl_command_queue, clCreateCommandQueue, (cl_context, cl_device_id, cl_command_queue_properties, cl_int *)) \
  X(REQUIRED, cl_int, clReleaseCommandQueue, (cl_command_queue)) \
  X(REQUIRED, cl_int, clFlush, (cl_command_queue)) \
  X(REQUIRED, cl_int, clFinish, (cl_command_queue)) \
  X(REQUIRED, cl_mem, clCreateBuffer, (cl_context, cl_mem_flags, size_t, void *, cl_int *)) \
  X(REQUIRED, cl_mem, clCreateSubBuffer, (cl_mem, cl_mem_flags, cl_buffer_create_type, const void *, cl_int *)) \
  X(REQUIRED, cl_int, clReleaseMemObject, (cl_mem)) \
  X(REQUIRED, cl_int, clEnqueueWriteBuffer, (cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *, cl_uint, const cl_event *, cl_event *)) \
  X(REQUIRED, cl_int, clEnqueueReadBuffer, (cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *, cl_uint, const cl_event *, cl_event *)) \
  X(REQUIRED, cl_int, clEnqueueCopyBuffer, (cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t, cl_uint, const cl_event *, cl_event *)) \
  X(REQUIRED, cl_int, clEnqueueFillBuffer, (cl_command_queue, cl_mem, const void *, size_t, size_t, size_t, cl_uint, const cl_event *, cl_event *)) \
  X(REQUIRED, cl_int, clEnqueueMarkerWithWaitList, (cl_command_queue, cl_uint, const cl_event *, cl_event *)) \
  X(REQUIRED, cl_int, clEnqueueBarrierWithWaitList, (cl_command_queue, cl_uint, const cl_event *, cl_event *)) \
  X(REQUIRED, cl_int, clWaitForEvents, (cl_uint, const cl_event *)) \
  X(REQUIRED, cl_int, clGetEventInfo, (cl_event, cl_event_info, size_t, void *, size_t *)) \
  X(REQUIRED, cl_int, clGetEventProfilingInfo, (cl_event, cl_profiling_info, size_t, void *, size_t *)) \
  X(REQUIRED, cl_int, clReleaseEvent, (cl_event)) \
  X(REQUIRED, cl_program, clCreateProgramWithSource, (cl_context, cl_uint, const char **, const size_t *, cl_int *)) \
  X(REQUIRED, cl_program, clCreateProgramWithBinary, (cl_context, cl_uint, const cl_device_id *, const size_t *, const unsigned char **, cl_int *, cl_int *)) \
  X(REQUIRED, cl_int, clBuildProgram, (cl_program, cl_uint, const cl_device_id *, const char *, void(CL_CALLBACK *)(cl_program, void *), void *)) \
  X(REQUIRED, cl_int, clGetProgramBuildInfo, (cl_program, cl_device_id, cl_program_build_info, size_t, void *, size_t *)) \
  X(REQUIRED, cl_int, clGetProgramInfo, (cl_program, cl_program_info, size_t, void *, size_t *)) \
  X(REQUIRED, cl_int, clReleaseProgram, (cl_program)) \
  X(REQUIRED, cl_kernel, clCreateKernel, (cl_program, const char *, cl_int *)) \
  X(REQUIRED, cl_int, clReleaseKernel, (cl_kernel)) \
  X(REQUIRED, cl_int, clSetKernelArg, (cl_kernel, cl_uint, size_t, const void *)) \
  X(REQUIRED, cl_int, clEnqueueNDRangeKernel, (cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *, const size_t *, cl_uint, const cl_event *, cl_event *)) \
  X(OPTIONAL, cl_int, clGetKernelWorkGroupInfo, (cl_kernel, cl_device_id, cl_kernel_work_group_info, size_t, void *, size_t *))

#endif
