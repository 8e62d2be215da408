/* scorer.h: the score path of the engine (a scoring model's one forward pass
 * over each row's prompt + response, giving the log-probability of every
 * response token), and the rollout's tokens as the ABI's bc_rollout_tokens
 * hands them to a scorer (read_rollout).
 *
 * Scoring, for rows r of prompt p_r (Pl_r tokens) and response y_r (Rl_r
 * tokens): the rows are laid out as a rollout's are, prompts left-padded to
 * Pw = max Pl_r, responses after them (pads after a short response, mask 0);
 * one forward of the Pw + Rw - 1 positions (Rw = max Rl_r: the last response
 * token is never an input) with no logits, then the family's head (family.h)
 * over the M response positions of a chunk at a time: position Pw - 1 + t
 * predicts y_r[t], and logprob[r, t] = logits[y_r[t]] - logsumexp(logits),
 * the row reduced as soon as it is computed. The logits held at once are one
 * chunk, [M, V] with M = eng_score_chunk_rows, never rows x positions x V.
 */
#ifndef ENG_SCORE_H
#define ENG_SCORE_H

#include "forward.h"
#include "rollout.h"

/* The logits one head chunk holds at most (a chunk is never below 64 rows,
 * so the head's GEMM reads its weights once per 64 positions or more). */
#define ENG_SCORE_CHUNK_BYTES ((size_t)64 << 20)

/* The score path's own buffers, sized at the first score and grown when a
 * later one needs more; freed by eng_scorer_free. */
typedef struct eng_scorer {
    eng_kv_cache kv;   /* rows x Smax (prompt + response - 1) */
    int rows, Smax;    /* what the buffers hold */
    int chunk_rows;    /* M */
    int32_t *ids;      /* [rows, Smax] the laid-out tokens; owned */
    uint8_t *mask;     /* [rows, Smax]; owned */
    float *h;          /* [M, C] the chunk's gathered residual rows; owned */
    float *logits;     /* [M, V] one chunk's logits; owned */
    int *chunk_row, *chunk_t; /* [M] each chunk row's row and response index; owned */
    float *chunk_lp;   /* [M] their log-probabilities; owned */
    size_t bytes;      /* everything above, and the model's workspace when the score sized it */
    double forward_ms, head_ms; /* the last score: the forward, the head chunks with their reduction */
} eng_scorer;

/* Rows of a head chunk for vocabulary V and n positions to score. */
int eng_score_chunk_rows(int V, int64_t n_positions);

/* Bytes a score of rows rows, prompts up to Pw and responses up to Rw
 * tokens, takes on shape (the KV cache, the model's workspace, the
 * scorer's buffers). */
size_t eng_score_plan_bytes(const eng_shape *shape, const eng_ws_needs *need, eng_dtype dtype, int rows, int Pw,
                            int Rw, int n_threads);

/* Scores in (every array set; rows >= 1, prompts >= 1 token where there is
 * a response) on m, writing logprobs[r * in->response_stride + t] for t <
 * response_lengths[r]. Allocates or grows sc's buffers (BC_ERR_NOMEM), and
 * refuses rows that exceed the model's positions (BC_ERR_INFEASIBLE) or
 * hold a token outside [0, V) (BC_ERR_INVALID). */
bc_status eng_score(eng_scorer *sc, eng_model *m, const bc_rollout_tokens *in, float *logprobs, bc_error *err);
void eng_scorer_free(eng_scorer *sc);

/* The last rollout's tokens for read_rollout: prompts without padding,
 * responses, their lengths and how each row stopped, and (logprobs 1) the
 * rollout's own log-probabilities; the arrays live in t (owned, until the
 * next fill or eng_rollout_tokens_free). */
typedef struct eng_rollout_tokens {
    int32_t *prompt;      /* [R, Tp] each row's real prompt tokens, from index 0; owned */
    int64_t *prompt_len;  /* [R]; owned */
    int32_t *response;    /* [R, Tr]; owned */
    int64_t *response_len;/* [R]; owned */
    int32_t *row_stop;    /* [R] bc_row_stop; owned */
    float *logprobs;      /* [R, Tr]; owned */
    int R, Tp, Tr;
} eng_rollout_tokens;

bc_status eng_rollout_tokens_fill(eng_rollout_tokens *t, const eng_rollout *ro, int logprobs, bc_rollout_tokens *out,
                                  bc_error *err);
void eng_rollout_tokens_free(eng_rollout_tokens *t);

#endif
