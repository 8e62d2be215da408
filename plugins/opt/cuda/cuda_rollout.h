/* cuda_rollout.h: an OPT rollout's device side on a CUDA device.
 *
 * The rollout itself (prompts, expansion, the generate loop,
 * post-processing, the row order and the results) is ../rollout.h's
 * eng_rollout and ../device.h's eng_rollout_run, shared with the CPU; this
 * adds the device KV cache(s), the model's activations and the rollout's
 * device buffers (cuda_plan.h), acquired and released as the cache policy
 * says, and the loop's steps (opt_cuda_steps): prefill, decode steps (CUDA
 * graphs optional) and sampling on the device. Only the sampled tokens come
 * back, once at the end (plus 8 bytes per step with stop_at_eos).
 * On return of generate, ro's results (seq, eos_at, returned_len,
 * n_generated, prefill_ms, decode_ms, n_decode_forwards, first_token_ms,
 * step_ms, n_steps, n_prefill_tokens, n_decode_tokens) are set as the CPU
 * path sets them; the times are CUDA-event times on the stream.
 */
#ifndef OPT_CUDA_ROLLOUT_H
#define OPT_CUDA_ROLLOUT_H

#include "cuda_forward.h"
#include "cuda_plan.h"
#include "device.h"

typedef struct opt_cuda_rollout {
    eng_rollout *ro;          /* borrowed: prompts, params and results */
    opt_cuda_device *dev;     /* borrowed */
    opt_cuda_model *m;        /* borrowed */
    int use_graphs;           /* capture and replay the decode step */
    int have_cache;
    opt_cuda_kv_cache kv;     /* R rows x Stot */
    opt_cuda_kv_cache kv_shared; /* Bp rows x Tp (shared prefill only) */
    char *d_buf;              /* rollout buffers (workspace kind) */
    size_t buf_bytes;
    opt_cuda_rollout_layout l;
    int64_t counters[2];      /* host copy of the device counters */
} opt_cuda_rollout;

/* Borrows ro (after eng_rollout_init), dev and m; allocates nothing yet. */
void opt_cuda_rollout_init(opt_cuda_rollout *cr, eng_rollout *ro, opt_cuda_device *dev, opt_cuda_model *m,
                           int use_graphs);
/* The device bytes per kind (weights, KV cache, workspace) of this rollout. */
opt_cuda_plan opt_cuda_rollout_plan(const opt_cuda_rollout *cr);
/* Allocates the KV cache(s), activations and buffers (no-op when held). */
bc_status opt_cuda_rollout_acquire(opt_cuda_rollout *cr, bc_error *err);
/* Frees them and the model's activations and graphs. */
void opt_cuda_rollout_release(opt_cuda_rollout *cr);
/* The loop's steps on the device; ctx is an opt_cuda_rollout. */
extern const eng_step_ops opt_cuda_steps;
/* eng_rollout_run over opt_cuda_steps: prefill + decode + sampling on the
 * device; acquires first if released. Call after eng_rollout_expand;
 * eng_rollout_post_process follows as on the CPU. */
bc_status opt_cuda_rollout_generate(opt_cuda_rollout *cr, bc_error *err);
void opt_cuda_rollout_free(opt_cuda_rollout *cr);

#endif
