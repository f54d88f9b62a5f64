/* Conformance test suite: the same cases run against every HAL driver. Each cc_test in BUILD
 * compiles these sources with XR_CTS_DRIVER=<name>; cases open that driver's first device in
 * their fixture and skip (with the driver's reason) when it cannot run here. */
#ifndef XR_TESTS_CTS_CTS_H
#define XR_TESTS_CTS_CTS_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "hal/hal.h"

#define XR_CTS_STRINGIFY2(x) #x
#define XR_CTS_STRINGIFY(x) XR_CTS_STRINGIFY2(x)
#define XR_CTS_DRIVER_NAME XR_CTS_STRINGIFY(XR_CTS_DRIVER)

/* The device under test, opened by cts_setup (a Criterion .init) and closed by cts_teardown. */
extern xr_hal_device_t *cts_device;
extern xr_hal_device_properties_t cts_properties;

void cts_setup(void);
void cts_teardown(void);

/* Asserts an OK status and shows the HAL's sentence when it is not. */
#define CTS_OK(expr)                                                                      \
  do {                                                                                    \
    xr_status_t cts_status_ = (expr);                                                     \
    cr_assert_eq(cts_status_, XR_OK, "%s -> %s: %s", #expr, xr_status_name(cts_status_), \
                 xr_last_error());                                                        \
  } while (0)

/* Asserts a specific failure status and a non-empty sentence. */
#define CTS_FAILS_WITH(expected, expr)                                                      \
  do {                                                                                      \
    xr_status_t cts_status_ = (expr);                                                       \
    cr_assert_eq(cts_status_, (expected), "%s -> %s (expected %s): %s", #expr,              \
                 xr_status_name(cts_status_), xr_status_name(expected), xr_last_error());   \
    cr_assert_neq(xr_last_error()[0], '\0', "%s failed without a sentence", #expr);         \
  } while (0)

/* Deterministic bytes that differ from every fill pattern the cases use. */
void cts_pattern(uint8_t *out, size_t size, uint32_t seed);

/* Index of the first differing byte, or SIZE_MAX when equal. */
size_t cts_first_difference(const void *a, const void *b, size_t size);

/* A page-aligned host allocation that fails the test instead of returning NULL. */
void *cts_malloc(size_t size);

double cts_now_ms(void);

#endif
