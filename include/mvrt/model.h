/* MambaVision models and graphs.
 *
 * A model is a MambaVision network, one stage of it, or one block, with its
 * weights on one backend. Weights are read from a .safetensors file under
 * the model's own PyTorch parameter names (as in the NVlabs state_dict), or
 * made from a seed. Loading folds what inference allows (BatchNorm into the
 * preceding conv, layer scale into the projection before it, A = -exp(A_log))
 * in double precision on the host, then uploads everything in one buffer.
 *
 * A graph is a model planned for one batch size and input size: every
 * intermediate has its place in one workspace allocated when the graph is
 * created, so running it allocates nothing. On CUDA/HIP the first run is
 * captured into a CUDA/HIP graph and later runs replay it (set the
 * environment variable MVRT_GRAPH_CAPTURE=0 to launch op by op).
 *
 * Threading: a model may be shared by graphs used from several threads at
 * once (graphs only read it). A graph must be run by one thread at a time;
 * two graphs run concurrently on two streams give the same results as run
 * alone. Lifetimes: model outlives its graphs; backend outlives both.
 * Errors: every call returns mvrt_status_t with the detail in
 * mvrt_last_error(); outputs are written only on success.
 */
#ifndef MVRT_MODEL_H
#define MVRT_MODEL_H

#include "mvrt/safetensors.h"
#include "mvrt/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mvrt_model_kind {
    MVRT_MODEL_NETWORK = 0,         /* (B, in_chans, H, W) -> logits (B, num_classes) */
    MVRT_MODEL_STAGE = 1,           /* one level: (B, C, H, W) -> (B, C', H', W') */
    MVRT_MODEL_MIXER_BLOCK = 2,     /* LayerNorm+Mamba mixer+MLP block: (B, L, C) -> (B, L, C) */
    MVRT_MODEL_ATTENTION_BLOCK = 3  /* LayerNorm+attention+MLP block: (B, L, C) -> (B, L, C) */
} mvrt_model_kind_t;

/* What defines a model. Zero-initialize, then fill, or use a preset / the
 * JSON of a golden file. Fields a kind does not use are ignored. */
typedef struct mvrt_model_config {
    int kind;             /* mvrt_model_kind_t */
    int dim;              /* NETWORK: width of level 0 (level i: dim * 2^i); else the width C */
    int mlp_ratio;        /* MLP hidden = mlp_ratio * C (4) */
    double layer_scale;   /* > 0: blocks have gamma_1/gamma_2 (B, L, L2: 1e-5); 0: none */
    int qkv_bias;         /* attention qkv has a bias (1 in every MambaVision) */
    int d_state;          /* scan state size N (8) */
    int d_conv;           /* mixer conv1d width (3) */
    /* NETWORK */
    int in_chans;         /* 3 */
    int in_dim;           /* stem width */
    int depths[4], heads[4], windows[4];
    int num_classes;
    /* STAGE (and the heads of an ATTENTION_BLOCK) */
    int depth;            /* blocks in the stage */
    int num_heads;
    int window;           /* hybrid stage window size */
    int conv_stage;       /* 1: ConvBlocks (levels 0 and 1), 0: hybrid (mixers then attention) */
    int first_attention;  /* hybrid: index of the first attention block (blocks before it are mixers) */
    int downsample;       /* the stage ends with a 3x3 stride-2 conv to 2C */
} mvrt_model_config_t;

/* The published configurations: "T", "T2", "S", "B", "L", "L2" (also
 * "mambavision_T", "mamba_vision_T" ...; case-insensitive), NETWORK kind,
 * 1000 classes. MVRT_ERR_NOT_FOUND for another name. */
MVRT_API mvrt_status_t mvrt_model_config_preset(const char *name, mvrt_model_config_t *out_config);

/* A config from the JSON used by the golden files' metadata: an object with
 * "kind" = "mixer" | "attention" | "stage" | "model" and that kind's fields
 * ("dim", "heads"/"num_heads", "depth", "window"/"window_size", "depths",
 * "transformer_blocks", "layer_scale", "downsample", "in_dim",
 * "num_classes", "mlp_ratio", "d_state", "d_conv", "qkv_bias", ...).
 * Unknown fields are ignored. Also fills the input size the JSON names
 * ("batch", "tokens", "input", "image") into the optional out_* (may be
 * NULL; 0 when absent). */
MVRT_API mvrt_status_t mvrt_model_config_from_json(const char *json, mvrt_model_config_t *out_config,
                                                   int64_t *out_batch, int64_t *out_height,
                                                   int64_t *out_width, int64_t *out_tokens);

/* Checks a config (sizes positive, dims divisible by heads and by 2, ...). */
MVRT_API mvrt_status_t mvrt_model_config_validate(const mvrt_model_config_t *config);

typedef struct mvrt_model mvrt_model_t;

/* Loads the weights from `file` under `prefix` + parameter name (prefix may
 * be NULL or "" — e.g. "mini_model.weights." for a golden file, "" for a
 * converted checkpoint). F32, F16, BF16 and F64 tensors are accepted (stored
 * as f32). A missing tensor gives MVRT_ERR_NOT_FOUND, a wrongly shaped or
 * typed one MVRT_ERR_INVALID_ARGUMENT, both naming the tensor and the shape
 * expected. Tensors the model does not use are ignored. The file may be
 * closed after the call. */
MVRT_API mvrt_status_t mvrt_model_load(mvrt_backend_t *backend, const mvrt_model_config_t *config,
                                       const mvrt_safetensors_t *file, const char *prefix,
                                       mvrt_model_t **out_model);

/* Deterministic weights from `seed` (the same on every backend and
 * machine), drawn as the reference model (NVlabs MambaVision) initialises
 * itself: every linear layer's weight normal(0, 0.02) and its
 * bias 0 (dt_proj's too), convolutions PyTorch's default uniform(+-1/
 * sqrt(fan_in)) with their biases, LayerNorm and BatchNorm weight 1 and
 * bias 0 with identity statistics, Mamba's A = -(1..N) and D = 1, gamma =
 * layer_scale. The same distributions, not PyTorch's numbers. For
 * benchmarks, smoke runs and the 16-bit agreement tests. */
MVRT_API mvrt_status_t mvrt_model_init_random(mvrt_backend_t *backend,
                                              const mvrt_model_config_t *config, uint64_t seed,
                                              mvrt_model_t **out_model);

/* NULL is a no-op. Every graph of the model must be destroyed first. */
MVRT_API void mvrt_model_destroy(mvrt_model_t *model);
MVRT_API mvrt_status_t mvrt_model_get_config(const mvrt_model_t *model,
                                             mvrt_model_config_t *out_config);
/* Number of parameters as in the PyTorch model (before folding). */
MVRT_API int64_t mvrt_model_parameter_count(const mvrt_model_t *model);

typedef struct mvrt_graph_options {
    int64_t batch;        /* images (NETWORK, STAGE) or sequences (blocks) */
    int64_t height, width;/* NETWORK, STAGE: input spatial size */
    int64_t tokens;       /* blocks: tokens per sequence L */
    int math;             /* 0: fp32 accuracy (matches PyTorch with TF32 off; on CUDA sm_80+ the GEMMs
                             and convs run as 3xTF32 on tensor cores, error at or below SGEMM's;
                             MVRT_CUDA_FP32_GEMM=sgemm forces SGEMM); 1: fast, TF32 GEMMs and convs on
                             CUDA; 2: fast, bf16 GEMM and conv operands with fp32 accumulation on CUDA
                             (as PyTorch autocast), attention on bf16 tensor cores (sm_80+), the
                             network's stem maps and the activations that only a GEMM reads
                             (LayerNorm outputs, MLP hidden) stored as bf16 on every backend, its
                             ConvBlock stages (maps, filters, products) in fp16 unless a filter is
                             beyond fp16's range (docs/mambavision.md: fp16 conv stages); 3: the
                             same in fp16 (fp16 tensor cores; T4s and older have no bf16 ones: on
                             CUDA code below sm_80 mode 2 is refused, MVRT_ERR_UNSUPPORTED, and mode
                             1 computes as mode 0). The CPU multiplies in fp32 in every mode, rounding
                             the same stored activations to 16 bits in modes 2 and 3. */
} mvrt_graph_options_t;

typedef struct mvrt_graph mvrt_graph_t;

/* Plans the model for these options and allocates its workspace (the only
 * allocation: running never allocates). With math 2 or 3 (bf16, fp16) on
 * a GPU backend whose GEMMs take 16-bit weights (CUDA), it also keeps a
 * 16-bit copy of the model's weights (half their bytes), rounded here
 * once instead of on every run, and the 16-bit convs' filters in their
 * kernels' layout; making them copies the weights through host memory (in
 * slices of 4 MiB; a filter at a time) and waits for the device. fp16: a weight
 * beyond fp16's range (|w| > 65504) fails with MVRT_ERR_UNSUPPORTED
 * instead of becoming infinite. bf16 on a device without bf16 tensor cores
 * (CUDA code below sm_80) fails with MVRT_ERR_UNSUPPORTED, naming fp16. */
MVRT_API mvrt_status_t mvrt_graph_create(mvrt_model_t *model, const mvrt_graph_options_t *options,
                                         mvrt_graph_t **out_graph);
/* NULL is a no-op. Work queued with the graph completes first on GPUs. */
MVRT_API void mvrt_graph_destroy(mvrt_graph_t *graph);

/* The graph's own input and output tensors (f32, contiguous; inside its
 * workspace). Writing the input tensor and reading the output one around
 * mvrt_graph_run(graph, stream, NULL, NULL) avoids two copies. */
MVRT_API mvrt_status_t mvrt_graph_input(const mvrt_graph_t *graph, mvrt_tensor_t *out_tensor);
MVRT_API mvrt_status_t mvrt_graph_output(const mvrt_graph_t *graph, mvrt_tensor_t *out_tensor);

/* Runs the graph on `stream` (NULL: the backend's default stream);
 * asynchronous on GPUs. `input` (may be NULL: use the graph's input as it
 * is) must have the graph input's shape, f32, contiguous, on the same
 * backend; it is copied in first. `output` (may be NULL) receives a copy of
 * the result. */
MVRT_API mvrt_status_t mvrt_graph_run(mvrt_graph_t *graph, mvrt_stream_t *stream,
                                      const mvrt_tensor_t *input, const mvrt_tensor_t *output);

typedef struct mvrt_graph_stats {
    size_t workspace_bytes;   /* intermediates + op scratch (+ the 16-bit copy of the weights and
                                 the convs' prepared 16-bit filters that a bf16 / fp16 graph on
                                 CUDA keeps: mvrt_graph_create) */
    size_t weight_bytes;      /* the model's device weights */
    int64_t nodes;            /* ops per run */
    int captured;             /* 1 once runs replay a captured CUDA/HIP graph */
    int64_t runs;
    double flops;             /* GEMM, conv and attention FLOPs per run (2 per multiply-add) */
} mvrt_graph_stats_t;

MVRT_API mvrt_status_t mvrt_graph_get_stats(const mvrt_graph_t *graph, mvrt_graph_stats_t *out_stats);

/* Where a run's time goes: one record per op of the graph, in run order. */
typedef struct mvrt_graph_op_profile {
    char op[16];      /* "linear", "conv2d", "scan", "layernorm", "copy", ... */
    char shape[48];   /* the problem size, e.g. "b256 M80 N3136 K720" */
    double flops;     /* as in mvrt_graph_stats_t (0 for memory-bound ops) */
    double ms;        /* time between events recorded around the op */
} mvrt_graph_op_profile_t;

/* Runs the graph once op by op (never the captured graph) on `stream` with
 * an event before and after every op, waits for it, and writes up to
 * `capacity` records to `out_ops` (may be NULL with capacity 0) and the
 * graph's op count to *out_count. Blocking; for diagnosis, not for
 * serving: on GPUs each op's time includes its launch gap. The results in
 * the graph's output are those of a normal run. */
MVRT_API mvrt_status_t mvrt_graph_profile(mvrt_graph_t *graph, mvrt_stream_t *stream,
                                          mvrt_graph_op_profile_t *out_ops, size_t capacity,
                                          size_t *out_count);

/* Times each op of the graph alone, as a replayed graph runs it: op i is
 * captured `repeats` times (1 to 1000) into a graph of its own, after ops
 * 0 .. i-1 have run (so its inputs hold their usual values), replayed
 * once to warm up and then three times; its record's ms is the fastest
 * replay divided by `repeats`: the op's cost inside a replay, without the
 * host's launch gap (at batch 1 that gap is most of mvrt_graph_profile's
 * figure). Records, capacity and *out_count as in mvrt_graph_profile.
 * Blocking; for diagnosis. Needs a backend with graph capture (CUDA,
 * HIP) and a graph whose runs could be captured; elsewhere
 * MVRT_ERR_UNSUPPORTED and nothing runs. Ops that add onto
 * their output (residuals) run repeatedly, so afterwards the graph's
 * workspace and output hold no meaningful values until the next
 * mvrt_graph_run, which computes them from its input as usual. */
MVRT_API mvrt_status_t mvrt_graph_profile_replayed(mvrt_graph_t *graph, mvrt_stream_t *stream, int repeats,
                                                   mvrt_graph_op_profile_t *out_ops, size_t capacity,
                                                   size_t *out_count);

#ifdef __cplusplus
}
#endif
#endif
