/* opencl.conv and gpu.conv: every convolution step (kernels/conv.h) as one of the kernels that
 * kernels/opencl/conv.cl and kernels/gpu/conv.cu (NVRTC / hiprtc) both define, one work-item
 * per element the step writes, summing in fp32; on CUDA and HIP the products whose GEMM view is
 * at least GEMM_MIN on both sides run as conv.cu's implicit GEMMs instead (depthwise and other
 * thin groups stay direct: a tile of 64 would be mostly idle). Tensors are bound as whole
 * storage buffers; geometry, offsets, strides and dtypes go in the by-value block of
 * conv_args.h. */
#include "kernels/conv_device.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/family.h"
#include "kernels/gpu/sources.h"
#include "kernels/opencl/sources.h"

_Static_assert(sizeof(long) == 8, "the device argument block needs a 64-bit long");

/* Where the kernels come from: OpenCL C or CUDA C++, and the builder of that language. */
typedef struct backend {
  const char *name, *source;
  xr_status_t (*build)(xr_hal_device_t *device, const char *file, const char *options,
                       xr_hal_executable_t **out_executable);
} backend_t;

static const backend_t opencl = {"opencl.conv", "conv.cl", xr_opencl_build};
static const backend_t gpu = {"gpu.conv", "conv.cu", xr_gpu_build};

/* The smallest M and N (the GEMM's output sides) that the implicit GEMM takes. */
#define GEMM_MIN 16

typedef struct device_step {
  xr_hal_kernel_t *kernel;
  uint32_t gemm_grid[3]; /* an implicit-GEMM step's grid; [0] == 0: a direct one */
  xr_conv_args_t args;
  xr_hal_buffer_t *buffers[4]; /* x, w, y, bias (an absent one: any bound buffer) */
} device_step_t;

typedef struct device_conv {
  xr_hal_executable_t *exe;
  int count;
  device_step_t step[3];
} device_conv_t;

/* The operand step `s` writes (one work-item per element) and its element count. */
static const xr_conv_operand_t *written(const xr_conv_step_t *s) {
  switch (s->pass) {
    case XR_CONV_FORWARD: return &s->y;
    case XR_CONV_BACKWARD_DATA: return &s->x;
    case XR_CONV_BACKWARD_WEIGHT: return &s->w;
    default: return &s->bias;
  }
}

static int64_t elements(const xr_conv_operand_t *o) {
  int64_t n = 1;
  for (int d = 0; d < 5; d++) n *= o->shape[d];
  return n;
}

static xr_status_t conv_supports(const backend_t *b, const xr_op_plan_t *plan,
                                 xr_hal_device_t *device) {
  (void)device;
  const xr_conv_problem_t *p = plan->problem;
  for (int i = 0; i < p->step_count; i++) {
    const xr_conv_step_t *s = &p->steps[i];
    if (elements(written(s)) / XR_CONV_THREADS >= (int64_t)INT32_MAX) /* CUDA's grid limit */
      return xr_error(XR_UNIMPLEMENTED, "%s: %s: %lld results exceed one dispatch", b->name,
                      plan->op->name, (long long)elements(written(s)));
    const xr_conv_operand_t *all[4] = {&s->x, &s->w, &s->y, &s->bias};
    for (int k = 0; k < 4; k++)
      if (all[k]->index >= 0 && !xr_fast_float_dtype(all[k]->dtype))
        return xr_error(XR_UNIMPLEMENTED, "%s: %s: %s tensors (fp32, fp16, bf16 only)", b->name,
                        plan->op->name, xr_dtype_name(all[k]->dtype));
  }
  return XR_OK;
}

static void conv_release(void *state) {
  device_conv_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->exe);
  free(s);
}

static void operand_args(const xr_conv_operand_t *o, const xr_tensor_t *tensors,
                         xr_conv_operand_args_t *out) {
  if (o->index < 0) return;
  out->offset = tensors[o->index].offset;
  out->dtype = o->dtype;
  for (int d = 0; d < 5; d++) out->shape[d] = o->shape[d], out->strides[d] = o->strides[d];
}

void xr_conv_device_args(const xr_conv_problem_t *p, const xr_conv_step_t *step,
                         const xr_tensor_t *tensors, xr_conv_args_t *a, xr_hal_buffer_t **buffers) {
  memset(a, 0, sizeof *a);
  a->n = p->n, a->groups = p->groups, a->c_in = p->c_in, a->c_out = p->c_out;
  for (int d = 0; d < 3; d++) {
    a->in_size[d] = p->in[d], a->out_size[d] = p->out[d], a->window[d] = p->kernel[d];
    a->stride[d] = p->stride[d], a->pad[d] = p->pad[d], a->dilation[d] = p->dilation[d];
  }
  const xr_conv_operand_t *all[4] = {&step->x, &step->w, &step->y, &step->bias};
  xr_conv_operand_args_t *args[4] = {&a->x, &a->w, &a->y, &a->bias};
  int any = step->y.index; /* every step has a y */
  for (int k = 0; k < 4; k++) {
    operand_args(all[k], tensors, args[k]);
    buffers[k] = tensors[all[k]->index >= 0 ? all[k]->index : any].buffer;
  }
  a->has_bias = step->bias.index >= 0;
  a->total = elements(written(step));
}

/* The GEMM view of a product step (as conv.cu's xr_conv_gemm_of): its output is M x N per
 * group. */
static void gemm_sides(const xr_conv_problem_t *p, xr_conv_pass_t pass, int64_t *m, int64_t *n) {
  int64_t window = p->kernel[0] * p->kernel[1] * p->kernel[2];
  int64_t cg_in = p->c_in / p->groups, cg_out = p->c_out / p->groups;
  if (pass == XR_CONV_FORWARD)
    *m = p->n * p->out[0] * p->out[1] * p->out[2], *n = cg_out;
  else if (pass == XR_CONV_BACKWARD_DATA)
    *m = p->n * p->in[0] * p->in[1] * p->in[2], *n = cg_in;
  else
    *m = cg_out, *n = cg_in * window;
}

/* Whether step `s` runs as an implicit GEMM on backend b, and its grid. */
static bool gemm_grid(const backend_t *b, const xr_conv_problem_t *p, const xr_conv_step_t *s,
                      uint32_t *grid) {
  if (b != &gpu || s->pass == XR_CONV_BIAS_GRAD) return false;
  int64_t m, n;
  gemm_sides(p, s->pass, &m, &n);
  int64_t tiles_m = (m + XR_CONV_TILE - 1) / XR_CONV_TILE,
          tiles_n = (n + XR_CONV_TILE - 1) / XR_CONV_TILE;
  /* CUDA's grid limits: 2^31 - 1 blocks in x, 65535 in y and z */
  if (m < GEMM_MIN || n < GEMM_MIN || tiles_m > INT32_MAX || tiles_n > 65535 || p->groups > 65535)
    return false;
  grid[0] = (uint32_t)tiles_m, grid[1] = (uint32_t)tiles_n, grid[2] = (uint32_t)p->groups;
  return true;
}

static xr_status_t conv_prepare(const backend_t *b, const xr_op_plan_t *plan,
                                xr_hal_device_t *device, const xr_tensor_t *tensors,
                                void **out_state) {
  const xr_conv_problem_t *p = plan->problem;
  device_conv_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  static const char *const kernels[] = {"xr_conv_forward", "xr_conv_backward_data",
                                        "xr_conv_backward_weight", "xr_conv_bias_grad"};
  static const char *const gemm_kernels[] = {"xr_conv_forward_gemm", "xr_conv_backward_data_gemm",
                                             "xr_conv_backward_weight_gemm"};
  xr_status_t st = b->build(device, b->source, NULL, &s->exe);
  for (int i = 0; i < p->step_count && st == XR_OK; i++) {
    const xr_conv_step_t *step = &p->steps[i];
    device_step_t *c = &s->step[s->count++];
    const char *name =
        gemm_grid(b, p, step, c->gemm_grid) ? gemm_kernels[step->pass] : kernels[step->pass];
    if ((st = xr_hal_kernel_lookup(s->exe, name, &c->kernel)) != XR_OK) break;
    xr_conv_device_args(p, step, tensors, &c->args, c->buffers);
  }
  if (st != XR_OK) {
    conv_release(s);
    return xr_error_prefix(st, "%s: ", plan->op->name);
  }
  *out_state = s;
  return XR_OK;
}

xr_status_t xr_conv_device_dispatch(xr_hal_stream_t *stream, xr_hal_kernel_t *kernel,
                                    const xr_conv_args_t *a, xr_hal_buffer_t *const *buffers) {
  if (a->total == 0) return XR_OK;
  xr_hal_kernel_arg_t args[5] = {xr_hal_arg_bytes(a, sizeof *a)};
  for (int k = 0; k < 4; k++) args[1 + k] = xr_hal_arg_buffer(buffers[k]);
  xr_hal_dispatch_t d = {
      .grid = {(uint32_t)((a->total + XR_CONV_THREADS - 1) / XR_CONV_THREADS), 1, 1},
      .block = {XR_CONV_THREADS, 1, 1},
      .args = args,
      .arg_count = 5,
  };
  return xr_hal_stream_dispatch(stream, kernel, &d);
}

static xr_status_t gemm_dispatch(xr_hal_stream_t *stream, const device_step_t *c) {
  xr_hal_kernel_arg_t args[5] = {xr_hal_arg_bytes(&c->args, sizeof c->args)};
  for (int k = 0; k < 4; k++) args[1 + k] = xr_hal_arg_buffer(c->buffers[k]);
  xr_hal_dispatch_t d = {
      .grid = {c->gemm_grid[0], c->gemm_grid[1], c->gemm_grid[2]},
      .block = {XR_CONV_GEMM_THREADS, 1, 1},
      .args = args,
      .arg_count = 5,
  };
  return xr_hal_stream_dispatch(stream, c->kernel, &d);
}

static xr_status_t conv_enqueue(void *state, xr_hal_stream_t *stream) {
  device_conv_t *s = state;
  for (int i = 0; i < s->count; i++) {
    const device_step_t *c = &s->step[i];
    xr_status_t st = c->gemm_grid[0]
                         ? gemm_dispatch(stream, c)
                         : xr_conv_device_dispatch(stream, c->kernel, &c->args, c->buffers);
    if (st != XR_OK) return st;
  }
  return XR_OK;
}

XR_DEVICE_IMPL(xr_opencl_conv_impl, "opencl.conv", "opencl", opencl, conv_supports, conv_prepare,
               conv_enqueue, conv_release)
XR_DEVICE_IMPL(xr_gpu_conv_impl, "gpu.conv", "gpu", gpu, conv_supports, conv_prepare,
               conv_enqueue, conv_release)
