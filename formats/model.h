/* The op model: what kernels and the replay engine speak. No I/O and no codec: a bundle here is
 * metadata plus a list of ops in memory; formats/bundle.h reads and writes them.
 *
 * An op is a name as the profiler spells it ("aten::mm", "_C::paged_attention_v1"), positional
 * and keyword arguments ({name, schema type string, value}), an optional occurrence count,
 * optional timing recorded in the source trace and optional initializer hints. A value is a
 * tensor spec, an int (full int64 range), a float (NaN and ±Inf included), a bool, a string,
 * null, or a nested list.
 *
 * Memory: everything an op points to lives in an arena (xr_arena_t), freed all at once. A
 * bundle owns one arena for all its ops; pointers into a bundle stay valid until
 * xr_bundle_destroy(), except that appending an op may move the ops array itself (re-read
 * b->ops after appending).
 *
 * Building ops in C (the replay engine then runs them; examples/embed/mm.c shows it whole):
 *   xr_bundle_t *b;  xr_bundle_create(&b);
 *   xr_op_t *mm = xr_bundle_add_op(b, "aten::mm");
 *   xr_op_add_tensor(b->arena, mm, "self", XR_DTYPE_BF16, 2, (int64_t[]){512, 1024}, NULL);
 *   xr_op_add_tensor(b->arena, mm, "mat2", XR_DTYPE_BF16, 2, (int64_t[]){1024, 256}, NULL);
 *
 * Thread-safety: a bundle may be read from many threads at once; mutation needs exclusive
 * access. Functions keep no global state besides the thread-local last error. */
#ifndef XR_FORMATS_MODEL_H
#define XR_FORMATS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/dtype.h"
#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XR_BUNDLE_FORMAT_VERSION 1
#define XR_MAX_RANK 16

/* ------------------------------------------------------------------------------------------ */
/* arena: bump allocation, freed all at once                                                   */

typedef struct xr_arena xr_arena_t;

xr_status_t xr_arena_create(xr_arena_t **out_arena);
void xr_arena_destroy(xr_arena_t *arena); /* accepts NULL */
/* Zeroed memory that lives as long as the arena. NULL with an error on exhaustion. */
void *xr_arena_alloc(xr_arena_t *arena, size_t size);
char *xr_arena_strdup(xr_arena_t *arena, const char *s); /* NULL stays NULL */
char *xr_arena_strndup(xr_arena_t *arena, const char *s, size_t n);

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
  int64_t *shape;         /* rank entries */
  int64_t *strides;       /* rank entries, in elements */
  int64_t storage_offset; /* in elements */
  int64_t storage_size;   /* elements of the underlying storage; -1 when unknown */
  xr_dtype_t dtype;
  xr_init_t init;
  char *data_file;  /* .npy with real contents, relative to the bundle's base_dir; or NULL */
  uint8_t *data;    /* embedded contents: the storage, elements [0, extent), or NULL */
  size_t data_size; /* bytes at data */
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
  char *name; /* schema name ("mat2"); may be NULL for unnamed positional arguments */
  char *type; /* schema type string ("Tensor", "Tensor(a!)", "SymInt[]", "float?"); or NULL */
  xr_value_t value;
  bool defaulted; /* value was not in the source and was filled from the schema default */
} xr_arg_t;

/* Makes `value` a list of `count` null items, a tensor of `rank` (contiguous strides must still
 * be set by the caller, e.g. with xr_tensor_set_contiguous; storage_size -1, init unset), or a
 * copy of string `s`, all allocated in `arena`. */
xr_status_t xr_value_make_list(xr_arena_t *arena, xr_value_t *value, size_t count);
xr_status_t xr_value_make_tensor(xr_arena_t *arena, xr_value_t *value, int32_t rank);
xr_status_t xr_value_make_string(xr_arena_t *arena, xr_value_t *value, const char *s);

/* A short human description of a value for tables and logs: "bf16[2880,25136]{1,2880}"
 * (strides shown only when not contiguous, "+N" for a storage offset), "1.0", "'auto'",
 * "None", "[1, 1]". Always NUL-terminates; cut with "..." when buf is too small. */
void xr_value_describe(const xr_value_t *value, char *buf, size_t size);

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
/* ops                                                                                         */

typedef struct xr_kernel_record {
  char *name;
  double duration_us; /* total over `count` launches */
  int64_t count;
} xr_kernel_record_t;

typedef struct xr_op_timing {
  double gpu_time_us; /* total GPU time of this op's kernels in the source trace; < 0 if absent */
  char *device;       /* device the trace ran on, or NULL */
  /* Measured inside CUDA/HIP graph replays: the capture trace whose eager run gave the op's
   * arguments, and the batch size it was captured for (0 unknown). NULL when measured eagerly. */
  char *graph_capture;
  int64_t graph_batch_size;
  size_t kernel_count;
  xr_kernel_record_t *kernels;
} xr_op_timing_t;

typedef struct xr_op {
  char *name;  /* as the profiler spells it */
  char *alias; /* name recorded in the source when it was mapped; or NULL */
  size_t arg_count;
  xr_arg_t *args; /* positional */
  size_t kwarg_count;
  xr_arg_t *kwargs;
  int64_t count;          /* occurrences in the workload; 0 when absent */
  xr_op_timing_t *timing; /* or NULL */
  size_t hint_count;
  xr_arg_t *hints; /* initializer hints: name + value (type unused) */
} xr_op_t;

/* Allocates an op's argument arrays in `arena` (zeroed: null values), replacing any. */
xr_status_t xr_op_alloc_args(xr_arena_t *arena, xr_op_t *op, size_t arg_count, size_t kwarg_count);

/* Builders: each appends one named positional argument (schema type NULL). A tensor is
 * contiguous with `strides` NULL, otherwise takes them (in elements); the returned spec stays
 * valid for the arena's life (set init, storage_offset, data there). NULL or an error status,
 * with a sentence, when memory runs out or rank is outside [0, XR_MAX_RANK]. */
xr_tensor_spec_t *xr_op_add_tensor(xr_arena_t *arena, xr_op_t *op, const char *name,
                                   xr_dtype_t dtype, int32_t rank, const int64_t *shape,
                                   const int64_t *strides);
xr_status_t xr_op_add_int(xr_arena_t *arena, xr_op_t *op, const char *name, int64_t value);
xr_status_t xr_op_add_float(xr_arena_t *arena, xr_op_t *op, const char *name, double value);
xr_status_t xr_op_add_bool(xr_arena_t *arena, xr_op_t *op, const char *name, bool value);
xr_status_t xr_op_add_string(xr_arena_t *arena, xr_op_t *op, const char *name, const char *value);
xr_status_t xr_op_add_int_list(xr_arena_t *arena, xr_op_t *op, const char *name,
                               const int64_t *values, size_t count);

/* Appends a keyword argument with a null value (fill in arg->value, allocating in `arena`) and
 * the schema type `type` (may be NULL); NULL when memory runs out. Pointers to the op's earlier
 * kwargs do not survive the call. */
xr_arg_t *xr_op_add_kwarg(xr_arena_t *arena, xr_op_t *op, const char *name, const char *type);

/* Looks an argument up by name among args then kwargs; NULL if absent. */
const xr_arg_t *xr_op_find_arg(const xr_op_t *op, const char *name);

/* An op's arguments on one line, args then kwargs, for tables, logs and reports:
 * "self=bf16[16,2048] mat2=bf16[2048,2048]{1,2048} beta=1.0", or with tensors_only just the
 * tensors and tensor lists ("bf16[16,2048] bf16[2048,2048]{1,2048}"). Cut with "..." when buf is
 * too small. */
void xr_op_describe_args(const xr_op_t *op, bool tensors_only, char *buf, size_t size);

/* ------------------------------------------------------------------------------------------ */
/* bundles                                                                                     */

typedef struct xr_bundle_metadata {
  int64_t format_version;
  char *tool_version;
  char *source_trace;
  char *device_name;
  char *vendor;
  char *runtime_version;
  char *capture_date;
  size_t extra_count; /* any other metadata, kept as it came */
  xr_arg_t *extra;
} xr_bundle_metadata_t;

/* The file format a bundle was read from (formats/bundle.h reads and writes them). */
typedef enum xr_bundle_format {
  XR_FORMAT_UNKNOWN = 0,
  XR_FORMAT_JSON,      /* our JSON schema */
  XR_FORMAT_MSGPACK,   /* our MessagePack schema */
  XR_FORMAT_TRACELENS, /* TraceLens EventReplay IR (JSON list) */
} xr_bundle_format_t;

typedef struct xr_bundle xr_bundle_t;

/* Reads the storage bytes of a tensor whose contents live in a file (t->data_file); the codecs
 * install one that reads .npy files when they load a bundle. Same contract as
 * xr_tensor_read_data. */
typedef xr_status_t (*xr_data_file_reader_fn)(const xr_bundle_t *bundle, const xr_tensor_spec_t *t,
                                              uint8_t **out_bytes, size_t *out_size);

struct xr_bundle {
  xr_bundle_metadata_t meta;
  size_t op_count;
  xr_op_t *ops;
  size_t op_capacity;
  char *base_dir; /* directory data files are relative to ("." if none) */
  xr_bundle_format_t source_format;
  xr_data_file_reader_fn read_data_file; /* NULL: tensors with a data_file cannot be read */
  xr_arena_t *arena;
};

xr_status_t xr_bundle_create(xr_bundle_t **out_bundle);
void xr_bundle_destroy(xr_bundle_t *bundle); /* accepts NULL */

/* Appends a zeroed op (count 0, no timing) and returns it; NULL on exhaustion. */
xr_op_t *xr_bundle_append_op(xr_bundle_t *bundle);
/* The same with its name set (copied into the bundle's arena). */
xr_op_t *xr_bundle_add_op(xr_bundle_t *bundle, const char *name);

/* Calls fn on every tensor spec of every op argument (lists included), in binding order. */
typedef void (*xr_tensor_visit_fn)(xr_tensor_spec_t *t, void *context);
void xr_bundle_visit_tensors(xr_bundle_t *bundle, xr_tensor_visit_fn fn, void *context);

/* Storage bytes of a tensor with real contents: its embedded data, or its data file read by
 * the bundle's reader and checked against the spec. The result is malloc'd (caller frees) and
 * holds exactly xr_tensor_storage_bytes() bytes, little-endian, bf16/fp8 as raw bit patterns.
 * NOT_FOUND if the tensor has no contents or no reader is installed for its file. */
xr_status_t xr_tensor_read_data(const xr_bundle_t *bundle, const xr_tensor_spec_t *t,
                                uint8_t **out_bytes, size_t *out_size);

typedef enum xr_data_form {
  XR_DATA_NONE,     /* no tensor carries real contents: shapes only (shareable) */
  XR_DATA_FILES,    /* some tensors name .npy files beside the bundle */
  XR_DATA_EMBEDDED, /* contents inside the file, no external files */
  XR_DATA_MIXED,    /* both */
} xr_data_form_t;
xr_data_form_t xr_bundle_data_form(const xr_bundle_t *bundle);

/* Drops all real contents (embedded or named files), keeping shapes, strides and dtypes: the
 * form a bundle can be shared in. Counts the tensors changed. */
void xr_bundle_strip_data(xr_bundle_t *bundle, size_t *out_tensors);

/* The identity of a bundle's ops: a 64-bit FNV-1a over their names, aliases, counts, arguments
 * (names, schema types, values bit-exact, every NaN alike; tensors' geometry, dtype, init, data
 * file name and embedded contents), hints and recorded timing, in bundle order, each field
 * encoded little-endian with its length. The same on every machine, and for the same ops read
 * from any format (xr_bundle_equal bundles hash alike, metadata aside); the metadata is left
 * out. What a sharded replay's reports carry so that `replay merge` can tell bundles apart. */
uint64_t xr_bundle_hash(const xr_bundle_t *bundle);

#ifdef __cplusplus
}
#endif
#endif /* XR_FORMATS_MODEL_H */
