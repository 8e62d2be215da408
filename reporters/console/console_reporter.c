/* console_reporter.c: the "console" reporter plugin. At close it writes a
 * readable, aligned table of every case (requested order) to the host output
 * "path" (default "-", standard output through the host). While the run
 * goes, and only when standard error is a terminal, it keeps one progress
 * line on stderr, redrawn with \r and cleared before the table:
 *   [2/8] B=4 x4 prompt=128 resp=128 bf16 retain  ETA 1m23s
 * When stderr is not a terminal it prints nothing while running (with
 * verbose = true, one plain line per case on stderr), so pipes stay clean.
 *
 * Settings:
 *   progress  bool, default true: the TTY progress line
 *   verbose   bool, default false: one plain stderr line per case when not a TTY
 *   path      output for the table, default "-"
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchctl/plugin.h"
#include "report_file.h"
#include "report_json.h"

enum { SET_PROGRESS = 0, SET_VERBOSE, SET_PATH, SET_COUNT };

static const bc_setting_desc console_settings[SET_COUNT] = {
    [SET_PROGRESS] = {.name = "progress", .type = BC_SETTING_BOOL, .default_int = 1,
                      .help = "show a progress line with an ETA on stderr when it is a terminal"},
    [SET_VERBOSE] = {.name = "verbose", .type = BC_SETTING_BOOL, .default_int = 0,
                     .help = "when stderr is not a terminal, print one plain line per case on it"},
    [SET_PATH] = {.name = "path", .type = BC_SETTING_STRING, .default_string = "-",
                  .help = "where the final table goes; \"-\" is stdout"},
};

typedef struct console_reporter {
    const bc_host *host; /* not owned */
    int progress, verbose;
    const char *path;    /* host-owned setting, lives until destroy */
    int line_drawn;      /* a progress line is on stderr and must be cleared */
} console_reporter;

static bc_status console_open(const bc_host *host, const bc_setting_value *settings, const bc_run_report *run,
                              void **out_instance, bc_error *err) {
    (void)run;
    const char *path = settings[SET_PATH].s;
    if (!path || !*path) return bc_error_set(err, BC_ERR_INVALID, "console: setting path is empty");
    bc_status st = bc_report_check_path(host, path, err);
    if (st != BC_OK) return st;
    console_reporter *r = calloc(1, sizeof *r);
    if (!r) return bc_error_set(err, BC_ERR_NOMEM, "console: out of memory");
    r->host = host;
    r->progress = settings[SET_PROGRESS].i != 0;
    r->verbose = settings[SET_VERBOSE].i != 0;
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

static void console_case_started(void *instance, const bc_case *c, uint32_t i, uint32_t n, double eta_s) {
    console_reporter *r = instance;
    char eta[32];
    format_eta(eta, sizeof eta, eta_s);
    if (r->host->stderr_is_tty) {
        if (!r->progress) return;
        /* \r + erase-line, then the line without a newline. */
        fprintf(stderr, "\r\033[K[%u/%u] B=%u x%u prompt=%u resp=%u %s %s  ETA %s", i + 1, n, c->batch_size,
                c->samples_per_prompt, c->prompt_length, c->response_length, c->precision ? c->precision : "?",
                c->cache_policy ? c->cache_policy : "?", eta);
        fflush(stderr);
        r->line_drawn = 1;
    } else if (r->verbose) {
        fprintf(stderr, "[%u/%u] B=%u x%u prompt=%u resp=%u %s %s  ETA %s\n", i + 1, n, c->batch_size,
                c->samples_per_prompt, c->prompt_length, c->response_length, c->precision ? c->precision : "?",
                c->cache_policy ? c->cache_policy : "?", eta);
    }
}

/* ------------------------------------------------------------ the table */

enum { CELL_LEN = 48 };

/* Column: header, whether numbers (right-aligned). */
typedef struct column {
    const char *header;
    int right;
} column;

static const column columns[] = {
    {"#", 1},          {"batch", 1},       {"x", 1},       {"prompt", 1},   {"resp", 1},
    {"precision", 0},  {"cache", 0},       {"status", 0},  {"total_ms", 1}, {"p50", 1},
    {"p95", 1},        {"tok/s", 1},       {"prefill_ms", 1}, {"decode_ms", 1}, {"peak_MB", 1},
};
#define N_COLS (sizeof columns / sizeof columns[0])

/* "-" when not measured, else fixed decimals. */
static void fmt_num(char *buf, double x, int decimals) {
    if (!bc_is_measured(x) || !isfinite(x))
        snprintf(buf, CELL_LEN, "-");
    else
        snprintf(buf, CELL_LEN, "%.*f", decimals, x);
}

static double stat_of(const bc_run_report *run, const bc_case_report *cr, const char *field, int which) {
    int f = bc_run_field_index(run, field);
    if (f < 0 || !cr->stats) return NAN;
    const bc_stats *s = &cr->stats[f];
    return which == 0 ? s->mean : which == 1 ? s->p50 : s->p95;
}

static void fill_row(char (*row)[CELL_LEN], const bc_run_report *run, const bc_case_report *cr) {
    const bc_case *c = cr->c;
    snprintf(row[0], CELL_LEN, "%u", c->index);
    snprintf(row[1], CELL_LEN, "%u", c->batch_size);
    snprintf(row[2], CELL_LEN, "%u", c->samples_per_prompt);
    snprintf(row[3], CELL_LEN, "%u", c->prompt_length);
    if (cr->returned_response_length >= 0 && cr->returned_response_length != (int64_t)c->response_length)
        snprintf(row[4], CELL_LEN, "%u->%lld", c->response_length, (long long)cr->returned_response_length);
    else
        snprintf(row[4], CELL_LEN, "%u", c->response_length);
    snprintf(row[5], CELL_LEN, "%s", c->precision ? c->precision : "?");
    snprintf(row[6], CELL_LEN, "%s", c->cache_policy ? c->cache_policy : "?");
    snprintf(row[7], CELL_LEN, "%s", bc_case_status_name(cr->status));
    fmt_num(row[8], stat_of(run, cr, "total_ms", 0), 2);
    fmt_num(row[9], stat_of(run, cr, "total_ms", 1), 2);
    fmt_num(row[10], stat_of(run, cr, "total_ms", 2), 2);
    fmt_num(row[11], stat_of(run, cr, "tokens_per_second", 0), 1);
    fmt_num(row[12], stat_of(run, cr, "prefill_forward_ms", 0), 2);
    fmt_num(row[13], stat_of(run, cr, "decode_forward_ms", 0), 2);
    fmt_num(row[14], cr->peak_memory_mb, 1);
}

static void pad(bc_text *t, size_t n) {
    for (size_t i = 0; i < n; i++) bc_text_put(t, " ", 1);
}

static void put_row(bc_text *t, char (*row)[CELL_LEN], const size_t *width) {
    for (size_t k = 0; k < N_COLS; k++) {
        size_t len = strlen(row[k]);
        if (k > 0) bc_text_put(t, "  ", 2);
        if (columns[k].right) pad(t, width[k] - len);
        bc_text_put(t, row[k], len);
        if (!columns[k].right && k + 1 < N_COLS) pad(t, width[k] - len);
    }
    bc_text_put(t, "\n", 1);
}

/* Same status and message: such cases share one line under the table. */
static int same_outcome(const bc_case_report *a, const bc_case_report *b) {
    return a->status == b->status && a->message && b->message && strcmp(a->message, b->message) == 0;
}

/* One line per distinct (status, message) of the cases that did not finish
 * ok: "case 3 failed: ..." or "cases 0-2, 5 skipped: ...". */
static void put_outcomes(bc_text *t, const bc_run_report *run) {
    for (uint32_t i = 0; i < run->n_cases; i++) {
        const bc_case_report *cr = &run->cases[i];
        if (cr->status == BC_CASE_OK || !cr->message || !*cr->message) continue;
        int seen = 0; /* an earlier case with this outcome already printed the line */
        for (uint32_t j = 0; j < i && !seen; j++) seen = same_outcome(&run->cases[j], cr);
        if (seen) continue;
        uint32_t n_same = 0;
        for (uint32_t j = i; j < run->n_cases; j++) n_same += same_outcome(&run->cases[j], cr);
        bc_text_puts(t, n_same > 1 ? "cases " : "case ");
        int listed = 0;
        for (uint32_t j = i; j < run->n_cases; j++) {
            if (!same_outcome(&run->cases[j], cr)) continue;
            uint32_t end = j; /* a run of consecutive cases with this outcome: j..end */
            while (end + 1 < run->n_cases && same_outcome(&run->cases[end + 1], cr)) end++;
            bc_text_printf(t, "%s%u", listed ? ", " : "", run->cases[j].c->index);
            if (end > j) bc_text_printf(t, "%s%u", end > j + 1 ? "-" : ", ", run->cases[end].c->index);
            listed = 1;
            j = end;
        }
        bc_text_printf(t, " %s: %s\n", bc_case_status_name(cr->status), cr->message);
    }
}

/* One line naming the backend settings that differ from their defaults
 * (e.g. "backend settings: shared_prefill=true threads=2"); nothing when all
 * are defaults or the host (ABI < 1.1) does not pass them. */
static void put_changed_settings(bc_text *t, const bc_run_report *run) {
    if (!bc_run_report_has(run, n_backend_settings) || !run->backend_settings || !run->backend_values) return;
    int any = 0;
    for (uint32_t i = 0; i < run->n_backend_settings; i++) {
        const bc_setting_desc *d = &run->backend_settings[i];
        const bc_setting_value *v = &run->backend_values[i];
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

static bc_status build_table(bc_text *t, const bc_run_report *run) {
    char (*cells)[N_COLS][CELL_LEN] = calloc((size_t)run->n_cases + 1, sizeof *cells); /* owned here */
    if (!cells) return BC_ERR_NOMEM;
    for (size_t k = 0; k < N_COLS; k++) snprintf(cells[0][k], CELL_LEN, "%s", columns[k].header);
    for (uint32_t i = 0; i < run->n_cases; i++) fill_row(cells[i + 1], run, &run->cases[i]);
    size_t width[N_COLS] = {0};
    for (uint32_t r = 0; r <= run->n_cases; r++)
        for (size_t k = 0; k < N_COLS; k++) {
            size_t len = strlen(cells[r][k]);
            if (len > width[k]) width[k] = len;
        }

    bc_text_printf(t, "benchctl %s: %s on %s, %u warmup + %u measured iterations per case\n",
         run->benchctl_version ? run->benchctl_version : "", run->backend.model ? run->backend.model : "?",
         run->backend.device ? run->backend.device : "?", run->warmup, run->iterations);
    put_changed_settings(t, run);
    put_row(t, cells[0], width);
    size_t total = 0;
    for (size_t k = 0; k < N_COLS; k++) total += width[k] + (k > 0 ? 2 : 0);
    for (size_t i = 0; i < total; i++) bc_text_put(t, "-", 1);
    bc_text_put(t, "\n", 1);
    uint32_t n_ok = 0, n_failed = 0, n_skipped = 0;
    for (uint32_t i = 0; i < run->n_cases; i++) {
        put_row(t, cells[i + 1], width);
        switch (run->cases[i].status) {
        case BC_CASE_OK: n_ok++; break;
        case BC_CASE_FAILED: n_failed++; break;
        case BC_CASE_SKIPPED: n_skipped++; break;
        }
    }
    free(cells);
    bc_text_printf(t, "%u case%s: %u ok, %u failed, %u skipped. Times in ms (mean, p50, p95 of total_ms; prefill/decode means), "
            "tok/s = generated tokens per second (mean), peak_MB = peak_memory_mb.\n",
         run->n_cases, run->n_cases == 1 ? "" : "s", n_ok, n_failed, n_skipped);
    put_outcomes(t, run);
    return t->failed ? BC_ERR_NOMEM : BC_OK;
}

static bc_status console_close(void *instance, const bc_run_report *run, bc_error *err) {
    console_reporter *r = instance;
    clear_line(r);
    bc_text t = {0};
    if (build_table(&t, run) != BC_OK) {
        free(t.buf);
        return bc_error_set(err, BC_ERR_NOMEM, "console: out of memory building the table");
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
    .description = "a readable table at the end; a progress line with ETA when stderr is a terminal",
    .settings = console_settings,
    .n_settings = SET_COUNT,
    .ops = &console_ops,
};

BC_PLUGIN_DEFINE(console_desc)
