/* runfile_query.c: a run file once read (runfile.h): its fields, cases
 * and settings looked up by name, the values of an axis, compare --by's
 * filter to one value of it, and freeing everything. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runfile_internal.h"

int bc_runfile_field(const bc_runfile *rf, const char *name) {
    for (uint32_t f = 0; f < rf->n_fields; f++)
        if (strcmp(rf->field_names[f], name) == 0) return (int)f;
    return -1;
}

const bc_runfile_case *bc_runfile_find(const bc_runfile *rf, const char *key) {
    for (size_t i = 0; i < rf->n_cases; i++)
        if (strcmp(rf->cases[i].key, key) == 0) return &rf->cases[i];
    return NULL;
}

const char *bc_runfile_setting(const bc_runfile *rf, const char *name) {
    for (size_t i = 0; i < rf->n_backend_settings; i++)
        if (strcmp(rf->backend_settings[i].name, name) == 0) return rf->backend_settings[i].value;
    return NULL;
}

void bc_rf_free_case(bc_runfile_case *c) {
    bc_schedule_clear(&c->schedule);
    free(c->precision), free(c->dtype), free(c->cache_policy), free(c->message), free(c->key), free(c->backend);
    for (size_t i = 0; i < c->n_settings; i++) free(c->setting_names[i]), free(c->setting_values[i]);
    free(c->setting_names), free(c->setting_values);
    free(c->values), free(c->stats);
    free(c->dist_host), free(c->dist_slowest_host), free(c->dist_arrays);
}

void bc_runfile_free(bc_runfile *rf) {
    char **strings[] = {&rf->path,          &rf->model,      &rf->device,       &rf->gpu,
                        &rf->driver,        &rf->backend,    &rf->benchctl_version, &rf->git_commit,
                        &rf->config_sha256, &rf->start_time, &rf->cpu_model,    &rf->cpu_kernels,
                        &rf->hostname,      &rf->config_path, &rf->model_family, &rf->selected_cases,
                        &rf->selected_only, &rf->cpu_topology_note, &rf->quiet_check,
                        &rf->scorer_backend, &rf->scorer_precision, &rf->scorer_model, &rf->scorer_device,
                        &rf->scorer_family, &rf->refit};
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) free(*strings[i]);
    for (size_t i = 0; i < rf->n_backend_settings; i++) {
        free(rf->backend_settings[i].name);
        free(rf->backend_settings[i].value);
    }
    free(rf->backend_settings);
    for (size_t i = 0; i < rf->n_plugins; i++) {
        free(rf->plugins[i].kind), free(rf->plugins[i].name);
        free(rf->plugins[i].version), free(rf->plugins[i].path);
    }
    free(rf->plugins);
    for (uint32_t f = 0; rf->field_descs && f < rf->n_fields; f++)
        free((char *)rf->field_descs[f].unit), free((char *)rf->field_descs[f].help);
    free(rf->field_descs);
    for (uint32_t f = 0; f < rf->n_fields; f++) free(rf->field_names[f]);
    free(rf->field_names);
    for (size_t i = 0; i < rf->n_cases; i++) bc_rf_free_case(&rf->cases[i]);
    free(rf->cases);
    for (size_t r = 0; r < rf->n_ranks; r++) free((char *)rf->ranks[r].host), free((char *)rf->ranks[r].device);
    free(rf->ranks);
    free(rf->dist_mode), free(rf->dist_comm);
    memset(rf, 0, sizeof *rf);
}

/* Case c's value on axis ("backend" or a backend setting), or NULL. */
static const char *axis_value(const bc_runfile_case *c, const char *axis) {
    if (strcmp(axis, "backend") == 0) return c->backend;
    for (size_t i = 0; i < c->n_settings; i++)
        if (strcmp(c->setting_names[i], axis) == 0) return c->setting_values[i];
    return NULL;
}

size_t bc_runfile_axis_values(const bc_runfile *rf, const char *axis, const char ***out) {
    *out = NULL;
    const char **names = calloc(rf->n_cases + 1, sizeof *names);
    if (!names) return 0;
    size_t n = 0;
    for (size_t k = 0; k < rf->n_cases; k++) {
        const char *b = axis_value(&rf->cases[k], axis);
        size_t i = 0;
        while (b && i < n && strcmp(names[i], b) != 0) i++;
        if (b && i == n) names[n++] = b;
    }
    if (n == 0) {
        free(names);
        return 0;
    }
    *out = names;
    return n;
}

bc_status bc_runfile_keep_axis(bc_runfile *rf, const char *axis, const char *value, bc_error *err) {
    char *part = NULL; /* " AXIS=VALUE", as the key holds it */
    if (asprintf(&part, " %s=%s", axis, value) < 0) return bc_error_set(err, BC_ERR_NOMEM, "out of memory");
    size_t kept = 0;
    for (size_t k = 0; k < rf->n_cases; k++) {
        bc_runfile_case *c = &rf->cases[k];
        const char *v = axis_value(c, axis);
        if (!v || strcmp(v, value) != 0) {
            bc_rf_free_case(c);
            continue;
        }
        /* the last occurrence: the backend comes last, a setting's value may hold "x=y" */
        char *at = NULL;
        for (char *p = strstr(c->key, part); p; p = strstr(p + 1, part)) at = p;
        if (at) memmove(at, at + strlen(part), strlen(at + strlen(part)) + 1);
        /* and the setting itself: every case kept has this value */
        for (size_t i = 0; i < c->n_settings; i++)
            if (strcmp(c->setting_names[i], axis) == 0) {
                free(c->setting_names[i]), free(c->setting_values[i]);
                memmove(&c->setting_names[i], &c->setting_names[i + 1], (c->n_settings - i - 1) * sizeof(char *));
                memmove(&c->setting_values[i], &c->setting_values[i + 1], (c->n_settings - i - 1) * sizeof(char *));
                c->n_settings--;
                break;
            }
        rf->cases[kept++] = *c;
    }
    rf->n_cases = kept;
    free(part);
    char *path = NULL;
    int is_backend = strcmp(axis, "backend") == 0;
    if (asprintf(&path, "%s [%s%s%s]", rf->path, is_backend ? "" : axis, is_backend ? "" : "=", value) < 0)
        return bc_error_set(err, BC_ERR_NOMEM, "out of memory");
    free(rf->path);
    rf->path = path;
    return BC_OK;
}
