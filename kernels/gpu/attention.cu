// The attention family on CUDA and HIP (kernels/attention_device.c launches these): dense
// scaled-dot-product attention, the flash forward (dense, varlen, paged by block table) and
// AITER's varlen / batch-prefill forwards, flash-style over kernels/attention.h's problem (the
// kernel: attention_kernel.h). Queries, keys and values share one storage type: f32, f16, bf16.
#include "hip_compat.h"
#include "dtype_io.h"
#include "attention_args.h"
#include "attention_kernel.h"

XR_ATTENTION_KERNEL(f32, xr_io_f32, false)
XR_ATTENTION_KERNEL(f16, xr_io_f16, false)
XR_ATTENTION_KERNEL(bf16, xr_io_bf16, false)
