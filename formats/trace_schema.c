/* Built-in operator schemas, aliases and string fallbacks: see trace_schema.h.
 *
 * Sources: PyTorch aten/src/ATen/native/native_functions.yaml, vLLM csrc/torch_bindings.cpp,
 * csrc/moe/torch_bindings.cpp, csrc/rocm/torch_bindings.cpp, the Python-registered vLLM custom
 * ops (vllm::*), PyTorch torch/csrc/distributed/c10d/Ops.cpp, and the "schema" strings that
 * TraceLens recorded in tests/data/fixtures/tracelens_ir/event_to_ir_pairs.json. Overloads of one
 * op are tried in order; the first whose arity and tensor positions agree with the recorded event
 * wins. */
#include "formats/trace_schema.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static const char *const builtin[] = {
    /* matrix products */
    "aten::mm(Tensor self, Tensor mat2) -> Tensor",
    "aten::mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)",
    "aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
    "aten::addmm.out(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1, "
    "Tensor(a!) out) -> Tensor(a!)",
    "aten::bmm(Tensor self, Tensor mat2) -> Tensor",
    "aten::bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)",
    "aten::baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) "
    "-> Tensor",
    "aten::matmul(Tensor self, Tensor other) -> Tensor",
    "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
    "aten::_scaled_mm(Tensor self, Tensor mat2, Tensor scale_a, Tensor scale_b, Tensor? bias=None, "
    "Tensor? scale_result=None, ScalarType? out_dtype=None, bool use_fast_accum=False) -> Tensor",
    /* elementwise */
    "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
    "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
    "aten::add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)",
    "aten::sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "aten::sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
    "aten::sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
    "aten::mul.Tensor(Tensor self, Tensor other) -> Tensor",
    "aten::mul.Scalar(Tensor self, Scalar other) -> Tensor",
    "aten::mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
    "aten::mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
    "aten::div.Tensor(Tensor self, Tensor other) -> Tensor",
    "aten::div.Scalar(Tensor self, Scalar other) -> Tensor",
    "aten::div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
    "aten::div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor",
    "aten::div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
    "aten::neg(Tensor self) -> Tensor",
    "aten::masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor",
    "aten::masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor",
    "aten::where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
    "aten::where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor",
    "aten::where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor",
    "aten::where.Scalar(Tensor condition, Scalar self, Scalar other) -> Tensor",
    "aten::clamp_min_(Tensor(a!) self, Scalar min) -> Tensor(a!)",
    "aten::threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor",
    /* copies, conversions, fills */
    "aten::copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)",
    "aten::to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, "
    "MemoryFormat? memory_format=None) -> Tensor(a)",
    "aten::to.other(Tensor(a) self, Tensor other, bool non_blocking=False, bool copy=False, "
    "MemoryFormat? memory_format=None) -> Tensor(a)",
    "aten::to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False, "
    "bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)",
    "aten::to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, Layout? layout=None, "
    "Device? device=None, bool? pin_memory=None, bool non_blocking=False, bool copy=False, "
    "MemoryFormat? memory_format=None) -> Tensor(a)",
    "aten::_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? "
    "device=None, bool? pin_memory=None, bool non_blocking=False, MemoryFormat? "
    "memory_format=None) -> Tensor",
    "aten::fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)",
    "aten::fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)",
    "aten::zero_(Tensor(a!) self) -> Tensor(a!)",
    "aten::full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, "
    "Device? device=None, bool? pin_memory=None) -> Tensor",
    "aten::arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? "
    "device=None, bool? pin_memory=None) -> Tensor",
    "aten::arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, "
    "Device? device=None, bool? pin_memory=None) -> Tensor",
    "aten::arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, "
    "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
    /* reductions, normalisation, activations */
    "aten::_softmax(Tensor self, int dim, bool half_to_float) -> Tensor",
    "aten::softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
    "aten::native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? "
    "bias, float eps) -> (Tensor, Tensor, Tensor)",
    "aten::layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? "
    "bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor",
    "aten::native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
    "Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
    "aten::gelu(Tensor self, *, str approximate='none') -> Tensor",
    "aten::silu(Tensor self) -> Tensor",
    "aten::argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
    /* reductions, scans and sorts (kernels/reduce.c); where overloads share an arity, the one
     * whose argument kinds are most specific comes first */
    "aten::cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
    "aten::cumsum.out(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!) out) -> "
    "Tensor(a!)",
    "aten::cumsum_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> Tensor(a!)",
    "aten::cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
    "aten::cumprod.out(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!) out) -> "
    "Tensor(a!)",
    "aten::cumprod_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> Tensor(a!)",
    "aten::mean(Tensor self, *, ScalarType? dtype=None) -> Tensor",
    "aten::mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> "
    "Tensor",
    "aten::mean.out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, "
    "Tensor(a!) out) -> Tensor(a!)",
    "aten::sum(Tensor self, *, ScalarType? dtype=None) -> Tensor",
    "aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? "
    "dtype=None) -> Tensor",
    "aten::sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? "
    "dtype=None, Tensor(a!) out) -> Tensor(a!)",
    "aten::nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) "
    "-> Tensor",
    "aten::prod(Tensor self, *, ScalarType? dtype=None) -> Tensor",
    "aten::prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> "
    "Tensor",
    "aten::prod.int_out(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None, "
    "Tensor(a!) out) -> Tensor(a!)",
    "aten::amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
    "aten::amax.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out) -> "
    "Tensor(a!)",
    "aten::amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
    "aten::amin.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out) -> "
    "Tensor(a!)",
    "aten::max(Tensor self) -> Tensor",
    "aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "aten::max.other(Tensor self, Tensor other) -> Tensor",
    "aten::max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) "
    "max_values) -> (Tensor(a!) values, Tensor(b!) indices)",
    "aten::min(Tensor self) -> Tensor",
    "aten::min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "aten::min.other(Tensor self, Tensor other) -> Tensor",
    "aten::min.dim_min(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) min, Tensor(b!) "
    "min_indices) -> (Tensor(a!) values, Tensor(b!) indices)",
    "aten::argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
    "aten::all(Tensor self) -> Tensor",
    "aten::all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor",
    "aten::all.dims(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor",
    "aten::any(Tensor self) -> Tensor",
    "aten::any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor",
    "aten::any.dims(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor",
    "aten::count_nonzero.dim_IntList(Tensor self, int[] dim) -> Tensor",
    "aten::count_nonzero(Tensor self, int? dim=None) -> Tensor",
    "aten::logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor",
    "aten::var(Tensor self, bool unbiased=True) -> Tensor",
    "aten::var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool "
    "keepdim=False) -> Tensor",
    "aten::var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor",
    "aten::std(Tensor self, bool unbiased=True) -> Tensor",
    "aten::std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool "
    "keepdim=False) -> Tensor",
    "aten::std.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor",
    "aten::var_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)",
    "aten::var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool "
    "keepdim=False) -> (Tensor, Tensor)",
    "aten::var_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> "
    "(Tensor, Tensor)",
    "aten::std_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)",
    "aten::std_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool "
    "keepdim=False) -> (Tensor, Tensor)",
    "aten::std_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> "
    "(Tensor, Tensor)",
    "aten::norm.Scalar(Tensor self, Scalar p=2) -> Tensor",
    "aten::norm.ScalarOpt_dtype(Tensor self, Scalar? p, *, ScalarType dtype) -> Tensor",
    "aten::norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor",
    "aten::norm.ScalarOpt_dim_dtype(Tensor self, Scalar? p, int[1] dim, bool keepdim, *, "
    "ScalarType dtype) -> Tensor",
    "aten::linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, "
    "ScalarType? dtype=None) -> Tensor",
    "aten::sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor "
    "indices)",
    "aten::sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> "
    "(Tensor values, Tensor indices)",
    "aten::sort.values(Tensor self, int dim=-1, bool descending=False, *, Tensor(a!) values, "
    "Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)",
    "aten::argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor",
    "aten::argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> "
    "Tensor",
    "aten::topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> "
    "(Tensor values, Tensor indices)",
    "aten::topk.values(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True, *, "
    "Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)",
    /* losses (kernels/loss.c) */
    "aten::mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor",
    "aten::mse_loss.out(Tensor self, Tensor target, int reduction=1, *, Tensor(a!) out) -> "
    "Tensor(a!)",
    "aten::mse_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction) -> "
    "Tensor",
    "aten::mse_loss_backward.grad_input(Tensor grad_output, Tensor self, Tensor target, int "
    "reduction, *, Tensor(a!) grad_input) -> Tensor(a!)",
    /* indexing and layout */
    "aten::cat(Tensor[] tensors, int dim=0) -> Tensor",
    "aten::index_select(Tensor self, int dim, Tensor index) -> Tensor",
    "aten::embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool "
    "scale_grad_by_freq=False, bool sparse=False) -> Tensor",
    "aten::_foreach_copy_(Tensor(a!)[] self, Tensor[] src, bool non_blocking=False) -> ()",
    /* gathers and scatters (kernels/scatter.c) */
    "aten::gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor",
    "aten::gather.out(Tensor self, int dim, Tensor index, *, bool sparse_grad=False, "
    "Tensor(a!) out) -> Tensor(a!)",
    "aten::take(Tensor self, Tensor index) -> Tensor",
    "aten::scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
    "aten::scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor",
    "aten::scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor",
    "aten::scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) "
    "-> Tensor",
    "aten::scatter_.src(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)",
    "aten::scatter_.value(Tensor(a!) self, int dim, Tensor index, Scalar value) -> Tensor(a!)",
    "aten::scatter_.reduce(Tensor(a!) self, int dim, Tensor index, Tensor src, *, str reduce) -> "
    "Tensor(a!)",
    "aten::scatter_.value_reduce(Tensor(a!) self, int dim, Tensor index, Scalar value, *, str "
    "reduce) -> Tensor(a!)",
    "aten::scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
    "aten::scatter_add_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)",
    "aten::scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool "
    "include_self=True) -> Tensor",
    "aten::scatter_reduce_.two(Tensor(a!) self, int dim, Tensor index, Tensor src, str reduce, *, "
    "bool include_self=True) -> Tensor(a!)",
    "aten::index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> "
    "Tensor",
    "aten::index_add_(Tensor(a!) self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> "
    "Tensor(a!)",
    "aten::index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor",
    "aten::index_copy_(Tensor(a!) self, int dim, Tensor index, Tensor source) -> Tensor(a!)",
    "aten::index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor",
    "aten::index_fill.int_Tensor(Tensor self, int dim, Tensor index, Tensor value) -> Tensor",
    "aten::index_fill_.int_Scalar(Tensor(a!) self, int dim, Tensor index, Scalar value) -> "
    "Tensor(a!)",
    "aten::index_fill_.int_Tensor(Tensor(a!) self, int dim, Tensor index, Tensor value) -> "
    "Tensor(a!)",
    "aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
    "aten::index.Tensor_out(Tensor self, Tensor?[] indices, *, Tensor(a!) out) -> Tensor(a!)",
    "aten::index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> "
    "Tensor",
    "aten::index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> "
    "Tensor(a!)",
    "aten::_index_put_impl_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool "
    "accumulate=False, bool unsafe=False) -> Tensor(a!)",
    "aten::masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor",
    "aten::masked_scatter_(Tensor(a!) self, Tensor mask, Tensor source) -> Tensor(a!)",
    "aten::masked_select(Tensor self, Tensor mask) -> Tensor",
    "aten::masked_select.out(Tensor self, Tensor mask, *, Tensor(a!) out) -> Tensor(a!)",
    "aten::nonzero(Tensor self) -> Tensor",
    "aten::nonzero.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    "aten::nonzero_static(Tensor self, *, SymInt size, int fill_value=-1) -> Tensor",
    /* convolution and pooling (TraceLens fixtures) */
    "aten::convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
    "int[] dilation, bool transposed, int[] output_padding, int groups) -> Tensor",
    "aten::convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? "
    "bias_sizes, int[] stride, int[] padding, int[] dilation, bool transposed, int[] "
    "output_padding, int groups, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
    "aten::miopen_convolution(Tensor self, Tensor weight, Tensor? bias, int[] padding, int[] "
    "stride, int[] dilation, int groups, bool benchmark, bool deterministic) -> Tensor",
    /* the rest of the names convolutions are dispatched under (kernels/conv.c) */
    "aten::_convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] "
    "padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, bool "
    "benchmark, bool deterministic, bool cudnn_enabled, bool allow_tf32) -> Tensor",
    "aten::cudnn_convolution(Tensor self, Tensor weight, SymInt[] padding, SymInt[] stride, "
    "SymInt[] dilation, SymInt groups, bool benchmark, bool deterministic, bool allow_tf32) -> "
    "Tensor",
    "aten::cudnn_convolution_transpose(Tensor self, Tensor weight, SymInt[] padding, SymInt[] "
    "output_padding, SymInt[] stride, SymInt[] dilation, SymInt groups, bool benchmark, bool "
    "deterministic, bool allow_tf32) -> Tensor",
    "aten::miopen_convolution_transpose(Tensor self, Tensor weight, Tensor? bias, SymInt[] "
    "padding, SymInt[] output_padding, SymInt[] stride, SymInt[] dilation, SymInt groups, bool "
    "benchmark, bool deterministic) -> Tensor",
    "aten::miopen_depthwise_convolution(Tensor self, Tensor weight, Tensor? bias, SymInt[] "
    "padding, SymInt[] stride, SymInt[] dilation, SymInt groups, bool benchmark, bool "
    "deterministic) -> Tensor",
    "aten::mkldnn_convolution(Tensor self, Tensor weight, Tensor? bias, SymInt[] padding, SymInt[] "
    "stride, SymInt[] dilation, SymInt groups) -> Tensor",
    "aten::conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, SymInt[1] "
    "padding=0, SymInt[1] dilation=1, SymInt groups=1) -> Tensor",
    "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] "
    "padding=0, SymInt[2] dilation=1, SymInt groups=1) -> Tensor",
    "aten::conv3d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=1, SymInt[3] "
    "padding=0, SymInt[3] dilation=1, SymInt groups=1) -> Tensor",
    "aten::conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, "
    "SymInt[1] padding=0, SymInt[1] output_padding=0, SymInt groups=1, SymInt[1] dilation=1) -> "
    "Tensor",
    "aten::conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] "
    "stride=1, SymInt[2] padding=0, SymInt[2] output_padding=0, SymInt groups=1, SymInt[2] "
    "dilation=1) -> Tensor",
    "aten::conv_transpose3d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] "
    "stride=1, SymInt[3] padding=0, SymInt[3] output_padding=0, SymInt groups=1, SymInt[3] "
    "dilation=1) -> Tensor",
    "aten::max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] "
    "padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
    /* the rest of the pool family (kernels/pool.c) */
    "aten::max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, "
    "int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor",
    "aten::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool "
    "ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor",
    "aten::avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] "
    "stride, int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> "
    "Tensor",
    "aten::adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor",
    "aten::_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor",
    "aten::_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor",
    "aten::upsample_nearest1d(Tensor self, SymInt[1] output_size, float? scales=None) -> Tensor",
    "aten::upsample_nearest1d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> "
    "Tensor",
    "aten::upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? "
    "scales_w=None) -> Tensor",
    "aten::upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> "
    "Tensor",
    "aten::upsample_nearest3d(Tensor self, SymInt[3] output_size, float? scales_d=None, float? "
    "scales_h=None, float? scales_w=None) -> Tensor",
    "aten::upsample_nearest3d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> "
    "Tensor",
    "aten::upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, float? "
    "scales_h=None, float? scales_w=None) -> Tensor",
    "aten::upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, "
    "float[]? scale_factors) -> Tensor",
    /* batch and group norm (kernels/channel_norm.c; aten::native_batch_norm is above) */
    "aten::_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) "
    "running_mean, Tensor(b!) running_var, bool training, float momentum, float eps) -> (Tensor, "
    "Tensor, Tensor)",
    "aten::_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, bool "
    "training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
    "aten::_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor "
    "running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
    "aten::cudnn_batch_norm(Tensor input, Tensor weight, Tensor? bias, Tensor? running_mean, "
    "Tensor? running_var, bool training, float exponential_average_factor, float epsilon) -> "
    "(Tensor, Tensor, Tensor, Tensor)",
    "aten::miopen_batch_norm(Tensor input, Tensor weight, Tensor? bias, Tensor? running_mean, "
    "Tensor? running_var, bool training, float exponential_average_factor, float epsilon) -> "
    "(Tensor, Tensor, Tensor)",
    "aten::native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor? "
    "running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, bool train, float "
    "eps, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
    "aten::cudnn_batch_norm_backward(Tensor input, Tensor grad_output, Tensor weight, Tensor? "
    "running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_var, float epsilon, "
    "Tensor reserveSpace) -> (Tensor, Tensor, Tensor)",
    "aten::miopen_batch_norm_backward(Tensor input, Tensor grad_output, Tensor weight, Tensor? "
    "running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_var, float epsilon) -> "
    "(Tensor, Tensor, Tensor)",
    "aten::native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, "
    "SymInt HxW, int group, float eps) -> (Tensor, Tensor, Tensor)",
    "aten::native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd, "
    "Tensor? weight, SymInt N, SymInt C, SymInt HxW, int group, bool[3] output_mask) -> (Tensor, "
    "Tensor, Tensor)",
    /* aiter's group norm: the older form returns y, the newer writes the caller's */
    "aiter::_groupnorm_run(Tensor input, int num_groups, Tensor weight, Tensor bias, float eps) -> "
    "Tensor",
    "aiter::_groupnorm_run.out(Tensor! y, Tensor workspace, Tensor input, int num_groups, Tensor "
    "weight, Tensor bias, float eps) -> ()",
    /* attention */
    "aten::_scaled_dot_product_flash_attention(Tensor query, Tensor key, Tensor value, float "
    "dropout_p=0.0, bool is_causal=False, bool return_debug_mask=False, *, float? scale=None) -> "
    "(Tensor, Tensor, Tensor, Tensor, SymInt, SymInt, Tensor, Tensor, Tensor)",
    "aten::_scaled_dot_product_efficient_attention(Tensor query, Tensor key, Tensor value, "
    "Tensor? attn_bias, bool compute_log_sumexp, float dropout_p=0.0, bool is_causal=False, *, "
    "float? scale=None) -> (Tensor, Tensor, Tensor, Tensor)",
    "aten::scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? "
    "attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool "
    "enable_gqa=False) -> Tensor",
    "aten::_flash_attention_forward(Tensor query, Tensor key, Tensor value, Tensor? cum_seq_q, "
    "Tensor? cum_seq_k, SymInt max_q, SymInt max_k, float dropout_p, bool is_causal, bool "
    "return_debug_mask, *, float? scale=None, SymInt? window_size_left=None, SymInt? "
    "window_size_right=None, Tensor? seqused_k=None, Tensor? alibi_slopes=None) -> (Tensor, "
    "Tensor, Tensor, Tensor, Tensor)",
    /* vLLM csrc/torch_bindings.cpp */
    "_C::silu_and_mul(Tensor! result, Tensor input) -> ()",
    "_C::gelu_and_mul(Tensor! out, Tensor input) -> ()",
    "_C::gelu_tanh_and_mul(Tensor! out, Tensor input) -> ()",
    "_C::rms_norm(Tensor! result, Tensor input, Tensor weight, float epsilon) -> ()",
    "_C::fused_add_rms_norm(Tensor! input, Tensor! residual, Tensor weight, float epsilon) -> ()",
    "_C::rotary_embedding(Tensor positions, Tensor! query, Tensor!? key, int head_size, Tensor "
    "cos_sin_cache, bool is_neox) -> ()",
    "_C::paged_attention_v1(Tensor! out, Tensor query, Tensor key_cache, Tensor value_cache, int "
    "num_kv_heads, float scale, Tensor block_tables, Tensor seq_lens, int block_size, int "
    "max_seq_len, Tensor? alibi_slopes, str kv_cache_dtype, Tensor k_scale, Tensor v_scale, int "
    "tp_rank, int blocksparse_local_blocks, int blocksparse_vert_stride, int "
    "blocksparse_block_size, int blocksparse_head_sliding_step) -> ()",
    "_C::paged_attention_v2(Tensor! out, Tensor! exp_sums, Tensor! max_logits, Tensor! tmp_out, "
    "Tensor query, Tensor key_cache, Tensor value_cache, int num_kv_heads, float scale, Tensor "
    "block_tables, Tensor seq_lens, int block_size, int max_seq_len, Tensor? alibi_slopes, str "
    "kv_cache_dtype, Tensor k_scale, Tensor v_scale, int tp_rank, int blocksparse_local_blocks, "
    "int blocksparse_vert_stride, int blocksparse_block_size, int "
    "blocksparse_head_sliding_step) -> ()",
    /* fp8 activation quantization (group_shape: vLLM >= 0.12; older traces record three
       arguments and take the default) */
    "_C::static_scaled_fp8_quant(Tensor! result, Tensor input, Tensor scale, int[]? "
    "group_shape=None) -> ()",
    "_C::dynamic_scaled_fp8_quant(Tensor! result, Tensor input, Tensor! scale) -> ()",
    "_C::dynamic_per_token_scaled_fp8_quant(Tensor! result, Tensor input, Tensor! scale, Tensor? "
    "scale_ub) -> ()",
    /* vLLM csrc/rocm/torch_bindings.cpp */
    "_rocm_C::paged_attention(Tensor! out, Tensor exp_sums, Tensor max_logits, Tensor tmp_out, "
    "Tensor query, Tensor key_cache, Tensor value_cache, int num_kv_heads, float scale, Tensor "
    "block_tables, Tensor seq_lens, Tensor? query_start_loc, int block_size, int max_seq_len, "
    "Tensor? alibi_slopes, str kv_cache_dtype, Tensor k_scale, Tensor v_scale, Tensor? "
    "fp8_out_scale, str mfma_type) -> ()",
    "_rocm_C::paged_attention(Tensor! out, Tensor exp_sums, Tensor max_logits, Tensor tmp_out, "
    "Tensor query, Tensor key_cache, Tensor value_cache, int num_kv_heads, float scale, Tensor "
    "block_tables, Tensor seq_lens, Tensor? query_start_loc, int block_size, int max_seq_len, "
    "Tensor? alibi_slopes, str kv_cache_dtype, Tensor k_scale, Tensor v_scale, Tensor? "
    "fp8_out_scale) -> ()",
    /* vLLM cache ops */
    "_C_cache_ops::reshape_and_cache(Tensor key, Tensor value, Tensor! key_cache, Tensor! "
    "value_cache, Tensor slot_mapping, str kv_cache_dtype, Tensor k_scale, Tensor v_scale) -> ()",
    "_C_cache_ops::reshape_and_cache_flash(Tensor key, Tensor value, Tensor! key_cache, Tensor! "
    "value_cache, Tensor slot_mapping, str kv_cache_dtype, Tensor k_scale, Tensor v_scale) -> ()",
    /* vLLM csrc/moe/torch_bindings.cpp */
    "_moe_C::moe_align_block_size(Tensor topk_ids, int num_experts, int block_size, Tensor! "
    "sorted_token_ids, Tensor! experts_ids, Tensor! num_tokens_post_pad) -> ()",
    "_moe_C::moe_align_block_size(Tensor topk_ids, int num_experts, int block_size, Tensor! "
    "sorted_token_ids, Tensor! experts_ids, Tensor! num_tokens_post_pad, Tensor? "
    "maybe_expert_map) -> ()",
    "_moe_C::topk_softmax(Tensor! topk_weights, Tensor! topk_indices, Tensor! "
    "token_expert_indices, Tensor gating_output) -> ()",
    "_moe_C::topk_softmax(Tensor! topk_weights, Tensor! topk_indices, Tensor! "
    "token_expert_indices, Tensor gating_output, bool renormalize) -> ()",
    /* vLLM Python custom ops (direct_register_custom_op infers these from the signatures) */
    "vllm::unified_attention_with_output(Tensor query, Tensor key, Tensor value, Tensor(a!) "
    "output, str layer_name, Tensor? output_scale=None, Tensor? output_block_scale=None) -> ()",
    "vllm::unified_attention(Tensor query, Tensor key, Tensor value, str layer_name) -> Tensor",
    "vllm::moe_forward(Tensor hidden_states, Tensor router_logits, str layer_name) -> Tensor",
    "vllm::outplace_fused_experts(Tensor hidden_states, Tensor w1, Tensor w2, Tensor "
    "topk_weights, Tensor topk_ids, str activation='silu', bool apply_router_weight_on_input="
    "False, bool use_fp8_w8a8=False, bool use_int8_w8a8=False, bool use_int8_w8a16=False, bool "
    "use_int4_w4a16=False, bool use_mxfp4_w4a4=False, bool per_channel_quant=False, int "
    "global_num_experts=-1, Tensor? expert_map=None, Tensor? w1_scale=None, Tensor? "
    "w2_scale=None, Tensor? w1_zp=None, Tensor? w2_zp=None, Tensor? a1_scale=None, Tensor? "
    "a2_scale=None, int[]? block_shape=None) -> Tensor",
    "vllm::inplace_fused_experts(Tensor(a!) hidden_states, Tensor w1, Tensor w2, Tensor "
    "topk_weights, Tensor topk_ids, str activation='silu', bool apply_router_weight_on_input="
    "False, bool use_fp8_w8a8=False, bool use_int8_w8a8=False, bool use_int8_w8a16=False, bool "
    "use_int4_w4a16=False, bool use_mxfp4_w4a4=False, bool per_channel_quant=False, int "
    "global_num_experts=-1, Tensor? expert_map=None, Tensor? w1_scale=None, Tensor? "
    "w2_scale=None, Tensor? w1_zp=None, Tensor? w2_zp=None, Tensor? a1_scale=None, Tensor? "
    "a2_scale=None, int[]? block_shape=None) -> ()",
    /* AITER (ROCm) ops as vLLM registers them */
    "aiter::rms_norm(Tensor! out, Tensor input, Tensor weight, float epsilon) -> ()",
    "aiter::fused_add_rms_norm(Tensor! input, Tensor! residual_in, Tensor weight, float epsilon) "
    "-> ()",
    "aiter::rmsnorm2d_fwd(Tensor input, Tensor weight, float epsilon, int "
    "use_model_sensitive_rmsnorm=0) -> Tensor",
    "aiter::rmsnorm2d_fwd_with_add(Tensor! out, Tensor input, Tensor residual_in, Tensor! "
    "residual_out, Tensor weight, float epsilon, int use_model_sensitive_rmsnorm=0) -> ()",
    "aiter::silu_and_mul(Tensor! out, Tensor input) -> ()",
    "aiter::topk_softmax(Tensor! topk_weights, Tensor! topk_indices, Tensor! "
    "token_expert_indices, Tensor gating_output, bool need_renorm) -> ()",
    /* SGLang sgl-kernel/csrc/common_extension.cc */
    "sgl_kernel::rmsnorm(Tensor! output, Tensor input, Tensor weight, float eps, bool "
    "enable_pdl) -> ()",
    "sgl_kernel::fused_add_rmsnorm(Tensor! input, Tensor! residual, Tensor weight, float eps, "
    "bool enable_pdl) -> ()",
    "sgl_kernel::silu_and_mul(Tensor! out, Tensor input) -> ()",
    "sgl_kernel::gelu_and_mul(Tensor! out, Tensor input) -> ()",
    "sgl_kernel::topk_softmax(Tensor! topk_weights, Tensor! topk_indices, Tensor gating_output, "
    "bool renormalize) -> ()",
    /* PyTorch torch/csrc/distributed/c10d/Ops.cpp: the newest first (with asyncOp), then the
     * versions before asyncOp and, for allreduce_, before sparse_indices; each version has its
     * own arity. The ProcessGroup, ReduceOp and Work arguments are script objects the
     * profiler records without a value ("ScriptObject" or ""): they become None. */
    "c10d::allreduce_(Tensor[] tensors, __torch__.torch.classes.c10d.ProcessGroup process_group, "
    "__torch__.torch.classes.c10d.ReduceOp reduce_op, Tensor? sparse_indices, bool asyncOp, int "
    "timeout) -> (Tensor[], __torch__.torch.classes.c10d.Work)",
    "c10d::allreduce_(Tensor[] tensors, __torch__.torch.classes.c10d.ProcessGroup process_group, "
    "__torch__.torch.classes.c10d.ReduceOp reduce_op, Tensor? sparse_indices, int timeout) -> "
    "(Tensor[], __torch__.torch.classes.c10d.Work)",
    "c10d::allreduce_(Tensor[] tensors, __torch__.torch.classes.c10d.ProcessGroup process_group, "
    "__torch__.torch.classes.c10d.ReduceOp reduce_op, int timeout) -> (Tensor[], "
    "__torch__.torch.classes.c10d.Work)",
    "c10d::allgather_(Tensor[][] output_tensors, Tensor[] input_tensors, "
    "__torch__.torch.classes.c10d.ProcessGroup process_group, bool asyncOp, int timeout) -> "
    "(Tensor[][], __torch__.torch.classes.c10d.Work)",
    "c10d::allgather_(Tensor[][] output_tensors, Tensor[] input_tensors, "
    "__torch__.torch.classes.c10d.ProcessGroup process_group, int timeout) -> (Tensor[][], "
    "__torch__.torch.classes.c10d.Work)",
    "c10d::_allgather_base_(Tensor output_tensor, Tensor input_tensor, "
    "__torch__.torch.classes.c10d.ProcessGroup process_group, bool asyncOp, int timeout) -> "
    "(Tensor, __torch__.torch.classes.c10d.Work)",
    "c10d::_allgather_base_(Tensor output_tensor, Tensor input_tensor, "
    "__torch__.torch.classes.c10d.ProcessGroup process_group) -> (Tensor, "
    "__torch__.torch.classes.c10d.Work)",
    "c10d::reduce_scatter_(Tensor[] output_tensors, Tensor[][] input_tensors, "
    "__torch__.torch.classes.c10d.ProcessGroup process_group, "
    "__torch__.torch.classes.c10d.ReduceOp reduce_op, bool asyncOp, int timeout) -> (Tensor[], "
    "__torch__.torch.classes.c10d.Work)",
    "c10d::reduce_scatter_(Tensor[] output_tensors, Tensor[][] input_tensors, "
    "__torch__.torch.classes.c10d.ProcessGroup process_group, "
    "__torch__.torch.classes.c10d.ReduceOp reduce_op, int timeout) -> (Tensor[], "
    "__torch__.torch.classes.c10d.Work)",
    "c10d::_reduce_scatter_base_(Tensor output_tensor, Tensor input_tensor, "
    "__torch__.torch.classes.c10d.ProcessGroup process_group, "
    "__torch__.torch.classes.c10d.ReduceOp reduce_op, bool asyncOp, int timeout) -> (Tensor, "
    "__torch__.torch.classes.c10d.Work)",
    "c10d::_reduce_scatter_base_(Tensor output_tensor, Tensor input_tensor, "
    "__torch__.torch.classes.c10d.ProcessGroup process_group, "
    "__torch__.torch.classes.c10d.ReduceOp reduce_op, int timeout) -> (Tensor, "
    "__torch__.torch.classes.c10d.Work)",
    "c10d::broadcast_(Tensor[] tensors, __torch__.torch.classes.c10d.ProcessGroup process_group, "
    "int root_rank, int root_tensor, bool asyncOp, int timeout) -> (Tensor[], "
    "__torch__.torch.classes.c10d.Work)",
    "c10d::broadcast_(Tensor[] tensors, __torch__.torch.classes.c10d.ProcessGroup process_group, "
    "int root_rank, int root_tensor, int timeout) -> (Tensor[], "
    "__torch__.torch.classes.c10d.Work)",
    "c10d::alltoall_(Tensor[] output_tensors, Tensor[] input_tensors, "
    "__torch__.torch.classes.c10d.ProcessGroup process_group, bool asyncOp, int timeout) -> "
    "(Tensor[], __torch__.torch.classes.c10d.Work)",
    "c10d::alltoall_(Tensor[] output_tensors, Tensor[] input_tensors, "
    "__torch__.torch.classes.c10d.ProcessGroup process_group, int timeout) -> (Tensor[], "
    "__torch__.torch.classes.c10d.Work)",
    "c10d::alltoall_base_(Tensor output, Tensor input, __torch__.torch.classes.c10d.ProcessGroup "
    "process_group, int[] output_split_sizes, int[] input_split_sizes, bool asyncOp, int timeout) "
    "-> __torch__.torch.classes.c10d.Work",
    "c10d::alltoall_base_(Tensor output, Tensor input, __torch__.torch.classes.c10d.ProcessGroup "
    "process_group, int[] output_split_sizes, int[] input_split_sizes, int timeout) -> "
    "__torch__.torch.classes.c10d.Work",
    "c10d::barrier(Tensor tensor, __torch__.torch.classes.c10d.ProcessGroup process_group, int[] "
    "device_ids, bool asyncOp, int timeout) -> __torch__.torch.classes.c10d.Work",
    "c10d::barrier(Tensor tensor, __torch__.torch.classes.c10d.ProcessGroup process_group, int[] "
    "device_ids, int timeout) -> __torch__.torch.classes.c10d.Work",
    /* PyTorch torch/csrc/distributed/c10d/symm_mem/, vLLM csrc/torch_bindings.cpp (the custom
     * all-reduce) and vllm/distributed/parallel_state.py (vllm::all_reduce) */
    "symm_mem::multimem_all_reduce_(Tensor(a!) input, str reduce_op, str group_name) -> "
    "Tensor(a!)",
    "_C_custom_ar::all_reduce(int fa, Tensor inp, Tensor! out, int reg_buffer, int "
    "reg_buffer_sz_bytes) -> ()",
    "vllm::all_reduce(Tensor tensor, str group_name) -> Tensor",
};

const char *const *xr_schema_builtin(size_t *out_count) {
  *out_count = sizeof builtin / sizeof builtin[0];
  return builtin;
}

/* Recorded name -> registry name. Only aliases whose argument lists are the registry op's are
 * listed, so the registry schema names the arguments. */
static const struct {
  const char *alias, *target;
} aliases[] = {
    {"_C::moe_align_block_size", "_moe_C::moe_align_block_size"}, /* before vLLM moved it */
    {"_C::topk_softmax", "_moe_C::topk_softmax"},
    {"_C::reshape_and_cache", "_C_cache_ops::reshape_and_cache"},
    {"_C::reshape_and_cache_flash", "_C_cache_ops::reshape_and_cache_flash"},
    {"aiter::rms_norm", "_C::rms_norm"},
    {"aiter::fused_add_rms_norm", "_C::fused_add_rms_norm"},
    {"aiter::silu_and_mul", "_C::silu_and_mul"},
    {"sgl_kernel::silu_and_mul", "_C::silu_and_mul"},
    {"sgl_kernel::gelu_and_mul", "_C::gelu_and_mul"},
    {"vllm::unified_attention_with_output_kv", "vllm::unified_attention_with_output"},
};

const char *xr_schema_alias_target(const char *name) {
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcmp(aliases[i].alias, name) == 0) return aliases[i].target;
  return NULL;
}

/* String arguments without a schema default: what the workloads we know pass. */
static const struct {
  const char *arg, *value;
} string_fallbacks[] = {
    {"kv_cache_dtype", "auto"},
    {"approximate", "none"},
    {"activation", "silu"},
    {"mfma_type", "fp8"},
    {"layer_name", "model.layers.0.self_attn.attn"},
    {"reduce", "sum"},
    {"padding_mode", "zeros"},
    {"reduce_op", "sum"},
};

const char *xr_schema_string_fallback(const char *arg_name) {
  for (size_t i = 0; i < sizeof string_fallbacks / sizeof string_fallbacks[0]; i++)
    if (strcmp(string_fallbacks[i].arg, arg_name) == 0) return string_fallbacks[i].value;
  return NULL;
}

/* Collectives whose events record no group size (record_param_comms, which records one, is
 * not among them). */
static const char *const collectives[] = {
    "symm_mem::multimem_all_reduce_",
    "_C_custom_ar::all_reduce",
    "vllm::all_reduce",
};

bool xr_schema_is_collective(const char *name) {
  if (strncmp(name, "c10d::", 6) == 0) return true;
  for (size_t i = 0; i < sizeof collectives / sizeof collectives[0]; i++)
    if (strcmp(collectives[i], name) == 0) return true;
  return false;
}

bool xr_schema_arg_is_pure_output(const xr_schema_t *s, size_t index) {
  const xr_schema_arg_t *a = &s->args[index];
  if (!a->is_tensor || !a->is_mutable) return false;
  if (index == 0 && (strcmp(s->op, "aten::copy_") == 0 || strcmp(s->op, "aten::fill_") == 0 ||
                     strcmp(s->op, "aten::zero_") == 0))
    return true;
  static const char *const outputs[] = {
      "out",       "result",          "output",      "exp_sums",           "max_logits",
      "tmp_out",   "sorted_token_ids", "experts_ids", "num_tokens_post_pad", "topk_weights",
      "topk_indices", "token_expert_indices", "residual_out", "scale",
      "values",    "indices",         "out0",        "out1",               "max",
      "max_values", "min",            "min_indices",
  };
  for (size_t i = 0; i < sizeof outputs / sizeof outputs[0]; i++)
    if (strcmp(a->name, outputs[i]) == 0) return true;
  return false;
}

static void copy_trim(char *dst, size_t cap, const char *s, size_t n) {
  while (n && isspace((unsigned char)*s)) s++, n--;
  while (n && isspace((unsigned char)s[n - 1])) n--;
  if (n >= cap) n = cap - 1;
  memcpy(dst, s, n);
  dst[n] = '\0';
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static xr_status_t parse_arg(const char *text, const char *s, size_t n, xr_schema_arg_t *a) {
  char buf[160];
  copy_trim(buf, sizeof buf, s, n);
  char *eq = strchr(buf, '=');
  if (eq) {
    copy_trim(a->default_text, sizeof a->default_text, eq + 1, strlen(eq + 1));
    a->has_default = true;
    *eq = '\0';
  }
  char *sp = strrchr(buf, ' ');
  if (!sp) return xr_error(XR_INTERNAL, "schema \"%s\": argument \"%s\" has no name", text, buf);
  copy_trim(a->name, sizeof a->name, sp + 1, strlen(sp + 1));
  copy_trim(a->type, sizeof a->type, buf, (size_t)(sp - buf));
  const char *t = a->type;
  a->is_optional = ends_with(t, "?");
  a->is_mutable = strchr(t, '!') != NULL;
  bool tensorish = strncmp(t, "Tensor", 6) == 0;
  a->is_list = strchr(t, '[') != NULL;
  a->is_tensor_list = tensorish && a->is_list;
  a->is_tensor = tensorish && !a->is_list;
  a->is_string = strncmp(t, "str", 3) == 0 && !a->is_list;
  a->is_float = strncmp(t, "float", 5) == 0 && !a->is_list;
  a->is_bool = strncmp(t, "bool", 4) == 0 && !a->is_list;
  a->is_int = !a->is_list && (strncmp(t, "int", 3) == 0 || strncmp(t, "SymInt", 6) == 0 ||
                              strncmp(t, "ScalarType", 10) == 0 || strncmp(t, "Layout", 6) == 0 ||
                              strncmp(t, "MemoryFormat", 12) == 0);
  return XR_OK;
}

xr_status_t xr_schema_parse(const char *text, xr_schema_t *out) {
  memset(out, 0, sizeof *out);
  const char *open = strchr(text, '(');
  const char *arrow = strstr(text, ") ->");
  if (!open || !arrow || arrow < open)
    return xr_error(XR_INTERNAL, "schema \"%s\": expected NAME(ARGS) -> RET", text);
  char full[128];
  copy_trim(full, sizeof full, text, (size_t)(open - text));
  const char *colons = strstr(full, "::");
  char *dot = strchr(colons ? colons : full, '.');
  if (dot) {
    copy_trim(out->overload, sizeof out->overload, dot + 1, strlen(dot + 1));
    *dot = '\0';
  }
  copy_trim(out->op, sizeof out->op, full, strlen(full));
  bool kwarg_only = false;
  const char *p = open + 1;
  int nest = 0;
  const char *start = p;
  for (; p <= arrow; p++) {
    char c = p == arrow ? ',' : *p;
    if (c == '(' || c == '[') nest++;
    else if ((c == ')' || c == ']') && p != arrow) nest--;
    if (c != ',' || nest > 0) continue;
    size_t n = (size_t)(p - start);
    char piece[160];
    copy_trim(piece, sizeof piece, start, n);
    start = p + 1;
    if (piece[0] == '\0') continue;
    if (strcmp(piece, "*") == 0) {
      kwarg_only = true;
      continue;
    }
    if (out->arg_count >= XR_SCHEMA_MAX_ARGS)
      return xr_error(XR_INTERNAL, "schema \"%s\": more than %d arguments", text,
                      XR_SCHEMA_MAX_ARGS);
    xr_schema_arg_t *a = &out->args[out->arg_count];
    xr_status_t st = parse_arg(text, piece, strlen(piece), a);
    if (st != XR_OK) return st;
    a->kwarg_only = kwarg_only;
    out->arg_count++;
  }
  return XR_OK;
}
