/* xreplay bundles: the portable description of captured operators, and its codecs.
 *
 * A bundle is metadata plus a list of ops. An op is a name as the profiler spells it
 * ("aten::mm", "_C::paged_attention_v1"), positional and keyword arguments
 * ({name, schema type string, value}), an optional occurrence count, optional timing recorded in
 * the source trace and optional initializer hints. A value is a tensor spec, an int (full int64
 * range), a float (NaN and ±Inf included), a bool, a string, null, or a nested list.
 *
 * Files: our JSON (cJSON), our MessagePack (msgpack-c, optionally with tensor contents inside),
 * and TraceLens EventReplay IR (JSON), recognised by content. docs/bundle-format.md has the
 * schemas.
 *
 * Memory: a bundle owns every string, array and tensor of its ops in one arena; pointers into a
 * bundle stay valid until xr_bundle_destroy(), except that xr_bundle_append_op() may move the
 * ops array itself (re-read b->ops after appending).
 *
 * Thread-safety: a bundle may be read from many threads at once; mutation needs exclusive
 * access. Functions keep no global state besides the thread-local last error. */
#ifndef XR_FORMATS_BUNDLE_H
#define XR_FORMATS_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hal/core/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XR_BUNDLE_FORMAT_VERSION 1
#define XR_MAX_RANK 16

/* ------------------------------------------------------------------------------------------ */
/* dtypes                                                                                      */

typedef enum xr_dtype {
  XR_DTYPE_INVALID = 0,
  XR_DTYPE_F32,
  XR_DTYPE_F64,
  XR_DTYPE_F16,
  XR_DTYPE_BF16,
  XR_DTYPE_F8E4M3FN,
  XR_DTYPE_F8E5M2,
  XR_DTYPE_F8E4M3FNUZ,
  XR_DTYPE_F8E5M2FNUZ,
  XR_DTYPE_I8,
  XR_DTYPE_I16,
  XR_DTYPE_I32,
  XR_DTYPE_I64,
  XR_DTYPE_U8,
  XR_DTYPE_U16,
  XR_DTYPE_U32,
  XR_DTYPE_U64,
  XR_DTYPE_BOOL,
  XR_DTYPE_COUNT
} xr_dtype_t;

/* Parses any spelling seen in profiler traces ("c10::BFloat16", "long int", "float") or the
 * short aliases ("bfloat16", "long", "half", "torch.float16"). XR_DTYPE_INVALID if unknown. */
xr_dtype_t xr_dtype_parse(const char *spelling);
/* The profiler's own spelling ("c10::BFloat16"), used when writing files. */
const char *xr_dtype_name(xr_dtype_t dtype);
/* A short name for tables ("bf16"). */
const char *xr_dtype_short_name(xr_dtype_t dtype);
size_t xr_dtype_size(xr_dtype_t dtype);
bool xr_dtype_is_floating(xr_dtype_t dtype);  /* f16/bf16/f32/f64/fp8 */

/* ------------------------------------------------------------------------------------------ */
/* values                                                                                      */

typedef enum xr_init {
  XR_INIT_UNSET = 0, /* no "init" given: the replay engine picks one by dtype */
  XR_INIT_NONE,      /* "init": null — an output the op overwrites; left uninitialised */
  XR_INIT_NORMAL,
  XR_INIT_UNIFORM,
  XR_INIT_ZEROS,
  XR_INIT_ONES,
} xr_init_t;

const char *xr_init_name(xr_init_t init); /* "normal"; NULL for UNSET and NONE */
/* Parses "normal" | "uniform" | "zeros" | "ones"; false if unknown. */
bool xr_init_parse(const char *name, xr_init_t *out_init);

typedef struct xr_tensor_spec {
  int32_t rank;
  int64_t *shape;          /* rank entries */
  int64_t *strides;        /* rank entries, in elements */
  int64_t storage_offset;  /* in elements */
  int64_t storage_size;    /* elements of the underlying storage; -1 when unknown */
  xr_dtype_t dtype;
  xr_init_t init;
  char *data_file;         /* .npy with real contents, relative to the bundle file; or NULL */
  uint8_t *data;           /* embedded contents: the storage, elements [0, extent), or NULL */
  size_t data_size;        /* bytes at data */
} xr_tensor_spec_t;

typedef enum xr_value_kind {
  XR_VALUE_NULL = 0,
  XR_VALUE_BOOL,
  XR_VALUE_INT,
  XR_VALUE_FLOAT,
  XR_VALUE_STRING,
  XR_VALUE_LIST,
  XR_VALUE_TENSOR,
} xr_value_kind_t;

typedef struct xr_value {
  xr_value_kind_t kind;
  union {
    bool b;
    int64_t i;
    double f;
    char *s;
    struct {
      size_t count;
      struct xr_value *items;
    } list;
    xr_tensor_spec_t *tensor;
  } as;
} xr_value_t;

typedef struct xr_arg {
  char *name;      /* schema name ("mat2"); may be NULL for unnamed positional arguments */
  char *type;      /* schema type string ("Tensor", "Tensor(a!)", "SymInt[]", "float?"); or NULL */
  xr_value_t value;
  bool defaulted;  /* value was not in the source and was filled from the schema default */
} xr_arg_t;

/* ------------------------------------------------------------------------------------------ */
/* ops and bundles                                                                             */

typedef struct xr_kernel_record {
  char *name;
  double duration_us;  /* total over `count` launches */
  int64_t count;
} xr_kernel_record_t;

typedef struct xr_op_timing {
  double gpu_time_us;  /* total GPU time of this op's kernels in the source trace; < 0 if absent */
  char *device;        /* device the trace ran on, or NULL */
  size_t kernel_count;
  xr_kernel_record_t *kernels;
} xr_op_timing_t;

typedef struct xr_op {
  char *name;                  /* as the profiler spells it */
  char *alias;                 /* name recorded in the source when it was mapped; or NULL */
  size_t arg_count;
  xr_arg_t *args;              /* positional */
  size_t kwarg_count;
  xr_arg_t *kwargs;
  int64_t count;               /* occurrences in the workload; 0 when absent */
  xr_op_timing_t *timing;      /* or NULL */
  size_t hint_count;
  xr_arg_t *hints;             /* initializer hints: name + value (type unused) */
} xr_op_t;

typedef struct xr_bundle_metadata {
  int64_t format_version;
  char *tool_version;
  char *source_trace;
  char *device_name;
  char *vendor;
  char *runtime_version;
  char *capture_date;
  size_t extra_count;          /* any other metadata, kept as it came */
  xr_arg_t *extra;
} xr_bundle_metadata_t;

typedef enum xr_bundle_format {
  XR_FORMAT_UNKNOWN = 0,
  XR_FORMAT_JSON,       /* our JSON schema */
  XR_FORMAT_MSGPACK,    /* our MessagePack schema */
  XR_FORMAT_TRACELENS,  /* TraceLens EventReplay IR (JSON list) */
} xr_bundle_format_t;

typedef struct xr_arena xr_arena_t;

typedef struct xr_bundle {
  xr_bundle_metadata_t meta;
  size_t op_count;
  xr_op_t *ops;
  size_t op_capacity;
  char *base_dir;              /* directory of the file it was loaded from ("." if none) */
  xr_bundle_format_t source_format;
  xr_arena_t *arena;
} xr_bundle_t;

xr_status_t xr_bundle_create(xr_bundle_t **out_bundle);
void xr_bundle_destroy(xr_bundle_t *bundle);

/* Arena allocation tied to the bundle's lifetime (zeroed). NULL with an error on exhaustion. */
void *xr_bundle_alloc(xr_bundle_t *bundle, size_t size);
char *xr_bundle_strdup(xr_bundle_t *bundle, const char *s);
char *xr_bundle_strndup(xr_bundle_t *bundle, const char *s, size_t n);

/* Appends a zeroed op (count 0, no timing) and returns it; NULL on exhaustion. */
xr_op_t *xr_bundle_append_op(xr_bundle_t *bundle);
/* Allocates an op's argument arrays (zeroed: null values). */
xr_status_t xr_op_alloc_args(xr_bundle_t *bundle, xr_op_t *op, size_t arg_count,
                             size_t kwarg_count);
/* Makes `value` a list of `count` null items, or a tensor of `rank` (contiguous strides must
 * still be set by the caller; storage_size -1, init unset). */
xr_status_t xr_value_make_list(xr_bundle_t *bundle, xr_value_t *value, size_t count);
xr_status_t xr_value_make_tensor(xr_bundle_t *bundle, xr_value_t *value, int32_t rank);
xr_status_t xr_value_make_string(xr_bundle_t *bundle, xr_value_t *value, const char *s);

/* A short human description of a value for tables and logs: "bf16[2880,25136]{1,2880}"
 * (strides shown only when not contiguous, "+N" for a storage offset), "1.0", "'auto'",
 * "None", "[1, 1]". Always NUL-terminates; cut with "..." when buf is too small. */
void xr_value_describe(const xr_value_t *value, char *buf, size_t size);

/* An op's arguments on one line, args then kwargs, for tables, logs and reports:
 * "self=bf16[16,2048] mat2=bf16[2048,2048]{1,2048} beta=1.0", or with tensors_only just the
 * tensors and tensor lists ("bf16[16,2048] bf16[2048,2048]{1,2048}"). Cut with "..." when buf is
 * too small. */
void xr_op_describe_args(const xr_op_t *op, bool tensors_only, char *buf, size_t size);

/* Looks an argument up by name among args then kwargs; NULL if absent. */
const xr_arg_t *xr_op_find_arg(const xr_op_t *op, const char *name);

/* ------------------------------------------------------------------------------------------ */
/* tensor geometry (all overflow-checked: OUT_OF_RANGE with a sentence on overflow)            */

/* Product of the shape. */
xr_status_t xr_tensor_numel(const xr_tensor_spec_t *t, int64_t *out_numel);
/* Elements the storage must hold for this view: offset + 1 + sum((size-1)*stride), or 0 when
 * any dimension is 0. */
xr_status_t xr_tensor_storage_extent(const xr_tensor_spec_t *t, int64_t *out_elements);
/* Bytes of that extent. */
xr_status_t xr_tensor_storage_bytes(const xr_tensor_spec_t *t, size_t *out_bytes);
bool xr_tensor_is_contiguous(const xr_tensor_spec_t *t);
/* Fills strides with the row-major contiguous strides of shape. */
void xr_tensor_set_contiguous(xr_tensor_spec_t *t);

/* ------------------------------------------------------------------------------------------ */
/* files                                                                                       */

typedef struct xr_load_options {
  /* Validate after decoding (default true via xr_bundle_load()). */
  bool validate;
  /* Check that every .npy file named by a tensor exists and agrees with it. */
  bool check_data_files;
} xr_load_options_t;

/* Detects the format of an in-memory file by content. */
xr_bundle_format_t xr_bundle_detect_format(const uint8_t *bytes, size_t size);
const char *xr_bundle_format_name(xr_bundle_format_t format);

/* Loads a file in any supported format, validating it. Errors name the file and the field:
 * "b.json: ops[12].args[3].value.shape[1]: negative dimension -4". */
xr_status_t xr_bundle_load(const char *path, xr_bundle_t **out_bundle);
xr_status_t xr_bundle_load_with(const char *path, const xr_load_options_t *options,
                                xr_bundle_t **out_bundle);
/* Decodes bytes already in memory; `name` is used in messages, base_dir for .npy paths. */
xr_status_t xr_bundle_decode(const uint8_t *bytes, size_t size, const char *name,
                             const char *base_dir, const xr_load_options_t *options,
                             xr_bundle_t **out_bundle);

/* Codecs. Decoders build an unvalidated bundle; encoders write into a malloc'd buffer that the
 * caller frees. */
xr_status_t xr_bundle_decode_json(const char *text, size_t size, const char *name,
                                  xr_bundle_t *bundle);
xr_status_t xr_bundle_decode_msgpack(const uint8_t *bytes, size_t size, const char *name,
                                     xr_bundle_t *bundle);
typedef struct xr_json_options {
  bool pretty;            /* newlines and two-space indentation */
  bool tracelens;         /* write TraceLens EventReplay IR instead of our schema */
} xr_json_options_t;
xr_status_t xr_bundle_encode_json(const xr_bundle_t *bundle, const xr_json_options_t *options,
                                  char **out_text, size_t *out_size);
xr_status_t xr_bundle_encode_msgpack(const xr_bundle_t *bundle, uint8_t **out_bytes,
                                     size_t *out_size);

/* Writes a bundle to `path`, the format given explicitly. */
xr_status_t xr_bundle_save(const xr_bundle_t *bundle, const char *path, xr_bundle_format_t format);
/* Format implied by a path's extension (.json, .msgpack/.mpk); UNKNOWN otherwise. */
xr_bundle_format_t xr_bundle_format_from_path(const char *path);

/* Reads a whole file into memory (malloc'd, NUL-terminated; size excludes the NUL). */
xr_status_t xr_read_file(const char *path, uint8_t **out_bytes, size_t *out_size);

/* ------------------------------------------------------------------------------------------ */
/* validation                                                                                  */

typedef struct xr_diagnostics {
  size_t count;       /* problems found (may exceed the number kept) */
  size_t kept;
  char **messages;    /* kept messages, each "path: problem" */
} xr_diagnostics_t;

void xr_diagnostics_free(xr_diagnostics_t *diags);

/* Checks every op: dtypes, ranks, shapes (non-negative), strides (non-negative, one per dim),
 * element and byte counts without overflow, views inside their storage (storage_size or
 * embedded data), embedded data sizes, and — with check_data_files — the .npy files. Returns OK
 * or INVALID_ARGUMENT; xr_last_error() holds the first problem, `out_diags` (optional) all. */
xr_status_t xr_bundle_validate(const xr_bundle_t *bundle, bool check_data_files,
                               xr_diagnostics_t *out_diags);

/* ------------------------------------------------------------------------------------------ */
/* tensor contents                                                                             */

/* Storage bytes of a tensor with real contents: embedded data, or its .npy file read and
 * checked against the spec. The result is malloc'd (caller frees) and holds exactly
 * xr_tensor_storage_bytes() bytes, little-endian, bf16/fp8 as raw bit patterns. NOT_FOUND if
 * the tensor has no contents. */
xr_status_t xr_tensor_read_data(const xr_bundle_t *bundle, const xr_tensor_spec_t *t,
                                uint8_t **out_bytes, size_t *out_size);

/* A whole .npy file: its header and data bytes (malloc'd; free with xr_npy_free). */
typedef struct xr_npy {
  char descr[16];          /* "<f4", "<u2", "|b1" ... */
  int32_t rank;
  int64_t shape[XR_MAX_RANK];
  int64_t numel;
  size_t item_size;        /* bytes per element, from descr */
  uint8_t *data;           /* numel * item_size bytes, C order */
} xr_npy_t;

xr_status_t xr_npy_load(const char *path, xr_npy_t *out_npy);
void xr_npy_free(xr_npy_t *npy);

/* Moves every tensor's .npy contents into the bundle (embedded), or drops all real contents
 * (strip), keeping shapes, strides and dtypes. Counts the tensors changed. */
xr_status_t xr_bundle_embed_data(xr_bundle_t *bundle, size_t *out_tensors);
void xr_bundle_strip_data(xr_bundle_t *bundle, size_t *out_tensors);

typedef enum xr_data_form {
  XR_DATA_NONE,      /* no tensor carries real contents: shapes only (shareable) */
  XR_DATA_FILES,     /* some tensors name .npy files beside the bundle */
  XR_DATA_EMBEDDED,  /* contents inside the file, no external files */
  XR_DATA_MIXED,     /* both */
} xr_data_form_t;
xr_data_form_t xr_bundle_data_form(const xr_bundle_t *bundle);

/* ------------------------------------------------------------------------------------------ */
/* comparison                                                                                  */

/* Structural equality of two bundles (metadata, ops, args, values bit-exact including NaN
 * payload-insensitive float compare, tensor contents). On difference returns false and, when
 * out_where is given, writes the first differing path there. */
bool xr_bundle_equal(const xr_bundle_t *a, const xr_bundle_t *b, char *out_where,
                     size_t where_size);

#ifdef __cplusplus
}
#endif
#endif /* XR_FORMATS_BUNDLE_H */
