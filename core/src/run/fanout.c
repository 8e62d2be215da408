/* fanout.c: the runner's reporters (runner.h): opened, told of every case
 * and iteration with an ETA, case_finished as the journal, closed; a
 * failing reporter is reported and the others carry on. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eta.h"
#include "runner_internal.h"

static void report_error(const bc_runner_config *cfg, bc_run_result *res, const reporter_slot *s, const char *hook,
                         const bc_error *err) {
    res->reporter_failed = 1;
    if (!cfg->on_error) return;
    const char *name = s->r->plugin->desc->name, *msg = err->message[0] ? err->message : "failed";
    char line[1400];
    snprintf(line, sizeof line, "%.500s%sreporter '%s': %s: %s", s->r->where ? s->r->where : "",
             s->r->where ? ": " : "", name, hook, msg);
    cfg->on_error(cfg->on_error_ctx, line);
}

/* Measured iterations a case not yet run is expected to take (eta.h). */
static uint32_t expected_iterations(const bc_runner_config *cfg, const bc_eta *e) {
    uint32_t lo, hi;
    bc_runner_iteration_bounds(cfg, &lo, &hi);
    return bc_eta_expected_iterations(e, lo, hi, has_target(cfg) ? lo : hi);
}

/* The modelled wall ms of case c from its start, with e (NAN without data). */
static double predict_case_ms(const bc_runner_config *cfg, const bc_eta *e, const bc_case *c) {
    double per = bc_eta_iteration_ms(e, bc_eta_units(e, c));
    double ms = per * ((double)cfg->warmup + (double)expected_iterations(cfg, e));
    if (cfg->max_seconds_per_case > 0 && ms > cfg->max_seconds_per_case * 1000.0 + per)
        ms = cfg->max_seconds_per_case * 1000.0 + per;
    return ms;
}

/* Seconds the cases at positions from..n-1 of the order should take, with e. */
double bc_runner_predict_rest_s(const run_state *rs, const bc_eta *e, size_t from) {
    double ms = 0.0;
    for (size_t i = from; i < rs->cfg->n_cases; i++) ms += predict_case_ms(rs->cfg, e, &rs->cfg->cases[rs->order[i]]);
    return ms / 1000.0;
}

/* The ETA during the running case, after warmup_done + measured_done of its
 * iterations took elapsed_ms (rel_ci: its CI so far): the case itself is a
 * point of the fit, its remaining iterations at its own pace, then the cases
 * after it. */
static double eta_running(const run_state *rs, const bc_case *c, uint32_t warmup_done, uint32_t measured_done,
                          double elapsed_ms, double rel_ci) {
    const bc_runner_config *cfg = rs->cfg;
    uint32_t done = warmup_done + measured_done, lo, hi;
    if (done == 0) return NAN;
    bc_runner_iteration_bounds(cfg, &lo, &hi);
    bc_eta e = rs->eta;
    double per = elapsed_ms / done;
    bc_eta_add_point(&e, bc_eta_units(&e, c), per);
    uint32_t expect = expected_iterations(cfg, &rs->eta);
    if (has_target(cfg))
        expect = bc_eta_iterations_to_target(measured_done, rel_ci, cfg->target_rel_ci, lo, hi, expect);
    uint32_t left = cfg->warmup - warmup_done;
    if (expect > measured_done) left += expect - measured_done;
    else if (measured_done < hi) left += 1;
    double case_ms = per * left;
    if (cfg->max_seconds_per_case > 0 && elapsed_ms + case_ms > cfg->max_seconds_per_case * 1000.0 + per)
        case_ms = cfg->max_seconds_per_case * 1000.0 + per - elapsed_ms;
    if (case_ms < 0) case_ms = 0;
    return case_ms / 1000.0 + bc_runner_predict_rest_s(rs, &e, rs->position + 1);
}

/* Tells the reporters that have iteration_finished about one iteration. */
void bc_runner_iteration_event(run_state *rs, const bc_case *c, int warmup, uint32_t iteration, const double *row,
                            double elapsed_ms, double rel_ci) {
    const bc_runner_config *cfg = rs->cfg;
    if (rs->child_fd >= 0) {
        bc_runner_child_send_event(rs->child_fd, warmup, iteration, row, rs->res->n_fields, elapsed_ms, rel_ci);
        return;
    }
    int any = 0;
    for (size_t r = 0; r < cfg->n_reporters && !any; r++) any = rs->slots[r].progress;
    if (!any) return;
    uint32_t lo, hi;
    bc_runner_iteration_bounds(cfg, &lo, &hi);
    bc_iteration_event ev = {
        .struct_size = sizeof ev, .c = c, .position = (uint32_t)rs->position, .n_cases = (uint32_t)cfg->n_cases,
        .warmup = warmup, .iteration = iteration,
        .n_min = warmup ? cfg->warmup : lo, .n_max = warmup ? cfg->warmup : hi,
        .values = row, .case_elapsed_ms = elapsed_ms, .rel_ci = rel_ci,
        .eta_s = eta_running(rs, c, warmup ? iteration + 1 : cfg->warmup, warmup ? 0 : iteration + 1, elapsed_ms,
                             rel_ci)};
    for (size_t r = 0; r < cfg->n_reporters; r++) {
        reporter_slot *s = &rs->slots[r];
        if (!s->progress) continue;
        bc_error rerr = {0};
        if (s->r->plugin->reporter.iteration_finished(s->inst, rs->run, &ev, &rerr) != BC_OK) {
            report_error(cfg, rs->res, s, "iteration_finished", &rerr);
            s->progress = 0;
        }
    }
}

bc_status bc_runner_open_reporters(const bc_runner_config *cfg, const bc_run_report *run, reporter_slot *slots,
                                   bc_run_result *res, bc_error *err) {
    for (size_t r = 0; r < cfg->n_reporters; r++) {
        reporter_slot *s = &slots[r];
        s->r = &cfg->reporters[r];
        const bc_plugin *p = s->r->plugin;
        bc_error rerr = {0};
        if (p->reporter.open(&p->host, s->r->settings, run, &s->inst, &rerr) != BC_OK) {
            report_error(cfg, res, s, "open", &rerr);
            for (size_t o = 0; o <= r; o++) { /* destroy aborts what open began; close would commit it */
                if (slots[o].inst) slots[o].r->plugin->reporter.destroy(slots[o].inst);
                slots[o].inst = NULL, slots[o].open = 0;
            }
            bc_error_set(err, rerr.code ? rerr.code : BC_ERR_IO, "%.300s%sreporter '%s' could not open: %s",
                         s->r->where ? s->r->where : "", s->r->where ? ": " : "", p->desc->name,
                         rerr.message[0] ? rerr.message : "failed");
            return bc_error_hint(err, "no case ran and no report was written");
        }
        s->open = 1;
        s->journaling = 1;
        s->progress = p->reporter.iteration_finished != NULL; /* NULL from a 2.0 plugin (loader.h) */
    }
    return BC_OK;
}

/* Tells the journaling reporters case k finished. */
void bc_runner_journal_case(const bc_runner_config *cfg, const bc_run_report *run, reporter_slot *slots,
                         bc_run_result *res, size_t k) {
    for (size_t r = 0; r < cfg->n_reporters; r++) {
        reporter_slot *s = &slots[r];
        if (!s->journaling || !s->r->plugin->reporter.case_finished) continue;
        bc_error rerr = {0};
        if (s->r->plugin->reporter.case_finished(s->inst, run, &res->cases[k], &rerr) != BC_OK) {
            report_error(cfg, res, s, "case_finished", &rerr);
            s->journaling = 0;
        }
    }
}

/* Closes and destroys every reporter. */
void bc_runner_close_reporters(const bc_runner_config *cfg, const bc_run_report *run, reporter_slot *slots,
                            bc_run_result *res) {
    for (size_t r = 0; r < cfg->n_reporters; r++) {
        reporter_slot *s = &slots[r];
        if (s->open) {
            bc_error rerr = {0};
            if (s->r->plugin->reporter.close(s->inst, run, &rerr) != BC_OK) report_error(cfg, res, s, "close", &rerr);
        }
        if (s->inst) s->r->plugin->reporter.destroy(s->inst);
    }
}

