/* xr_status_t: the error vocabulary shared by every xreplay layer.
 *
 * Every fallible call returns an xr_status_t and, on failure, leaves one human sentence in a
 * thread-local buffer read with xr_last_error(): what failed, on which object, and the vendor's
 * own error name and code where one exists. Library code never exits or aborts. */
#ifndef XR_BASE_STATUS_H
#define XR_BASE_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum xr_status {
  XR_OK = 0,
  XR_INVALID_ARGUMENT,  /* the caller passed something malformed */
  XR_OUT_OF_RANGE,      /* an index, size or offset outside its bounds */
  XR_NOT_FOUND,         /* a named thing (file, driver, device, op) does not exist */
  XR_RESOURCE_EXHAUSTED,/* out of memory (host or device) */
  XR_UNAVAILABLE,       /* a runtime, library or device is absent */
  XR_UNIMPLEMENTED,     /* valid request that this build or backend does not support */
  XR_DEVICE_ERROR,      /* the vendor runtime reported a failure */
  XR_DATA_LOSS,         /* a file is truncated or corrupt */
  XR_INTERNAL,          /* a bug in xreplay */
} xr_status_t;

/* Name of a status code ("INVALID_ARGUMENT"); never NULL. Thread-safe. */
const char *xr_status_name(xr_status_t status);

/* The sentence left by the last failing call on this thread ("" when none). Thread-safe: the
 * buffer is thread-local and stays valid until the next failing call on the same thread. */
const char *xr_last_error(void);

/* Records a formatted sentence as this thread's last error and returns `status`, so that
 * `return xr_error(XR_NOT_FOUND, "file %s: not found", path);` reads naturally. */
xr_status_t xr_error(xr_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prefixes this thread's last error with a formatted context ("ops[3].args[1]: " + old) and
 * returns `status`. Used when an error travels up through a caller that knows more. */
xr_status_t xr_error_prefix(xr_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Clears this thread's last error. */
void xr_error_clear(void);

#ifdef __cplusplus
}
#endif
#endif /* XR_BASE_STATUS_H */
