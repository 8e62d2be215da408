/* config_plugins.c: the plugin lists of bench.cfg (config_schema.h):
 * backend or backends, precisions, cache_policies, reporters, each entry a
 * plugin name or a group { name; settings; } (and label for a backends
 * entry), and plugin_path. Errors as config.c's. */
#define _POSIX_C_SOURCE 200809L

#include "config.h"

#include <libconfig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_schema.h"
#include "config_tree.h"

static const char *const k_spec_keys[] = {"name", "settings"};
static const char *const k_backend_keys[] = {"name", "label", "settings"};

/* Fills spec from s, a string or a group at path with the keys keys[n_keys]
 * ({ name; settings; }, and label for a backends entry). */
static bc_status parse_spec_keys(const bc_config *cfg, const config_setting_t *s, const char *path,
                                 const char *const *keys, size_t n_keys, bc_plugin_spec *spec, bc_error *err) {
    char got[96];
    const config_setting_t *name_s = s;
    if (config_setting_type(s) == CONFIG_TYPE_GROUP) {
        bc_status st = bc_cfg_check_keys(cfg, s, path, keys, n_keys, err);
        if (st) return st;
        char sub[256];
        bc_cfg_path_join(sub, sizeof sub, path, "name");
        name_s = config_setting_get_member(s, "name");
        if (!name_s)
            return bc_cfg_fail(cfg, err, BC_ERR_SETTING, s, sub, "is required: the plugin's name or the path of its .so");
        if (config_setting_type(name_s) != CONFIG_TYPE_STRING || !config_setting_get_string(name_s)[0]) {
            bc_cfg_describe(name_s, got, sizeof got);
            return bc_cfg_fail(cfg, err, BC_ERR_SETTING, name_s, sub,
                        "must be a non-empty string: the plugin's name or the path of its .so (got %s)", got);
        }
        bc_cfg_path_join(sub, sizeof sub, path, "settings");
        config_setting_t *settings = NULL;
        st = bc_cfg_get_group(cfg, s, "settings", sub, &settings, err);
        if (st) return st;
        spec->settings = settings;
    } else if (config_setting_type(s) == CONFIG_TYPE_STRING) {
        if (!config_setting_get_string(s)[0])
            return bc_cfg_fail(cfg, err, BC_ERR_SETTING, s, path, "must be %s (got \"\")", SPEC_FORMS);
        spec->settings = NULL;
    } else {
        bc_cfg_describe(s, got, sizeof got);
        return bc_cfg_fail(cfg, err, BC_ERR_SETTING, s, path, "must be %s (got %s)", SPEC_FORMS, got);
    }
    spec->name = bc_cfg_strdup(config_setting_get_string(name_s));
    spec->where = bc_cfg_strdup(path);
    spec->line = (int)config_setting_source_line(s);
    if (!spec->name || !spec->where) return bc_cfg_nomem(err);
    return BC_OK;
}

bc_status bc_cfg_parse_spec(const bc_config *cfg, const config_setting_t *s, const char *path, bc_plugin_spec *spec,
                            bc_error *err) {
    return parse_spec_keys(cfg, s, path, k_spec_keys, COUNT(k_spec_keys), spec, err);
}

/* The backends list: the outermost axis of the matrix. Its first entry goes
 * to cfg->backend, the others to cfg->more_backends; each label (default: the
 * plugin's name) must be distinct, since the reports name a case's backend
 * by it. */
bc_status bc_cfg_parse_backends(bc_config *cfg, const config_setting_t *list, bc_error *err) {
    char got[96];
    if (!bc_cfg_is_list(list) || config_setting_length(list) == 0) {
        bc_cfg_describe(list, got, sizeof got);
        return bc_cfg_fail(cfg, err, BC_ERR_SETTING, list, "backends",
                           "must be a non-empty list, each { name = \"...\"; label = \"...\"; settings = { ... }; } "
                           "(got %s)",
                           got);
    }
    size_t n = (size_t)config_setting_length(list);
    bc_plugin_spec *all = calloc(n, sizeof *all);
    if (!all) return bc_cfg_nomem(err);
    bc_status st = BC_OK;
    size_t filled = 0;
    for (size_t i = 0; st == BC_OK && i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(list, (unsigned)i);
        char path[256];
        bc_cfg_path_index(path, sizeof path, "backends", i);
        st = parse_spec_keys(cfg, e, path, k_backend_keys, COUNT(k_backend_keys), &all[i], err);
        filled = i + 1;
        const config_setting_t *label = st == BC_OK && config_setting_type(e) == CONFIG_TYPE_GROUP
                                            ? config_setting_get_member(e, "label")
                                            : NULL;
        if (label) {
            char sub[300];
            bc_cfg_path_join(sub, sizeof sub, path, "label");
            if (config_setting_type(label) != CONFIG_TYPE_STRING || !config_setting_get_string(label)[0]) {
                bc_cfg_describe(label, got, sizeof got);
                st = bc_cfg_fail(cfg, err, BC_ERR_SETTING, label, sub, "must be a non-empty string (got %s)", got);
            } else if (!(all[i].label = bc_cfg_strdup(config_setting_get_string(label)))) {
                st = bc_cfg_nomem(err);
            }
        }
        for (size_t j = 0; st == BC_OK && j < i; j++) {
            const char *a = all[j].label ? all[j].label : all[j].name, *b = all[i].label ? all[i].label : all[i].name;
            if (strcmp(a, b) == 0)
                st = bc_cfg_fail(cfg, err, BC_ERR_SETTING, e, path,
                                 "names backend '%s' as backends.[%zu] does: give each a distinct label = \"...\"", b, j);
        }
    }
    /* cfg owns every entry from here, whatever happened */
    cfg->backend = all[0];
    cfg->more_backends = filled > 1 ? all + 1 : NULL;
    cfg->n_more_backends = filled > 1 ? filled - 1 : 0;
    cfg->backends_block = all;
    return st;
}

/* A list of plugin specs at top-level key. Absent: default_name (one entry)
 * or, when default_name is NULL, an error. unique: refuse repeated names. */
bc_status bc_cfg_parse_spec_list(bc_config *cfg, const config_setting_t *root, const char *key,
                                 const char *default_name, int unique, bc_plugin_spec **out, size_t *n_out,
                                 bc_error *err) {
    const config_setting_t *list = config_setting_get_member(root, key);
    char got[96];
    if (!list) {
        if (!default_name)
            return bc_cfg_fail(cfg, err, BC_ERR_SETTING, NULL, key, "is required: a non-empty list, each %s", SPEC_FORMS);
        *out = calloc(1, sizeof **out);
        if (!*out) return bc_cfg_nomem(err);
        *n_out = 1;
        (*out)[0].name = bc_cfg_strdup(default_name);
        (*out)[0].where = bc_cfg_asprintf("%s (default)", key);
        if (!(*out)[0].name || !(*out)[0].where) return bc_cfg_nomem(err);
        return BC_OK;
    }
    if (!bc_cfg_is_list(list)) {
        /* one plugin given without brackets: a one-element list */
        *out = calloc(1, sizeof **out);
        if (!*out) return bc_cfg_nomem(err);
        *n_out = 1;
        return bc_cfg_parse_spec(cfg, list, key, &(*out)[0], err);
    }
    if (config_setting_length(list) == 0) {
        bc_cfg_describe(list, got, sizeof got);
        return bc_cfg_fail(cfg, err, BC_ERR_SETTING, list, key, "must be a non-empty list, each %s (got %s)", SPEC_FORMS,
                    got);
    }
    size_t n = (size_t)config_setting_length(list);
    *out = calloc(n, sizeof **out);
    if (!*out) return bc_cfg_nomem(err);
    for (size_t i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(list, (unsigned)i);
        char path[256];
        bc_cfg_path_index(path, sizeof path, key, i);
        bc_status st = bc_cfg_parse_spec(cfg, e, path, &(*out)[i], err);
        *n_out = i + 1; /* so bc_config_free sees what was filled */
        if (st) return st;
        for (size_t j = 0; unique && j < i; j++) {
            if (strcmp((*out)[j].name, (*out)[i].name) == 0)
                return bc_cfg_fail(cfg, err, BC_ERR_SETTING, e, key, "'%s' is listed twice (as [%zu] and [%zu])",
                            (*out)[i].name, j, i);
        }
    }
    return BC_OK;
}

bc_status bc_cfg_parse_plugin_path(bc_config *cfg, const config_setting_t *root, bc_error *err) {
    const config_setting_t *s = config_setting_get_member(root, "plugin_path");
    if (!s) return BC_OK;
    char got[96];
    bc_cfg_describe(s, got, sizeof got);
    if (config_setting_type(s) == CONFIG_TYPE_STRING) {
        cfg->plugin_paths = calloc(1, sizeof *cfg->plugin_paths);
        if (!cfg->plugin_paths || !(cfg->plugin_paths[0] = bc_cfg_strdup(config_setting_get_string(s)))) return bc_cfg_nomem(err);
        cfg->n_plugin_paths = 1;
        return BC_OK;
    }
    if (!bc_cfg_is_list(s))
        return bc_cfg_fail(cfg, err, BC_ERR_SETTING, s, "plugin_path", "must be a list of directory names (got %s)", got);
    size_t n = (size_t)config_setting_length(s);
    cfg->plugin_paths = calloc(n ? n : 1, sizeof *cfg->plugin_paths);
    if (!cfg->plugin_paths) return bc_cfg_nomem(err);
    for (size_t i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        if (config_setting_type(e) != CONFIG_TYPE_STRING || !config_setting_get_string(e)[0]) {
            bc_cfg_describe(e, got, sizeof got);
            return bc_cfg_fail(cfg, err, BC_ERR_SETTING, e, "plugin_path",
                        "must be a list of non-empty directory names (got %s)", got);
        }
        cfg->plugin_paths[i] = bc_cfg_strdup(config_setting_get_string(e));
        if (!cfg->plugin_paths[i]) return bc_cfg_nomem(err);
        cfg->n_plugin_paths = i + 1;
    }
    return BC_OK;
}
