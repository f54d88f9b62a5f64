/* The GEMM family's own OpenCL kernel (OpenCL C 1.2): a 64 x 64 output tile per 16 x 16
 * work-group, 4 x 4 outputs per work-item, K in steps of 16 through local memory, fp32
 * accumulation. Every operand is addressed through element offsets and strides (so views
 * need no sub-buffers and transposed weights no copies) and read in its own dtype, chosen at
 * run time: fp32, fp16 (vload_half: no cl_khr_fp16 needed), bf16 (ushort bits), fp8 (OCP
 * e4m3fn / e5m2 and AMD fnuz). out = result_scale * (alpha * scale_a[m] * scale_b[n] * A.B
 * + beta * C), rounded once. Block-scaled _scaled_mm (block > 0: mxfp8, mxfp4, nvfp4) instead
 * dequantizes each element of A and B as the tile is loaded: its code (fp8, or e2m1 nibbles two
 * per byte along K, the lower k in the low nibble) times the e8m0 / e4m3fn scale of its block of
 * `block` K elements (kernels/gemm.h). The arguments: kernels/gemm_args.h's block, filled by
 * kernels/gemm_device.c, and a table of per-batch element offsets (A, B, C, out). */

#include "float_formats_cl.h"
#include "gemm_args.h"

#define TS 64
#define TK 16
#define LS 16
#define WPT 4


/* Element (r, k) of a block-scaled operand (A: r = m; B: r = n, its strides swapped),
 * dequantized: code times the scale of block k / blk of row r (scales row-major, `pitch` apart). */
static float load_block(__global const uchar *X, long dt, long at, long r_stride, long k_stride,
                        long r, long k, __global const uchar *S, long s_at, long pitch, long blk,
                        long s_dt) {
  float v;
  if (dt == XR_F4E2M1X2) {
    uint byte = X[at + r * r_stride + (k >> 1) * k_stride];
    uint code = (k & 1) ? byte >> 4 : byte & 0x0fu;
    v = xr_e2m1_to_f32((uchar)code);
  } else {
    v = xr_fp8_decode_code((uchar)X[at + r * r_stride + k * k_stride], dt);
  }
  uint sb = S[s_at + r * pitch + k / blk];
  float scale =
      s_dt != XR_F8E8M0 ? xr_fp8_decode_code((uchar)sb, s_dt) : xr_e8m0_to_f32((uchar)sb);
  return v * scale;
}

static float load_elem(__global const uchar *base, long dt, long i) {
  if (dt == XR_F32) return ((__global const float *)base)[i];
  if (dt == XR_F16) return vload_half(i, (__global const half *)base);
  if (dt == XR_BF16) return xr_bf16_to_f32(((__global const ushort *)base)[i]);
  return xr_fp8_decode_code((uchar)base[i], dt);
}

static void store_elem(__global uchar *base, long dt, long i, float v) {
  if (dt == XR_F32) {
    ((__global float *)base)[i] = v;
  } else if (dt == XR_F16) {
    vstore_half_rte(v, i, (__global half *)base);
  } else if (dt == XR_BF16) {
    ((__global ushort *)base)[i] = xr_f32_to_bf16(v);
  } else {
    base[i] = xr_fp8_encode_code(v, dt);
  }
}

/* grid: (ceil(N / 64), ceil(M / 64), batch); block: (16, 16). batch_off holds per batch entry
 * the element offsets of A, B, C and the output (broadcast dims have offset 0). */
__kernel __attribute__((reqd_work_group_size(LS, LS, 1))) void xr_gemm_tiled(
    __global const uchar *A, __global const uchar *B, __global const uchar *C, __global uchar *O,
    __global const uchar *SA, __global const uchar *SB, __global const float *SR,
    __global const long *batch_off, const xr_gemm_args_t p) {
  __local float As[TK][TS + 1];
  __local float Bs[TK][TS + 1];
  int tx = (int)get_local_id(0), ty = (int)get_local_id(1), lid = ty * LS + tx;
  long n0 = (long)get_group_id(0) * TS, m0 = (long)get_group_id(1) * TS, bi = (long)get_group_id(2);
  long ao = p.a.offset + batch_off[4 * bi], bo = p.b.offset + batch_off[4 * bi + 1];
  long co = p.c.offset + batch_off[4 * bi + 2], oo = p.out.offset + batch_off[4 * bi + 3];
  float acc[WPT][WPT];
  for (int i = 0; i < WPT; i++)
    for (int j = 0; j < WPT; j++) acc[i][j] = 0.0f;

  for (long k0 = 0; k0 < p.K; k0 += TK) {
    for (int r = 0; r < (TS * TK) / (LS * LS); r++) {
      int e = lid + r * LS * LS;
      int mm = e / TK, kk = e % TK; /* consecutive work-items walk K: A is usually K-major */
      long m = m0 + mm, k = k0 + kk;
      if (!(m < p.M && k < p.K))
        As[kk][mm] = 0.0f;
      else if (p.block)
        As[kk][mm] = load_block(A, p.a_dtype, ao, p.a.row_stride, p.a.col_stride, m, k, SA,
                                p.scale_a_offset, p.scale_a_stride, p.block, p.scale_dtype);
      else
        As[kk][mm] = load_elem(A, p.a_dtype, ao + m * p.a.row_stride + k * p.a.col_stride);
      int kb = p.b.row_stride == 1 ? e % TK : e / TS, nb = p.b.row_stride == 1 ? e / TK : e % TS;
      long n = n0 + nb, kq = k0 + kb;
      if (!(n < p.N && kq < p.K))
        Bs[kb][nb] = 0.0f;
      else if (p.block)
        Bs[kb][nb] = load_block(B, p.b_dtype, bo, p.b.col_stride, p.b.row_stride, n, kq, SB,
                                p.scale_b_offset, p.scale_b_stride, p.block, p.scale_dtype);
      else
        Bs[kb][nb] = load_elem(B, p.b_dtype, bo + kq * p.b.row_stride + n * p.b.col_stride);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < TK; kk++) {
      float a[WPT], b[WPT];
      for (int i = 0; i < WPT; i++) a[i] = As[kk][ty + LS * i];
      for (int j = 0; j < WPT; j++) b[j] = Bs[kk][tx + LS * j];
      for (int i = 0; i < WPT; i++)
        for (int j = 0; j < WPT; j++) acc[i][j] = mad(a[i], b[j], acc[i][j]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }

  float result_scale = p.has_scale_result ? SR[p.scale_result_offset] : 1.0f;
  for (int i = 0; i < WPT; i++) {
    long m = m0 + ty + LS * i;
    if (m >= p.M) continue;
    __global const float *sa = (__global const float *)SA, *sb = (__global const float *)SB;
    float row_scale =
        p.alpha * (p.has_scale_a ? sa[p.scale_a_offset + m * p.scale_a_stride] : 1.0f);
    for (int j = 0; j < WPT; j++) {
      long n = n0 + tx + LS * j;
      if (n >= p.N) continue;
      float v = row_scale * (p.has_scale_b ? sb[p.scale_b_offset + n * p.scale_b_stride] : 1.0f) *
                acc[i][j];
      if (p.has_c)
        v += p.beta * load_elem(C, p.c_dtype, co + m * p.c.row_stride + n * p.c.col_stride);
      store_elem(O, p.out_dtype, oo + m * p.out.row_stride + n * p.out.col_stride,
                 v * result_scale);
    }
  }
}

/* out[b][m][n] = C[b][m][n] for the CLBlast path, whose GEMM accumulates into its output:
 * grid (ceil(N / 16), ceil(M / 16), batch), block (16, 16). Same dtype on both sides. */
__kernel void xr_gemm_copy_addend(__global const uchar *C, __global uchar *O,
                                  __global const long *batch_off, const xr_gemm_args_t p) {
  long n = get_global_id(0), m = get_global_id(1), bi = get_global_id(2);
  if (m >= p.M || n >= p.N) return;
  long src = p.c.offset + batch_off[4 * bi + 2] + m * p.c.row_stride + n * p.c.col_stride;
  long dst = p.out.offset + batch_off[4 * bi + 3] + m * p.out.row_stride + n * p.out.col_stride;
  if (p.out_dtype == XR_F32) ((__global float *)O)[dst] = ((__global const float *)C)[src];
  else ((__global ushort *)O)[dst] = ((__global const ushort *)C)[src];
}
