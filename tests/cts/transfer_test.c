/* Copies and fills, blocking and on streams, at awkward sizes and offsets. */
#include <stdlib.h>

#include "tests/cts/cts.h"

TestSuite(transfer, .init = cts_setup, .fini = cts_teardown);

#define SENTINEL 0xc3

/* Writes `size` bytes at `offset` into a buffer pre-filled with SENTINEL, reads the whole
 * buffer back, and checks the payload and both untouched margins. */
static void round_trip(size_t size, size_t offset, bool use_stream) {
  size_t total = offset + size + 5;
  uint8_t *data = cts_malloc(size), *back = cts_malloc(total);
  cts_pattern(data, size, (uint32_t)(size + offset));
  xr_hal_buffer_t *buffer = NULL;
  CTS_OK(xr_hal_buffer_alloc(cts_device, total, &buffer));
  uint8_t sentinel = SENTINEL;
  CTS_OK(xr_hal_buffer_fill(buffer, 0, total, &sentinel, 1));
  if (use_stream) {
    xr_hal_stream_t *stream = NULL;
    CTS_OK(xr_hal_stream_create(cts_device, &stream));
    CTS_OK(xr_hal_stream_write(stream, buffer, offset, data, size));
    CTS_OK(xr_hal_stream_read(stream, back, buffer, 0, total));
    CTS_OK(xr_hal_stream_synchronize(stream));
    xr_hal_stream_destroy(stream);
  } else {
    CTS_OK(xr_hal_buffer_write(buffer, offset, data, size));
    CTS_OK(xr_hal_buffer_read(back, buffer, 0, total));
  }
  for (size_t i = 0; i < offset; i++) cr_assert_eq(back[i], SENTINEL, "front margin byte %zu", i);
  size_t difference = cts_first_difference(back + offset, data, size);
  cr_assert_eq(difference, SIZE_MAX, "size %zu offset %zu: first wrong byte at %zu", size, offset,
               difference);
  for (size_t i = offset + size; i < total; i++) {
    cr_assert_eq(back[i], SENTINEL, "back margin byte %zu", i);
  }
  xr_hal_buffer_free(buffer);
  free(data);
  free(back);
}

Test(transfer, round_trip_awkward_sizes_blocking) {
  static const size_t sizes[] = {1, 3, 4096 + 3, 1 << 20};
  static const size_t offsets[] = {0, 1, 7, 4096};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++) {
      round_trip(sizes[s], offsets[o], false);
    }
  }
}

Test(transfer, round_trip_awkward_sizes_on_a_stream) {
  static const size_t sizes[] = {1, 4096 + 3, 65537};
  static const size_t offsets[] = {0, 3, 129};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++) {
      round_trip(sizes[s], offsets[o], true);
    }
  }
}

/* Large buffers take another allocation path on the cpu driver (their own huge-page mapping
 * from 2 MiB): sizes on both sides of that threshold, and 64 MiB. */
Test(transfer, round_trip_large_buffers) {
  round_trip((2u << 20) - 5, 0, false);
  round_trip((2u << 20) - 5, 1, true);
  round_trip((2u << 20) + 3, 4096, false);
  round_trip(64u << 20, 0, false);
  round_trip((64u << 20) - 1, 5, true);
}

Test(transfer, device_to_device_with_offsets_and_views) {
  enum { SIZE = (1 << 20) + 77 };
  uint8_t *data = cts_malloc(SIZE), *back = cts_malloc(SIZE);
  cts_pattern(data, SIZE, 42);
  xr_hal_buffer_t *a = NULL, *b = NULL, *view_a = NULL, *view_b = NULL;
  CTS_OK(xr_hal_buffer_alloc(cts_device, SIZE, &a));
  CTS_OK(xr_hal_buffer_alloc(cts_device, SIZE, &b));
  CTS_OK(xr_hal_buffer_write(a, 0, data, SIZE));
  uint8_t zero = 0;
  CTS_OK(xr_hal_buffer_fill(b, 0, SIZE, &zero, 1));
  /* Blocking: a[13 .. 13+1000) -> b[5 ..) */
  CTS_OK(xr_hal_buffer_copy(b, 5, a, 13, 1000));
  CTS_OK(xr_hal_buffer_read(back, b, 0, 1010));
  cr_assert_eq(cts_first_difference(back + 5, data + 13, 1000), SIZE_MAX);
  cr_assert_eq(back[4], 0);
  cr_assert_eq(back[1005], 0);
  /* On a stream, through views: view_a = a[333 ..), view_b = b[4097 ..) */
  CTS_OK(xr_hal_buffer_view(a, 333, SIZE - 333, &view_a));
  CTS_OK(xr_hal_buffer_view(b, 4097, SIZE - 4097, &view_b));
  xr_hal_stream_t *stream = NULL;
  CTS_OK(xr_hal_stream_create(cts_device, &stream));
  size_t length = SIZE - 4097 - 10;
  CTS_OK(xr_hal_stream_copy(stream, view_b, 10, view_a, 0, length));
  CTS_OK(xr_hal_stream_read(stream, back, b, 4107, length));
  CTS_OK(xr_hal_stream_synchronize(stream));
  cr_assert_eq(cts_first_difference(back, data + 333, length), SIZE_MAX);
  /* Out of range and overlapping copies are refused. */
  CTS_FAILS_WITH(XR_OUT_OF_RANGE, xr_hal_stream_copy(stream, view_b, 11, view_a, 0, length));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_buffer_copy(a, 0, view_a, 0, 1000));
  CTS_OK(xr_hal_buffer_copy(a, 0, view_a, 0, 333)); /* adjacent, not overlapping */
  xr_hal_stream_destroy(stream);
  xr_hal_buffer_free(view_b);
  xr_hal_buffer_free(view_a);
  xr_hal_buffer_free(b);
  xr_hal_buffer_free(a);
  free(data);
  free(back);
}

Test(transfer, fill_patterns_of_1_2_and_4_bytes) {
  enum { SIZE = 4096 + 64 };
  uint8_t *back = cts_malloc(SIZE);
  xr_hal_buffer_t *buffer = NULL;
  CTS_OK(xr_hal_buffer_alloc(cts_device, SIZE, &buffer));
  xr_hal_stream_t *stream = NULL;
  CTS_OK(xr_hal_stream_create(cts_device, &stream));
  const uint8_t byte = 0xab;
  const uint16_t half = 0x1234;
  const uint32_t word = 0xdeadbeef;
  const void *patterns[] = {&byte, &half, &word};
  const size_t pattern_sizes[] = {1, 2, 4};
  for (int p = 0; p < 3; p++) {
    size_t width = pattern_sizes[p];
    size_t offset = 8 * width, size = SIZE - 16 * width;
    uint8_t sentinel = SENTINEL;
    CTS_OK(xr_hal_stream_fill(stream, buffer, 0, SIZE, &sentinel, 1));
    CTS_OK(xr_hal_stream_fill(stream, buffer, offset, size, patterns[p], width));
    CTS_OK(xr_hal_stream_read(stream, back, buffer, 0, SIZE));
    CTS_OK(xr_hal_stream_synchronize(stream));
    for (size_t i = 0; i < SIZE; i++) {
      uint8_t expected = i < offset || i >= offset + size
                             ? SENTINEL
                             : ((const uint8_t *)patterns[p])[(i - offset) % width];
      cr_assert_eq(back[i], expected, "pattern of %zu bytes: byte %zu is %#x, expected %#x",
                   width, i, back[i], expected);
    }
  }
  /* Fills on a view with a 4-byte pattern, blocking. */
  xr_hal_buffer_t *view = NULL;
  CTS_OK(xr_hal_buffer_view(buffer, 4, 16, &view));
  CTS_OK(xr_hal_buffer_fill(view, 4, 8, &word, 4));
  CTS_OK(xr_hal_buffer_read(back, buffer, 0, 24));
  cr_assert_eq(memcmp(back + 8, &word, 4), 0);
  cr_assert_eq(memcmp(back + 12, &word, 4), 0);
  cr_assert_neq(memcmp(back + 16, &word, 4), 0);
  /* Invalid fills. */
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_fill(stream, buffer, 0, 12, &word, 3));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_fill(stream, buffer, 2, 8, &word, 4));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_fill(stream, buffer, 0, 6, &word, 4));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_fill(stream, buffer, 0, 8, NULL, 4));
  CTS_FAILS_WITH(XR_OUT_OF_RANGE, xr_hal_stream_fill(stream, buffer, 0, SIZE + 4, &word, 4));
  xr_hal_buffer_free(view);
  xr_hal_stream_destroy(stream);
  xr_hal_buffer_free(buffer);
  free(back);
}
