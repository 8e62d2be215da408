/* rollout.h: what a worker's rollout, score and refit replies say, checked
 * before any of it reaches the host (docs/pyworkers.md, "Rollouts, scoring
 * and refit"; the style of profile.h).
 *
 * A generate reply's "rollout" is the rollout as the engine ran it, row by
 * row (batch_size x samples_per_prompt rows, row r the prompt r /
 * samples_per_prompt): each row's prompt ids (no padding: they must be the
 * prompt the host sent), its response ids, how it stopped ("eos" or
 * "length") and, when the engine keeps them, each response token's
 * natural-log probability at temperature 1. A score reply's "logprobs" is
 * the same per-token list for rows the host sent. A refit reply says the
 * bytes it moved. Every value is checked: the row count, each length
 * against the case's, every id in [0, vocab_size), every log-probability a
 * finite number <= WK_MAX_LOGPROB, byte counts integers within what the
 * model's parameters can hold. A value that fails fails the request with
 * one line naming the worker, the request, the row and the value:
 *   worker fake: score: logprobs[1][3] = 0.5 is above 0.001 (a log-probability)
 */
#ifndef WK_ROLLOUT_H
#define WK_ROLLOUT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"
#include "profile.h"

/* The largest log-probability a worker may send: 0 plus the rounding of a
 * float32 log_softmax. */
#define WK_MAX_LOGPROB 1e-3

/* One rollout, checked; every array owned (wk_rollout_free), grown as
 * needed and kept across rollouts. Row r: prompt_lengths[r] ids at
 * prompt_ids + r * prompt_stride, response_lengths[r] ids (and log-probs)
 * at response_ids + r * response_stride. */
typedef struct wk_rollout {
    int64_t rows, prompt_stride, response_stride;
    int32_t *prompt_ids;       /* [rows][prompt_stride] */
    int64_t *prompt_lengths;   /* [rows] */
    int32_t *response_ids;     /* [rows][response_stride] */
    int64_t *response_lengths; /* [rows] */
    int32_t *row_stop;         /* [rows] bc_row_stop */
    float *logprobs;           /* [rows][response_stride] */
    int has_logprobs;          /* 0: the reply had none (logprobs unset) */
    int64_t generated_tokens;  /* the response lengths summed */
    size_t cap[6];             /* the arrays' sizes, in elements (size_rollout says which) */
} wk_rollout;

void wk_rollout_free(wk_rollout *r);

/* Reads and checks generate's "rollout" (ro) for a rollout of shape sh
 * whose prompts were prompts[batch][sh->prompt_length] (row r the prompt
 * r / samples), into *out. want_logprobs: the engine said it keeps them,
 * so each row must carry them. */
bc_status wk_rollout_take(const char *engine, const json_t *ro, const wk_shape *sh, const int32_t *prompts,
                          int64_t samples, int want_logprobs, wk_rollout *out, bc_error *err);

/* The rollout of an engine that sends none (no "rollout" capability),
 * from what the host has: its prompts (as wk_rollout_take) and the checked
 * tokens ids[rows][sh->response_length] (wk_tokens_take), every row
 * BC_ROW_STOP_LENGTH (protocol 1: each row generates exactly
 * response_length tokens), no log-probabilities. */
bc_status wk_rollout_from_tokens(const char *engine, const wk_shape *sh, const int32_t *prompts, int64_t samples,
                                 const int32_t *ids, wk_rollout *out, bc_error *err);

/* Checks a list (key, in request op) of rows log-probability lists, row r
 * of lengths[r] numbers, each finite and <= WK_MAX_LOGPROB, into out[r *
 * stride + t]. */
bc_status wk_logprobs_take(const char *engine, const char *op, const char *key, const json_t *list, int64_t rows,
                           const int64_t *lengths, int64_t stride, float *out, bc_error *err);

/* What a refit reply says, checked: source_bytes and engine_bytes integers
 * in [1, max_bytes], source a word (a-z, 0-9, _, -; 1 to 31 characters)
 * copied into source[32]. */
typedef struct wk_refit {
    int64_t source_bytes, engine_bytes;
    char source[32];
} wk_refit;

/* The most bytes a refit of a model of n_parameters (-1 unknown) may move:
 * 8 bytes a parameter (float64) and 64 MiB of buffers, else 2^53. */
int64_t wk_refit_max_bytes(int64_t n_parameters);

bc_status wk_refit_take(const char *engine, const json_t *reply, int64_t max_bytes, wk_refit *out, bc_error *err);

#endif
