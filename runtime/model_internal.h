/* Private to libmvrt: the model object and what graph.c needs from it.
 *
 * Derived parameter names (besides the PyTorch names stored unchanged):
 *   <block>mixer.A                  -exp(A_log)
 *   <block>mixer.out_proj.weight,   rows scaled by gamma_1 (layer scale)
 *   <block>mixer.proj.weight/bias   likewise
 *   <block>mlp.fc2.weight/bias      rows scaled by gamma_2
 *   <conv>.weight/.bias             BatchNorm folded in (stem, ConvBlocks;
 *                                   a bias is created where PyTorch has none)
 *   norm.scale, norm.shift          the head's BatchNorm as an affine map
 *   <block>mixer.in_proj / mixer.qkv / mlp.fc1 + .ln_colsum, .ln_bias
 *                                   the LayerNorm before the linear folded
 *                                   in (W gamma, b + W beta: the GPU
 *                                   backends' linear with ln_weight) */
#ifndef MVRT_RUNTIME_MODEL_INTERNAL_H
#define MVRT_RUNTIME_MODEL_INTERNAL_H

#include "internal.h"

#define MV_PARAM_NAME_MAX 160

typedef struct mv_param {
    char name[MV_PARAM_NAME_MAX];
    int rank;
    int64_t shape[4];
    int64_t numel;
    size_t offset;   /* floats from the start of the weights buffer */
} mv_param_t;

struct mvrt_model {
    mvrt_backend_t *backend;
    mvrt_model_config_t config;
    mv_param_t *params;
    size_t count;
    mvrt_buffer_t *weights;
    size_t weight_bytes;
    int64_t torch_count;
};

/* One stage (level) as the builders see it. */
typedef struct mv_stage_desc {
    int dim, depth, heads, window;
    int conv;             /* ConvBlocks */
    int first_attention;  /* blocks >= this are attention */
    int downsample;
} mv_stage_desc_t;

int mv_dt_rank(int C);
void mv_network_stage(const mvrt_model_config_t *c, int level, mv_stage_desc_t *s);
void mv_model_stage(const mvrt_model_config_t *c, mv_stage_desc_t *s);
/* NULL when absent. */
const mv_param_t *mv_model_param(const mvrt_model_t *m, const char *name);

#endif
