// kernels/gpu/reduce.cu's kernels executed on the CPU under tests/gpu/cuda_emulation.h, once
// per warp width (XR_EMULATED_WARP=32 and 64), launched as kernels/reduce_device.c launches
// them (256 threads a block): block and thread reductions (sum, max.dim with ties and NaN,
// var/std with the mean, logsumexp over infinities), the chunked block scan, the 64-bit integer
// reductions and scans (wrapping, dtype= casts, first extremes, truth values), integers loaded
// as floats for a float dtype=, bitonic sorts (stable, descending, NaN; integer sorts on 64-bit
// keys) and topk's candidate path, each against a double-precision or
// std::stable_sort evaluation here. tests/kernels:reduce_matrix_{cuda,hip} run the same kernels on
// devices, against the CPU reference.
#include <criterion/criterion.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "tests/gpu/cuda_emulation.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#include "tests/gpu/reduce_emulated.inc"
#pragma GCC diagnostic pop

namespace {

std::mt19937 rng(5);
float normal() { return std::normal_distribution<float>(0.0f, 1.0f)(rng); }

// Rows of n contiguous f32 elements, outputs contiguous per row (`per_row` each).
xr_reduce_dev_args_t rows(int op, long long rows, long long n, long long per_row = 1) {
  xr_reduce_dev_args_t p;
  memset(&p, 0, sizeof p);
  p.op = op;
  p.outer_rank = 1, p.outer_shape[0] = rows, p.in_outer[0] = n, p.outer_numel = rows;
  p.red_rank = 1, p.red_shape[0] = n, p.in_red[0] = 1, p.red_numel = n;
  p.in_dtype = XR_GPU_F32;
  for (int s = 0; s < 2; s++) p.out_outer[s][0] = per_row, p.out_dim_stride[s] = 1, p.out_dtype[s] = XR_GPU_F32;
  p.has_out[0] = 1;
  p.k = n;
  return p;
}

void run(const char *kernel, const xr_reduce_dev_args_t &p, const void *in, void *out0, void *out1) {
  const unsigned blocks = (unsigned)std::min<long long>(p.outer_numel, 7);  // grid-stride loops too
  const unsigned char *x = (const unsigned char *)in;
  unsigned char *o0 = (unsigned char *)out0, *o1 = (unsigned char *)out1;
  std::string k = kernel;
  xr_emu_launch(xr_emu_dim{blocks, 1, 1}, XR_REDUCE_GPU_THREADS, [&] {
    if (k == "groups") xr_reduce_groups(x, o0, o1, p);
    else if (k == "items") xr_reduce_items(x, o0, o1, p);
    else if (k == "scan") xr_reduce_scan(x, o0, o1, p);
    else if (k == "int") xr_reduce_int(x, o0, o1, p);
    else if (k == "scan_int") xr_reduce_scan_int(x, o0, o1, p);
    else if (k == "sort_int") xr_reduce_sort_int(x, o0, o1, p);
    else xr_reduce_sort(x, o0, o1, p);
  });
}

void close(double got, double want, double tol, const char *what, long long i) {
  if (std::isnan(want)) {
    cr_assert(std::isnan(got), "%s[%lld]: %g, expected NaN", what, i, got);
    return;
  }
  cr_assert(std::fabs(got - want) <= tol * (1 + std::fabs(want)) || got == want,
            "%s[%lld]: %.9g, expected %.9g", what, i, got, want);
}

}  // namespace

Test(reduce_emulated, sums_var_and_logsumexp_by_blocks_and_threads) {
  for (long long n : {5LL, 300LL, 1000LL}) {
    const long long r = 9;
    std::vector<float> x(r * n);
    for (float &v : x) v = normal();
    const char *kernel = n >= XR_REDUCE_DEV_GROUP_MIN ? "groups" : "items";
    std::vector<float> sum(r), var(r), mean(r), lse(r);
    xr_reduce_dev_args_t p = rows(XR_REDUCE_DEV_SUM, r, n);
    run(kernel, p, x.data(), sum.data(), nullptr);
    p = rows(XR_REDUCE_DEV_VAR, r, n);
    p.correction = 1, p.has_out[1] = 1;
    run(kernel, p, x.data(), var.data(), mean.data());
    p = rows(XR_REDUCE_DEV_LSE, r, n);
    run(kernel, p, x.data(), lse.data(), nullptr);
    for (long long i = 0; i < r; i++) {
      double s = 0, m2 = 0, mx = -INFINITY, e = 0;
      for (long long j = 0; j < n; j++) s += x[i * n + j], mx = std::max(mx, (double)x[i * n + j]);
      for (long long j = 0; j < n; j++) {
        double d = x[i * n + j] - s / n;
        m2 += d * d, e += std::exp(x[i * n + j] - mx);
      }
      close(sum[i], s, 1e-5, "sum", i);
      close(mean[i], s / n, 1e-5, "mean", i);
      close(var[i], m2 / (n - 1), 1e-5, "var", i);
      close(lse[i], std::log(e) + mx, 1e-5, "logsumexp", i);
    }
  }
  // logsumexp over infinities and NaN: +inf, -inf, NaN
  std::vector<float> s = {INFINITY, 1, -INFINITY, -INFINITY, NAN, 1};
  std::vector<float> out(3);
  run("items", rows(XR_REDUCE_DEV_LSE, 3, 2), s.data(), out.data(), nullptr);
  cr_assert(out[0] == INFINITY && out[1] == -INFINITY && std::isnan(out[2]));
}

Test(reduce_emulated, extremes_keep_the_first_position_and_nan) {
  for (long long n : {7LL, 200LL, 3001LL}) {
    const long long r = 4;
    std::vector<float> x(r * n, -1.0f);
    x[0 * n + n / 2] = 5, x[0 * n + n - 1] = 5, x[0 * n + n / 3] = 5;  // ties: the first wins
    x[1 * n + n - 2] = NAN, x[1 * n + 0] = 100, x[1 * n + n - 1] = NAN;  // the first NaN
    for (long long j = 0; j < n; j++) x[2 * n + j] = -INFINITY;          // every value -inf
    for (long long j = 0; j < n; j++) x[3 * n + j] = normal();
    std::vector<float> values(r);
    std::vector<long long> index(r, -7);
    xr_reduce_dev_args_t p = rows(XR_REDUCE_DEV_MAX, r, n);
    p.has_out[1] = 1, p.out_dtype[1] = XR_GPU_I64;
    run(n >= XR_REDUCE_DEV_GROUP_MIN ? "groups" : "items", p, x.data(), values.data(), index.data());
    cr_assert_eq(values[0], 5.0f);
    cr_assert_eq(index[0], n / 3, "n %lld: the first maximum is at %lld, got %lld", n, n / 3, index[0]);
    cr_assert(std::isnan(values[1]) && index[1] == n - 2, "n %lld: NaN at %lld", n, index[1]);
    cr_assert(values[2] == -INFINITY && index[2] == 0);
    long long want = std::max_element(x.begin() + 3 * n, x.begin() + 4 * n) - (x.begin() + 3 * n);
    cr_assert_eq(index[3], want);
  }
}

Test(reduce_emulated, scans_in_chunks) {
  for (long long n : {1LL, 255LL, 700LL}) {
    const long long r = 3;
    std::vector<float> x(r * n), y(r * n, NAN);
    for (float &v : x) v = normal();
    xr_reduce_dev_args_t p = rows(XR_REDUCE_DEV_CUMSUM, r, n, n);
    run("scan", p, x.data(), y.data(), nullptr);
    for (long long i = 0; i < r; i++) {
      double acc = 0;
      for (long long j = 0; j < n; j++) close(y[i * n + j], acc += x[i * n + j], 1e-5, "cumsum", j);
    }
  }
}

Test(reduce_emulated, integers_in_64_bits_wrap_as_the_reference) {
  std::mt19937_64 bits(11);
  for (long long n : {1LL, 200LL, 3001LL}) {
    const long long r = 3;
    std::vector<int32_t> x(r * n);
    for (int32_t &v : x) v = (int32_t)bits();  // the whole int32 range: int64 sums overflow
    for (long long j = 0; j < n; j++) x[2 * n + j] = j % 3 == 1;  // the last row: truth values
    std::vector<long long> sum(r), prod(r), count(r), index(r);
    std::vector<int32_t> top(r);
    std::vector<signed char> small(r);
    std::vector<unsigned char> all(r);
    xr_reduce_dev_args_t p = rows(XR_REDUCE_DEV_SUM, r, n);
    p.in_dtype = XR_GPU_I32, p.out_dtype[0] = XR_GPU_I64;
    run("int", p, x.data(), sum.data(), nullptr);
    p.op = XR_REDUCE_DEV_PROD;
    run("int", p, x.data(), prod.data(), nullptr);
    p.op = XR_REDUCE_DEV_COUNT;
    run("int", p, x.data(), count.data(), nullptr);
    p.op = XR_REDUCE_DEV_SUM, p.round_dtype = XR_GPU_I8, p.out_dtype[0] = XR_GPU_I8;
    run("int", p, x.data(), small.data(), nullptr);
    p.op = XR_REDUCE_DEV_ALL, p.round_dtype = 0, p.out_dtype[0] = XR_GPU_BOOL;
    run("int", p, x.data(), all.data(), nullptr);
    p.op = XR_REDUCE_DEV_MIN, p.out_dtype[0] = XR_GPU_I32;
    p.has_out[1] = 1, p.out_dtype[1] = XR_GPU_I64;
    run("int", p, x.data(), top.data(), index.data());
    for (long long i = 0; i < r; i++) {
      uint64_t s = 0, q = 1;
      int8_t s8 = 0;
      long long nz = 0, at = 0;
      for (long long j = 0; j < n; j++) {
        int32_t v = x[i * n + j];
        s += (uint64_t)(int64_t)v, q *= (uint64_t)(int64_t)v, nz += v != 0;
        s8 = (int8_t)(uint8_t)(s8 + (int8_t)(uint8_t)v);
        if (v < x[i * n + at]) at = j;
      }
      cr_assert_eq(sum[i], (long long)s, "n %lld row %lld: sum", n, i);
      cr_assert_eq(prod[i], (long long)q, "n %lld row %lld: prod", n, i);
      cr_assert_eq(count[i], nz, "n %lld row %lld: count_nonzero", n, i);
      cr_assert_eq(small[i], s8, "n %lld row %lld: sum with dtype=int8", n, i);
      cr_assert_eq(all[i], nz == n, "n %lld row %lld: all", n, i);
      cr_assert(top[i] == x[i * n + at] && index[i] == at, "n %lld row %lld: min at %lld, got %lld",
                n, i, at, index[i]);
    }
    // cumsum of int32 into int64, in chunks of the block's width
    std::vector<long long> scan(r * n, -7);
    p = rows(XR_REDUCE_DEV_CUMSUM, r, n, n);
    p.in_dtype = XR_GPU_I32, p.out_dtype[0] = XR_GPU_I64;
    run("scan_int", p, x.data(), scan.data(), nullptr);
    for (long long i = 0; i < r; i++) {
      uint64_t acc = 0;
      for (long long j = 0; j < n; j++) {
        acc += (uint64_t)(int64_t)x[i * n + j];
        cr_assert_eq(scan[i * n + j], (long long)acc, "n %lld: cumsum[%lld][%lld]", n, i, j);
      }
    }
  }
}

Test(reduce_emulated, sorts_are_stable_and_topk_of_long_rows) {
  for (long long n : {1LL, 33LL, 1000LL, 4096LL, 9000LL}) {
    for (int descending = 0; descending < 2; descending++) {
      const long long r = 2, k = n > XR_REDUCE_GPU_SORT_MAX ? 8 : n;
      std::vector<float> x(r * n);
      for (float &v : x) v = (float)(int)(normal() * 4);  // many ties
      x[n / 2] = NAN;
      std::vector<float> values(r * k, -1);
      std::vector<long long> index(r * k, -1);
      xr_reduce_dev_args_t p = rows(XR_REDUCE_DEV_SORT, r, n, k);
      p.k = k, p.descending = descending, p.has_out[1] = 1, p.out_dtype[1] = XR_GPU_I64;
      run("sort", p, x.data(), values.data(), index.data());
      for (long long i = 0; i < r; i++) {
        std::vector<long long> order(n);
        std::iota(order.begin(), order.end(), 0);
        auto key = [&](long long j) { return x[i * n + j]; };
        std::stable_sort(order.begin(), order.end(), [&](long long a, long long b) {
          float u = key(a), v = key(b);
          if (std::isnan(u) || std::isnan(v)) return descending ? std::isnan(u) && !std::isnan(v)
                                                                : !std::isnan(u) && std::isnan(v);
          return descending ? u > v : u < v;
        });
        for (long long j = 0; j < k; j++)
          cr_assert_eq(index[i * k + j], order[j], "n %lld%s row %lld: position %lld is %lld, expected %lld",
                       n, descending ? " descending" : "", i, j, index[i * k + j], order[j]);
      }
    }
  }
}

// Integer elements with a float dtype= take the float kernels, loaded as floats: means of int32
// rows (a thread and a block per row) and an int8 cumsum.
Test(reduce_emulated, integers_as_floats) {
  for (long long n : {5LL, 300LL}) {
    const long long r = 3;
    std::vector<int> x(r * n);
    for (long long i = 0; i < r * n; i++) x[i] = (int)(i * 7919 % 2001) - 1000;
    std::vector<float> mean(r);
    xr_reduce_dev_args_t p = rows(XR_REDUCE_DEV_MEAN, r, n);
    p.in_dtype = XR_GPU_I32;
    run(n >= XR_REDUCE_DEV_GROUP_MIN ? "groups" : "items", p, x.data(), mean.data(), nullptr);
    for (long long i = 0; i < r; i++) {
      double s = 0;
      for (long long j = 0; j < n; j++) s += x[i * n + j];
      close(mean[i], s / n, 1e-6, "mean int32", i);
    }
  }
  std::vector<signed char> b = {-128, 127, 5, -3, 100};
  std::vector<float> scan(5);
  xr_reduce_dev_args_t p = rows(XR_REDUCE_DEV_CUMSUM, 1, 5, 5);
  p.in_dtype = XR_GPU_I8;
  run("scan", p, b.data(), scan.data(), nullptr);
  double acc = 0;
  for (int j = 0; j < 5; j++) close(scan[j], acc += b[j], 0, "cumsum int8", j);
}

// Integer sorts on (64-bit key, position) pairs: int64 values beyond float's range and equal in
// one 32-bit half, ties kept in position order, descending, and topk's candidates for long rows.
Test(reduce_emulated, integer_sorts_are_exact_and_stable) {
  for (long long n : {7LL, 1000LL, 5000LL}) {
    for (int descending = 0; descending < 2; descending++) {
      std::vector<long long> x(2 * n);
      for (long long i = 0; i < 2 * n; i++)
        x[i] = ((i * 2654435761LL) % 17 - 8) * (1LL << 40) + (i * 40503 % 5);  // many ties
      const long long k = n > XR_REDUCE_GPU_SORT_MAX ? 16 : n;
      xr_reduce_dev_args_t p = rows(XR_REDUCE_DEV_SORT, 2, n, k);
      p.in_dtype = XR_GPU_I64, p.out_dtype[0] = XR_GPU_I64, p.out_dtype[1] = XR_GPU_I64;
      p.has_out[1] = 1, p.k = k, p.descending = descending;
      std::vector<long long> values(2 * k, -7), index(2 * k, -7);
      run("sort_int", p, x.data(), values.data(), index.data());
      for (long long r = 0; r < 2; r++) {
        std::vector<long long> order(n);
        std::iota(order.begin(), order.end(), 0LL);
        std::stable_sort(order.begin(), order.end(), [&](long long a, long long b) {
          return descending ? x[r * n + a] > x[r * n + b] : x[r * n + a] < x[r * n + b];
        });
        for (long long j = 0; j < k; j++) {
          cr_assert_eq(index[r * k + j], order[j], "n %lld desc %d row %lld: [%lld] is %lld, want %lld",
                       n, descending, r, j, index[r * k + j], order[j]);
          cr_assert_eq(values[r * k + j], x[r * n + order[j]]);
        }
      }
    }
  }
}
