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
 * when the run ends, which is exactly what a journal must not wait for.
 * Each record is instead built whole in memory, newline included, and
 * handed to the kernel in ONE write() on an O_APPEND descriptor, then
 * fsync'ed: a killed run leaves whole lines (at worst a torn last one, which
 * readers skip with a warning), never a record split across writes.
 *
 * Locking: the journal is locked with flock for as long as it is open.
 * A run that starts the journal afresh (append = false) takes an exclusive
 * lock BEFORE it truncates, so a second run on the same path is refused
 * ("another run holds it") and the first one's records are kept. Runs that
 * append take a shared lock: several may append at once (each line is one
 * O_APPEND write, so lines never mix), but none while a run that truncates
 * holds the journal. An existing path that is not a regular file is
 * refused, not written (host->output_check, and again after open). For the same reason ".gz" (a
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
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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
    int fd;              /* the journal, owned and locked; -1 once closed */
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
    if (st == BC_OK) st = bc_report_check_output(host, "jsonl", path, err);
    if (st != BC_OK) return st;
    /* a journal another run holds is refused now, before the first case
     * (open takes the lock for real; this one is let go at once) */
    int append = bc_setting_at(settings, SET_APPEND)->i != 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return BC_OK; /* missing: nobody holds it */
    if (flock(fd, (append ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0 && errno == EWOULDBLOCK)
        st = bc_error_set(err, BC_ERR_IO,
                          "jsonl: %s: another run holds this journal (it is locked); wait for it to finish or give "
                          "this run its own path%s",
                          path, append ? "" : " (runs with append = true may share a journal)");
    close(fd);
    return st;
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

/* Writes the buffered record and its newline with one write(), then
 * flushes it to the disk. A short write (a full disk) is finished with
 * further writes and reported if it cannot be. */
static bc_status write_line(jsonl_reporter *r, bc_error *err) {
    bc_jw_newline(&r->w); /* the line and its newline go out together */
    if (bc_jw_failed(&r->w)) return bc_error_set(err, BC_ERR_NOMEM, "jsonl: %s: out of memory", r->path);
    const char *p = r->w.text.buf;
    size_t left = r->w.text.len;
    while (left > 0) {
        ssize_t n = write(r->fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            return bc_error_set(err, BC_ERR_IO, "jsonl: %s: write failed: %s", r->path,
                                n < 0 ? strerror(errno) : "no progress");
        p += n;
        left -= (size_t)n;
    }
    if (fsync(r->fd) != 0 && errno != EINVAL) /* EINVAL: nothing to sync */
        return bc_error_set(err, BC_ERR_IO, "jsonl: %s: fsync failed: %s", r->path, strerror(errno));
    return BC_OK;
}

static void jsonl_destroy(void *instance) {
    jsonl_reporter *r = instance;
    if (!r) return;
    if (r->fd >= 0) close(r->fd); /* not closed: leave the journal without an end record */
    bc_jw_free(&r->w);
    free(r);
}

/* Opens, locks and (unless appending) empties the journal; the descriptor
 * or -1 with err set. */
static int open_journal(const char *path, int append, bc_error *err) {
    /* O_NONBLOCK: a FIFO put there since check_settings must not hang us */
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd < 0) {
        bc_error_set(err, BC_ERR_IO, "jsonl: cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        bc_error_set(err, BC_ERR_IO, "jsonl: %s: not a regular file; a journal is written only to a regular file",
                     path);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    if (flock(fd, (append ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK)
            bc_error_set(err, BC_ERR_IO,
                         "jsonl: %s: another run holds this journal (it is locked); wait for it to finish or give "
                         "this run its own path%s",
                         path, append ? "" : " (runs with append = true may share a journal)");
        else
            bc_error_set(err, BC_ERR_IO, "jsonl: %s: cannot lock the journal: %s", path, strerror(e));
        return -1;
    }
    if (!append && ftruncate(fd, 0) != 0) { /* only once the lock is ours */
        bc_error_set(err, BC_ERR_IO, "jsonl: %s: cannot empty the journal: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
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
    r->fd = open_journal(path, append, err);
    if (r->fd < 0) {
        st = err && err->code ? err->code : BC_ERR_IO;
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
    if (r->fd < 0) return bc_error_set(err, BC_ERR_INTERNAL, "jsonl: case_finished after close");
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
    if (r->fd < 0) return bc_error_set(err, BC_ERR_INTERNAL, "jsonl: closed twice");
    bc_jw_reset(&r->w);
    write_end_record(&r->w, run);
    bc_status st = write_line(r, err);
    if (close(r->fd) != 0 && st == BC_OK) /* also releases the lock */
        st = bc_error_set(err, BC_ERR_IO, "jsonl: %s: close failed: %s", r->path, strerror(errno));
    r->fd = -1;
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
