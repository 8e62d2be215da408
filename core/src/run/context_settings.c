/* context_settings.c: a plugin's settings for the run context (context.h):
 * the settings group of its spec resolved against its table and, for a
 * plugin with more_settings (since 2.2), the rows it adds; the same from
 * --set strings for `benchctl plugins NAME`. */
#define _GNU_SOURCE
#include "context.h"

#include <libconfig.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "settings.h"

/* snprintf for messages that may be cut short on purpose. */
static void text(char *buf, size_t n, const char *fmt, ...) BC_PRINTF(3, 4);
static void text(char *buf, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

/* Prefixes err's message with "prefix: " (keeping code and hint). */
bc_status bc_context_prefix_error(bc_error *err, const char *prefix) {
    char msg[sizeof err->message];
    text(msg, sizeof msg, "%s", err->message);
    text(err->message, sizeof err->message, "%.200s: %s", prefix, msg);
    return err->code;
}

/* For a plugin with more_settings (since 2.2): resolves the settings of its
 * own table, asks it for its other rows, appends them (out->desc) and
 * resolves the whole group against both. */
static bc_status resolve_more_settings(const bc_config *cfg, const bc_plugin_spec *spec, bc_context_plugin *out,
                                       const char *prefix, bc_error *err) {
    const bc_plugin_desc *d = out->plugin->desc;
    if (!d->free_more_settings)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: has more_settings but no free_more_settings", prefix);
    bc_status st = bc_settings_resolve_known(cfg, spec, d, out->values, err);
    if (st != BC_OK) return st;
    const bc_setting_desc *rows = NULL;
    uint32_t n = 0, size = 0;
    if ((st = d->more_settings(&out->plugin->host, &out->settings, &rows, &n, &size, err)) != BC_OK)
        return bc_context_prefix_error(err, prefix);
    out->more_rows = rows, out->n_more_rows = n;
    if (n > 0 && (!rows || size < BC_SIZE_THROUGH(bc_setting_desc, help)))
        return bc_error_set(err, BC_ERR_FORMAT, "%s: more_settings returned %u rows of %u bytes", prefix, (unsigned)n,
                            (unsigned)size);
    uint32_t total = d->n_settings + n;
    out->all_rows = calloc((size_t)total + 1, sizeof *out->all_rows);
    bc_setting_value *values = realloc(out->values, ((size_t)total + 1) * sizeof *values);
    if (values) out->values = values;
    if (!out->all_rows || !values) return bc_error_set(err, BC_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < d->n_settings; i++) out->all_rows[i] = d->settings[i];
    for (uint32_t j = 0; j < n; j++) {
        bc_setting_desc *row = &out->all_rows[d->n_settings + j];
        memcpy(row, BC_AT(bc_setting_desc, rows, size, j), size < sizeof *row ? size : sizeof *row);
        for (uint32_t i = 0; row->name && i < d->n_settings + j; i++)
            if (strcmp(out->all_rows[i].name, row->name) == 0)
                return bc_error_set(err, BC_ERR_FORMAT, "%s: setting '%s' is declared twice", prefix, row->name);
    }
    out->desc.settings = out->all_rows;
    out->desc.n_settings = total;
    out->desc.setting_size = sizeof(bc_setting_desc);
    out->settings.values = out->values;
    out->settings.count = total;
    return bc_settings_resolve(cfg, spec, &out->desc, out->values, err);
}

bc_status bc_context_resolve_settings(const bc_config *cfg, const bc_plugin_spec *spec, bc_context_plugin *out,
                                      const char *prefix, bc_error *err) {
    const bc_plugin_desc *d = out->plugin->desc;
    out->desc = *d;
    out->values = calloc(d->n_settings + 1, sizeof *out->values);
    if (!out->values) return bc_error_set(err, BC_ERR_NOMEM, "out of memory");
    out->settings = (bc_settings){.struct_size = sizeof out->settings, .count = d->n_settings,
                                  .value_size = sizeof *out->values, .values = out->values};
    if (d->more_settings) return resolve_more_settings(cfg, spec, out, prefix, err);
    return bc_settings_resolve(cfg, spec, d, out->values, err);
}

bc_status bc_context_resolve_cli_settings(const bc_plugin *p, const char *const *sets, size_t n_sets,
                                          bc_context_plugin *out, bc_error *err) {
    size_t len = 1;
    for (size_t i = 0; i < n_sets; i++) len += strlen(sets[i]) + 3;
    char *text = malloc(len);
    if (!text) return bc_error_set(err, BC_ERR_NOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n_sets; i++) k += (size_t)sprintf(text + k, "%s;\n", sets[i]);
    text[k] = '\0';
    config_t lc;
    config_init(&lc);
    bc_status st = BC_OK;
    if (config_read_string(&lc, text) != CONFIG_TRUE) {
        st = bc_error_set(err, BC_ERR_SETTING, "--set: %s (a value is a libconfig value: 4, 0.5, true, \"text\")",
                          config_error_text(&lc));
    } else {
        bc_config cfg = {.path = "--set"};
        bc_plugin_spec spec = {.name = (char *)p->desc->name, .settings = config_root_setting(&lc), .where = ""};
        *out = (bc_context_plugin){.plugin = p};
        char prefix[128];
        snprintf(prefix, sizeof prefix, "plugin '%s'", p->desc->name);
        st = bc_context_resolve_settings(&cfg, &spec, out, prefix, err);
    }
    config_destroy(&lc);
    free(text);
    return st;
}

void bc_context_free_settings(bc_context_plugin *p) {
    free(p->values);
    free(p->all_rows);
    if (p->more_rows && p->plugin && p->plugin->desc->free_more_settings)
        p->plugin->desc->free_more_settings(p->more_rows, p->n_more_rows);
}
