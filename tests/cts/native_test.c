/* Native handles (xr_hal_buffer_native, xr_hal_stream_native, xr_hal_device_native), what
 * vendor libraries (CLBlast, cuBLASLt, hipBLASLt) receive: UNIMPLEMENTED on cpu, the driver's
 * own non-NULL objects elsewhere, a view sharing its root's allocation at its own offset. */
#include "tests/cts/cts.h"

TestSuite(native, .init = cts_setup, .fini = cts_teardown);

static bool has_native_handles(void) { return strcmp(XR_CTS_DRIVER_NAME, "cpu") != 0; }

Test(native, handles_or_unimplemented) {
  xr_hal_buffer_t *buffer, *view;
  xr_hal_stream_t *stream;
  CTS_OK(xr_hal_buffer_alloc(cts_device, 4096, &buffer));
  CTS_OK(xr_hal_buffer_view(buffer, 256, 1024, &view));
  CTS_OK(xr_hal_stream_create(cts_device, &stream));
  void *handle = NULL, *root_handle = NULL;
  size_t offset = 1, root_offset = 1;
  if (!has_native_handles()) {
    CTS_FAILS_WITH(XR_UNIMPLEMENTED, xr_hal_buffer_native(buffer, &handle, &offset));
    CTS_FAILS_WITH(XR_UNIMPLEMENTED, xr_hal_stream_native(stream, &handle));
    CTS_FAILS_WITH(XR_UNIMPLEMENTED, xr_hal_device_native(cts_device, &handle));
    cr_assert_null(handle, "a failed call wrote its output");
  } else {
    CTS_OK(xr_hal_buffer_native(buffer, &root_handle, &root_offset));
    CTS_OK(xr_hal_buffer_native(view, &handle, &offset));
    cr_assert_not_null(root_handle);
    cr_assert_eq(handle, root_handle, "a view has its root's allocation");
    cr_assert_eq(root_offset, 0);
    cr_assert_eq(offset, 256);
    handle = NULL;
    CTS_OK(xr_hal_stream_native(stream, &handle));
    cr_assert_not_null(handle);
    handle = NULL;
    CTS_OK(xr_hal_device_native(cts_device, &handle));
    cr_assert_not_null(handle);
  }
  xr_hal_stream_destroy(stream);
  xr_hal_buffer_free(view);
  xr_hal_buffer_free(buffer);
}

Test(native, null_arguments) {
  xr_hal_stream_t *stream;
  CTS_OK(xr_hal_stream_create(cts_device, &stream));
  void *handle;
  size_t offset;
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_buffer_native(NULL, &handle, &offset));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_native(NULL, &handle));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_native(stream, NULL));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_device_native(NULL, &handle));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_device_native(cts_device, NULL));
  xr_hal_stream_destroy(stream);
}
