/* loader.h: finds, opens and checks plugins (dlopen), and owns their handles.
 *
 * Search path, in order (bc_loader_init):
 *   1. directories given explicitly (e.g. by a test);
 *   2. plugin_path entries from bench.cfg;
 *   3. BENCHCTL_PLUGIN_PATH (colon-separated);
 *   4. the build tree: <directory of /proc/self/exe>/plugins;
 *   5. the install dir (BENCHCTL_PLUGIN_INSTALL_DIR).
 * A plugin called NAME is the file benchctl-NAME.so in the first directory
 * that has one. A name containing '/' or ending in ".so" is a file path.
 *
 * Before any plugin code but the entry runs, the loader checks the ELF
 * header, the entry symbol, magic, ABI major (minor may be older or newer),
 * descriptor size (at least the 2.0 one), kind, the settings table, and that
 * the kind's ops table holds every required hook. Each
 * failure is one line naming the plugin and its file, e.g.
 *   plugin 'x' (/path/benchctl-x.so): ABI 3.0, benchctl speaks ABI 2.0
 * with a code (BC_ERR_NOT_FOUND, BC_ERR_ABI, BC_ERR_WRONG_KIND, ...) and,
 * where one helps, a hint in the error.
 *
 * Ownership: the loader owns every bc_plugin and its dlopen handle;
 * bc_loader_free dlcloses them, so call it only after every instance a plugin
 * created has been destroyed. A plugin loaded twice is the same bc_plugin.
 */
#ifndef BENCHCTL_LOADER_H
#define BENCHCTL_LOADER_H

#include <stddef.h>

#include "benchctl/plugin.h"

/* A loaded, checked plugin. The host reads host-size copies of what the
 * plugin declared: the descriptor, its settings rows and its ops table, each
 * zero-filled beyond the plugin's own struct_size (or setting_size), so
 * fields and hooks an older plugin lacks read as NULL/0 and a newer plugin's
 * extra fields are never looked at. Only the ops table matching desc->kind
 * is set. */
typedef struct bc_plugin {
    char *path;                 /* the file as opened, owned */
    void *handle;               /* dlopen handle, owned (dlclose in bc_loader_free) */
    const bc_plugin_desc *desc; /* points at desc_copy */
    bc_plugin_desc desc_copy;   /* the plugin's descriptor, host-size; settings points at settings */
    bc_setting_desc *settings;  /* desc->n_settings host-size rows, owned */
    bc_host host;               /* the services table handed to this plugin */
    bc_backend_ops backend;     /* BC_KIND_BACKEND */
    bc_precision_ops precision; /* BC_KIND_PRECISION */
    bc_cache_ops cache;         /* BC_KIND_CACHE */
    bc_reporter_ops reporter;   /* BC_KIND_REPORTER */
    bc_comm_ops comm;           /* BC_KIND_COMM (since 2.2) */
} bc_plugin;

typedef struct bc_loader {
    char **dirs;                /* search path in order, owned */
    size_t n_dirs;
    bc_plugin **plugins;        /* loaded plugins, owned */
    size_t n_plugins;
    size_t first_builtin;       /* dirs[first_builtin..] are benchctl's own (build tree, install), the rest the user's */
} bc_loader;

/* Builds the search path. explicit_dirs and config_dirs may be NULL. */
bc_status bc_loader_init(bc_loader *l, const char *const *explicit_dirs, size_t n_explicit,
                         const char *const *config_dirs, size_t n_config, bc_error *err);

/* Loads the plugin called name (or the file name names) and checks it is of
 * kind want (0: any). A name found in a directory of the user's
 * (plugin_path, BENCHCTL_PLUGIN_PATH) that one of benchctl's own also
 * holds shadows the built-in plugin: the plugin's log says so once, naming
 * both files (BC_LOG_WARN). wanted_by says who asked, for the wrong-kind message
 * ("'csv' is a reporter plugin, bench.cfg:14 wants a backend"); may be NULL. */
bc_status bc_loader_load(bc_loader *l, const char *name, bc_plugin_kind want, const char *wanted_by,
                         const bc_plugin **out, bc_error *err);

/* Calls fn for every benchctl-*.so in the search path (the first file of each
 * name; later ones are shadowed), in search-path then name order. Exactly one
 * of plugin and error is non-NULL. */
typedef void (*bc_loader_list_fn)(void *ctx, const char *path, const bc_plugin *plugin, const char *error);
void bc_loader_list(bc_loader *l, bc_loader_list_fn fn, void *ctx);

/* The NAMEs of every benchctl-NAME.so in the search path, without loading
 * them (for "did you mean" hints). *out is a malloc'ed array of malloc'ed
 * strings owned by the caller; returns the count (0 and NULL on no memory). */
size_t bc_loader_names(const bc_loader *l, char ***out);

/* After a BC_ERR_NOT_FOUND for name: sets err's hint to "did you mean ..."
 * when a plugin with a near name is on the search path; leaves it alone
 * otherwise. */
void bc_loader_hint_near_name(const bc_loader *l, const char *name, bc_error *err);

/* dlcloses every plugin and frees the loader. Safe on a zeroed loader. */
void bc_loader_free(bc_loader *l);

/* "backend", "precision", "cache", "reporter", "comm", or "unknown". */
const char *bc_kind_name(bc_plugin_kind kind);

#endif
