/* Pieces of cpu.elementwise shared with the other host kernels of this area (cpu.argmax,
 * cpu.norm, cpu.softmax, cpu.rotary). */
#ifndef XR_KERNELS_CPU_ELEMENTWISE_CPU_H
#define XR_KERNELS_CPU_ELEMENTWISE_CPU_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "formats/model.h"
#include "kernels/dtype.h"

#define XR_EW_CPU_BLOCK 512

/* The host kernels' vectorised loops (cpu.elementwise, argmax, norms) are also compiled for
 * AVX-512 and AVX2 + FMA + F16C, picked at load time where the CPU has them (SSE2 otherwise). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define XR_CPU_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define XR_CPU_CLONES
#endif

/* e^r on |r| <= ln2/2: the degree-5 polynomial of least maximum relative error (Remez; 7.5e-8,
 * 1.9e-7 evaluated in float by Horner with fused multiply-adds: below the 2.1e-7 of the
 * degree-6 Taylor polynomial, one multiply-add fewer). */
#define XR_EXP_MINIMAX_0 1.00000012f
#define XR_EXP_MINIMAX_1 0.999999702f
#define XR_EXP_MINIMAX_2 0.499988943f
#define XR_EXP_MINIMAX_3 0.166675746f
#define XR_EXP_MINIMAX_4 0.0419153832f
#define XR_EXP_MINIMAX_5 0.00829765480f

/* n <= XR_EW_CPU_BLOCK elements of dtype `dt` at src (stride in elements) into dst as float;
 * vectorised for the contiguous f32, f16 and bf16 cases. */
void xr_ew_cpu_load(float *restrict dst, const char *src, xr_dtype_t dt, int64_t stride,
                    int64_t n);

/* Outputs at least this large are written with streaming (non-temporal) stores: they do not
 * fit in a core's cache anyway, and a streaming store writes a line without first reading it,
 * which a normal store must do (a third of a one-input op's traffic). The device copy that
 * the benchmarks compare against moves its lines the same way. */
#define XR_CPU_STREAM_MIN_BYTES ((int64_t)8 << 20)

/* memcpy whose stores bypass the cache (16-byte SSE2 streaming stores, which every x86-64
 * has, between plain head and tail bytes); a plain memcpy elsewhere. Call
 * xr_cpu_stream_fence() before the written data is handed to another thread. */
static inline void xr_cpu_stream_copy(void *dst, const void *src, size_t bytes) {
#if defined(__x86_64__)
  char *d = dst;
  const char *s = src;
  size_t head = (size_t)(-(uintptr_t)d & 15u);
  if (head > bytes) head = bytes;
  memcpy(d, s, head);
  d += head, s += head, bytes -= head;
  for (; bytes >= 16; d += 16, s += 16, bytes -= 16)
    _mm_stream_si128((__m128i *)(void *)d, _mm_loadu_si128((const __m128i *)(const void *)s));
  memcpy(d, s, bytes);
#else
  memcpy(dst, src, bytes);
#endif
}

static inline void xr_cpu_stream_fence(void) {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

#endif
