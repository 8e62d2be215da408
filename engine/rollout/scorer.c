/* scorer.c: the score path (scorer.h): one forward over every row's prompt +
 * response on the CPU model, the family's head over chunks of response
 * positions, each chunk's rows reduced to the log-probability of their
 * token on the model's pool; and the rollout's tokens for read_rollout.
 */
#define _POSIX_C_SOURCE 200809L
#include "scorer.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "family.h"
#include "kernels.h"

int eng_score_chunk_rows(int V, int64_t n_positions) {
    int64_t m = (int64_t)(ENG_SCORE_CHUNK_BYTES / ((size_t)(V > 0 ? V : 1) * sizeof(float)));
    if (m < 64) m = 64;
    if (m > n_positions) m = n_positions;
    return m < 1 ? 1 : (int)m;
}

/* The buffers' bytes besides the KV cache and the model's workspace. */
static size_t buffer_bytes(int rows, int Smax, int M, int C, int V) {
    return (size_t)rows * Smax * (sizeof(int32_t) + 1) + (size_t)M * ((size_t)C + V) * sizeof(float) +
           (size_t)M * (2 * sizeof(int) + sizeof(float));
}

size_t eng_score_plan_bytes(const eng_shape *shape, const eng_ws_needs *need, eng_dtype dtype, int rows, int Pw,
                            int Rw, int n_threads) {
    if (rows < 1 || Rw < 1) return 0;
    const int S = Pw + Rw - 1;
    const int M = eng_score_chunk_rows(shape->vocab_size, (int64_t)rows * Rw);
    return eng_kv_cache_bytes(shape, eng_kv_dtype(dtype), rows, S) +
           eng_workspace_bytes(shape, need, rows * S, S, n_threads) +
           buffer_bytes(rows, S, M, shape->hidden_size, shape->vocab_size);
}

void eng_scorer_free(eng_scorer *sc) {
    if (!sc) return;
    eng_kv_cache_free(&sc->kv);
    free(sc->ids);
    free(sc->mask);
    free(sc->h);
    free(sc->logits);
    free(sc->chunk_row);
    free(sc->chunk_t);
    free(sc->chunk_lp);
    memset(sc, 0, sizeof *sc);
}

/* Buffers for rows x S positions and chunks of M rows (kept when they hold it). */
static bc_status scorer_size(eng_scorer *sc, const eng_model *m, int rows, int S, int M, bc_error *err) {
    const eng_shape *sh = &m->w->shape;
    const eng_dtype kv_dt = eng_kv_dtype(m->w->dtype);
    if (sc->ids && sc->rows == rows && sc->Smax >= S && sc->chunk_rows >= M && sc->kv.dtype == kv_dt &&
        sc->kv.L == sh->n_layers && sc->kv.Hkv == sh->n_kv_heads && sc->kv.D == sh->head_dim)
        return BC_OK;
    eng_scorer_free(sc);
    bc_status st = eng_kv_cache_alloc(&sc->kv, sh, kv_dt, rows, S, err);
    if (st != BC_OK) return st;
    sc->ids = malloc((size_t)rows * S * sizeof *sc->ids);
    sc->mask = malloc((size_t)rows * S);
    sc->h = malloc((size_t)M * sh->hidden_size * sizeof *sc->h);
    sc->logits = malloc((size_t)M * sh->vocab_size * sizeof *sc->logits);
    sc->chunk_row = malloc((size_t)M * sizeof *sc->chunk_row);
    sc->chunk_t = malloc((size_t)M * sizeof *sc->chunk_t);
    sc->chunk_lp = malloc((size_t)M * sizeof *sc->chunk_lp);
    if (!sc->ids || !sc->mask || !sc->h || !sc->logits || !sc->chunk_row || !sc->chunk_t || !sc->chunk_lp) {
        eng_scorer_free(sc);
        return bc_error_set(err, BC_ERR_NOMEM, "score: no memory for %d rows x %d positions (chunks of %d x %d logits)",
                            rows, S, M, sh->vocab_size);
    }
    sc->rows = rows;
    sc->Smax = S;
    sc->chunk_rows = M;
    sc->bytes = sc->kv.bytes + buffer_bytes(rows, S, M, sh->hidden_size, sh->vocab_size);
    return BC_OK;
}

/* One chunk's reduction on the pool: chunk row i's token log-probability. */
typedef struct reduce_job {
    const eng_scorer *sc;
    const bc_rollout_tokens *in;
    int n, V;
} reduce_job;

static void reduce_worker(void *ctx, int i, int n) {
    const reduce_job *j = ctx;
    const int lo = (int)((long)j->n * i / n), hi = (int)((long)j->n * (i + 1) / n);
    for (int c = lo; c < hi; c++) {
        const float *lg = j->sc->logits + (size_t)c * j->V;
        const int r = j->sc->chunk_row[c], t = j->sc->chunk_t[c];
        const int32_t tok = j->in->response_tokens[(size_t)r * j->in->response_stride + t];
        j->sc->chunk_lp[c] = lg[tok] - eng_logsumexp(lg, j->V);
    }
}

/* The head over the chunk's n gathered rows, then their reduction. */
static void score_chunk(eng_scorer *sc, eng_model *m, const bc_rollout_tokens *in, int n, float *logprobs) {
    const eng_shape *sh = &m->w->shape;
    m->w->family->head(m, sc->h, n, sc->logits);
    reduce_job job = {.sc = sc, .in = in, .n = n, .V = sh->vocab_size};
    if (n > 1 && eng_pool_size(m->pool) > 1) eng_pool_run(m->pool, reduce_worker, &job);
    else reduce_worker(&job, 0, 1);
    for (int c = 0; c < n; c++) logprobs[(size_t)sc->chunk_row[c] * in->response_stride + sc->chunk_t[c]] = sc->chunk_lp[c];
}

bc_status eng_score(eng_scorer *sc, eng_model *m, const bc_rollout_tokens *in, float *logprobs, bc_error *err) {
    const eng_shape *sh = &m->w->shape;
    const int V = sh->vocab_size;
    if (!in || !logprobs || !in->prompt_tokens || !in->prompt_lengths || !in->response_tokens || !in->response_lengths)
        return bc_error_set(err, BC_ERR_INVALID, "score: the rollout's tokens are missing (an array is NULL)");
    if (in->rows < 1 || in->rows > INT_MAX / 2)
        return bc_error_set(err, BC_ERR_INVALID, "score: %lld rows", (long long)in->rows);
    const int rows = (int)in->rows;
    int64_t Pw = 0, Rw = 0, n_scored = 0;
    for (int r = 0; r < rows; r++) {
        const int64_t pl = in->prompt_lengths[r], rl = in->response_lengths[r];
        if (pl < 0 || rl < 0 || pl > in->prompt_stride || rl > in->response_stride)
            return bc_error_set(err, BC_ERR_INVALID,
                                "score: row %d: prompt of %lld tokens (stride %lld), response of %lld (stride %lld)", r,
                                (long long)pl, (long long)in->prompt_stride, (long long)rl,
                                (long long)in->response_stride);
        if (rl > 0 && pl < 1)
            return bc_error_set(err, BC_ERR_INVALID, "score: row %d has a response but no prompt token before it", r);
        for (int64_t t = 0; t < pl; t++) {
            const int32_t id = in->prompt_tokens[r * in->prompt_stride + t];
            if (id < 0 || id >= V)
                return bc_error_set(err, BC_ERR_INVALID, "score: row %d: prompt token %d outside [0, %d)", r, id, V);
        }
        for (int64_t t = 0; t < rl; t++) {
            const int32_t id = in->response_tokens[r * in->response_stride + t];
            if (id < 0 || id >= V)
                return bc_error_set(err, BC_ERR_INVALID, "score: row %d: response token %d outside [0, %d)", r, id, V);
        }
        if (pl > Pw) Pw = pl;
        if (rl > Rw) Rw = rl;
        n_scored += rl;
    }
    sc->forward_ms = sc->head_ms = 0.0;
    if (Rw == 0) return BC_OK; /* nothing to score */
    if (Pw + Rw - 1 > sh->max_positions)
        return bc_error_set(err, BC_ERR_INFEASIBLE,
                            "score: prompt of %lld tokens + response of %lld tokens exceed %s's %d positions",
                            (long long)Pw, (long long)Rw, sh->name, sh->max_positions);
    const int S = (int)(Pw + Rw - 1);
    if ((int64_t)rows * S > INT_MAX / 2)
        return bc_error_set(err, BC_ERR_INFEASIBLE, "score: %d rows x %d positions is too large", rows, S);
    const int M = eng_score_chunk_rows(V, n_scored);
    bc_status st = scorer_size(sc, m, rows, S, M, err);
    if (st != BC_OK) return st;

    /* the rollout's layout: prompt left-padded to Pw, the response after it */
    const int32_t pad = sh->pad_token_id >= 0 && sh->pad_token_id < V ? sh->pad_token_id : 0;
    for (int r = 0; r < rows; r++) {
        int32_t *ids = sc->ids + (size_t)r * S;
        uint8_t *mk = sc->mask + (size_t)r * S;
        const int pl = (int)in->prompt_lengths[r], rl = (int)in->response_lengths[r], lead = (int)Pw - pl;
        for (int s = 0; s < S; s++) ids[s] = pad, mk[s] = 0;
        for (int s = 0; s < pl; s++) ids[lead + s] = in->prompt_tokens[r * in->prompt_stride + s], mk[lead + s] = 1;
        for (int t = 0; t < rl && Pw + t < S; t++)
            ids[Pw + t] = in->response_tokens[r * in->response_stride + t], mk[Pw + t] = 1;
    }
    sc->kv.len = 0;
    double t0 = eng_now_ms();
    st = eng_forward(m, &sc->kv, sc->ids, sc->mask, S, rows, S, ENG_LOGITS_NONE, NULL, err);
    if (st != BC_OK) return st;
    const double t1 = eng_now_ms();
    sc->forward_ms = t1 - t0;

    /* position Pw - 1 + t of row r predicts response token t */
    const int C = sh->hidden_size;
    int n = 0;
    for (int r = 0; r < rows; r++)
        for (int t = 0; t < (int)in->response_lengths[r]; t++) {
            memcpy(sc->h + (size_t)n * C, m->ws.x + ((size_t)r * S + (size_t)(Pw - 1 + t)) * C, (size_t)C * sizeof(float));
            sc->chunk_row[n] = r;
            sc->chunk_t[n] = t;
            if (++n == M) {
                score_chunk(sc, m, in, n, logprobs);
                n = 0;
            }
        }
    if (n > 0) score_chunk(sc, m, in, n, logprobs);
    sc->head_ms = eng_now_ms() - t1;
    return BC_OK;
}

/* ------------------------------------------------------- rollout tokens */

void eng_rollout_tokens_free(eng_rollout_tokens *t) {
    if (!t) return;
    free(t->prompt);
    free(t->prompt_len);
    free(t->response);
    free(t->response_len);
    free(t->row_stop);
    free(t->logprobs);
    memset(t, 0, sizeof *t);
}

bc_status eng_rollout_tokens_fill(eng_rollout_tokens *t, const eng_rollout *ro, int logprobs, bc_rollout_tokens *out,
                                  bc_error *err) {
    const int R = ro->R, Tp = ro->Tp, Tr = ro->Tr > 0 ? ro->Tr : 1;
    if (!t->prompt || t->R != R || t->Tp != Tp || t->Tr != Tr) {
        eng_rollout_tokens_free(t);
        t->prompt = malloc((size_t)R * Tp * sizeof *t->prompt);
        t->prompt_len = malloc((size_t)R * sizeof *t->prompt_len);
        t->response = malloc((size_t)R * Tr * sizeof *t->response);
        t->response_len = malloc((size_t)R * sizeof *t->response_len);
        t->row_stop = malloc((size_t)R * sizeof *t->row_stop);
        t->logprobs = malloc((size_t)R * Tr * sizeof *t->logprobs);
        if (!t->prompt || !t->prompt_len || !t->response || !t->response_len || !t->row_stop || !t->logprobs) {
            eng_rollout_tokens_free(t);
            return bc_error_set(err, BC_ERR_NOMEM, "read_rollout: no memory for %d rows x %d + %d tokens", R, Tp, Tr);
        }
        t->R = R, t->Tp = Tp, t->Tr = Tr;
    }
    for (int r = 0; r < R; r++) {
        const int32_t *seq = ro->seq + (size_t)r * ro->Stot;
        const uint8_t *mk = ro->prompt_mask + (size_t)(r / ro->Sp) * Tp;
        int n = 0;
        for (int s = 0; s < Tp; s++)
            if (mk[s]) t->prompt[(size_t)r * Tp + n++] = seq[s];
        t->prompt_len[r] = n;
        const int eos = ro->eos_at[r];
        const int len = eos >= 0 ? eos + 1 : ro->returned_len;
        t->response_len[r] = len;
        t->row_stop[r] = eos >= 0 ? BC_ROW_STOP_EOS : BC_ROW_STOP_LENGTH;
        memcpy(t->response + (size_t)r * Tr, seq + Tp, (size_t)len * sizeof *t->response);
        memcpy(t->logprobs + (size_t)r * Tr, ro->logprobs + (size_t)r * ro->Tr, (size_t)len * sizeof *t->logprobs);
    }
    BC_SET(out, bc_rollout_tokens, rows, (int64_t)R);
    BC_SET(out, bc_rollout_tokens, prompt_tokens, t->prompt);
    BC_SET(out, bc_rollout_tokens, prompt_lengths, t->prompt_len);
    BC_SET(out, bc_rollout_tokens, prompt_stride, (int64_t)Tp);
    BC_SET(out, bc_rollout_tokens, response_tokens, t->response);
    BC_SET(out, bc_rollout_tokens, response_lengths, t->response_len);
    BC_SET(out, bc_rollout_tokens, response_stride, (int64_t)Tr);
    BC_SET(out, bc_rollout_tokens, row_stop, t->row_stop);
    BC_SET(out, bc_rollout_tokens, response_logprobs, logprobs ? t->logprobs : NULL);
    return BC_OK;
}
