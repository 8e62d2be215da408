/* runner.c: the measurement loop (see runner.h for the exact protocol):
 * a case's iterations, its stop rule and statistics, and bc_run over the
 * cases. A case in a child process is isolation.c's, the reporters, their
 * journal and the ETA fanout.c's. Times are milliseconds from the monotonic
 * clock; memory is bytes unless a name says MiB. */
#define _GNU_SOURCE
#include "runner.h"

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agreement.h"
#include "schedule.h"
#include "eta.h"
#include "rowlat.h"
#include "host.h"
#include "hostload.h"
#include "matrix.h"
#include "plan.h"
#include "seam.h"
#include "runner_internal.h"

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
};

/* Resets the process peak RSS (VmHWM). Returns 0 on success. */
static int reset_peak_rss(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return -1;
    int ok = fputs("5", f) >= 0;
    ok &= fclose(f) == 0;
    return ok ? 0 : -1;
}

/* Process peak RSS in bytes from /proc/self/status VmHWM, -1 if unknown. */
static int64_t read_peak_rss(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    int64_t kib = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) {
            long long v;
            if (sscanf(line + 6, "%lld", &v) == 1) kib = v;
            break;
        }
    fclose(f);
    return kib < 0 ? -1 : kib * 1024;
}

static void memory_unknown(bc_memory_stats *m) {
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

/* Where one iteration stopped, when it did not complete. */
typedef struct iteration_out {
    const char *hook;        /* the hook that failed, or NULL */
    int abandoned;           /* a second interrupt: stopped after a hook */
    bc_generation_stats gen; /* what generate reported */
} iteration_out;

/* The values of the declared metrics of scope that instance b (rb) gives
 * (read_metrics), into their columns of row; NaN stays. */
static bc_status declared_metrics(const bc_run_result *res, size_t b, const bc_runner_backend *rb,
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

/* One rollout of case c on instance b (rb). row (res->n_fields) gets the
 * values. On a hook error returns it, with out->hook naming the hook. */
static bc_status one_iteration(const bc_runner_config *cfg, const bc_run_result *res, size_t b,
                               const bc_runner_backend *rb, const bc_case *c, int *released, double *row,
                               iteration_out *out, bc_error *err) {
    const bc_backend_ops *ops = &rb->plugin->backend;
    void *inst = rb->instance;
    for (uint32_t f = 0; f < res->n_fields; f++) row[f] = NAN;
    out->hook = NULL;
    out->abandoned = 0;
    bc_status st;
    uint64_t t0;
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
    if ((st = bc_row_latency_fields(&out->gen, expand_ms, c, row, err)) != BC_OK) return out->hook = "generate", st;
    if ((st = declared_metrics(res, b, rb, BC_METRIC_PER_ITERATION, row, err)) != BC_OK)
        return out->hook = "read_metrics", st;
    derived_fields(row);
    return BC_OK;
}

/* Sets a case's message (owned by res). */
void bc_runner_set_message(bc_run_result *res, size_t k, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0) msg = NULL;
    va_end(ap);
    if (!msg) return; /* keeps the previous message ("" at worst) */
    free(res->messages[k]);
    res->messages[k] = msg;
    res->cases[k].message = msg;
}

/* Records what the last completed iteration said about the prompts. */
static void note_generation(bc_case_report *cr, const bc_generation_stats *g) {
    cr->returned_response_length = g->returned_response_length;
    cr->prompt_width_tokens = g->prompt_width_tokens;
    cr->prompt_min_tokens = g->prompt_min_tokens;
    cr->prompt_max_tokens = g->prompt_max_tokens;
    cr->prompt_p50_tokens = g->prompt_p50_tokens;
    cr->prompt_pad_tokens = g->prompt_pad_tokens;
}

/* The stop rule's bounds: [lo, hi] measured iterations. */
void bc_runner_iteration_bounds(const bc_runner_config *cfg, uint32_t *lo, uint32_t *hi) {
    if (cfg->max_iterations > 0) {
        *hi = cfg->max_iterations;
        *lo = cfg->min_iterations < 1 ? 1 : cfg->min_iterations > *hi ? *hi : cfg->min_iterations;
    } else {
        *lo = *hi = cfg->iterations;
    }
}

/* Marks case k skipped by an interrupt, with how far it got (hi: the most
 * measured iterations it could have run; 0 before they started). */
static void mark_interrupted(const bc_runner_config *cfg, bc_run_result *res, size_t k, const char *during,
                             uint32_t done, uint32_t hi) {
    res->cases[k].status = BC_CASE_SKIPPED;
    res->cases[k].error_code = BC_ERR_INTERRUPTED;
    res->cases[k].stop_reason = BC_STOP_INTERRUPTED;
    const char *sp = during[0] ? " " : "";
    if (hi && cfg->max_iterations > 0)
        bc_runner_set_message(res, k, "interrupted%s%s after %u measured iterations (at most %u)", sp, during, done, hi);
    else if (hi)
        bc_runner_set_message(res, k, "interrupted%s%s after %u of %u measured iterations", sp, during, done, hi);
    else
        bc_runner_set_message(res, k, "interrupted %s", during);
}

/* Why the measured iterations stop after the n-th, or BC_STOP_NONE to go on. */
static bc_stop_reason stop_rule(const bc_runner_config *cfg, uint32_t n, double rel_ci, double elapsed_ms) {
    uint32_t lo, hi;
    bc_runner_iteration_bounds(cfg, &lo, &hi);
    int adaptive = cfg->max_iterations > 0;
    if (adaptive && cfg->target_rel_ci > 0 && n >= lo && rel_ci <= cfg->target_rel_ci) return BC_STOP_STABLE;
    if (n >= hi) return adaptive ? BC_STOP_MAX_ITERATIONS : BC_STOP_FIXED;
    if (cfg->max_seconds_per_case > 0 && elapsed_ms >= cfg->max_seconds_per_case * 1000.0) return BC_STOP_MAX_SECONDS;
    return BC_STOP_NONE;
}

/* The relative CI of total_ms over case k's first n measured iterations. */
static double case_rel_ci(const bc_run_result *res, size_t k, uint32_t n) {
    bc_error err = {0};
    return bc_stats_median_rel_ci(res->cases[k].values + BC_FIELD_TOTAL_MS, n, res->n_fields, &err);
}

/* Case k's statistics and CI from its measured values. */
void bc_run_case_stats(bc_run_result *res, size_t k) {
    bc_case_report *cr = &res->cases[k];
    const size_t nf = res->n_fields;
    const double *values = res->values + k * (size_t)res->rows_per_case * nf;
    cr->total_ms_rel_ci = case_rel_ci(res, k, cr->n_iterations);
    for (size_t f = 0; f < nf; f++) {
        double *out = res->stats + (k * nf + f) * BC_N_STATS;
        bc_stats_compute(values + f, cr->n_iterations, nf, out, NULL); /* out is n = 0 on failure */
    }
}

/* Runs case k (requested index) with the backend instance. */
void bc_runner_run_case(run_state *rs, size_t k) {
    const bc_runner_config *cfg = rs->cfg;
    bc_run_result *res = rs->res;
    const bc_case *c = &cfg->cases[k];
    const size_t b = rs->plan->instance[k]; /* the plan says which instance */
    const bc_runner_backend *rb = &rs->backends[b];
    const bc_backend_ops *ops = &rb->plugin->backend;
    void *inst = rb->instance;
    bc_case_report *cr = &res->cases[k];
    const size_t nf = res->n_fields;
    double *values = res->values + k * (size_t)res->rows_per_case * nf;
    const bc_run_seam *seam = rs->seam; /* one process, or the protocol of many */
    double *row = rs->row;
    bc_error err = {0};
    iteration_out it_out = {0};
    const char *hook = NULL;
    bc_status st;
    int released = 0;
    uint32_t lo, hi;
    bc_runner_iteration_bounds(cfg, &lo, &hi);
    bc_hostload load_start, load_end;
    bc_hostload_read(&load_start);
    uint64_t t_case = bc_now_ns();

    cr->status = BC_CASE_OK;
    st = ops->begin_case(inst, c, &err);
    hook = st != BC_OK ? "begin_case" : NULL;
    seam->after_step(seam->ctx, &st, &hook, &err, cfg->stop, NULL); /* fails everywhere or nowhere */
    if (st != BC_OK) goto done;
    for (uint32_t w = 0; w < cfg->warmup; w++) {
        seam->before_iteration(seam->ctx);
        st = one_iteration(cfg, res, b, rb, c, &released, row, &it_out, &err);
        seam->after_step(seam->ctx, &st, &it_out.hook, &err, cfg->stop, NULL);
        if (st != BC_OK) {
            hook = it_out.hook;
            goto done;
        }
        if (!it_out.abandoned) bc_runner_iteration_event(rs, c, 1, w, row, ms_since(t_case), NAN);
        if (seam->stop_level(seam->ctx, cfg->stop)) {
            mark_interrupted(cfg, res, k, "during warmup", 0, 0);
            goto done;
        }
    }
    if (ops->reset_peak_memory) ops->reset_peak_memory(inst);
    int rss_reset = reset_peak_rss() == 0;
    bc_memory_stats before;
    memory_unknown(&before);
    if (ops->read_memory && (st = ops->read_memory(inst, &before, &err)) != BC_OK) {
        hook = "read_memory";
        goto done;
    }
    cr->device_free_before_bytes = before.device_free_bytes;
    for (uint32_t it = 0; it < hi; it++) {
        double *out = values + (size_t)it * nf;
        seam->before_iteration(seam->ctx); /* the processes start together, outside the timed stages */
        st = one_iteration(cfg, res, b, rb, c, &released, out, &it_out, &err);
        double elapsed = ms_since(t_case);
        double rel = st == BC_OK && has_target(cfg) ? case_rel_ci(res, k, it + 1) : NAN;
        int32_t rule = st == BC_OK ? (int32_t)stop_rule(cfg, it + 1, rel, elapsed) : BC_STOP_NONE;
        seam->after_step(seam->ctx, &st, &it_out.hook, &err, cfg->stop, &rule); /* the first process's rule */
        if (st != BC_OK) {
            hook = it_out.hook;
            goto done;
        }
        if (it_out.abandoned) { /* the other processes stop after this iteration too (stop_level) */
            for (size_t f = 0; f < nf; f++) out[f] = NAN;
            mark_interrupted(cfg, res, k, "twice (the iteration in progress was abandoned),", it, hi);
            break;
        }
        cr->n_iterations = it + 1;
        note_generation(cr, &it_out.gen);
        bc_agreement_keep(&res->tokens[k], c, &it_out.gen);
        cr->schedule = bc_schedule_keep(&res->schedules[k], &it_out.gen);
        bc_runner_iteration_event(rs, c, 0, it, out, elapsed, rel);
        cr->stop_reason = (bc_stop_reason)rule;
        if (cr->stop_reason != BC_STOP_NONE) break;
        if (seam->stop_level(seam->ctx, cfg->stop)) {
            mark_interrupted(cfg, res, k, "", it + 1, hi);
            break;
        }
    }
    if (cr->n_iterations > 0 && (st = declared_metrics(res, b, rb, BC_METRIC_PER_CASE,
                                                        values + (size_t)(cr->n_iterations - 1) * nf, &err)) != BC_OK) {
        hook = "read_metrics";
        goto done;
    }
    bc_memory_stats *after = &res->memory[k];
    if (ops->read_memory && (st = ops->read_memory(inst, after, &err)) != BC_OK) {
        hook = "read_memory";
        goto done;
    }
    cr->device_free_after_bytes = after->device_free_bytes;
    cr->held_between_rollouts_bytes = after->resident_bytes;
    if (after->device_peak_bytes >= 0)
        cr->peak_memory_mib = (double)after->device_peak_bytes / (1024.0 * 1024.0);
    else if (after->host_peak_bytes >= 0)
        cr->peak_memory_mib = (double)after->host_peak_bytes / (1024.0 * 1024.0);
    cr->peak_rss_bytes = rss_reset ? read_peak_rss() : -1;
    st = BC_OK;
done:
    if (st != BC_OK && hook) {
        cr->status = BC_CASE_FAILED;
        cr->error_code = st;
        cr->stop_reason = BC_STOP_FAILED;
        bc_runner_set_message(res, k, "%s: %s", hook, err.message[0] ? err.message : "failed");
    }
    ops->end_case(inst);
    cr->wall_ms = ms_since(t_case);
    bc_hostload_read(&load_end);
    cr->load_avg_start = load_start.load_avg_1m;
    cr->load_avg_end = load_end.load_avg_1m;
    cr->cpu_steal_share = bc_hostload_steal_share(&load_start, &load_end);
    bc_run_case_stats(res, k);
}

static bc_status result_alloc(const bc_runner_config *cfg, bc_run_result *res, bc_error *err) {
    size_t n = cfg->n_cases;
    uint32_t lo, hi;
    bc_runner_iteration_bounds(cfg, &lo, &hi);
    res->n_cases = n;
    res->rows_per_case = hi; /* every case may run the most iterations the rule allows */
    const size_t nf = res->n_fields;
    res->cases = calloc(n ? n : 1, sizeof *res->cases);
    if (n && (size_t)hi > SIZE_MAX / sizeof(double) / nf / n)
        return bc_error_set(err, BC_ERR_NOMEM, "runner: %zu cases x %u iterations do not fit in memory", n, hi);
    res->values = calloc(n * (size_t)hi * nf + 1, sizeof *res->values);
    res->stats = calloc(n * nf * BC_N_STATS + 1, sizeof *res->stats);
    res->memory = calloc(n ? n : 1, sizeof *res->memory);
    res->messages = calloc(n ? n : 1, sizeof *res->messages);
    res->tokens = calloc(n ? n : 1, sizeof *res->tokens);
    res->schedules = calloc(n ? n : 1, sizeof *res->schedules);
    if (!res->cases || !res->values || !res->stats || !res->memory || !res->messages || !res->tokens ||
        !res->schedules)
        return bc_error_set(err, BC_ERR_NOMEM, "runner: out of memory for %zu cases", n);
    for (size_t k = 0; k < n; k++) {
        bc_case_report *cr = &res->cases[k];
        cr->struct_size = sizeof *cr;
        cr->c = &cfg->cases[k];
        cr->status = BC_CASE_SKIPPED;
        cr->error_code = BC_OK;
        cr->message = "";
        cr->values = res->values + k * (size_t)hi * nf;
        cr->stats = res->stats + k * nf * BC_N_STATS;
        cr->returned_response_length = -1;
        cr->prompt_width_tokens = cr->prompt_min_tokens = cr->prompt_max_tokens = -1;
        cr->prompt_p50_tokens = cr->prompt_pad_tokens = -1;
        cr->peak_memory_mib = NAN;
        memory_unknown(&res->memory[k]);
        cr->memory = &res->memory[k];
        cr->held_between_rollouts_bytes = -1;
        cr->peak_rss_bytes = -1;
        cr->device_free_before_bytes = cr->device_free_after_bytes = -1;
        cr->wall_ms = NAN;
        cr->stop_reason = BC_STOP_NONE;
        cr->total_ms_rel_ci = cr->load_avg_start = cr->load_avg_end = cr->cpu_steal_share = NAN;
        cr->token_agreement = NAN;
        for (size_t f = 0; f < nf; f++) {
            double *s = res->stats + (k * nf + f) * BC_N_STATS;
            s[BC_STAT_N] = 0.0;
            for (int j = 1; j < BC_N_STATS; j++) s[j] = NAN;
        }
    }
    return BC_OK;
}

/* What bc_run holds while it goes, owned here (free_scratch). */
typedef struct run_scratch {
    bc_case_report *finished; /* scratch for case_finished: the finished cases, requested order */
    unsigned char *done;      /* done[k]: case k finished */
    reporter_slot *slots;
    double *row;              /* res->n_fields: run_state's row */
    bc_plan own;              /* the plan, when the caller gave none */
} run_scratch;

static void free_scratch(run_scratch *s) {
    free(s->finished), free(s->done), free(s->slots), free(s->row);
    bc_plan_free(&s->own);
}

/* The run's scratch (rows of nf fields) and plan (plan.h): the caller's,
 * or, for one backend without one, planned here on its rebuild axes. */
static bc_status scratch_alloc(const bc_runner_config *cfg, size_t nf, run_scratch *s, const bc_plan **plan,
                               bc_error *err) {
    size_t n = cfg->n_cases;
    s->finished = calloc(n ? n : 1, sizeof *s->finished);
    s->done = calloc(n ? n : 1, 1);
    s->slots = calloc(cfg->n_reporters + 1, sizeof *s->slots);
    s->row = calloc(nf ? nf : 1, sizeof *s->row);
    if (!s->finished || !s->done || !s->slots || !s->row)
        return bc_error_set(err, BC_ERR_NOMEM, "runner: out of memory");
    *plan = cfg->plan;
    if (!*plan) {
        uint32_t axes = bc_matrix_rebuild_axes(cfg->backend->backend.rebuild_axes);
        bc_status st = bc_plan_build(&s->own, cfg->cases, n, NULL, &axes, 1, err);
        if (st != BC_OK) return st;
        *plan = &s->own;
    }
    size_t ni = cfg->n_backends ? cfg->n_backends : 1;
    if ((*plan)->n != n || (*plan)->n_instances != ni)
        return bc_error_set(err, BC_ERR_INTERNAL, "runner: the plan has %zu cases on %zu instances, the run %zu on %zu",
                            (*plan)->n, (*plan)->n_instances, n, ni);
    return BC_OK;
}

/* Prepares every instance that runs a selected case; every process starts,
 * or none. */
static bc_status prepare_backends(const bc_run_seam *seam, const bc_plan *plan, const bc_runner_backend *backends,
                                  bc_error *err) {
    for (size_t b = 0; b < plan->n_instances; b++) {
        const bc_runner_backend *rb = &backends[b];
        const bc_plugin *be = rb->plugin;
        /* an instance none of the (selected) cases runs on is not prepared */
        int runs_a_case = 0;
        for (size_t k = 0; k < plan->n && !runs_a_case; k++) runs_a_case = plan->instance[k] == b;
        if (!runs_a_case) continue;
        bc_status st = be->backend.prepare ? be->backend.prepare(rb->instance, err) : BC_OK;
        st = seam->agree(seam->ctx, st, err);
        if (st == BC_OK) continue;
        char msg[sizeof err->message + 512];
        snprintf(msg, sizeof msg, "%.300s%sbackend '%s' could not start: prepare: %s", rb->where ? rb->where : "",
                 rb->where ? ": " : "", be->desc->name, err->message);
        char hint[sizeof err->hint];
        memcpy(hint, err->hint, sizeof hint);
        bc_error_set(err, st, "%s", msg);
        memcpy(err->hint, hint, sizeof hint);
        return st;
    }
    return BC_OK;
}

/* Case k finished for every process: the reporters' journal gets it, with
 * the finished cases so far in requested order. */
static void case_done(const bc_runner_config *cfg, run_scratch *s, bc_run_report *run, bc_run_result *res, size_t k) {
    s->done[k] = 1;
    run->n_cases = 0;
    for (size_t j = 0; j < cfg->n_cases; j++)
        if (s->done[j]) s->finished[run->n_cases++] = res->cases[j];
    bc_runner_journal_case(cfg, run, s->slots, res, k);
}

/* The run's columns (fields.h): the host's fields, then each instance's
 * metric table, its descriptor's rows and then its more_metrics rows;
 * res->fields.backends[b] is instance b's (backends, n_backends of them). */
static bc_status build_fields(const bc_runner_backend *backends, size_t n_backends, bc_run_result *res,
                              bc_error *err) {
    bc_status st = bc_fields_init(&res->fields, err);
    for (size_t b = 0; st == BC_OK && b < n_backends; b++) {
        const bc_plugin *p = backends[b].plugin;
        void *inst = backends[b].instance;
        char who[160];
        snprintf(who, sizeof who, "backend '%s'", backends[b].label ? backends[b].label : p->desc->name);
        if ((st = bc_fields_begin_backend(&res->fields, err)) != BC_OK) break;
        st = bc_fields_add_rows(&res->fields, who, p->desc->metrics, p->desc->n_metrics, p->desc->metric_size, err);
        if (st == BC_OK && p->backend.more_metrics) {
            const bc_metric_desc *rows = NULL;
            uint32_t n_rows = 0, row_size = 0;
            if ((st = p->backend.more_metrics(inst, &rows, &n_rows, &row_size, err)) != BC_OK) break;
            st = bc_fields_add_rows(&res->fields, who, rows, n_rows, row_size, err);
        }
        if (st == BC_OK && res->fields.backends[b].n_rows && !p->backend.read_metrics)
            st = bc_error_set(err, BC_ERR_INVALID, "%s declares metrics but has no read_metrics hook", who);
    }
    res->n_fields = res->fields.n;
    return st;
}

bc_status bc_run(const bc_runner_config *cfg, bc_run_result *res, bc_error *err) {
    *res = (bc_run_result){0};
    const bc_run_seam *seam = cfg->seam ? cfg->seam : &bc_seam_local;
    size_t n = cfg->n_cases;
    run_scratch scratch = {0};
    const bc_plan *plan = NULL;
    /* a single backend's label is its name (build_fields) */
    const bc_runner_backend one = {.plugin = cfg->backend, .instance = cfg->backend_instance, .where = cfg->backend_where};
    const bc_runner_backend *backends = cfg->n_backends ? cfg->backends : &one;
    bc_status st = build_fields(backends, cfg->n_backends ? cfg->n_backends : 1, res, err);
    if (st == BC_OK) st = result_alloc(cfg, res, err);
    if (st == BC_OK) st = scratch_alloc(cfg, res->n_fields, &scratch, &plan, err);
    if (st != BC_OK) { /* this process alone: the others would wait for it */
        seam->abort(seam->ctx, 1, err);
        free_scratch(&scratch);
        return st;
    }
    if ((st = seam->start(seam->ctx, cfg, err)) != BC_OK) {
        free_scratch(&scratch);
        return st;
    }
    const size_t *order = plan->order;
    if ((st = prepare_backends(seam, plan, backends, err)) != BC_OK) {
        free_scratch(&scratch);
        return st;
    }

    uint32_t lo, hi;
    bc_runner_iteration_bounds(cfg, &lo, &hi);
    bc_run_report run = cfg->run;
    run.struct_size = sizeof run;
    run.iterations = hi;
    run.min_iterations = lo;
    run.max_iterations = hi;
    run.target_rel_ci = cfg->max_iterations > 0 && cfg->target_rel_ci > 0 ? cfg->target_rel_ci : NAN;
    run.max_seconds_per_case = cfg->max_seconds_per_case > 0 ? cfg->max_seconds_per_case : NAN;
    if (run.n_matrix_cases == 0) run.n_matrix_cases = (uint32_t)n;
    run.n_fields = res->n_fields;
    run.field_names = res->fields.names;
    run.field_descs = res->fields.descs;
    run.field_desc_size = sizeof *res->fields.descs;
    run.n_host_fields = BC_N_FIELDS;
    run.n_stats = BC_N_STATS;
    run.stat_names = bc_stat_names;
    run.case_report_size = sizeof(bc_case_report);
    run.n_cases = 0;
    run.cases = scratch.finished;
    run.distributed = seam->report;
    reporter_slot *slots = scratch.slots;
    bc_runner_open_reporters(cfg, &run, slots, res);

    run_state rs = {.cfg = cfg, .res = res, .slots = slots, .run = &run, .plan = plan, .backends = backends,
                    .seam = seam, .order = order, .child_fd = -1, .row = scratch.row};
    int64_t last = -1; /* the case this process handled before, -1 none yet */
    for (size_t i = 0; i < n; i++) {
        size_t k = order[i];
        const bc_case *c = &cfg->cases[k];
        int64_t here = -1; /* the case this process handled at position i */
        int ran = 0;
        if (!seam->runs(seam->ctx, i)) goto after; /* another process's case */
        here = (int64_t)k;
        if (cfg->prior && cfg->prior[k]) { /* finished by the run being resumed */
            bc_runner_adopt_prior(cfg, res, k);
            res->n_resumed++;
            last = here;
            ran = 1;
            goto after;
        }
        /* the first case run after a resumed one builds the backend's state */
        res->cases[k].rebuilt = last < 0 || (cfg->prior && cfg->prior[last]) ||
                                !bc_plan_same_group(plan, (size_t)last, k);
        res->n_rebuilds += (uint32_t)res->cases[k].rebuilt;
        last = here;
        bc_status ok = BC_OK;
        const char *no_hook = NULL;
        bc_error no_err = {0};
        seam->after_step(seam->ctx, &ok, &no_hook, &no_err, cfg->stop, NULL); /* every process runs the case, or none */
        if (seam->stop_level(seam->ctx, cfg->stop)) {
            res->interrupted = 1;
            mark_interrupted(cfg, res, k, "before the case started", 0, 0);
            res->cases[k].stop_reason = BC_STOP_NONE; /* it never ran */
            goto after;
        }
        rs.position = i;
        double eta_s = bc_runner_predict_rest_s(&rs, &rs.eta, i);
        for (size_t r = 0; r < cfg->n_reporters; r++)
            if (slots[r].open && slots[r].r->plugin->reporter.case_started)
                slots[r].r->plugin->reporter.case_started(slots[r].inst, c, (uint32_t)i, (uint32_t)n, eta_s);
        if (cfg->isolation) bc_runner_run_case_isolated(&rs, k);
        else bc_runner_run_case(&rs, k);
        if (stop_level(cfg)) res->interrupted = 1;
        const bc_case_report *cr = &res->cases[k];
        bc_eta_add(&rs.eta, bc_eta_units(&rs.eta, c), cfg->warmup, cr->n_iterations, cr->wall_ms,
                   cr->prompt_width_tokens);
        ran = 1;
    after:; /* the positions finished everywhere now go to the journal */
        size_t n_done = seam->after_case(seam->ctx, res, i, here, ran, cfg->stop);
        if (stop_level(cfg)) res->interrupted = 1;
        for (size_t j = i + 1 - n_done; j <= i && n_done; j++) case_done(cfg, &scratch, &run, res, order[j]);
    }
    for (size_t k = 0; k < n; k++) {
        if (res->cases[k].status == BC_CASE_FAILED) res->n_failed++;
        if (res->cases[k].status == BC_CASE_SKIPPED) res->n_skipped++;
    }

    /* a case and its first backend's run may sit on different processes,
     * whose tokens stay there; token_agreement stays NAN (docs/config.md) */
    if (seam->tokens_here) bc_agreement_compute(cfg->cases, n, res->tokens, res->cases);
    run.n_cases = (uint32_t)n;
    run.cases = res->cases;
    bc_runner_close_reporters(cfg, &run, slots, res);
    free_scratch(&scratch);
    return BC_OK;
}

int bc_run_exit_status(const bc_run_result *res) {
    if (res->interrupted) return 130;
    if (res->reporter_failed) return 1;
    if (res->n_failed) return 3;
    return 0;
}

void bc_run_result_free(bc_run_result *res) {
    if (res->messages)
        for (size_t k = 0; k < res->n_cases; k++) free(res->messages[k]);
    free(res->messages);
    free(res->cases);
    free(res->values);
    free(res->stats);
    free(res->memory);
    bc_agreement_free(res->tokens, res->n_cases);
    bc_schedule_free(res->schedules, res->n_cases);
    bc_fields_free(&res->fields);
    *res = (bc_run_result){0};
}

