/* config_file.c: bench.cfg as text: reading it and every file it
 * @includes under the size limits (a regular file, no NUL byte, no overlong
 * line, includes nested at most BC_CFG_MAX_INCLUDE_DEPTH deep) before
 * libconfig sees it, handing it to libconfig, and the hash of the tree as
 * libconfig writes it back (config_sha256). */
#define _POSIX_C_SOURCE 200809L
#include "config_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_ints.h"
#include "config_tree.h"
#include "readfile.h"
#include "sha256.h"

/* Limits on bench.cfg and every file it @includes (docs/config.md, "Size
 * limits"). libconfig's scanner is quadratic in the length of a line and
 * keeps only the part of a quoted string before a NUL byte, so both are
 * refused before libconfig sees the text. */
#define BC_CFG_MAX_FILE_BYTES (1024ull * 1024)
#define BC_CFG_MAX_LINE_BYTES (64u * 1024)
#define BC_CFG_MAX_INCLUDE_DEPTH 10

/* Checks text (len bytes of path) for NUL bytes and overlong lines, then
 * does the same for every file it names with @include, relative to dir. */
static bc_status check_text(const char *path, const char *text, size_t len, const char *dir, int depth,
                            bc_error *err);

/* Reads path under the limits and checks it (check_text); *out (may be
 * NULL) gets the text, which the caller frees. inc_dir is the folder
 * libconfig resolves @include against (the top file's), NULL at the top. */
static bc_status read_checked(const char *path, const char *inc_dir, int depth, char **out, size_t *out_len,
                              bc_error *err) {
    if (depth > BC_CFG_MAX_INCLUDE_DEPTH)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: @include nested more than %d deep", path,
                            BC_CFG_MAX_INCLUDE_DEPTH);
    char *text = NULL;
    size_t len = 0;
    bc_status st = bc_read_regular(path, depth ? "included config file" : "config file", BC_CFG_MAX_FILE_BYTES,
                                   &text, &len, err);
    if (st == BC_ERR_NOT_FOUND) st = err->code = BC_ERR_IO; /* a config that cannot be read is an I/O error */
    if (st != BC_OK) return st;
    char *dir = bc_cfg_strdup(path);
    if (!dir) {
        free(text);
        return bc_cfg_nomem(err);
    }
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    if (!inc_dir) inc_dir = slash ? (dir[0] ? dir : "/") : NULL;
    st = check_text(path, text, len, inc_dir, depth, err);
    free(dir);
    if (st == BC_OK && out) {
        *out = text;
        if (out_len) *out_len = len;
    } else {
        free(text);
    }
    return st;
}

static bc_status check_text(const char *path, const char *text, size_t len, const char *dir, int depth,
                            bc_error *err) {
    size_t line_start = 0;
    int line = 1;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && text[i] == '\0')
            return bc_error_set(err, BC_ERR_FORMAT, "%s:%d: a NUL byte at column %zu; a config file must be text",
                                path, line, i - line_start + 1);
        if (i < len && text[i] != '\n') continue;
        size_t n = i - line_start;
        if (n > BC_CFG_MAX_LINE_BYTES)
            return bc_error_set(err, BC_ERR_FORMAT, "%s:%d: the line is %zu bytes, over the limit of %u bytes", path,
                                line, n, BC_CFG_MAX_LINE_BYTES);
        /* @include "file": check the included file the same way */
        const char *p = text + line_start, *end = text + i;
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        if ((size_t)(end - p) > 8 && strncmp(p, "@include", 8) == 0) {
            p += 8;
            while (p < end && (*p == ' ' || *p == '\t')) p++;
            const char *q = p < end && *p == '"' ? memchr(p + 1, '"', (size_t)(end - p - 1)) : NULL;
            if (q) {
                size_t nn = (size_t)(q - p - 1), nd = dir && p[1] != '/' ? strlen(dir) + 1 : 0;
                char *inc = malloc(nd + nn + 1);
                if (!inc) return bc_cfg_nomem(err);
                if (nd) {
                    memcpy(inc, dir, nd - 1);
                    inc[nd - 1] = '/';
                }
                memcpy(inc + nd, p + 1, nn);
                inc[nd + nn] = '\0';
                bc_status st = read_checked(inc, dir, depth + 1, NULL, NULL, err);
                free(inc);
                if (st != BC_OK) return st;
            }
        }
        line++;
        line_start = i + 1;
    }
    return BC_OK;
}

/* Reads path into c; one line on failure. The file is read whole, under
 * the limits above (a regular file, checked before it is opened), then
 * handed to libconfig as a string. given_text (given_len bytes), when not
 * NULL, is path's text read elsewhere (a distributed run's rank 0,
 * bc_config_read_text) and is used instead of reading path. */
bc_status bc_cfg_read_file(config_t *c, const char *path, const char *given_text, size_t given_len, bc_error *err) {
    char *text = NULL;
    size_t len = given_len;
    if (!given_text) {
        bc_status st = read_checked(path, NULL, 0, &text, &len, err);
        if (st != BC_OK) return st;
    }
    const char *use = given_text ? given_text : text;
    bc_status st = BC_OK;
    /* @include "x.cfg" is relative to the including file's folder. */
    char *dir = bc_cfg_strdup(path);
    if (!dir) {
        free(text);
        return bc_cfg_nomem(err);
    }
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        config_set_include_dir(c, dir[0] ? dir : "/");
    }
    free(dir);
    int ok = config_read_string(c, use);
    /* libconfig 1.5 narrows integer literals silently: check the same text */
    if (ok) st = bc_cfg_check_int_literals_text(path, use, len, err);
    free(text);
    if (ok) return st;
    if (config_error_type(c) == CONFIG_ERR_FILE_IO)
        return bc_error_set(err, BC_ERR_IO, "%s: cannot read: %s", config_error_file(c) ? config_error_file(c) : path,
                            config_error_text(c));
    const char *file = config_error_file(c);
    return bc_error_set(err, BC_ERR_FORMAT, "%s:%d: %s", file ? file : path, config_error_line(c),
                        config_error_text(c));
}

bc_status bc_config_read_text(const char *path, char **text, size_t *len, bc_error *err) {
    *text = NULL;
    *len = 0;
    if (!path) return bc_error_set(err, BC_ERR_SETTING, "no config file given");
    return read_checked(path, NULL, 0, text, len, err);
}

/* cfg->sha256 := SHA-256 of the tree as libconfig writes it. */
bc_status bc_cfg_hash_tree(bc_config *cfg, const config_t *c, bc_error *err) {
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m) return bc_cfg_nomem(err);
    config_write(c, m);
    if (fclose(m) != 0 || !text) {
        free(text);
        return bc_cfg_nomem(err);
    }
    cfg->sha256 = malloc(BC_SHA256_HEX_CHARS + 1);
    if (!cfg->sha256) {
        free(text);
        return bc_cfg_nomem(err);
    }
    bc_sha256_hex(text, len, cfg->sha256);
    free(text);
    return BC_OK;
}
