/* A model's Hugging Face config.json, read for the layer state a trace does not record: ops such
 * as vllm::moe_forward name their layer, and its weights, top-k, intermediate size and
 * quantization live in the serving process. xr_model_config_apply writes that state into the
 * ops as ordinary kwargs (tensor specs: shapes and dtypes, no data), so a bundle stays
 * self-contained and carries no weights.
 *
 * Fields read (the first alias present wins; a `text_config` object, as multimodal configs
 * nest the language model, is searched before the top level):
 *   hidden_size | d_model | n_embd;  moe_intermediate_size | intermediate_size;
 *   num_local_experts | num_experts | n_routed_experts | moe_num_experts;
 *   num_experts_per_tok | moe_topk | top_k;  norm_topk_prob;  hidden_act | activation_function;
 *   swiglu_limit;  quantization_config.quant_method (mxfp4, fp8 with weight_block_size, absent:
 *   unquantized);  num_attention_heads, num_key_value_heads, head_dim;  model_type.
 * Other fields are ignored. A field of the wrong type is an error naming the file and field. */
#ifndef XR_FORMATS_MODEL_CONFIG_H
#define XR_FORMATS_MODEL_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "formats/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum xr_model_quant {
  XR_MODEL_QUANT_NONE = 0, /* weights in the activations' dtype */
  XR_MODEL_QUANT_MXFP4,    /* e2m1 + an e8m0 scale per 32 (gpt-oss) */
  XR_MODEL_QUANT_FP8,      /* fp8 e4m3fn, block scales when weight_block_size is given */
  XR_MODEL_QUANT_OTHER,    /* a quant_method the replay does not model: quant_method names it */
} xr_model_quant_t;

typedef struct xr_model_config {
  char name[256];       /* the file's name without its folder, as notes cite it */
  char model_type[64];  /* "" when absent */
  /* -1 when absent */
  int64_t hidden_size, intermediate_size, experts, top_k;
  int64_t heads, kv_heads, head_dim;
  int norm_topk_prob;   /* 0, 1, or -1 when absent */
  char hidden_act[32];  /* "" when absent */
  double swiglu_limit;  /* < 0 when absent */
  xr_model_quant_t quant;
  char quant_method[32];
  int64_t weight_block[2]; /* fp8 weight_block_size [rows, cols]; 0 when absent */
} xr_model_config_t;

/* Reads and parses `path`. */
xr_status_t xr_model_config_load(const char *path, xr_model_config_t *out_config);
/* Parses config text; `name` is what errors and notes call it. */
xr_status_t xr_model_config_parse(const char *text, size_t size, const char *name,
                                  xr_model_config_t *out_config);

/* Called once per op changed, with a sentence saying what the config supplied, what was
 * inferred from the op's own shapes and what the op already had. */
typedef void (*xr_model_config_note_fn)(void *context, size_t op_index, const char *sentence);

/* Adds to every op that needs layer state (vllm::moe_forward) the kwargs it lacks: w1, w2 (and
 * w1_scale, w2_scale for quantized weights; w1_bias, w2_bias for gpt-oss), top_k, renormalize,
 * activation (and swiglu_limit), plus `layer_source`, a string recording where each came from.
 * Arguments the op already has are kept. The experts must match router_logits' last dim; a
 * hidden size smaller than hidden_states' is taken as padded (the smallest power-of-two
 * alignment that gives the trace's size), and the intermediate size is padded alike. A
 * contradiction is INVALID_ARGUMENT naming the op, the config and both values. */
xr_status_t xr_model_config_apply(xr_bundle_t *bundle, const xr_model_config_t *config,
                                  xr_model_config_note_fn note, void *context, size_t *out_ops);

#ifdef __cplusplus
}
#endif
#endif
