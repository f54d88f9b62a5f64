/* What the cpu GEMM micro-kernels (cpu.gemm_blocked, cpu.moe_fused's micro-kernel path) run on:
 * the instruction set chosen at run time, and the AVX2 + FMA micro-kernel both files share.
 * CPUs without AVX-512 (AMD Zen 2/3, most client parts) take the AVX2 one; there oneDNN has no
 * bf16 kernels either, so every bf16 GEMM lands here. */
#ifndef XR_KERNELS_CPU_FMA_MICRO_H
#define XR_KERNELS_CPU_FMA_MICRO_H

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef enum { XR_FMA_PLAIN_C, XR_FMA_AVX2, XR_FMA_AVX512 } xr_fma_isa_t;

static inline bool xr_fma_setting_off(const char *name) {
  const char *setting = getenv(name);
  return setting && !strcmp(setting, "off");
}

/* AVX-512 F/BW/VL unless XR_CPU_AVX512=off; else AVX2 + FMA + F16C unless XR_CPU_AVX2=off; else
 * plain C. The switches let the tests run every path on any CPU, and benchmarks compare them. */
static inline xr_fma_isa_t xr_fma_isa(void) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && !xr_fma_setting_off("XR_CPU_AVX512"))
    return XR_FMA_AVX512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c") && !xr_fma_setting_off("XR_CPU_AVX2"))
    return XR_FMA_AVX2;
  return XR_FMA_PLAIN_C;
}

#define XR_AVX2_FMA __attribute__((target("avx2,fma,f16c")))

/* One k step of row i of a 4 x 16 pass: two FMAs with the broadcast A element. */
#define XR_AVX2_ROW(i)                                       \
  {                                                          \
    __m256 x = _mm256_broadcast_ss(a + (i)*a_row + k * a_k); \
    c##i##0 = _mm256_fmadd_ps(x, b0, c##i##0);               \
    c##i##1 = _mm256_fmadd_ps(x, b1, c##i##1);               \
  }
#define XR_AVX2_OUT(i)                                          \
  {                                                             \
    float *o = c + (i)*ldc;                                     \
    if (accumulate) {                                           \
      c##i##0 = _mm256_add_ps(c##i##0, _mm256_loadu_ps(o));     \
      c##i##1 = _mm256_add_ps(c##i##1, _mm256_loadu_ps(o + 8)); \
    }                                                           \
    _mm256_storeu_ps(o, c##i##0);                               \
    _mm256_storeu_ps(o + 8, c##i##1);                           \
  }

/* c[4][16] (+)= a[4][kc] b[kc][16]: A's element (r, k) at a[r * a_row + k * a_k], B's rows of 16
 * b_row apart, c's rows ldc apart. Eight accumulators, two B vectors and a broadcast: 11 of
 * AVX2's 16 registers, 6 loads per 8 FMAs. */
XR_AVX2_FMA static inline void xr_fma_4x16_avx2(int64_t kc, const float *a, int64_t a_row,
                                                int64_t a_k, const float *b, int64_t b_row,
                                                float *c, int64_t ldc, bool accumulate) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00;
  __m256 c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  for (int64_t k = 0; k < kc; k++) {
    __m256 b0 = _mm256_loadu_ps(b + k * b_row), b1 = _mm256_loadu_ps(b + k * b_row + 8);
    XR_AVX2_ROW(0) XR_AVX2_ROW(1) XR_AVX2_ROW(2) XR_AVX2_ROW(3)
  }
  XR_AVX2_OUT(0) XR_AVX2_OUT(1) XR_AVX2_OUT(2) XR_AVX2_OUT(3)
}
#undef XR_AVX2_ROW
#undef XR_AVX2_OUT

/* c[8][32] (+)= a[8][kc] b[kc][32], B packed in rows of 32: an 8 x 32 tile of accumulators
 * would take 32 registers, so it runs as four 4 x 16 passes, each over the k range once. */
XR_AVX2_FMA static inline void xr_fma_8x32_avx2(int64_t kc, const float *a, int64_t a_row,
                                                int64_t a_k, const float *b, float *c, int64_t ldc,
                                                bool accumulate) {
  for (int r = 0; r < 8; r += 4)
    for (int j = 0; j < 32; j += 16)
      xr_fma_4x16_avx2(kc, a + r * a_row, a_row, a_k, b + j, 32, c + r * ldc + j, ldc, accumulate);
}

#endif
