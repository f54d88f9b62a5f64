/* The packing functions of kernels/cpu/gemm_blocked.c. Deliberately without an include guard:
 * that file includes it twice, with PACK_ATTR / PACK_NAME set for an AVX-512 build (where the
 * fp16/bf16 conversions become vector instructions) and for any x86-64. */
/* Packs A[m0 .. m0+mc) x [k0 .. k0+kc) into MR-row panels: ap[panel][k][r], zero-padded. */
PACK_ATTR static void PACK_NAME(pack_a)(const blocked_state_t *s, int64_t a_off, int64_t m0, int64_t mc, int64_t k0,
                   int64_t kc, float *ap) {
  const xr_gemm_problem_t *p = s->p;
  for (int64_t r0 = 0; r0 < mc; r0 += MR) {
    float *panel = ap + r0 * kc;
    for (int64_t r = 0; r < MR; r++) {
      if (r0 + r < mc && p->block) {
        load_block(s, XR_GEMM_A, XR_GEMM_SCALE_A, s->lut_a, a_off, p->a.row_stride,
                   p->a.col_stride, m0 + r0 + r, k0, kc, panel + r, MR);
      } else if (r0 + r < mc) {
        int64_t start = a_off + (m0 + r0 + r) * p->a.row_stride + k0 * p->a.col_stride;
        load_f32(s->base[XR_GEMM_A], p->a_dtype, s->lut_a, start, p->a.col_stride, kc, panel + r, MR);
      } else {
        for (int64_t k = 0; k < kc; k++) panel[k * MR + r] = 0;
      }
    }
  }
}

/* Packs B[k0 .. k0+kc) x [n0 .. n0+nc) into NR-column panels: bp[panel][k][j], zero-padded.
 * Walks along whichever of B's dimensions is contiguous (along K when block-scaled). */
PACK_ATTR static void PACK_NAME(pack_b)(const blocked_state_t *s, int64_t b_off, int64_t k0, int64_t kc, int64_t n0,
                   int64_t nc, float *bp) {
  const xr_gemm_problem_t *p = s->p;
  bool along_k = llabs(p->b.row_stride) < llabs(p->b.col_stride);
  for (int64_t j0 = 0; j0 < nc; j0 += NR) {
    float *panel = bp + j0 * kc;
    int64_t w = nc - j0 < NR ? nc - j0 : NR;
    if (p->block) {
      for (int64_t j = 0; j < w; j++)
        load_block(s, XR_GEMM_B, XR_GEMM_SCALE_B, s->lut_b, b_off, p->b.col_stride,
                   p->b.row_stride, n0 + j0 + j, k0, kc, panel + j, NR);
    } else if (along_k) {
      for (int64_t j = 0; j < w; j++) {
        int64_t start = b_off + k0 * p->b.row_stride + (n0 + j0 + j) * p->b.col_stride;
        load_f32(s->base[XR_GEMM_B], p->b_dtype, s->lut_b, start, p->b.row_stride, kc, panel + j, NR);
      }
    } else {
      for (int64_t k = 0; k < kc; k++) {
        int64_t start = b_off + (k0 + k) * p->b.row_stride + (n0 + j0) * p->b.col_stride;
        load_f32(s->base[XR_GEMM_B], p->b_dtype, s->lut_b, start, p->b.col_stride, w,
                 panel + k * NR, 1);
      }
    }
    if (w < NR)
      for (int64_t k = 0; k < kc; k++)
        for (int64_t j = w; j < NR; j++) panel[k * NR + j] = 0;
  }
}

