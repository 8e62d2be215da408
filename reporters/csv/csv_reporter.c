/* csv_reporter.c: the "csv" reporter plugin. At close it writes one row per
 * case (requested order) with flat summary columns, through the host's
 * atomic output (so ".gz" and "-" work). The header is documented in
 * docs/reporters.md:
 *
 *   index,precision,dtype,cache_policy,release_inference_cache,batch_size,
 *   samples_per_prompt,prompt_length,requested_response_length,
 *   returned_response_length,prompt_width_tokens,prompt_min_tokens,
 *   prompt_max_tokens,status,error_code,rebuilt,n_iterations,
 *   then for each field F of run->field_names that some case of the run
 *   measured (a finite statistic) and each statistic S of run->stat_names,
 *   in their orders: F_S (e.g. total_ms_p95); a run no case of which
 *   measured anything (every case failed) has the host's fields,
 *   peak_memory_mb,held_between_rollouts_mib,peak_rss_mb,
 *   stop_reason,total_ms_rel_ci,load_avg_start,load_avg_end,cpu_steal_share,
 *   message,backend (the case's backend; empty from a host before 2.2)
 *
 * The statistics columns come from the run's tables, so a field or a
 * statistic the host adds gets its columns without a change here, and a
 * field no backend of the run fills (another backend's metric, a figure
 * only the native engine or only a worker measures) has none.
 * Unknown or unmeasured values are empty cells. Cells are quoted per
 * RFC 4180 when they hold a comma, a double quote or a line break; lines end
 * in CRLF as RFC 4180 says. Numbers use the shortest exact form. Its
 * check_settings makes validate and run refuse a path that cannot be written.
 *
 * Settings:
 *   path   output file, default "benchctl.csv" ("-" = stdout, "*.gz" = gzip)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "benchctl/plugin.h"
#include "jsonw.h"
#include "report.h"
#include "report_file.h"

enum { SET_PATH = 0, SET_COUNT };

static const bc_setting_desc csv_settings[SET_COUNT] = {
    [SET_PATH] = {.name = "path", .type = BC_SETTING_STRING, .default_string = "benchctl.csv",
                  .help = "output file; \"-\" is stdout, a .gz suffix means gzip"},
};

typedef struct csv_reporter {
    const bc_host *host; /* not owned */
    const char *path;    /* host-owned setting, lives until destroy */
} csv_reporter;

/* One cell, quoted when RFC 4180 requires it; preceded by a comma unless it
 * is the first of its row. */
static void cell(bc_text *t, int *first, const char *s) {
    if (!*first) bc_text_put(t, ",", 1);
    *first = 0;
    if (!s) return;
    if (strpbrk(s, ",\"\r\n") == NULL) {
        bc_text_puts(t, s);
        return;
    }
    bc_text_put(t, "\"", 1);
    for (const char *p = s; *p; p++) {
        if (*p == '"') bc_text_put(t, "\"", 1); /* "" inside quotes */
        bc_text_put(t, p, 1);
    }
    bc_text_put(t, "\"", 1);
}

static void cell_double(bc_text *t, int *first, double x) {
    char num[40];
    bc_format_double(num, sizeof num, x); /* "" for NaN */
    cell(t, first, num);
}

static void cell_uint(bc_text *t, int *first, uint64_t x) {
    char num[32];
    snprintf(num, sizeof num, "%llu", (unsigned long long)x);
    cell(t, first, num);
}

/* Negative = unknown = empty. */
static void cell_int_or_empty(bc_text *t, int *first, int64_t x) {
    char num[32] = "";
    if (x >= 0) snprintf(num, sizeof num, "%lld", (long long)x);
    cell(t, first, num);
}

static void end_row(bc_text *t) { bc_text_put(t, "\r\n", 2); }

/* The columns of a distributed run (docs/scale.md), before "message"; only
 * when the run is one. */
static const char *const dist_columns[] = {
    "rank", "host", "step_tokens_per_second", "ideal_tokens_per_second", "straggler_efficiency", "straggler_tax_ms",
    "rank_time_min_ms", "rank_time_mean_ms", "rank_time_max_ms", "rank_time_std_ms", "slowest_rank", "slowest_host",
    "peak_memory_max_mib", "peak_memory_sum_mib", "lengths_forced"};

static void write_dist_cells(bc_text *t, int *first, const bc_case_distributed *cd) {
    if (!cd) {
        for (size_t i = 0; i < sizeof dist_columns / sizeof dist_columns[0]; i++) cell(t, first, "");
        return;
    }
    cell_int_or_empty(t, first, cd->rank);
    cell(t, first, cd->host ? cd->host : "");
    cell_double(t, first, cd->step_tokens_per_second);
    cell_double(t, first, cd->ideal_tokens_per_second);
    cell_double(t, first, cd->straggler_efficiency);
    cell_double(t, first, cd->straggler_tax_ms);
    cell_double(t, first, cd->rank_time_min_ms);
    cell_double(t, first, cd->rank_time_mean_ms);
    cell_double(t, first, cd->rank_time_max_ms);
    cell_double(t, first, cd->rank_time_std_ms);
    cell_int_or_empty(t, first, cd->slowest_rank);
    cell(t, first, cd->slowest_host ? cd->slowest_host : "");
    cell_double(t, first, cd->peak_memory_max_mib);
    cell_double(t, first, cd->peak_memory_sum_mib);
    cell(t, first, cd->full_length < 0 ? "" : cd->full_length ? "true" : "false");
}

/* Whether field f gets columns: some case measured it (its count "n" is
 * above 0, or, in a run without that statistic, some statistic of it is
 * finite); when no case measured any field, the host's own fields do. */
static int field_measured(const bc_run_report *run, uint32_t f) {
    int n_stat = -1;
    for (uint32_t s = 0; s < run->n_stats; s++)
        if (run->stat_names[s] && strcmp(run->stat_names[s], "n") == 0) n_stat = (int)s;
    for (uint32_t i = 0; i < run->n_cases; i++)
        for (uint32_t s = 0; s < run->n_stats; s++) {
            double v = bc_case_stat(run, bc_run_case(run, i), (int)f, (int)s);
            if (n_stat >= 0 ? (int)s == n_stat && v > 0 : isfinite(v)) return 1;
        }
    return 0;
}

/* The fields that get columns (keep[n_fields], 1 or 0), in run->field_names' order. */
static void fields_kept(const bc_run_report *run, unsigned char *keep) {
    int any = 0;
    for (uint32_t f = 0; f < run->n_fields; f++) any |= keep[f] = (unsigned char)field_measured(run, f);
    uint32_t n_host = BC_RUN_FIELD(run, n_host_fields, run->n_fields);
    if (!any)
        for (uint32_t f = 0; f < run->n_fields; f++) keep[f] = f < n_host;
}

static void write_header(bc_text *t, const bc_run_report *run, const unsigned char *keep) {
    static const char *const identity[] = {
        "index", "precision", "dtype", "cache_policy", "release_inference_cache",
        "batch_size", "samples_per_prompt", "prompt_length", "requested_response_length", "returned_response_length",
        "prompt_width_tokens", "prompt_min_tokens", "prompt_max_tokens",
        "status", "error_code", "rebuilt", "n_iterations"};
    int first = 1;
    for (size_t i = 0; i < sizeof identity / sizeof identity[0]; i++) cell(t, &first, identity[i]);
    for (uint32_t f = 0; f < run->n_fields; f++) {
        for (uint32_t s = 0; keep[f] && s < run->n_stats; s++) {
            char name[256];
            snprintf(name, sizeof name, "%s_%s", run->field_names[f], run->stat_names[s]);
            cell(t, &first, name);
        }
    }
    cell(t, &first, "peak_memory_mb");
    cell(t, &first, "held_between_rollouts_mib");
    cell(t, &first, "peak_rss_mb");
    cell(t, &first, "stop_reason");
    cell(t, &first, "total_ms_rel_ci");
    cell(t, &first, "load_avg_start");
    cell(t, &first, "load_avg_end");
    cell(t, &first, "cpu_steal_share");
    if (BC_RUN_FIELD(run, distributed, NULL))
        for (size_t i = 0; i < sizeof dist_columns / sizeof dist_columns[0]; i++) cell(t, &first, dist_columns[i]);
    cell(t, &first, "message");
    cell(t, &first, "backend");
    const bc_case *c0 = run->n_cases ? bc_run_case(run, 0)->c : NULL;
    for (uint32_t i = 0; c0 && i < bc_case_n_settings(c0); i++) {
        char name[256];
        snprintf(name, sizeof name, "backend_settings.%s", c0->setting_names[i]);
        cell(t, &first, name);
    }
    end_row(t);
}

static void write_row(bc_text *t, const bc_run_report *run, const bc_case_report *cr, const unsigned char *keep) {
    const bc_case *c = cr->c;
    int first = 1;
    cell_uint(t, &first, c->index);
    cell(t, &first, c->precision);
    cell(t, &first, bc_case_dtype(c));
    cell(t, &first, c->cache_policy);
    cell(t, &first, c->release_cache ? "true" : "false");
    cell_uint(t, &first, c->batch_size);
    cell_uint(t, &first, c->samples_per_prompt);
    cell_uint(t, &first, c->prompt_length);
    cell_uint(t, &first, c->response_length);
    cell_int_or_empty(t, &first, cr->returned_response_length);
    cell_int_or_empty(t, &first, cr->prompt_width_tokens);
    cell_int_or_empty(t, &first, cr->prompt_min_tokens);
    cell_int_or_empty(t, &first, cr->prompt_max_tokens);
    cell(t, &first, bc_case_status_name(cr->status));
    cell(t, &first, cr->error_code != BC_OK ? bc_status_name(cr->error_code) : "");
    cell(t, &first, cr->rebuilt ? "true" : "false");
    cell_uint(t, &first, cr->n_iterations);
    for (uint32_t f = 0; f < run->n_fields; f++)
        for (uint32_t s = 0; keep[f] && s < run->n_stats; s++)
            cell_double(t, &first, bc_case_stat(run, cr, (int)f, (int)s));
    cell_double(t, &first, cr->peak_memory_mib);
    cell_double(t, &first, bc_bytes_to_mib(cr->held_between_rollouts_bytes));
    cell_double(t, &first, bc_bytes_to_mib(cr->peak_rss_bytes));
    cell(t, &first, bc_case_stop_reason(run, cr));
    cell_double(t, &first, BC_CASE_FIELD(run, cr, total_ms_rel_ci, NAN));
    cell_double(t, &first, BC_CASE_FIELD(run, cr, load_avg_start, NAN));
    cell_double(t, &first, BC_CASE_FIELD(run, cr, load_avg_end, NAN));
    cell_double(t, &first, BC_CASE_FIELD(run, cr, cpu_steal_share, NAN));
    if (BC_RUN_FIELD(run, distributed, NULL)) write_dist_cells(t, &first, BC_CASE_FIELD(run, cr, distributed, NULL));
    cell(t, &first, cr->message ? cr->message : "");
    cell(t, &first, bc_case_backend(c) ? bc_case_backend(c) : "");
    for (uint32_t i = 0; i < bc_case_n_settings(c); i++) cell(t, &first, c->setting_values[i]);
    end_row(t);
}

/* check_settings: the output path must be writable (host->output_check),
 * so validate and run refuse a bad path before the first case. */
static bc_status csv_check_settings(const bc_host *host, const bc_settings *settings, bc_error *err) {
    return bc_report_check_output(host, "csv", bc_setting_at(settings, SET_PATH)->s, err);
}

static bc_status csv_open(const bc_host *host, const bc_settings *settings, const bc_run_report *run,
                          void **out_instance, bc_error *err) {
    (void)run;
    const char *path = bc_setting_at(settings, SET_PATH)->s;
    if (!path || !*path) return bc_error_set(err, BC_ERR_SETTING, "csv: setting path is empty");
    csv_reporter *r = calloc(1, sizeof *r);
    if (!r) return bc_error_set(err, BC_ERR_NOMEM, "csv: out of memory");
    r->host = host;
    r->path = path;
    *out_instance = r;
    return BC_OK;
}

static bc_status csv_close(void *instance, const bc_run_report *run, bc_error *err) {
    csv_reporter *r = instance;
    bc_text t = {0};
    unsigned char *keep = calloc(run->n_fields + 1, 1); /* owned here: which fields get columns */
    if (!keep) return bc_error_set(err, BC_ERR_NOMEM, "csv: %s: out of memory building the table", r->path);
    fields_kept(run, keep);
    write_header(&t, run, keep);
    for (uint32_t i = 0; i < run->n_cases; i++) write_row(&t, run, bc_run_case(run, i), keep);
    free(keep);
    if (t.failed) {
        free(t.buf);
        return bc_error_set(err, BC_ERR_NOMEM, "csv: %s: out of memory building the table", r->path);
    }
    bc_status st = bc_report_write_file(r->host, r->path, t.buf, t.len, err);
    free(t.buf);
    return st;
}

static void csv_destroy(void *instance) { free(instance); }

static const bc_reporter_ops csv_ops = {
    .struct_size = sizeof(bc_reporter_ops),
    .open = csv_open,
    .case_started = NULL,
    .case_finished = NULL,
    .close = csv_close,
    .destroy = csv_destroy,
};

static const bc_plugin_desc csv_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_REPORTER,
    .name = "csv",
    .version = "0.1.0",
    .description = "one row per case with flat summary columns (RFC 4180)",
    BC_SETTINGS_TABLE(csv_settings),
    .ops = &csv_ops,
    .check_settings = csv_check_settings,
};

BC_PLUGIN_DEFINE(csv_desc)
