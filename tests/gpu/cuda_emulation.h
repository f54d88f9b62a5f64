// A CPU emulation of CUDA's execution model, enough to run kernels/gpu's attention and GEMM
// kernels on a machine without a GPU (tests/gpu/attention_emulated_test.cc,
// gemm_emulated_test.cc): one std::thread per GPU thread of a block (1-, 2- or 3-D, warps by
// linear thread id), kept across the grid's blocks; __syncthreads is a block barrier; warp
// shuffles go through a shared buffer between two per-warp barriers, so a lane missing from a shuffle hangs
// the test instead of passing it; __shared__ variables are function statics (one block runs at
// a time) and dynamic shared memory is refilled with NaN before every block. warpSize is
// XR_EMULATED_WARP (32 or 64). The kernel source is compiled as HIP (hip_compat.h's
// __HIPCC_RTC__ branch: _Float16 conversions, mask-less shuffles).
#ifndef XR_TESTS_GPU_CUDA_EMULATION_H
#define XR_TESTS_GPU_CUDA_EMULATION_H

#include <math.h>
#include <string.h>

#include <barrier>
#include <memory>
#include <thread>
#include <vector>

#ifndef XR_EMULATED_WARP
#define XR_EMULATED_WARP 32
#endif

struct xr_emu_dim {
  unsigned x = 1, y = 1, z = 1;
};
inline thread_local xr_emu_dim threadIdx, blockIdx;
inline xr_emu_dim blockDim, gridDim;
constexpr int warpSize = XR_EMULATED_WARP;
inline std::barrier<> *xr_emu_block_barrier;
inline std::vector<std::unique_ptr<std::barrier<>>> xr_emu_warp_barriers;
inline float xr_emu_shuffle[1024];
inline float xr_emu_dynamic_shared[1 << 16];

#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(threads)
#define __HIPCC_RTC__ 1

inline void __syncthreads() { xr_emu_block_barrier->arrive_and_wait(); }

// The thread's linear id in its block (x fastest), which warps and lanes follow.
inline int xr_emu_linear() {
  return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
}

inline float xr_emu_shfl(float value, int source_lane) {
  const int t = xr_emu_linear(), warp = t / warpSize;
  xr_emu_shuffle[t] = value;
  xr_emu_warp_barriers[warp]->arrive_and_wait();
  const float result = xr_emu_shuffle[warp * warpSize + source_lane % warpSize];
  xr_emu_warp_barriers[warp]->arrive_and_wait();
  return result;
}
inline float __shfl_xor(float value, int mask) { return xr_emu_shfl(value, (xr_emu_linear() % warpSize) ^ mask); }
inline float __shfl(float value, int lane) { return xr_emu_shfl(value, lane); }
inline float __shfl_down(float value, int delta) { return xr_emu_shfl(value, xr_emu_linear() % warpSize + delta); }
inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
// The host rounds every operation (no contraction), as these intrinsics do.
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __uint_as_float(unsigned i) { float f; memcpy(&f, &i, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned i; memcpy(&i, &f, 4); return i; }

// Runs `kernel()` for every thread of every block of `grid`, `block` threads per block (x
// fastest, as CUDA numbers them: warps are runs of warpSize consecutive linear thread ids).
template <class F> void xr_emu_launch(xr_emu_dim grid, xr_emu_dim block, F kernel) {
  gridDim = grid;
  blockDim = block;
  const unsigned threads = block.x * block.y * block.z;
  std::barrier<> block_barrier(threads);
  xr_emu_block_barrier = &block_barrier;
  xr_emu_warp_barriers.clear();
  for (unsigned w = 0; w < threads / warpSize; w++) xr_emu_warp_barriers.emplace_back(new std::barrier<>(warpSize));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; t++) {
    pool.emplace_back([=] {
      threadIdx = {t % block.x, t / block.x % block.y, t / (block.x * block.y)};
      for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
          for (unsigned x = 0; x < grid.x; x++) {
            if (t == 0)
              for (float &f : xr_emu_dynamic_shared) f = NAN;  // no block sees another's tiles
            blockIdx = {x, y, z};
            __syncthreads();
            kernel();
            __syncthreads();
          }
    });
  }
  for (std::thread &t : pool) t.join();
}

// Threads along x only.
template <class F> void xr_emu_launch(xr_emu_dim grid, unsigned threads, F kernel) {
  xr_emu_launch(grid, xr_emu_dim{threads, 1, 1}, kernel);
}

#endif
