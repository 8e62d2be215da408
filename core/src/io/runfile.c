/* runfile.c: a finished run read back from its JSON report or its journal
 * (see runfile.h): the file read (zlib, which reads .gz and plain files
 * alike), its format told from its contents, and the top level of each
 * format; runfile_header.c and runfile_case.c read the run and its cases
 * (runfile_internal.h). jansson parses. */
#define _GNU_SOURCE
#include "runfile.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <unistd.h>
#include <zlib.h>

#include "readfile.h"
#include "runfile_internal.h"

/* Largest file read: a report holds every iteration of every case, but not
 * gigabytes. */
#define BC_RUNFILE_MAX_BYTES (1024ll * 1024 * 1024)

/* ------------------------------------------------------------ reading */

/* The file as lines, read through zlib in chunks: a journal is never held
 * whole, only its longest line (report and --resume read journals of a
 * gigabyte; docs/reliability.md has the figures). */
typedef struct line_reader {
    const char *path;
    gzFile gz;
    char chunk[1 << 16]; /* read ahead, [at, filled) not yet handed out */
    size_t at, filled;
    int eof;
    char *line; /* the current line, NUL-terminated (without its newline); owned */
    size_t len, cap;
    int had_newline; /* the current line ended with '\n' (0: the file's last bytes) */
    uint64_t total;  /* bytes read so far, held to BC_RUNFILE_MAX_BYTES */
} line_reader;

static bc_status reader_open(line_reader *r, const char *path, bc_error *err) {
    memset(r, 0, sizeof *r);
    r->path = path;
    /* a regular file of at most the limit, checked before it is opened
     * (readfile.h); the text inside a .gz is held to the same limit below */
    int fd = bc_open_regular(path, "report", (uint64_t)BC_RUNFILE_MAX_BYTES, NULL, err);
    if (fd < 0) return err && err->code ? err->code : BC_ERR_IO;
    if (!(r->gz = gzdopen(fd, "rb"))) {
        close(fd);
        return bc_error_set(err, BC_ERR_NOMEM, "%s: cannot start reading: out of memory", path);
    }
    return BC_OK;
}

static void reader_close(line_reader *r) {
    if (r->gz) gzclose(r->gz);
    free(r->line);
    r->gz = NULL, r->line = NULL;
}

/* Appends n bytes to the current line. */
static bc_status line_append(line_reader *r, const char *p, size_t n, bc_error *err) {
    if (r->len + n + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 4096;
        while (cap < r->len + n + 1) cap *= 2;
        char *grown = realloc(r->line, cap);
        if (!grown) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory for a line of %zu bytes", r->path, r->len + n);
        r->line = grown, r->cap = cap;
    }
    memcpy(r->line + r->len, p, n);
    r->len += n;
    r->line[r->len] = '\0';
    return BC_OK;
}

/* Refills the chunk; r->eof at the end of the file. */
static bc_status reader_fill(line_reader *r, bc_error *err) {
    int got = gzread(r->gz, r->chunk, (unsigned)sizeof r->chunk);
    if (got < 0) {
        int zerr = 0;
        const char *why = gzerror(r->gz, &zerr);
        return bc_error_set(err, BC_ERR_IO, "%s: read error: %s", r->path, why ? why : "?");
    }
    r->at = 0, r->filled = (size_t)got;
    r->total += (uint64_t)got;
    if (r->total > (uint64_t)BC_RUNFILE_MAX_BYTES)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: larger than %lld MiB, not a benchctl report", r->path,
                            BC_RUNFILE_MAX_BYTES >> 20);
    if (got == 0) r->eof = 1;
    return BC_OK;
}

/* The next line into r->line (r->len bytes; a NUL inside stays in len);
 * *got 0 at the end of the file. until_eof: the whole rest of the file as
 * one "line" (a report is one document). */
static bc_status reader_next(line_reader *r, int until_eof, int *got, bc_error *err) {
    r->len = 0;
    r->had_newline = 0;
    if (r->line) r->line[0] = '\0';
    int any = 0;
    for (;;) {
        if (r->at == r->filled) {
            if (r->eof) break;
            bc_status st = reader_fill(r, err);
            if (st != BC_OK) return st;
            if (r->eof) break;
        }
        const char *start = r->chunk + r->at;
        size_t avail = r->filled - r->at;
        const char *nl = until_eof ? NULL : memchr(start, '\n', avail);
        size_t take = nl ? (size_t)(nl - start) : avail;
        bc_status st = line_append(r, start, take, err);
        if (st != BC_OK) return st;
        any = 1;
        r->at += take + (nl ? 1 : 0);
        if (nl) {
            r->had_newline = 1;
            break;
        }
    }
    if (any && !r->line) {
        bc_status st = line_append(r, "", 0, err);
        if (st != BC_OK) return st;
    }
    *got = any;
    return BC_OK;
}

/* --------------------------------------------------------------- formats */

static bc_status read_report(bc_runfile *rf, json_t *top, bc_error *err) {
    const json_t *cases = json_object_get(top, "cases");
    if (!json_is_array(cases)) return bc_error_set(err, BC_ERR_FORMAT, "%s: no \"cases\" list; not a run report", rf->path);
    bc_status st = bc_rf_read_header(rf, top, err);
    if (st == BC_OK && !rf->field_names) {
        rf->format = BC_RUNFILE_SEED_JSON;
        st = bc_rf_fields_from_profiles(rf, cases, err);
    }
    if (st == BC_OK) st = bc_rf_read_field_descs(rf, top, err);
    for (size_t i = 0; st == BC_OK && i < json_array_size(cases); i++) st = bc_rf_add_case(rf, top, json_array_get(cases, i), err);
    rf->complete = 1;
    return st;
}

/* The journal: one JSON object per line, read one line at a time (r holds
 * its first line). A last line that does not parse and has no newline is a
 * record cut short (SIGKILL): skipped, with a warning. Any other bad line
 * is an error naming it. */
static bc_status read_journal(bc_runfile *rf, line_reader *r, bc_error *err) {
    json_t *header = NULL;
    bc_status st = BC_OK;
    size_t line_no = 1;
    for (int have = 1; st == BC_OK && have; line_no++) {
        if (line_no > 1 && ((st = reader_next(r, 0, &have, err)) != BC_OK || !have)) break;
        if (r->len == 0) continue;
        json_error_t je;
        json_t *rec = json_loadb(r->line, r->len, 0, &je);
        if (!rec) {
            if (!r->had_newline) {
                snprintf(rf->warning, sizeof rf->warning, "%s:%zu: the last line is cut short (the run was killed?); skipped",
                         rf->path, line_no);
                break;
            }
            st = bc_error_set(err, BC_ERR_FORMAT, "%s:%zu: not a JSON line: %s", rf->path, line_no, je.text);
            break;
        }
        const char *kind = json_string_value(json_object_get(rec, "record"));
        if (kind && strcmp(kind, "run") == 0 && !header) {
            header = rec;
            st = bc_rf_read_header(rf, header, err);
            if (st == BC_OK) st = bc_rf_read_field_descs(rf, header, err);
            continue;
        }
        if (!header) st = bc_error_set(err, BC_ERR_FORMAT, "%s:%zu: a journal starts with its \"run\" record", rf->path, line_no);
        else if (kind && strcmp(kind, "case") == 0) st = bc_rf_add_case(rf, header, rec, err);
        else if (kind && strcmp(kind, "end") == 0) rf->complete = 1;
        else st = bc_error_set(err, BC_ERR_FORMAT, "%s:%zu: unknown record \"%s\"", rf->path, line_no, kind ? kind : "?");
        json_decref(rec);
    }
    if (st == BC_OK && !header) st = bc_error_set(err, BC_ERR_FORMAT, "%s: an empty journal", rf->path);
    json_decref(header);
    return st;
}

/* 1 when line (n bytes) is a JSON object with a "record" member. */
static int is_journal(const char *line, size_t n) {
    json_t *first = json_loadb(line, n, 0, NULL);
    int yes = json_is_object(first) && json_object_get(first, "record") != NULL;
    json_decref(first);
    return yes;
}

bc_status bc_runfile_read(const char *path, bc_runfile *out, bc_error *err) {
    memset(out, 0, sizeof *out);
    out->memcpy_gb_per_s = NAN; /* until the header says */
    line_reader r;
    bc_status st = reader_open(&r, path, err);
    if (st != BC_OK) return st;
    if (!(out->path = strdup(path))) {
        reader_close(&r);
        return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
    }
    int have = 0;
    st = reader_next(&r, 0, &have, err);
    /* A journal's first line is its "run" record; a report is one document. */
    if (st == BC_OK && have && is_journal(r.line, r.len)) {
        out->format = BC_RUNFILE_JOURNAL;
        st = read_journal(out, &r, err);
        if (st == BC_OK) st = bc_rf_key_by_backend(out, err);
        reader_close(&r);
        if (st != BC_OK) bc_runfile_free(out);
        return st;
    }
    /* the rest of the document after its first line */
    size_t first_len = r.len;
    int first_nl = r.had_newline;
    char *text = r.line; /* taken over from the reader */
    size_t cap = r.cap;
    r.line = NULL, r.len = 0, r.cap = 0;
    if (st == BC_OK) {
        int more = 0;
        st = reader_next(&r, 1, &more, err);
        size_t need = first_len + 1 + r.len + 1;
        if (st == BC_OK && need > cap) {
            char *grown = realloc(text, need);
            if (!grown) st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
            else text = grown;
        }
        if (st == BC_OK && (text || need > 1)) {
            if (!text) text = calloc(1, need);
            if (!text) st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
        }
        if (st == BC_OK) {
            if (first_nl) text[first_len++] = '\n';
            if (r.len) memcpy(text + first_len, r.line, r.len);
            first_len += r.len;
            text[first_len] = '\0';
        }
    }
    reader_close(&r);
    if (st != BC_OK) {
        free(text);
        bc_runfile_free(out);
        return st;
    }
    json_error_t je;
    json_t *doc = json_loadb(text ? text : "", first_len, 0, &je);
    free(text); /* jansson holds its own copy of every value */
    if (json_is_object(doc)) {
        out->format = BC_RUNFILE_JSON;
        st = read_report(out, doc, err);
        if (st == BC_OK) st = bc_rf_key_by_backend(out, err);
    } else if (doc) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: not a benchctl report (the top level is not an object)", path);
    } else {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s:%d: not a benchctl report or journal: %s", path, je.line, je.text);
    }
    json_decref(doc);
    if (st != BC_OK) bc_runfile_free(out);
    return st;
}
