// The attention kernel of kernels/gpu/attention.cu and paged_attention.cu (include it after
// hip_compat.h, dtype_io.h and attention_args.h; kernels/embed_sources.sh inlines them). It
// is kernels/opencl/attention.cl's kernel in CUDA, one warp per query row instead of one
// work-item, and follows kernels/attention.h's problem exactly:
//   out[b, i, h, :] = sum_t softmax_t(s) V[b, t, h / group, :],
//   s = cap(scale * q . k_t) - slope * |t - (i + diag)| + mask   over the keys row i may see.
//
// A block holds blockDim.x / warpSize consecutive rows (query position i, head kvh * group + g)
// of one (sequence, kv head), so the rows of a GQA group and neighbouring query positions share
// the key and value tiles the block stages in shared memory, BK tokens at a time, converted to
// fp32 (fp8 caches dequantised with their scale). Each warp keeps its row's running max, running
// sum and fp32 accumulators (online softmax); a lane owns dimensions lane, lane + warpSize, ...
// of q and of the accumulator, so a score is one warp-wide sum. Only BK scores per row exist at
// any time, never the score matrix. Grid: (row blocks, sequences x kv heads looped past the grid,
// partitions of paged_attention_v2).

#define XR_ATTN_INF __int_as_float(0x7f800000)

// min / max of 64-bit integers (the vendors' overloads differ between versions).
static __device__ __forceinline__ long long xr_attn_min(long long a, long long b) { return a < b ? a : b; }
static __device__ __forceinline__ long long xr_attn_max(long long a, long long b) { return a > b ? a : b; }

static __device__ __forceinline__ long long xr_attn_index(const void *base, long long off, long long is64,
                                                          long long i) {
  return is64 ? ((const long long *)base)[off + i] : (long long)((const int *)base)[off + i];
}

// A mask or ALiBi element of kind XR_ATTN_ELEM_*.
static __device__ __forceinline__ float xr_attn_load_elem(const void *base, long long elem, long long i) {
  if (elem == XR_ATTN_ELEM_F32) return ((const float *)base)[i];
  if (elem == XR_ATTN_ELEM_F16) return xr_half_to_float(((const unsigned short *)base)[i]);
  if (elem == XR_ATTN_ELEM_BF16) return xr_bf16_to_f32(((const unsigned short *)base)[i]);
  return (float)((const unsigned char *)base)[i];
}

struct xr_attn_seq {
  long long q_len, k_len, qstart, kstart, diag;
};

// One sequence's geometry: xr_attn_seq() of kernels/attention.h.
static __device__ xr_attn_seq xr_attn_get_seq(const xr_attn_args_t &p, const void *cu_q, const void *cu_k,
                                              const void *lens, const void *indptr, long long b) {
  xr_attn_seq s;
  s.q_len = p.max_q, s.k_len = p.max_k, s.qstart = 0, s.kstart = 0;
  if (p.cu_q_off >= 0) {
    s.qstart = xr_attn_index(cu_q, p.cu_q_off, p.cu_q_64, b);
    s.q_len = xr_attn_index(cu_q, p.cu_q_off, p.cu_q_64, b + 1) - s.qstart;
  }
  if (p.cu_k_off >= 0) {
    s.kstart = xr_attn_index(cu_k, p.cu_k_off, p.cu_k_64, b);
    s.k_len = xr_attn_index(cu_k, p.cu_k_off, p.cu_k_64, b + 1) - s.kstart;
  }
  if (p.paged == 2)
    s.k_len = (xr_attn_index(indptr, p.indptr_off, p.indptr_64, b + 1) -
               xr_attn_index(indptr, p.indptr_off, p.indptr_64, b)) * p.page_size;
  if (p.lens_off >= 0) s.k_len = xr_attn_index(lens, p.lens_off, p.lens_64, b);
  if (s.q_len < 0) s.q_len = 0;
  if (s.k_len < 0) s.k_len = 0;
  if (s.q_len > p.max_q && p.cu_q_off < 0) s.q_len = p.max_q;
  s.diag = p.bottom_right ? s.k_len - s.q_len : 0;
  return s;
}

// Keys row i may see: [*lo, *hi).
static __device__ __forceinline__ void xr_attn_key_range(const xr_attn_args_t &p, const xr_attn_seq &s,
                                                         long long i, long long *lo, long long *hi) {
  long long l = 0, r = s.k_len, c = i + s.diag;
  if (p.causal && c + 1 < r) r = c + 1;
  if (p.window_right >= 0 && c + p.window_right + 1 < r) r = c + p.window_right + 1;
  if (p.window_left >= 0 && c - p.window_left > l) l = c - p.window_left;
  *lo = l;
  *hi = r;
}

// Storage index of key token t's first element (kv head 0, dim 0) and of its value.
static __device__ __forceinline__ void xr_attn_token(const xr_attn_args_t &p, const void *table,
                                                     const void *indptr, long long b, const xr_attn_seq &s,
                                                     long long t, long long *ki, long long *vi) {
  long long page = b, slot = s.kstart + t;
  if (p.paged) {
    long long e = t / p.page_size;
    slot = t % p.page_size;
    if (p.paged == 1) {
      page = xr_attn_index(table, p.table_off, p.table_64, b * p.table_sb + e * p.table_sp);
    } else {
      long long first = xr_attn_index(indptr, p.indptr_off, p.indptr_64, b);
      page = xr_attn_index(table, p.table_off, p.table_64, first + e);
    }
  }
  *ki = p.k_off + page * p.k_sp + slot * p.k_ss;
  *vi = p.v_off + page * p.v_sp + slot * p.v_ss;
}

static __device__ __forceinline__ float xr_attn_warp_max(float value) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2)
    value = fmaxf(value, __shfl_xor_sync(XR_FULL_MASK, value, offset));
  return value;
}

// The storage of the run-time typed kernels (xr_attention_any*, ANY): bytes whose element kind
// and format the parameters give (p.q_elem, p.o_elem, p.kv_elem). Its load and store are never
// called: those kernels go through xr_attn_load_elem_kind / xr_attn_store_elem_kind.
struct xr_io_any {
  typedef unsigned char storage;
  static __device__ __forceinline__ float load(const unsigned char *, long long) { return 0.0f; }
  static __device__ __forceinline__ void store(unsigned char *, long long, float) {}
};

// Element i of an array of kind `elem` (XR_ATTN_ELEM_F32/F16/BF16/FP8, fp8 in format `fp8`).
static __device__ __forceinline__ float xr_attn_load_elem_kind(const void *base, long long elem, long long fp8,
                                                               long long i) {
  if (elem == XR_ATTN_ELEM_FP8) {
    const unsigned char *b = (const unsigned char *)base;
    return fp8 == XR_ATTN_F8E4M3FN     ? xr_io_f8e4m3fn::load(b, i)
           : fp8 == XR_ATTN_F8E5M2     ? xr_io_f8e5m2::load(b, i)
           : fp8 == XR_ATTN_F8E4M3FNUZ ? xr_io_f8e4m3fnuz::load(b, i)
                                           : xr_io_f8e5m2fnuz::load(b, i);
  }
  return xr_attn_load_elem(base, elem, i);
}

static __device__ __forceinline__ void xr_attn_store_elem_kind(void *base, long long elem, long long fp8, long long i,
                                                               float v) {
  if (elem == XR_ATTN_ELEM_F32) {
    xr_io_f32::store((float *)base, i, v);
  } else if (elem == XR_ATTN_ELEM_F16) {
    xr_io_f16::store((unsigned short *)base, i, v);
  } else if (elem == XR_ATTN_ELEM_BF16) {
    xr_io_bf16::store((unsigned short *)base, i, v);
  } else {
    unsigned char *b = (unsigned char *)base;
    if (fp8 == XR_ATTN_F8E4M3FN) xr_io_f8e4m3fn::store(b, i, v);
    else if (fp8 == XR_ATTN_F8E5M2) xr_io_f8e5m2::store(b, i, v);
    else if (fp8 == XR_ATTN_F8E4M3FNUZ) xr_io_f8e4m3fnuz::store(b, i, v);
    else xr_io_f8e5m2fnuz::store(b, i, v);
  }
}

// A query element: of storage QIO, or (ANY) of p.q_elem, an fp8 query dequantised by q_scale.
template <class QIO, bool ANY>
static __device__ __forceinline__ float xr_attn_load_q(const typename QIO::storage *q, long long i,
                                                       const xr_attn_args_t &p) {
  if (ANY) return xr_attn_load_elem_kind(q, p.q_elem, p.q_fp8, i) * p.q_scale;
  return QIO::load(q, i);
}

// An out / tmp_out element; `o_inv` (ANY with an output scale): 1 / output_scale, then the
// value is clamped to the fp8 output's range, as vLLM's fp8 epilogue does.
template <class QIO, bool ANY>
static __device__ __forceinline__ void xr_attn_store_o(typename QIO::storage *o, long long i, float v,
                                                       const xr_attn_args_t &p, bool scaled, float o_inv) {
  if (!ANY) {
    QIO::store(o, i, v);
    return;
  }
  if (scaled) v = fmaxf(-p.o_max, fminf(v * o_inv, p.o_max));
  xr_attn_store_elem_kind(o, p.o_elem, p.o_fp8, i, v);
}

// Keys and values of storage IO (ANY: of kind p.kv_elem), or (FP8) bytes of an 8-bit float
// format decoded through a 256-entry table the block fills once (one kernel serves the four
// formats).
template <class IO, bool FP8, bool ANY = false>
static __device__ __forceinline__ float xr_attn_load_kv(const void *base, long long i, const float *fp8_table,
                                                        const xr_attn_args_t &p) {
  if (FP8) return fp8_table[((const unsigned char *)base)[i]];
  if (ANY) return xr_attn_load_elem_kind(base, p.kv_elem, 0, i);
  return IO::load((const typename IO::storage *)base, i);
}

template <class QIO, bool FP8, bool ANY = false>
static __device__ void xr_attention(const typename QIO::storage *q, const void *k, const void *v,
                                    typename QIO::storage *out, float *lse, const void *cu_q, const void *cu_k,
                                    const void *lens, const void *table, const void *indptr, const void *alibi,
                                    const void *mask, const float *k_scale, const float *v_scale, float *exp_sums,
                                    float *max_logits, typename QIO::storage *tmp_out,
                                    const xr_attn_args_t &p, const float *o_scale = nullptr) {
  const int BK = XR_ATTN_BK, PER_LANE = XR_ATTN_GPU_PER_LANE;
  extern __shared__ float xr_attn_tiles[];  // BK x D keys, then BK x Dv values
  __shared__ long long token_k[XR_ATTN_BK], token_v[XR_ATTN_BK];
  __shared__ float fp8_table[FP8 ? 256 : 1];
  const long long G = p.group;
  const int D = (int)p.head_dim, Dv = (int)p.head_dim_v, kx = (int)p.k_x;  // at most DMAX
  float *ktile = xr_attn_tiles, *vtile = xr_attn_tiles + BK * D;
  const int lane = threadIdx.x % warpSize;
  const long long rows_per_block = blockDim.x / warpSize, warp = threadIdx.x / warpSize;
  const long long part = blockIdx.z;
  const float ks = p.kv_fp8 ? (p.k_scale_off >= 0 ? k_scale[p.k_scale_off] : p.k_scale) : 1.0f;
  const float vs = p.kv_fp8 ? (p.v_scale_off >= 0 ? v_scale[p.v_scale_off] : p.v_scale) : 1.0f;
  if (FP8) {
    for (int c = threadIdx.x; c < 256; c += blockDim.x) {
      const unsigned char byte = (unsigned char)c;
      fp8_table[c] = p.fp8_format == XR_ATTN_F8E4M3FN   ? xr_io_f8e4m3fn::load(&byte, 0)
                     : p.fp8_format == XR_ATTN_F8E5M2   ? xr_io_f8e5m2::load(&byte, 0)
                     : p.fp8_format == XR_ATTN_F8E4M3FNUZ ? xr_io_f8e4m3fnuz::load(&byte, 0)
                                                             : xr_io_f8e5m2fnuz::load(&byte, 0);
    }
    __syncthreads();
  }

  for (long long item = blockIdx.y; item < p.batch * p.kv_heads; item += gridDim.y) {
    const long long b = item / p.kv_heads, kvh = item % p.kv_heads;
    const xr_attn_seq s = xr_attn_get_seq(p, cu_q, cu_k, lens, indptr, b);
    const long long row0 = (long long)blockIdx.x * rows_per_block, row = row0 + warp;
    const long long i = row / G, head = kvh * G + row % G;
    if (p.lse_off >= 0 && part == 0 && lane == 0 && i >= s.q_len && i < p.lse_rows)
      lse[p.lse_off + b * p.lse_sb + head * p.lse_sh + i] = XR_ATTN_INF;  // efficient-kernel padding
    long long i_first = row0 / G, i_last = (row0 + rows_per_block - 1) / G;
    if (i_first >= s.q_len) continue;  // the whole block: no barrier is skipped by a part of it
    if (i_last >= s.q_len) i_last = s.q_len - 1;
    long long plo = 0, phi = s.k_len;
    if (p.part_size > 0) {
      plo = part * p.part_size;
      if (plo >= s.k_len) continue;  // vLLM leaves partitions past the sequence untouched
      phi = xr_attn_min(plo + p.part_size, s.k_len);
    }
    // The rows' key ranges grow with i: the block needs [range(i_first).lo, range(i_last).hi).
    long long glo, ghi, unused;
    xr_attn_key_range(p, s, i_first, &glo, &unused);
    xr_attn_key_range(p, s, i_last, &unused, &ghi);
    glo = xr_attn_max(glo, plo);
    ghi = xr_attn_min(ghi, phi);

    // Everything below that decides a warp's path (valid, lo, hi, j, n) is the same on all of
    // its lanes, so the warp-wide sums and shuffles never miss a lane.
    const bool valid = i < s.q_len;
    float qv[PER_LANE], acc[PER_LANE];
    float m = -XR_ATTN_INF, l = 0.0f, slope = 0.0f;
    long long lo = 0, hi = 0;
#pragma unroll
    for (int r = 0; r < PER_LANE; r++) qv[r] = acc[r] = 0.0f;
    if (valid) {
      const long long qi = p.q_off + b * p.q_sb + (s.qstart + i) * p.q_ss + head * p.q_sh;
#pragma unroll
      for (int r = 0; r < PER_LANE; r++) {
        const int d = lane + r * warpSize;
        if (d < D) qv[r] = xr_attn_load_q<QIO, ANY>(q, qi + d * p.q_sd, p) * p.scale;
      }
      xr_attn_key_range(p, s, i, &lo, &hi);
      lo = xr_attn_max(lo, plo);
      hi = xr_attn_min(hi, phi);
      if (p.alibi_off >= 0)
        slope = xr_attn_load_elem(alibi, p.alibi_elem, p.alibi_off + b * p.alibi_sb + head * p.alibi_sh);
    }
    for (long long t0 = glo; t0 < ghi; t0 += BK) {
      const int n = (int)xr_attn_min((long long)BK, ghi - t0);
      if ((int)threadIdx.x < n) {
        long long ki, vi;
        xr_attn_token(p, table, indptr, b, s, t0 + threadIdx.x, &ki, &vi);
        token_k[threadIdx.x] = ki + kvh * p.k_sh;
        token_v[threadIdx.x] = vi + kvh * p.v_sh;
      }
      __syncthreads();
      for (int e = threadIdx.x; e < n * D; e += blockDim.x) {
        const int j = e / D, d = e % D;
        const long long index = token_k[j] + (long long)(d / kx) * p.k_sdx + (long long)(d % kx) * p.k_sd;
        ktile[e] = xr_attn_load_kv<QIO, FP8, ANY>(k, index, fp8_table, p) * ks;
      }
      for (int e = threadIdx.x; e < n * Dv; e += blockDim.x) {
        const int j = e / Dv, d = e % Dv;
        vtile[e] = xr_attn_load_kv<QIO, FP8, ANY>(v, token_v[j] + d * p.v_sd, fp8_table, p) * vs;
      }
      __syncthreads();
      if (valid) {
        // Lane j keeps the score of key t0 + j (-inf: not seen), then its weight.
        float score = -XR_ATTN_INF;
        for (int j = 0; j < n; j++) {
          const long long t = t0 + j;
          if (t < lo || t >= hi) continue;
          float partial = 0.0f;
#pragma unroll
          for (int r = 0; r < PER_LANE; r++) {
            const int d = lane + r * warpSize;
            if (d < D) partial = fmaf(qv[r], ktile[j * D + d], partial);
          }
          float x = xr_warp_sum(partial);
          if (p.softcap > 0.0f) x = p.softcap * tanhf(x / p.softcap);
          if (p.alibi_off >= 0) x -= slope * fabsf((float)(t - (i + s.diag)));
          if (p.mask_kind != 0) {
            const float mv = xr_attn_load_elem(
                mask, p.mask_elem, p.mask_off + b * p.mask_sb + head * p.mask_sh + i * p.mask_sq + t * p.mask_sk);
            if (p.mask_kind == 1) x = mv != 0.0f ? x : -XR_ATTN_INF;
            else x += mv;
          }
          if (lane == j) score = x;
        }
        const float mnew = fmaxf(m, xr_attn_warp_max(score));
        if (mnew != -XR_ATTN_INF) {
          const float alpha = m == -XR_ATTN_INF ? 0.0f : expf(m - mnew);
          const float weight = score == -XR_ATTN_INF ? 0.0f : expf(score - mnew);
          l = l * alpha + xr_warp_sum(weight);
#pragma unroll
          for (int r = 0; r < PER_LANE; r++) acc[r] *= alpha;
          for (int j = 0; j < n; j++) {
            const float pj = __shfl_sync(XR_FULL_MASK, weight, j);
            if (pj == 0.0f) continue;
#pragma unroll
            for (int r = 0; r < PER_LANE; r++) {
              const int d = lane + r * warpSize;
              if (d < Dv) acc[r] = fmaf(pj, vtile[j * Dv + d], acc[r]);
            }
          }
          m = mnew;
        }
      }
      __syncthreads();
    }
    if (!valid) continue;
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    if (p.part_size > 0) {
      if (lane == 0) {
        max_logits[p.ml_off + b * p.ml_sb + head * p.ml_sh + part * p.ml_sp] = m;
        exp_sums[p.es_off + b * p.es_sb + head * p.es_sh + part * p.es_sp] = l;
      }
      const long long to = p.to_off + b * p.to_sb + head * p.to_sh + part * p.to_sp;
#pragma unroll
      for (int r = 0; r < PER_LANE; r++) {
        const int d = lane + r * warpSize;
        if (d < Dv) xr_attn_store_o<QIO, ANY>(tmp_out, to + d * p.to_sd, acc[r] * inv, p, false, 1.0f);
      }
      continue;
    }
    const long long oi = p.o_off + b * p.o_sb + (s.qstart + i) * p.o_ss + head * p.o_sh;
    const bool scaled = ANY && p.o_scale_off >= 0;
    const float o_inv = scaled ? 1.0f / o_scale[p.o_scale_off] : 1.0f;
#pragma unroll
    for (int r = 0; r < PER_LANE; r++) {
      const int d = lane + r * warpSize;
      if (d < Dv) xr_attn_store_o<QIO, ANY>(out, oi + d * p.o_sd, acc[r] * inv, p, scaled, o_inv);
    }
    if (p.lse_off >= 0 && lane == 0)
      lse[p.lse_off + b * p.lse_sb + head * p.lse_sh + (s.qstart + i) * p.lse_ss] =
          l > 0.0f ? m + logf(l) : p.empty_lse;
  }
}

// paged_attention_v2's reduction: one thread per output element (dim, head, sequence).
template <class QIO>
static __device__ void xr_attention_combine(const void *cu_q, const void *cu_k, const void *lens,
                                            const void *indptr, typename QIO::storage *out, const float *exp_sums,
                                            const float *max_logits, const typename QIO::storage *tmp_out,
                                            const xr_attn_args_t &p) {
  const long long d = (long long)blockIdx.x * blockDim.x + threadIdx.x, head = blockIdx.y;
  if (d >= p.head_dim_v) return;
  for (long long b = blockIdx.z; b < p.batch; b += gridDim.z) {
    const xr_attn_seq s = xr_attn_get_seq(p, cu_q, cu_k, lens, indptr, b);
    const long long parts = (s.k_len + p.part_size - 1) / p.part_size;
    const float *ml = max_logits + p.ml_off + b * p.ml_sb + head * p.ml_sh;
    const float *es = exp_sums + p.es_off + b * p.es_sb + head * p.es_sh;
    float gmax = -XR_ATTN_INF, gsum = 0.0f, acc = 0.0f;
    for (long long part = 0; part < parts; part++) gmax = fmaxf(gmax, ml[part * p.ml_sp]);
    for (long long part = 0; part < parts; part++) {
      const float w = parts == 1 ? 1.0f : es[part * p.es_sp] * expf(ml[part * p.ml_sp] - gmax);
      gsum += w;
      acc += w * QIO::load(tmp_out, p.to_off + b * p.to_sb + head * p.to_sh + part * p.to_sp + d * p.to_sd);
    }
    QIO::store(out, p.o_off + b * p.o_sb + head * p.o_sh + d * p.o_sd, gsum > 0.0f ? acc / gsum : 0.0f);
  }
}

// The run-time typed entries (xr_attention_any, xr_attention_any_fp8): queries, outputs and a
// float cache of any kind the parameters give (fp8 queries and outputs among them), with an
// output scale tensor; FP8: the cache holds 8-bit floats (p.fp8_format).
#define XR_ATTENTION_ANY_KERNEL(suffix, FP8)                                                                  \
  extern "C" __global__ void __launch_bounds__(XR_ATTN_GPU_MAX_THREADS) xr_attention_##suffix(                \
      const unsigned char *q, const void *k, const void *v, unsigned char *out, float *lse, const void *cu_q,   \
      const void *cu_k, const void *lens, const void *table, const void *indptr, const void *alibi,           \
      const void *mask, const float *k_scale, const float *v_scale, float *exp_sums, float *max_logits,       \
      unsigned char *tmp_out, const float *o_scale, xr_attn_args_t p) {                                 \
    xr_attention<xr_io_any, FP8, true>(q, k, v, out, lse, cu_q, cu_k, lens, table, indptr, alibi, mask,        \
                                       k_scale, v_scale, exp_sums, max_logits, tmp_out, p, o_scale);          \
  }

// The extern "C" entry for queries of storage QIO: xr_attention_<suffix>; FP8: the cache holds
// 8-bit floats (p.fp8_format), else the queries' type.
#define XR_ATTENTION_KERNEL(suffix, QIO, FP8)                                                                \
  extern "C" __global__ void __launch_bounds__(XR_ATTN_GPU_MAX_THREADS) xr_attention_##suffix(                \
      const QIO::storage *q, const void *k, const void *v, QIO::storage *out, float *lse, const void *cu_q,  \
      const void *cu_k, const void *lens, const void *table, const void *indptr, const void *alibi,          \
      const void *mask, const float *k_scale, const float *v_scale, float *exp_sums, float *max_logits,      \
      QIO::storage *tmp_out, xr_attn_args_t p) {                                                        \
    xr_attention<QIO, FP8>(q, k, v, out, lse, cu_q, cu_k, lens, table, indptr, alibi, mask, k_scale, v_scale, \
                           exp_sums, max_logits, tmp_out, p);                                                 \
  }
