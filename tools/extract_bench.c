/* Trace extraction throughput and peak memory, next to plain cJSON parsing of the same file.
 *
 *   bazel run -c opt //tools:extract_bench -- [--size-mb N] [--dir DIR]
 *
 * Writes a synthetic Kineto-style trace of about N MB (default 200) as plain JSON and as gzip,
 * and a graph-mode pair of about N MB together (a graph-replay trace and its capture trace),
 * then runs each phase in a forked child so that each peak RSS (getrusage ru_maxrss of the
 * child) is its own: (1) xr_trace_extract on the JSON, (2) on the gzip, (3) read the file and
 * cJSON_Parse it, (4) xr_trace_extract on the graph trace with its capture trace. Throughput is
 * in MB/s of uncompressed input (both files for (4)). */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "formats/trace_extract.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One profiler step: a python frame, aten::linear > aten::t + aten::addmm (launch, kernel,
 * flow), aten::view, aten::gelu (launch, kernel); shapes vary over 8 layers. */
static int step(char *buf, size_t size, long i) {
  double t = 1000.0 + (double)i * 50.0;
  int n = 128 << (i % 3), k = 512 * (1 + i % 8 / 2);
  long corr = 2 * i + 1;
  return snprintf(
      buf, size,
      "{\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"torch/nn/modules/linear.py(125): "
      "forward\", \"pid\": 100, \"tid\": 100, \"ts\": %.3f, \"dur\": 40.0, \"args\": {\"Python "
      "parent id\": %ld, \"Python id\": %ld, \"Ev Idx\": %ld}},\n"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": 100, \"tid\": "
      "100, \"ts\": %.3f, \"dur\": 30.0, \"args\": {\"External id\": %ld, \"Record function "
      "id\": 0, \"Concrete Inputs\": [\"\", \"\", \"\"], \"Input type\": [\"c10::BFloat16\", "
      "\"c10::BFloat16\", \"c10::BFloat16\"], \"Input Strides\": [[%d, 1], [%d, 1], [1]], "
      "\"Input Dims\": [[%d, %d], [%d, %d], [%d]], \"Ev Idx\": %ld}},\n"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::t\", \"pid\": 100, \"tid\": 100, "
      "\"ts\": %.3f, \"dur\": 2.0, \"args\": {\"External id\": %ld, \"Concrete Inputs\": [\"\"], "
      "\"Input type\": [\"c10::BFloat16\"], \"Input Strides\": [[%d, 1]], \"Input Dims\": [[%d, "
      "%d]]}},\n"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::addmm\", \"pid\": 100, \"tid\": "
      "100, \"ts\": %.3f, \"dur\": 20.0, \"args\": {\"External id\": %ld, \"Concrete Inputs\": "
      "[\"\", \"\", \"\", \"1\", \"1\"], \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\", "
      "\"c10::BFloat16\", \"Scalar\", \"Scalar\"], \"Input Strides\": [[1], [%d, 1], [1, %d], "
      "[], []], \"Input Dims\": [[%d], [%d, %d], [%d, %d], [], []]}},\n"
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 100, "
      "\"tid\": 100, \"ts\": %.3f, \"dur\": 5.0, \"args\": {\"External id\": %ld, \"cbid\": 211, "
      "\"correlation\": %ld}},\n"
      "{\"ph\": \"s\", \"id\": %ld, \"pid\": 100, \"tid\": 100, \"ts\": %.3f, \"cat\": \"ac2g\", "
      "\"name\": \"ac2g\"},\n"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void cutlass::Kernel2<cutlass_80_wmma_"
      "tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_"
      "s161616gemm_bf16_32x32_128x2_tn_align8::Params)\", \"pid\": 0, \"tid\": 7, \"ts\": %.3f, "
      "\"dur\": 9.5, \"args\": {\"External id\": %ld, \"queued\": 0, \"device\": 0, \"context\": "
      "1, \"stream\": 7, \"correlation\": %ld, \"registers per thread\": 128, \"shared memory\": "
      "24576, \"grid\": [8, 4, 1], \"block\": [128, 1, 1]}},\n"
      "{\"ph\": \"f\", \"id\": %ld, \"pid\": 0, \"tid\": 7, \"ts\": %.3f, \"cat\": \"ac2g\", "
      "\"name\": \"ac2g\", \"bp\": \"e\"},\n"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::view\", \"pid\": 100, \"tid\": 100, "
      "\"ts\": %.3f, \"dur\": 1.5, \"args\": {\"Concrete Inputs\": [\"\", \"[-1]\"], \"Input "
      "type\": [\"c10::BFloat16\", \"ScalarList\"], \"Input Strides\": [[%d, 1], []], \"Input "
      "Dims\": [[%d, %d], []]}},\n"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::gelu\", \"pid\": 100, \"tid\": 100, "
      "\"ts\": %.3f, \"dur\": 6.0, \"args\": {\"Concrete Inputs\": [\"\", \"\"], \"Input type\": "
      "[\"c10::BFloat16\", \"\"], \"Input Strides\": [[%d, 1], []], \"Input Dims\": [[%d, %d], "
      "[]]}},\n"
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 100, "
      "\"tid\": 100, \"ts\": %.3f, \"dur\": 3.0, \"args\": {\"correlation\": %ld}},\n"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void at::native::vectorized_elementwise_"
      "kernel<4, at::native::GeluCUDAKernelImpl>(int, at::native::GeluCUDAKernelImpl, "
      "at::detail::Array<char*, 2>)\", \"pid\": 0, \"tid\": 7, \"ts\": %.3f, \"dur\": 2.25, "
      "\"args\": {\"correlation\": %ld, \"stream\": 7}}",
      t, i, i + 1, i, t + 1, i, k, k, n, k, k, k, k, i, t + 2, i, k, k, k, t + 5, i, k, k, k, n,
      k, k, k, t + 8, i, corr, corr, t + 8, t + 20, i, corr, corr, t + 20, t + 32, k, n, k, t + 34,
      k, n, k, t + 36, corr + 1, t + 41, corr + 1);
}

static int generate(const char *json_path, const char *gz_path, size_t target, long *out_steps) {
  FILE *f = fopen(json_path, "w");
  gzFile gz = gzopen(gz_path, "wb1");
  if (!f || !gz) return -1;
  const char *head =
      "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100 80GB "
      "HBM3\"}], \"cuda_runtime_version\": 12040, \"traceEvents\": [\n";
  fputs(head, f);
  gzputs(gz, head);
  size_t written = strlen(head);
  char buf[8192];
  long i = 0;
  while (written < target) {
    int n = step(buf, sizeof buf, i);
    if (n <= 0 || (size_t)n >= sizeof buf) return -1;
    if (i) {
      fputs(",\n", f);
      gzputs(gz, ",\n");
      written += 2;
    }
    fwrite(buf, 1, (size_t)n, f);
    gzwrite(gz, buf, (unsigned)n);
    written += (size_t)n;
    i++;
  }
  fputs("\n], \"traceName\": \"synthetic\"}\n", f);
  gzputs(gz, "\n], \"traceName\": \"synthetic\"}\n");
  *out_steps = i;
  return fclose(f) | gzclose(gz);
}

/* Graph mode. The capture trace: SEGMENTS stream captures of LAYERS layers; a layer is a
 * python frame and aten::addmm and aten::gelu, each launching one named kernel. */
#define SEGMENTS 4
#define LAYERS 500

static int capture_layer(char *buf, size_t size, long i, double t) {
  int n = 128 << (i % 3), k = 512 * (1 + i % 8 / 2);
  return snprintf(
      buf, size,
      "{\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"torch/nn/modules/linear.py(125): "
      "forward\", \"pid\": 100, \"tid\": 100, \"ts\": %.3f, \"dur\": 18.0, \"args\": {\"Python "
      "parent id\": %ld, \"Python id\": %ld, \"Ev Idx\": %ld}},\n"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::addmm\", \"pid\": 100, \"tid\": "
      "100, \"ts\": %.3f, \"dur\": 8.0, \"args\": {\"External id\": %ld, \"Concrete Inputs\": "
      "[\"\", \"\", \"\", \"1\", \"1\"], \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\", "
      "\"c10::BFloat16\", \"Scalar\", \"Scalar\"], \"Input Strides\": [[1], [%d, 1], [1, %d], "
      "[], []], \"Input Dims\": [[%d], [%d, %d], [%d, %d], [], []]}},\n"
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 100, "
      "\"tid\": 100, \"ts\": %.3f, \"dur\": 3.0, \"args\": {\"External id\": %ld, \"cbid\": 211, "
      "\"correlation\": %ld, \"kernel\": \"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_"
      "s161616gemm_bf16_32x32_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_"
      "32x32_128x2_tn_align8::Params)\", \"grid\": [8, 4, 1], \"block\": [128, 1, 1]}},\n"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::gelu\", \"pid\": 100, \"tid\": "
      "100, \"ts\": %.3f, \"dur\": 6.0, \"args\": {\"Concrete Inputs\": [\"\", \"\"], \"Input "
      "type\": [\"c10::BFloat16\", \"\"], \"Input Strides\": [[%d, 1], []], \"Input Dims\": "
      "[[%d, %d], []]}},\n"
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 100, "
      "\"tid\": 100, \"ts\": %.3f, \"dur\": 3.0, \"args\": {\"correlation\": %ld, \"kernel\": "
      "\"void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>(int, "
      "at::native::GeluCUDAKernelImpl, at::detail::Array<char*, 2>)\", \"grid\": [64, 1, 1], "
      "\"block\": [128, 1, 1]}}",
      t, i, i + 1, i, t + 1, i, k, k, n, n, k, k, n, t + 2, i, 2 * i + 1, t + 10, k, n, k, t + 11,
      2 * i + 2);
}

/* The graph trace: replays, each a python frame, an iteration annotation, a cudaGraphLaunch and
 * the 2 * LAYERS kernels of the capture it replays. */
static int replay_kernel(char *buf, size_t size, double t, long k, long corr) {
  if (k % 2 == 0)
    return snprintf(
        buf, size,
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void cutlass::Kernel2<cutlass_80_wmma_"
        "tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_"
        "s161616gemm_bf16_32x32_128x2_tn_align8::Params)\", \"pid\": 0, \"tid\": 7, \"ts\": %.3f, "
        "\"dur\": 9.5, \"args\": {\"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": 7, "
        "\"correlation\": %ld, \"registers per thread\": 128, \"shared memory\": 24576, \"grid\": "
        "[8, 4, 1], \"block\": [128, 1, 1], \"graph node id\": %ld}}",
        t, corr, k);
  return snprintf(
      buf, size,
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void at::native::vectorized_elementwise_"
      "kernel<4, at::native::GeluCUDAKernelImpl>(int, at::native::GeluCUDAKernelImpl, "
      "at::detail::Array<char*, 2>)\", \"pid\": 0, \"tid\": 7, \"ts\": %.3f, \"dur\": 2.25, "
      "\"args\": {\"correlation\": %ld, \"stream\": 7, \"grid\": [64, 1, 1], \"block\": [128, 1, "
      "1], \"graph node id\": %ld}}",
      t, corr, k);
}

typedef struct out {
  FILE *f;
  size_t written;
} out_t;

static void put(out_t *o, const char *s, size_t n) {
  fwrite(s, 1, n, o->f);
  o->written += n;
}

static int generate_graph_pair(const char *graph_path, const char *capture_path, size_t target) {
  out_t cap = {fopen(capture_path, "w"), 0}, g = {fopen(graph_path, "w"), 0};
  if (!cap.f || !g.f) return -1;
  const char *head =
      "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100 80GB "
      "HBM3\"}], \"cuda_runtime_version\": 12040, \"traceEvents\": [\n";
  put(&cap, head, strlen(head));
  put(&g, head, strlen(head));
  char buf[8192];
  long layer = 0;
  double t = 1000.0;
  for (int s = 0; s < SEGMENTS; s++) {
    int n = snprintf(buf, sizeof buf,
                     "%s{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": "
                     "\"cudaStreamBeginCapture\", \"pid\": 100, \"tid\": 100, \"ts\": %.3f, "
                     "\"dur\": 1.0, \"args\": {\"correlation\": %ld}},\n",
                     s ? ",\n" : "", t - 10.0, 1000000L + s);
    put(&cap, buf, (size_t)n);
    for (int l = 0; l < LAYERS; l++, layer++, t += 20.0) {
      if ((n = capture_layer(buf, sizeof buf, layer, t)) <= 0 || (size_t)n >= sizeof buf) return -1;
      put(&cap, buf, (size_t)n);
      put(&cap, ",\n", 2);
    }
    n = snprintf(buf, sizeof buf,
                 "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamEndCapture\", "
                 "\"pid\": 100, \"tid\": 100, \"ts\": %.3f, \"dur\": 1.0, \"args\": "
                 "{\"correlation\": %ld}}",
                 t, 2000000L + s);
    put(&cap, buf, (size_t)n);
    t += 100.0;
  }
  /* Python frames pad the capture trace to half the target, as in real ones. */
  for (long i = 0; cap.written < target / 2; i++) {
    int n = snprintf(buf, sizeof buf,
                     ",\n{\"ph\": \"X\", \"cat\": \"python_function\", \"name\": "
                     "\"vllm/worker/model_runner.py(%ld): capture\", \"pid\": 100, \"tid\": 100, "
                     "\"ts\": %.3f, \"dur\": 1.0, \"args\": {\"Python parent id\": %ld, \"Python "
                     "id\": %ld}}",
                     i % 2000, 1e8 + (double)i, i, i + 1);
    put(&cap, buf, (size_t)n);
  }
  long replay = 0;
  while (g.written < target - target / 2) {
    double t = 1e6 + (double)replay * 20000.0;
    long corr = 5000000L + replay;
    int n = snprintf(buf, sizeof buf,
                     "%s{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
                     "\"execute_context_0(0)_generation_64(64)\", \"pid\": 100, \"tid\": 100, "
                     "\"ts\": %.3f, \"dur\": 19000.0},\n"
                     "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaGraphLaunch\", "
                     "\"pid\": 100, \"tid\": 100, \"ts\": %.3f, \"dur\": 20.0, \"args\": "
                     "{\"correlation\": %ld}}",
                     replay ? ",\n" : "", t, t + 5, corr);
    put(&g, buf, (size_t)n);
    for (long k = 0; k < 2 * LAYERS; k++) {
      put(&g, ",\n", 2);
      n = replay_kernel(buf, sizeof buf, t + 30 + 12.0 * (double)k, k, corr);
      put(&g, buf, (size_t)n);
    }
    replay++;
  }
  const char *tail = "\n], \"traceName\": \"synthetic\"}\n";
  put(&cap, tail, strlen(tail));
  put(&g, tail, strlen(tail));
  return fclose(cap.f) | fclose(g.f);
}

typedef struct result {
  double seconds;
  size_t ops, instances;
  int ok;
} result_t;

/* Runs one phase in a child; returns its peak RSS in bytes. `capture` (or NULL) goes with the
 * trace at `path`. */
static long run_child(int phase, const char *path, const char *capture, result_t *res) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    result_t r = {0};
    double t0 = now();
    if (phase == 3) {
      FILE *f = fopen(path, "rb");
      struct stat st;
      if (f && stat(path, &st) == 0) {
        char *data = malloc((size_t)st.st_size + 1);
        size_t got = data ? fread(data, 1, (size_t)st.st_size, f) : 0;
        if (data) data[got] = '\0';
        cJSON *root = data ? cJSON_ParseWithLength(data, got) : NULL;
        r.ok = root != NULL;
        r.seconds = now() - t0;
        cJSON_Delete(root);
        free(data);
      }
      if (f) fclose(f);
    } else {
      xr_bundle_t *b = NULL;
      xr_extract_summary_t s;
      xr_extract_capture_t cap = {.path = capture};
      xr_extract_options_t o = {.captures = capture ? &cap : NULL,
                                .capture_count = capture != NULL};
      r.ok = xr_trace_extract(path, &o, &b, &s) == XR_OK;
      r.seconds = now() - t0;
      if (r.ok && capture && s.graph_kernels_matched != s.graph_kernels) {
        fprintf(stderr, "only %zu of %zu graph kernels matched\n", s.graph_kernels_matched,
                s.graph_kernels);
        r.ok = 0;
      }
      if (r.ok) {
        r.ops = b->op_count;
        r.instances = s.op_instances;
        xr_extract_summary_free(&s);
      } else {
        fprintf(stderr, "%s\n", xr_last_error());
      }
      xr_bundle_destroy(b);
    }
    ssize_t w = write(fds[1], &r, sizeof r);
    _exit(w == (ssize_t)sizeof r ? 0 : 1);
  }
  close(fds[1]);
  ssize_t got = read(fds[0], res, sizeof *res);
  close(fds[0]);
  int status;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) < 0 || got != (ssize_t)sizeof *res) return -1;
  return ru.ru_maxrss * 1024L;
}

int main(int argc, char **argv) {
  size_t mb = 200;
  const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--size-mb") == 0 && i + 1 < argc) mb = (size_t)atol(argv[++i]);
    else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) dir = argv[++i];
    else {
      fprintf(stderr, "usage: extract_bench [--size-mb N] [--dir DIR]\n");
      return 2;
    }
  }
  char json_path[4096], gz_path[4096], graph_path[4096], capture_path[4096];
  snprintf(json_path, sizeof json_path, "%s/xr_extract_bench_%d.json", dir, (int)getpid());
  snprintf(gz_path, sizeof gz_path, "%s/xr_extract_bench_%d.json.gz", dir, (int)getpid());
  snprintf(graph_path, sizeof graph_path, "%s/xr_extract_bench_%d_graph.json", dir, (int)getpid());
  snprintf(capture_path, sizeof capture_path, "%s/xr_extract_bench_%d_capture.json", dir,
           (int)getpid());
  long steps = 0;
  double t0 = now();
  if (generate(json_path, gz_path, mb << 20, &steps) != 0 ||
      generate_graph_pair(graph_path, capture_path, mb << 20) != 0) {
    fprintf(stderr, "extract_bench: cannot write the traces in %s\n", dir);
    return 1;
  }
  struct stat sj, sg, sgr, sc;
  stat(json_path, &sj);
  stat(gz_path, &sg);
  stat(graph_path, &sgr);
  stat(capture_path, &sc);
  double size_mb = (double)sj.st_size / 1e6;
  double pair_bytes = (double)sgr.st_size + (double)sc.st_size;
  printf("synthetic trace: %.1f MB JSON (%.1f MB gzip), %ld steps, %ld events; graph pair: %.1f MB "
         "graph trace + %.1f MB capture trace (%d captures of %d kernels); written in %.1f s\n",
         size_mb, (double)sg.st_size / 1e6, steps, steps * 12, (double)sgr.st_size / 1e6,
         (double)sc.st_size / 1e6, SEGMENTS, 2 * LAYERS, now() - t0);
  printf("%-36s %10s %10s %12s %14s\n", "phase", "seconds", "MB/s", "peak RSS MB",
         "RSS / input");
  const char *names[5] = {"", "xr_trace_extract (json)", "xr_trace_extract (gzip)",
                          "read + cJSON_Parse", "xr_trace_extract graph + capture"};
  const char *paths[5] = {"", json_path, gz_path, json_path, graph_path};
  const double input[5] = {0, (double)sj.st_size, (double)sj.st_size, (double)sj.st_size,
                           pair_bytes};
  int rc = 0;
  for (int phase = 1; phase <= 4; phase++) {
    result_t r;
    long rss = run_child(phase, paths[phase], phase == 4 ? capture_path : NULL, &r);
    if (rss < 0 || !r.ok) {
      printf("%-36s failed\n", names[phase]);
      rc = 1;
      continue;
    }
    printf("%-36s %10.2f %10.1f %12.1f %14.2f\n", names[phase], r.seconds,
           input[phase] / 1e6 / r.seconds, (double)rss / 1e6, (double)rss / input[phase]);
    if (phase == 1 || phase == 4)
      printf("  -> %zu ops from %zu occurrences\n", r.ops, r.instances);
  }
  unlink(json_path);
  unlink(gz_path);
  unlink(graph_path);
  unlink(capture_path);
  return rc;
}
