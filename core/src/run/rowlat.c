/* rowlat.c: per-row latencies of one rollout from its schedule (rowlat.h). */
#include "rowlat.h"

#include <math.h>
#include <stdlib.h>

#include "runner.h"
#include "stats.h"

static void all_nan(bc_row_latency *out) {
    for (int i = 0; i < BC_ROWLAT_N_PCT; i++) out->ttft_ms[i] = out->tpot_ms[i] = out->e2e_ms[i] = NAN;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* p50 (interpolated), p90 and p99 (nearest rank) of v[n], sorted in place. */
static void percentiles(double *v, size_t n, double out[BC_ROWLAT_N_PCT]) {
    if (n == 0) {
        for (int i = 0; i < BC_ROWLAT_N_PCT; i++) out[i] = NAN;
        return;
    }
    qsort(v, n, sizeof *v, cmp_double);
    out[BC_ROWLAT_P50] = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    out[BC_ROWLAT_P90] = bc_stats_nearest_rank(v, n, 90);
    out[BC_ROWLAT_P99] = bc_stats_nearest_rank(v, n, 99);
}

bc_status bc_row_latency_compute(int64_t n_rows, const double *row_first_token_ms, const int32_t *row_done_step,
                                 uint32_t n_steps, const double *step_ms, double expand_ms, bc_row_latency *out,
                                 bc_error *err) {
    all_nan(out);
    if (n_rows <= 0 || !row_first_token_ms || !row_done_step || (n_steps > 0 && !step_ms) || !isfinite(expand_ms))
        return BC_OK;
    const size_t R = (size_t)n_rows;
    int same_start = 1;
    for (size_t r = 0; r < R; r++) {
        double f = row_first_token_ms[r];
        if (!isfinite(f) || f < 0 || row_done_step[r] < 0 || (uint32_t)row_done_step[r] > n_steps) return BC_OK;
        if (f != row_first_token_ms[0]) same_start = 0;
    }
    for (uint32_t k = 0; k < n_steps; k++)
        if (!isfinite(step_ms[k]) || step_ms[k] < 0) return BC_OK;
    double *ttft = malloc(R * sizeof *ttft), *e2e = malloc(R * sizeof *e2e), *tpot = malloc(R * sizeof *tpot);
    double *ends = malloc(((size_t)n_steps + 1) * sizeof *ends); /* ends[d]: ms from token 0 to step d's end */
    if (!ttft || !e2e || !tpot || !ends) {
        free(ttft), free(e2e), free(tpot), free(ends);
        return bc_error_set(err, BC_ERR_NOMEM, "row latencies: out of memory for %lld rows", (long long)n_rows);
    }
    ends[0] = 0.0;
    for (uint32_t k = 0; k < n_steps; k++) ends[k + 1] = ends[k] + step_ms[k];
    size_t n_tpot = 0;
    for (size_t r = 0; r < R; r++) {
        ttft[r] = expand_ms + row_first_token_ms[r];
        const int32_t d = row_done_step[r];
        e2e[r] = ttft[r] + ends[d];
        if (d >= 1) tpot[n_tpot++] = ends[d] / (double)d;
    }
    percentiles(ttft, R, out->ttft_ms);
    if (same_start) {
        percentiles(e2e, R, out->e2e_ms);
        percentiles(tpot, n_tpot, out->tpot_ms);
    }
    free(ttft), free(e2e), free(tpot), free(ends);
    return BC_OK;
}

bc_status bc_row_latency_fields(const bc_generation_stats *g, double expand_ms, const bc_case *c, double *row,
                                bc_error *err) {
    const double total = row[BC_FIELD_TOTAL_MS];
    if (bc_is_measured(total) && total > 0)
        row[BC_FIELD_ROWS_PER_SECOND] = (double)bc_case_effective_batch(c) / (total / 1000.0);
    if (!BC_HAS(g, bc_generation_stats, row_done_step) || g->schedule_rows <= 0) return BC_OK;
    bc_row_latency l;
    bc_status st = bc_row_latency_compute(g->schedule_rows, g->row_first_token_ms, g->row_done_step, g->n_decode_steps,
                                          g->decode_step_ms, expand_ms, &l, err);
    if (st != BC_OK) return st;
    for (int i = 0; i < BC_ROWLAT_N_PCT; i++) {
        row[BC_FIELD_ROW_TTFT_MS_P50 + i] = l.ttft_ms[i];
        row[BC_FIELD_ROW_TPOT_MS_P50 + i] = l.tpot_ms[i];
        row[BC_FIELD_ROW_E2E_MS_P50 + i] = l.e2e_ms[i];
    }
    return BC_OK;
}

void bc_row_slowest(const bc_generation_stats *g, int64_t *row, double *last_ms, int64_t *tokens) {
    *row = -1, *last_ms = NAN, *tokens = -1;
    if (!BC_HAS(g, bc_generation_stats, row_done_step) || g->schedule_rows <= 0 || !g->row_first_token_ms ||
        !g->row_done_step || (g->n_decode_steps > 0 && !g->decode_step_ms))
        return;
    const uint32_t n_steps = g->n_decode_steps;
    for (uint32_t k = 0; k < n_steps; k++)
        if (!isfinite(g->decode_step_ms[k]) || g->decode_step_ms[k] < 0) return;
    int same_start = 1;
    int64_t best = -1;
    double best_ms = -INFINITY;
    for (int64_t r = 0; r < g->schedule_rows; r++) {
        const double f = g->row_first_token_ms[r];
        const int32_t d = g->row_done_step[r];
        if (!isfinite(f) || f < 0 || d < 0 || (uint32_t)d > n_steps) return;
        if (f != g->row_first_token_ms[0]) same_start = 0;
        double end = f;
        for (int32_t k = 0; k < d; k++) end += g->decode_step_ms[k];
        if (end > best_ms) best_ms = end, best = r;
    }
    if (!same_start) return; /* decode steps are the batch's: a row's time needs a common start */
    *row = best;
    *last_ms = best_ms;
    *tokens = 1 + (int64_t)g->row_done_step[best];
}
