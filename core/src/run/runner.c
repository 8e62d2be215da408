/* runner.c: bc_run, the run over its cases (see runner.h for the exact
 * protocol): the run's columns and result, preparing the instances, the
 * cases in the plan's order, each in this process (run_case.c) or a child
 * (isolation.c) or taken from the run being resumed (resume.c), and the
 * reporters' journal (fanout.c). Distribution is behind the seam (seam.h). */
#define _GNU_SOURCE
#include "runner.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agreement.h"
#include "schedule.h"
#include "eta.h"
#include "host.h"
#include "matrix.h"
#include "memcpy_bound.h"
#include "plan.h"
#include "seam.h"
#include "runner_internal.h"

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
        bc_runner_memory_unknown(&res->memory[k]);
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

/* Prepares the scorer (runner.h), when the run scores; every process's
 * starts, or none. */
static bc_status prepare_scorer(const bc_run_seam *seam, const bc_runner_backend *scorer, bc_error *err) {
    if (!scorer) return BC_OK;
    const bc_plugin *be = scorer->plugin;
    bc_status st = be->backend.prepare ? be->backend.prepare(scorer->instance, err) : BC_OK;
    st = seam->agree(seam->ctx, st, err);
    if (st == BC_OK) return BC_OK;
    char msg[sizeof err->message + 512];
    snprintf(msg, sizeof msg, "%.300s%sscorer '%s' could not start: prepare: %s", scorer->where ? scorer->where : "",
             scorer->where ? ": " : "", scorer->label ? scorer->label : be->desc->name, err->message);
    char hint[sizeof err->hint];
    memcpy(hint, err->hint, sizeof hint);
    bc_error_set(err, st, "%s", msg);
    memcpy(err->hint, hint, sizeof hint);
    return st;
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
    if ((st = prepare_backends(seam, plan, backends, err)) != BC_OK ||
        (st = prepare_scorer(seam, cfg->scorer, err)) != BC_OK) {
        free_scratch(&scratch);
        return st;
    }
    /* the bound a refit's rate is set against, once, before the first case */
    double memcpy_gb_per_s = cfg->refit != BC_RUN_REFIT_OFF ? bc_memcpy_gb_per_s(cfg->memcpy_probe_bytes, 0) : NAN;

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
    static const char *const refit_names[] = {"off", "per_rollout", "per_case"};
    run.refit = refit_names[cfg->refit >= 0 && cfg->refit <= BC_RUN_REFIT_PER_CASE ? cfg->refit : 0];
    run.memcpy_gb_per_s = memcpy_gb_per_s;
    if (!cfg->scorer) run.scorer_name = NULL, run.scorer = NULL, run.scorer_precision = NULL;
    reporter_slot *slots = scratch.slots;
    st = bc_runner_open_reporters(cfg, &run, slots, res, err);
    st = seam->agree(seam->ctx, st, err); /* a rank's reporters failed to open: no rank runs a case */
    if (st != BC_OK) {
        for (size_t r = 0; r < cfg->n_reporters; r++) /* the opened ones (another rank failed) */
            if (slots[r].inst) slots[r].r->plugin->reporter.destroy(slots[r].inst);
        free_scratch(&scratch);
        return st;
    }

    run_state rs = {.cfg = cfg, .res = res, .slots = slots, .run = &run, .plan = plan, .backends = backends,
                    .seam = seam, .order = order, .child_fd = -1, .row = scratch.row,
                    .memcpy_gb_per_s = memcpy_gb_per_s};
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
            bc_runner_mark_interrupted(cfg, res, k, "before the case started", 0, 0);
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
