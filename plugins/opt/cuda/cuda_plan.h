/* cuda_plan.h: byte layouts of the OPT engine's device buffers, in plain C
 * (no CUDA headers) so CI checks them without a GPU. Uses the dimension
 * legend of ../model.h (V C L H D F P B T S; N = B * T tokens).
 *
 * On the device:
 *   weights     one arena, a byte-for-byte copy of the host opt_weights arena
 *               (opt_weights_bytes: the same bytes as the CPU path);
 *   KV cache    [L][B][H][Smax][D] in the run's dtype, K and V
 *               (eng_kv_cache_bytes: the same bytes as the CPU path);
 *   workspace   the forward's activations (below) + cuBLASLt's workspace,
 *               and the rollout's device buffers (logits, sequences, masks,
 *               generators, sampler scratch).
 * Every buffer starts on a 256-byte boundary (cuBLASLt and vector loads).
 */
#ifndef OPT_CUDA_PLAN_H
#define OPT_CUDA_PLAN_H

#include <stddef.h>

#include "opt_model.h"

#define OPT_CUDA_ALIGN 256
/* cuBLASLt's scratch, part of the workspace. */
#define OPT_CUDA_LT_WORKSPACE ((size_t)32 << 20)

/* Byte offsets of the forward's activations for up to N tokens. "dt" buffers
 * are in the run's dtype (GEMM inputs); the others fp32. Cm = max(C, P). */
typedef struct opt_cuda_ws_layout {
    int N;
    size_t x;    /* f32 [N, Cm] residual stream */
    size_t xh;   /* dt  [N, Cm] layer-norm output: GEMM input */
    size_t q;    /* f32 [N, C]   q, k, v are adjacent: from q on they also */
    size_t k;    /* f32 [N, C]   hold the [N, 3C] output of the fused */
    size_t v;    /* f32 [N, C]   q/k/v GEMM */
    size_t att;  /* dt  [N, C] attention output: out_proj input */
    size_t y;    /* f32 [N, Cm] out_proj / fc2 / project_out output */
    size_t ff;   /* f32 [N, F] fc1 output */
    size_t ffh;  /* dt  [N, F] fc1 output as fc2 input (== ff when dt is fp32) */
    size_t embh; /* dt  [N, Cm] token embeddings before project_in, lm_head input */
    size_t lt;   /* OPT_CUDA_LT_WORKSPACE bytes for cuBLASLt */
    size_t bytes;
} opt_cuda_ws_layout;

/* Fills l for N tokens; returns l->bytes. */
size_t opt_cuda_ws_layout_for(const opt_hparams *hp, eng_dtype dt, int N, opt_cuda_ws_layout *l);

/* Byte offsets of one rollout's device buffers (legend of ../rollout.h:
 * R rows, Bp prompts, Tp prompt length, Stot = Tp + Tr). */
typedef struct opt_cuda_rollout_layout {
    size_t logits;        /* f32 [R, V] */
    size_t logits_shared; /* f32 [Bp, V] (shared prefill only, else 0 bytes) */
    size_t scratch;       /* f32 [R, V] sampler scratch (scaled logits) */
    size_t seq;           /* i32 [R, Stot] */
    size_t mask;          /* u8  [R, Stot] */
    size_t prefill_ids;   /* i32 [R, Tp] */
    size_t prompt_ids;    /* i32 [Bp, Tp] */
    size_t prompt_mask;   /* u8  [Bp, Tp] */
    size_t step_tokens;   /* i32 [R] */
    size_t eos_at;        /* i32 [R] */
    size_t rng;           /* u64 [R] per-row generator states */
    size_t counters;      /* i64 [2]: rows still running, tokens generated */
    size_t bytes;
} opt_cuda_rollout_layout;

size_t opt_cuda_rollout_layout_for(int V, int R, int Bp, int Tp, int Stot, int shared, opt_cuda_rollout_layout *l);

/* What a rollout holds on the device, per kind of cuda_mem.h. */
typedef struct opt_cuda_plan {
    size_t weights;   /* opt_weights_bytes(hp, dt) */
    size_t kv_cache;  /* R x Stot cache (+ Bp x Tp with shared prefill) */
    size_t workspace; /* activations for max(prefill tokens, R) + rollout buffers */
    int max_tokens;   /* N the activations are sized for */
} opt_cuda_plan;

opt_cuda_plan opt_cuda_plan_rollout(const opt_hparams *hp, eng_dtype dt, int R, int Bp, int Tp, int Stot, int shared);

#endif
