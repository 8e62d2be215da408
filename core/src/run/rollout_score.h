/* rollout_score.h: the score stage's arithmetic (runner.h), apart from the hooks:
 * the checks of what read_rollout and score hand back, the logprob gap
 * between a rollout and its scorer, and the RL-named fields a rollout's
 * tokens give.
 *
 * The gap, over every response token t of every row (n tokens), with
 * lp_r the rollout engine's log-probability of the token and lp_s the
 * scorer's, d = lp_s - lp_r and ratio = exp(d):
 *   logprob_gap_mean = sum |d| / n, logprob_gap_max = max |d|
 *   kl_k3 = sum (ratio - 1 - d) / n: the k3 estimator of KL(rollout ||
 *     scorer) from samples of the rollout (>= 0 term by term)
 *   importance_ratio_min / mean / max over the tokens' ratios
 * All NaN when the rollout kept no logprobs or has no response token.
 * score_tokens_per_second = sum over rows of prompt + response length,
 * over score_ms.
 *
 * Nothing here prints, exits or allocates. */
#ifndef BENCHCTL_ROLLOUT_SCORE_H
#define BENCHCTL_ROLLOUT_SCORE_H

#include <stdint.h>

#include "benchctl/plugin.h"

/* How far above 0 a log-probability may be (rounding of a float
 * log_softmax) before it is a bad value. */
#define BC_SCORE_LOGPROB_TOLERANCE 1e-4
/* The lowest log-probability taken, nats: below it exp() of a gap between
 * two log-probabilities (the importance ratio) would overflow a double,
 * and no float softmax gives a probability that small a meaning. */
#define BC_SCORE_LOGPROB_FLOOR (-700.0)

/* The fields a bc_rollout_tokens starts from before read_rollout (-1 and
 * NULL: not given). */
void bc_rollout_unknown(bc_rollout_tokens *t);

/* Checks what read_rollout handed over for case c (rows = its effective
 * batch): every array given, lengths in [0, stride] and responses no
 * longer than the case's response_length, ids in [0, vocab_size) when
 * vocab_size > 0, row_stop values known, logprobs (when given) finite and
 * in [BC_SCORE_LOGPROB_FLOOR, BC_SCORE_LOGPROB_TOLERANCE]. The first bad value fails with a message
 * naming the row ("row 3: response length 20 is more than its stride
 * 16"); the caller prefixes the hook. */
bc_status bc_rollout_check(const bc_rollout_tokens *t, const bc_case *c, int64_t vocab_size, bc_error *err);

/* Checks the scorer's logprobs (t's layout): finite and <= the tolerance
 * for every response token; and, when scorer_vocab > 0, that every id of
 * t is below it (a scorer of another vocabulary cannot score them). */
bc_status bc_score_check(const bc_rollout_tokens *t, const float *score_lp, int64_t scorer_vocab, bc_error *err);

/* The gap of t's logprobs to score_lp (t's layout), as above. */
typedef struct bc_score_gap {
    int64_t n_tokens; /* response tokens compared */
    double gap_mean, gap_max, kl_k3, ratio_min, ratio_mean, ratio_max;
} bc_score_gap;
void bc_score_gap_compute(const bc_rollout_tokens *t, const float *score_lp, bc_score_gap *out);

/* Prompt + response tokens of every row of t. */
int64_t bc_rollout_scored_tokens(const bc_rollout_tokens *t);

/* The RL-named lengths of t: mean, min, max response length over the rows,
 * and the share of rows that stopped by BC_ROW_STOP_LENGTH (NaN when
 * row_stop is NULL or a row's stop is unknown). */
typedef struct bc_rollout_lengths {
    double mean, min, max, clip_ratio;
} bc_rollout_lengths;
void bc_rollout_lengths_compute(const bc_rollout_tokens *t, bc_rollout_lengths *out);

#endif
