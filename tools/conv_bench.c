/* 2-D convolutions at ResNet-50 and Stable Diffusion VAE shapes on the cpu driver: the replay
 * path (aten::convolution through the kernel API, timed with HAL events, as a replay runs it)
 * next to oneDNN's convolution called directly in the same run, and next to the GEMM of the
 * same size (oneDNN's matmul of [N*OH*OW, C*KH*KW] x [C*KH*KW, K]). Not a test:
 *   bazel run -c opt //tools:conv_bench [-- --shape I] [-- --dtype fp32|bf16|fp16] [-- --layout
 * nchw|nhwc]
 *
 * The direct call is oneDNN at its best on the same input: the input in the traced layout, the
 * weights reordered once into the layout oneDNN picks (outside the timing), the output in the
 * layout oneDNN picks. The replay path must produce the op's result: a contiguous (NCHW)
 * output from weights as traced, on every call, so where oneDNN's fast kernels want other
 * layouts (channels-last inputs) it pays reorders of the weights and of the output each run.
 * Every column is the best of 3 batches of at least 0.2 s after 2 warm-ups; oneDNN runs on a
 * thread of its own (see gemm_bench.c: libgomp keeps a pool per thread). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/hal.h"
#include "kernels/cpu/onednn.h"
#include "tools/op_timing.h"

typedef struct conv_shape {
  const char *label;
  int64_t n, c, h, w, k, r, stride, pad; /* input [n, c, h, w], k filters of r x r */
} conv_shape_t;

static const conv_shape_t shapes[] = {
    {"ResNet-50 stem 7x7/2", 1, 3, 224, 224, 64, 7, 2, 3},
    {"ResNet-50 layer1 3x3", 1, 64, 56, 56, 64, 3, 1, 1},
    {"ResNet-50 layer1 1x1", 1, 64, 56, 56, 256, 1, 1, 0},
    {"ResNet-50 layer3 3x3", 1, 256, 14, 14, 256, 3, 1, 1},
    {"ResNet-50 layer4 3x3/2", 1, 512, 14, 14, 512, 3, 2, 1},
    {"SD VAE decoder 3x3 @64", 1, 512, 64, 64, 512, 3, 1, 1},
    {"SD VAE decoder 3x3 @128", 1, 256, 128, 128, 256, 3, 1, 1},
    {"SD VAE decoder 3x3 @256", 1, 128, 256, 256, 128, 3, 1, 1},
};

static int64_t out_size(const conv_shape_t *s, int64_t in) {
  return (in + 2 * s->pad - s->r) / s->stride + 1;
}

static double conv_flops(const conv_shape_t *s) {
  return 2.0 * (double)s->n * (double)s->k * (double)out_size(s, s->h) * (double)out_size(s, s->w) *
         (double)s->c * (double)(s->r * s->r);
}

/* The op as a replay sees it: NCHW or channels-last input, bias-free, contiguous weights. */
static void conv_json(const conv_shape_t *s, const char *dtype, bool nhwc, char *out, size_t size) {
  char strides[128] = "";
  if (nhwc)
    snprintf(strides, sizeof strides, ", \"strides\": [%lld, 1, %lld, %lld]",
             (long long)(s->h * s->w * s->c), (long long)(s->w * s->c), (long long)s->c);
  snprintf(out, size,
           "{\"format\": \"xreplay-bundle\", \"format_version\": 1, \"ops\": [{\"name\": "
           "\"aten::convolution\", \"args\": ["
           "{\"name\": \"input\", \"type\": \"Tensor\", \"value\": {\"dtype\": \"%s\", \"shape\": "
           "[%lld, %lld, %lld, %lld]%s}}, "
           "{\"name\": \"weight\", \"type\": \"Tensor\", \"value\": {\"dtype\": \"%s\", \"shape\": "
           "[%lld, %lld, %lld, %lld]}}, "
           "{\"name\": \"bias\", \"type\": \"Tensor?\", \"value\": null}, "
           "{\"name\": \"stride\", \"type\": \"int[]\", \"value\": [%lld, %lld]}, "
           "{\"name\": \"padding\", \"type\": \"int[]\", \"value\": [%lld, %lld]}, "
           "{\"name\": \"dilation\", \"type\": \"int[]\", \"value\": [1, 1]}, "
           "{\"name\": \"transposed\", \"type\": \"bool\", \"value\": false}, "
           "{\"name\": \"output_padding\", \"type\": \"int[]\", \"value\": [0, 0]}, "
           "{\"name\": \"groups\", \"type\": \"int\", \"value\": 1}]}]}",
           dtype, (long long)s->n, (long long)s->c, (long long)s->h, (long long)s->w, strides,
           dtype, (long long)s->k, (long long)s->c, (long long)s->r, (long long)s->r,
           (long long)s->stride, (long long)s->stride, (long long)s->pad, (long long)s->pad);
}

/* ------------------------------------------------------------------------------------------ */
/* oneDNN called directly                                                                     */

/* A cpu device buffer (2 MiB pages from 2 MiB on, as the replay's) of random values, or NULL. */
static void *device_memory(xr_hal_device_t *device, size_t bytes, xr_dtype_t dtype, unsigned *seed,
                           xr_hal_buffer_t **out_buffer) {
  void *host;
  if (xr_hal_buffer_alloc(device, bytes, out_buffer) != XR_OK ||
      xr_hal_buffer_host_pointer(*out_buffer, &host) != XR_OK)
    return NULL;
  op_timing_fill(host, dtype, bytes / xr_dtype_size(dtype), seed);
  return host;
}

/* Seconds per execution of `prim` with `args`, best of 3 batches of >= 0.2 s after 2 warm-ups. */
static double time_primitive(const xr_dnnl_t *d, dnnl_stream_t stream, dnnl_primitive_t prim,
                             int nargs, const dnnl_exec_arg_t *args) {
  for (int w = 0; w < 2; w++) d->dnnl_primitive_execute(prim, stream, nargs, args);
  d->dnnl_stream_wait(stream);
  double best = -1;
  int iters = 1;
  for (int batch = 0; batch < 4; batch++) {
    double t0 = op_timing_now();
    for (int i = 0; i < iters; i++) d->dnnl_primitive_execute(prim, stream, nargs, args);
    d->dnnl_stream_wait(stream);
    double per = (op_timing_now() - t0) / iters;
    if (batch == 0) {
      iters = (int)(0.2 / per) + 1;
      continue;
    }
    if (best < 0 || per < best) best = per;
  }
  return best;
}

typedef struct job {
  const conv_shape_t *shape;
  xr_dtype_t dtype;
  bool nhwc, gemm;
  double seconds;
  char impl[96];
} job_t;

static dnnl_data_type_t dnnl_type(xr_dtype_t d) {
  return d == XR_DTYPE_F32 ? dnnl_f32 : dnnl_bf16;
}

/* The matmul of the convolution's GEMM view: [N*OH*OW, C*R*R] x [C*R*R, K], row-major. */
static double gemm_time(const xr_dnnl_t *d, dnnl_stream_t stream, xr_hal_device_t *device,
                        const job_t *j, xr_hal_buffer_t **buffers) {
  const conv_shape_t *s = j->shape;
  int64_t M = s->n * out_size(s, s->h) * out_size(s, s->w), K = s->c * s->r * s->r, N = s->k;
  dnnl_dims_t dims[3] = {{M, K}, {K, N}, {M, N}}, strides[3] = {{K, 1}, {N, 1}, {N, 1}};
  dnnl_memory_desc_t md[3];
  dnnl_memory_t mem[3] = {NULL};
  unsigned seed = 3;
  size_t esize = xr_dtype_size(j->dtype);
  for (int i = 0; i < 3; i++) {
    if (d->dnnl_memory_desc_init_by_strides(&md[i], 2, dims[i], dnnl_type(j->dtype), strides[i]))
      return -1;
    void *p = device_memory(device, (size_t)(dims[i][0] * dims[i][1]) * esize, j->dtype, &seed,
                            &buffers[i]);
    if (!p || d->dnnl_memory_create(&mem[i], &md[i], d->engine, p)) return -1;
  }
  dnnl_matmul_desc_t mmd;
  dnnl_primitive_desc_t pd;
  dnnl_primitive_t prim;
  if (d->dnnl_matmul_desc_init(&mmd, &md[0], &md[1], NULL, &md[2]) ||
      d->dnnl_primitive_desc_create(&pd, &mmd, NULL, d->engine, NULL))
    return -1;
  d->dnnl_primitive_create(&prim, pd);
  d->dnnl_primitive_desc_destroy(pd);
  dnnl_exec_arg_t args[3] = {
      {DNNL_ARG_SRC, mem[0]}, {DNNL_ARG_WEIGHTS, mem[1]}, {DNNL_ARG_DST, mem[2]}};
  double t = time_primitive(d, stream, prim, 3, args);
  d->dnnl_primitive_destroy(prim);
  for (int i = 0; i < 3; i++) d->dnnl_memory_destroy(mem[i]);
  return t;
}

/* oneDNN's convolution at its best: input as traced, weights reordered once (untimed) into its
 * layout, output in its layout. */
static double conv_time(const xr_dnnl_t *d, dnnl_stream_t stream, xr_hal_device_t *device, job_t *j,
                        xr_hal_buffer_t **buffers) {
  const conv_shape_t *s = j->shape;
  int64_t oh = out_size(s, s->h), ow = out_size(s, s->w);
  dnnl_dims_t src_dims = {s->n, s->c, s->h, s->w}, w_dims = {s->k, s->c, s->r, s->r};
  dnnl_dims_t dst_dims = {s->n, s->k, oh, ow};
  dnnl_dims_t src_strides = {s->c * s->h * s->w, s->h * s->w, s->w, 1};
  if (j->nhwc) {
    src_strides[1] = 1, src_strides[2] = s->w * s->c, src_strides[3] = s->c;
  }
  dnnl_dims_t w_strides = {s->c * s->r * s->r, s->r * s->r, s->r, 1};
  dnnl_data_type_t dt = dnnl_type(j->dtype);
  dnnl_memory_desc_t src, w_user, w_any, dst_any;
  if (d->dnnl_memory_desc_init_by_strides(&src, 4, src_dims, dt, src_strides) ||
      d->dnnl_memory_desc_init_by_strides(&w_user, 4, w_dims, dt, w_strides) ||
      d->dnnl_memory_desc_init_by_tag(&w_any, 4, w_dims, dt, dnnl_format_tag_any) ||
      d->dnnl_memory_desc_init_by_tag(&dst_any, 4, dst_dims, dt, dnnl_format_tag_any))
    return -1;
  dnnl_dims_t st = {s->stride, s->stride}, dil = {0, 0}, pad = {s->pad, s->pad};
  dnnl_convolution_desc_t cd;
  dnnl_primitive_desc_t pd;
  if (d->dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                    dnnl_convolution_direct, &src, &w_any, NULL,
                                                    &dst_any, st, dil, pad, pad) ||
      d->dnnl_primitive_desc_create(&pd, &cd, NULL, d->engine, NULL))
    return -1;
  const char *impl = "";
  d->dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
  snprintf(j->impl, sizeof j->impl, "%s", impl ? impl : "?");
  dnnl_memory_desc_t w_md = *d->dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  dnnl_memory_desc_t dst_md = *d->dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
  dnnl_primitive_t prim;
  d->dnnl_primitive_create(&prim, pd);
  d->dnnl_primitive_desc_destroy(pd);
  unsigned seed = 4;
  size_t esize = xr_dtype_size(j->dtype);
  void *x = device_memory(device, (size_t)(s->n * s->c * s->h * s->w) * esize, j->dtype, &seed,
                          &buffers[0]);
  void *w = device_memory(device, (size_t)(s->k * s->c * s->r * s->r) * esize, j->dtype, &seed,
                          &buffers[1]);
  void *wb =
      device_memory(device, d->dnnl_memory_desc_get_size(&w_md), XR_DTYPE_F32, &seed, &buffers[2]);
  void *y = device_memory(device, d->dnnl_memory_desc_get_size(&dst_md), XR_DTYPE_F32, &seed,
                          &buffers[3]);
  if (!x || !w || !wb || !y) return -1;
  dnnl_memory_t mx, mw, mwb, my;
  d->dnnl_memory_create(&mx, &src, d->engine, x);
  d->dnnl_memory_create(&mw, &w_user, d->engine, w);
  d->dnnl_memory_create(&mwb, &w_md, d->engine, wb);
  d->dnnl_memory_create(&my, &dst_md, d->engine, y);
  dnnl_primitive_desc_t rpd;
  dnnl_primitive_t reorder;
  if (!d->dnnl_reorder_primitive_desc_create(&rpd, &w_user, d->engine, &w_md, d->engine, NULL)) {
    d->dnnl_primitive_create(&reorder, rpd);
    d->dnnl_primitive_desc_destroy(rpd);
    dnnl_exec_arg_t rargs[2] = {{DNNL_ARG_FROM, mw}, {DNNL_ARG_TO, mwb}};
    d->dnnl_primitive_execute(reorder, stream, 2, rargs);
    d->dnnl_stream_wait(stream);
    d->dnnl_primitive_destroy(reorder);
  }
  dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, mx}, {DNNL_ARG_WEIGHTS, mwb}, {DNNL_ARG_DST, my}};
  double t = time_primitive(d, stream, prim, 3, args);
  d->dnnl_primitive_destroy(prim);
  d->dnnl_memory_destroy(mx);
  d->dnnl_memory_destroy(mw);
  d->dnnl_memory_destroy(mwb);
  d->dnnl_memory_destroy(my);
  return t;
}

static void *job_thread(void *context) {
  job_t *j = context;
  j->seconds = -1;
  const xr_dnnl_t *d;
  xr_hal_device_t *device = NULL;
  dnnl_stream_t stream = NULL;
  xr_hal_buffer_t *buffers[4] = {NULL};
  if (xr_dnnl_get(&d) != XR_OK || xr_hal_device_create("cpu", &device) != XR_OK ||
      d->dnnl_stream_create(&stream, d->engine, dnnl_stream_default_flags) != dnnl_success) {
    fprintf(stderr, "  oneDNN baseline: %s\n", xr_last_error());
  } else {
    j->seconds = j->gemm ? gemm_time(d, stream, device, j, buffers)
                         : conv_time(d, stream, device, j, buffers);
  }
  if (stream) d->dnnl_stream_destroy(stream);
  for (int i = 0; i < 4; i++) xr_hal_buffer_free(buffers[i]);
  xr_hal_device_destroy(device);
  return NULL;
}

/* A baseline on a thread of its own that ends with it. */
static double baseline(job_t *j) {
  pthread_t thread;
  if (pthread_create(&thread, NULL, job_thread, j) != 0) return -1;
  pthread_join(thread, NULL);
  return j->seconds;
}

int main(int argc, char **argv) {
  int only = -1;
  const char *only_dtype = NULL, *only_layout = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--shape") && i + 1 < argc)
      only = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--dtype") && i + 1 < argc)
      only_dtype = argv[++i];
    else if (!strcmp(argv[i], "--layout") && i + 1 < argc)
      only_layout = argv[++i];
    else {
      fprintf(stderr,
              "usage: conv_bench [--shape I] [--dtype fp32|bf16|fp16] [--layout nchw|nhwc]\n");
      return 2;
    }
  }
  const xr_dnnl_t *d;
  if (xr_dnnl_get(&d) != XR_OK) {
    printf("oneDNN not loadable (%s): no baseline columns\n", xr_last_error());
    d = NULL;
  }
  printf(
      "cpu driver: aten::convolution through the replay path, oneDNN's convolution called "
      "directly, and the GEMM of the same size (GFLOP/s, best of 3 batches)\n");
  printf(
      "| shape | input | dtype | kernel | replay | oneDNN conv | replay / oneDNN | oneDNN's "
      "kernel | GEMM | replay / GEMM |\n");
  printf("|---|---|---|---|---:|---:|---:|---|---:|---:|\n");
  const struct {
    const char *name, *spelling;
    xr_dtype_t dtype;
  } dtypes[] = {{"fp32", "float", XR_DTYPE_F32},
                {"bf16", "c10::BFloat16", XR_DTYPE_BF16},
                {"fp16", "c10::Half", XR_DTYPE_F16}};
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    if (only >= 0 && (size_t)only != i) continue;
    const conv_shape_t *s = &shapes[i];
    char label[160];
    snprintf(label, sizeof label, "%s [%lld,%lld,%lld,%lld] x %lld", s->label, (long long)s->n,
             (long long)s->c, (long long)s->h, (long long)s->w, (long long)s->k);
    for (int layout = 0; layout < 2; layout++) {
      if (only_layout && strcmp(only_layout, layout ? "nhwc" : "nchw")) continue;
      double f32_time = -1;
      for (size_t t = 0; t < 3; t++) {
        if (only_dtype && strcmp(only_dtype, dtypes[t].name)) continue;
        char json[4096], kernel[64] = "?";
        conv_json(s, dtypes[t].spelling, layout == 1, json, sizeof json);
        double replay = op_time_seconds(json, "cpu", kernel, sizeof kernel);
        double f = conv_flops(s) * 1e-9;
        if (t == 0) f32_time = replay;
        if (dtypes[t].dtype == XR_DTYPE_F16) { /* no fp16 convolution in this oneDNN */
          printf("| %s | %s | fp16 | %s | %.1f | (fp16 time / fp32 time: %.2f) | | | | |\n", label,
                 layout ? "channels-last" : "NCHW", kernel, replay > 0 ? f / replay : 0,
                 replay > 0 && f32_time > 0 ? replay / f32_time : 0);
          fflush(stdout);
          continue;
        }
        job_t conv = {s, dtypes[t].dtype, layout == 1, false, -1, "?"};
        job_t gemm = {s, dtypes[t].dtype, layout == 1, true, -1, ""};
        double direct = d ? baseline(&conv) : -1, mm = d ? baseline(&gemm) : -1;
        printf("| %s | %s | %s | %s | %.1f | %.1f | %.2f | %s | %.1f | %.2f |\n", label,
               layout ? "channels-last" : "NCHW", dtypes[t].name, kernel,
               replay > 0 ? f / replay : 0, direct > 0 ? f / direct : 0,
               replay > 0 && direct > 0 ? direct / replay : 0, conv.impl, mm > 0 ? f / mm : 0,
               replay > 0 && mm > 0 ? mm / replay : 0);
        fflush(stdout);
      }
    }
  }
  return 0;
}
