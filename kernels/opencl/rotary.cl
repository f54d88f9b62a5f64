// Rotary embedding (_C::rotary_embedding), in place on query and key: one work-group per token,
// its work-items over (head, pair) for the query heads, then the key heads. Arithmetic in fp32,
// rounded once per element. Semantics: kernels/norm.h (xr_rotary_problem_t); the host
// (norm_opencl.c) fills xr_rotary_args with the same field order.

#include "float_formats_cl.h"

#define XR_ROTARY_WG 64 // work-group size; norm_opencl.c dispatches with the same

#define DT_F32 0
#define DT_F16 1
#define DT_BF16 2

typedef struct {
  long token_shape[2], pos_stride[2], q_token_stride[2], k_token_stride[2];
  long pos_offset, q_offset, k_offset, cache_offset;
  long q_head_stride, q_elem_stride, k_head_stride, k_elem_stride;
  long num_heads, num_kv_heads, rot_dim, rope_dim_offset;
  long cache_pos_stride, cache_elem_stride, max_position;
  long pos_is_int64, q_dtype, cache_dtype, is_neox, inverse;
} xr_rotary_args;

float ld(__global const uchar *base, long dt, long i) {
  if (dt == DT_F32) return ((__global const float *)base)[i];
  if (dt == DT_F16) return vload_half(i, (__global const half *)base);
  return xr_bf16_to_f32(((__global const ushort *)base)[i]);
}

void st(__global uchar *base, long dt, long i, float v) {
  if (dt == DT_F32) {
    ((__global float *)base)[i] = v;
  } else if (dt == DT_F16) {
    vstore_half_rte(v, i, (__global half *)base);
  } else {
    ((__global ushort *)base)[i] = xr_f32_to_bf16(v);
  }
}

long token_offset(const xr_rotary_args *a, const long *strides, long t) {
  return (t / a->token_shape[1]) * strides[0] + (t % a->token_shape[1]) * strides[1];
}

void rotate(const xr_rotary_args *a, __global uchar *h, long base, long heads, long head_stride,
            long elem_stride, __global const uchar *cache, long cache_row) {
  const long embed = a->rot_dim / 2;
  for (long j = get_local_id(0); j < heads * embed; j += XR_ROTARY_WG) {
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

__kernel __attribute__((reqd_work_group_size(XR_ROTARY_WG, 1, 1)))
void xr_rotary(xr_rotary_args a, __global const uchar *positions, __global uchar *query,
               __global uchar *key, __global const uchar *cache) {
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
