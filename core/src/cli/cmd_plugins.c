/* cmd_plugins.c: `benchctl plugins [NAME]`: the plugins found, or one
 * plugin's settings table and, for a backend, its metric table. */
#define _GNU_SOURCE

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fields.h"
#include "loader.h"
#include "settings.h"

/* What `benchctl plugins` found, kept so it prints grouped by kind. */
typedef struct listed {
    char *path, *error;   /* owned copies */
    const bc_plugin *p;   /* owned by the loader; NULL when broken */
} listed;

typedef struct listing {
    listed *items; /* owned */
    size_t n;
    int nomem;
} listing;

static void on_plugin_listed(void *ctx, const char *path, const bc_plugin *p, const char *error) {
    listing *ls = ctx;
    listed *items = realloc(ls->items, (ls->n + 1) * sizeof *items);
    if (!items) {
        ls->nomem = 1;
        return;
    }
    ls->items = items;
    listed *it = &items[ls->n];
    it->p = p;
    it->path = strdup(path);
    it->error = error ? strdup(error) : NULL;
    if (!it->path || (error && !it->error)) {
        free(it->path), free(it->error);
        ls->nomem = 1;
        return;
    }
    ls->n++;
}

static void print_listed(const char *path, const bc_plugin *p, const char *error) {
    if (p)
        printf("%-10s %-14s %-8s %s\n%-10s %-14s %-8s   %s\n", bc_kind_name(p->desc->kind), p->desc->name,
               p->desc->version ? p->desc->version : "?", p->desc->description ? p->desc->description : "", "", "",
               "", path);
    else {
        /* the name from the file name: benchctl-NAME.so */
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        int len = (int)strlen(base) - (int)strlen("benchctl-.so");
        printf("%-10s %-14.*s %-8s %s\n", "broken", len > 0 ? len : 0, base + strlen("benchctl-"), "", error);
    }
}

/* The bench.cfg and --set lines that set d's first setting. by names the
 * plugin as bench.cfg must: its name, or its path when it was named by path
 * and a search by name would not find this file. */
static void print_settings_usage(const bc_plugin_desc *d, const char *by) {
    if (d->kind == BC_KIND_BACKEND)
        printf("\nin bench.cfg: backend = { name = \"%s\"; settings = { %s = ...; }; };\n"
               "on the command line: --set backend.settings.%s=...\n",
               by, d->settings[0].name, d->settings[0].name);
    else
        printf("\nin bench.cfg, in the %s list: { name = \"%s\"; settings = { %s = ...; }; }\n",
               d->kind == BC_KIND_PRECISION ? "precisions" : d->kind == BC_KIND_CACHE ? "cache_policies" : "reporters",
               by, d->settings[0].name);
}

/* The DEFAULT and ALLOWED cells of setting s's row. */
static void setting_cells(const bc_setting_desc *s, char *def, size_t n_def, char *allowed, size_t n_allowed) {
    bc_setting_value v;
    bc_setting_default(s, &v);
    bc_setting_format(s, &v, def, n_def);
    bc_setting_allowed(s, allowed, n_allowed);
}

static int max_int(int a, int b) { return a > b ? a : b; }

/* Prints d's settings table, columns as wide as their widest cell. */
static void print_settings_table(const bc_plugin_desc *d) {
    int w_name = 7, w_def = 7, w_allowed = 7;
    char def[64], allowed[256];
    for (uint32_t i = 0; i < d->n_settings; i++) {
        setting_cells(&d->settings[i], def, sizeof def, allowed, sizeof allowed);
        w_name = max_int(w_name, (int)strlen(d->settings[i].name));
        w_def = max_int(w_def, (int)strlen(def));
        w_allowed = max_int(w_allowed, (int)strlen(allowed));
    }
    printf("\n%-*s  %-6s  %-*s  %-*s  %s\n", w_name, "SETTING", "TYPE", w_def, "DEFAULT", w_allowed, "ALLOWED", "HELP");
    for (uint32_t i = 0; i < d->n_settings; i++) {
        const bc_setting_desc *s = &d->settings[i];
        setting_cells(s, def, sizeof def, allowed, sizeof allowed);
        printf("%-*s  %-6s  %-*s  %-*s  %s\n", w_name, s->name, bc_setting_type_name(s->type), w_def, def, w_allowed,
               allowed, s->help ? s->help : "");
    }
}

/* Prints backend p's metric table (its descriptor's rows; an instance's
 * more_metrics rows exist only once it is created), columns as wide as their
 * widest cell. */
static void print_metrics_table(const bc_plugin *p) {
    const bc_plugin_desc *d = p->desc; /* host-size (loader.h): no table before 2.4 */
    const char *more = p->backend.more_metrics ? "; an instance may declare more (more_metrics)" : "";
    if (d->n_metrics == 0 || !d->metrics) {
        printf("\nno metrics of its own%s\n", more);
        return;
    }
    if (!BC_ELEM_HAS(d->metric_size, bc_metric_desc, help)) {
        printf("\nmetric table of %u-byte rows, not an ABI 2.4 table (a run refuses it)\n", d->metric_size);
        return;
    }
    int w_name = 6, w_unit = 4;
    for (uint32_t i = 0; i < d->n_metrics; i++) {
        const bc_metric_desc *m = BC_AT(bc_metric_desc, d->metrics, d->metric_size, i);
        w_name = max_int(w_name, m->name ? (int)strlen(m->name) : 1);
        w_unit = max_int(w_unit, m->unit ? (int)strlen(m->unit) : 1);
    }
    printf("\n%-*s  %-*s  %-7s  %-9s  %s\n", w_name, "METRIC", w_unit, "UNIT", "BETTER", "PER", "HELP");
    for (uint32_t i = 0; i < d->n_metrics; i++) {
        const bc_metric_desc *m = BC_AT(bc_metric_desc, d->metrics, d->metric_size, i);
        char why[160];
        if (bc_metric_desc_invalid(m, why, sizeof why)) {
            printf("(row %u: %s; a run refuses it)\n", i, why);
            continue;
        }
        printf("%-*s  %-*s  %-7s  %-9s  %s\n", w_name, m->name, w_unit, m->unit, bc_metric_better_name(m->better),
               bc_metric_scope_name(m->scope), m->help ? m->help : "");
    }
    if (more[0]) printf("%s\n", more + 2);
}

/* Lists every plugin found, grouped by kind, then the broken ones. */
static int list_plugins(bc_loader *l) {
    printf("%-10s %-14s %-8s %s\n", "KIND", "NAME", "VERSION", "DESCRIPTION / FILE");
    listing ls = {0};
    bc_loader_list(l, on_plugin_listed, &ls);
    static const int order[] = {BC_KIND_BACKEND, BC_KIND_PRECISION, BC_KIND_CACHE, BC_KIND_REPORTER, -1};
    for (size_t k = 0; k < sizeof order / sizeof *order; k++)
        for (size_t i = 0; i < ls.n; i++)
            if ((ls.items[i].p ? (int)ls.items[i].p->desc->kind : -1) == order[k])
                print_listed(ls.items[i].path, ls.items[i].p, ls.items[i].error);
    size_t count = ls.n;
    for (size_t i = 0; i < ls.n; i++) free(ls.items[i].path), free(ls.items[i].error);
    free(ls.items);
    if (ls.nomem) bc_cli_print_error("warning: out of memory; the list is incomplete", NULL);
    if (count == 0) {
        printf("(none found; searched:");
        for (size_t i = 0; i < l->n_dirs; i++) printf(" %s", l->dirs[i]);
        printf(")\n");
    }
    return 0;
}

/* Whether a search for p's name finds p's own file. */
static int found_by_name(bc_loader *l, const bc_plugin *p) {
    const bc_plugin *q = NULL;
    bc_error err = {0};
    return bc_loader_load(l, p->desc->name, p->desc->kind, NULL, &q, &err) == BC_OK && q == p;
}

int bc_cli_plugins(const bc_cli_args *a) {
    bc_loader l;
    bc_error err = {0};
    if (bc_loader_init(&l, NULL, 0, NULL, 0, &err) != BC_OK) return bc_cli_print_bc_error(&err), EXIT_USAGE;
    if (!a->file) {
        int rc = list_plugins(&l);
        bc_loader_free(&l);
        return rc;
    }
    const bc_plugin *p;
    if (bc_loader_load(&l, a->file, 0, NULL, &p, &err) != BC_OK) {
        if (err.code == BC_ERR_NOT_FOUND) bc_loader_hint_near_name(&l, a->file, &err);
        bc_cli_print_bc_error(&err);
        bc_loader_free(&l);
        return EXIT_USAGE;
    }
    bc_context_plugin resolved = {0};
    if (bc_context_resolve_cli_settings(p, a->sets, a->n_sets, &resolved, &err) != BC_OK) {
        bc_cli_print_bc_error(&err);
        bc_context_free_settings(&resolved);
        bc_loader_free(&l);
        return EXIT_USAGE;
    }
    const bc_plugin_desc *d = &resolved.desc; /* with the rows more_settings added */
    printf("%s %s (%s plugin, ABI %u.%u): %s\n%s\n", d->name, d->version ? d->version : "?", bc_kind_name(d->kind),
           d->abi_major, d->abi_minor, d->description ? d->description : "", p->path);
    if (d->n_settings == 0) {
        printf("no settings\n");
    } else {
        print_settings_table(d);
        print_settings_usage(d, found_by_name(&l, p) ? d->name : p->path);
    }
    if (d->kind == BC_KIND_BACKEND) print_metrics_table(p);
    bc_context_free_settings(&resolved);
    bc_loader_free(&l);
    return 0;
}
