/* settings.c: the setting types as one table (see settings.h). */
#define _POSIX_C_SOURCE 200809L

#include "settings.h"

#include <libconfig.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "config_tree.h"
#include "suggest.h"

/* What one setting type does. */
typedef struct setting_type {
    const char *name;
    /* Reads s into v when s is of this type and allowed by d; 1 on success. */
    int (*read)(const bc_setting_desc *d, const config_setting_t *s, bc_setting_value *v);
    void (*format)(const bc_setting_desc *d, const bc_setting_value *v, char *buf, size_t n);
    int (*equal)(const bc_setting_value *a, const bc_setting_value *b);
    void (*allowed)(const bc_setting_desc *d, char *buf, size_t n);
    void (*expected)(const bc_setting_desc *d, char *buf, size_t n);
} setting_type;

static int in_range(const bc_setting_desc *d, double x) { return !d->has_range || (x >= d->min && x <= d->max); }

/* "[1, 64]", ">= 0", "<= 9" or "" for a number type. */
static void range_text(const bc_setting_desc *d, const char *fmt_both, char *buf, size_t n) {
    if (!d->has_range) snprintf(buf, n, "%s", "");
    else if (d->max >= 9.2e18) snprintf(buf, n, ">= %.17g", d->min);
    else if (d->min <= -9.2e18) snprintf(buf, n, "<= %.17g", d->max);
    else snprintf(buf, n, fmt_both, d->min, d->max);
}

/* ---- int */
static int int_read(const bc_setting_desc *d, const config_setting_t *s, bc_setting_value *v) {
    if (!bc_cfg_is_int(s)) return 0;
    long long x = config_setting_get_int64(s);
    if (!in_range(d, (double)x)) return 0;
    v->i = x;
    v->f = (double)x;
    return 1;
}
static void int_format(const bc_setting_desc *d, const bc_setting_value *v, char *buf, size_t n) {
    (void)d;
    snprintf(buf, n, "%lld", (long long)v->i);
}
static int int_equal(const bc_setting_value *a, const bc_setting_value *b) { return a->i == b->i; }
static void int_allowed(const bc_setting_desc *d, char *buf, size_t n) {
    range_text(d, "[%.17g, %.17g]", buf, n);
    if (!buf[0]) snprintf(buf, n, "any");
}
static void int_expected(const bc_setting_desc *d, char *buf, size_t n) {
    char r[96];
    range_text(d, "in [%.17g, %.17g]", r, sizeof r);
    snprintf(buf, n, "an integer%s%s", r[0] ? " " : "", r);
}

/* ---- float */
static int float_read(const bc_setting_desc *d, const config_setting_t *s, bc_setting_value *v) {
    if (!bc_cfg_is_number(s)) return 0;
    double x = bc_cfg_number(s);
    if (!isfinite(x) || !in_range(d, x)) return 0;
    v->f = x;
    return 1;
}
static void float_format(const bc_setting_desc *d, const bc_setting_value *v, char *buf, size_t n) {
    (void)d;
    snprintf(buf, n, "%g", v->f);
}
static int float_equal(const bc_setting_value *a, const bc_setting_value *b) { return a->f == b->f; }
static void float_allowed(const bc_setting_desc *d, char *buf, size_t n) {
    range_text(d, "[%g, %g]", buf, n);
    if (!buf[0]) snprintf(buf, n, "any");
}
static void float_expected(const bc_setting_desc *d, char *buf, size_t n) {
    char r[96];
    range_text(d, "in [%.17g, %.17g]", r, sizeof r);
    snprintf(buf, n, "a number%s%s", r[0] ? " " : "", r);
}

/* ---- bool */
static int bool_read(const bc_setting_desc *d, const config_setting_t *s, bc_setting_value *v) {
    (void)d;
    if (config_setting_type(s) != CONFIG_TYPE_BOOL) return 0;
    v->i = config_setting_get_bool(s) ? 1 : 0;
    return 1;
}
static void bool_format(const bc_setting_desc *d, const bc_setting_value *v, char *buf, size_t n) {
    (void)d;
    snprintf(buf, n, "%s", v->i ? "true" : "false");
}
static void bool_allowed(const bc_setting_desc *d, char *buf, size_t n) {
    (void)d;
    snprintf(buf, n, "true|false");
}
static void bool_expected(const bc_setting_desc *d, char *buf, size_t n) {
    (void)d;
    snprintf(buf, n, "true or false");
}

/* ---- string */
static int string_read(const bc_setting_desc *d, const config_setting_t *s, bc_setting_value *v) {
    (void)d;
    if (config_setting_type(s) != CONFIG_TYPE_STRING) return 0;
    v->s = config_setting_get_string(s);
    return 1;
}
static void string_format(const bc_setting_desc *d, const bc_setting_value *v, char *buf, size_t n) {
    (void)d;
    snprintf(buf, n, "\"%s\"", v->s ? v->s : "");
}
static int string_equal(const bc_setting_value *a, const bc_setting_value *b) {
    return strcmp(a->s ? a->s : "", b->s ? b->s : "") == 0;
}
static void string_allowed(const bc_setting_desc *d, char *buf, size_t n) {
    (void)d;
    snprintf(buf, n, "any");
}
static void string_expected(const bc_setting_desc *d, char *buf, size_t n) {
    (void)d;
    snprintf(buf, n, "a string");
}

/* ---- enum */
static int enum_read(const bc_setting_desc *d, const config_setting_t *s, bc_setting_value *v) {
    if (config_setting_type(s) != CONFIG_TYPE_STRING) return 0;
    const char *x = config_setting_get_string(s);
    for (const char *const *c = d->choices; *c; c++)
        if (strcmp(*c, x) == 0) {
            v->s = *c;
            return 1;
        }
    return 0;
}
static void enum_list(const bc_setting_desc *d, const char *sep, const char *quote, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    for (const char *const *c = d->choices; c && *c && used < n; c++) {
        const char *q = (*c)[0] ? quote : "\""; /* an empty choice shows as "" */
        used += (size_t)snprintf(buf + used, n - used, "%s%s%s%s", c == d->choices ? "" : sep, q, *c, q);
    }
}
static void enum_allowed(const bc_setting_desc *d, char *buf, size_t n) { enum_list(d, "|", "", buf, n); }
static void enum_expected(const bc_setting_desc *d, char *buf, size_t n) {
    char list[400];
    enum_list(d, ", ", "\"", list, sizeof list);
    snprintf(buf, n, "one of %s", list);
}

static const setting_type k_types[] = {
    [BC_SETTING_INT] = {"int", int_read, int_format, int_equal, int_allowed, int_expected},
    [BC_SETTING_FLOAT] = {"float", float_read, float_format, float_equal, float_allowed, float_expected},
    [BC_SETTING_BOOL] = {"bool", bool_read, bool_format, int_equal, bool_allowed, bool_expected},
    [BC_SETTING_STRING] = {"string", string_read, string_format, string_equal, string_allowed, string_expected},
    [BC_SETTING_ENUM] = {"enum", enum_read, string_format, string_equal, enum_allowed, enum_expected},
};

/* The type's row, or NULL for a type this host does not know (the loader
 * refuses such plugins, so only a bug gets NULL). */
static const setting_type *type_of(bc_setting_type t) {
    return (unsigned)t < sizeof k_types / sizeof k_types[0] && k_types[t].name ? &k_types[t] : NULL;
}

const char *bc_setting_type_name(bc_setting_type type) {
    const setting_type *t = type_of(type);
    return t ? t->name : "?";
}

void bc_setting_default(const bc_setting_desc *d, bc_setting_value *v) {
    memset(v, 0, sizeof *v);
    v->i = d->default_int;
    v->f = d->type == BC_SETTING_INT ? (double)d->default_int : d->default_float;
    v->s = d->default_string ? d->default_string : (d->type == BC_SETTING_STRING ? "" : NULL);
}

int bc_setting_is_default(const bc_setting_desc *d, const bc_setting_value *v) {
    const setting_type *t = type_of(d->type);
    bc_setting_value def;
    bc_setting_default(d, &def);
    return t && t->equal(v, &def);
}

void bc_setting_format(const bc_setting_desc *d, const bc_setting_value *v, char *buf, size_t n) {
    const setting_type *t = type_of(d->type);
    if (t) t->format(d, v, buf, n);
    else snprintf(buf, n, "?");
}

void bc_setting_allowed(const bc_setting_desc *d, char *buf, size_t n) {
    const setting_type *t = type_of(d->type);
    if (t) t->allowed(d, buf, n);
    else snprintf(buf, n, "?");
}

void bc_setting_expected(const bc_setting_desc *d, char *buf, size_t n) {
    const setting_type *t = type_of(d->type);
    if (t) t->expected(d, buf, n);
    else snprintf(buf, n, "a value of unknown type %d", (int)d->type);
}

/* Checks one given value s against d; fills *v. */
static bc_status resolve_one(const bc_config *cfg, const bc_plugin_desc *desc, const bc_setting_desc *d,
                             const config_setting_t *s, const char *path, bc_setting_value *v, bc_error *err) {
    const setting_type *t = type_of(d->type);
    if (!t)
        return bc_error_set(err, BC_ERR_INTERNAL, "plugin '%s': setting '%s' has unknown type %d", desc->name, d->name,
                            (int)d->type);
    if (t->read(d, s, v)) return BC_OK;
    char what[400], got[96];
    bc_setting_expected(d, what, sizeof what);
    bc_cfg_describe(s, got, sizeof got);
    const char *near = NULL;
    if (d->type == BC_SETTING_ENUM && config_setting_type(s) == CONFIG_TYPE_STRING) {
        size_t n = 0;
        while (d->choices[n]) n++;
        near = bc_suggest(config_setting_get_string(s), d->choices, n);
    }
    if (near)
        return bc_cfg_fail(cfg, err, BC_ERR_SETTING, s, path, "plugin '%s': must be %s (got %s; did you mean \"%s\"?)",
                           desc->name, what, got, near);
    return bc_cfg_fail(cfg, err, BC_ERR_SETTING, s, path, "plugin '%s': must be %s (got %s)", desc->name, what, got);
}

/* Index of the row called name in desc's table, or desc->n_settings. */
static uint32_t find_row(const bc_plugin_desc *desc, const char *name) {
    uint32_t i = 0;
    while (i < desc->n_settings && strcmp(desc->settings[i].name, name) != 0) i++;
    return i;
}

/* The error for a key desc's table does not have. */
static bc_status unknown_key(const bc_config *cfg, const bc_plugin_desc *desc, const config_setting_t *s,
                             const char *path, const char *pname, bc_error *err) {
    const char *name = config_setting_name(s);
    if (desc->n_settings == 0) return bc_cfg_fail(cfg, err, BC_ERR_SETTING, s, path, "plugin '%s' has no settings", pname);
    const char *names[64];
    size_t m = 0;
    for (uint32_t j = 0; j < desc->n_settings && m < 64; j++) names[m++] = desc->settings[j].name;
    const char *near = bc_suggest(name, names, m);
    bc_status st;
    if (near)
        st = bc_cfg_fail(cfg, err, BC_ERR_SETTING, s, path, "plugin '%s' has no setting '%s' (did you mean '%s'?)",
                         pname, name, near);
    else
        st = bc_cfg_fail(cfg, err, BC_ERR_SETTING, s, path, "plugin '%s' has no setting '%s'", pname, name);
    bc_error_hint(err, "'benchctl plugins %s' lists its settings", pname);
    return st;
}

int bc_settings_given(const bc_plugin_spec *spec, const char *name) {
    const config_setting_t *group = spec->settings;
    return group && config_setting_type(group) == CONFIG_TYPE_GROUP && config_setting_get_member(group, name) != NULL;
}

static bc_status resolve(const bc_config *cfg, const bc_plugin_spec *spec, const bc_plugin_desc *desc,
                         bc_setting_value *values, int pass_over_unknown, bc_error *err) {
    const char *pname = desc->name ? desc->name : spec->name;
    if (desc->n_settings > 0 && !desc->settings)
        return bc_error_set(err, BC_ERR_INTERNAL, "plugin '%s': %u settings declared but no table", pname,
                            (unsigned)desc->n_settings);
    for (uint32_t i = 0; i < desc->n_settings; i++) {
        const bc_setting_desc *d = &desc->settings[i];
        if (!d->name || (d->type == BC_SETTING_ENUM && !d->choices))
            return bc_error_set(err, BC_ERR_INTERNAL, "plugin '%s': settings table row %u is incomplete", pname,
                                (unsigned)i);
        bc_setting_default(d, &values[i]);
    }
    const config_setting_t *group = spec->settings;
    if (!group) return BC_OK;
    char base[256];
    bc_cfg_path_join(base, sizeof base, spec->where, "settings");
    if (config_setting_type(group) != CONFIG_TYPE_GROUP)
        return bc_cfg_fail(cfg, err, BC_ERR_SETTING, group, base, "must be a group { ... }");

    int n = config_setting_length(group);
    for (int k = 0; k < n; k++) {
        const config_setting_t *s = config_setting_get_elem(group, (unsigned)k);
        char path[320];
        bc_cfg_path_join(path, sizeof path, base, config_setting_name(s));
        uint32_t i = find_row(desc, config_setting_name(s));
        if (i == desc->n_settings && pass_over_unknown) continue;
        if (i == desc->n_settings) return unknown_key(cfg, desc, s, path, pname, err);
        bc_status st = resolve_one(cfg, desc, &desc->settings[i], s, path, &values[i], err);
        if (st) return st;
    }
    return BC_OK;
}

bc_status bc_settings_resolve(const bc_config *cfg, const bc_plugin_spec *spec, const bc_plugin_desc *desc,
                              bc_setting_value *values, bc_error *err) {
    return resolve(cfg, spec, desc, values, 0, err);
}

bc_status bc_settings_resolve_known(const bc_config *cfg, const bc_plugin_spec *spec, const bc_plugin_desc *desc,
                                    bc_setting_value *values, bc_error *err) {
    return resolve(cfg, spec, desc, values, 1, err);
}

bc_status bc_settings_resolve_axis(const bc_config *cfg, const bc_setting_axis *axis, const bc_plugin_desc *desc,
                                   const char *pname, uint32_t *row, bc_setting_value *values, bc_error *err) {
    char path[320];
    bc_cfg_path_join(path, sizeof path, "matrix.backend_settings", axis->name);
    const config_setting_t *s = axis->values;
    *row = find_row(desc, axis->name);
    if (*row == desc->n_settings) return unknown_key(cfg, desc, s, path, pname, err);
    for (size_t j = 0; j < axis->n_values; j++) {
        bc_status st = resolve_one(cfg, desc, &desc->settings[*row], bc_config_axis_value(axis, j), path, &values[j],
                                   err);
        if (st) return st;
    }
    return BC_OK;
}
