/* run_case.c: one case of a run in this process (runner.h): its warmup
 * and measured iterations (iteration.c), the stop rule, its memory and
 * host load, and its statistics. Times are milliseconds from the monotonic
 * clock; memory is bytes unless a name says MiB. */
#define _GNU_SOURCE
#include "runner.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agreement.h"
#include "schedule.h"
#include "host.h"
#include "hostload.h"
#include "plan.h"
#include "seam.h"
#include "runner_internal.h"

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
void bc_runner_mark_interrupted(const bc_runner_config *cfg, bc_run_result *res, size_t k, const char *during,
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
    const bc_runner_backend *scorer = cfg->scorer;
    int scorer_began = 0;
    iteration_in in = {.refit = cfg->refit == BC_RUN_REFIT_PER_ROLLOUT, .scorer = scorer,
                       .memcpy_gb_per_s = rs->memcpy_gb_per_s};
    st = ops->begin_case(inst, c, &err);
    hook = st != BC_OK ? "begin_case" : NULL;
    if (st == BC_OK && scorer) { /* the scorer's case: the rollout's shape in the score precision */
        bc_case sc = *c;
        sc.precision = cfg->score_precision;
        sc.precision_ops = cfg->score_precision_ops;
        st = scorer->plugin->backend.begin_case(scorer->instance, &sc, &err);
        scorer_began = 1; /* end_case is owed even after a failed begin_case */
        hook = st != BC_OK ? "scorer begin_case" : NULL;
    }
    seam->after_step(seam->ctx, &st, &hook, &err, cfg->stop, NULL); /* fails everywhere or nowhere */
    if (st != BC_OK) goto done;
    for (uint32_t w = 0; w < cfg->warmup; w++) {
        seam->before_iteration(seam->ctx);
        st = bc_runner_one_iteration(cfg, res, b, rb, c, &in, &released, row, &it_out, &err);
        seam->after_step(seam->ctx, &st, &it_out.hook, &err, cfg->stop, NULL);
        if (st != BC_OK) {
            hook = it_out.hook;
            goto done;
        }
        if (!it_out.abandoned) bc_runner_iteration_event(rs, c, 1, w, row, ms_since(t_case), NAN);
        if (seam->stop_level(seam->ctx, cfg->stop)) {
            bc_runner_mark_interrupted(cfg, res, k, "during warmup", 0, 0);
            goto done;
        }
    }
    if (ops->reset_peak_memory) ops->reset_peak_memory(inst);
    int rss_reset = reset_peak_rss() == 0;
    bc_memory_stats before;
    bc_runner_memory_unknown(&before);
    if (ops->read_memory && (st = ops->read_memory(inst, &before, &err)) != BC_OK) {
        hook = "read_memory";
        goto done;
    }
    cr->device_free_before_bytes = before.device_free_bytes;
    for (uint32_t it = 0; it < hi; it++) {
        double *out = values + (size_t)it * nf;
        seam->before_iteration(seam->ctx); /* the processes start together, outside the timed stages */
        in.refit = cfg->refit == BC_RUN_REFIT_PER_ROLLOUT || (cfg->refit == BC_RUN_REFIT_PER_CASE && it == 0);
        st = bc_runner_one_iteration(cfg, res, b, rb, c, &in, &released, out, &it_out, &err);
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
            bc_runner_mark_interrupted(cfg, res, k, "twice (the iteration in progress was abandoned),", it, hi);
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
            bc_runner_mark_interrupted(cfg, res, k, "", it + 1, hi);
            break;
        }
    }
    if (cr->n_iterations > 0 && (st = bc_runner_declared_metrics(res, b, rb, BC_METRIC_PER_CASE,
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
    if (scorer_began) scorer->plugin->backend.end_case(scorer->instance);
    cr->wall_ms = ms_since(t_case);
    bc_hostload_read(&load_end);
    cr->load_avg_start = load_start.load_avg_1m;
    cr->load_avg_end = load_end.load_avg_1m;
    cr->cpu_steal_share = bc_hostload_steal_share(&load_start, &load_end);
    bc_run_case_stats(res, k);
}
