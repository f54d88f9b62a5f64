// Rotary embedding (_C::rotary_embedding), in place on query and key: one work-group per token,
// its work-items over (head, pair) for the query heads, then the key heads. Arithmetic in fp32,
// rounded once per element. Semantics: kernels/norm.h (xr_rotary_problem_t); arguments: the
// block of kernels/norm_args.h, filled by kernels/norm_device.c.

#include "float_formats_cl.h"
#include "norm_args.h"

#define WG XR_ROTARY_OPENCL_THREADS

float ld(__global const uchar *base, long dt, long i) {
  if (dt == XR_F32) return ((__global const float *)base)[i];
  if (dt == XR_F16) return vload_half(i, (__global const half *)base);
  return xr_bf16_to_f32(((__global const ushort *)base)[i]);
}

void st(__global uchar *base, long dt, long i, float v) {
  if (dt == XR_F32) {
    ((__global float *)base)[i] = v;
  } else if (dt == XR_F16) {
    vstore_half_rte(v, i, (__global half *)base);
  } else {
    ((__global ushort *)base)[i] = xr_f32_to_bf16(v);
  }
}

long token_offset(const xr_rotary_args_t *a, const long *strides, long t) {
  return (t / a->token_shape[1]) * strides[0] + (t % a->token_shape[1]) * strides[1];
}

void rotate(const xr_rotary_args_t *a, __global uchar *h, long base, long heads, long head_stride,
            long elem_stride, __global const uchar *cache, long cache_row) {
  const long embed = a->rot_dim / 2;
  for (long j = get_local_id(0); j < heads * embed; j += WG) {
    long head = j / embed, i = j % embed;
    float c = ld(cache, a->cache_dtype, cache_row + i * a->cache_elem_stride);
    float s = ld(cache, a->cache_dtype, cache_row + (embed + i) * a->cache_elem_stride);
    if (a->inverse) s = -s;
    long at = base + head * head_stride + a->rope_dim_offset * elem_stride;
    long xi = at + (a->is_neox ? i : 2 * i) * elem_stride;
    long yi = at + (a->is_neox ? embed + i : 2 * i + 1) * elem_stride;
    float x = ld(h, a->q_dtype, xi), y = ld(h, a->q_dtype, yi);
    st(h, a->q_dtype, xi, x * c - y * s);
    st(h, a->q_dtype, yi, y * c + x * s);
  }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void xr_rotary(__global const uchar *positions, __global uchar *query, __global uchar *key,
               __global const uchar *cache, xr_rotary_args_t a) {
  const long t = get_group_id(0);
  const long pi = a.pos_offset + token_offset(&a, a.pos_stride, t);
  const long position = a.pos_is_int64 ? ((__global const long *)positions)[pi]
                                       : (long)((__global const int *)positions)[pi];
  if (position < 0 || position >= a.max_position) return; // no cache row: token unchanged
  const long cache_row = a.cache_offset + position * a.cache_pos_stride;
  rotate(&a, query, a.q_offset + token_offset(&a, a.q_token_stride, t), a.num_heads,
         a.q_head_stride, a.q_elem_stride, cache, cache_row);
  if (a.num_kv_heads > 0)
    rotate(&a, key, a.k_offset + token_offset(&a, a.k_token_stride, t), a.num_kv_heads,
           a.k_head_stride, a.k_elem_stride, cache, cache_row);
}
