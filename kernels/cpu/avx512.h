/* AVX-512 building blocks for the host kernels' fast paths (elementwise, norms): 16 floats per
 * register, loads that widen and stores that round (f32, bf16, f16), exp and a reciprocal, written with
 * intrinsics because the portable loops the compiler vectorises (kernels/cpu/elementwise_cpu.h)
 * leave the conversions, the divisions and the extra passes over a block on the table.
 *
 * Every function here is compiled for AVX-512 F/BW/VL + AVX512-BF16 (XR_AVX512) and may run
 * only where xr_cpu_avx512() says the CPU has them; callers keep a portable path beside. */
#ifndef XR_KERNELS_CPU_AVX512_H
#define XR_KERNELS_CPU_AVX512_H

#include <stdbool.h>

#include "formats/model.h"
#include "kernels/cpu/elementwise_cpu.h"

/* True when the CPU has AVX-512 F/BW/VL and AVX512-BF16 and XR_CPU_AVX512 is not "off" (which
 * sends every kernel down its portable path: for tests of that path and for comparisons). */
bool xr_cpu_avx512(void);

/* The dtypes xr_avx512_load and xr_avx512_store move: f32, bf16 and f16. */
static inline bool xr_avx512_dtype(xr_dtype_t d) {
  return d == XR_DTYPE_F32 || d == XR_DTYPE_BF16 || d == XR_DTYPE_F16;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define XR_HAVE_AVX512_PATHS 1
#include <immintrin.h>

#define XR_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))
#define XR_AVX512_INLINE static inline XR_AVX512 __attribute__((always_inline))

/* The first n (<= 16) lanes. */
XR_AVX512_INLINE __mmask16 xr_avx512_lanes(int64_t n) {
  return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u);
}

/* 16 (or the lanes in m) f32, bf16 or f16 elements at p, as floats (exactly); other lanes 0. */
XR_AVX512_INLINE __m512 xr_avx512_load(const void *p, xr_dtype_t dt, __mmask16 m) {
  if (dt == XR_DTYPE_F32) return _mm512_maskz_loadu_ps(m, p);
  if (dt == XR_DTYPE_F16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  __m512i wide = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

/* Lanes of v holding a subnormal (|x| < 2^-126, not 0). */
XR_AVX512_INLINE __mmask16 xr_avx512_subnormal(__m512 v) { return _mm512_fpclass_ps_mask(v, 0x20); }

/* bf16 of 16 floats, bit-exact with xr_f32_to_bf16: vcvtneps2bf16 rounds to nearest even
 * and quiets NaNs the same way, but treats subnormal inputs as zero; lanes that hold one (rare)
 * are rounded in the integer domain instead. */
XR_AVX512_INLINE __m256i xr_avx512_bf16_encode(__m512 v) {
  __m256i r = (__m256i)_mm512_cvtneps_pbh(v);
  __mmask16 sub = xr_avx512_subnormal(v);
  if (__builtin_expect(sub != 0, 0)) {
    __m512i u = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i rounded = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb);
    r = _mm256_mask_mov_epi16(r, sub, _mm512_cvtepi32_epi16(_mm512_srli_epi32(rounded, 16)));
  }
  return r;
}

/* 32 bf16 elements as two float vectors, without moving lanes: even elements (2k) in lane k of
 * *even, odd ones in lane k of *odd. Elementwise work is indifferent to the order, and this
 * takes two integer operations for 32 elements where widening in order takes four. */
XR_AVX512_INLINE void xr_avx512_load_bf16_pairs(const void *p, __m512 *even, __m512 *odd) {
  __m512i v = _mm512_loadu_si512(p);
  *even = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
  *odd = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xffff0000u)));
}

/* The inverse: 32 bf16 in element order from the even and odd lanes (vcvtne2ps2bf16 puts the
 * even results in the low half, the odd ones in the high half; one permute interleaves them). */
XR_AVX512_INLINE __m512i xr_avx512_bf16_encode_pairs(__m512 even, __m512 odd) {
  __mmask16 sub = _kor_mask16(xr_avx512_subnormal(even), xr_avx512_subnormal(odd));
  if (__builtin_expect(!_kortestz_mask16_u8(sub, sub), 0)) {
    __m256i e = xr_avx512_bf16_encode(even), o = xr_avx512_bf16_encode(odd);
    return _mm512_or_si512(_mm512_cvtepu16_epi32(e),
                           _mm512_slli_epi32(_mm512_cvtepu16_epi32(o), 16));
  }
  const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                              24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2,
                                              17, 1, 16, 0);
  return _mm512_permutexvar_epi16(interleave, (__m512i)_mm512_cvtne2ps_pbh(odd, even));
}

/* f16 of 16 floats, bit-exact with xr_f32_to_f16: vcvtps2ph rounds to nearest even with
 * subnormal results (MXCSR's flush-to-zero does not apply to it); NaNs, whose payload it keeps,
 * become the quiet NaN 0x7e00 with their sign, as the portable encoder makes them. */
XR_AVX512_INLINE __m256i xr_avx512_f16_encode(__m512 v) {
  __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  if (__builtin_expect(nan != 0, 0)) {
    __m256i sign = _mm256_and_si256(h, _mm256_set1_epi16((short)0x8000));
    h = _mm256_mask_mov_epi16(h, nan, _mm256_or_si256(sign, _mm256_set1_epi16(0x7e00)));
  }
  return h;
}

/* Stores the lanes in m of v at p as f32, bf16 or f16; `stream` (full, aligned vectors only:
 * the caller checks) writes around the cache. */
XR_AVX512_INLINE void xr_avx512_store(void *p, xr_dtype_t dt, __m512 v, __mmask16 m,
                                      bool stream) {
  if (dt == XR_DTYPE_F32) {
    if (stream) _mm512_stream_ps((float *)p, v);
    else _mm512_mask_storeu_ps(p, m, v);
    return;
  }
  __m256i h = dt == XR_DTYPE_F16 ? xr_avx512_f16_encode(v) : xr_avx512_bf16_encode(v);
  if (stream) _mm256_stream_si256((__m256i *)p, h);
  else _mm256_mask_storeu_epi16(p, m, h);
}

/* e^(sign x), relative error below 2e-7, sign = +1 or -1 (a constant at every call: the
 * negation folds into the constants). As kernels/cpu/elementwise_cpu.c's exp_approx: sign x =
 * n ln2 + r, |r| <= ln2/2, e^r by XR_EXP_MINIMAX, 2^n applied by vscalefps. The argument is
 * clamped to [-87.3, 87.3], so that neither e^x nor 1 / (1 + e^x) is ever a denormal (each
 * denormal result costs a microcode assist, about 33 times the vector's time: masked softmax
 * entries, silu of large |x|); below -87.3 the result is exact 0, above it e^87.3. NaN stays
 * NaN. */
XR_AVX512_INLINE __m512 xr_avx512_exp_signed(__m512 x, float sign) {
  const __m512 limit = _mm512_set1_ps(87.3f);
  __mmask16 tiny = _mm512_cmp_ps_mask(x, _mm512_set1_ps(sign * -87.3f), sign > 0 ? _CMP_LT_OQ : _CMP_GT_OQ);
  /* min and max return their second operand for a NaN, so NaN stays NaN */
  x = _mm512_max_ps(_mm512_sub_ps(_mm512_setzero_ps(), limit), _mm512_min_ps(limit, x));
  /* n = round(sign x / ln2) by the float adder: 1.5 * 2^23 leaves no fraction bits */
  const __m512 shifter = _mm512_set1_ps(12582912.0f);
  __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(sign * 1.44269504088896341f), shifter),
                           shifter);
  __m512 r = sign > 0 ? _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x)
                      : _mm512_fnmsub_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723e-6f), r);
  __m512 p = _mm512_set1_ps(XR_EXP_MINIMAX_5);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(XR_EXP_MINIMAX_4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(XR_EXP_MINIMAX_3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(XR_EXP_MINIMAX_2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(XR_EXP_MINIMAX_1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(XR_EXP_MINIMAX_0));
  return _mm512_maskz_scalef_ps((__mmask16)~tiny, p, n);
}

XR_AVX512_INLINE __m512 xr_avx512_exp(__m512 x) { return xr_avx512_exp_signed(x, 1.0f); }

/* 1 / d to within 2 float ulps: vrcp14ps's 14 bits and one Newton-Raphson step, a quarter of
 * the divider's time per vector. */
XR_AVX512_INLINE __m512 xr_avx512_recip(__m512 d) {
  __m512 r = _mm512_rcp14_ps(d);
  __m512 e = _mm512_fnmadd_ps(d, r, _mm512_set1_ps(1.0f));
  return _mm512_fmadd_ps(r, e, r);
}

/* silu(x) = x / (1 + e^-x) (the formula of elementwise_cpu.c). */
XR_AVX512_INLINE __m512 xr_avx512_silu(__m512 x) {
  __m512 e = xr_avx512_exp_signed(x, -1.0f);
  return _mm512_mul_ps(x, xr_avx512_recip(_mm512_add_ps(_mm512_set1_ps(1.0f), e)));
}

#endif
#endif
