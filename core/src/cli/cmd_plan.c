/* cmd_plan.c: `benchctl plan FILE`: the cases in execution order with their
 * memory and what their checks said; with --estimate-from RUN, the time each
 * case and the whole plan should take, from the cost model of the run's ETA
 * (eta.h) fitted on RUN's finished cases. */
#define _GNU_SOURCE

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "eta.h"
#include "plan.h"
#include "runfile.h"
#include "stats.h"

static void print_mib(int64_t bytes) {
    if (bytes < 0) printf(" %10s", "-");
    else printf(" %10.1f", (double)bytes / (1024.0 * 1024.0));
}

/* One row of the plan: the memory columns and the check. */
static void plan_memory_columns(const bc_context *ctx, size_t k, char *last_error, size_t cap) {
    const bc_case *c = &ctx->cases[k];
    const bc_case_check *chk = &ctx->checks[k];
    const bc_runner_backend *rb = bc_context_backend_of(ctx, k); /* the case's, with a backends list */
    const bc_backend_ops *ops = &rb->plugin->backend;
    bc_memory_stats m = {.struct_size = sizeof m, -1, -1, -1, -1, -1, -1, -1, -1};
    bc_error err = {0};
    if (ops->plan_memory && chk->code == BC_OK && ops->plan_memory(rb->instance, c, &m, &err) == BC_OK) {
        printf(" ");
        print_mib(m.weights_bytes);
        print_mib(m.kv_cache_bytes);
        print_mib(m.workspace_bytes);
        return;
    }
    const char *mark = ops->plan_memory ? "?" : "-";
    printf(" %11s %10s %10s", mark, mark, mark);
    if (ops->plan_memory && chk->code == BC_OK && strcmp(err.message, last_error) != 0) {
        char msg[sizeof err.message + 64];
        snprintf(msg, sizeof msg, "warning: case %u: memory unknown: %s", c->index, err.message);
        fflush(stdout);
        bc_cli_print_error(msg, NULL);
        snprintf(last_error, cap, "%s", err.message); /* printed once, not per case */
    }
}

/* The scorer (the score group), when the run has one: its name and
 * precision, and what its plan_memory says for its own case of each case
 * (the rollout's shape in the score precision), the largest one (weights +
 * KV + workspace). */
static void plan_scorer(const bc_context *ctx) {
    if (!ctx->scorer_instance) return;
    const bc_backend_ops *ops = &ctx->scorer.plugin->backend;
    printf("scorer %s (backend %s, precision %s)", ctx->scorer_label, ctx->scorer.plugin->desc->name,
           ctx->score_precision_name);
    bc_memory_stats best = {.struct_size = 0};
    int64_t best_total = -1;
    uint32_t best_case = 0;
    for (size_t k = 0; ops->plan_memory && k < ctx->n_cases; k++) {
        bc_case sc = ctx->cases[k];
        sc.precision = ctx->score_precision_name;
        sc.precision_ops = ctx->score_precision_ops;
        bc_memory_stats m = {.struct_size = sizeof m, -1, -1, -1, -1, -1, -1, -1, -1};
        bc_error err = {0};
        if (ops->plan_memory(ctx->scorer_instance, &sc, &m, &err) != BC_OK) continue;
        int64_t total = (m.weights_bytes > 0 ? m.weights_bytes : 0) + (m.kv_cache_bytes > 0 ? m.kv_cache_bytes : 0) +
                        (m.workspace_bytes > 0 ? m.workspace_bytes : 0);
        if (total > best_total) best = m, best_total = total, best_case = sc.index;
    }
    if (best_total < 0) {
        printf(": memory unknown in advance\n");
        return;
    }
    printf(": at most weights_MiB");
    print_mib(best.weights_bytes);
    printf(" kv_MiB");
    print_mib(best.kv_cache_bytes);
    printf(" work_MiB");
    print_mib(best.workspace_bytes);
    printf(" (case %u), beside the rollout backend's\n", best_case);
}

/* A case's backend settings the matrix varies, "batching=static,kv_layout=paged"
 * ("" without any); returns the length written. */
static int plan_settings_text(const bc_case *c, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < c->n_settings && used < cap; i++) {
        snprintf(buf + used, cap - used, "%s%s=%s", i ? "," : "", c->setting_names[i], c->setting_values[i]);
        used += strlen(buf + used);
    }
    return (int)used;
}

/* The cost model fitted on a finished run: one fit over all its cases
 * (fit[0]), one per backend its cases name, and one per backend (or none)
 * and precision, since a number format changes the cost of a token slot as
 * much as the size does (bf16 against fp32 on a CPU). Each fit is the
 * ETA's line (eta.h) over one iteration's cost, plus a case's own cost
 * outside its iterations (begin_case, a rebuild: wall_ms minus warmup +
 * measured iterations at their mean total_ms), averaged apart for the cases
 * that rebuilt ([1]) and the others ([0]). A case without a total_ms mean
 * counts as the ETA counts it: its wall time spread over its iterations. */
typedef struct plan_fit {
    bc_eta eta;
    double overhead_sum[2];
    size_t overhead_n[2];
} plan_fit;
enum { PLAN_MAX_FITS = 64 };
typedef struct plan_estimate {
    size_t n_fits;
    const char *backend[PLAN_MAX_FITS];   /* NULL: any; borrowed from rf */
    const char *precision[PLAN_MAX_FITS]; /* NULL: any */
    plan_fit fit[PLAN_MAX_FITS];
    size_t n_points;                      /* cases of rf fitted */
} plan_estimate;

static int same_or_both_null(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

/* The fit for (backend, precision), made when new and room is left; NULL
 * when there is none. */
static plan_fit *fit_at(plan_estimate *est, const char *backend, const char *precision, int make) {
    for (size_t f = 0; f < est->n_fits; f++)
        if (same_or_both_null(est->backend[f], backend) && same_or_both_null(est->precision[f], precision))
            return &est->fit[f];
    if (!make || est->n_fits == PLAN_MAX_FITS) return NULL;
    est->backend[est->n_fits] = backend;
    est->precision[est->n_fits] = precision;
    return &est->fit[est->n_fits++];
}

static void fit_add(plan_fit *f, double units, const bc_runfile *rf, const bc_runfile_case *rc, double iter_ms,
                    int64_t prompt) {
    const double n = (double)rf->warmup + (double)rc->n_iterations;
    if (!(isfinite(iter_ms) && iter_ms >= 0)) {
        bc_eta_add(&f->eta, units, rf->warmup, rc->n_iterations, rc->wall_ms, prompt);
        return;
    }
    bc_eta_add(&f->eta, units, rf->warmup, rc->n_iterations, iter_ms * n, prompt);
    double overhead = rc->wall_ms - iter_ms * n;
    f->overhead_sum[rc->rebuilt != 0] += overhead > 0 ? overhead : 0.0;
    f->overhead_n[rc->rebuilt != 0]++;
}

/* Adds rf's finished cases (measured iterations, a wall time) to est. */
static void estimate_fit(plan_estimate *est, const bc_runfile *rf) {
    *est = (plan_estimate){.n_fits = 1};
    const int total = bc_runfile_field(rf, "total_ms");
    for (size_t i = 0; i < rf->n_cases; i++) {
        const bc_runfile_case *rc = &rf->cases[i];
        int64_t prompt = rc->prompt_length ? (int64_t)rc->prompt_length : rc->prompt_width_tokens;
        if (rc->n_iterations == 0 || !isfinite(rc->wall_ms) || prompt < 0) continue;
        double units = (double)rc->batch_size * rc->samples_per_prompt * ((double)prompt + rc->response_length);
        double iter_ms = total >= 0 && rc->stats ? rc->stats[(size_t)total * BC_N_STATS + BC_STAT_MEAN] : NAN;
        plan_fit *into[3] = {fit_at(est, NULL, NULL, 1), rc->backend ? fit_at(est, rc->backend, NULL, 1) : NULL,
                             rc->precision ? fit_at(est, rc->backend, rc->precision, 1) : NULL};
        for (int k = 0; k < 3; k++)
            if (into[k]) fit_add(into[k], units, rf, rc, iter_ms, prompt);
        est->n_points++;
    }
}

/* The fit for case c: its backend's (by label, as the run's cases name
 * theirs) and precision's, else its backend's, else its precision's over a
 * run whose cases name no backend, else the one over all cases. */
static const plan_fit *estimate_for(plan_estimate *est, const bc_case *c) {
    const char *backend = BC_HAS(c, bc_case, backend) ? c->backend : NULL;
    const plan_fit *tries[3] = {fit_at(est, backend, c->precision, 0), backend ? fit_at(est, backend, NULL, 0) : NULL,
                                fit_at(est, NULL, c->precision, 0)};
    for (int k = 0; k < 3; k++)
        if (tries[k] && tries[k]->eta.n > 0) return tries[k];
    return &est->fit[0];
}

/* The mean cost outside the iterations of a case that rebuilds (build) or
 * not; the other kind's when the run had none of this kind, else 0. */
static double fit_overhead_ms(const plan_fit *f, int build) {
    if (f->overhead_n[build]) return f->overhead_sum[build] / (double)f->overhead_n[build];
    if (f->overhead_n[!build]) return f->overhead_sum[!build] / (double)f->overhead_n[!build];
    return 0.0;
}

/* The modelled seconds of case c as ctx would run it (build: it starts a
 * rebuild group). */
static double estimate_case_s(plan_estimate *est, const bc_context *ctx, const bc_case *c, int build) {
    const plan_fit *fit = estimate_for(est, c);
    const bc_eta *e = &fit->eta;
    uint32_t lo = ctx->cfg.iterations, hi = ctx->cfg.iterations;
    if (ctx->cfg.adaptive) {
        hi = ctx->cfg.max_iterations;
        lo = ctx->cfg.min_iterations < 1 ? 1 : ctx->cfg.min_iterations > hi ? hi : ctx->cfg.min_iterations;
    }
    uint32_t measured = bc_eta_expected_iterations(e, lo, hi, isnan(ctx->cfg.target_rel_ci) ? hi : lo);
    return (bc_eta_case_ms(e, bc_eta_units(e, c), ctx->cfg.warmup, measured, ctx->cfg.max_seconds_per_case) +
            fit_overhead_ms(fit, build)) /
           1000.0;
}

/* "1h02m03s", "2m05s", "12.3s". */
static void format_duration(double s, char *buf, size_t cap) {
    if (!isfinite(s)) snprintf(buf, cap, "?");
    else if (s < 60) snprintf(buf, cap, "%.1fs", s);
    else if (s < 3600) snprintf(buf, cap, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(buf, cap, "%dh%02dm%02ds", (int)(s / 3600), (int)fmod(s / 60, 60), (int)fmod(s, 60));
}

/* Reads and fits --estimate-from's run; prints the error and returns the
 * exit status on failure. A run of another model is a warning. */
static int estimate_open(const bc_cli_args *a, const bc_context *ctx, bc_runfile *rf, plan_estimate *est) {
    bc_error err = {0};
    if (bc_runfile_read(a->estimate_from, rf, &err) != BC_OK) {
        bc_cli_print_bc_error(&err);
        return EXIT_USAGE;
    }
    estimate_fit(est, rf);
    if (est->n_points == 0) {
        char msg[PATH_MAX + 96];
        snprintf(msg, sizeof msg, "--estimate-from %s: no case of that run measured anything", a->estimate_from);
        bc_cli_print_error(msg, "give the JSON report or journal of a run that finished some cases");
        return EXIT_USAGE;
    }
    const char *model = ctx->backend_info.model;
    if (rf->model && model && strcmp(rf->model, model) != 0) {
        char msg[1200];
        snprintf(msg, sizeof msg, "warning: --estimate-from %.400s measured model '%.300s', this plan runs '%.300s'",
                 a->estimate_from, rf->model, model);
        bc_cli_print_error(msg, NULL);
    }
    return 0;
}

int bc_cli_plan(const bc_cli_args *a) {
    bc_context ctx;
    int rc = bc_cli_open_context(&ctx, a, 1);
    if (rc) {
        bc_context_free(&ctx);
        return rc;
    }
    const bc_plan *plan = &ctx.plan; /* the order run follows */
    bc_runfile rf = {0};
    plan_estimate est = {0};
    if (a->estimate_from && (rc = estimate_open(a, &ctx, &rf, &est)) != 0) {
        bc_runfile_free(&rf);
        bc_context_free(&ctx);
        return rc;
    }
    const bc_backend_ops *ops = &ctx.backend.plugin->backend;
    char of[64], measured[160];
    if (!ctx.cfg.adaptive)
        snprintf(measured, sizeof measured, "%u measured iterations", ctx.cfg.iterations);
    else if (isnan(ctx.cfg.target_rel_ci))
        snprintf(measured, sizeof measured, "%u measured iterations", ctx.cfg.max_iterations);
    else
        snprintf(measured, sizeof measured, "%u to %u measured iterations, until the median total_ms is within +-%g%%",
                 ctx.cfg.min_iterations, ctx.cfg.max_iterations, 100.0 * ctx.cfg.target_rel_ci);
    if (!isnan(ctx.cfg.max_seconds_per_case)) {
        size_t used = strlen(measured);
        snprintf(measured + used, sizeof measured - used, ", at most %g s a case", ctx.cfg.max_seconds_per_case);
    }
    printf("%zu case%s%s in execution order (backend %s, %u warmup + %s each)\n", ctx.n_cases,
           ctx.n_cases == 1 ? "" : "s", bc_cli_selected_of(&ctx, of, sizeof of), ctx.backend.plugin->desc->name,
           ctx.cfg.warmup, measured);
    /* the backend settings the matrix varies, as "name=value,...", before the check */
    int settings_width = 0;
    for (size_t k = 0; k < ctx.n_cases; k++) {
        char text[256];
        int w = plan_settings_text(&ctx.cases[k], text, sizeof text);
        if (w > settings_width) settings_width = w;
    }
    if (settings_width && settings_width < 8) settings_width = 8;
    printf("%4s %5s %-5s %-10s %-10s %6s %7s %7s %8s %9s %11s %10s %10s", "run", "case", "state", "precision", "cache",
           "batch", "samples", "prompt", "response", "eff_batch", "weights_MiB", "kv_MiB", "work_MiB");
    if (a->estimate_from) printf(" %9s", "est_s");
    if (settings_width) printf("  %-*s", settings_width, "settings");
    printf("  %s\n", "check");
    double total_s = 0.0;
    size_t n_builds = plan->n_builds;
    char last_error[512] = "";
    for (size_t i = 0; i < plan->n; i++) {
        const bc_case *c = &ctx.cases[plan->order[i]];
        int build = plan->build[i];
        char prompt[16];
        snprintf(prompt, sizeof prompt, c->prompt_length ? "%u" : "file", c->prompt_length);
        printf("%4zu %5u %-5s %-10s %-10s %6u %7u %7s %8u %9llu", i + 1, c->index, build ? "build" : "-", c->precision,
               c->cache_policy, c->batch_size, c->samples_per_prompt, prompt, c->response_length,
               (unsigned long long)bc_case_effective_batch(c));
        const bc_case_check *chk = &ctx.checks[plan->order[i]];
        plan_memory_columns(&ctx, plan->order[i], last_error, sizeof last_error);
        if (a->estimate_from) {
            double case_s = chk->code == BC_OK ? estimate_case_s(&est, &ctx, c, build) : 0.0;
            if (chk->code == BC_OK) printf(" %9.1f", case_s);
            else printf(" %9s", "-");
            total_s += case_s;
        }
        char settings[256];
        plan_settings_text(c, settings, sizeof settings);
        if (settings_width) printf("  %-*s", settings_width, settings);
        printf("  %s\n", chk->code == BC_OK ? "ok" : chk->message);
    }
    printf("%zu build%s of the backend's costly state (the cases marked 'build')\n", n_builds,
           n_builds == 1 ? "" : "s");
    if (!ops->plan_memory) printf("(backend %s cannot tell its memory in advance)\n", ctx.backend.plugin->desc->name);
    plan_scorer(&ctx);
    if (ctx.cfg.refit != BC_CFG_REFIT_OFF)
        printf("refit %s: the backend's refit hook before %s\n", ctx.run.refit,
               ctx.cfg.refit == BC_CFG_REFIT_PER_CASE ? "each case's first measured rollout" : "every rollout");
    if (a->estimate_from) {
        char total[32];
        format_duration(total_s, total, sizeof total);
        printf("estimated time of the cases: %s (%.1f s), from %zu case%s of %s; start-up and loading the weights "
               "not included\n",
               total, total_s, est.n_points, est.n_points == 1 ? "" : "s", a->estimate_from);
    }
    bc_runfile_free(&rf);
    rc = 0;
    if (ctx.n_infeasible) {
        char msg[128];
        snprintf(msg, sizeof msg, "%zu of %zu cases cannot run (see the check column)", ctx.n_infeasible, ctx.n_cases);
        fflush(stdout);
        bc_cli_print_error(msg, NULL);
        rc = EXIT_USAGE;
    }
    bc_context_free(&ctx);
    return rc;
}
