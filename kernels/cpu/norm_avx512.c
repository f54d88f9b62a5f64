/* Row passes of cpu.norm / cpu.softmax and cpu.rotary's heads on AVX-512: see norm_avx512.h. */
#include "kernels/cpu/norm_avx512.h"

#include "kernels/cpu/avx512.h"

#ifdef XR_HAVE_AVX512_PATHS

XR_AVX512 xr_row_stats_t xr_rows_avx512_widen(float *dst, const void *src, xr_dtype_t dt,
                                              int64_t n) {
  const int64_t esize = dt == XR_DTYPE_F32 ? 4 : 2;
  __m512 sum = _mm512_setzero_ps(), sum_sq = _mm512_setzero_ps();
  __m512 max = _mm512_set1_ps(-__builtin_inff());
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = xr_avx512_lanes(n - i);
    __m512 v = xr_avx512_load((const char *)src + i * esize, dt, m);
    if (dst) _mm512_mask_storeu_ps(dst + i, m, v);
    sum = _mm512_add_ps(sum, v); /* lanes past n hold 0 */
    sum_sq = _mm512_fmadd_ps(v, v, sum_sq);
    max = _mm512_mask_max_ps(max, m, v, max);
  }
  return (xr_row_stats_t){_mm512_reduce_add_ps(sum), _mm512_reduce_add_ps(sum_sq),
                          _mm512_reduce_max_ps(max)};
}

XR_AVX512 float xr_rows_avx512_add_round(float *dst, void *residual_out, const void *residual_in,
                                         const void *x, xr_dtype_t dt, int64_t n, bool rounded) {
  const int64_t esize = dt == XR_DTYPE_F32 ? 4 : 2;
  __m512 sum_sq = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = xr_avx512_lanes(n - i);
    char *res = (char *)residual_out + i * esize;
    __m512 v = _mm512_add_ps(xr_avx512_load((const char *)x + i * esize, dt, m),
                             xr_avx512_load((const char *)residual_in + i * esize, dt, m));
    xr_avx512_store(res, dt, v, m, false);
    if (rounded && dt != XR_DTYPE_F32) v = xr_avx512_load(res, dt, m); /* as stored */
    _mm512_mask_storeu_ps(dst + i, m, v);
    sum_sq = _mm512_fmadd_ps(v, v, sum_sq);
  }
  return _mm512_reduce_add_ps(sum_sq);
}

XR_AVX512 float xr_rows_avx512_sum_sq(const float *x, int64_t n, float shift) {
  const __m512 sh = _mm512_set1_ps(shift);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 k = xr_avx512_lanes(n - i);
    __m512 d = _mm512_maskz_sub_ps(k, _mm512_maskz_loadu_ps(k, x + i), sh);
    sum = _mm512_fmadd_ps(d, d, sum);
  }
  return _mm512_reduce_add_ps(sum);
}

XR_AVX512 float xr_rows_avx512_exp_sum(float *y, const float *x, int64_t n, float m) {
  const __m512 shift = _mm512_set1_ps(m);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 k = xr_avx512_lanes(n - i);
    __m512 e = xr_avx512_exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), shift));
    _mm512_mask_storeu_ps(y + i, k, e);
    sum = _mm512_mask_add_ps(sum, k, sum, e);
  }
  return _mm512_reduce_add_ps(sum);
}

XR_AVX512_INLINE void affine_at(char *dst, xr_dtype_t dt, int64_t esize, const float *x,
                                const float *w, const float *b, __m512 shift, __m512 scale,
                                int64_t i, __mmask16 m, bool stream) {
  __m512 v = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), shift), scale);
  if (w) v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, w + i));
  if (b) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, b + i));
  xr_avx512_store(dst + i * esize, dt, v, m, stream);
}

XR_AVX512 void xr_rows_avx512_affine_store(void *dst, xr_dtype_t dt, const float *x, int64_t n,
                                           float shift, float scale, const float *w,
                                           const float *b, bool stream) {
  const int64_t esize = dt == XR_DTYPE_F32 ? 4 : 2;
  const __m512 sh = _mm512_set1_ps(shift), sc = _mm512_set1_ps(scale);
  char *out = dst;
  int64_t i = 0;
  if (stream) { /* whole aligned vectors only: plain stores up to the first */
    int64_t align = 16 * esize, head = (align - (int64_t)((uintptr_t)out % (uintptr_t)align)) % align;
    if (head % esize) {
      stream = false;
    } else {
      i = head / esize < n ? head / esize : n;
      if (i > 0) affine_at(out, dt, esize, x, w, b, sh, sc, 0, xr_avx512_lanes(i), false);
    }
  }
  for (; i + 16 <= n; i += 16) affine_at(out, dt, esize, x, w, b, sh, sc, i, 0xffff, stream);
  if (i < n) affine_at(out, dt, esize, x, w, b, sh, sc, i, xr_avx512_lanes(n - i), false);
}

XR_AVX512 void xr_rotary_avx512_head(void *head, xr_dtype_t dt, const float *c, const float *sn,
                                     int64_t embed, bool neox) {
  char *h = head;
  const int64_t esize = dt == XR_DTYPE_F32 ? 4 : 2;
  if (neox) { /* pairs (i, embed + i) */
    for (int64_t i = 0; i < embed; i += 16) {
      __mmask16 m = xr_avx512_lanes(embed - i);
      char *px = h + i * esize, *py = h + (embed + i) * esize;
      __m512 x = xr_avx512_load(px, dt, m), y = xr_avx512_load(py, dt, m);
      __m512 cv = _mm512_maskz_loadu_ps(m, c + i), sv = _mm512_maskz_loadu_ps(m, sn + i);
      xr_avx512_store(px, dt, _mm512_fmsub_ps(x, cv, _mm512_mul_ps(y, sv)), m, false);
      xr_avx512_store(py, dt, _mm512_fmadd_ps(y, cv, _mm512_mul_ps(x, sv)), m, false);
    }
    return;
  }
  /* GPT-J, bf16, embed a multiple of 16: neighbours (2i, 2i + 1) are the even and odd lanes */
  for (int64_t i = 0; i < embed; i += 16) {
    __m512 x, y;
    xr_avx512_load_bf16_pairs(h + 4 * i, &x, &y);
    __m512 cv = _mm512_loadu_ps(c + i), sv = _mm512_loadu_ps(sn + i);
    _mm512_storeu_si512(h + 4 * i,
                        xr_avx512_bf16_encode_pairs(_mm512_fmsub_ps(x, cv, _mm512_mul_ps(y, sv)),
                                                    _mm512_fmadd_ps(y, cv, _mm512_mul_ps(x, sv))));
  }
}

#else /* no AVX-512 paths in this build: never called (xr_cpu_avx512() is false) */

xr_row_stats_t xr_rows_avx512_widen(float *dst, const void *src, xr_dtype_t dt, int64_t n) {
  (void)dst, (void)src, (void)dt, (void)n;
  return (xr_row_stats_t){0, 0, 0};
}
float xr_rows_avx512_add_round(float *dst, void *residual_out, const void *residual_in,
                               const void *x, xr_dtype_t dt, int64_t n, bool rounded) {
  (void)dst, (void)residual_out, (void)residual_in, (void)x, (void)dt, (void)n, (void)rounded;
  return 0;
}
float xr_rows_avx512_sum_sq(const float *x, int64_t n, float shift) {
  (void)x, (void)n, (void)shift;
  return 0;
}
float xr_rows_avx512_exp_sum(float *y, const float *x, int64_t n, float m) {
  (void)y, (void)x, (void)n, (void)m;
  return 0;
}
void xr_rows_avx512_affine_store(void *dst, xr_dtype_t dt, const float *x, int64_t n, float shift,
                                 float scale, const float *w, const float *b, bool stream) {
  (void)dst, (void)dt, (void)x, (void)n, (void)shift, (void)scale, (void)w, (void)b, (void)stream;
}
void xr_rotary_avx512_head(void *head, xr_dtype_t dt, const float *c, const float *sn,
                           int64_t embed, bool neox) {
  (void)head, (void)dt, (void)c, (void)sn, (void)embed, (void)neox;
}

#endif
