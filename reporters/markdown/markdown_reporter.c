/* markdown_reporter.c: the "markdown" reporter plugin. At close it writes
 * one GitHub-flavoured markdown table, one line per case in requested
 * order, in the manner of llama-bench's output (docs/reporters.md):
 *
 *   | model | backend | precision | cache | batch | samples | prompt | response | n | tokens/s | total_ms p50 |
 *
 * plus one column per backend setting the matrix varies (after response).
 *   tokens/s      the mean of tokens_per_second over the measured
 *                 iterations, "± " its standard deviation (the host's
 *                 "stddev" statistic: the spread); "failed: <status>" or "skipped" for a case that
 *                 measured nothing;
 *   total_ms p50  the median total_ms;
 *   n             the measured iterations;
 *   prompt        the prompt length, "file (W)" for a prompts file that ran
 *                 W tokens wide.
 * A number that was not measured is "-". A "|" inside a cell is written
 * "\|". The statistics are looked up by name ("mean", "stddev", "p50"), so
 * a host without one gives "-", never a wrong column.
 *
 * Settings:
 *   path   output file, default "-" (stdout); ".gz" means gzip
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchctl/plugin.h"
#include "report.h"
#include "report_file.h"
#include "termsafe.h"

enum { SET_PATH = 0, SET_COUNT };

static const bc_setting_desc md_settings[SET_COUNT] = {
    [SET_PATH] = {.name = "path", .type = BC_SETTING_STRING, .default_string = "-",
                  .help = "output file; \"-\" is stdout, a .gz suffix means gzip"},
};

typedef struct md_reporter {
    const bc_host *host; /* not owned */
    const char *path;    /* host-owned setting, lives until destroy */
} md_reporter;

/* One cell: " text |", with "|" escaped, line breaks as spaces and every
 * other control (an ESC from a run file's backend name) and invalid UTF-8
 * as a visible \xNN (termsafe.h): the table may go to a terminal. */
static void cell(bc_text *t, const char *s) {
    bc_text_put(t, " ", 1);
    for (const char *p = s ? s : ""; *p;) {
        size_t n = strcspn(p, "|\n\r");
        bc_text_put_terminal(t, p, n, 0);
        p += n;
        if (!*p) break;
        if (*p == '|') bc_text_put(t, "\\|", 2);
        else bc_text_put(t, " ", 1);
        p++;
    }
    bc_text_put(t, " |", 2);
}

static void cell_uint(bc_text *t, uint64_t v) {
    char num[32];
    snprintf(num, sizeof num, "%llu", (unsigned long long)v);
    cell(t, num);
}

/* A measured double with `decimals` digits, "-" when not measured. */
static void cell_double(bc_text *t, double v, int decimals) {
    char num[48] = "-";
    if (isfinite(v)) snprintf(num, sizeof num, "%.*f", decimals, v);
    cell(t, num);
}

/* The columns before the setting columns; their alignment row follows. */
static const char *const head[] = {"model", "backend", "precision", "cache", "batch", "samples", "prompt", "response"};
static const char *const head_align[] = {"---", "---", "---", "---", "---:", "---:", "---:", "---:"};
static const char *const tail[] = {"n", "tokens/s", "total_ms p50"};

static void write_header(bc_text *t, const bc_run_report *run) {
    const bc_case *c0 = run->n_cases ? bc_run_case(run, 0)->c : NULL;
    const uint32_t n_set = c0 ? bc_case_n_settings(c0) : 0;
    bc_text_puts(t, "|");
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++) cell(t, head[i]);
    for (uint32_t i = 0; i < n_set; i++) cell(t, c0->setting_names[i]);
    for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++) cell(t, tail[i]);
    bc_text_puts(t, "\n|");
    for (size_t i = 0; i < sizeof head_align / sizeof head_align[0]; i++) cell(t, head_align[i]);
    for (uint32_t i = 0; i < n_set; i++) cell(t, "---");
    for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++) cell(t, "---:");
    bc_text_puts(t, "\n");
}

static void write_row(bc_text *t, const bc_run_report *run, const bc_case_report *cr) {
    const bc_case *c = cr->c;
    const char *model = BC_RUN_BACKEND(run, model, NULL);
    const char *backend = bc_case_backend(c) ? bc_case_backend(c) : run->backend_name;
    bc_text_puts(t, "|");
    cell(t, model ? model : "-");
    cell(t, backend ? backend : "-");
    cell(t, c->precision);
    cell(t, c->cache_policy);
    cell_uint(t, c->batch_size);
    cell_uint(t, c->samples_per_prompt);
    char prompt[48];
    if (c->prompt_length) snprintf(prompt, sizeof prompt, "%u", c->prompt_length);
    else if (cr->prompt_width_tokens >= 0) snprintf(prompt, sizeof prompt, "file (%lld)", (long long)cr->prompt_width_tokens);
    else snprintf(prompt, sizeof prompt, "file");
    cell(t, prompt);
    cell_uint(t, c->response_length);
    for (uint32_t i = 0; i < bc_case_n_settings(c); i++) cell(t, c->setting_values[i]);
    cell_uint(t, cr->n_iterations);
    const int tps = bc_run_field_index(run, "tokens_per_second"), total = bc_run_field_index(run, "total_ms");
    const double mean = bc_case_stat(run, cr, tps, bc_run_stat_index(run, "mean"));
    const double sd = bc_case_stat(run, cr, tps, bc_run_stat_index(run, "stddev"));
    char rate[96] = "-";
    if (cr->status == BC_CASE_FAILED && cr->n_iterations == 0)
        snprintf(rate, sizeof rate, "failed: %s", bc_status_name(cr->error_code));
    else if (cr->status == BC_CASE_SKIPPED && cr->n_iterations == 0)
        snprintf(rate, sizeof rate, "skipped");
    else if (isfinite(mean) && isfinite(sd))
        snprintf(rate, sizeof rate, "%.2f ± %.2f", mean, sd);
    else if (isfinite(mean))
        snprintf(rate, sizeof rate, "%.2f", mean);
    cell(t, rate);
    cell_double(t, bc_case_stat(run, cr, total, bc_run_stat_index(run, "p50")), 2);
    bc_text_puts(t, "\n");
}

static bc_status md_check_settings(const bc_host *host, const bc_settings *settings, bc_error *err) {
    return bc_report_check_output(host, "markdown", bc_setting_at(settings, SET_PATH)->s, err);
}

static bc_status md_open(const bc_host *host, const bc_settings *settings, const bc_run_report *run,
                         void **out_instance, bc_error *err) {
    (void)run;
    const char *path = bc_setting_at(settings, SET_PATH)->s;
    if (!path || !*path) return bc_error_set(err, BC_ERR_SETTING, "markdown: setting path is empty");
    md_reporter *r = calloc(1, sizeof *r);
    if (!r) return bc_error_set(err, BC_ERR_NOMEM, "markdown: out of memory");
    r->host = host;
    r->path = path;
    *out_instance = r;
    return BC_OK;
}

static bc_status md_close(void *instance, const bc_run_report *run, bc_error *err) {
    md_reporter *r = instance;
    bc_text t = {0};
    write_header(&t, run);
    for (uint32_t i = 0; i < run->n_cases; i++) write_row(&t, run, bc_run_case(run, i));
    if (t.failed) {
        free(t.buf);
        return bc_error_set(err, BC_ERR_NOMEM, "markdown: %s: out of memory building the table", r->path);
    }
    bc_status st = bc_report_write_file(r->host, r->path, t.buf, t.len, err);
    free(t.buf);
    return st;
}

static void md_destroy(void *instance) { free(instance); }

static const bc_reporter_ops md_ops = {
    .struct_size = sizeof(bc_reporter_ops),
    .open = md_open,
    .close = md_close,
    .destroy = md_destroy,
};

static const bc_plugin_desc md_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_REPORTER,
    .name = "markdown",
    .version = "0.1.0",
    .description = "one markdown table line per case, tokens/s with its spread (llama-bench style)",
    BC_SETTINGS_TABLE(md_settings),
    .ops = &md_ops,
    .check_settings = md_check_settings,
};

BC_PLUGIN_DEFINE(md_desc)
