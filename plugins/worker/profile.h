/* profile.h: what a worker's describe and generate replies say, checked
 * before any of it reaches the host (docs/reliability.md, "Worker values").
 *
 * A worker is a program of someone else's: every number it sends is checked
 * for its type (an integer where a count is meant), for being finite and for
 * a range that follows from its meaning and from the case's shape (rows =
 * batch_size x samples_per_prompt, each generating response_length tokens of
 * a vocab_size vocabulary; every time is measured inside the request, so it
 * lies in [0, the request's round trip]). A value that fails fails the
 * request with one line naming the worker, the field and the value:
 *   worker fake: generate: profile.num_decode_forwards = 4611686018427387904 is outside [0, 16]
 * Absent or null optional fields are "not measured" (-1 or NaN).
 */
#ifndef WK_PROFILE_H
#define WK_PROFILE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"

/* The largest vocabulary a worker may describe: prompt ids are int32. */
#define WK_MAX_VOCAB ((int64_t)INT32_MAX)
/* The longest time, in ms, a profile may hold (11.6 days). */
#define WK_MAX_MS 1e9

/* The case a rollout ran, as the checks see it. */
typedef struct wk_shape {
    int64_t rows;            /* batch_size x samples_per_prompt */
    int64_t prompt_length;   /* tokens per prompt */
    int64_t response_length; /* tokens each row generates */
    int64_t vocab_size;      /* ids are in [0, vocab_size) */
    /* the rollout's response lengths summed, when the reply carried a
     * checked rollout (rollout.h): what num_generated_tokens must be; 0:
     * rows x response_length */
    int64_t generated_tokens;
} wk_shape;

/* describe's numbers: vocab_size required, the others -1 when absent. */
typedef struct wk_description {
    int64_t vocab_size, max_positions, n_parameters, n_layers, hidden_size, n_heads, ffn_size;
} wk_description;

/* Reads and checks describe's numbers from reply r. */
bc_status wk_description_take(const char *engine, const json_t *r, wk_description *out, bc_error *err);

/* One rollout's profile: counts -1 and times NaN when not measured. */
typedef struct wk_profile {
    int64_t num_generated_tokens; /* required: rows x response_length */
    int64_t num_decode_forwards, num_prefill_forwards, continuous_batch_size, peak_memory_bytes;
    double stage_ms[3];           /* prompt_expansion_ms, generation_ms, post_processing_ms */
    double engine_total_ms;       /* the three summed; NaN when one is not measured */
    double prefill_forward_ms, decode_forward_ms, first_token_ms, scheduler_overhead_ms,
        cache_management_overhead_ms;
    size_t n_steps;               /* decode_step_ms's length; 0 when absent */
} wk_profile;

/* Reads and checks generate's profile (profile, an object or not) for a
 * rollout of shape sh whose round trip took round_trip_ms. The decode step
 * times go to *steps (grown as needed, *cap its size; owned by the caller). */
bc_status wk_profile_take(const char *engine, const json_t *profile, const wk_shape *sh, double round_trip_ms,
                          wk_profile *out, double **steps, size_t *cap, bc_error *err);

/* Checks generate's tokens (a list of sh->rows rows of sh->response_length
 * ids in [0, vocab_size)) and copies them into *ids (grown as needed, *cap
 * its size in ids; owned by the caller), row-major. */
bc_status wk_tokens_take(const char *engine, const json_t *tokens, const wk_shape *sh, int32_t **ids, size_t *cap,
                         bc_error *err);

/* A value as the messages show it, into buf[n]: integers exactly, reals
 * with %.6g, anything else as compact ASCII JSON (controls escaped), cut at
 * 40 characters. */
void wk_value_text(const json_t *v, char *buf, size_t n);

#endif
