/* config_axes.c: matrix.backend_settings, the backend settings the matrix
 * varies: each NAME = a value or a list of distinct values becomes a
 * bc_setting_axis of the config (config.h), its values kept as the tree's
 * settings and as the text cases and reports carry. */
#define _POSIX_C_SOURCE 200809L
#include "config_axes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_tree.h"

#define AXIS_WHAT "a value or a non-empty list of values (strings, numbers or booleans)"

static int is_scalar(const config_setting_t *s) {
    int t = config_setting_type(s);
    return bc_cfg_is_number(s) || t == CONFIG_TYPE_BOOL || t == CONFIG_TYPE_STRING;
}

/* A scalar's text as cases and reports carry it: strings as they are,
 * integers in decimal, floats with the fewest digits that read back equal,
 * booleans true/false. malloc'ed; NULL without memory. */
static char *value_text(const config_setting_t *s) {
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_STRING: return bc_cfg_strdup(config_setting_get_string(s));
    case CONFIG_TYPE_BOOL: return bc_cfg_strdup(config_setting_get_bool(s) ? "true" : "false");
    case CONFIG_TYPE_FLOAT: {
        double v = config_setting_get_float(s);
        char *t = bc_cfg_asprintf("%.15g", v);
        if (t && strtod(t, NULL) != v) {
            free(t);
            t = bc_cfg_asprintf("%.17g", v);
        }
        return t;
    }
    default: return bc_cfg_asprintf("%lld", config_setting_get_int64(s));
    }
}

const void *bc_config_axis_value(const bc_setting_axis *axis, size_t j) {
    const config_setting_t *s = axis->values;
    return bc_cfg_is_list(s) ? config_setting_get_elem(s, (unsigned)j) : s;
}

/* matrix.backend_settings: a group of NAME = a value or a list of distinct
 * values; each becomes an axis of the matrix (checked against the backend's
 * table once it is loaded, in context.c). */
bc_status bc_cfg_parse_setting_axes(bc_config *cfg, const config_setting_t *matrix, bc_error *err) {
    config_setting_t *group = NULL;
    bc_status st = bc_cfg_get_group(cfg, matrix, "backend_settings", "matrix.backend_settings", &group, err);
    if (st || !group) return st;
    size_t n = (size_t)config_setting_length(group);
    cfg->setting_axes = calloc(n + 1, sizeof *cfg->setting_axes);
    if (!cfg->setting_axes) return bc_cfg_nomem(err);
    for (size_t i = 0; i < n; i++) {
        const config_setting_t *s = config_setting_get_elem(group, (unsigned)i);
        char path[256], got[96];
        bc_cfg_path_join(path, sizeof path, "matrix.backend_settings", config_setting_name(s));
        bc_setting_axis *axis = &cfg->setting_axes[i];
        cfg->n_setting_axes = i + 1;
        axis->name = bc_cfg_strdup(config_setting_name(s));
        axis->values = s;
        axis->line = config_setting_source_line(s);
        if (!axis->name) return bc_cfg_nomem(err);
        size_t nv = bc_cfg_is_list(s) ? (size_t)config_setting_length(s) : 1;
        if ((!is_scalar(s) && !bc_cfg_is_list(s)) || nv == 0) {
            bc_cfg_describe(s, got, sizeof got);
            return bc_cfg_fail(cfg, err, BC_ERR_SETTING, s, path, "must be %s (got %s)", AXIS_WHAT, got);
        }
        axis->texts = calloc(nv, sizeof *axis->texts);
        if (!axis->texts) return bc_cfg_nomem(err);
        for (size_t j = 0; j < nv; j++) {
            const config_setting_t *e = bc_config_axis_value(axis, j);
            if (!is_scalar(e)) {
                bc_cfg_describe(e, got, sizeof got);
                return bc_cfg_fail(cfg, err, BC_ERR_SETTING, e, path, "must be %s (got %s in the list)", AXIS_WHAT,
                                   got);
            }
            axis->n_values = j + 1;
            if (!(axis->texts[j] = value_text(e))) return bc_cfg_nomem(err);
            for (size_t k = 0; k < j; k++)
                if (strcmp(axis->texts[k], axis->texts[j]) == 0) {
                    bc_cfg_describe(e, got, sizeof got);
                    return bc_cfg_fail(cfg, err, BC_ERR_SETTING, e, path,
                                       "duplicate value %s (each value must appear once; it names one set of cases)",
                                       got);
                }
        }
    }
    return BC_OK;
}
