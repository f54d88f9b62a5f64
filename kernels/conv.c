/* The convolution family: aten::convolution and the names PyTorch dispatches it under
 * (_convolution, cudnn_/miopen_/mkldnn_convolution, miopen_depthwise_convolution, the
 * transposed ones, conv1d/2d/3d, conv_transpose1d/2d/3d) and aten::convolution_backward.
 * kernels/conv.h says how each becomes steps over one forward geometry.
 *
 * Schemas (native_functions.yaml), by argument position:
 *   convolution(input, weight, bias?, stride, padding, dilation, transposed, output_padding,
 *       groups); _convolution: the same, then benchmark, deterministic, cudnn_enabled, allow_tf32
 *   cudnn_convolution(self, weight, padding, stride, dilation, groups, ...): no bias
 *   cudnn_convolution_transpose(self, weight, padding, output_padding, stride, dilation,
 *       groups, ...)
 *   miopen_convolution, miopen_depthwise_convolution, mkldnn_convolution(self, weight, bias?,
 *       padding, stride, dilation, groups, ...)
 *   miopen_convolution_transpose(self, weight, bias?, padding, output_padding, stride,
 *       dilation, groups, ...)
 *   conv1d/2d/3d(input, weight, bias?=None, stride=1, padding=0, dilation=1, groups=1); the
 *       .padding overload takes padding "valid" or "same"
 *   conv_transpose1d/2d/3d(input, weight, bias?=None, stride=1, padding=0, output_padding=0,
 *       groups=1, dilation=1)
 *   convolution_backward(grad_output, input, weight, bias_sizes?, stride, padding, dilation,
 *       transposed, output_padding, groups, output_mask) -> (grad_input, grad_weight,
 *       grad_bias); an output the mask leaves out is returned empty.
 * Returns take PyTorch's memory format: channels-last (NHWC, NDHWC) when the input or the
 * weight is channels-last, else contiguous.
 *
 * The reference sums in double and rounds once per output element. */
#include "kernels/conv.h"

#include <stdlib.h>
#include <string.h>

/* Where an op keeps each argument (-1: absent, the default applies). */
typedef struct conv_schema {
  const char *name;
  const char *input_name; /* "input" or "self" */
  int bias, stride, padding, dilation, transposed, output_padding, groups;
  int fixed_transposed; /* -1: read `transposed`; else this */
} conv_schema_t;

static const conv_schema_t schemas[] = {
    {"aten::convolution", "input", 2, 3, 4, 5, 6, 7, 8, -1},
    {"aten::_convolution", "input", 2, 3, 4, 5, 6, 7, 8, -1},
    {"aten::cudnn_convolution", "self", -1, 3, 2, 4, -1, -1, 5, 0},
    {"aten::cudnn_convolution_transpose", "self", -1, 4, 2, 5, -1, 3, 6, 1},
    {"aten::miopen_convolution", "self", 2, 4, 3, 5, -1, -1, 6, 0},
    {"aten::miopen_depthwise_convolution", "self", 2, 4, 3, 5, -1, -1, 6, 0},
    {"aten::mkldnn_convolution", "self", 2, 4, 3, 5, -1, -1, 6, 0},
    {"aten::miopen_convolution_transpose", "self", 2, 5, 3, 6, -1, 4, 7, 1},
    {"aten::conv1d", "input", 2, 3, 4, 5, -1, -1, 6, 0},
    {"aten::conv2d", "input", 2, 3, 4, 5, -1, -1, 6, 0},
    {"aten::conv3d", "input", 2, 3, 4, 5, -1, -1, 6, 0},
    {"aten::conv_transpose1d", "input", 2, 3, 4, 7, -1, 5, 6, 1},
    {"aten::conv_transpose2d", "input", 2, 3, 4, 7, -1, 5, 6, 1},
    {"aten::conv_transpose3d", "input", 2, 3, 4, 7, -1, 5, 6, 1},
    /* convolution_backward's positions count from grad_output (0); input is 1, weight 2. */
    {"aten::convolution_backward", "input", -1, 4, 5, 6, 7, 8, 9, -1},
};

#define SCHEMA_COUNT (sizeof schemas / sizeof schemas[0])

static const char *const conv_ops[SCHEMA_COUNT + 1] = {
    "aten::convolution",
    "aten::_convolution",
    "aten::cudnn_convolution",
    "aten::cudnn_convolution_transpose",
    "aten::miopen_convolution",
    "aten::miopen_depthwise_convolution",
    "aten::mkldnn_convolution",
    "aten::miopen_convolution_transpose",
    "aten::conv1d",
    "aten::conv2d",
    "aten::conv3d",
    "aten::conv_transpose1d",
    "aten::conv_transpose2d",
    "aten::conv_transpose3d",
    "aten::convolution_backward",
    NULL,
};

static bool is_float(xr_dtype_t d) {
  return d == XR_DTYPE_F32 || d == XR_DTYPE_F16 || d == XR_DTYPE_BF16 || d == XR_DTYPE_F64;
}

double xr_conv_macs(const xr_conv_problem_t *p) {
  double m = (double)p->n * (double)p->c_out * (double)(p->c_in / p->groups);
  for (int d = 0; d < 3; d++) m *= (double)p->out[d] * (double)p->kernel[d];
  return m;
}

/* One spatial parameter list: `count` entries (a single one repeats), else `fallback`. */
static xr_status_t spatial_list(const xr_op_plan_t *plan, int position, const char *name,
                                int spatial, int64_t fallback, int64_t lo, int64_t *out) {
  int64_t v[3];
  int n = 0;
  for (int d = 0; d < spatial; d++) out[d] = fallback;
  if (position < 0) return XR_OK;
  const xr_value_t *value = xr_op_arg(plan->op, position, name);
  if (!value || value->kind == XR_VALUE_NULL) return XR_OK;
  xr_status_t st = xr_arg_int_list(plan->op, position, name, false, v, 3, &n);
  if (st != XR_OK) return st;
  if (n != 1 && n != spatial)
    return xr_plan_error(plan, "%s: %d entries for a %d-D convolution", name, n, spatial);
  for (int d = 0; d < spatial; d++) {
    out[d] = v[n == 1 ? 0 : d];
    if (out[d] < lo)
      return xr_plan_error(plan, "%s: %lld must be at least %lld", name, (long long)out[d],
                           (long long)lo);
  }
  return XR_OK;
}

/* A canonical operand of a traced tensor (spec) of rank spatial + 2, or + 1 when `unbatched`
 * (the batch dim then has size 1). Weights and activations alike: dims 0 and 1, then the
 * spatial dims right-aligned into d, h, w. */
static void operand_of(xr_conv_operand_t *o, int index, xr_dtype_t dtype, int rank,
                       const int64_t *shape, const int64_t *strides, bool unbatched) {
  o->index = index;
  o->dtype = dtype;
  for (int d = 0; d < 5; d++) o->shape[d] = 1, o->strides[d] = 0;
  int lead = unbatched ? 1 : 2, spatial = rank - lead;
  if (unbatched) {
    o->shape[1] = shape[0], o->strides[1] = strides[0];
  } else {
    o->shape[0] = shape[0], o->strides[0] = strides[0];
    o->shape[1] = shape[1], o->strides[1] = strides[1];
  }
  for (int d = 0; d < spatial; d++) {
    o->shape[5 - spatial + d] = shape[lead + d];
    o->strides[5 - spatial + d] = strides[lead + d];
  }
}

static void input_operand(const xr_op_plan_t *plan, xr_conv_operand_t *o, int index,
                          bool unbatched) {
  const xr_tensor_spec_t *t = plan->inputs[index];
  operand_of(o, index, t->dtype, t->rank, t->shape, t->strides, unbatched);
}

/* Return k, shaped like `like` (an input's rank and batching) with channels `c` and spatial
 * sizes `sizes` (canonical d, h, w); or, when `skip`, an empty return and an absent operand. */
static void return_operand(xr_op_plan_t *plan, xr_conv_operand_t *o, int k, xr_dtype_t dtype,
                           int rank, bool unbatched, int64_t n, int64_t c, const int64_t *sizes,
                           bool channels_last, bool skip) {
  if (skip) {
    int64_t zero = 0;
    xr_desc_set(&plan->returns[k], dtype, 1, &zero);
    o->index = -1;
    return;
  }
  int64_t shape[5], strides[5];
  int lead = unbatched ? 1 : 2, spatial = rank - lead;
  if (unbatched)
    shape[0] = c;
  else
    shape[0] = n, shape[1] = c;
  for (int d = 0; d < spatial; d++) shape[lead + d] = sizes[3 - spatial + d];
  xr_desc_set_format(&plan->returns[k], dtype, rank, shape, channels_last && !unbatched, strides);
  operand_of(o, (int)plan->input_count + k, dtype, rank, shape, strides, unbatched);
}

/* A bias-like operand ([c]) of input `index` or of return k. */
static void vector_operand(xr_conv_operand_t *o, int index, xr_dtype_t dtype, int64_t c,
                           int64_t stride) {
  o->index = index;
  o->dtype = dtype;
  for (int d = 0; d < 5; d++) o->shape[d] = 1, o->strides[d] = 0;
  o->shape[0] = c;
  o->strides[0] = stride;
}

/* An operand's distinct elements: an expanded (stride-0) dim once. */
static double operand_bytes(const xr_conv_operand_t *o) {
  if (o->index < 0) return 0;
  double n = (double)xr_dtype_size(o->dtype);
  for (int d = 0; d < 5; d++)
    if (o->strides[d] != 0 || o->shape[d] == 0) n *= (double)o->shape[d];
  return n;
}

/* output_mask: three bools. */
static xr_status_t output_mask(const xr_op_plan_t *plan, bool *mask) {
  const xr_value_t *v = xr_op_arg(plan->op, 10, "output_mask");
  if (!v) return xr_plan_error(plan, "argument 'output_mask' (position 10) is missing");
  if (v->kind != XR_VALUE_LIST || v->as.list.count != 3)
    return xr_plan_error(plan, "output_mask: expected a list of three bools");
  for (int k = 0; k < 3; k++) {
    const xr_value_t *b = &v->as.list.items[k];
    if (b->kind != XR_VALUE_BOOL && b->kind != XR_VALUE_INT)
      return xr_plan_error(plan, "output_mask: entry %d is not a bool", k);
    mask[k] = b->kind == XR_VALUE_BOOL ? b->as.b : b->as.i != 0;
  }
  return XR_OK;
}

/* padding "valid" or "same" (conv*d.padding): the left pads, the output sizes then being the
 * input's for "same" (PyTorch pads the odd remainder on the right). */
static xr_status_t padding_mode(const xr_op_plan_t *plan, const char *mode, int spatial,
                                const int64_t *in, const int64_t *kernel, const int64_t *stride,
                                const int64_t *dilation, int64_t *pad, int64_t *out) {
  for (int d = 0; d < spatial; d++) {
    if (!strcmp(mode, "valid")) {
      pad[d] = 0;
      out[d] = (in[d] - dilation[d] * (kernel[d] - 1) - 1) / stride[d] + 1;
    } else if (!strcmp(mode, "same")) {
      if (stride[d] != 1)
        return xr_plan_error(plan, "padding: 'same' needs stride 1, got %lld",
                             (long long)stride[d]);
      pad[d] = dilation[d] * (kernel[d] - 1) / 2;
      out[d] = in[d];
    } else {
      return xr_plan_error(plan, "padding: '%s' is neither 'valid' nor 'same'", mode);
    }
  }
  return XR_OK;
}

static xr_status_t analyze(xr_op_plan_t *plan) {
  const xr_op_t *op = plan->op;
  const conv_schema_t *s = NULL;
  for (size_t i = 0; i < SCHEMA_COUNT; i++)
    if (!strcmp(op->name, schemas[i].name)) s = &schemas[i];
  if (!s) return xr_plan_error(plan, "not a convolution");
  xr_conv_problem_t *p = calloc(1, sizeof *p);
  if (!p) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", op->name);
  plan->problem = p;

  bool backward = !strcmp(op->name, "aten::convolution_backward");
  int grad_output = -1, input = -1, weight = -1, bias = -1;
  xr_status_t st;
  if (backward) {
    if ((st = xr_arg_tensor(plan, 0, "grad_output", true, &grad_output)) ||
        (st = xr_arg_tensor(plan, 1, "input", true, &input)) ||
        (st = xr_arg_tensor(plan, 2, "weight", true, &weight)))
      return st;
  } else {
    if ((st = xr_arg_tensor(plan, 0, s->input_name, true, &input)) ||
        (st = xr_arg_tensor(plan, 1, "weight", true, &weight)) ||
        (s->bias >= 0 && (st = xr_arg_tensor(plan, s->bias, "bias", false, &bias))))
      return st;
  }
  const xr_tensor_spec_t *x = plan->inputs[input], *w = plan->inputs[weight];
  int spatial = w->rank - 2;
  if (spatial < 1 || spatial > 3)
    return xr_plan_error(plan, "weight: expected a 3-D, 4-D or 5-D tensor, got %d-D", w->rank);
  if (x->rank != spatial + 2 && x->rank != spatial + 1)
    return xr_plan_error(plan, "%s: expected %d-D (or unbatched %d-D) for a %d-D weight, got %d-D",
                         s->input_name, spatial + 2, spatial + 1, w->rank, x->rank);
  bool unbatched = x->rank == spatial + 1;
  if (!is_float(x->dtype) || w->dtype != x->dtype)
    return xr_plan_error(plan, "weight: %s with a %s %s; expected matching float dtypes",
                         xr_dtype_name(w->dtype), xr_dtype_name(x->dtype), s->input_name);

  bool transposed = s->fixed_transposed == 1;
  if (s->fixed_transposed < 0 &&
      (st = xr_arg_bool(op, s->transposed, "transposed", true, &transposed)))
    return st;
  int64_t stride[3], pad[3], dilation[3], output_padding[3], groups = 1;
  const char *mode = NULL;
  const xr_value_t *padv = xr_op_arg(op, s->padding, "padding");
  if (padv && padv->kind == XR_VALUE_STRING) {
    if (transposed) return xr_plan_error(plan, "padding: a string for a transposed convolution");
    mode = padv->as.s;
  }
  if ((st = spatial_list(plan, s->stride, "stride", spatial, 1, 1, stride)) ||
      (!mode && (st = spatial_list(plan, s->padding, "padding", spatial, 0, 0, pad))) ||
      (st = spatial_list(plan, s->dilation, "dilation", spatial, 1, 1, dilation)) ||
      (st = spatial_list(plan, s->output_padding, "output_padding", spatial, 0, 0,
                         output_padding)) ||
      (st = xr_arg_int(op, s->groups, "groups", false, &groups)))
    return st;
  if (groups < 1) return xr_plan_error(plan, "groups: %lld", (long long)groups);

  int lead = unbatched ? 1 : 2;
  int64_t n = unbatched ? 1 : x->shape[0], channels = x->shape[lead - 1];
  int64_t in[3], kernel[3], out[3];
  for (int d = 0; d < spatial; d++) in[d] = x->shape[lead + d], kernel[d] = w->shape[2 + d];
  /* Channels: a plain convolution maps `channels` = w[1] * groups to w[0]; a transposed one
   * maps `channels` = w[0] to w[1] * groups. */
  int64_t w_in = transposed ? w->shape[0] : w->shape[1] * groups;
  int64_t w_out = transposed ? w->shape[1] * groups : w->shape[0];
  if (w_in != channels)
    return xr_plan_error(plan,
                         "weight: %s [%lld, %lld, ...] with groups %lld expects %lld input "
                         "channels, %s has %lld",
                         transposed ? "transposed" : "shape", (long long)w->shape[0],
                         (long long)w->shape[1], (long long)groups, (long long)w_in, s->input_name,
                         (long long)channels);
  if (w->shape[0] % groups != 0)
    return xr_plan_error(plan, "weight: %lld %s channels are not divisible by groups %lld",
                         (long long)w->shape[0], transposed ? "input" : "output",
                         (long long)groups);
  for (int d = 0; d < spatial; d++) {
    if (kernel[d] < 1)
      return xr_plan_error(plan, "weight: kernel size %lld in spatial dim %d", (long long)kernel[d],
                           d);
    if (transposed) {
      if (output_padding[d] >= stride[d] && output_padding[d] >= dilation[d])
        return xr_plan_error(plan, "output_padding: %lld must be smaller than stride or dilation",
                             (long long)output_padding[d]);
      out[d] = (in[d] - 1) * stride[d] - 2 * pad[d] + dilation[d] * (kernel[d] - 1) +
               output_padding[d] + 1;
    } else if (!mode) {
      out[d] = (in[d] + 2 * pad[d] - dilation[d] * (kernel[d] - 1) - 1) / stride[d] + 1;
    }
  }
  if (mode && (st = padding_mode(plan, mode, spatial, in, kernel, stride, dilation, pad, out)))
    return st;
  for (int d = 0; d < spatial; d++)
    if (out[d] < 1 || in[d] < 1)
      return xr_plan_error(plan, "%s: spatial size %lld gives output size %lld in dim %d",
                           s->input_name, (long long)in[d], (long long)out[d], d);

  /* The forward geometry: for a transposed convolution its x is the op's output and its y the
   * op's input. */
  p->spatial = spatial;
  p->n = n;
  p->groups = groups;
  p->c_in = transposed ? w_out : w_in;
  p->c_out = transposed ? w_in : w_out;
  for (int d = 0; d < 3; d++) {
    int k = d - (3 - spatial);
    bool real = k >= 0;
    p->in[d] = real ? (transposed ? out[k] : in[k]) : 1;
    p->out[d] = real ? (transposed ? in[k] : out[k]) : 1;
    p->kernel[d] = real ? kernel[k] : 1;
    p->stride[d] = real ? stride[k] : 1;
    p->pad[d] = real ? pad[k] : 0;
    p->dilation[d] = real ? dilation[k] : 1;
  }

  bool channels_last = !unbatched && (xr_spec_channels_last(x) || xr_spec_channels_last(w));
  xr_conv_operand_t weight_op, input_op;
  input_operand(plan, &weight_op, weight, false);
  input_operand(plan, &input_op, input, unbatched);
  xr_dtype_t dtype = x->dtype;
  if (!backward) {
    xr_conv_step_t *step = &p->steps[p->step_count++];
    step->pass = transposed ? XR_CONV_BACKWARD_DATA : XR_CONV_FORWARD;
    step->w = weight_op;
    xr_conv_operand_t *from = transposed ? &step->y : &step->x,
                      *to = transposed ? &step->x : &step->y;
    *from = input_op;
    plan->return_count = 1;
    return_operand(plan, to, 0, dtype, x->rank, unbatched, n, w_out, transposed ? p->in : p->out,
                   channels_last, false);
    step->bias.index = -1;
    if (bias >= 0) {
      const xr_tensor_spec_t *b = plan->inputs[bias];
      if (b->rank != 1 || b->shape[0] != w_out || !is_float(b->dtype))
        return xr_plan_error(plan, "bias: expected a float [%lld], got %d-D %s", (long long)w_out,
                             b->rank, xr_dtype_name(b->dtype));
      vector_operand(&step->bias, bias, b->dtype, w_out, b->strides[0]);
    }
  } else {
    bool mask[3];
    if ((st = output_mask(plan, mask))) return st;
    const xr_tensor_spec_t *go = plan->inputs[grad_output];
    if (go->dtype != dtype || go->rank != x->rank)
      return xr_plan_error(plan, "grad_output: expected a %d-D %s tensor like input", x->rank,
                           xr_dtype_name(dtype));
    const int64_t *want = transposed ? p->in : p->out;
    if (go->shape[0] != (unbatched ? w_out : n) || (!unbatched && go->shape[1] != w_out))
      return xr_plan_error(plan, "grad_output: expected %lld channels", (long long)w_out);
    for (int d = 0; d < spatial; d++)
      if (go->shape[lead + d] != want[3 - spatial + d])
        return xr_plan_error(plan,
                             "grad_output: spatial dim %d is %lld, the convolution gives %lld", d,
                             (long long)go->shape[lead + d], (long long)want[3 - spatial + d]);
    xr_conv_operand_t grad_op;
    input_operand(plan, &grad_op, grad_output, unbatched);
    plan->return_count = 3;
    xr_conv_operand_t grad_input, grad_weight;
    return_operand(plan, &grad_input, 0, dtype, x->rank, unbatched, n, channels,
                   transposed ? p->out : p->in, channels_last, !mask[0]);
    int64_t zero = 0;
    if (mask[1]) {
      int64_t wstrides[5];
      xr_desc_set_format(&plan->returns[1], dtype, w->rank, w->shape, channels_last, wstrides);
      operand_of(&grad_weight, (int)plan->input_count + 1, dtype, w->rank, w->shape, wstrides,
                 false);
    } else {
      xr_desc_set(&plan->returns[1], dtype, 1, &zero);
    }
    if (mask[2])
      xr_desc_set(&plan->returns[2], dtype, 1, &w_out);
    else
      xr_desc_set(&plan->returns[2], dtype, 1, &zero);
    if (mask[0]) {
      xr_conv_step_t *step = &p->steps[p->step_count++];
      step->pass = transposed ? XR_CONV_FORWARD : XR_CONV_BACKWARD_DATA;
      step->w = weight_op;
      step->bias.index = -1;
      if (transposed)
        step->x = grad_op, step->y = grad_input;
      else
        step->y = grad_op, step->x = grad_input;
    }
    if (mask[1]) {
      xr_conv_step_t *step = &p->steps[p->step_count++];
      step->pass = XR_CONV_BACKWARD_WEIGHT;
      step->w = grad_weight;
      step->bias.index = -1;
      if (transposed)
        step->x = grad_op, step->y = input_op;
      else
        step->x = input_op, step->y = grad_op;
    }
    if (mask[2]) {
      xr_conv_step_t *step = &p->steps[p->step_count++];
      step->pass = XR_CONV_BIAS_GRAD;
      step->y = grad_op;
      vector_operand(&step->bias, (int)plan->input_count + 2, dtype, w_out, 1);
      step->x.index = step->w.index = -1;
    }
  }

  plan->flops = 0;
  plan->bytes = 0;
  for (int i = 0; i < p->step_count; i++) {
    const xr_conv_step_t *step = &p->steps[i];
    double grad_elems = 1; /* one add per grad_output element, expanded or not */
    for (int d = 0; d < 5; d++) grad_elems *= (double)step->y.shape[d];
    plan->flops += step->pass == XR_CONV_BIAS_GRAD ? grad_elems : 2.0 * xr_conv_macs(p);
    plan->bytes += operand_bytes(&step->x) + operand_bytes(&step->w) + operand_bytes(&step->y) +
                   operand_bytes(&step->bias);
  }
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* CPU reference                                                                              */

typedef struct ref_state {
  const xr_conv_problem_t *p;
  const xr_conv_step_t *step;
  void *x, *w, *y, *bias; /* storage bases, the tensors' offsets applied by the *_off fields */
  int64_t x_off, w_off, y_off, bias_off;
} ref_state_t;

typedef struct ref_steps {
  int count;
  ref_state_t step[3];
} ref_steps_t;

static double load(void *base, const xr_conv_operand_t *o, int64_t off, int64_t i0, int64_t i1,
                   int64_t i2, int64_t i3, int64_t i4) {
  return xr_load_element(base, o->dtype, off + xr_conv_offset(o, i0, i1, i2, i3, i4));
}

static double bias_of(const ref_state_t *s, int64_t c) {
  if (!s->bias) return 0;
  return xr_load_element(s->bias, s->step->bias.dtype, s->bias_off + c * s->step->bias.strides[0]);
}

/* y[n, co, :] for item = n * c_out + co. */
static void ref_forward(void *ctx, size_t begin, size_t end) {
  const ref_state_t *s = ctx;
  const xr_conv_problem_t *p = s->p;
  const xr_conv_operand_t *X = &s->step->x, *W = &s->step->w, *Y = &s->step->y;
  int64_t cg_in = p->c_in / p->groups, cg_out = p->c_out / p->groups;
  for (size_t item = begin; item < end; item++) {
    int64_t n = (int64_t)item / p->c_out, co = (int64_t)item % p->c_out, g = co / cg_out;
    for (int64_t od = 0; od < p->out[0]; od++)
      for (int64_t oh = 0; oh < p->out[1]; oh++)
        for (int64_t ow = 0; ow < p->out[2]; ow++) {
          double acc = bias_of(s, co);
          for (int64_t ci = 0; ci < cg_in; ci++)
            for (int64_t kd = 0; kd < p->kernel[0]; kd++) {
              int64_t id = od * p->stride[0] - p->pad[0] + kd * p->dilation[0];
              if (id < 0 || id >= p->in[0]) continue;
              for (int64_t kh = 0; kh < p->kernel[1]; kh++) {
                int64_t ih = oh * p->stride[1] - p->pad[1] + kh * p->dilation[1];
                if (ih < 0 || ih >= p->in[1]) continue;
                for (int64_t kw = 0; kw < p->kernel[2]; kw++) {
                  int64_t iw = ow * p->stride[2] - p->pad[2] + kw * p->dilation[2];
                  if (iw < 0 || iw >= p->in[2]) continue;
                  acc += load(s->x, X, s->x_off, n, g * cg_in + ci, id, ih, iw) *
                         load(s->w, W, s->w_off, co, ci, kd, kh, kw);
                }
              }
            }
          xr_store_element(s->y, Y->dtype, s->y_off + xr_conv_offset(Y, n, co, od, oh, ow), acc);
        }
  }
}

/* The output position o with o * stride - pad + k * dilation == i in one dim, or -1. */
static int64_t source_of(int64_t i, int64_t k, int64_t stride, int64_t pad, int64_t dilation,
                         int64_t out) {
  int64_t t = i + pad - k * dilation;
  if (t < 0 || t % stride != 0 || t / stride >= out) return -1;
  return t / stride;
}

/* x[n, ci, :] for item = n * c_in + ci. */
static void ref_backward_data(void *ctx, size_t begin, size_t end) {
  const ref_state_t *s = ctx;
  const xr_conv_problem_t *p = s->p;
  const xr_conv_operand_t *X = &s->step->x, *W = &s->step->w, *Y = &s->step->y;
  int64_t cg_in = p->c_in / p->groups, cg_out = p->c_out / p->groups;
  for (size_t item = begin; item < end; item++) {
    int64_t n = (int64_t)item / p->c_in, ci = (int64_t)item % p->c_in, g = ci / cg_in;
    for (int64_t id = 0; id < p->in[0]; id++)
      for (int64_t ih = 0; ih < p->in[1]; ih++)
        for (int64_t iw = 0; iw < p->in[2]; iw++) {
          double acc = bias_of(s, ci);
          for (int64_t kd = 0; kd < p->kernel[0]; kd++) {
            int64_t od = source_of(id, kd, p->stride[0], p->pad[0], p->dilation[0], p->out[0]);
            if (od < 0) continue;
            for (int64_t kh = 0; kh < p->kernel[1]; kh++) {
              int64_t oh = source_of(ih, kh, p->stride[1], p->pad[1], p->dilation[1], p->out[1]);
              if (oh < 0) continue;
              for (int64_t kw = 0; kw < p->kernel[2]; kw++) {
                int64_t ow = source_of(iw, kw, p->stride[2], p->pad[2], p->dilation[2], p->out[2]);
                if (ow < 0) continue;
                for (int64_t co = g * cg_out; co < (g + 1) * cg_out; co++)
                  acc += load(s->y, Y, s->y_off, n, co, od, oh, ow) *
                         load(s->w, W, s->w_off, co, ci - g * cg_in, kd, kh, kw);
              }
            }
          }
          xr_store_element(s->x, X->dtype, s->x_off + xr_conv_offset(X, n, ci, id, ih, iw), acc);
        }
  }
}

/* w[co, ci, :] for item = co * (c_in / groups) + ci. */
static void ref_backward_weight(void *ctx, size_t begin, size_t end) {
  const ref_state_t *s = ctx;
  const xr_conv_problem_t *p = s->p;
  const xr_conv_operand_t *X = &s->step->x, *W = &s->step->w, *Y = &s->step->y;
  int64_t cg_in = p->c_in / p->groups, cg_out = p->c_out / p->groups;
  for (size_t item = begin; item < end; item++) {
    int64_t co = (int64_t)item / cg_in, ci = (int64_t)item % cg_in, g = co / cg_out;
    for (int64_t kd = 0; kd < p->kernel[0]; kd++)
      for (int64_t kh = 0; kh < p->kernel[1]; kh++)
        for (int64_t kw = 0; kw < p->kernel[2]; kw++) {
          double acc = 0;
          for (int64_t n = 0; n < p->n; n++)
            for (int64_t od = 0; od < p->out[0]; od++) {
              int64_t id = od * p->stride[0] - p->pad[0] + kd * p->dilation[0];
              if (id < 0 || id >= p->in[0]) continue;
              for (int64_t oh = 0; oh < p->out[1]; oh++) {
                int64_t ih = oh * p->stride[1] - p->pad[1] + kh * p->dilation[1];
                if (ih < 0 || ih >= p->in[1]) continue;
                for (int64_t ow = 0; ow < p->out[2]; ow++) {
                  int64_t iw = ow * p->stride[2] - p->pad[2] + kw * p->dilation[2];
                  if (iw < 0 || iw >= p->in[2]) continue;
                  acc += load(s->y, Y, s->y_off, n, co, od, oh, ow) *
                         load(s->x, X, s->x_off, n, g * cg_in + ci, id, ih, iw);
                }
              }
            }
          xr_store_element(s->w, W->dtype, s->w_off + xr_conv_offset(W, co, ci, kd, kh, kw), acc);
        }
  }
}

/* bias[c] = the sum of the y slot's channel c. */
static void ref_bias_grad(void *ctx, size_t begin, size_t end) {
  const ref_state_t *s = ctx;
  const xr_conv_operand_t *Y = &s->step->y;
  for (size_t c = begin; c < end; c++) {
    double acc = 0;
    for (int64_t n = 0; n < Y->shape[0]; n++)
      for (int64_t d = 0; d < Y->shape[2]; d++)
        for (int64_t h = 0; h < Y->shape[3]; h++)
          for (int64_t w = 0; w < Y->shape[4]; w++)
            acc += load(s->y, Y, s->y_off, n, (int64_t)c, d, h, w);
    xr_store_element(s->bias, s->step->bias.dtype,
                     s->bias_off + (int64_t)c * s->step->bias.strides[0], acc);
  }
}

static xr_status_t bind(const xr_tensor_t *tensors, const xr_conv_operand_t *o, void **base,
                        int64_t *offset) {
  *base = NULL;
  if (o->index < 0) return XR_OK;
  *offset = tensors[o->index].offset;
  return xr_tensor_host(&tensors[o->index], base);
}

static xr_status_t ref_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_conv_problem_t *p = plan->problem;
  ref_steps_t *r = calloc(1, sizeof *r);
  if (!r) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  r->count = p->step_count;
  for (int i = 0; i < p->step_count; i++) {
    ref_state_t *s = &r->step[i];
    const xr_conv_step_t *step = &p->steps[i];
    s->p = p;
    s->step = step;
    xr_status_t st;
    if ((st = bind(tensors, &step->x, &s->x, &s->x_off)) ||
        (st = bind(tensors, &step->w, &s->w, &s->w_off)) ||
        (st = bind(tensors, &step->y, &s->y, &s->y_off)) ||
        (st = bind(tensors, &step->bias, &s->bias, &s->bias_off))) {
      free(r);
      return st;
    }
  }
  *out_state = r;
  return XR_OK;
}

static xr_status_t ref_enqueue(void *state, xr_hal_stream_t *stream) {
  ref_steps_t *r = state;
  for (int i = 0; i < r->count; i++) {
    ref_state_t *s = &r->step[i];
    const xr_conv_problem_t *p = s->p;
    xr_hal_parallel_fn_t fn;
    int64_t items;
    switch (s->step->pass) {
      case XR_CONV_FORWARD: fn = ref_forward, items = p->n * p->c_out; break;
      case XR_CONV_BACKWARD_DATA: fn = ref_backward_data, items = p->n * p->c_in; break;
      case XR_CONV_BACKWARD_WEIGHT:
        fn = ref_backward_weight, items = p->c_out * (p->c_in / p->groups);
        break;
      default: fn = ref_bias_grad, items = s->step->bias.shape[0]; break;
    }
    if (items == 0) continue;
    xr_status_t st = xr_hal_stream_enqueue_parallel(stream, (size_t)items, 1, fn, s);
    if (st != XR_OK) return st;
  }
  return XR_OK;
}

static const xr_kernel_impl_t ref_conv = {
    .name = "ref.conv",
    .driver = "cpu",
    .reference = true,
    .prepare = ref_prepare,
    .enqueue = ref_enqueue,
    .release = free,
};

/* Most preferred first: vendor libraries, then our kernels, per driver. */
static const xr_kernel_impl_t *const conv_impls[] = {
    &xr_cpu_conv_onednn_impl,     /* cpu */
    &xr_cpu_conv_impl,            /* cpu */
    &xr_opencl_conv_clblast_impl, /* opencl */
    &xr_opencl_conv_impl,         /* opencl */
    &xr_cuda_cudnn_conv_impl,     /* cuda */
    &xr_hip_miopen_conv_impl,     /* hip */
    &xr_gpu_conv_impl,            /* cuda, hip */
    &ref_conv,
    NULL,
};

const xr_op_family_t xr_family_conv = {
    .name = "conv",
    .op_names = conv_ops,
    .analyze = analyze,
    .free_problem = free,
    .impls = conv_impls,
};
