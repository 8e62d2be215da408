/* jsonl_reporter.c: the "jsonl" journal reporter plugin. One JSON object
 * per line, each flushed and fsync'ed as soon as it is written, so a run
 * that is killed keeps every case that finished:
 *   {"record":"run", ...}   at open: schema_version, the seed's run keys and
 *                           the run metadata (no cases)
 *   {"record":"case", ...}  at each case_finished, in execution order: the
 *                           same case object as the json reporter's "cases"
 *   {"record":"end", ...}   at close: how every case of the run ended
 *                           (n_ok + n_failed + n_skipped == n_cases; cases
 *                           that never started count as skipped); a
 *                           journal without it is from a run that did not
 *                           finish
 *
 * Unlike the other reporters this one does NOT write through the host's
 * atomic output (temporary file renamed at commit): that file only appears
 * when the run ends, which is exactly what a journal must not wait for. It
 * appends with plain stdio and fsync instead. For the same reason ".gz" (a
 * gzip stream is unreadable until its trailer) and "-" are refused, by
 * check_settings (so validate says so), which also asks the host whether
 * the path can be created.
 *
 * Settings:
 *   path    journal file, default "benchctl.jsonl"
 *   append  bool, default false: add to an existing journal instead of
 *           starting it afresh
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "benchctl/plugin.h"
#include "jsonw.h"
#include "report.h"
#include "report_file.h"
#include "report_json.h"

enum { SET_PATH = 0, SET_APPEND, SET_COUNT };

static const bc_setting_desc jsonl_settings[SET_COUNT] = {
    [SET_PATH] = {.name = "path", .type = BC_SETTING_STRING, .default_string = "benchctl.jsonl",
                  .help = "journal file, one JSON line per finished case (no .gz, no \"-\")"},
    [SET_APPEND] = {.name = "append", .type = BC_SETTING_BOOL, .default_int = 0,
                    .help = "append to an existing journal instead of truncating it"},
};

typedef struct jsonl_reporter {
    const bc_host *host; /* not owned */
    const char *path;    /* host-owned setting, lives until destroy */
    FILE *fp;            /* the journal, owned; NULL once closed */
    bc_jw w;             /* line buffer, reused for every record */
} jsonl_reporter;

static int ends_with(const char *s, const char *suffix) {
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

/* A journal path must name a plain file: not empty, not stdout, not gzip. */
static bc_status check_journal_path(const char *path, bc_error *err) {
    if (!path || !*path) return bc_error_set(err, BC_ERR_SETTING, "jsonl: setting path is empty");
    if (strcmp(path, "-") == 0)
        return bc_error_set(err, BC_ERR_SETTING, "jsonl: path \"-\": the journal must be a file (reporters never "
                                                 "write to stdout; use the json reporter with path \"-\")");
    if (ends_with(path, ".gz"))
        return bc_error_set(err, BC_ERR_SETTING, "jsonl: path %s: a journal cannot be gzip'ed (a killed run would "
                                                 "leave an unreadable stream); drop the .gz suffix", path);
    return BC_OK;
}

/* check_settings: a plain-file path (check_journal_path) that the host says
 * can be created (host->output_check), before the first case. */
static bc_status jsonl_check_settings(const bc_host *host, const bc_settings *settings, bc_error *err) {
    const char *path = bc_setting_at(settings, SET_PATH)->s;
    bc_status st = check_journal_path(path, err);
    if (st != BC_OK) return st;
    return bc_report_check_output(host, "jsonl", path, err);
}

/* mkdir -p for the folder part of path. */
static bc_status make_parent_dirs(const char *path, bc_error *err) {
    size_t n = strlen(path);
    char *dir = malloc(n + 1);
    if (!dir) return bc_error_set(err, BC_ERR_NOMEM, "jsonl: out of memory");
    memcpy(dir, path, n + 1);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        for (char *p = dir + 1;; p++) {
            if (*p != '/' && *p != '\0') continue;
            char saved = *p;
            *p = '\0';
            struct stat sb;
            if (stat(dir, &sb) != 0 && mkdir(dir, 0777) != 0 && errno != EEXIST) {
                bc_status st = bc_error_set(err, BC_ERR_IO, "jsonl: %s: cannot create folder %s: %s", path, dir,
                                            strerror(errno));
                free(dir);
                return st;
            }
            *p = saved;
            if (saved == '\0') break;
        }
    }
    free(dir);
    return BC_OK;
}

/* Writes the buffered record as one line, then flushes it to the disk. */
static bc_status write_line(jsonl_reporter *r, bc_error *err) {
    if (bc_jw_failed(&r->w)) return bc_error_set(err, BC_ERR_NOMEM, "jsonl: %s: out of memory", r->path);
    if (fwrite(r->w.text.buf, 1, r->w.text.len, r->fp) != r->w.text.len || fputc('\n', r->fp) == EOF || fflush(r->fp) != 0)
        return bc_error_set(err, BC_ERR_IO, "jsonl: %s: write failed: %s", r->path, strerror(errno));
    if (fsync(fileno(r->fp)) != 0 && errno != EINVAL) /* EINVAL: a pipe or device, nothing to sync */
        return bc_error_set(err, BC_ERR_IO, "jsonl: %s: fsync failed: %s", r->path, strerror(errno));
    return BC_OK;
}

static void jsonl_destroy(void *instance) {
    jsonl_reporter *r = instance;
    if (!r) return;
    if (r->fp) fclose(r->fp); /* not closed: leave the journal without an end record */
    bc_jw_free(&r->w);
    free(r);
}

/* The run record: schema_version, the seed's run keys and the metadata. */
static void write_run_record(bc_jw *w, const bc_run_report *run) {
    bc_jw_begin_object(w);
    bc_jw_key_string(w, "record", "run");
    bc_jw_key_uint(w, "schema_version", bc_rj_schema_version(run));
    bc_rj_seed_keys(w, run);
    bc_rj_run_metadata(w, run);
    bc_jw_end_object(w);
}

static bc_status jsonl_open(const bc_host *host, const bc_settings *settings, const bc_run_report *run,
                            void **out_instance, bc_error *err) {
    const char *path = bc_setting_at(settings, SET_PATH)->s;
    int append = bc_setting_at(settings, SET_APPEND)->i != 0;
    bc_status st = check_journal_path(path, err); /* also in check_settings; fopen must never see "-" */
    if (st != BC_OK) return st;
    st = make_parent_dirs(path, err);
    if (st != BC_OK) return st;

    jsonl_reporter *r = calloc(1, sizeof *r);
    if (!r) return bc_error_set(err, BC_ERR_NOMEM, "jsonl: out of memory");
    r->host = host;
    r->path = path;
    bc_jw_init(&r->w, 0); /* one line per record */
    r->fp = fopen(path, append ? "a" : "w");
    if (!r->fp) {
        st = bc_error_set(err, BC_ERR_IO, "jsonl: cannot open %s: %s", path, strerror(errno));
        bc_jw_free(&r->w);
        free(r);
        return st;
    }
    write_run_record(&r->w, run);
    st = write_line(r, err);
    if (st != BC_OK) { /* a failed open leaves nothing for destroy */
        jsonl_destroy(r);
        return st;
    }
    *out_instance = r;
    return BC_OK;
}

static bc_status jsonl_case_finished(void *instance, const bc_run_report *run, const bc_case_report *cr,
                                     bc_error *err) {
    jsonl_reporter *r = instance;
    if (!r->fp) return bc_error_set(err, BC_ERR_INTERNAL, "jsonl: case_finished after close");
    bc_jw_reset(&r->w);
    bc_rj_case(&r->w, run, cr, 1, "case");
    return write_line(r, err);
}

/* The end record: how every case of the run ended, counted from run->cases
 * at close (not from the case records written), so cases that never
 * started after an interrupt count as skipped. */
static void write_end_record(bc_jw *w, const bc_run_report *run) {
    bc_case_counts n = bc_count_cases(run);
    bc_jw_begin_object(w);
    bc_jw_key_string(w, "record", "end");
    bc_jw_key_uint(w, "n_cases", run->n_cases);
    bc_jw_key_uint(w, "n_ok", n.ok);
    bc_jw_key_uint(w, "n_failed", n.failed);
    bc_jw_key_uint(w, "n_skipped", n.skipped);
    bc_jw_end_object(w);
}

static bc_status jsonl_close(void *instance, const bc_run_report *run, bc_error *err) {
    jsonl_reporter *r = instance;
    if (!r->fp) return bc_error_set(err, BC_ERR_INTERNAL, "jsonl: closed twice");
    bc_jw_reset(&r->w);
    write_end_record(&r->w, run);
    bc_status st = write_line(r, err);
    if (fclose(r->fp) != 0 && st == BC_OK)
        st = bc_error_set(err, BC_ERR_IO, "jsonl: %s: close failed: %s", r->path, strerror(errno));
    r->fp = NULL;
    return st;
}

static const bc_reporter_ops jsonl_ops = {
    .struct_size = sizeof(bc_reporter_ops),
    .open = jsonl_open,
    .case_started = NULL,
    .case_finished = jsonl_case_finished,
    .close = jsonl_close,
    .destroy = jsonl_destroy,
};

static const bc_plugin_desc jsonl_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_REPORTER,
    .name = "jsonl",
    .version = "0.1.0",
    .description = "journal: one JSON line per finished case, flushed at once (survives a killed run)",
    BC_SETTINGS_TABLE(jsonl_settings),
    .ops = &jsonl_ops,
    .check_settings = jsonl_check_settings,
};

BC_PLUGIN_DEFINE(jsonl_desc)
