/* GEMM throughput through the replay path (xr_kernel_plan / select / prepare / enqueue, timed
 * with HAL events) next to oneDNN's matmul called directly in the same run (the baseline; dlopen'ed
 * like the library does), on the cpu driver and on OpenCL. Not a test:
 *   bazel run -c opt //tools:gemm_bench [-- --no-opencl] [-- --quick] [-- --shape I]
 * Shapes: 512^3, 1024^3, 2048^3 (aten::mm, row-major B) and LLM decode (aten::linear, M = 1 and
 * 16, K = N = 4096, weight [N, K]). Prints GFLOP/s, the kernel that ran and replay / oneDNN. */
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "hal/hal.h"
#include "kernels/kernels.h"
#include "tools/op_timing.h"

typedef struct shape {
  const char *op; /* aten::mm or aten::linear */
  int64_t M, N, K;
} shape_t;

static const shape_t shapes[] = {
    {"aten::mm", 512, 512, 512},    {"aten::mm", 1024, 1024, 1024}, {"aten::mm", 2048, 2048, 2048},
    {"aten::linear", 1, 4096, 4096}, {"aten::linear", 16, 4096, 4096},
};

/* ------------------------------------------------------------------------------------------ */
/* Replay path                                                                                */

/* Seconds per execution of `s` at `dtype` on `device`, or < 0 with the reason printed. */
static double replay_time(const shape_t *s, const char *dtype, const char *device_spec,
                          char *kernel, size_t kernel_size) {
  char json[1024];
  if (!strcmp(s->op, "aten::mm"))
    snprintf(json, sizeof json,
             "{\"format\": \"xreplay-bundle\", \"format_version\": 1, \"ops\": [{\"name\": "
             "\"aten::mm\", \"args\": [{\"name\": \"self\", \"type\": \"Tensor\", \"value\": "
             "{\"dtype\": \"%s\", \"shape\": [%lld, %lld]}}, {\"name\": \"mat2\", \"type\": "
             "\"Tensor\", \"value\": {\"dtype\": \"%s\", \"shape\": [%lld, %lld]}}]}]}",
             dtype, (long long)s->M, (long long)s->K, dtype, (long long)s->K, (long long)s->N);
  else
    snprintf(json, sizeof json,
             "{\"format\": \"xreplay-bundle\", \"format_version\": 1, \"ops\": [{\"name\": "
             "\"aten::linear\", \"args\": [{\"name\": \"input\", \"type\": \"Tensor\", \"value\": "
             "{\"dtype\": \"%s\", \"shape\": [%lld, %lld]}}, {\"name\": \"weight\", \"type\": "
             "\"Tensor\", \"value\": {\"dtype\": \"%s\", \"shape\": [%lld, %lld]}}]}]}",
             dtype, (long long)s->M, (long long)s->K, dtype, (long long)s->N, (long long)s->K);
  return op_time_seconds(json, device_spec, kernel, kernel_size);
}

/* ------------------------------------------------------------------------------------------ */
/* oneDNN called directly                                                                     */

static struct {
  dnnl_status_t (*engine_create)(dnnl_engine_t *, dnnl_engine_kind_t, size_t);
  dnnl_status_t (*stream_create)(dnnl_stream_t *, dnnl_engine_t, unsigned);
  dnnl_status_t (*stream_wait)(dnnl_stream_t);
  dnnl_status_t (*md_init)(dnnl_memory_desc_t *, int, const dnnl_dims_t, dnnl_data_type_t,
                           const dnnl_dims_t);
  dnnl_status_t (*matmul_init)(dnnl_matmul_desc_t *, const dnnl_memory_desc_t *,
                               const dnnl_memory_desc_t *, const dnnl_memory_desc_t *,
                               const dnnl_memory_desc_t *);
  dnnl_status_t (*pd_create)(dnnl_primitive_desc_t *, const_dnnl_op_desc_t,
                             const_dnnl_primitive_attr_t, dnnl_engine_t, const_dnnl_primitive_desc_t);
  dnnl_status_t (*pd_destroy)(dnnl_primitive_desc_t);
  dnnl_status_t (*prim_create)(dnnl_primitive_t *, const_dnnl_primitive_desc_t);
  dnnl_status_t (*prim_destroy)(dnnl_primitive_t);
  dnnl_status_t (*execute)(const_dnnl_primitive_t, dnnl_stream_t, int, const dnnl_exec_arg_t *);
  dnnl_status_t (*mem_create)(dnnl_memory_t *, const dnnl_memory_desc_t *, dnnl_engine_t, void *);
  dnnl_status_t (*mem_destroy)(dnnl_memory_t);
  dnnl_engine_t engine;
  dnnl_stream_t stream;
} dnnl;

static bool dnnl_open(void) {
  void *h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h) return false;
  const char *names[] = {"dnnl_engine_create", "dnnl_stream_create", "dnnl_stream_wait",
                         "dnnl_memory_desc_init_by_strides", "dnnl_matmul_desc_init",
                         "dnnl_primitive_desc_create", "dnnl_primitive_desc_destroy",
                         "dnnl_primitive_create", "dnnl_primitive_destroy",
                         "dnnl_primitive_execute", "dnnl_memory_create", "dnnl_memory_destroy"};
  void **slots[] = {(void **)&dnnl.engine_create, (void **)&dnnl.stream_create,
                    (void **)&dnnl.stream_wait, (void **)&dnnl.md_init,
                    (void **)&dnnl.matmul_init, (void **)&dnnl.pd_create,
                    (void **)&dnnl.pd_destroy, (void **)&dnnl.prim_create,
                    (void **)&dnnl.prim_destroy, (void **)&dnnl.execute,
                    (void **)&dnnl.mem_create, (void **)&dnnl.mem_destroy};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!(*slots[i] = dlsym(h, names[i]))) return false;
  return dnnl.engine_create(&dnnl.engine, dnnl_cpu, 0) == dnnl_success &&
         dnnl.stream_create(&dnnl.stream, dnnl.engine, dnnl_stream_default_flags) == dnnl_success;
}

/* Seconds per matmul with the same layouts as the replay case, or < 0. The operands are cpu
 * device buffers, as the replay's are, so that both columns read through the same kind of pages
 * (the driver maps buffers from 2 MiB on huge pages; 4 KiB pages on one side alone cost 10-20%
 * here on TLB misses). */
static double dnnl_time(const shape_t *s, dnnl_data_type_t dt, size_t esize) {
  bool linear = !strcmp(s->op, "aten::linear");
  dnnl_dims_t ad = {s->M, s->K}, as = {s->K, 1}, bd = {s->K, s->N};
  dnnl_dims_t bs = {linear ? 1 : s->N, linear ? s->K : 1}, cd = {s->M, s->N}, cs = {s->N, 1};
  dnnl_memory_desc_t a, b, c;
  dnnl_matmul_desc_t md;
  dnnl_primitive_desc_t pd;
  dnnl_primitive_t prim;
  if (dnnl.md_init(&a, 2, ad, dt, as) || dnnl.md_init(&b, 2, bd, dt, bs) ||
      dnnl.md_init(&c, 2, cd, dt, cs) || dnnl.matmul_init(&md, &a, &b, NULL, &c) ||
      dnnl.pd_create(&pd, &md, NULL, dnnl.engine, NULL))
    return -1;
  dnnl_status_t ps = dnnl.prim_create(&prim, pd);
  dnnl.pd_destroy(pd);
  if (ps) return -1;
  size_t na = (size_t)(s->M * s->K), nb = (size_t)(s->K * s->N), nc = (size_t)(s->M * s->N);
  xr_hal_device_t *device = NULL;
  xr_hal_buffer_t *buffers[3] = {NULL, NULL, NULL};
  void *host[3] = {NULL, NULL, NULL};
  size_t counts[3] = {na, nb, nc};
  xr_status_t st = xr_hal_device_create("cpu", &device);
  for (int i = 0; i < 3 && st == XR_OK; i++) {
    st = xr_hal_buffer_alloc(device, counts[i] * esize, &buffers[i]);
    if (st == XR_OK) st = xr_hal_buffer_host_pointer(buffers[i], &host[i]);
  }
  if (st != XR_OK) {
    fprintf(stderr, "  oneDNN baseline: %s\n", xr_last_error());
    for (int i = 0; i < 3; i++) xr_hal_buffer_free(buffers[i]);
    xr_hal_device_destroy(device);
    dnnl.prim_destroy(prim);
    return -1;
  }
  void *A = host[0], *B = host[1], *C = host[2];
  unsigned seed = 2;
  xr_dtype_t xd = dt == dnnl_f32 ? XR_DTYPE_F32 : XR_DTYPE_BF16;
  op_timing_fill(A, xd, na, &seed);
  op_timing_fill(B, xd, nb, &seed);
  dnnl_memory_t ma, mb, mc;
  dnnl.mem_create(&ma, &a, dnnl.engine, A);
  dnnl.mem_create(&mb, &b, dnnl.engine, B);
  dnnl.mem_create(&mc, &c, dnnl.engine, C);
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
  for (int w = 0; w < 2; w++) dnnl.execute(prim, dnnl.stream, 3, args);
  dnnl.stream_wait(dnnl.stream);
  double best = -1;
  int iters = 1;
  for (int batch = 0; batch < 4; batch++) {
    double t0 = op_timing_now();
    for (int i = 0; i < iters; i++) dnnl.execute(prim, dnnl.stream, 3, args);
    dnnl.stream_wait(dnnl.stream);
    double per = (op_timing_now() - t0) / iters;
    if (batch == 0) {
      iters = (int)(0.2 / per) + 1;
      continue;
    }
    if (best < 0 || per < best) best = per;
  }
  dnnl.mem_destroy(ma);
  dnnl.mem_destroy(mb);
  dnnl.mem_destroy(mc);
  dnnl.prim_destroy(prim);
  for (int i = 0; i < 3; i++) xr_hal_buffer_free(buffers[i]);
  xr_hal_device_destroy(device);
  return best;
}

typedef struct dnnl_job {
  const shape_t *shape;
  dnnl_data_type_t dt;
  size_t esize;
  double seconds;
} dnnl_job_t;

static void *dnnl_thread(void *context) {
  dnnl_job_t *job = context;
  job->seconds = dnnl_time(job->shape, job->dt, job->esize);
  return NULL;
}

/* dnnl_time on a thread of its own that ends with it. oneDNN runs on OpenMP here, and libgomp
 * keeps a thread pool per thread that ever opened a parallel region, for as long as that thread
 * lives; once the pools' threads outnumber the CPUs, every pool spins only briefly before it
 * sleeps, so each of oneDNN's parallel regions pays a futex wake-up. Called on main, the baseline
 * would leave main's pool behind and slow the replay path's oneDNN (on the stream's thread) by up
 * to 40% at 512^3 bf16 on 2 cores: a cost of this benchmark, not of the replay path. */
static double dnnl_time_alone(const shape_t *s, dnnl_data_type_t dt, size_t esize) {
  dnnl_job_t job = {s, dt, esize, -1};
  pthread_t thread;
  if (pthread_create(&thread, NULL, dnnl_thread, &job) != 0) return -1;
  pthread_join(thread, NULL);
  return job.seconds;
}

/* ------------------------------------------------------------------------------------------ */

static void shape_label(const shape_t *s, char *out, size_t size) {
  snprintf(out, size, "%s %lldx%lldx%lld", s->op + 6, (long long)s->M, (long long)s->N,
           (long long)s->K);
}

int main(int argc, char **argv) {
  bool opencl = true, quick = false;
  int only = -1; /* --shape I: that row of `shapes` alone */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--no-opencl")) opencl = false;
    else if (!strcmp(argv[i], "--quick")) quick = true;
    else if (!strcmp(argv[i], "--shape") && i + 1 < argc) only = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: gemm_bench [--no-opencl] [--quick] [--shape I]\n");
      return 2;
    }
  }
  size_t count = sizeof shapes / sizeof shapes[0];
  bool have_dnnl = dnnl_open();
  if (!have_dnnl) printf("oneDNN (libdnnl.so.2) not loadable: no baseline column\n");
  printf("cpu driver: replay path vs oneDNN matmul called directly (GFLOP/s, best of 3 batches)\n");
  printf("| shape (M x N x K) | dtype | kernel | replay GFLOP/s | oneDNN GFLOP/s | replay/oneDNN |\n");
  printf("|---|---|---|---:|---:|---:|\n");
  double f32_time[8] = {0};
  for (size_t i = 0; i < count; i++) {
    if ((quick && shapes[i].M == 2048) || (only >= 0 && (size_t)only != i)) continue;
    const shape_t *s = &shapes[i];
    double flops = 2.0 * (double)s->M * (double)s->N * (double)s->K;
    char label[64], kernel[64] = "?";
    shape_label(s, label, sizeof label);
    struct {
      const char *name, *spelling;
      dnnl_data_type_t dt;
    } dtypes[] = {{"fp32", "float", dnnl_f32}, {"bf16", "c10::BFloat16", dnnl_bf16},
                  {"fp16", "c10::Half", dnnl_f16}};
    for (size_t d = 0; d < 3; d++) {
      double t = replay_time(s, dtypes[d].spelling, "cpu", kernel, sizeof kernel);
      if (d == 0) f32_time[i] = t;
      double base = d < 2 && have_dnnl ? dnnl_time_alone(s, dtypes[d].dt, d == 0 ? 4 : 2) : -1;
      if (base > 0 || d == 0) {
        printf("| %s | %s | %s | %.1f | %.1f | %.2f |\n", label, dtypes[d].name, kernel,
               t > 0 ? flops / t * 1e-9 : 0, base > 0 ? flops / base * 1e-9 : 0,
               t > 0 && base > 0 ? base / t : 0);
      } else {
        /* No oneDNN kernel to compare with (fp16 in oneDNN 2.6; bf16 without AVX-512, where
         * oneDNN has only its reference code): our fp32 time instead. */
        printf("| %s | %s | %s | %.1f | (%s time / fp32 time: %.2f) | |\n", label, dtypes[d].name,
               kernel, t > 0 ? flops / t * 1e-9 : 0, dtypes[d].name,
               t > 0 && f32_time[i] > 0 ? t / f32_time[i] : 0);
      }
      fflush(stdout);
    }
  }
  if (!opencl) return 0;
  printf("\nopencl:0 driver (replay path; next to the cpu driver's fp32 above)\n");
  printf("| shape (M x N x K) | dtype | kernel | GFLOP/s | vs cpu driver fp32 |\n");
  printf("|---|---|---|---:|---:|\n");
  for (size_t i = 0; i < count; i++) {
    if ((quick && shapes[i].M == 2048) || (only >= 0 && (size_t)only != i)) continue;
    const shape_t *s = &shapes[i];
    double flops = 2.0 * (double)s->M * (double)s->N * (double)s->K;
    char label[64], kernel[64] = "?";
    shape_label(s, label, sizeof label);
    const char *names[] = {"fp32", "bf16", "fp16"};
    const char *spellings[] = {"float", "c10::BFloat16", "c10::Half"};
    for (size_t d = 0; d < 3; d++) {
      double t = replay_time(s, spellings[d], "opencl", kernel, sizeof kernel);
      if (t < 0) continue;
      printf("| %s | %s | %s | %.1f | %.2f |\n", label, names[d], kernel, flops / t * 1e-9,
             f32_time[i] > 0 ? f32_time[i] / t : 0);
      fflush(stdout);
    }
  }
  return 0;
}
