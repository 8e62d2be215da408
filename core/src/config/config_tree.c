/* config_tree.c: the helpers over the parsed libconfig tree that
 * config_tree.h declares (strings, paths, error locations, value types,
 * finding a setting by its message path), and the locations config.h hands
 * out (bc_config_setting_location, bc_config_spec_location). */
#define _POSIX_C_SOURCE 200809L
#include "config_tree.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *bc_cfg_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

char *bc_cfg_asprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

bc_status bc_cfg_nomem(bc_error *err) { return bc_error_set(err, BC_ERR_NOMEM, "out of memory reading the config"); }

/* "a.b" + "c" -> "a.b.c"; "" + "c" -> "c"; "a" + "[2]" -> "a.[2]". buf holds n bytes;
 * a path too long for it is cut and ends in "...", so a message never shows a cut path as whole. */
void bc_cfg_path_join(char *buf, size_t n, const char *parent, const char *child) {
    const int len = !parent || !parent[0] ? snprintf(buf, n, "%s", child) : snprintf(buf, n, "%s.%s", parent, child);
    if (len >= 0 && (size_t)len >= n && n >= 4)
        memcpy(buf + n - 4, "...", 4);
}

void bc_cfg_path_index(char *buf, size_t n, const char *parent, size_t i) {
    char idx[32];
    snprintf(idx, sizeof idx, "[%zu]", i);
    bc_cfg_path_join(buf, n, parent, idx);
}

/* The command-line label whose key is path, a parent of path, or a child of
 * path (a group created on the way to a --set key). Later overrides win. */
static const char *override_label(const bc_config *cfg, const char *path) {
    size_t lp = strlen(path);
    for (size_t k = cfg->n_overrides; k-- > 0;) {
        const char *key = cfg->override_keys[k];
        size_t lk = strlen(key);
        if (strcmp(key, path) == 0) return cfg->override_labels[k];
        if (lp > lk && strncmp(path, key, lk) == 0 && path[lk] == '.') return cfg->override_labels[k];
        if (lk > lp && strncmp(key, path, lp) == 0 && key[lp] == '.') return cfg->override_labels[k];
    }
    return NULL;
}

/* Writes where s came from into buf: "file:line", "--set KEY" or the file. */
void bc_cfg_locate(const bc_config *cfg, const config_setting_t *s, const char *path, char *buf, size_t n) {
    unsigned line = s ? config_setting_source_line(s) : 0;
    if (line > 0) {
        const char *file = config_setting_source_file(s);
        snprintf(buf, n, "%s:%u", file ? file : cfg->path, line);
        return;
    }
    /* Not from the file: a --set made it, or a group on the way to one (try
     * the path, then each parent). */
    const char *label = NULL;
    char p[256];
    snprintf(p, sizeof p, "%s", path ? path : "");
    while (p[0] && !(label = override_label(cfg, p))) {
        char *dot = strrchr(p, '.');
        if (!dot) break;
        *dot = '\0';
    }
    snprintf(buf, n, "%s", label ? label : cfg->path);
}

/* Sets err to "<where>: <path>: <message>" and returns code. The path part is
 * left out when it would repeat a "--set PATH" label. */
bc_status bc_cfg_fail(const bc_config *cfg, bc_error *err, bc_status code, const config_setting_t *s, const char *path,
                      const char *fmt, ...) {
    char where[256], what[400];
    bc_cfg_locate(cfg, s, path, where, sizeof where);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    int repeat = path && strncmp(where, "--set ", 6) == 0 && strcmp(where + 6, path) == 0;
    if (!path || !path[0] || repeat)
        return bc_error_set(err, code, "%s: %s", where, what);
    return bc_error_set(err, code, "%s: %s: %s", where, path, what);
}

/* A short description of a value for "(got ...)". */
void bc_cfg_describe(const config_setting_t *s, char *buf, size_t n) {
    if (!s) {
        snprintf(buf, n, "nothing");
        return;
    }
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64:
        snprintf(buf, n, "%lld", config_setting_get_int64(s));
        break;
    case CONFIG_TYPE_FLOAT:
        snprintf(buf, n, "%g", config_setting_get_float(s));
        break;
    case CONFIG_TYPE_BOOL:
        snprintf(buf, n, "%s", config_setting_get_bool(s) ? "true" : "false");
        break;
    case CONFIG_TYPE_STRING:
        snprintf(buf, n, "\"%.60s%s\"", config_setting_get_string(s),
                 strlen(config_setting_get_string(s)) > 60 ? "..." : "");
        break;
    case CONFIG_TYPE_GROUP:
        snprintf(buf, n, "a group");
        break;
    case CONFIG_TYPE_ARRAY:
    case CONFIG_TYPE_LIST:
        snprintf(buf, n, config_setting_length(s) == 0 ? "an empty list" : "a list");
        break;
    default:
        snprintf(buf, n, "an unknown value");
        break;
    }
}

int bc_cfg_is_int(const config_setting_t *s) {
    int t = config_setting_type(s);
    return t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64;
}

int bc_cfg_is_number(const config_setting_t *s) { return bc_cfg_is_int(s) || config_setting_type(s) == CONFIG_TYPE_FLOAT; }

int bc_cfg_is_list(const config_setting_t *s) {
    int t = config_setting_type(s);
    return t == CONFIG_TYPE_ARRAY || t == CONFIG_TYPE_LIST;
}

double bc_cfg_number(const config_setting_t *s) {
    return bc_cfg_is_int(s) ? (double)config_setting_get_int64(s) : config_setting_get_float(s);
}

/* Optional group member; must be a group when present. */
bc_status bc_cfg_get_group(const bc_config *cfg, const config_setting_t *parent, const char *name, const char *path,
                           config_setting_t **out, bc_error *err) {
    *out = config_setting_get_member(parent, name);
    if (*out && config_setting_type(*out) != CONFIG_TYPE_GROUP) {
        char got[96];
        bc_cfg_describe(*out, got, sizeof got);
        bc_status st = bc_cfg_fail(cfg, err, BC_ERR_SETTING, *out, path, "must be a group { ... } (got %s)", got);
        *out = NULL;
        return st;
    }
    return BC_OK;
}

/* The setting at a message path like "reporters.[1]" or "backend", or NULL. */
const config_setting_t *bc_cfg_find(const config_setting_t *cur, const char *path) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *seg = buf; cur && seg;) {
        char *dot = strchr(seg, '.');
        if (dot) *dot = '\0';
        if (seg[0] == '[') {
            long idx = strtol(seg + 1, NULL, 10);
            cur = bc_cfg_is_list(cur) && idx >= 0 && idx < config_setting_length(cur)
                      ? config_setting_get_elem(cur, (unsigned)idx)
                      : NULL;
        } else {
            cur = config_setting_type(cur) == CONFIG_TYPE_GROUP ? config_setting_get_member(cur, seg) : NULL;
        }
        seg = dot ? dot + 1 : NULL;
    }
    return cur;
}

void bc_config_setting_location(const bc_config *cfg, const char *path, char *buf, size_t n) {
    const config_setting_t *s = cfg->cfg ? bc_cfg_find(config_root_setting((const config_t *)cfg->cfg), path) : NULL;
    bc_cfg_locate(cfg, s, path, buf, n);
}

void bc_config_spec_location(const bc_config *cfg, const bc_plugin_spec *spec, char *buf, size_t n) {
    const config_setting_t *s = NULL;
    if (cfg->cfg && spec->where) s = bc_cfg_find(config_root_setting((const config_t *)cfg->cfg), spec->where);
    if (s && config_setting_type(s) == CONFIG_TYPE_GROUP && config_setting_get_member(s, "name")) {
        /* Point at the name itself: it may come from a --set. */
        char path[256];
        bc_cfg_path_join(path, sizeof path, spec->where, "name");
        bc_cfg_locate(cfg, config_setting_get_member(s, "name"), path, buf, n);
        return;
    }
    bc_cfg_locate(cfg, s, spec->where, buf, n);
}
