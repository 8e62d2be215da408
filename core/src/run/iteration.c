/* iteration.c: one iteration of a case (runner.h): the backend's hooks
 * timed, and the host's fields of the row from the times, the backend's
 * bc_generation_stats and its declared metrics; the host's field names and
 * the "unknown" values a backend's stats start from. Times are milliseconds
 * from the monotonic clock. */
#define _GNU_SOURCE
#include "runner.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <stdlib.h>

#include "host.h"
#include "rowlat.h"
#include "runner_internal.h"
#include "score.h"

const char *const bc_field_names[BC_N_FIELDS] = {
    [BC_FIELD_PROMPT_EXPANSION_MS] = "prompt_expansion_ms",
    [BC_FIELD_GENERATION_MS] = "generation_ms",
    [BC_FIELD_POST_PROCESSING_MS] = "post_processing_ms",
    [BC_FIELD_TOTAL_MS] = "total_ms",
    [BC_FIELD_TOKENS_PER_SECOND] = "tokens_per_second",
    [BC_FIELD_NUM_GENERATED_TOKENS] = "num_generated_tokens",
    [BC_FIELD_PREFILL_FORWARD_MS] = "prefill_forward_ms",
    [BC_FIELD_DECODE_FORWARD_MS] = "decode_forward_ms",
    [BC_FIELD_GENERATION_OVERHEAD_MS] = "generation_overhead_ms",
    [BC_FIELD_NUM_DECODE_FORWARDS] = "num_decode_forwards",
    [BC_FIELD_CACHE_ACQUIRE_MS] = "cache_acquire_ms",
    [BC_FIELD_CACHE_RELEASE_MS] = "cache_release_ms",
    [BC_FIELD_TIME_TO_FIRST_TOKEN_MS] = "time_to_first_token_ms",
    [BC_FIELD_DECODE_MS_PER_TOKEN_P50] = "decode_ms_per_token_p50",
    [BC_FIELD_DECODE_MS_PER_TOKEN_P95] = "decode_ms_per_token_p95",
    [BC_FIELD_PREFILL_TOKENS_PER_SECOND] = "prefill_tokens_per_second",
    [BC_FIELD_DECODE_TOKENS_PER_SECOND] = "decode_tokens_per_second",
    [BC_FIELD_ENGINE_TOTAL_MS] = "engine_total_ms",
    [BC_FIELD_PROTOCOL_OVERHEAD_MS] = "protocol_overhead_ms",
    [BC_FIELD_PADDED_TOKEN_SLOTS] = "padded_token_slots",
    [BC_FIELD_PADDING_WASTE] = "padding_waste",
    [BC_FIELD_RESPONSE_LENGTH_MIN] = "response_length_min",
    [BC_FIELD_RESPONSE_LENGTH_P50] = "response_length_p50",
    [BC_FIELD_RESPONSE_LENGTH_P95] = "response_length_p95",
    [BC_FIELD_RESPONSE_LENGTH_MAX] = "response_length_max",
    [BC_FIELD_NUM_PREFILL_FORWARDS] = "num_prefill_forwards",
    [BC_FIELD_SCHEDULER_OVERHEAD_MS] = "scheduler_overhead_ms",
    [BC_FIELD_CACHE_MANAGEMENT_OVERHEAD_MS] = "cache_management_overhead_ms",
    [BC_FIELD_ACTIVE_BATCH_SIZE] = "active_batch_size",
    [BC_FIELD_CONTINUOUS_BATCH_SIZE] = "continuous_batch_size",
    [BC_FIELD_OCCUPANCY] = "occupancy",
    [BC_FIELD_KV_PAGES_PEAK] = "kv_pages_peak",
    [BC_FIELD_KV_BYTES_PEAK] = "kv_bytes_peak",
    [BC_FIELD_KV_FRAGMENTATION] = "kv_fragmentation",
    [BC_FIELD_KV_BYTES_SAVED] = "kv_bytes_saved",
    [BC_FIELD_LORA_FUSE_MS] = "lora_fuse_ms",
    [BC_FIELD_LORA_UNFUSE_MS] = "lora_unfuse_ms",
    [BC_FIELD_ROW_TTFT_MS_P50] = "row_ttft_ms_p50",
    [BC_FIELD_ROW_TTFT_MS_P90] = "row_ttft_ms_p90",
    [BC_FIELD_ROW_TTFT_MS_P99] = "row_ttft_ms_p99",
    [BC_FIELD_ROW_TPOT_MS_P50] = "row_tpot_ms_p50",
    [BC_FIELD_ROW_TPOT_MS_P90] = "row_tpot_ms_p90",
    [BC_FIELD_ROW_TPOT_MS_P99] = "row_tpot_ms_p99",
    [BC_FIELD_ROW_E2E_MS_P50] = "row_e2e_ms_p50",
    [BC_FIELD_ROW_E2E_MS_P90] = "row_e2e_ms_p90",
    [BC_FIELD_ROW_E2E_MS_P99] = "row_e2e_ms_p99",
    [BC_FIELD_ROWS_PER_SECOND] = "rows_per_second",
    [BC_FIELD_SCORE_MS] = "score_ms",
    [BC_FIELD_SCORE_TOKENS_PER_SECOND] = "score_tokens_per_second",
    [BC_FIELD_LOGPROB_GAP_MEAN] = "logprob_gap_mean",
    [BC_FIELD_LOGPROB_GAP_MAX] = "logprob_gap_max",
    [BC_FIELD_KL_K3] = "kl_k3",
    [BC_FIELD_IMPORTANCE_RATIO_MIN] = "importance_ratio_min",
    [BC_FIELD_IMPORTANCE_RATIO_MEAN] = "importance_ratio_mean",
    [BC_FIELD_IMPORTANCE_RATIO_MAX] = "importance_ratio_max",
    [BC_FIELD_REFIT_MS] = "refit_ms",
    [BC_FIELD_REFIT_BYTES] = "refit_bytes",
    [BC_FIELD_REFIT_GB_PER_S] = "refit_gb_per_s",
    [BC_FIELD_REFIT_BOUND_SHARE] = "refit_bound_share",
    [BC_FIELD_ROLLOUT_STEP_MS] = "rollout_step_ms",
    [BC_FIELD_RL_RESPONSE_LENGTH_MEAN] = "response_length/mean",
    [BC_FIELD_RL_RESPONSE_LENGTH_MIN] = "response_length/min",
    [BC_FIELD_RL_RESPONSE_LENGTH_MAX] = "response_length/max",
    [BC_FIELD_RL_RESPONSE_LENGTH_CLIP_RATIO] = "response_length/clip_ratio",
    [BC_FIELD_RL_TIMING_PER_TOKEN_MS_GEN] = "timing_per_token_ms/gen",
    [BC_FIELD_RL_SLOWEST_ROW_GENERATION_MS] = "slowest_row/generation_ms",
    [BC_FIELD_RL_SLOWEST_ROW_RESPONSE_LENGTH] = "slowest_row/response_length",
};

void bc_runner_memory_unknown(bc_memory_stats *m) {
    *m = (bc_memory_stats){.struct_size = sizeof *m};
    m->weights_bytes = m->kv_cache_bytes = m->workspace_bytes = -1;
    m->host_peak_bytes = m->device_peak_bytes = m->device_free_bytes = m->device_total_bytes = -1;
    m->resident_bytes = -1;
}

static void generation_unknown(bc_generation_stats *g) {
    *g = (bc_generation_stats){.struct_size = sizeof *g};
    g->prefill_forward_ms = g->decode_forward_ms = g->first_token_ms = NAN;
    g->num_decode_forwards = g->num_generated_tokens = g->returned_response_length = -1;
    g->num_prefill_tokens = g->num_decode_tokens = -1;
    g->prompt_width_tokens = g->prompt_min_tokens = g->prompt_max_tokens = -1;
    g->engine_prompt_expansion_ms = g->engine_generation_ms = g->engine_post_processing_ms = NAN;
    g->token_rows = g->token_cols = g->token_stride = -1;
    g->padded_token_slots = g->num_prefill_forwards = g->continuous_batch_size = -1;
    g->response_length_min = g->response_length_p50 = g->response_length_p95 = g->response_length_max = NAN;
    g->scheduler_overhead_ms = g->cache_management_overhead_ms = g->active_batch_size = g->occupancy = NAN;
    g->kv_pages_peak = g->kv_bytes_peak = -1;
    g->kv_fragmentation = NAN;
    g->kv_bytes_saved = INT64_MIN; /* may be negative: a paged peak above the contiguous cache */
    g->lora_fuse_ms = g->lora_unfuse_ms = NAN;
    g->prompt_p50_tokens = g->prompt_pad_tokens = -1;
    g->schedule_rows = -1; /* step_active_rows, row_first_token_ms, row_done_step NULL */
}

/* The count as a field value, NaN when unknown (< 0). */
static double count_field(int64_t n) { return n >= 0 ? (double)n : NAN; }

/* count / (ms / 1000) when both are known and ms > 0, else NaN. */
static double per_second(int64_t count, double ms) {
    return count >= 0 && bc_is_measured(ms) && ms > 0 ? (double)count / (ms / 1000.0) : NAN;
}

/* The fields generate's stats give (row has the run's fields, total_ms set). */
static void fields_from_generation(const bc_generation_stats *g, double gen_ms, double expand_ms, double *row) {
    if (g->num_generated_tokens >= 0) {
        row[BC_FIELD_NUM_GENERATED_TOKENS] = (double)g->num_generated_tokens;
        row[BC_FIELD_TOKENS_PER_SECOND] = per_second(g->num_generated_tokens, gen_ms);
    }
    row[BC_FIELD_PREFILL_FORWARD_MS] = g->prefill_forward_ms;
    row[BC_FIELD_DECODE_FORWARD_MS] = g->decode_forward_ms;
    if (bc_is_measured(g->prefill_forward_ms) && bc_is_measured(g->decode_forward_ms))
        row[BC_FIELD_GENERATION_OVERHEAD_MS] = gen_ms - g->prefill_forward_ms - g->decode_forward_ms;
    if (g->num_decode_forwards >= 0) row[BC_FIELD_NUM_DECODE_FORWARDS] = (double)g->num_decode_forwards;
    if (bc_is_measured(g->first_token_ms)) row[BC_FIELD_TIME_TO_FIRST_TOKEN_MS] = expand_ms + g->first_token_ms;
    if (g->decode_step_ms && g->n_decode_steps > 0) {
        double s[BC_N_STATS];
        if (bc_stats_compute(g->decode_step_ms, g->n_decode_steps, 1, s, NULL) == BC_OK) {
            row[BC_FIELD_DECODE_MS_PER_TOKEN_P50] = s[BC_STAT_P50];
            row[BC_FIELD_DECODE_MS_PER_TOKEN_P95] = s[BC_STAT_P95];
        }
    }
    row[BC_FIELD_PREFILL_TOKENS_PER_SECOND] = per_second(g->num_prefill_tokens, g->prefill_forward_ms);
    row[BC_FIELD_DECODE_TOKENS_PER_SECOND] = per_second(g->num_decode_tokens, g->decode_forward_ms);
    row[BC_FIELD_PADDED_TOKEN_SLOTS] = count_field(g->padded_token_slots);
    row[BC_FIELD_RESPONSE_LENGTH_MIN] = g->response_length_min;
    row[BC_FIELD_RESPONSE_LENGTH_P50] = g->response_length_p50;
    row[BC_FIELD_RESPONSE_LENGTH_P95] = g->response_length_p95;
    row[BC_FIELD_RESPONSE_LENGTH_MAX] = g->response_length_max;
    row[BC_FIELD_NUM_PREFILL_FORWARDS] = count_field(g->num_prefill_forwards);
    row[BC_FIELD_SCHEDULER_OVERHEAD_MS] = g->scheduler_overhead_ms;
    row[BC_FIELD_CACHE_MANAGEMENT_OVERHEAD_MS] = g->cache_management_overhead_ms;
    row[BC_FIELD_ACTIVE_BATCH_SIZE] = g->active_batch_size;
    row[BC_FIELD_CONTINUOUS_BATCH_SIZE] = count_field(g->continuous_batch_size);
    row[BC_FIELD_OCCUPANCY] = g->occupancy;
    row[BC_FIELD_KV_PAGES_PEAK] = count_field(g->kv_pages_peak);
    row[BC_FIELD_KV_BYTES_PEAK] = count_field(g->kv_bytes_peak);
    row[BC_FIELD_KV_FRAGMENTATION] = g->kv_fragmentation;
    if (g->kv_bytes_saved != INT64_MIN) row[BC_FIELD_KV_BYTES_SAVED] = (double)g->kv_bytes_saved;
    if (bc_is_measured(g->engine_prompt_expansion_ms) && bc_is_measured(g->engine_generation_ms) &&
        bc_is_measured(g->engine_post_processing_ms))
        row[BC_FIELD_ENGINE_TOTAL_MS] = g->engine_prompt_expansion_ms + g->engine_generation_ms +
                                        g->engine_post_processing_ms;
    row[BC_FIELD_LORA_FUSE_MS] = g->lora_fuse_ms;
    row[BC_FIELD_LORA_UNFUSE_MS] = g->lora_unfuse_ms;
}

/* The fields the host derives from others of the row, once the backend's
 * figures (bc_generation_stats and declared metrics) are in. */
static void derived_fields(double *row) {
    double slots = row[BC_FIELD_PADDED_TOKEN_SLOTS], tokens = row[BC_FIELD_NUM_GENERATED_TOKENS];
    if (slots > 0 && bc_is_measured(tokens)) row[BC_FIELD_PADDING_WASTE] = 1.0 - tokens / slots;
    if (bc_is_measured(row[BC_FIELD_ENGINE_TOTAL_MS]))
        row[BC_FIELD_PROTOCOL_OVERHEAD_MS] = row[BC_FIELD_TOTAL_MS] - row[BC_FIELD_ENGINE_TOTAL_MS];
}

/* The values of the declared metrics of scope that instance b (rb) gives
 * (read_metrics), into their columns of row; NaN stays. */
bc_status bc_runner_declared_metrics(const bc_run_result *res, size_t b, const bc_runner_backend *rb,
                                            bc_metric_scope scope, double *row, bc_error *err) {
    const bc_fields_backend *fb = &res->fields.backends[b];
    if (fb->n_rows == 0) return BC_OK;
    double v[BC_METRICS_MAX_PER_BACKEND];
    for (uint32_t i = 0; i < fb->n_rows; i++) v[i] = NAN;
    bc_status st = rb->plugin->backend.read_metrics(rb->instance, scope, v, fb->n_rows, err);
    if (st != BC_OK) return st;
    for (uint32_t i = 0; i < fb->n_rows; i++) {
        if (fb->scope[i] != scope || isnan(v[i])) continue;
        if (!isfinite(v[i]))
            return bc_error_set(err, BC_ERR_INVALID, "metric '%s' is %g, not a finite number",
                                res->fields.names[fb->column[i]], v[i]);
        row[fb->column[i]] = v[i];
    }
    return BC_OK;
}

/* The refit hook, timed, into row's refit fields. */
static bc_status refit_fields(const bc_backend_ops *ops, void *inst, double memcpy_gb_per_s, double *row,
                              bc_error *err) {
    bc_refit_stats rs = {.struct_size = sizeof rs, .source_bytes = -1, .engine_bytes = -1, .source = NULL};
    uint64_t t0 = bc_now_ns();
    bc_status st = ops->refit(inst, &rs, err);
    double ms = ms_since(t0);
    if (st != BC_OK) return st;
    if (rs.source_bytes < -1 || rs.engine_bytes < -1)
        return bc_error_set(err, BC_ERR_INVALID, "source_bytes %lld, engine_bytes %lld: a byte count is >= 0 (-1: unknown)",
                            (long long)rs.source_bytes, (long long)rs.engine_bytes);
    row[BC_FIELD_REFIT_MS] = ms;
    if (rs.source_bytes >= 0) {
        row[BC_FIELD_REFIT_BYTES] = (double)rs.source_bytes;
        if (ms > 0) row[BC_FIELD_REFIT_GB_PER_S] = (double)rs.source_bytes / 1e9 / (ms / 1000.0);
        if (bc_is_measured(row[BC_FIELD_REFIT_GB_PER_S]) && bc_is_measured(memcpy_gb_per_s) && memcpy_gb_per_s > 0)
            row[BC_FIELD_REFIT_BOUND_SHARE] = row[BC_FIELD_REFIT_GB_PER_S] / memcpy_gb_per_s;
    }
    return BC_OK;
}

/* The RL-named length fields from the rollout's tokens. */
static void rollout_length_fields(const bc_rollout_tokens *t, double *row) {
    bc_rollout_lengths l;
    bc_rollout_lengths_compute(t, &l);
    row[BC_FIELD_RL_RESPONSE_LENGTH_MEAN] = l.mean;
    row[BC_FIELD_RL_RESPONSE_LENGTH_MIN] = l.min;
    row[BC_FIELD_RL_RESPONSE_LENGTH_MAX] = l.max;
    row[BC_FIELD_RL_RESPONSE_LENGTH_CLIP_RATIO] = l.clip_ratio;
}

/* The scorer's score hook over t, timed, into row's score fields. */
static bc_status score_fields(const bc_runner_backend *scorer, const bc_rollout_tokens *t, double *row,
                              bc_error *err) {
    const size_t n = (size_t)t->rows * (size_t)t->response_stride;
    float *lp = malloc((n ? n : 1) * sizeof *lp); /* owned here; filled by the scorer */
    if (!lp) return bc_error_set(err, BC_ERR_NOMEM, "out of memory for %zu log-probabilities", n);
    for (size_t i = 0; i < n; i++) lp[i] = NAN;
    uint64_t t0 = bc_now_ns();
    bc_status st = scorer->plugin->backend.score(scorer->instance, t, lp, err);
    double ms = ms_since(t0);
    int64_t vocab = scorer->info ? scorer->info->vocab_size : -1;
    if (st == BC_OK) st = bc_score_check(t, lp, vocab, err);
    if (st == BC_OK) {
        row[BC_FIELD_SCORE_MS] = ms;
        int64_t tokens = bc_rollout_scored_tokens(t);
        if (ms > 0) row[BC_FIELD_SCORE_TOKENS_PER_SECOND] = (double)tokens / (ms / 1000.0);
        bc_score_gap g;
        bc_score_gap_compute(t, lp, &g);
        row[BC_FIELD_LOGPROB_GAP_MEAN] = g.gap_mean;
        row[BC_FIELD_LOGPROB_GAP_MAX] = g.gap_max;
        row[BC_FIELD_KL_K3] = g.kl_k3;
        row[BC_FIELD_IMPORTANCE_RATIO_MIN] = g.ratio_min;
        row[BC_FIELD_IMPORTANCE_RATIO_MEAN] = g.ratio_mean;
        row[BC_FIELD_IMPORTANCE_RATIO_MAX] = g.ratio_max;
    }
    free(lp);
    return st;
}

/* The RL-named fields bc_generation_stats and the schedule give (those
 * read_rollout gave stay). */
static void rl_fields_from_generation(const bc_generation_stats *g, const bc_case *c, double gen_ms, double *row) {
    const int64_t rows = (int64_t)bc_case_effective_batch(c);
    if (isnan(row[BC_FIELD_RL_RESPONSE_LENGTH_MEAN])) {
        if (g->num_generated_tokens >= 0 && rows > 0)
            row[BC_FIELD_RL_RESPONSE_LENGTH_MEAN] = (double)g->num_generated_tokens / (double)rows;
        row[BC_FIELD_RL_RESPONSE_LENGTH_MIN] = g->response_length_min;
        row[BC_FIELD_RL_RESPONSE_LENGTH_MAX] = g->response_length_max;
    }
    if (g->num_generated_tokens > 0) row[BC_FIELD_RL_TIMING_PER_TOKEN_MS_GEN] = gen_ms / (double)g->num_generated_tokens;
    int64_t slow = -1, tokens = -1;
    double last_ms = NAN;
    bc_row_slowest(g, &slow, &last_ms, &tokens);
    if (slow >= 0) {
        row[BC_FIELD_RL_SLOWEST_ROW_GENERATION_MS] = last_ms;
        row[BC_FIELD_RL_SLOWEST_ROW_RESPONSE_LENGTH] = (double)tokens;
    }
}

/* One rollout of case c on instance b (rb), with in's refit and scorer.
 * row (res->n_fields) gets the values. On a hook error returns it, with
 * out->hook naming the hook. */
bc_status bc_runner_one_iteration(const bc_runner_config *cfg, const bc_run_result *res, size_t b,
                                  const bc_runner_backend *rb, const bc_case *c, const iteration_in *in, int *released,
                                  double *row, iteration_out *out, bc_error *err) {
    const bc_backend_ops *ops = &rb->plugin->backend;
    void *inst = rb->instance;
    for (uint32_t f = 0; f < res->n_fields; f++) row[f] = NAN;
    out->hook = NULL;
    out->abandoned = 0;
    bc_status st;
    uint64_t t0;
    if (in->refit) {
        if (!ops->refit) return out->hook = "refit", bc_error_set(err, BC_ERR_UNSUPPORTED, "the backend has no refit hook");
        if ((st = refit_fields(ops, inst, in->memcpy_gb_per_s, row, err)) != BC_OK) return out->hook = "refit", st;
        if (stop_level(cfg) >= 2) return out->abandoned = 1, BC_OK;
    }
    if (*released && ops->cache_acquire) {
        t0 = bc_now_ns();
        if ((st = ops->cache_acquire(inst, err)) != BC_OK) return out->hook = "cache_acquire", st;
        row[BC_FIELD_CACHE_ACQUIRE_MS] = ms_since(t0);
        *released = 0;
    }
    t0 = bc_now_ns();
    if ((st = ops->expand_prompts(inst, err)) != BC_OK) return out->hook = "expand_prompts", st;
    double expand_ms = ms_since(t0);
    if (stop_level(cfg) >= 2) return out->abandoned = 1, BC_OK;

    generation_unknown(&out->gen);
    t0 = bc_now_ns();
    if ((st = ops->generate(inst, &out->gen, err)) != BC_OK) return out->hook = "generate", st;
    double gen_ms = ms_since(t0);
    if (stop_level(cfg) >= 2) return out->abandoned = 1, BC_OK;

    t0 = bc_now_ns();
    if ((st = ops->post_process(inst, err)) != BC_OK) return out->hook = "post_process", st;
    double post_ms = ms_since(t0);

    /* the rollout's tokens, valid until the backend's next hook: scored
     * before the cache policy's release */
    if (ops->read_rollout) {
        bc_rollout_tokens t;
        bc_rollout_unknown(&t);
        if ((st = ops->read_rollout(inst, &t, err)) != BC_OK) return out->hook = "read_rollout", st;
        int64_t vocab = rb->info ? rb->info->vocab_size : -1;
        if ((st = bc_rollout_check(&t, c, vocab, err)) != BC_OK) return out->hook = "read_rollout", st;
        rollout_length_fields(&t, row);
        if (in->scorer && (st = score_fields(in->scorer, &t, row, err)) != BC_OK) return out->hook = "score", st;
        if (stop_level(cfg) >= 2) return out->abandoned = 1, BC_OK;
    } else if (in->scorer) {
        return out->hook = "read_rollout",
               bc_error_set(err, BC_ERR_UNSUPPORTED, "the backend has no read_rollout hook: nothing to score");
    }

    if (c->release_cache && ops->cache_release) {
        t0 = bc_now_ns();
        if ((st = ops->cache_release(inst, err)) != BC_OK) return out->hook = "cache_release", st;
        row[BC_FIELD_CACHE_RELEASE_MS] = ms_since(t0);
        *released = 1;
    }

    row[BC_FIELD_PROMPT_EXPANSION_MS] = expand_ms;
    row[BC_FIELD_GENERATION_MS] = gen_ms;
    row[BC_FIELD_POST_PROCESSING_MS] = post_ms;
    row[BC_FIELD_TOTAL_MS] = expand_ms + gen_ms + post_ms;
    fields_from_generation(&out->gen, gen_ms, expand_ms, row);
    rl_fields_from_generation(&out->gen, c, gen_ms, row);
    if (in->scorer || cfg->refit != BC_RUN_REFIT_OFF) {
        double step = row[BC_FIELD_TOTAL_MS];
        if (bc_is_measured(row[BC_FIELD_REFIT_MS])) step += row[BC_FIELD_REFIT_MS];
        if (in->scorer) step += row[BC_FIELD_SCORE_MS];
        row[BC_FIELD_ROLLOUT_STEP_MS] = step;
    }
    if ((st = bc_row_latency_fields(&out->gen, expand_ms, c, row, err)) != BC_OK) return out->hook = "generate", st;
    if ((st = bc_runner_declared_metrics(res, b, rb, BC_METRIC_PER_ITERATION, row, err)) != BC_OK)
        return out->hook = "read_metrics", st;
    derived_fields(row);
    return BC_OK;
}
