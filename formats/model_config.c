/* Model configs (formats/model_config.h): reading config.json and writing layer state into ops. */
#include "formats/model_config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"

/* ------------------------------------------------------------------------------------------ */
/* reading                                                                                     */

/* Every size a config gives is below this: no model has a dimension near it, and products of
 * a few such sizes stay far inside int64. */
#define SIZE_LIMIT 2147483647.0

typedef struct reader {
  const cJSON *text_config, *root;
  const char *name;
} reader_t;

/* The first of the NULL-terminated aliases present, in text_config then at the top level. */
static const cJSON *field(const reader_t *r, const char *const *aliases, const char **out_key) {
  const cJSON *scopes[2] = {r->text_config, r->root};
  for (int s = 0; s < 2; s++)
    for (const char *const *a = aliases; scopes[s] && *a; a++) {
      const cJSON *v = cJSON_GetObjectItemCaseSensitive(scopes[s], *a);
      if (v && !cJSON_IsNull(v)) {
        *out_key = *a;
        return v;
      }
    }
  return NULL;
}

static xr_status_t read_int(const reader_t *r, const char *const *aliases, int64_t *out) {
  const char *key;
  const cJSON *v = field(r, aliases, &key);
  *out = -1;
  if (!v) return XR_OK;
  if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 1 ||
      v->valuedouble > SIZE_LIMIT)
    return xr_error(XR_INVALID_ARGUMENT, "%s: %s: expected a positive integer below 2^31", r->name, key);
  *out = (int64_t)v->valuedouble;
  return XR_OK;
}

static xr_status_t read_string(const reader_t *r, const char *const *aliases, char *out, size_t size) {
  const char *key;
  const cJSON *v = field(r, aliases, &key);
  out[0] = '\0';
  if (!v) return XR_OK;
  if (!cJSON_IsString(v) || strlen(v->valuestring) >= size)
    return xr_error(XR_INVALID_ARGUMENT, "%s: %s: expected a string of at most %zu characters", r->name,
                    key, size - 1);
  memcpy(out, v->valuestring, strlen(v->valuestring) + 1);
  return XR_OK;
}

static bool is_size(const cJSON *v) {
  return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) && v->valuedouble >= 1 &&
         v->valuedouble <= SIZE_LIMIT;
}

#define ALIASES(...) ((const char *const[]){__VA_ARGS__, NULL})

xr_status_t xr_model_config_parse(const char *text, size_t size, const char *name,
                                  xr_model_config_t *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%s", name ? name : "model config");
  cJSON *root = cJSON_ParseWithLength(text, size);
  if (!root) {
    const char *at = cJSON_GetErrorPtr();
    size_t offset = at && at >= text && at <= text + size ? (size_t)(at - text) : 0;
    return xr_error(XR_INVALID_ARGUMENT, "%s: not valid JSON (at byte %zu)", out->name, offset);
  }
  xr_status_t st = XR_OK;
  if (!cJSON_IsObject(root)) {
    st = xr_error(XR_INVALID_ARGUMENT, "%s: expected a JSON object (a config.json)", out->name);
    goto done;
  }
  const cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "text_config");
  if (tc && !cJSON_IsObject(tc) && !cJSON_IsNull(tc)) {
    st = xr_error(XR_INVALID_ARGUMENT, "%s: text_config: expected an object", out->name);
    goto done;
  }
  reader_t r = {cJSON_IsObject(tc) ? tc : NULL, root, out->name};
  if ((st = read_int(&r, ALIASES("hidden_size", "d_model", "n_embd"), &out->hidden_size)) ||
      (st = read_int(&r, ALIASES("moe_intermediate_size", "intermediate_size"), &out->intermediate_size)) ||
      (st = read_int(&r, ALIASES("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"),
                     &out->experts)) ||
      (st = read_int(&r, ALIASES("num_experts_per_tok", "moe_topk", "top_k"), &out->top_k)) ||
      (st = read_int(&r, ALIASES("num_attention_heads"), &out->heads)) ||
      (st = read_int(&r, ALIASES("num_key_value_heads"), &out->kv_heads)) ||
      (st = read_int(&r, ALIASES("head_dim"), &out->head_dim)) ||
      (st = read_string(&r, ALIASES("hidden_act", "activation_function"), out->hidden_act,
                        sizeof out->hidden_act)) ||
      (st = read_string(&r, ALIASES("model_type"), out->model_type, sizeof out->model_type)))
    goto done;
  const char *key;
  const cJSON *v = field(&r, ALIASES("norm_topk_prob"), &key);
  out->norm_topk_prob = -1;
  if (v && !cJSON_IsBool(v)) {
    st = xr_error(XR_INVALID_ARGUMENT, "%s: norm_topk_prob: expected true or false", out->name);
    goto done;
  }
  if (v) out->norm_topk_prob = cJSON_IsTrue(v);
  v = field(&r, ALIASES("swiglu_limit"), &key);
  out->swiglu_limit = -1;
  if (v && (!cJSON_IsNumber(v) || !(v->valuedouble > 0))) {
    st = xr_error(XR_INVALID_ARGUMENT, "%s: swiglu_limit: expected a positive number", out->name);
    goto done;
  }
  if (v) out->swiglu_limit = v->valuedouble;
  if (out->head_dim < 0 && out->hidden_size > 0 && out->heads > 0) out->head_dim = out->hidden_size / out->heads;

  const cJSON *q = field(&r, ALIASES("quantization_config"), &key);
  out->quant = XR_MODEL_QUANT_NONE;
  if (q) {
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(q, "quant_method");
    if (!cJSON_IsObject(q) || !cJSON_IsString(method) || strlen(method->valuestring) >= sizeof out->quant_method) {
      st = xr_error(XR_INVALID_ARGUMENT, "%s: quantization_config.quant_method: expected a string", out->name);
      goto done;
    }
    snprintf(out->quant_method, sizeof out->quant_method, "%s", method->valuestring);
    out->quant = !strcmp(method->valuestring, "mxfp4") ? XR_MODEL_QUANT_MXFP4
                 : !strcmp(method->valuestring, "fp8") ? XR_MODEL_QUANT_FP8
                                                       : XR_MODEL_QUANT_OTHER;
    const cJSON *block = cJSON_GetObjectItemCaseSensitive(q, "weight_block_size");
    if (block && !cJSON_IsNull(block)) {
      if (!cJSON_IsArray(block) || cJSON_GetArraySize(block) != 2 ||
          !is_size(cJSON_GetArrayItem(block, 0)) || !is_size(cJSON_GetArrayItem(block, 1))) {
        st = xr_error(XR_INVALID_ARGUMENT, "%s: quantization_config.weight_block_size: expected two positive "
                      "integers", out->name);
        goto done;
      }
      out->weight_block[0] = (int64_t)cJSON_GetArrayItem(block, 0)->valuedouble;
      out->weight_block[1] = (int64_t)cJSON_GetArrayItem(block, 1)->valuedouble;
    }
  }
done:
  cJSON_Delete(root);
  return st;
}

xr_status_t xr_model_config_load(const char *path, xr_model_config_t *out) {
  uint8_t *bytes;
  size_t size;
  xr_status_t st = xr_read_file(path, &bytes, &size);
  if (st != XR_OK) return st;
  const char *slash = strrchr(path, '/');
  st = xr_model_config_parse((const char *)bytes, size, slash ? slash + 1 : path, out);
  free(bytes);
  return st;
}

/* ------------------------------------------------------------------------------------------ */
/* applying                                                                                    */

/* A sentence built a clause at a time. */
typedef struct text {
  char s[1024];
  size_t n;
} text_t;

__attribute__((format(printf, 2, 3))) static void say(text_t *t, const char *fmt, ...) {
  if (t->n >= sizeof t->s) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(t->s + t->n, sizeof t->s - t->n, fmt, ap);
  va_end(ap);
  t->n = k < 0 ? t->n : t->n + (size_t)k < sizeof t->s ? t->n + (size_t)k : sizeof t->s - 1;
}

/* The op's tensor argument `name` (kwargs included), else positional `position`; NULL if absent. */
static const xr_tensor_spec_t *tensor_arg(const xr_op_t *op, const char *name, size_t position) {
  const xr_arg_t *a = xr_op_find_arg(op, name);
  if (!a && position < op->arg_count) a = &op->args[position];
  return a && a->value.kind == XR_VALUE_TENSOR ? a->value.as.tensor : NULL;
}

typedef struct layer {
  xr_arena_t *arena;
  xr_op_t *op;
  text_t added, kept;
} layer_t;

/* Adds a kwarg unless the op has it; records which. */
static bool wanted(layer_t *l, const char *name) {
  if (xr_op_find_arg(l->op, name)) {
    say(&l->kept, "%s%s", l->kept.n ? ", " : "", name);
    return false;
  }
  say(&l->added, "%s%s", l->added.n ? ", " : "", name);
  return true;
}

static xr_status_t add_tensor(layer_t *l, const char *name, xr_dtype_t dtype, int32_t rank, const int64_t *shape) {
  if (!wanted(l, name)) return XR_OK;
  xr_arg_t *a = xr_op_add_kwarg(l->arena, l->op, name, "Tensor");
  if (!a || xr_value_make_tensor(l->arena, &a->value, rank) != XR_OK) return XR_RESOURCE_EXHAUSTED;
  xr_tensor_spec_t *t = a->value.as.tensor;
  t->dtype = dtype;
  memcpy(t->shape, shape, sizeof *shape * (size_t)rank);
  xr_tensor_set_contiguous(t);
  return XR_OK;
}

static xr_status_t add_int(layer_t *l, const char *name, int64_t v) {
  if (!wanted(l, name)) return XR_OK;
  xr_arg_t *a = xr_op_add_kwarg(l->arena, l->op, name, "int");
  if (!a) return XR_RESOURCE_EXHAUSTED;
  a->value = (xr_value_t){.kind = XR_VALUE_INT, .as.i = v};
  return XR_OK;
}

static xr_status_t add_int_list(layer_t *l, const char *name, const int64_t *v, size_t n) {
  if (!wanted(l, name)) return XR_OK;
  xr_arg_t *a = xr_op_add_kwarg(l->arena, l->op, name, "int[]");
  if (!a || xr_value_make_list(l->arena, &a->value, n) != XR_OK) return XR_RESOURCE_EXHAUSTED;
  for (size_t i = 0; i < n; i++) a->value.as.list.items[i] = (xr_value_t){.kind = XR_VALUE_INT, .as.i = v[i]};
  return XR_OK;
}

static xr_status_t add_bool(layer_t *l, const char *name, bool v) {
  if (!wanted(l, name)) return XR_OK;
  xr_arg_t *a = xr_op_add_kwarg(l->arena, l->op, name, "bool");
  if (!a) return XR_RESOURCE_EXHAUSTED;
  a->value = (xr_value_t){.kind = XR_VALUE_BOOL, .as.b = v};
  return XR_OK;
}

static xr_status_t add_float(layer_t *l, const char *name, double v) {
  if (!wanted(l, name)) return XR_OK;
  xr_arg_t *a = xr_op_add_kwarg(l->arena, l->op, name, "float");
  if (!a) return XR_RESOURCE_EXHAUSTED;
  a->value = (xr_value_t){.kind = XR_VALUE_FLOAT, .as.f = v};
  return XR_OK;
}

static xr_status_t add_string(layer_t *l, const char *name, const char *v) {
  if (!wanted(l, name)) return XR_OK;
  xr_arg_t *a = xr_op_add_kwarg(l->arena, l->op, name, "str");
  return a ? xr_value_make_string(l->arena, &a->value, v) : XR_RESOURCE_EXHAUSTED;
}

static int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/* The fused-MoE layer of ops[index]. */
static xr_status_t apply_moe(xr_bundle_t *b, size_t index, const xr_model_config_t *c,
                             xr_model_config_note_fn note, void *context) {
  xr_op_t *op = &b->ops[index];
  const xr_tensor_spec_t *hidden = tensor_arg(op, "hidden_states", 0), *logits = tensor_arg(op, "router_logits", 1);
  if (!hidden || !logits || hidden->rank != 2 || logits->rank != 2)
    return xr_error(XR_INVALID_ARGUMENT, "ops[%zu] %s: expected hidden_states and router_logits, 2-D", index,
                    op->name);
  const char *cfg = c->name;
  int64_t E = logits->shape[1], K = hidden->shape[1];
  if (c->experts > 0 && c->experts != E)
    return xr_error(XR_INVALID_ARGUMENT,
                    "ops[%zu] %s: router_logits has %lld experts (its last dim), %s says %lld", index,
                    op->name, (long long)E, cfg, (long long)c->experts);
  if (c->top_k < 1)
    return xr_error(XR_INVALID_ARGUMENT, "ops[%zu] %s: %s gives no num_experts_per_tok (top-k)", index,
                    op->name, cfg);
  if (c->top_k > E)
    return xr_error(XR_INVALID_ARGUMENT, "ops[%zu] %s: %s's top-%lld exceeds router_logits' %lld experts", index,
                    op->name, cfg, (long long)c->top_k, (long long)E);
  if (c->intermediate_size < 1)
    return xr_error(XR_INVALID_ARGUMENT, "ops[%zu] %s: %s gives no moe_intermediate_size or intermediate_size",
                    index, op->name, cfg);
  int64_t H = c->hidden_size > 0 ? c->hidden_size : K, align = 1;
  if (H > K)
    return xr_error(XR_INVALID_ARGUMENT, "ops[%zu] %s: hidden_states has %lld columns, fewer than %s's hidden_size %lld",
                    index, op->name, (long long)K, cfg, (long long)H);
  if (H < K) { /* vLLM pads both sizes to the kernel's alignment (e.g. 2880 -> 3072 on ROCm) */
    while (align <= 4096 && round_up(H, align) != K) align *= 2;
    if (align > 4096)
      return xr_error(XR_INVALID_ARGUMENT, "ops[%zu] %s: hidden_states has %lld columns; %s's hidden_size %lld "
                      "padded to no power-of-two alignment gives that", index, op->name, (long long)K, cfg,
                      (long long)H);
  }
  int64_t N = round_up(c->intermediate_size, align);
  bool mxfp4 = c->quant == XR_MODEL_QUANT_MXFP4, gpt_oss = !strcmp(c->model_type, "gpt_oss") || c->swiglu_limit > 0;
  if (mxfp4 && (K % 32 || N % 32))
    return xr_error(XR_INVALID_ARGUMENT, "ops[%zu] %s: mxfp4 weights need sizes in blocks of 32; hidden %lld, "
                    "intermediate %lld", index, op->name, (long long)K, (long long)N);
  if (c->quant == XR_MODEL_QUANT_OTHER)
    return xr_error(XR_UNIMPLEMENTED, "ops[%zu] %s: %s's quant_method '%s': only mxfp4, fp8 and unquantized "
                    "expert weights are modelled", index, op->name, cfg, c->quant_method);
  bool fp8 = c->quant == XR_MODEL_QUANT_FP8;
  /* vLLM converts fp8 weights to e4m3fnuz on MI300-class GPUs, the only ones whose fp8 that is */
  const char *device = b->meta.device_name ? b->meta.device_name : "";
  bool fnuz = fp8 && (strstr(device, "MI300") || strstr(device, "MI325"));

  layer_t l = {.arena = b->arena, .op = op};
  xr_status_t st;
  xr_dtype_t wd = mxfp4 ? XR_DTYPE_F4E2M1X2 : fnuz ? XR_DTYPE_F8E4M3FNUZ : fp8 ? XR_DTYPE_F8E4M3FN : hidden->dtype;
  int64_t div = mxfp4 ? 2 : 1, bn = c->weight_block[0], bk = c->weight_block[1];
  if ((st = add_tensor(&l, "w1", wd, 3, (int64_t[]){E, 2 * N, K / div})) ||
      (mxfp4 && (st = add_tensor(&l, "w1_scale", XR_DTYPE_F8E8M0, 3, (int64_t[]){E, 2 * N, K / 32}))) ||
      (fp8 && bn && (st = add_tensor(&l, "w1_scale", XR_DTYPE_F32, 3, (int64_t[]){E, (2 * N + bn - 1) / bn, (K + bk - 1) / bk}))) ||
      (fp8 && !bn && (st = add_tensor(&l, "w1_scale", XR_DTYPE_F32, 1, (int64_t[]){E}))) ||
      (gpt_oss && (st = add_tensor(&l, "w1_bias", hidden->dtype, 2, (int64_t[]){E, 2 * N}))) ||
      (st = add_tensor(&l, "w2", wd, 3, (int64_t[]){E, K, N / div})) ||
      (mxfp4 && (st = add_tensor(&l, "w2_scale", XR_DTYPE_F8E8M0, 3, (int64_t[]){E, K, N / 32}))) ||
      (fp8 && bn && (st = add_tensor(&l, "w2_scale", XR_DTYPE_F32, 3, (int64_t[]){E, (K + bn - 1) / bn, (N + bk - 1) / bk}))) ||
      (fp8 && !bn && (st = add_tensor(&l, "w2_scale", XR_DTYPE_F32, 1, (int64_t[]){E}))) ||
      (fp8 && bn && (st = add_int_list(&l, "weight_block_size", c->weight_block, 2))) ||
      (gpt_oss && (st = add_tensor(&l, "w2_bias", hidden->dtype, 2, (int64_t[]){E, K}))) ||
      (st = add_int(&l, "top_k", c->top_k)) ||
      (st = add_bool(&l, "renormalize", c->norm_topk_prob != 0)) ||
      (st = add_string(&l, "activation", gpt_oss ? "swigluoai" : c->hidden_act[0] ? c->hidden_act : "silu")) ||
      (gpt_oss && (st = add_float(&l, "swiglu_limit", c->swiglu_limit > 0 ? c->swiglu_limit : 7.0))))
    return st == XR_RESOURCE_EXHAUSTED ? xr_error(st, "out of memory adding %s's layer", op->name) : st;

  text_t s = {0};
  say(&s, "%s from %s (%s weights", l.added.n ? l.added.s : "nothing", cfg,
      mxfp4 ? "mxfp4" : xr_dtype_short_name(wd));
  if (fp8 && bn) say(&s, " in %lld x %lld blocks", (long long)bn, (long long)bk);
  if (fnuz) say(&s, ", fnuz as vLLM makes them on %s", device);
  say(&s, ", %lld experts, top-%lld, ", (long long)E, (long long)c->top_k);
  if (align > 1)
    say(&s, "hidden %lld -> %lld and intermediate %lld -> %lld: padded to %lld as hidden_states is)",
        (long long)H, (long long)K, (long long)c->intermediate_size, (long long)N, (long long)align);
  else
    say(&s, "hidden %lld, intermediate %lld)", (long long)K, (long long)N);
  if (l.kept.n) say(&s, "; the bundle's own %s kept", l.kept.s);
  const xr_arg_t *prior = xr_op_find_arg(op, "layer_source");
  text_t source = {0};
  if (prior && prior->value.kind == XR_VALUE_STRING) say(&source, "%s; ", prior->value.as.s);
  say(&source, "%s", s.s);
  if (prior) { /* replace the record, keeping its history */
    xr_arg_t *a = (xr_arg_t *)prior;
    if ((st = xr_value_make_string(b->arena, &a->value, source.s))) return st;
  } else {
    xr_arg_t *a = xr_op_add_kwarg(b->arena, op, "layer_source", "str");
    if (!a || (st = xr_value_make_string(b->arena, &a->value, source.s)))
      return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory adding %s's layer", op->name);
  }
  if (note) note(context, index, s.s);
  return XR_OK;
}

xr_status_t xr_model_config_apply(xr_bundle_t *b, const xr_model_config_t *c, xr_model_config_note_fn note,
                                  void *context, size_t *out_ops) {
  size_t changed = 0;
  for (size_t i = 0; i < b->op_count; i++) {
    if (strcmp(b->ops[i].name, "vllm::moe_forward")) continue;
    xr_status_t st = apply_moe(b, i, c, note, context);
    if (st != XR_OK) return st;
    changed++;
  }
  if (out_ops) *out_ops = changed;
  return XR_OK;
}
