/* rollout.h: one rollout of the engine, as DeepSpeed's
 * HybridEngineRollout does it: expand prompts, generate (prefill, then decode
 * with the KV cache), post-process. Knows nothing about kernels or the plugin
 * ABI beyond bc_status. The generate stage is one loop (eng_rollout_run,
 * device.h) over a device's steps; the CPU's steps and cache are in
 * device_cpu.c, the CUDA device's in cuda/cuda_engine.c.
 *
 * Shapes (legend of model.h): Bp prompts, Sp samples per prompt, R = Bp * Sp
 * rows, Tp padded prompt length, Tr requested response length, Stot = Tp + Tr.
 * Row r = p * Sp + s (grouped by prompt: p0s0, p0s1, ..., p1s0, ...).
 */
#ifndef ENG_ROLLOUT_H
#define ENG_ROLLOUT_H

#include "forward.h"
#include "lengths.h"
#include "sampling.h"

/* Prompts from a prompts file: one line of space-separated token ids in
 * [0, V) each ('#' starts a comment line). Prompt b of a batch is
 * lines[b % n_lines]. */
typedef struct eng_prompt {
    int32_t *ids; /* [n], owned */
    int n;
} eng_prompt;

typedef struct eng_prompts {
    eng_prompt *lines; /* [n_lines], owned */
    int n_lines;
    int width;         /* 0: a batch is padded to its longest prompt; else to this (>= every prompt) */
} eng_prompts;

/* Reads path; errors name the file (and line): BC_ERR_NOT_FOUND (no such
 * file), BC_ERR_IO (unreadable), BC_ERR_FORMAT (not token ids in [0, V), or
 * no prompt at all), BC_ERR_NOMEM. */
bc_status eng_prompts_read(eng_prompts *p, const char *path, int V, bc_error *err);
void eng_prompts_free(eng_prompts *p);

typedef struct eng_rollout_params {
    int batch_size;          /* Bp prompts */
    int samples_per_prompt;  /* Sp */
    int prompt_length;       /* Tp of synthetic prompts; ignored with prompts (0 allowed only there) */
    int response_length;     /* Tr */
    eng_sampling sampling;   /* temperature, top_p, top_k, seed (rows and prompts) */
    int stop_at_eos;         /* 0: exactly Tr tokens, EOS suppressed; 1: stop at EOS */
    int shared_prefill;      /* 1: prefill each prompt once, copy its KV rows to its samples (continuous
                              * batching computes each prompt once unless private_prefix alone) */
    int private_prefix;      /* 0 (default): with Sp > 1, decode attention reads a prompt's Tp cached
                              * tokens from one row for all its samples (static: its first sample's,
                              * eng_kv_cache group/prefix; continuous: its holder's, prefix_of);
                              * 1: every row reads its own copy */
    int per_iteration_stream; /* 0 (default): every generate draws the same stream (rows' generators from
                               * seed); 1: generate i mixes i (eng_rollout.iteration) into the seed */
    const eng_prompts *prompts; /* NULL: synthetic prompts; else borrowed for eng_rollout_init */
    eng_length_dist lengths; /* each row's response length (lengths.h; values borrowed for eng_rollout_init);
                              * other than fixed, a row stops at its length with EOS there */
    int continuous;          /* 0: a static batch of R rows; 1: continuous batching (CPU device, continuous.c) */
    int capacity;            /* continuous: rows decoding at once (0 or > R: R) */
    int kv_paged;            /* 1: the paged KV layout (CPU device; forward.h): continuous rows take and
                              * return pages as they run; a static batch's pages are taken as its rows
                              * write and returned after the rollout (device_cpu.c) */
    int page_tokens;         /* its page, tokens (0: the smallest the system's page allows) */
} eng_rollout_params;

/* The prompts of a rollout as they will run: the padded width Tp and the
 * shortest and longest real prompt (all three equal for synthetic prompts). */
typedef struct eng_prompt_shape {
    int width, min_len, max_len;
} eng_prompt_shape;

/* Can a rollout of p run on a model of shape hp? Cheap, allocates nothing.
 * BC_ERR_INVALID for a count < 1, BC_ERR_SETTING for prompt length 0
 * without prompts, BC_ERR_INFEASIBLE when prompt + response exceed the
 * model's positions or rows x tokens is beyond what the engine indexes.
 * Fills shape (may be NULL) on success. eng_rollout_init checks the same. */
bc_status eng_rollout_check(const eng_shape *model, const eng_rollout_params *p, eng_prompt_shape *shape,
                            bc_error *err);

typedef struct eng_rollout {
    eng_rollout_params p;
    int V, pad_id, eos_id;
    int Bp, Sp, R, Tp, Tr, Stot;
    int32_t *prompt_ids;     /* [Bp, Tp] left-padded with pad_id; owned */
    uint8_t *prompt_mask;    /* [Bp, Tp] 1 real / 0 pad; owned */
    int32_t *seq;            /* [R, Stot] prompt then response; owned */
    uint8_t *mask;           /* [R, Stot] attention mask; owned */
    int32_t *prefill_ids;    /* [R, Tp] the expanded prompts, contiguous for the prefill; owned */
    int32_t *step_tokens;    /* [R] tokens fed to one decode step; owned */
    int *eos_at;             /* [R] response index of the row's EOS, -1 if none; owned */
    float *logprobs;         /* [R, Tr] the natural-log probability of each sampled token under
                              * log_softmax(logits) at temperature 1, before EOS suppression,
                              * temperature, top-k and top-p (eng_rollout_sample_row; 0 after a row's
                              * EOS); owned. Filled by the host-side sampling only (the CPU device) */
    eng_rng *rngs;           /* [R] per-row generators; owned */
    uint64_t iteration;      /* index of this generate in the case (set by the caller; per_iteration_stream) */
    double *marks;           /* [eng_rollout_n_marks(Tr)] the loop's timing marks on the CPU device; owned */
    int n_marks;             /* marks recorded in this generate */
    /* results of the last rollout */
    int prompt_min, prompt_max; /* shortest and longest real prompt (== Tp for synthetic prompts) */
    int returned_len;        /* response tokens per row actually returned */
    int response_start;      /* index in seq of the first response token (= Tp) */
    int64_t n_generated;     /* tokens produced, all rows (up to and including EOS) */
    double prefill_ms, decode_ms; /* the forwards only */
    int64_t n_decode_forwards;
    double first_token_ms;   /* start of generate to token 0 of every row sampled (prefill + sampling) */
    double *step_ms;         /* [Tr]: wall ms of decode step k = 1.. (forward + sampling) at [k - 1]; owned */
    int n_steps;             /* entries of step_ms filled (== n_decode_forwards) */
    int64_t n_prefill_tokens;/* token slots the prefill processed: prefill rows x Tp */
    int64_t n_decode_tokens; /* tokens the decode steps produced, all rows (n_generated minus token 0) */
    /* response lengths and continuous batching */
    int *row_len;            /* [R] each row's drawn response length (Tr when fixed); owned */
    int forced_lengths;      /* 1: EOS is forced at row_len (a distribution other than fixed) */
    eng_length_summary lengths_drawn; /* min, p50, p95, max of row_len */
    int Cap;                 /* continuous: rows decoding at once; 0: static */
    int max_steps;           /* entries of step_ms and step_active */
    int64_t n_padded_slots;  /* response token slots the batch held: static R x returned_len; continuous R
                              * (token 0) + the active rows of every decode step */
    int64_t n_prefill_forwards;
    double scheduler_ms;     /* continuous: choosing rows that retire and join, gathering a step's inputs */
    double cache_mgmt_ms;    /* continuous: handing cache rows to joining rows (masks, lengths) */
    int *step_active;        /* [max_steps] rows decode step k = 1.. generated for (static: the rows not
                              * finished, though every row runs) at [k - 1]; owned */
    double *row_first_ms;    /* [R] start of generate to the row's token 0; owned */
    int *row_done_step;      /* [R] decode steps run when the row finished (0: at its token 0); owned */
    /* the paged KV layout: pages (page_tokens tokens of one row, every layer
     * and head, K and V) held at the peak, their bytes, the share of their
     * token slots empty then, and the contiguous layout's bytes minus the
     * peak; contiguous: pages -1, bytes the cache's, fragmentation NaN, 0 */
    int64_t kv_pages_peak, kv_bytes_peak, kv_bytes_saved;
    double kv_fragmentation;
    int *slot_row;           /* continuous: [Cap] the row a cache row holds (-1 free); owned */
    int *slot_len;           /* [Cap] its cached tokens; owned */
    int *batch_slot, *batch_len; /* [Cap] one forward's rows: cache row and length; owned */
    uint8_t *batch_mask;     /* [Cap, Stot] their masks; owned */
    int32_t *batch_ids;      /* [Cap, Tp] the tokens of one forward; owned */
    int *batch_row, *batch_k, *batch_more; /* [Cap] one sampling's rows, their response index and whether
                                            * each goes on; owned */
    /* continuous, prompt sharing (eng_rollout_prompt_sharing): a prompt's Tp
     * cached tokens and last logits are computed once and kept in the cache
     * row of one of its active rows while any is active */
    int *join_slot;          /* [Cap] the cache rows of the rows that join together; owned */
    int *batch_prefix;       /* [Cap] one decode forward's rows: the cache row of their prompt's tokens; owned */
    int *prompt_slot;        /* [Bp] the cache row holding prompt p's tokens (-1: none); owned */
    int *prompt_rows;        /* [Bp] its rows in the cache now; owned */
    /* the CPU device's cache (device_cpu.c): freed by eng_rollout_release,
     * taken back by eng_rollout_acquire; unused on other devices */
    int have_cache;
    eng_kv_cache kv;         /* R rows x Stot */
    eng_kv_cache kv_shared;  /* Bp rows x Tp (shared prefill only) */
    float *logits;           /* [R, V] (continuous: [Cap, V]); owned */
    float *logits_shared;    /* [Bp, V] (shared prefill only); owned */
    float *logits_prompt;    /* [Cap, V] continuous, prompt sharing: at cache row s, the last prompt logits
                              * of the prompt whose tokens s holds; owned */
    eng_sampler *samplers;   /* [n_samplers], one per pool thread (rows are sampled in parallel); owned */
    int n_samplers;
} eng_rollout;

/* Bytes the cache of a rollout takes (for planning and accounting). */
typedef struct eng_rollout_bytes {
    size_t kv_cache;   /* KV caches */
    size_t workspace;  /* the model's workspace + logits + the samplers' scratch */
    size_t buffers;    /* prompts, sequences, masks, generators */
} eng_rollout_bytes;

/* Checks p (eng_rollout_check) and fills ro's parameters and dimensions
 * only (V, pad, eos, Bp, Sp, R, Tp, Tr, Stot, the prompts' shortest and
 * longest), allocating nothing: enough for eng_rollout_plan and the CUDA
 * plan. */
bc_status eng_rollout_dims(eng_rollout *ro, const eng_shape *shape, const eng_rollout_params *p, bc_error *err);
/* eng_rollout_dims, then copies the prompts (or makes synthetic ones) and
 * allocates the sequence buffers; no cache yet. hp gives V, pad, eos and
 * Tmax. */
bc_status eng_rollout_init(eng_rollout *ro, const eng_shape *shape, const eng_rollout_params *p, bc_error *err);
/* The byte sizes for a model and thread count on the CPU device, before or
 * after acquire (buffers: on every device). */
eng_rollout_bytes eng_rollout_plan(const eng_rollout *ro, const eng_shape *shape, const eng_ws_needs *need, eng_dtype dtype,
                                   int n_threads);
/* 1 when the prefill runs once per prompt (shared_prefill with Sp > 1). */
int eng_rollout_shared_prefill(const eng_rollout *ro);
/* The timing marks one generate of Tr tokens records (ro->marks). */
int eng_rollout_n_marks(int Tr);
/* 1 when continuous batching computes each prompt's cached tokens and last
 * logits once for all its rows (Sp > 1 with the shared prefix or
 * shared_prefill; continuous.c). */
int eng_rollout_prompt_sharing(const eng_rollout *ro);
/* Rows a forward of the CPU cache holds: R, or Cap with continuous batching. */
int eng_rollout_cache_rows(const eng_rollout *ro);
/* Positions of the CPU cache's rows: Stot, rounded up to whole pages when paged. */
int eng_rollout_cache_positions(const eng_rollout *ro, const eng_shape *shape, eng_dtype dtype);
/* Samples row r's token k from its logits lg [V] (which it may change) with
 * smp and the row's generator: EOS suppressed unless stop_at_eos, forced at
 * the row's drawn length; a row already finished gets the pad id. Records
 * the token's log-probability (ro->logprobs: lg[token] minus the logsumexp
 * of the row as it came). Returns 1 when a token was generated, and sets
 * *running to whether the row goes on. */
int eng_rollout_sample_row(eng_rollout *ro, eng_sampler *smp, float *lg, int r, int k, int *running);
/* The results every generate starts from: rows' generators, no EOS, no
 * token, no step (the loops call it). */
void eng_rollout_results_reset(eng_rollout *ro);

/* The stages around generate (a device's, device.h). */
bc_status eng_rollout_expand(eng_rollout *ro, bc_error *err);
bc_status eng_rollout_post_process(eng_rollout *ro, bc_error *err);

/* Frees ro's buffers; a device frees its cache first (end_case; on the CPU
 * eng_rollout_release, or eng_cpu_rollout_free for both). */
void eng_rollout_free(eng_rollout *ro);

#endif
