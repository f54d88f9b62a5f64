/* Loads oneDNN with dlopen through the symbol table in onednn.h. */
#include "kernels/cpu/onednn.h"

#include "base/vendor_libraries.h"

#ifdef XR_HAVE_DNNL_H
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static xr_dnnl_t dnnl;
static xr_status_t dnnl_status = XR_OK;
static char dnnl_reason[1024];
static pthread_once_t dnnl_once = PTHREAD_ONCE_INIT;

static const xr_dynload_symbol_t dnnl_symbols[] = {
#define DNNL_SYMBOL(need, ret, name, params) XR_DYNLOAD_SYMBOL(xr_dnnl_t, need, name, name)
    XR_DNNL_SYMBOLS(DNNL_SYMBOL)
#undef DNNL_SYMBOL
};

static void dnnl_load(void) {
  const xr_dynload_spec_t *spec = &xr_vendor_libraries[XR_VENDOR_LIBRARY_ONEDNN];
  xr_dynload_library_t library;
  dnnl_status = xr_dynload_open(spec, dnnl_symbols, sizeof dnnl_symbols / sizeof dnnl_symbols[0],
                                &dnnl, &library, dnnl_reason, sizeof dnnl_reason);
  if (dnnl_status != XR_OK) return;
  dnnl_status_t st = dnnl.dnnl_engine_create(&dnnl.engine, dnnl_cpu, 0);
  if (st != dnnl_success) {
    snprintf(dnnl_reason, sizeof dnnl_reason, "dnnl_engine_create(cpu): %s",
             xr_dnnl_status_name(&dnnl, st));
    dnnl_status = XR_UNAVAILABLE;
    return;
  }
  const dnnl_version_t *v = dnnl.dnnl_version ? dnnl.dnnl_version() : NULL;
  if (v) snprintf(dnnl.version, sizeof dnnl.version, "oneDNN %d.%d.%d", v->major, v->minor, v->patch);
  else snprintf(dnnl.version, sizeof dnnl.version, "oneDNN");
  /* The engine lives for the process, like the library. */
}

xr_status_t xr_dnnl_get(const xr_dnnl_t **out_dnnl) {
  pthread_once(&dnnl_once, dnnl_load);
  if (dnnl_status != XR_OK) return xr_error(dnnl_status, "oneDNN unavailable: %s", dnnl_reason);
  *out_dnnl = &dnnl;
  return XR_OK;
}

static dnnl_data_type_t data_type(xr_dtype_t d) {
  switch (d) {
    case XR_DTYPE_F32: return dnnl_f32;
    case XR_DTYPE_BF16: return dnnl_bf16;
    case XR_DTYPE_F16: return dnnl_f16;
    default: return dnnl_data_type_undef;
  }
}

xr_status_t xr_dnnl_matmul_create(const xr_dnnl_t *d, const xr_dnnl_matrix_t *src,
                                  const xr_dnnl_matrix_t *weights, const xr_dnnl_matrix_t *dst,
                                  bool packed_weights, size_t *user_scratchpad,
                                  dnnl_primitive_t *out_primitive, dnnl_memory_desc_t mds[3]) {
  const xr_dnnl_matrix_t *m[3] = {src, weights, dst};
  dnnl_status_t ds = dnnl_success;
  for (int i = 0; i < 3 && ds == dnnl_success; i++) {
    if (data_type(m[i]->dtype) == dnnl_data_type_undef)
      return xr_error(XR_UNIMPLEMENTED, "%s is not a oneDNN matmul dtype", xr_dtype_name(m[i]->dtype));
    if (m[i]->rows <= 0 || m[i]->cols <= 0 || m[i]->row_stride <= 0 || m[i]->col_stride <= 0)
      return xr_error(XR_UNIMPLEMENTED, "an empty operand or a zero or negative stride");
    dnnl_dims_t dims = {m[i]->rows, m[i]->cols}, strides = {m[i]->row_stride, m[i]->col_stride};
    ds = d->dnnl_memory_desc_init_by_strides(&mds[i], 2, dims, data_type(m[i]->dtype), strides);
  }
  if (ds == dnnl_success && !out_primitive) return XR_OK;
  dnnl_memory_desc_t weights_md = mds[1];
  if (ds == dnnl_success && packed_weights) {
    dnnl_dims_t dims = {weights->rows, weights->cols};
    ds = d->dnnl_memory_desc_init_by_tag(&weights_md, 2, dims, data_type(weights->dtype),
                                         dnnl_format_tag_any);
  }
  dnnl_matmul_desc_t md;
  if (ds == dnnl_success) ds = d->dnnl_matmul_desc_init(&md, &mds[0], &weights_md, NULL, &mds[2]);
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_attr_t attr = NULL;
  if (ds == dnnl_success && user_scratchpad) {
    ds = d->dnnl_primitive_attr_create(&attr);
    if (ds == dnnl_success)
      ds = d->dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  }
  if (ds == dnnl_success) ds = d->dnnl_primitive_desc_create(&pd, &md, attr, d->engine, NULL);
  if (attr) d->dnnl_primitive_attr_destroy(attr);
  if (ds != dnnl_success)
    return xr_error(XR_UNIMPLEMENTED, "oneDNN matmul %s x %s -> %s: %s", xr_dtype_name(src->dtype),
                    xr_dtype_name(weights->dtype), xr_dtype_name(dst->dtype),
                    xr_dnnl_status_name(d, ds));
  const char *impl = "";
  d->dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
  if (!impl || !strncmp(impl, "ref", 3)) {
    d->dnnl_primitive_desc_destroy(pd);
    return xr_error(XR_UNIMPLEMENTED, "oneDNN offers only its reference matmul for %s",
                    xr_dtype_name(src->dtype));
  }
  if (packed_weights) mds[1] = *d->dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  if (user_scratchpad) {
    const dnnl_memory_desc_t *scratch = d->dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    *user_scratchpad = scratch ? d->dnnl_memory_desc_get_size(scratch) : 0;
  }
  ds = d->dnnl_primitive_create(out_primitive, pd);
  d->dnnl_primitive_desc_destroy(pd);
  if (ds != dnnl_success)
    return xr_error(XR_DEVICE_ERROR, "dnnl_primitive_create: %s", xr_dnnl_status_name(d, ds));
  return XR_OK;
}

xr_status_t xr_dnnl_scratchpad_md(const xr_dnnl_t *d, size_t size, dnnl_memory_desc_t *md) {
  dnnl_dims_t dims = {(dnnl_dim_t)size};
  dnnl_status_t ds = d->dnnl_memory_desc_init_by_tag(md, 1, dims, dnnl_u8, dnnl_a);
  if (ds != dnnl_success)
    return xr_error(XR_DEVICE_ERROR, "oneDNN scratchpad descriptor: %s", xr_dnnl_status_name(d, ds));
  return XR_OK;
}

xr_status_t xr_dnnl_pack_weights(const xr_dnnl_t *d, const xr_dnnl_matrix_t *weights,
                                 const void *from, const dnnl_memory_desc_t *packed, void *to) {
  dnnl_memory_desc_t strided;
  dnnl_dims_t dims = {weights->rows, weights->cols};
  dnnl_dims_t strides = {weights->row_stride, weights->col_stride};
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_t reorder = NULL;
  dnnl_memory_t src = NULL, dst = NULL;
  dnnl_stream_t stream = NULL;
  dnnl_status_t ds =
      d->dnnl_memory_desc_init_by_strides(&strided, 2, dims, data_type(weights->dtype), strides);
  if (ds == dnnl_success)
    ds = d->dnnl_reorder_primitive_desc_create(&pd, &strided, d->engine, packed, d->engine, NULL);
  if (ds == dnnl_success) ds = d->dnnl_primitive_create(&reorder, pd);
  if (ds == dnnl_success) ds = d->dnnl_memory_create(&src, &strided, d->engine, (void *)from);
  if (ds == dnnl_success) ds = d->dnnl_memory_create(&dst, packed, d->engine, to);
  if (ds == dnnl_success) ds = d->dnnl_stream_create(&stream, d->engine, dnnl_stream_default_flags);
  if (ds == dnnl_success) {
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
    ds = d->dnnl_primitive_execute(reorder, stream, 2, args);
  }
  if (ds == dnnl_success) ds = d->dnnl_stream_wait(stream);
  if (stream) d->dnnl_stream_destroy(stream);
  if (dst) d->dnnl_memory_destroy(dst);
  if (src) d->dnnl_memory_destroy(src);
  if (reorder) d->dnnl_primitive_destroy(reorder);
  if (pd) d->dnnl_primitive_desc_destroy(pd);
  if (ds != dnnl_success)
    return xr_error(XR_DEVICE_ERROR, "oneDNN weight reorder: %s", xr_dnnl_status_name(d, ds));
  return XR_OK;
}

xr_status_t xr_dnnl_strided_md(const xr_dnnl_t *d, int nd, const dnnl_dims_t dims,
                               dnnl_dims_t strides, xr_dtype_t dtype, dnnl_memory_desc_t *out) {
  xr_unit_dim_strides(nd, dims, strides);
  for (int i = 0; i < nd; i++)
    if (strides[i] <= 0)
      return xr_error(XR_UNIMPLEMENTED, "an operand has a zero or negative stride");
  if (data_type(dtype) == dnnl_data_type_undef)
    return xr_error(XR_UNIMPLEMENTED, "%s is not a oneDNN dtype", xr_dtype_name(dtype));
  dnnl_status_t st = d->dnnl_memory_desc_init_by_strides(out, nd, dims, data_type(dtype), strides);
  if (st != dnnl_success)
    return xr_error(XR_UNIMPLEMENTED, "dnnl_memory_desc_init_by_strides: %s",
                    xr_dnnl_status_name(d, st));
  return XR_OK;
}

xr_status_t xr_dnnl_view_md(const xr_dnnl_t *d, const xr_view5_t *v, int spatial, xr_dtype_t dtype,
                            dnnl_memory_desc_t *out) {
  dnnl_dims_t dims = {v->shape[0], v->shape[1]}, strides = {v->strides[0], v->strides[1]};
  for (int k = 0; k < spatial; k++) {
    dims[2 + k] = v->shape[5 - spatial + k];
    strides[2 + k] = v->strides[5 - spatial + k];
  }
  return xr_dnnl_strided_md(d, spatial + 2, dims, strides, dtype, out);
}

xr_status_t xr_dnnl_pd_create(const xr_dnnl_t *d, const_dnnl_op_desc_t desc,
                              const_dnnl_op_desc_t forward, const char *what,
                              dnnl_primitive_desc_t *out_pd) {
  dnnl_primitive_attr_t attr = NULL;
  dnnl_primitive_desc_t pd = NULL, hint = NULL;
  dnnl_status_t ds = dnnl_success;
  if (forward) ds = d->dnnl_primitive_desc_create(&hint, forward, NULL, d->engine, NULL);
  if (ds == dnnl_success) ds = d->dnnl_primitive_attr_create(&attr);
  if (ds == dnnl_success)
    ds = d->dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  if (ds == dnnl_success) ds = d->dnnl_primitive_desc_create(&pd, desc, attr, d->engine, hint);
  if (attr) d->dnnl_primitive_attr_destroy(attr);
  if (hint) d->dnnl_primitive_desc_destroy(hint);
  if (ds != dnnl_success)
    return xr_error(XR_UNIMPLEMENTED, "oneDNN %s: %s", what, xr_dnnl_status_name(d, ds));
  const char *impl = "";
  d->dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
  if (!impl || !strncmp(impl, "ref", 3)) {
    d->dnnl_primitive_desc_destroy(pd);
    return xr_error(XR_UNIMPLEMENTED, "oneDNN offers only its reference %s in this layout", what);
  }
  *out_pd = pd;
  return XR_OK;
}

xr_status_t xr_dnnl_call_arg(const xr_dnnl_t *d, xr_dnnl_call_t *call, int role,
                             const dnnl_memory_desc_t *md, void *at) {
  if (call->arg_count == XR_DNNL_MAX_ARGS)
    return xr_error(XR_INTERNAL, "a oneDNN primitive with more than %d arguments",
                    XR_DNNL_MAX_ARGS);
  dnnl_memory_t *m = &call->memory[call->arg_count];
  dnnl_status_t ds = d->dnnl_memory_create(m, md, d->engine, at);
  if (ds != dnnl_success)
    return xr_error(XR_DEVICE_ERROR, "dnnl_memory_create: %s", xr_dnnl_status_name(d, ds));
  call->args[call->arg_count++] = (dnnl_exec_arg_t){role, *m};
  return XR_OK;
}

xr_status_t xr_dnnl_call_create(const xr_dnnl_t *d, dnnl_primitive_desc_t pd,
                                xr_dnnl_call_t *call) {
  const dnnl_memory_desc_t *scratch_md =
      d->dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  size_t scratch = scratch_md ? d->dnnl_memory_desc_get_size(scratch_md) : 0;
  dnnl_status_t ds = d->dnnl_primitive_create(&call->primitive, pd);
  d->dnnl_primitive_desc_destroy(pd);
  if (ds != dnnl_success)
    return xr_error(XR_DEVICE_ERROR, "dnnl_primitive_create: %s", xr_dnnl_status_name(d, ds));
  if (scratch == 0) return XR_OK;
  dnnl_memory_desc_t md;
  xr_status_t st = xr_dnnl_scratchpad_md(d, scratch, &md);
  if (st != XR_OK) return st;
  call->scratchpad = aligned_alloc(64, (scratch + 63) / 64 * 64);
  if (!call->scratchpad) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  return xr_dnnl_call_arg(d, call, DNNL_ARG_SCRATCHPAD, &md, call->scratchpad);
}

bool xr_dnnl_call_run(const xr_dnnl_t *d, dnnl_stream_t stream, const xr_dnnl_call_t *call) {
  if (!call->primitive) return true;
  return d->dnnl_primitive_execute(call->primitive, stream, call->arg_count, call->args) ==
             dnnl_success &&
         d->dnnl_stream_wait(stream) == dnnl_success;
}

void xr_dnnl_call_release(const xr_dnnl_t *d, xr_dnnl_call_t *call) {
  for (int k = 0; k < call->arg_count; k++)
    if (call->memory[k]) d->dnnl_memory_destroy(call->memory[k]);
  if (call->primitive) d->dnnl_primitive_destroy(call->primitive);
  free(call->scratchpad);
  memset(call, 0, sizeof *call);
}

/* libdnnl.so.2 on Debian runs on OpenMP (libgomp), loaded with it and therefore not in the
 * global scope: found by name among the loaded libraries, never loaded here. */
typedef struct omp_symbols {
  int (*get_max_threads)(void);
  void (*set_num_threads)(int);
} omp_symbols_t;
static omp_symbols_t omp;
static pthread_once_t omp_once = PTHREAD_ONCE_INIT;

static void omp_load(void) {
  void *handle = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!handle) return;
  *(void **)&omp.get_max_threads = dlsym(handle, "omp_get_max_threads");
  *(void **)&omp.set_num_threads = dlsym(handle, "omp_set_num_threads");
  if (!omp.get_max_threads || !omp.set_num_threads) memset(&omp, 0, sizeof omp);
}

int xr_dnnl_set_thread_count(const xr_dnnl_t *d, int count) {
  (void)d; /* loaded, so its OpenMP runtime is too */
  pthread_once(&omp_once, omp_load);
  if (!omp.set_num_threads) return 0;
  int previous = omp.get_max_threads();
  omp.set_num_threads(count);
  return previous;
}

const char *xr_dnnl_status_name(const xr_dnnl_t *d, dnnl_status_t status) {
  static _Thread_local char text[64];
  snprintf(text, sizeof text, "%s (%d)",
           d->dnnl_status2str ? d->dnnl_status2str(status) : "dnnl_status", (int)status);
  return text;
}

void xr_dnnl_impl_name(const xr_dnnl_t *d, const_dnnl_primitive_desc_t pd, char *buf,
                       size_t size) {
  const char *impl = NULL;
  if (d->dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success)
    impl = NULL;
  snprintf(buf, size, "%s %s", d->version[0] ? d->version : "oneDNN", impl ? impl : "?");
}
#endif
