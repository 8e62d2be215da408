/* overrides.c: --set and --reporter applied to the bench.cfg tree (see
 * overrides.h). */
#define _POSIX_C_SOURCE 200809L

#include "overrides.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_ints.h"
#include "config_tree.h"


/* Copies src (from the parsed --set value) as a new member name (NULL inside
 * a list or array) of parent. */
static int copy_setting(config_setting_t *parent, const char *name, const config_setting_t *src) {
    int type = config_setting_type(src);
    config_setting_t *d = config_setting_add(parent, name, type);
    if (!d) return 0;
    config_setting_set_format(d, config_setting_get_format(src));
    switch (type) {
    case CONFIG_TYPE_INT:
        return config_setting_set_int(d, config_setting_get_int(src));
    case CONFIG_TYPE_INT64:
        return config_setting_set_int64(d, config_setting_get_int64(src));
    case CONFIG_TYPE_FLOAT:
        return config_setting_set_float(d, config_setting_get_float(src));
    case CONFIG_TYPE_BOOL:
        return config_setting_set_bool(d, config_setting_get_bool(src));
    case CONFIG_TYPE_STRING:
        return config_setting_set_string(d, config_setting_get_string(src));
    case CONFIG_TYPE_GROUP:
    case CONFIG_TYPE_ARRAY:
    case CONFIG_TYPE_LIST: {
        int n = config_setting_length(src);
        for (int i = 0; i < n; i++) {
            const config_setting_t *e = config_setting_get_elem(src, (unsigned)i);
            if (!copy_setting(d, type == CONFIG_TYPE_GROUP ? config_setting_name(e) : NULL, e)) return 0;
        }
        return 1;
    }
    default:
        return 0;
    }
}

/* A libconfig setting name: [A-Za-z*][-A-Za-z0-9_*]*. */
static int valid_name(const char *s, size_t n) {
    if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '*')) return 0;
    for (size_t i = 1; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalnum(c) || c == '-' || c == '_' || c == '*')) return 0;
    }
    return 1;
}

/* Parses one value as libconfig would read "x = <value>;" into tmp. A bare
 * word (no quotes, backslashes, brackets, separators or spaces) that does not
 * parse is taken as a string, so --set backend.name=opt and
 * --set backend.name=./libmine.so work without shell quoting. */
static const config_setting_t *parse_value(config_t *tmp, const char *label, const char *value, bc_error *err) {
    char *text = bc_cfg_asprintf("x = %s;", value);
    if (!text) {
        bc_cfg_nomem(err);
        return NULL;
    }
    int ok = config_read_string(tmp, text);
    free(text);
    if (!ok && value[0] && strpbrk(value, "\"\\[](){};=,# \t\n") == NULL) {
        config_destroy(tmp);
        config_init(tmp);
        text = bc_cfg_asprintf("x = \"%s\";", value);
        if (!text) {
            bc_cfg_nomem(err);
            return NULL;
        }
        ok = config_read_string(tmp, text);
        free(text);
    }
    if (!ok) {
        bc_error_set(err, BC_ERR_SETTING, "%s: cannot read the value '%s' as a libconfig value (%s); "
                     "write e.g. 3, 0.5, \"text\", true or [1, 2]", label, value, config_error_text(tmp));
        return NULL;
    }
    const config_setting_t *root = config_root_setting(tmp);
    const config_setting_t *x = config_setting_get_member(root, "x");
    if (config_setting_length(root) != 1 || !x) {
        bc_error_set(err, BC_ERR_SETTING, "%s: the value '%s' is not one libconfig value", label, value);
        return NULL;
    }
    return x;
}

/* Records key and label so errors about the settings it made point at it. */
static bc_status note_override(bc_config *cfg, const char *key, size_t key_len, const char *label, bc_error *err) {
    char **k = realloc(cfg->override_keys, (cfg->n_overrides + 1) * sizeof *k);
    if (!k) return bc_cfg_nomem(err);
    cfg->override_keys = k;
    char **l = realloc(cfg->override_labels, (cfg->n_overrides + 1) * sizeof *l);
    if (!l) return bc_cfg_nomem(err);
    cfg->override_labels = l;
    k[cfg->n_overrides] = malloc(key_len + 1);
    l[cfg->n_overrides] = bc_cfg_strdup(label);
    if (!k[cfg->n_overrides] || !l[cfg->n_overrides]) {
        free(k[cfg->n_overrides]);
        free(l[cfg->n_overrides]);
        return bc_cfg_nomem(err);
    }
    memcpy(k[cfg->n_overrides], key, key_len);
    k[cfg->n_overrides][key_len] = '\0';
    cfg->n_overrides++;
    return BC_OK;
}

/* Applies one "a.b.c=value" to the tree: creates missing groups on the way,
 * replaces the last key if present. "[N]" steps into an existing list
 * element (e.g. reporters.[1].settings.path), except as the last step; "[0]"
 * of one value written without brackets (a one-element list) is the value. */
bc_status bc_overrides_apply_set(bc_config *cfg, config_t *c, const char *text, bc_error *err) {
    const char *eq = strchr(text, '=');
    const char *k0 = text, *k1 = eq ? eq : text + strlen(text);
    while (k0 < k1 && isspace((unsigned char)*k0)) k0++;
    while (k1 > k0 && isspace((unsigned char)k1[-1])) k1--;
    char label[200];
    snprintf(label, sizeof label, "--set %.*s", (int)(k1 - k0), k0);
    if (!eq || k0 == k1)
        return bc_error_set(err, BC_ERR_SETTING, "--set '%s': expected KEY=VALUE, e.g. run.iterations=3", text);
    bc_status st = note_override(cfg, k0, (size_t)(k1 - k0), label, err);
    if (st) return st;
    const char *key = cfg->override_keys[cfg->n_overrides - 1];

    const char *value = eq + 1;
    while (isspace((unsigned char)*value)) value++;
    if ((st = bc_cfg_check_int_literals_value(label, value, err))) return st; /* before libconfig narrows it */
    config_t tmp;
    config_init(&tmp);
    const config_setting_t *src = parse_value(&tmp, label, value, err);
    if (!src) {
        config_destroy(&tmp);
        return BC_ERR_SETTING;
    }

    config_setting_t *cur = config_root_setting(c);
    const char *seg = key;
    char done[256] = ""; /* the path walked so far, for messages */
    st = BC_OK;
    for (;;) {
        const char *dot = strchr(seg, '.');
        size_t len = dot ? (size_t)(dot - seg) : strlen(seg);
        int last = dot == NULL;
        char name[128];
        if (len == 0 || len >= sizeof name) {
            st = bc_error_set(err, BC_ERR_SETTING, "%s: '%s' is not a setting path (names joined by '.')", label, key);
            break;
        }
        memcpy(name, seg, len);
        name[len] = '\0';
        char here[256];
        bc_cfg_path_join(here, sizeof here, done, name);
        if (name[0] == '[') {
            char *end = NULL;
            long idx = strtol(name + 1, &end, 10);
            if (last || !end || strcmp(end, "]") != 0 || idx < 0) {
                st = bc_error_set(err, BC_ERR_SETTING,
                                  "%s: '%s' cannot be set by index; set the whole list, e.g. %s=[...]", label, key,
                                  done[0] ? done : name);
                break;
            }
            if (idx == 0 && done[0] && !bc_cfg_is_list(cur)) {
                /* one value where a list may stand ("reporters = { ... };")
                 * is a one-element list: [0] is that value itself, and the
                 * path errors name has no [0] step */
                seg = dot + 1;
                continue;
            }
            if (!bc_cfg_is_list(cur) || idx >= config_setting_length(cur)) {
                st = bc_error_set(err, BC_ERR_SETTING, "%s: %s has no element %s", label, done[0] ? done : "(root)",
                                  name);
                for (size_t i = 0; strcmp(done, "reporters") == 0 && i < cfg->n_overrides; i++)
                    if (strcmp(cfg->override_labels[i], "--reporter") == 0)
                        bc_error_hint(err, "--reporter replaced the file's reporters with its own list (%d of them), "
                                           "which reporters.[N] counts",
                                      bc_cfg_is_list(cur) ? config_setting_length(cur) : 1);
                break;
            }
            cur = config_setting_get_elem(cur, (unsigned)idx);
        } else {
            if (!valid_name(name, len)) {
                st = bc_error_set(err, BC_ERR_SETTING,
                                  "%s: '%s' is not a valid setting name (letters, digits, '_' and '-')", label, name);
                break;
            }
            if (config_setting_type(cur) != CONFIG_TYPE_GROUP) {
                char got[96];
                bc_cfg_describe(cur, got, sizeof got);
                st = bc_error_set(err, BC_ERR_SETTING, "%s: %s is %s, not a group, so it has no key '%s'", label,
                                  done, got, name);
                break;
            }
            config_setting_t *next = config_setting_get_member(cur, name);
            if (last) {
                if (next) config_setting_remove(cur, name);
                if (!copy_setting(cur, name, src)) st = bc_cfg_nomem(err);
                snprintf(done, sizeof done, "%s", here);
                break;
            }
            if (!next) next = config_setting_add(cur, name, CONFIG_TYPE_GROUP);
            if (!next) {
                st = bc_cfg_nomem(err);
                break;
            }
            cur = next;
        }
        snprintf(done, sizeof done, "%s", here);
        seg = dot + 1;
    }
    config_destroy(&tmp);
    /* record the path as the schema names it (a one-element [0] dropped) */
    if (st == BC_OK && strcmp(done, key) != 0) {
        char *canon = bc_cfg_strdup(done);
        if (!canon) return bc_cfg_nomem(err);
        free(cfg->override_keys[cfg->n_overrides - 1]);
        cfg->override_keys[cfg->n_overrides - 1] = canon;
    }
    return st;
}

/* Replaces the reporters list with the names in "json,csv", each as a group
 * { name = "json"; } so that a later --set can add its settings. */
bc_status bc_overrides_apply_reporters(bc_config *cfg, config_t *c, const char *names, bc_error *err) {
    config_setting_t *root = config_root_setting(c);
    if (config_setting_get_member(root, "reporters")) config_setting_remove(root, "reporters");
    config_setting_t *list = config_setting_add(root, "reporters", CONFIG_TYPE_LIST);
    if (!list) return bc_cfg_nomem(err);
    bc_status st = note_override(cfg, "reporters", strlen("reporters"), "--reporter", err);
    if (st) return st;
    const char *p = names;
    for (;;) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        const char *a = p, *b = end;
        while (a < b && isspace((unsigned char)*a)) a++;
        while (b > a && isspace((unsigned char)b[-1])) b--;
        if (a == b)
            return bc_error_set(err, BC_ERR_SETTING,
                                "--reporter '%s': expected a comma-separated list of reporter names, e.g. json,csv",
                                names);
        char *name = malloc((size_t)(b - a) + 1);
        if (!name) return bc_cfg_nomem(err);
        memcpy(name, a, (size_t)(b - a));
        name[b - a] = '\0';
        config_setting_t *e = config_setting_add(list, NULL, CONFIG_TYPE_GROUP);
        config_setting_t *n = e ? config_setting_add(e, "name", CONFIG_TYPE_STRING) : NULL;
        int ok = n && config_setting_set_string(n, name);
        free(name);
        if (!ok) return bc_cfg_nomem(err);
        if (!*end) break;
        p = end + 1;
    }
    return BC_OK;
}

