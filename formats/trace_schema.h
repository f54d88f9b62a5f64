/* Operator schemas for trace extraction: argument names, types, defaults and keyword-only
 * markers of the ops we know, written as PyTorch schema strings (native_functions.yaml, vLLM
 * csrc/torch_bindings.cpp) and parsed on use. Also the alias table (names an op is recorded
 * under -> the name the kernel registry knows) and the fallback values of string arguments,
 * which the profiler never records.
 *
 * Not part of the public API; used by trace extraction (trace_args.c; the alias table also by
 * trace_link.c's op filter, the collectives by trace_build.c) and its tests. */
#ifndef XR_FORMATS_TRACE_SCHEMA_H
#define XR_FORMATS_TRACE_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XR_SCHEMA_MAX_ARGS 40

typedef struct xr_schema_arg {
  char name[48];
  char type[48];         /* as written: "Tensor(a!)", "int[1]?", "str" */
  char default_text[48]; /* "" when none; "None", "1", "'none'", "[]" ... */
  bool has_default;
  bool kwarg_only;       /* after '*' */
  bool is_tensor;        /* Tensor, Tensor?, Tensor(a!) ... (not Tensor[]) */
  bool is_tensor_list;   /* Tensor[] / Tensor?[] */
  bool is_list;          /* int[], SymInt[], bool[3], float[] ... */
  bool is_optional;      /* trailing '?' */
  bool is_string;        /* str / str? */
  bool is_float;         /* float / float? */
  bool is_int;           /* int / SymInt / int? / ScalarType / Layout / MemoryFormat */
  bool is_bool;
  bool is_mutable;       /* '!' in the alias annotation */
} xr_schema_arg_t;

typedef struct xr_schema {
  char op[96];           /* "aten::add" (overload removed) */
  char overload[32];     /* "Tensor", "" */
  size_t arg_count;
  xr_schema_arg_t args[XR_SCHEMA_MAX_ARGS];
} xr_schema_t;

/* Parses "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor". */
xr_status_t xr_schema_parse(const char *text, xr_schema_t *out_schema);

/* The built-in schema strings. */
const char *const *xr_schema_builtin(size_t *out_count);

/* The registry name for an op recorded under an alias, or NULL when `name` is no alias. */
const char *xr_schema_alias_target(const char *name);

/* A fallback for a string argument that has no schema default ("auto" for kv_cache_dtype), or
 * NULL when we know none. */
const char *xr_schema_string_fallback(const char *arg_name);

/* True for the collectives whose events do not record their group size: the c10d:: ops, vLLM's
 * custom all-reduce and vllm::all_reduce, symm_mem::multimem_all_reduce_. */
bool xr_schema_is_collective(const char *name);

/* True when an argument is a pure output (overwritten, never read): the "out" of *.out
 * overloads and the destination of copy_/fill_/zero_ and of vLLM ops writing `Tensor!` results. */
bool xr_schema_arg_is_pure_output(const xr_schema_t *schema, size_t index);

#ifdef __cplusplus
}
#endif
#endif /* XR_FORMATS_TRACE_SCHEMA_H */
