/* cuda_forward.h: the OPT forward pass and sampling on a CUDA device, the
 * device twin of ../forward.h and ../sampling.h (implemented in
 * cuda_forward.cu; no CUDA header is needed to use it, so plain C drives it).
 *
 * Uses the dimension legend of ../model.h (V C L H D F P Tmax B T S).
 *
 * Usage (every pointer named d_* is device memory):
 *   opt_cuda_device *dev;  opt_cuda_device_open(&dev, 0, &err);   // "no CUDA device: ..." without one
 *   opt_cuda_model *m;     opt_cuda_model_create(&m, dev, &weights, &err);  // uploads the weight arena
 *   opt_cuda_kv_cache kv;  opt_cuda_kv_cache_alloc(dev, &kv, &hp, dtype, B, Smax, &err);
 *   opt_cuda_model_reserve(m, B * T_max, &err);
 *   opt_cuda_forward(m, &kv, d_tokens, d_mask, stride, B, T, ENG_LOGITS_LAST, d_logits, &err);
 *   opt_cuda_sample(dev, &sample_args, &err);
 *
 * Semantics are those of forward.h: positions from the attention mask
 * (cumsum(mask) * mask - 1, offset 2), causal + padding mask, a pad query
 * with no visible key attends uniformly. The cache length lives on the
 * device too (kv.d_len), so a decode step reads it there and a captured
 * CUDA graph replays correctly at every step. All work is queued on the
 * device's one stream; nothing synchronises unless it says so.
 *
 * Precision: weights, KV cache and GEMM inputs in the run's dtype, GEMM
 * accumulation, residual stream, layer norm and softmax in fp32 (cuBLASLt
 * CUBLAS_COMPUTE_32F; fp32 runs use no TF32).
 */
#ifndef OPT_CUDA_FORWARD_H
#define OPT_CUDA_FORWARD_H

#include <stddef.h>
#include <stdint.h>

#include "cuda_mem.h"
#include "forward.h"
#include "opt_model.h"
#include "sampling.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ device */

typedef struct opt_cuda_device opt_cuda_device;

/* CUDA devices visible (0 without a driver or a GPU; never fails). */
int opt_cuda_device_count(void);
/* Opens device index: its stream, cuBLASLt handle and allocator. Without a
 * usable device: BC_ERR_DEVICE, "no CUDA device: <reason>" (one line). */
bc_status opt_cuda_device_open(opt_cuda_device **out, int index, bc_error *err);
void opt_cuda_device_close(opt_cuda_device *d);
/* "CUDA driver 13.0, runtime 13.0" into buf (never fails). */
void opt_cuda_driver_version(char *buf, size_t len);
/* "NVIDIA H200 (sm_90, 139.8 GiB)" */
const char *opt_cuda_device_name(const opt_cuda_device *d);
/* The allocator's accounting (bytes per kind, high-water mark). */
opt_cuda_mem *opt_cuda_device_mem(opt_cuda_device *d);
/* cudaMemGetInfo. */
bc_status opt_cuda_mem_get_info(opt_cuda_device *d, size_t *free_bytes, size_t *total_bytes, bc_error *err);
/* Waits for the stream; reports any asynchronous error. */
bc_status opt_cuda_sync(opt_cuda_device *d, bc_error *err);

/* Device buffers and copies on the device's stream (async unless said). */
bc_status opt_cuda_alloc(opt_cuda_device *d, opt_cuda_mem_kind kind, size_t bytes, void **d_p, const char *what,
                         bc_error *err);
void opt_cuda_free(opt_cuda_device *d, opt_cuda_mem_kind kind, void *d_p, size_t bytes);
bc_status opt_cuda_upload(opt_cuda_device *d, void *d_dst, const void *src, size_t bytes, bc_error *err);
/* Synchronous: returns when dst holds the bytes. */
bc_status opt_cuda_download(opt_cuda_device *d, void *dst, const void *d_src, size_t bytes, bc_error *err);
bc_status opt_cuda_copy(opt_cuda_device *d, void *d_dst, const void *d_src, size_t bytes, bc_error *err);

/* Stream-ordered timing with CUDA events: mark returns an index into the
 * device's event pool (up to OPT_CUDA_MARKS per opt_cuda_marks_reset);
 * opt_cuda_marks_ms synchronises and returns the ms between two marks. */
#define OPT_CUDA_MARKS 8192
void opt_cuda_marks_reset(opt_cuda_device *d);
int opt_cuda_mark(opt_cuda_device *d);
double opt_cuda_marks_ms(opt_cuda_device *d, int from, int to);

/* ------------------------------------------------------------------- model */

typedef struct opt_cuda_model opt_cuda_model;

/* Copies w's arena to the device (weights kind) and checks the shape is one
 * the kernels support (head_dim <= 128). w stays borrowed for its shapes. */
bc_status opt_cuda_model_create(opt_cuda_model **out, opt_cuda_device *d, const opt_weights *w, bc_error *err);
void opt_cuda_model_destroy(opt_cuda_model *m);
/* Makes sure the activations hold max_tokens (B * T) tokens (workspace kind). */
bc_status opt_cuda_model_reserve(opt_cuda_model *m, int max_tokens, bc_error *err);
/* Frees the activations and every captured graph (cache-release policy). */
void opt_cuda_model_release_workspace(opt_cuda_model *m);
size_t opt_cuda_model_workspace_bytes(const opt_cuda_model *m);
const opt_hparams *opt_cuda_model_hparams(const opt_cuda_model *m);
eng_dtype opt_cuda_model_dtype(const opt_cuda_model *m);

/* ---------------------------------------------------------------- KV cache */

typedef struct opt_cuda_kv_cache {
    eng_kv_cache c;  /* the CPU cache's shape, len (on the host), bytes; k, v in device memory
                      * ([L][B][H][Smax][D] each, one allocation); no prefix sharing */
    int *d_len;      /* the length on the device (kept equal to c.len) */
    size_t alloc_bytes; /* c.bytes + the length counter */
} opt_cuda_kv_cache;

bc_status opt_cuda_kv_cache_alloc(opt_cuda_device *d, opt_cuda_kv_cache *kv, const opt_hparams *hp, eng_dtype dtype,
                                  int B, int Smax, bc_error *err);
void opt_cuda_kv_cache_free(opt_cuda_device *d, opt_cuda_kv_cache *kv);
/* Sets the length on host and device. */
bc_status opt_cuda_kv_cache_set_len(opt_cuda_device *d, opt_cuda_kv_cache *kv, int len, bc_error *err);
/* Copies the first S tokens of src row src_b into dst row dst_b (shared prefill). */
bc_status opt_cuda_kv_cache_copy_row(opt_cuda_device *d, opt_cuda_kv_cache *dst, int dst_b,
                                     const opt_cuda_kv_cache *src, int src_b, int S, bc_error *err);

/* ----------------------------------------------------------------- forward */

/* As eng_forward (forward.h) with device buffers:
 *   d_tokens  [B, T] int32      d_mask [B, mask_stride] uint8 for s < kv->c.len + T
 *   d_logits  fp32 [B, T, V] (ALL) or [B, V] (LAST)
 * Appends T tokens to kv (host and device length). Tokens are not range
 * checked on the device (the caller's tokens come from the sampler). */
bc_status opt_cuda_forward(opt_cuda_model *m, opt_cuda_kv_cache *kv, const int32_t *d_tokens, const uint8_t *d_mask,
                           int mask_stride, int B, int T, eng_logits_mode mode, float *d_logits, bc_error *err);

/* One decode step (T = 1, logits of that token), replayed from a CUDA graph
 * for this B when use_graph: the first step with a batch B and its buffers
 * runs eagerly (GEMM plans, kernel loading), the second is captured, later
 * ones replay. If a capture fails, graphs are turned off for the model
 * (opt_cuda_graph_error says why) and steps run eagerly. Same results as
 * opt_cuda_forward either way. */
bc_status opt_cuda_decode_step(opt_cuda_model *m, opt_cuda_kv_cache *kv, const int32_t *d_tokens,
                               const uint8_t *d_mask, int mask_stride, int B, float *d_logits, int use_graph,
                               bc_error *err);
/* Why graphs were turned off ("" while they work). */
const char *opt_cuda_graph_error(const opt_cuda_model *m);
/* GEMM calls whose bias (+ ReLU) ran in a separate kernel because cuBLASLt
 * had no algorithm with that epilogue for the shape (0 when all fused). */
int64_t opt_cuda_epilogue_fallbacks(const opt_cuda_model *m);
/* fc1 calls whose output went through fp32 (and, in 16-bit, a convert
 * kernel) because cuBLASLt had no bias + ReLU algorithm with a 16-bit output. */
int64_t opt_cuda_fc1_converts(const opt_cuda_model *m);
/* on = 1: fc1 always takes the fp32 + convert route (so a test can compare
 * the two routes; graphs captured before keep the route they recorded). */
void opt_cuda_model_force_fc1_fp32(opt_cuda_model *m, int on);
/* Graph statistics of the model: held, captures, replays, invalidations. */
void opt_cuda_graph_stats(const opt_cuda_model *m, int *held, int64_t *captures, int64_t *replays,
                          int64_t *invalidations);

/* ---------------------------------------------------------------- sampling */

/* One sampling step of every row, on the device, as ../sampling.c and the
 * CPU device's sampling step (../device_cpu.c) do it: EOS suppressed unless
 * stop_at_eos; a finished row emits pad_id; greedy (first maximum) when temperature == 0, else
 * temperature, top-k, top-p, and one uniform from the row's generator (the
 * CPU path's splitmix64 stream: eng_rng_for_row, eng_rng_uniform). The token
 * of row r goes to d_seq[r, pos] and d_step_tokens[r], d_mask[r, pos] = 1,
 * where pos = *d_pos (the cache length, read on the device). */
typedef struct opt_cuda_sample_args {
    int R, V, stride;        /* rows, vocabulary, row stride of d_seq and d_mask */
    int eos_id, pad_id, stop_at_eos, response_start;
    eng_sampling p;          /* temperature, top_p, top_k (seed: the generators in d_rng) */
    float *d_logits;         /* [R, V] fp32, modified */
    float *d_scratch;        /* [R, V] fp32 */
    const int *d_pos;        /* where this step's token goes */
    int32_t *d_seq;          /* [R, stride] */
    uint8_t *d_mask;         /* [R, stride] */
    int32_t *d_step_tokens;  /* [R] */
    int32_t *d_eos_at;       /* [R] response index of the row's EOS, -1 */
    uint64_t *d_rng;         /* [R] eng_rng states */
    int64_t *d_counters;     /* [2]: rows still running (this step), tokens generated (total) */
} opt_cuda_sample_args;

bc_status opt_cuda_sample(opt_cuda_device *d, const opt_cuda_sample_args *a, bc_error *err);

#ifdef __cplusplus
}
#endif

#endif
