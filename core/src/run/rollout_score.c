/* rollout_score.c: the score stage's checks and arithmetic (rollout_score.h). */
#include "rollout_score.h"

#include <math.h>
#include <stddef.h>

void bc_rollout_unknown(bc_rollout_tokens *t) {
    *t = (bc_rollout_tokens){.struct_size = sizeof *t};
    t->rows = t->prompt_stride = t->response_stride = -1;
}

/* The ids of one row (n of them) are in [0, vocab) when vocab > 0. */
static bc_status check_ids(const int32_t *ids, int64_t n, int64_t vocab, int64_t r, const char *what,
                           const char *whose, bc_error *err) {
    for (int64_t t = 0; vocab > 0 && t < n; t++)
        if (ids[t] < 0 || ids[t] >= vocab)
            return bc_error_set(err, BC_ERR_INVALID, "row %lld: %s token %lld is id %d, not in [0, %lld) (%s vocabulary)",
                                (long long)r, what, (long long)t, (int)ids[t], (long long)vocab, whose);
    return BC_OK;
}

static int bad_logprob(float v) {
    return !isfinite(v) || v > BC_SCORE_LOGPROB_TOLERANCE || v < BC_SCORE_LOGPROB_FLOOR;
}

bc_status bc_rollout_check(const bc_rollout_tokens *t, const bc_case *c, int64_t vocab_size, bc_error *err) {
    const int64_t rows = (int64_t)bc_case_effective_batch(c);
    if (t->rows != rows)
        return bc_error_set(err, BC_ERR_INVALID, "rows is %lld, the case has %lld (batch %u x %u samples)",
                            (long long)t->rows, (long long)rows, c->batch_size, c->samples_per_prompt);
    const char *missing = !t->prompt_tokens      ? "prompt_tokens"
                          : !t->prompt_lengths   ? "prompt_lengths"
                          : !t->response_tokens  ? "response_tokens"
                          : !t->response_lengths ? "response_lengths"
                                                 : NULL;
    if (missing) return bc_error_set(err, BC_ERR_INVALID, "%s is NULL", missing);
    if (t->prompt_stride < 0 || t->response_stride < 0)
        return bc_error_set(err, BC_ERR_INVALID, "prompt_stride %lld, response_stride %lld: strides are >= 0",
                            (long long)t->prompt_stride, (long long)t->response_stride);
    for (int64_t r = 0; r < rows; r++) {
        const int64_t pl = t->prompt_lengths[r], rl = t->response_lengths[r];
        if (pl < 0 || pl > t->prompt_stride)
            return bc_error_set(err, BC_ERR_INVALID, "row %lld: prompt length %lld is not in [0, %lld] (its stride)",
                                (long long)r, (long long)pl, (long long)t->prompt_stride);
        if (rl < 0 || rl > t->response_stride || rl > (int64_t)c->response_length)
            return bc_error_set(err, BC_ERR_INVALID,
                                "row %lld: response length %lld is not in [0, %lld] (its stride %lld, the case's "
                                "response length %u)",
                                (long long)r, (long long)rl,
                                (long long)(t->response_stride < (int64_t)c->response_length ? t->response_stride
                                                                                             : c->response_length),
                                (long long)t->response_stride, c->response_length);
        bc_status st = check_ids(t->prompt_tokens + r * t->prompt_stride, pl, vocab_size, r, "prompt", "the model's", err);
        if (st == BC_OK)
            st = check_ids(t->response_tokens + r * t->response_stride, rl, vocab_size, r, "response", "the model's", err);
        if (st != BC_OK) return st;
        if (t->row_stop && (t->row_stop[r] < BC_ROW_STOP_UNKNOWN || t->row_stop[r] > BC_ROW_STOP_LENGTH))
            return bc_error_set(err, BC_ERR_INVALID, "row %lld: row_stop %d is none of 0 (unknown), 1 (eos), 2 (length)",
                                (long long)r, (int)t->row_stop[r]);
        for (int64_t k = 0; t->response_logprobs && k < rl; k++) {
            float v = t->response_logprobs[r * t->response_stride + k];
            if (bad_logprob(v))
                return bc_error_set(err, BC_ERR_INVALID,
                                    "row %lld: response token %lld has log-probability %g, not a finite number in [-700, 0]",
                                    (long long)r, (long long)k, (double)v);
        }
    }
    return BC_OK;
}

bc_status bc_score_check(const bc_rollout_tokens *t, const float *score_lp, int64_t scorer_vocab, bc_error *err) {
    for (int64_t r = 0; r < t->rows; r++) {
        const int64_t rl = t->response_lengths[r];
        bc_status st = check_ids(t->prompt_tokens + r * t->prompt_stride, t->prompt_lengths[r], scorer_vocab, r,
                                 "prompt", "the scorer's", err);
        if (st == BC_OK)
            st = check_ids(t->response_tokens + r * t->response_stride, rl, scorer_vocab, r, "response", "the scorer's",
                           err);
        if (st != BC_OK) return st;
        for (int64_t k = 0; k < rl; k++) {
            float v = score_lp[r * t->response_stride + k];
            if (bad_logprob(v))
                return bc_error_set(err, BC_ERR_INVALID,
                                    "row %lld: response token %lld has log-probability %g, not a finite number in [-700, 0]",
                                    (long long)r, (long long)k, (double)v);
        }
    }
    return BC_OK;
}

void bc_score_gap_compute(const bc_rollout_tokens *t, const float *score_lp, bc_score_gap *out) {
    *out = (bc_score_gap){0};
    out->gap_mean = out->gap_max = out->kl_k3 = out->ratio_min = out->ratio_mean = out->ratio_max = NAN;
    if (!t->response_logprobs || !score_lp) return;
    double sum_gap = 0, max_gap = 0, sum_k3 = 0, sum_ratio = 0, min_ratio = INFINITY, max_ratio = 0;
    int64_t n = 0;
    for (int64_t r = 0; r < t->rows; r++)
        for (int64_t k = 0; k < t->response_lengths[r]; k++) {
            const size_t at = (size_t)(r * t->response_stride + k);
            const double d = (double)score_lp[at] - (double)t->response_logprobs[at];
            const double ratio = exp(d);
            sum_gap += fabs(d);
            if (fabs(d) > max_gap) max_gap = fabs(d);
            sum_k3 += ratio - 1.0 - d;
            sum_ratio += ratio;
            if (ratio < min_ratio) min_ratio = ratio;
            if (ratio > max_ratio) max_ratio = ratio;
            n++;
        }
    out->n_tokens = n;
    if (n == 0) return;
    out->gap_mean = sum_gap / (double)n;
    out->gap_max = max_gap;
    out->kl_k3 = sum_k3 / (double)n;
    out->ratio_min = min_ratio;
    out->ratio_mean = sum_ratio / (double)n;
    out->ratio_max = max_ratio;
}

int64_t bc_rollout_scored_tokens(const bc_rollout_tokens *t) {
    int64_t n = 0;
    for (int64_t r = 0; r < t->rows; r++) n += t->prompt_lengths[r] + t->response_lengths[r];
    return n;
}

void bc_rollout_lengths_compute(const bc_rollout_tokens *t, bc_rollout_lengths *out) {
    out->mean = out->min = out->max = out->clip_ratio = NAN;
    if (t->rows <= 0 || !t->response_lengths) return;
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    int64_t clipped = 0, unknown = 0;
    for (int64_t r = 0; r < t->rows; r++) {
        const double len = (double)t->response_lengths[r];
        sum += len;
        if (len < lo) lo = len;
        if (len > hi) hi = len;
        if (t->row_stop) {
            clipped += t->row_stop[r] == BC_ROW_STOP_LENGTH;
            unknown += t->row_stop[r] == BC_ROW_STOP_UNKNOWN;
        }
    }
    out->mean = sum / (double)t->rows;
    out->min = lo;
    out->max = hi;
    if (t->row_stop && !unknown) out->clip_ratio = (double)clipped / (double)t->rows;
}
