/* Loads oneDNN with dlopen through the symbol table in onednn.h. */
#include "kernels/cpu/onednn.h"

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

static void append(const char *fmt, const char *a, const char *b) {
  size_t used = strlen(dnnl_reason);
  snprintf(dnnl_reason + used, sizeof dnnl_reason - used, "%s", used ? "; " : "");
  used = strlen(dnnl_reason);
  snprintf(dnnl_reason + used, sizeof dnnl_reason - used, fmt, a, b);
}

static void dnnl_load(void) {
  const char *override = getenv("XR_ONEDNN_LIBRARY");
  if (override && !strcmp(override, "off")) {
    dnnl_status = XR_UNAVAILABLE;
    snprintf(dnnl_reason, sizeof dnnl_reason, "oneDNN disabled by XR_ONEDNN_LIBRARY=off");
    return;
  }
  const char *candidates[] = {override && override[0] ? override : NULL, "libdnnl.so.2",
                              "libdnnl.so"};
  void *handle = NULL;
  for (size_t i = 0; !handle && i < sizeof candidates / sizeof candidates[0]; i++) {
    if (!candidates[i]) continue;
    handle = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
    if (!handle) append("%s: %s", candidates[i], dlerror());
  }
  if (!handle) {
    dnnl_status = XR_UNAVAILABLE;
    return;
  }
  bool missing = false;
#define XR_DNNL_REQ(ret, name, params)                        \
  *(void **)&dnnl.name = dlsym(handle, #name);                \
  if (!dnnl.name) {                                           \
    append("%s: missing required symbol %s", "libdnnl", #name); \
    missing = true;                                           \
  }
#define XR_DNNL_OPT(ret, name, params) *(void **)&dnnl.name = dlsym(handle, #name);
  XR_DNNL_SYMBOLS(XR_DNNL_REQ, XR_DNNL_OPT)
#undef XR_DNNL_REQ
#undef XR_DNNL_OPT
  if (missing) {
    dlclose(handle);
    dnnl_status = XR_UNAVAILABLE;
    return;
  }
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

static dnnl_data_type_t matrix_dtype(xr_dtype_t d) {
  switch (d) {
    case XR_DTYPE_F32: return dnnl_f32;
    case XR_DTYPE_BF16: return dnnl_bf16;
    case XR_DTYPE_F16: return dnnl_f16;
    default: return dnnl_data_type_undef;
  }
}

xr_status_t xr_dnnl_matmul_create(const xr_dnnl_t *d, const xr_dnnl_matrix_t *src,
                                  const xr_dnnl_matrix_t *weights, const xr_dnnl_matrix_t *dst,
                                  dnnl_primitive_t *out_primitive, dnnl_memory_desc_t mds[3]) {
  const xr_dnnl_matrix_t *m[3] = {src, weights, dst};
  dnnl_status_t ds = dnnl_success;
  for (int i = 0; i < 3 && ds == dnnl_success; i++) {
    if (matrix_dtype(m[i]->dtype) == dnnl_data_type_undef)
      return xr_error(XR_UNIMPLEMENTED, "%s is not a oneDNN matmul dtype", xr_dtype_name(m[i]->dtype));
    if (m[i]->rows <= 0 || m[i]->cols <= 0 || m[i]->row_stride <= 0 || m[i]->col_stride <= 0)
      return xr_error(XR_UNIMPLEMENTED, "an empty operand or a zero or negative stride");
    dnnl_dims_t dims = {m[i]->rows, m[i]->cols}, strides = {m[i]->row_stride, m[i]->col_stride};
    ds = d->dnnl_memory_desc_init_by_strides(&mds[i], 2, dims, matrix_dtype(m[i]->dtype), strides);
  }
  if (ds == dnnl_success && !out_primitive) return XR_OK;
  dnnl_matmul_desc_t md;
  if (ds == dnnl_success) ds = d->dnnl_matmul_desc_init(&md, &mds[0], &mds[1], NULL, &mds[2]);
  dnnl_primitive_desc_t pd = NULL;
  if (ds == dnnl_success) ds = d->dnnl_primitive_desc_create(&pd, &md, NULL, d->engine, NULL);
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
  ds = d->dnnl_primitive_create(out_primitive, pd);
  d->dnnl_primitive_desc_destroy(pd);
  if (ds != dnnl_success)
    return xr_error(XR_DEVICE_ERROR, "dnnl_primitive_create: %s", xr_dnnl_status_name(d, ds));
  return XR_OK;
}

const char *xr_dnnl_status_name(const xr_dnnl_t *d, dnnl_status_t status) {
  static _Thread_local char text[64];
  snprintf(text, sizeof text, "%s (%d)",
           d->dnnl_status2str ? d->dnnl_status2str(status) : "dnnl_status", (int)status);
  return text;
}
#endif
