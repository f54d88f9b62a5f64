// Batch norm and group norm (kernels/channel_norm.h), the twin of kernels/gpu/channel_norm.cu
// (one host, kernels/vision_device.c, launches both): one work-group per statistic (a channel
// for batch norm, a sample's group of channels for group norm), its work-items striding over
// the statistic's elements in fp32 and combining partial sums in local memory; mean first,
// then the variance around it (two passes, as the reference), then the normalised elements.
// Semantics as kernels/channel_norm.c's reference.

#include "channel_norm_args.h"
#include "float_io.h"

// The operand slots of kernels/channel_norm.h, in its order (the host asserts the count).
enum { X, GRAD, WEIGHT, BIAS, RMEAN, RVAR, SMEAN, SINV, OUT, OUT_MEAN, OUT_INV, GRAD_W, GRAD_B };

#define BUFFERS                                                                                  \
  __global uchar *b0, __global uchar *b1, __global uchar *b2, __global uchar *b3,                \
      __global uchar *b4, __global uchar *b5, __global uchar *b6, __global uchar *b7,            \
      __global uchar *b8, __global uchar *b9, __global uchar *b10, __global uchar *b11,          \
      __global uchar *b12
#define BUFFER_ARRAY {b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12}

long spatial_of(const xr_cn_args_t *a) { return a->size[0] * a->size[1] * a->size[2]; }

// Element i of activation slot k's (n, c) plane.
long act_at(const xr_cn_args_t *a, int k, long n, long c, long i) {
  const xr_view5_args_t *v = &a->v[k];
  long w = i % a->size[2], t = i / a->size[2];
  long h = t % a->size[1], d = t / a->size[1];
  return v->offset + n * v->strides[0] + c * v->strides[1] + d * v->strides[2] +
         h * v->strides[3] + w * v->strides[4];
}

float act(const xr_cn_args_t *a, __global uchar **buf, int k, long n, long c, long i) {
  return xr_ld(buf[k], a->v[k].dtype, act_at(a, k, n, c, i));
}

// Per-channel vector k at c (group statistics: [N, groups] at n, c = g); `fallback` if absent.
float vec(const xr_cn_args_t *a, __global uchar **buf, int k, long n, long c, float fallback) {
  const xr_view5_args_t *v = &a->v[k];
  if (v->dtype < 0) return fallback;
  return xr_ld(buf[k], v->dtype, v->offset + n * v->strides[0] + c * v->strides[1]);
}

void set_vec(const xr_cn_args_t *a, __global uchar **buf, int k, long n, long c, float value) {
  const xr_view5_args_t *v = &a->v[k];
  if (v->dtype >= 0) xr_st(buf[k], v->dtype, v->offset + n * v->strides[0] + c * v->strides[1], value);
}

// The work-group's sums of v (each work-item's partial sums).
float2 reduce2(__local float2 *scratch, float2 v) {
  int lid = get_local_id(0);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = XR_CN_THREADS / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float2 r = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE); // the next reduction reuses scratch
  return r;
}

// One channel c: statistics (or the running ones), running-statistic updates, normalisation.
__kernel void xr_cn_batch(const xr_cn_args_t a, BUFFERS) {
  __global uchar *buf[XR_CN_ARGS_SLOTS] = BUFFER_ARRAY;
  __local float2 scratch[XR_CN_THREADS];
  long c = get_group_id(0), lid = get_local_id(0), spatial = spatial_of(&a);
  long count = a.n * spatial;
  // Every work-item reaches every barrier: the reductions run in eval too, over nothing.
  long measured = a.training ? count : 0;
  float sum = 0.0f, sq = 0.0f;
  for (long j = lid; j < measured; j += XR_CN_THREADS) sum += act(&a, buf, X, j / spatial, c, j % spatial);
  float batch_mean = reduce2(scratch, (float2)(sum, 0.0f)).x / (float)count;
  for (long j = lid; j < measured; j += XR_CN_THREADS) {
    float d = act(&a, buf, X, j / spatial, c, j % spatial) - batch_mean;
    sq += d * d;
  }
  sq = reduce2(scratch, (float2)(sq, 0.0f)).x;
  float mean, invstd;
  if (a.training) {
    float var = sq / (float)count;
    mean = batch_mean;
    invstd = 1.0f / sqrt(var + a.eps);
    if (lid == 0) {
      set_vec(&a, buf, OUT_MEAN, 0, c, mean);
      set_vec(&a, buf, OUT_INV, 0, c, invstd);
      float unbiased = count > 1 ? sq / (float)(count - 1) : var;
      set_vec(&a, buf, RMEAN, 0, c, (1 - a.momentum) * vec(&a, buf, RMEAN, 0, c, 0) + a.momentum * mean);
      set_vec(&a, buf, RVAR, 0, c, (1 - a.momentum) * vec(&a, buf, RVAR, 0, c, 0) + a.momentum * unbiased);
    }
  } else {
    mean = vec(&a, buf, RMEAN, 0, c, 0);
    invstd = 1.0f / sqrt(vec(&a, buf, RVAR, 0, c, 1) + a.eps);
  }
  float w = vec(&a, buf, WEIGHT, 0, c, 1), b = vec(&a, buf, BIAS, 0, c, 0);
  for (long j = lid; j < count; j += XR_CN_THREADS) {
    long n = j / spatial, i = j % spatial;
    xr_st(buf[OUT], a.v[OUT].dtype, act_at(&a, OUT, n, c, i),
          (act(&a, buf, X, n, c, i) - mean) * invstd * w + b);
  }
}

// One channel c: grad_weight, grad_bias and grad_input.
__kernel void xr_cn_batch_backward(const xr_cn_args_t a, BUFFERS) {
  __global uchar *buf[XR_CN_ARGS_SLOTS] = BUFFER_ARRAY;
  __local float2 scratch[XR_CN_THREADS];
  long c = get_group_id(0), lid = get_local_id(0), spatial = spatial_of(&a);
  long count = a.n * spatial;
  float mean = a.training ? vec(&a, buf, SMEAN, 0, c, 0) : vec(&a, buf, RMEAN, 0, c, 0);
  float invstd = a.training ? vec(&a, buf, SINV, 0, c, 1)
                            : 1.0f / sqrt(vec(&a, buf, RVAR, 0, c, 1) + a.eps);
  float2 sums = 0.0f; // sum(g), sum(g * xhat)
  for (long j = lid; j < count; j += XR_CN_THREADS) {
    long n = j / spatial, i = j % spatial;
    float g = act(&a, buf, GRAD, n, c, i);
    sums += (float2)(g, g * (act(&a, buf, X, n, c, i) - mean) * invstd);
  }
  sums = reduce2(scratch, sums);
  if (lid == 0) {
    set_vec(&a, buf, GRAD_W, 0, c, sums.y);
    set_vec(&a, buf, GRAD_B, 0, c, sums.x);
  }
  if (a.v[OUT].dtype < 0) return;
  float w = vec(&a, buf, WEIGHT, 0, c, 1);
  for (long j = lid; j < count; j += XR_CN_THREADS) {
    long n = j / spatial, i = j % spatial;
    float g = act(&a, buf, GRAD, n, c, i), v;
    if (a.training) {
      float xhat = (act(&a, buf, X, n, c, i) - mean) * invstd;
      v = w * invstd * (g - sums.x / (float)count - xhat * sums.y / (float)count);
    } else {
      v = g * w * invstd;
    }
    xr_st(buf[OUT], a.v[OUT].dtype, act_at(&a, OUT, n, c, i), v);
  }
}

// One (sample, group), group id n * groups + g: mean, rstd and the normalised elements.
__kernel void xr_cn_group(const xr_cn_args_t a, BUFFERS) {
  __global uchar *buf[XR_CN_ARGS_SLOTS] = BUFFER_ARRAY;
  __local float2 scratch[XR_CN_THREADS];
  long item = get_group_id(0), lid = get_local_id(0), spatial = spatial_of(&a);
  long n = item / a.groups, g = item % a.groups, per = a.c / a.groups, c0 = g * per;
  long count = per * spatial;
  float sum = 0.0f, sq = 0.0f;
  for (long j = lid; j < count; j += XR_CN_THREADS) sum += act(&a, buf, X, n, c0 + j / spatial, j % spatial);
  float mean = reduce2(scratch, (float2)(sum, 0.0f)).x / (float)count;
  for (long j = lid; j < count; j += XR_CN_THREADS) {
    float d = act(&a, buf, X, n, c0 + j / spatial, j % spatial) - mean;
    sq += d * d;
  }
  float rstd = 1.0f / sqrt(reduce2(scratch, (float2)(sq, 0.0f)).x / (float)count + a.eps);
  if (lid == 0) {
    set_vec(&a, buf, OUT_MEAN, n, g, mean);
    set_vec(&a, buf, OUT_INV, n, g, rstd);
  }
  for (long j = lid; j < count; j += XR_CN_THREADS) {
    long c = c0 + j / spatial, i = j % spatial;
    float w = vec(&a, buf, WEIGHT, 0, c, 1), b = vec(&a, buf, BIAS, 0, c, 0);
    xr_st(buf[OUT], a.v[OUT].dtype, act_at(&a, OUT, n, c, i),
          (act(&a, buf, X, n, c, i) - mean) * rstd * w + b);
  }
}

// grad_input of one (sample, group): rstd * (w * g - mean(w * g) - xhat * mean(w * g * xhat)).
__kernel void xr_cn_group_backward(const xr_cn_args_t a, BUFFERS) {
  __global uchar *buf[XR_CN_ARGS_SLOTS] = BUFFER_ARRAY;
  __local float2 scratch[XR_CN_THREADS];
  long item = get_group_id(0), lid = get_local_id(0), spatial = spatial_of(&a);
  long n = item / a.groups, g = item % a.groups, per = a.c / a.groups, c0 = g * per;
  long count = per * spatial;
  float mean = vec(&a, buf, SMEAN, n, g, 0), rstd = vec(&a, buf, SINV, n, g, 1);
  float2 sums = 0.0f; // sum(w * g), sum(w * g * xhat)
  for (long j = lid; j < count; j += XR_CN_THREADS) {
    long c = c0 + j / spatial, i = j % spatial;
    float wg = vec(&a, buf, WEIGHT, 0, c, 1) * act(&a, buf, GRAD, n, c, i);
    sums += (float2)(wg, wg * (act(&a, buf, X, n, c, i) - mean) * rstd);
  }
  sums = reduce2(scratch, sums) / (float)count;
  for (long j = lid; j < count; j += XR_CN_THREADS) {
    long c = c0 + j / spatial, i = j % spatial;
    float xhat = (act(&a, buf, X, n, c, i) - mean) * rstd;
    float wg = vec(&a, buf, WEIGHT, 0, c, 1) * act(&a, buf, GRAD, n, c, i);
    xr_st(buf[OUT], a.v[OUT].dtype, act_at(&a, OUT, n, c, i), rstd * (wg - sums.x - xhat * sums.y));
  }
}

// grad_weight = sum(g * xhat) and grad_bias = sum(g) of group norm over n and spatial, one
// channel per work-group.
__kernel void xr_cn_group_param_grads(const xr_cn_args_t a, BUFFERS) {
  __global uchar *buf[XR_CN_ARGS_SLOTS] = BUFFER_ARRAY;
  __local float2 scratch[XR_CN_THREADS];
  long c = get_group_id(0), lid = get_local_id(0), spatial = spatial_of(&a);
  long g = c / (a.c / a.groups);
  float2 sums = 0.0f; // sum(g), sum(g * xhat)
  for (long j = lid; j < a.n * spatial; j += XR_CN_THREADS) {
    long n = j / spatial, i = j % spatial;
    float dy = act(&a, buf, GRAD, n, c, i);
    float xhat = (act(&a, buf, X, n, c, i) - vec(&a, buf, SMEAN, n, g, 0)) * vec(&a, buf, SINV, n, g, 1);
    sums += (float2)(dy, dy * xhat);
  }
  sums = reduce2(scratch, sums);
  if (lid == 0) {
    set_vec(&a, buf, GRAD_W, 0, c, sums.y);
    set_vec(&a, buf, GRAD_B, 0, c, sums.x);
  }
}
