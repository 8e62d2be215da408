/* runner.c: the measurement loop (see runner.h for the exact protocol).
 * Times are milliseconds from the monotonic clock; memory is bytes unless a
 * name says MiB. */
#define _GNU_SOURCE
#include "runner.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "matrix.h"
#include "stats.h"

const char *const bc_field_names[BC_FIELD_COUNT_V1_0] = {
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
};

enum { N_FIELDS = BC_FIELD_COUNT_V1_0 };

static double ms_since(uint64_t t0) { return (double)(bc_now_ns() - t0) / 1e6; }

static int stop_requested(const bc_runner_config *cfg) { return cfg->stop && *cfg->stop; }

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
}

/* One rollout. row (N_FIELDS, may be NULL for warmup) gets the values. On a
 * hook error returns it, with *hook naming the hook. */
static bc_status one_iteration(const bc_backend_ops *ops, void *inst, const bc_case *c, int *released, double *row,
                               int64_t *returned_len, const char **hook, bc_error *err) {
    double scratch[N_FIELDS];
    if (!row) row = scratch;
    for (int f = 0; f < N_FIELDS; f++) row[f] = NAN;
    bc_status st;
    uint64_t t0;
    if (*released && ops->cache_acquire) {
        t0 = bc_now_ns();
        if ((st = ops->cache_acquire(inst, err)) != BC_OK) return *hook = "cache_acquire", st;
        row[BC_FIELD_CACHE_ACQUIRE_MS] = ms_since(t0);
        *released = 0;
    }
    t0 = bc_now_ns();
    if ((st = ops->expand_prompts(inst, err)) != BC_OK) return *hook = "expand_prompts", st;
    double expand_ms = ms_since(t0);

    bc_generation_stats g = {.struct_size = sizeof g,
                             .prefill_forward_ms = NAN,
                             .decode_forward_ms = NAN,
                             .num_decode_forwards = -1,
                             .num_generated_tokens = -1,
                             .returned_response_length = -1};
    t0 = bc_now_ns();
    if ((st = ops->generate(inst, &g, err)) != BC_OK) return *hook = "generate", st;
    double gen_ms = ms_since(t0);

    t0 = bc_now_ns();
    if ((st = ops->post_process(inst, err)) != BC_OK) return *hook = "post_process", st;
    double post_ms = ms_since(t0);

    if (c->release_cache && ops->cache_release) {
        t0 = bc_now_ns();
        if ((st = ops->cache_release(inst, err)) != BC_OK) return *hook = "cache_release", st;
        row[BC_FIELD_CACHE_RELEASE_MS] = ms_since(t0);
        *released = 1;
    }

    row[BC_FIELD_PROMPT_EXPANSION_MS] = expand_ms;
    row[BC_FIELD_GENERATION_MS] = gen_ms;
    row[BC_FIELD_POST_PROCESSING_MS] = post_ms;
    row[BC_FIELD_TOTAL_MS] = expand_ms + gen_ms + post_ms;
    if (g.num_generated_tokens >= 0) {
        row[BC_FIELD_NUM_GENERATED_TOKENS] = (double)g.num_generated_tokens;
        if (gen_ms > 0) row[BC_FIELD_TOKENS_PER_SECOND] = (double)g.num_generated_tokens / (gen_ms / 1000.0);
    }
    row[BC_FIELD_PREFILL_FORWARD_MS] = g.prefill_forward_ms;
    row[BC_FIELD_DECODE_FORWARD_MS] = g.decode_forward_ms;
    if (bc_is_measured(g.prefill_forward_ms) && bc_is_measured(g.decode_forward_ms))
        row[BC_FIELD_GENERATION_OVERHEAD_MS] = gen_ms - g.prefill_forward_ms - g.decode_forward_ms;
    if (g.num_decode_forwards >= 0) row[BC_FIELD_NUM_DECODE_FORWARDS] = (double)g.num_decode_forwards;
    *returned_len = g.returned_response_length;
    return BC_OK;
}

/* Sets a case's message (owned by res). */
static void set_message(bc_run_result *res, size_t k, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void set_message(bc_run_result *res, size_t k, const char *fmt, ...) {
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

/* Runs case k (requested index) with the backend instance. */
static void run_case(const bc_runner_config *cfg, void *inst, bc_run_result *res, size_t k) {
    const bc_backend_ops *ops = &cfg->backend->backend;
    const bc_case *c = &cfg->cases[k];
    bc_case_report *cr = &res->cases[k];
    double *values = res->values + k * (size_t)cfg->iterations * N_FIELDS;
    bc_error err = {0};
    const char *hook = NULL;
    bc_status st;
    int released = 0;
    int64_t returned_len = -1;
    uint64_t t_case = bc_now_ns();

    cr->status = BC_CASE_OK;
    if ((st = ops->begin_case(inst, c, &err)) != BC_OK) {
        hook = "begin_case";
        goto done;
    }
    for (uint32_t w = 0; w < cfg->warmup; w++) {
        if ((st = one_iteration(ops, inst, c, &released, NULL, &returned_len, &hook, &err)) != BC_OK) goto done;
        if (stop_requested(cfg)) {
            cr->status = BC_CASE_SKIPPED;
            set_message(res, k, "interrupted during warmup");
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
    for (uint32_t it = 0; it < cfg->iterations; it++) {
        if ((st = one_iteration(ops, inst, c, &released, values + (size_t)it * N_FIELDS, &returned_len, &hook,
                                &err)) != BC_OK)
            goto done;
        cr->n_iterations = it + 1;
        cr->returned_response_length = returned_len;
        if (stop_requested(cfg) && it + 1 < cfg->iterations) {
            cr->status = BC_CASE_SKIPPED;
            set_message(res, k, "interrupted after %u of %u measured iterations", it + 1, cfg->iterations);
            break;
        }
    }
    if (ops->read_memory) {
        bc_memory_stats after;
        memory_unknown(&after);
        if ((st = ops->read_memory(inst, &after, &err)) != BC_OK) {
            hook = "read_memory";
            goto done;
        }
        cr->memory = after;
        cr->device_free_after_bytes = after.device_free_bytes;
        if (after.device_peak_bytes >= 0)
            cr->peak_memory_mb = (double)after.device_peak_bytes / (1024.0 * 1024.0);
        else if (after.host_peak_bytes >= 0)
            cr->peak_memory_mb = (double)after.host_peak_bytes / (1024.0 * 1024.0);
    }
    cr->peak_rss_bytes = rss_reset ? read_peak_rss() : -1;
    st = BC_OK;
done:
    if (st != BC_OK && hook) {
        cr->status = BC_CASE_FAILED;
        set_message(res, k, "%s: %s", hook, err.message[0] ? err.message : "failed");
    }
    ops->end_case(inst);
    cr->wall_ms = ms_since(t_case);
    bc_error serr = {0};
    for (int f = 0; f < N_FIELDS; f++)
        if (bc_stats_compute(values + f, cr->n_iterations, N_FIELDS, &res->stats[k * N_FIELDS + f], &serr) != BC_OK)
            res->stats[k * N_FIELDS + f].n = 0;
}

/* One open reporter. */
typedef struct reporter_slot {
    const bc_runner_reporter *r;
    void *inst;     /* owned by the plugin; destroyed by the runner */
    int open;       /* open succeeded */
    int journaling; /* case_finished still called */
} reporter_slot;

static void report_error(const bc_runner_config *cfg, bc_run_result *res, const reporter_slot *s, const char *hook,
                         const bc_error *err) {
    res->reporter_failed = 1;
    if (!cfg->on_error) return;
    const char *name = s->r->plugin->desc->name, *msg = err->message[0] ? err->message : "failed";
    size_t n = strlen(name);
    if (strncmp(msg, name, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ') msg += n + 2; /* named once is enough */
    char line[1400];
    snprintf(line, sizeof line, "%.500s%sreporter '%s': %s: %s", s->r->where ? s->r->where : "",
             s->r->where ? ": " : "", name, hook, msg);
    cfg->on_error(cfg->on_error_ctx, line);
}

static bc_status result_alloc(const bc_runner_config *cfg, bc_run_result *res, bc_error *err) {
    size_t n = cfg->n_cases;
    res->n_cases = n;
    res->cases = calloc(n ? n : 1, sizeof *res->cases);
    res->values = calloc(n * (size_t)cfg->iterations * N_FIELDS + 1, sizeof *res->values);
    res->stats = calloc(n * N_FIELDS + 1, sizeof *res->stats);
    res->messages = calloc(n ? n : 1, sizeof *res->messages);
    if (!res->cases || !res->values || !res->stats || !res->messages)
        return bc_error_set(err, BC_ERR_NOMEM, "runner: out of memory for %zu cases", n);
    for (size_t k = 0; k < n; k++) {
        bc_case_report *cr = &res->cases[k];
        cr->struct_size = sizeof *cr;
        cr->c = &cfg->cases[k];
        cr->status = BC_CASE_SKIPPED;
        cr->message = "";
        cr->values = res->values + k * (size_t)cfg->iterations * N_FIELDS;
        cr->stats = res->stats + k * N_FIELDS;
        cr->returned_response_length = -1;
        cr->peak_memory_mb = NAN;
        memory_unknown(&cr->memory);
        cr->peak_rss_bytes = -1;
        cr->device_free_before_bytes = cr->device_free_after_bytes = -1;
        cr->wall_ms = NAN;
        for (int f = 0; f < N_FIELDS; f++) {
            bc_stats *s = &res->stats[k * N_FIELDS + f];
            s->n = 0;
            s->mean = s->p50 = s->p95 = s->min = s->max = s->stddev = NAN;
        }
    }
    return BC_OK;
}

bc_status bc_run(const bc_runner_config *cfg, bc_run_result *res, bc_error *err) {
    *res = (bc_run_result){0};
    bc_status st = result_alloc(cfg, res, err);
    if (st != BC_OK) return st;
    size_t n = cfg->n_cases;
    size_t *order = calloc(n ? n : 1, sizeof *order);                    /* execution order, owned here */
    bc_case_report *finished = calloc(n ? n : 1, sizeof *finished);      /* scratch for case_finished */
    unsigned char *done = calloc(n ? n : 1, 1);                          /* done[k]: case k finished */
    reporter_slot *slots = calloc(cfg->n_reporters + 1, sizeof *slots);  /* owned here */
    if (!order || !finished || !done || !slots) {
        free(order), free(finished), free(done), free(slots);
        return bc_error_set(err, BC_ERR_NOMEM, "runner: out of memory");
    }
    bc_matrix_execution_order(cfg->cases, n, order);

    const bc_plugin *be = cfg->backend;
    void *inst = NULL;
    if ((st = be->backend.create(&be->host, cfg->backend_settings, &inst, err)) != BC_OK) {
        char msg[sizeof err->message + 512];
        snprintf(msg, sizeof msg, "%.300s%sbackend '%s': create: %s", cfg->backend_where ? cfg->backend_where : "",
                 cfg->backend_where ? ": " : "", be->desc->name, err->message);
        bc_error_set(err, st, "%s", msg);
        if (inst) be->backend.destroy(inst);
        free(order), free(finished), free(done), free(slots);
        return st;
    }
    bc_run_report run = cfg->run;
    run.struct_size = sizeof run;
    run.backend = (bc_backend_info){.struct_size = sizeof run.backend};
    if ((st = be->backend.describe(inst, &run.backend, err)) != BC_OK) {
        char msg[sizeof err->message + 512];
        snprintf(msg, sizeof msg, "%.300s%sbackend '%s': describe: %s", cfg->backend_where ? cfg->backend_where : "",
                 cfg->backend_where ? ": " : "", be->desc->name, err->message);
        bc_error_set(err, st, "%s", msg);
        be->backend.destroy(inst);
        free(order), free(finished), free(done), free(slots);
        return st;
    }
    run.n_fields = N_FIELDS;
    run.field_names = bc_field_names;
    run.n_cases = 0;
    run.cases = finished;

    for (size_t r = 0; r < cfg->n_reporters; r++) {
        reporter_slot *s = &slots[r];
        s->r = &cfg->reporters[r];
        const bc_plugin *p = s->r->plugin;
        bc_error rerr = {0};
        if (p->reporter.open(&p->host, s->r->settings, &run, &s->inst, &rerr) != BC_OK) {
            report_error(cfg, res, s, "open", &rerr);
            continue;
        }
        s->open = 1;
        s->journaling = 1;
    }

    double wall_sum_ms = 0.0;
    uint32_t n_run = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = order[i];
        if (stop_requested(cfg)) {
            res->interrupted = 1;
            set_message(res, k, "interrupted before the case started");
            continue;
        }
        double eta_s = n_run ? wall_sum_ms / n_run * (double)(n - i) / 1000.0 : NAN;
        for (size_t r = 0; r < cfg->n_reporters; r++)
            if (slots[r].open && slots[r].r->plugin->reporter.case_started)
                slots[r].r->plugin->reporter.case_started(slots[r].inst, &cfg->cases[k], (uint32_t)i, (uint32_t)n, eta_s);
        run_case(cfg, inst, res, k);
        if (stop_requested(cfg)) res->interrupted = 1;
        wall_sum_ms += res->cases[k].wall_ms;
        n_run++;
        done[k] = 1;
        run.n_cases = 0;
        for (size_t j = 0; j < n; j++)
            if (done[j]) finished[run.n_cases++] = res->cases[j];
        for (size_t r = 0; r < cfg->n_reporters; r++) {
            reporter_slot *s = &slots[r];
            if (!s->journaling || !s->r->plugin->reporter.case_finished) continue;
            bc_error rerr = {0};
            if (s->r->plugin->reporter.case_finished(s->inst, &run, &res->cases[k], &rerr) != BC_OK) {
                report_error(cfg, res, s, "case_finished", &rerr);
                s->journaling = 0;
            }
        }
    }
    for (size_t k = 0; k < n; k++) {
        if (res->cases[k].status == BC_CASE_FAILED) res->n_failed++;
        if (res->cases[k].status == BC_CASE_SKIPPED) res->n_skipped++;
    }

    run.n_cases = (uint32_t)n;
    run.cases = res->cases;
    for (size_t r = 0; r < cfg->n_reporters; r++) {
        reporter_slot *s = &slots[r];
        if (s->open) {
            bc_error rerr = {0};
            if (s->r->plugin->reporter.close(s->inst, &run, &rerr) != BC_OK) report_error(cfg, res, s, "close", &rerr);
        }
        if (s->inst) s->r->plugin->reporter.destroy(s->inst);
    }
    be->backend.destroy(inst);
    free(order), free(finished), free(done), free(slots);
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
    *res = (bc_run_result){0};
}
