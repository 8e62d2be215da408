/* config_ints.c: refuses integer literals that libconfig would narrow.
 *
 * libconfig 1.5 (Debian's) reads a plain integer literal as a 32-bit int and
 * keeps only its low 32 bits, without an error: "-4294967295" becomes 1 and
 * "0x100000001" becomes 1. Once parsed, nothing in the tree tells such a
 * value from an honest one, so the text itself is scanned: every decimal or
 * hexadecimal literal without the L suffix must lie in [-2^31, 2^31 - 1]
 * (hexadecimal: [0, 0x7fffffff]), and one with L must fit in 64 bits.
 *
 * The scanner follows libconfig's lexical rules (strings, the three comment
 * forms, @include, names, numbers) closely enough to find each literal and
 * the setting it belongs to; everything else is left to libconfig, which has
 * already accepted the text when this runs.
 */
#define _POSIX_C_SOURCE 200809L

#include "config_ints.h"
#include "readfile.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_tree.h"

#define SCAN_MAX_DEPTH 32     /* nesting kept for paths; deeper keeps the last */
#define SCAN_MAX_INCLUDES 10  /* libconfig's own include depth */
#define SCAN_MAX_BYTES (64u << 20)

typedef struct frame {
    int is_list;   /* [ ] or ( ): elements counted by commas */
    size_t index;  /* the element being read (lists) */
    char path[256];
} frame;

typedef struct scanner {
    const char *where_file; /* "bench.cfg" (file:line), or NULL: label below */
    const char *label;      /* "--set KEY" when scanning a --set value */
    const char *include_dir;
    int include_depth;
    frame stack[SCAN_MAX_DEPTH];
    int depth;              /* frames in use, >= 1 (the root group) */
    int overflow_depth;     /* nesting beyond SCAN_MAX_DEPTH */
    char last_name[128];    /* the last name read */
    char pending[128];      /* the name of the setting whose value comes next */
} scanner;

static bc_status scan_text(scanner *sc, const char *text, size_t len, bc_error *err);

/* The path of a value at the current position. */
static void value_path(const scanner *sc, char *buf, size_t n) {
    const frame *f = &sc->stack[sc->depth - 1];
    if (f->is_list) snprintf(buf, n, "%s", f->path);
    else bc_cfg_path_join(buf, n, f->path, sc->pending);
}

static void push(scanner *sc, int is_list) {
    if (sc->depth >= SCAN_MAX_DEPTH) {
        sc->overflow_depth++;
        return;
    }
    const frame *top = &sc->stack[sc->depth - 1];
    frame *f = &sc->stack[sc->depth++];
    f->is_list = is_list;
    f->index = 0;
    if (top->is_list) bc_cfg_path_index(f->path, sizeof f->path, top->path, top->index);
    else bc_cfg_path_join(f->path, sizeof f->path, top->path, sc->pending);
    sc->pending[0] = '\0';
}

static void pop(scanner *sc) {
    if (sc->overflow_depth > 0) sc->overflow_depth--;
    else if (sc->depth > 1) sc->depth--;
}

static bc_status refuse(const scanner *sc, unsigned line, const char *lit, size_t n, const char *why, bc_error *err) {
    char path[300];
    value_path(sc, path, sizeof path);
    if (sc->where_file)
        return bc_error_set(err, BC_ERR_SETTING, "%s:%u: %s: %.*s %s", sc->where_file, line, path[0] ? path : "(top)",
                            (int)n, lit, why);
    return bc_error_set(err, BC_ERR_SETTING, "%s: %.*s %s", sc->label, (int)n, lit, why);
}

/* One number token lit[0..n) (sign included): refuses it when libconfig
 * would narrow it. Floats and anything that is not an integer pass. */
static bc_status check_number(const scanner *sc, unsigned line, const char *lit, size_t n, bc_error *err) {
    size_t i = 0;
    int neg = 0;
    if (lit[i] == '+' || lit[i] == '-') neg = lit[i++] == '-';
    int hex = n - i > 2 && lit[i] == '0' && (lit[i + 1] == 'x' || lit[i + 1] == 'X');
    if (hex) i += 2;
    size_t d0 = i;
    while (i < n && (hex ? isxdigit((unsigned char)lit[i]) : isdigit((unsigned char)lit[i]))) i++;
    size_t d1 = i;
    int longs = 0;
    while (i < n && lit[i] == 'L') i++, longs++;
    if (d1 == d0 || i != n || longs > 2) return BC_OK; /* a float, or not a number libconfig reads as an integer */
    /* the magnitude, saturating at 2^64 - 1 */
    uint64_t mag = 0;
    int too_big = 0;
    for (size_t k = d0; k < d1; k++) {
        int c = (unsigned char)lit[k];
        unsigned dv = (unsigned)(isdigit(c) ? c - '0' : tolower(c) - 'a' + 10);
        unsigned base = hex ? 16u : 10u;
        if (mag > (UINT64_MAX - dv) / base) too_big = 1;
        else mag = mag * base + dv;
    }
    if (longs) {
        /* 64-bit: decimals in [-2^63, 2^63 - 1]; hexadecimals up to 2^64 - 1 */
        uint64_t lim = hex ? UINT64_MAX : neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        if (too_big || mag > lim)
            return refuse(sc, line, lit, n, "does not fit in a 64-bit integer", err);
        return BC_OK;
    }
    uint64_t lim = hex ? 0x7fffffffu : neg ? (uint64_t)INT32_MAX + 1 : (uint64_t)INT32_MAX;
    if (!too_big && mag <= lim) return BC_OK;
    char why[200];
    if (too_big) {
        snprintf(why, sizeof why, "does not fit in 64 bits, let alone in the 32 bits of a plain libconfig integer");
    } else {
        uint32_t low = (uint32_t)(neg ? (uint64_t)0 - mag : mag);
        snprintf(why, sizeof why,
                 "does not fit in 32 bits: libconfig reads a plain integer as 32-bit and would keep %lld; "
                 "write %.*sL for a 64-bit integer",
                 (long long)(int32_t)low, (int)n, lit);
    }
    return refuse(sc, line, lit, n, why, err);
}

/* @include "name": scans the named file as libconfig would include it. */
static bc_status scan_include(scanner *sc, const char *name, size_t n, bc_error *err) {
    if (sc->include_depth >= SCAN_MAX_INCLUDES) return BC_OK; /* libconfig refused it already */
    char path[4096];
    if (name[0] == '/' || !sc->include_dir)
        snprintf(path, sizeof path, "%.*s", (int)n, name);
    else
        snprintf(path, sizeof path, "%s/%.*s", sc->include_dir, (int)n, name);
    size_t len = 0;
    char *text = NULL;
    bc_error ignored = {0};
    if (bc_read_regular(path, "included config file", SCAN_MAX_BYTES, &text, &len, &ignored) != BC_OK)
        return BC_OK; /* libconfig read it; a file gone since is not ours to report */
    scanner sub = *sc;
    sub.where_file = path;
    sub.include_depth++;
    bc_status st = scan_text(&sub, text, len, err);
    /* the included file continues the includer's tree */
    memcpy(sc->stack, sub.stack, sizeof sc->stack);
    sc->depth = sub.depth;
    sc->overflow_depth = sub.overflow_depth;
    memcpy(sc->pending, sub.pending, sizeof sc->pending);
    free(text);
    return st;
}

static int name_start(int c) { return isalpha(c) || c == '*'; }
static int name_char(int c) { return isalnum(c) || c == '-' || c == '_' || c == '*'; }

static bc_status scan_text(scanner *sc, const char *t, size_t len, bc_error *err) {
    unsigned line = 1;
    size_t i = 0;
    while (i < len) {
        int c = (unsigned char)t[i];
        if (c == '\n') {
            line++, i++;
        } else if (isspace(c)) {
            i++;
        } else if (c == '#' || (c == '/' && i + 1 < len && t[i + 1] == '/')) {
            while (i < len && t[i] != '\n') i++;
        } else if (c == '/' && i + 1 < len && t[i + 1] == '*') {
            i += 2;
            while (i < len && !(t[i] == '*' && i + 1 < len && t[i + 1] == '/')) line += t[i++] == '\n';
            i = i + 2 <= len ? i + 2 : len;
        } else if (c == '"') {
            for (i++; i < len && t[i] != '"'; i++) {
                if (t[i] == '\\' && i + 1 < len) i++;
                if (t[i] == '\n') line++;
            }
            i++;
        } else if (c == '@' && len - i >= 8 && strncmp(t + i, "@include", 8) == 0) {
            i += 8;
            while (i < len && (t[i] == ' ' || t[i] == '\t')) i++;
            if (i < len && t[i] == '"') {
                size_t s = ++i;
                while (i < len && t[i] != '"' && t[i] != '\n') i++;
                bc_status st = scan_include(sc, t + s, i - s, err);
                if (st) return st;
                if (i < len && t[i] == '"') i++;
            }
        } else if (name_start(c)) {
            size_t s = i;
            while (i < len && name_char((unsigned char)t[i])) i++;
            snprintf(sc->last_name, sizeof sc->last_name, "%.*s", (int)(i - s), t + s);
        } else if (c == '=' || c == ':') {
            memcpy(sc->pending, sc->last_name, sizeof sc->pending);
            i++;
        } else if (c == '{') {
            push(sc, 0), i++;
        } else if (c == '[' || c == '(') {
            push(sc, 1), i++;
        } else if (c == '}' || c == ']' || c == ')') {
            pop(sc), i++;
        } else if (c == ',') {
            if (!sc->overflow_depth && sc->stack[sc->depth - 1].is_list) sc->stack[sc->depth - 1].index++;
            i++;
        } else if (isdigit(c) || ((c == '-' || c == '+' || c == '.') && i + 1 < len &&
                                  (isdigit((unsigned char)t[i + 1]) || t[i + 1] == '.'))) {
            /* a number: the maximal run of what a number may hold */
            size_t s = i++;
            while (i < len && (isalnum((unsigned char)t[i]) || t[i] == '.' ||
                               ((t[i] == '-' || t[i] == '+') && (t[i - 1] == 'e' || t[i - 1] == 'E'))))
                i++;
            bc_status st = check_number(sc, line, t + s, i - s, err);
            if (st) return st;
        } else {
            i++;
        }
    }
    return BC_OK;
}

bc_status bc_cfg_check_int_literals_text(const char *path, const char *text, size_t len, bc_error *err) {
    char *dir = bc_cfg_strdup(path);
    if (!dir) return bc_cfg_nomem(err);
    char *slash = strrchr(dir, '/');
    const char *include_dir = NULL;
    if (slash) {
        *slash = '\0';
        include_dir = dir[0] ? dir : "/";
    }
    scanner sc = {.where_file = path, .include_dir = include_dir, .depth = 1};
    bc_status st = scan_text(&sc, text, len, err);
    free(dir);
    return st;
}

bc_status bc_cfg_check_int_literals_value(const char *label, const char *value, bc_error *err) {
    scanner sc = {.label = label, .depth = 1};
    return scan_text(&sc, value, strlen(value), err);
}
