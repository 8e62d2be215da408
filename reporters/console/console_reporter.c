/* console_reporter.c: the "console" reporter plugin. At close it writes two
 * readable, aligned tables of every case (requested order) to the host
 * output "path" (default "-", standard output through the host): what ran
 * and how long it took, then where the time went (time to first token,
 * decode ms per token, prefill and decode throughput). Every number is
 * looked up by field and statistic name, so a host without one shows "-".
 * While the run goes, and only when standard error is a terminal, it keeps
 * one progress line on stderr, redrawn with \r and cleared before the table:
 *   [2/8] B=4 x4 prompt=128 resp=128 bf16 retain  ETA 1m23s
 * When stderr is not a terminal it prints nothing while running (with
 * verbose = true, one plain line per case on stderr), so pipes stay clean.
 *
 * Settings:
 *   progress  bool, default true: the TTY progress line
 *   verbose   bool, default false: one plain stderr line per case when not a TTY
 *   path      output for the tables, default "-"
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchctl/plugin.h"
#include "report.h"
#include "report_file.h"

enum { SET_PROGRESS = 0, SET_VERBOSE, SET_PATH, SET_COUNT };

static const bc_setting_desc console_settings[SET_COUNT] = {
    [SET_PROGRESS] = {.name = "progress", .type = BC_SETTING_BOOL, .default_int = 1,
                      .help = "show a progress line with an ETA on stderr when it is a terminal"},
    [SET_VERBOSE] = {.name = "verbose", .type = BC_SETTING_BOOL, .default_int = 0,
                     .help = "when stderr is not a terminal, print one plain line per case on it"},
    [SET_PATH] = {.name = "path", .type = BC_SETTING_STRING, .default_string = "-",
                  .help = "where the final tables go; \"-\" is stdout"},
};

typedef struct console_reporter {
    const bc_host *host; /* not owned */
    int progress, verbose;
    const char *path;    /* host-owned setting, lives until destroy */
    int line_drawn;      /* a progress line is on stderr and must be cleared */
} console_reporter;

/* check_settings: the output path must be writable (host->output_check;
 * "-" always is), so validate and run refuse a bad path before any case. */
static bc_status console_check_settings(const bc_host *host, const bc_settings *settings, bc_error *err) {
    return bc_report_check_output(host, "console", bc_setting_at(settings, SET_PATH)->s, err);
}

static bc_status console_open(const bc_host *host, const bc_settings *settings, const bc_run_report *run,
                              void **out_instance, bc_error *err) {
    (void)run;
    const char *path = bc_setting_at(settings, SET_PATH)->s;
    if (!path || !*path) return bc_error_set(err, BC_ERR_SETTING, "console: setting path is empty");
    console_reporter *r = calloc(1, sizeof *r);
    if (!r) return bc_error_set(err, BC_ERR_NOMEM, "console: out of memory");
    r->host = host;
    r->progress = bc_setting_at(settings, SET_PROGRESS)->i != 0;
    r->verbose = bc_setting_at(settings, SET_VERBOSE)->i != 0;
    r->path = path;
    *out_instance = r;
    return BC_OK;
}

/* "--" when unknown, else "45s", "1m23s" or "2h05m". */
static void format_eta(char *buf, size_t size, double eta_s) {
    if (!isfinite(eta_s) || eta_s < 0) {
        snprintf(buf, size, "--");
        return;
    }
    long s = (long)(eta_s + 0.5);
    if (s < 60)
        snprintf(buf, size, "%lds", s);
    else if (s < 3600)
        snprintf(buf, size, "%ldm%02lds", s / 60, s % 60);
    else
        snprintf(buf, size, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
}

static void clear_line(console_reporter *r) {
    if (!r->line_drawn) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    r->line_drawn = 0;
}

/* "[2/8] B=4 x4 prompt=128 resp=128 bf16 retain  ETA 1m23s" into buf;
 * "prompt=file" when the prompts file decides the length. */
static void format_progress(char *buf, size_t size, const bc_case *c, uint32_t i, uint32_t n, double eta_s) {
    char eta[32], prompt[16];
    format_eta(eta, sizeof eta, eta_s);
    if (c->prompt_length)
        snprintf(prompt, sizeof prompt, "%u", c->prompt_length);
    else
        snprintf(prompt, sizeof prompt, "file");
    snprintf(buf, size, "[%u/%u] B=%u x%u prompt=%s resp=%u %s %s  ETA %s", i + 1, n, c->batch_size,
             c->samples_per_prompt, prompt, c->response_length, c->precision ? c->precision : "?",
             c->cache_policy ? c->cache_policy : "?", eta);
}

static void console_case_started(void *instance, const bc_case *c, uint32_t i, uint32_t n, double eta_s) {
    console_reporter *r = instance;
    char line[256];
    format_progress(line, sizeof line, c, i, n, eta_s);
    if (r->host->stderr_is_tty) {
        if (!r->progress) return;
        fprintf(stderr, "\r\033[K%s", line); /* \r + erase-line, then the line without a newline */
        fflush(stderr);
        r->line_drawn = 1;
    } else if (r->verbose) {
        fprintf(stderr, "%s\n", line);
    }
}

/* ----------------------------------------------------------- the tables */

enum { CELL_LEN = 48, MAX_COLS = 16 };

/* The text of one case's cell. */
typedef void (*fill_fn)(char *cell, const bc_run_report *run, const bc_case_report *cr);

/* One column: its header, whether it holds numbers (right-aligned), and
 * either a fill function or a statistic (stat of field, decimals). */
typedef struct column {
    const char *header;
    int right;
    fill_fn fill;
    const char *field, *stat;
    int decimals;
} column;

/* "-" when not measured, else fixed decimals. */
static void fmt_num(char *cell, double x, int decimals) {
    if (!bc_is_measured(x) || !isfinite(x))
        snprintf(cell, CELL_LEN, "-");
    else
        snprintf(cell, CELL_LEN, "%.*f", decimals, x);
}

static void fill_index(char *cell, const bc_run_report *run, const bc_case_report *cr) {
    (void)run;
    snprintf(cell, CELL_LEN, "%u", cr->c->index);
}

static void fill_batch(char *cell, const bc_run_report *run, const bc_case_report *cr) {
    (void)run;
    snprintf(cell, CELL_LEN, "%u", cr->c->batch_size);
}

static void fill_samples(char *cell, const bc_run_report *run, const bc_case_report *cr) {
    (void)run;
    snprintf(cell, CELL_LEN, "%u", cr->c->samples_per_prompt);
}

/* The prompt width that ran ("16"), with the shortest and longest real
 * prompt when they differ from it ("37 (12-37)"); the requested length
 * while nothing ran; "-" when a prompts file decides and nothing ran. */
static void fill_prompt(char *cell, const bc_run_report *run, const bc_case_report *cr) {
    (void)run;
    int64_t width = cr->prompt_width_tokens >= 0 ? cr->prompt_width_tokens : (int64_t)cr->c->prompt_length;
    int64_t lo = cr->prompt_min_tokens, hi = cr->prompt_max_tokens;
    if (width <= 0)
        snprintf(cell, CELL_LEN, "-");
    else if (lo >= 0 && hi >= 0 && (lo != width || hi != width))
        snprintf(cell, CELL_LEN, "%lld (%lld-%lld)", (long long)width, (long long)lo, (long long)hi);
    else
        snprintf(cell, CELL_LEN, "%lld", (long long)width);
}

/* The requested length, "128->97" when fewer tokens came back. */
static void fill_response(char *cell, const bc_run_report *run, const bc_case_report *cr) {
    (void)run;
    const bc_case *c = cr->c;
    if (cr->returned_response_length >= 0 && cr->returned_response_length != (int64_t)c->response_length)
        snprintf(cell, CELL_LEN, "%u->%lld", c->response_length, (long long)cr->returned_response_length);
    else
        snprintf(cell, CELL_LEN, "%u", c->response_length);
}

static void fill_precision(char *cell, const bc_run_report *run, const bc_case_report *cr) {
    (void)run;
    snprintf(cell, CELL_LEN, "%s", cr->c->precision ? cr->c->precision : "?");
}

static void fill_cache(char *cell, const bc_run_report *run, const bc_case_report *cr) {
    (void)run;
    snprintf(cell, CELL_LEN, "%s", cr->c->cache_policy ? cr->c->cache_policy : "?");
}

static void fill_status(char *cell, const bc_run_report *run, const bc_case_report *cr) {
    (void)run;
    snprintf(cell, CELL_LEN, "%s", bc_case_status_name(cr->status));
}

static void fill_peak(char *cell, const bc_run_report *run, const bc_case_report *cr) {
    (void)run;
    fmt_num(cell, cr->peak_memory_mib, 1);
}

static void fill_held(char *cell, const bc_run_report *run, const bc_case_report *cr) {
    (void)run;
    fmt_num(cell, bc_bytes_to_mib(cr->held_between_rollouts_bytes), 1);
}

/* What ran and how long it took. */
static const column case_columns[] = {
    {"#", 1, fill_index, NULL, NULL, 0},
    {"batch", 1, fill_batch, NULL, NULL, 0},
    {"x", 1, fill_samples, NULL, NULL, 0},
    {"prompt", 1, fill_prompt, NULL, NULL, 0},
    {"resp", 1, fill_response, NULL, NULL, 0},
    {"precision", 0, fill_precision, NULL, NULL, 0},
    {"cache", 0, fill_cache, NULL, NULL, 0},
    {"status", 0, fill_status, NULL, NULL, 0},
    {"total_ms", 1, NULL, "total_ms", "mean", 2},
    {"p50", 1, NULL, "total_ms", "p50", 2},
    {"p95", 1, NULL, "total_ms", "p95", 2},
    {"tok/s", 1, NULL, "tokens_per_second", "mean", 1},
    {"peak_MiB", 1, fill_peak, NULL, NULL, 0},
    {"held_MiB", 1, fill_held, NULL, NULL, 0},
};

/* Where the time went: the phases of a rollout (means over iterations). */
static const column phase_columns[] = {
    {"#", 1, fill_index, NULL, NULL, 0},
    {"ttft_ms", 1, NULL, "time_to_first_token_ms", "mean", 2},
    {"ms/tok_p50", 1, NULL, "decode_ms_per_token_p50", "mean", 3},
    {"ms/tok_p95", 1, NULL, "decode_ms_per_token_p95", "mean", 3},
    {"prefill_ms", 1, NULL, "prefill_forward_ms", "mean", 2},
    {"decode_ms", 1, NULL, "decode_forward_ms", "mean", 2},
    {"prefill_tok/s", 1, NULL, "prefill_tokens_per_second", "mean", 1},
    {"decode_tok/s", 1, NULL, "decode_tokens_per_second", "mean", 1},
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
_Static_assert(N_OF(case_columns) <= MAX_COLS && N_OF(phase_columns) <= MAX_COLS, "raise MAX_COLS");

/* One case's cell of column col. */
static void fill_cell(char *cell, const column *col, const bc_run_report *run, const bc_case_report *cr) {
    if (col->fill) {
        col->fill(cell, run, cr);
        return;
    }
    int f = bc_run_field_index(run, col->field), s = bc_run_stat_index(run, col->stat);
    fmt_num(cell, bc_case_stat(run, cr, f, s), col->decimals);
}

static void pad(bc_text *t, size_t n) {
    for (size_t i = 0; i < n; i++) bc_text_put(t, " ", 1);
}

/* One line of a table: cells[k] in columns of width[k], two spaces apart. */
static void put_row(bc_text *t, const column *cols, size_t n_cols, const char *cells, const size_t *width) {
    for (size_t k = 0; k < n_cols; k++) {
        const char *cell = cells + k * CELL_LEN;
        size_t len = strlen(cell);
        if (k > 0) bc_text_put(t, "  ", 2);
        if (cols[k].right) pad(t, width[k] - len);
        bc_text_put(t, cell, len);
        if (!cols[k].right && k + 1 < n_cols) pad(t, width[k] - len);
    }
    bc_text_put(t, "\n", 1);
}

/* A table of every case (requested order): header, a rule of dashes as
 * wide as the table, one aligned row per case. */
static bc_status put_table(bc_text *t, const bc_run_report *run, const column *cols, size_t n_cols) {
    size_t n_rows = (size_t)run->n_cases + 1;                  /* the header, then the cases */
    char *cells = calloc(n_rows * n_cols, CELL_LEN);           /* owned here */
    if (!cells) return BC_ERR_NOMEM;
    for (size_t k = 0; k < n_cols; k++) snprintf(cells + k * CELL_LEN, CELL_LEN, "%s", cols[k].header);
    for (uint32_t i = 0; i < run->n_cases; i++)
        for (size_t k = 0; k < n_cols; k++)
            fill_cell(cells + ((i + 1) * n_cols + k) * CELL_LEN, &cols[k], run, bc_run_case(run, i));
    size_t width[MAX_COLS] = {0}, total = 0;
    for (size_t r = 0; r < n_rows; r++)
        for (size_t k = 0; k < n_cols; k++) {
            size_t len = strlen(cells + (r * n_cols + k) * CELL_LEN);
            if (len > width[k]) width[k] = len;
        }
    for (size_t k = 0; k < n_cols; k++) total += width[k] + (k > 0 ? 2 : 0);
    put_row(t, cols, n_cols, cells, width);
    for (size_t i = 0; i < total; i++) bc_text_put(t, "-", 1);
    bc_text_put(t, "\n", 1);
    for (size_t r = 1; r < n_rows; r++) put_row(t, cols, n_cols, cells + r * n_cols * CELL_LEN, width);
    free(cells);
    return BC_OK;
}

/* Same status and message: such cases share one line under the table. */
static int same_outcome(const bc_case_report *a, const bc_case_report *b) {
    return a->status == b->status && a->message && b->message && strcmp(a->message, b->message) == 0;
}

/* One line per distinct (status, message) of the cases that did not finish
 * ok: "case 3 failed: ..." or "cases 0-2, 5 skipped: ...". */
static void put_outcomes(bc_text *t, const bc_run_report *run) {
    for (uint32_t i = 0; i < run->n_cases; i++) {
        const bc_case_report *cr = bc_run_case(run, i);
        if (cr->status == BC_CASE_OK || !cr->message || !*cr->message) continue;
        int seen = 0; /* an earlier case with this outcome already printed the line */
        for (uint32_t j = 0; j < i && !seen; j++) seen = same_outcome(bc_run_case(run, j), cr);
        if (seen) continue;
        uint32_t n_same = 0;
        for (uint32_t j = i; j < run->n_cases; j++) n_same += same_outcome(bc_run_case(run, j), cr);
        bc_text_puts(t, n_same > 1 ? "cases " : "case ");
        int listed = 0;
        for (uint32_t j = i; j < run->n_cases; j++) {
            if (!same_outcome(bc_run_case(run, j), cr)) continue;
            uint32_t end = j; /* a run of consecutive cases with this outcome: j..end */
            while (end + 1 < run->n_cases && same_outcome(bc_run_case(run, end + 1), cr)) end++;
            bc_text_printf(t, "%s%u", listed ? ", " : "", bc_run_case(run, j)->c->index);
            if (end > j) bc_text_printf(t, "%s%u", end > j + 1 ? "-" : ", ", bc_run_case(run, end)->c->index);
            listed = 1;
            j = end;
        }
        bc_text_printf(t, " %s: %s\n", bc_case_status_name(cr->status), cr->message);
    }
}

/* One line naming the backend settings that differ from their defaults
 * (e.g. "backend settings: shared_prefill=true threads=2"); nothing when all
 * are defaults or the host passes none. */
static void put_changed_settings(bc_text *t, const bc_run_report *run) {
    if (!run->backend_settings || !run->backend_values || !run->backend_setting_size) return;
    int any = 0;
    for (uint32_t i = 0; i < run->n_backend_settings && i < run->backend_values->count; i++) {
        const bc_setting_desc *d = bc_run_backend_setting(run, i);
        const bc_setting_value *v = bc_setting_at(run->backend_values, i);
        const char *prefix = any ? " " : "backend settings: ";
        switch (d->type) {
        case BC_SETTING_INT:
            if (v->i != d->default_int) bc_text_printf(t, "%s%s=%lld", prefix, d->name, (long long)v->i), any = 1;
            break;
        case BC_SETTING_BOOL:
            if ((v->i != 0) != (d->default_int != 0))
                bc_text_printf(t, "%s%s=%s", prefix, d->name, v->i ? "true" : "false"), any = 1;
            break;
        case BC_SETTING_FLOAT:
            if (v->f != d->default_float) bc_text_printf(t, "%s%s=%g", prefix, d->name, v->f), any = 1;
            break;
        default:
            if (v->s && strcmp(v->s, d->default_string ? d->default_string : "") != 0)
                bc_text_printf(t, "%s%s=\"%s\"", prefix, d->name, v->s), any = 1;
            break;
        }
    }
    if (any) bc_text_put(t, "\n", 1);
}

static void put_title(bc_text *t, const bc_run_report *run) {
    const char *model = BC_RUN_BACKEND(run, model, NULL), *device = BC_RUN_BACKEND(run, device, NULL);
    bc_text_printf(t, "benchctl %s: %s on %s, %u warmup + %u measured iterations per case\n",
                   run->benchctl_version ? run->benchctl_version : "", model ? model : "?", device ? device : "?",
                   run->warmup, run->iterations);
}

/* The case counts and what the columns mean. */
static void put_legend(bc_text *t, const bc_run_report *run) {
    bc_case_counts n = bc_count_cases(run);
    bc_text_printf(t, "%u case%s: %u ok, %u failed, %u skipped.\n", run->n_cases, run->n_cases == 1 ? "" : "s", n.ok,
                   n.failed, n.skipped);
    bc_text_puts(t, "Means over the measured iterations. total_ms: one rollout (p50, p95: its percentiles); "
                    "tok/s: generated tokens per second;\n");
    bc_text_puts(t, "peak_MiB: peak memory; held_MiB: memory held between rollouts; ttft_ms: time to first token; "
                    "ms/tok_p50/p95: a rollout's\n");
    bc_text_puts(t, "median and p95 decode step; prefill/decode: forward time and tokens per second of each phase.\n");
}

static bc_status build_report(bc_text *t, const bc_run_report *run) {
    put_title(t, run);
    put_changed_settings(t, run);
    if (put_table(t, run, case_columns, N_OF(case_columns)) != BC_OK) return BC_ERR_NOMEM;
    bc_text_put(t, "\n", 1);
    if (put_table(t, run, phase_columns, N_OF(phase_columns)) != BC_OK) return BC_ERR_NOMEM;
    put_legend(t, run);
    put_outcomes(t, run);
    return t->failed ? BC_ERR_NOMEM : BC_OK;
}

static bc_status console_close(void *instance, const bc_run_report *run, bc_error *err) {
    console_reporter *r = instance;
    clear_line(r);
    bc_text t = {0};
    if (build_report(&t, run) != BC_OK) {
        free(t.buf);
        return bc_error_set(err, BC_ERR_NOMEM, "console: out of memory building the tables");
    }
    bc_status st = bc_report_write_file(r->host, r->path, t.buf, t.len, err);
    free(t.buf);
    return st;
}

static void console_destroy(void *instance) {
    console_reporter *r = instance;
    if (r) clear_line(r); /* the run ended early: leave a clean terminal */
    free(r);
}

static const bc_reporter_ops console_ops = {
    .struct_size = sizeof(bc_reporter_ops),
    .open = console_open,
    .case_started = console_case_started,
    .case_finished = NULL,
    .close = console_close,
    .destroy = console_destroy,
};

static const bc_plugin_desc console_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_REPORTER,
    .name = "console",
    .version = "0.1.0",
    .description = "readable tables at the end; a progress line with ETA when stderr is a terminal",
    BC_SETTINGS_TABLE(console_settings),
    .ops = &console_ops,
    .check_settings = console_check_settings,
};

BC_PLUGIN_DEFINE(console_desc)
