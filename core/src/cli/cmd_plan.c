/* cmd_plan.c: `benchctl plan FILE`: the cases in execution order with their
 * memory and what their checks said. */
#define _GNU_SOURCE

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "plan.h"

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

int bc_cli_plan(const bc_cli_args *a) {
    bc_context ctx;
    int rc = bc_cli_open_context(&ctx, a, 1);
    if (rc) {
        bc_context_free(&ctx);
        return rc;
    }
    const bc_plan *plan = &ctx.plan; /* the order run follows */
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
    if (settings_width) printf("  %-*s", settings_width, "settings");
    printf("  %s\n", "check");
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
        char settings[256];
        plan_settings_text(c, settings, sizeof settings);
        if (settings_width) printf("  %-*s", settings_width, settings);
        printf("  %s\n", chk->code == BC_OK ? "ok" : chk->message);
    }
    printf("%zu build%s of the backend's costly state (the cases marked 'build')\n", n_builds,
           n_builds == 1 ? "" : "s");
    if (!ops->plan_memory) printf("(backend %s cannot tell its memory in advance)\n", ctx.backend.plugin->desc->name);
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
