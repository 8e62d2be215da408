/* json_reporter.c: the "json" reporter plugin. At close it writes the whole
 * run as one JSON document through the host's atomic output (so ".gz" and
 * "-" work): the DeepSpeed OPSD rollout benchmark's keys plus benchctl's
 * extended metadata. Schema: docs/reporters.md. Its check_settings makes
 * validate and run refuse a path that cannot be written, before any case.
 *
 * Settings:
 *   path    output file, default "benchctl.json" ("-" = stdout, "*.gz" = gzip)
 *   indent  spaces per level, 0..8, default 2 (0 = one line)
 */
#include <stdlib.h>
#include <string.h>

#include "benchctl/plugin.h"
#include "jsonw.h"
#include "report.h"
#include "report_file.h"
#include "report_json.h"

enum { SET_PATH = 0, SET_INDENT, SET_COUNT };

static const bc_setting_desc json_settings[SET_COUNT] = {
    [SET_PATH] = {.name = "path", .type = BC_SETTING_STRING, .default_string = "benchctl.json",
                  .help = "output file; \"-\" is stdout, a .gz suffix means gzip"},
    [SET_INDENT] = {.name = "indent", .type = BC_SETTING_INT, .default_int = 2, .has_range = 1, .min = 0,
                    .max = 8, .help = "spaces per nesting level; 0 writes one line"},
};

typedef struct json_reporter {
    const bc_host *host; /* not owned */
    const char *path;    /* host-owned setting, lives until destroy */
    int indent;
} json_reporter;

/* check_settings: the output path must be writable (host->output_check),
 * so validate and run refuse a bad path before the first case. */
static bc_status json_check_settings(const bc_host *host, const bc_settings *settings, bc_error *err) {
    return bc_report_check_output(host, "json", bc_setting_at(settings, SET_PATH)->s, err);
}

static bc_status json_open(const bc_host *host, const bc_settings *settings, const bc_run_report *run,
                           void **out_instance, bc_error *err) {
    (void)run;
    const char *path = bc_setting_at(settings, SET_PATH)->s;
    if (!path || !*path) return bc_error_set(err, BC_ERR_SETTING, "json: setting path is empty");
    json_reporter *r = calloc(1, sizeof *r);
    if (!r) return bc_error_set(err, BC_ERR_NOMEM, "json: out of memory");
    r->host = host;
    r->path = path;
    r->indent = (int)bc_setting_at(settings, SET_INDENT)->i;
    *out_instance = r;
    return BC_OK;
}

/* Seed key "dtype": the one dtype every case ran in, or null when they
 * differ (then "dtypes" lists them, in requested order). Always writes
 * "dtypes". */
static void write_dtypes(bc_jw *w, const bc_run_report *run) {
    const char *single = NULL;
    int mixed = 0;
    for (uint32_t i = 0; i < run->n_cases; i++) {
        const char *d = bc_case_dtype(bc_run_case(run, i)->c);
        if (!d) continue;
        if (!single)
            single = d;
        else if (strcmp(single, d) != 0)
            mixed = 1;
    }
    bc_jw_key_string(w, "dtype", mixed ? NULL : single);
    bc_jw_key(w, "dtypes");
    bc_jw_begin_array(w);
    for (uint32_t i = 0; i < run->n_cases; i++) {
        const char *d = bc_case_dtype(bc_run_case(run, i)->c);
        if (!d) continue;
        int seen = 0;
        for (uint32_t j = 0; j < i && !seen; j++) {
            const char *e = bc_case_dtype(bc_run_case(run, j)->c);
            seen = e && strcmp(e, d) == 0;
        }
        if (!seen) bc_jw_string(w, d);
    }
    bc_jw_end_array(w);
}

/* Seed key "release_inference_cache": true/false when every case agrees,
 * null when the run mixes policies (each case then says its own). */
static void write_release(bc_jw *w, const bc_run_report *run) {
    int value = -1;
    for (uint32_t i = 0; i < run->n_cases; i++) {
        int v = bc_run_case(run, i)->c->release_cache ? 1 : 0;
        if (value == -1)
            value = v;
        else if (value != v)
            value = -2;
    }
    bc_jw_key(w, "release_inference_cache");
    if (value < 0)
        bc_jw_null(w);
    else
        bc_jw_bool(w, value);
}

static bc_status json_close(void *instance, const bc_run_report *run, bc_error *err) {
    json_reporter *r = instance;
    bc_jw w;
    bc_jw_init(&w, r->indent);
    bc_jw_begin_object(&w);
    bc_jw_key(&w, "schema_version");
    bc_jw_uint(&w, bc_rj_schema_version(run));
    bc_rj_seed_keys(&w, run);
    write_dtypes(&w, run);
    write_release(&w, run);
    bc_rj_run_metadata(&w, run);
    bc_jw_key(&w, "cases");
    bc_jw_begin_array(&w);
    for (uint32_t i = 0; i < run->n_cases; i++) bc_rj_case(&w, run, bc_run_case(run, i), 1, NULL);
    bc_jw_end_array(&w);
    bc_jw_end_object(&w);
    bc_jw_newline(&w);
    bc_status st = bc_jw_failed(&w)
                       ? bc_error_set(err, BC_ERR_NOMEM, "json: %s: out of memory building the report", r->path)
                       : bc_report_write_file(r->host, r->path, w.text.buf, w.text.len, err);
    bc_jw_free(&w);
    return st;
}

static void json_destroy(void *instance) { free(instance); }

static const bc_reporter_ops json_ops = {
    .struct_size = sizeof(bc_reporter_ops),
    .open = json_open,
    .case_started = NULL,
    .case_finished = NULL,
    .close = json_close,
    .destroy = json_destroy,
};

static const bc_plugin_desc json_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_REPORTER,
    .name = "json",
    .version = "0.1.0",
    .description = "the whole run as one JSON document (DeepSpeed OPSD rollout keys + extended metadata)",
    BC_SETTINGS_TABLE(json_settings),
    .ops = &json_ops,
    .check_settings = json_check_settings,
};

BC_PLUGIN_DEFINE(json_desc)
