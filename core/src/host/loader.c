/* loader.c: plugin discovery along the search path, dlopen, and the checks
 * every plugin passes before the host calls into it (see loader.h); the
 * file's ELF header is checked before dlopen by loader_elf.c. */
#define _GNU_SOURCE
#include "loader.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "loader_elf.h"
#include "suggest.h"
#include "host.h"

#ifndef BENCHCTL_PLUGIN_RELATIVE_DIR
#define BENCHCTL_PLUGIN_RELATIVE_DIR "../lib/benchctl"
#endif
#ifndef BENCHCTL_PLUGIN_INSTALL_DIR
#define BENCHCTL_PLUGIN_INSTALL_DIR "/usr/local/lib/benchctl"
#endif

const char *bc_kind_name(bc_plugin_kind kind) {
    switch (kind) {
    case BC_KIND_BACKEND: return "backend";
    case BC_KIND_PRECISION: return "precision";
    case BC_KIND_CACHE: return "cache";
    case BC_KIND_REPORTER: return "reporter";
    case BC_KIND_COMM: return "comm";
    }
    return "unknown";
}

static const char *kind_article(bc_plugin_kind kind) { return kind == BC_KIND_BACKEND ? "a backend" :
                                                              kind == BC_KIND_PRECISION ? "a precision" :
                                                              kind == BC_KIND_CACHE ? "a cache" :
                                                              kind == BC_KIND_COMM ? "a comm" : "a reporter"; }

static bc_status loader_add_dir(bc_loader *l, const char *dir, bc_error *err) {
    if (!dir || !*dir) return BC_OK;
    for (size_t i = 0; i < l->n_dirs; i++)
        if (strcmp(l->dirs[i], dir) == 0) return BC_OK; /* keep the first occurrence */
    char **dirs = realloc(l->dirs, (l->n_dirs + 1) * sizeof *dirs);
    if (!dirs) return bc_error_set(err, BC_ERR_NOMEM, "plugin search path: out of memory");
    l->dirs = dirs;
    l->dirs[l->n_dirs] = strdup(dir);
    if (!l->dirs[l->n_dirs]) return bc_error_set(err, BC_ERR_NOMEM, "plugin search path: out of memory");
    l->n_dirs++;
    return BC_OK;
}

bc_status bc_loader_init(bc_loader *l, const char *const *explicit_dirs, size_t n_explicit,
                         const char *const *config_dirs, size_t n_config, bc_error *err) {
    *l = (bc_loader){0};
    bc_status st = BC_OK;
    for (size_t i = 0; i < n_explicit && st == BC_OK; i++) st = loader_add_dir(l, explicit_dirs[i], err);
    for (size_t i = 0; i < n_config && st == BC_OK; i++) st = loader_add_dir(l, config_dirs[i], err);
    const char *env = getenv("BENCHCTL_PLUGIN_PATH");
    if (env && st == BC_OK) {
        char *copy = strdup(env); /* owned here */
        if (!copy) return bc_error_set(err, BC_ERR_NOMEM, "plugin search path: out of memory");
        char *save = NULL;
        for (char *tok = strtok_r(copy, ":", &save); tok && st == BC_OK; tok = strtok_r(NULL, ":", &save))
            st = loader_add_dir(l, tok, err);
        free(copy);
    }
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0 && st == BC_OK) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash && (size_t)(slash - exe) + sizeof "/plugins" < sizeof exe) {
            strcpy(slash, "/plugins"); /* the build tree */
            st = loader_add_dir(l, exe, err);
        }
        /* An installed benchctl finds its plugins relative to itself, so an
         * install moved to another prefix still works. */
        if (slash && st == BC_OK &&
            (size_t)(slash - exe) + 1 + sizeof BENCHCTL_PLUGIN_RELATIVE_DIR < sizeof exe) {
            /* each leading "../" takes one folder off the executable's, so
             * the path reads /prefix/lib/benchctl, not /prefix/bin/../lib/benchctl */
            const char *rel = BENCHCTL_PLUGIN_RELATIVE_DIR;
            char *end = slash; /* exe[0, end) is the folder rel is relative to */
            while (strncmp(rel, "../", 3) == 0 && end > exe) {
                *end = '\0';
                char *up = strrchr(exe, '/');
                if (!up || up == exe) break;
                end = up;
                rel += 3;
            }
            strcpy(end, "/");
            strcpy(end + 1, rel);
            st = loader_add_dir(l, exe, err);
        }
    }
    if (st == BC_OK) st = loader_add_dir(l, BENCHCTL_PLUGIN_INSTALL_DIR, err);
    if (st != BC_OK) bc_loader_free(l);
    return st;
}

static int is_path(const char *name) {
    size_t n = strlen(name);
    return strchr(name, '/') != NULL || (n >= 3 && strcmp(name + n - 3, ".so") == 0);
}

static int file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Copies an ops table of src_size bytes into a zeroed full-size dst. */
static void copy_ops(void *dst, size_t dst_size, const void *src, uint32_t src_size) {
    memset(dst, 0, dst_size);
    memcpy(dst, src, src_size < dst_size ? src_size : dst_size);
}

/* Appends name to the "missing" list. */
static void note_missing(char *buf, size_t cap, const char *name) {
    size_t used = strlen(buf);
    snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", name);
}

#define REQUIRE_HOOK(ops, field, missing) \
    do {                                  \
        if (!(ops).field) note_missing(missing, sizeof missing, #field); \
    } while (0)

/* Validates the kind's ops table and copies it into p. label names the plugin. */
static bc_status check_ops(bc_plugin *p, const char *label, bc_error *err) {
    const bc_plugin_desc *d = p->desc;
    if (!d->ops) return bc_error_set(err, BC_ERR_FORMAT, "%s: %s plugin has no ops table", label, bc_kind_name(d->kind));
    uint32_t size = *(const uint32_t *)d->ops; /* every ops table starts with struct_size */
    if (size < sizeof(uint32_t))
        return bc_error_set(err, BC_ERR_FORMAT, "%s: %s ops table has struct_size %u", label, bc_kind_name(d->kind),
                            size);
    char missing[256] = "";
    switch (d->kind) {
    case BC_KIND_BACKEND:
        copy_ops(&p->backend, sizeof p->backend, d->ops, size);
        REQUIRE_HOOK(p->backend, create, missing);
        REQUIRE_HOOK(p->backend, destroy, missing);
        REQUIRE_HOOK(p->backend, describe, missing);
        REQUIRE_HOOK(p->backend, begin_case, missing);
        REQUIRE_HOOK(p->backend, expand_prompts, missing);
        REQUIRE_HOOK(p->backend, generate, missing);
        REQUIRE_HOOK(p->backend, post_process, missing);
        REQUIRE_HOOK(p->backend, end_case, missing);
        break;
    case BC_KIND_PRECISION:
        copy_ops(&p->precision, sizeof p->precision, d->ops, size);
        if (!p->precision.dtype) note_missing(missing, sizeof missing, "dtype");
        REQUIRE_HOOK(p->precision, to_f32, missing);
        REQUIRE_HOOK(p->precision, from_f32, missing);
        if (!missing[0] && p->precision.element_size == 0)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: precision element_size is 0", label);
        break;
    case BC_KIND_CACHE:
        copy_ops(&p->cache, sizeof p->cache, d->ops, size);
        REQUIRE_HOOK(p->cache, release_after_rollout, missing);
        break;
    case BC_KIND_REPORTER:
        copy_ops(&p->reporter, sizeof p->reporter, d->ops, size);
        REQUIRE_HOOK(p->reporter, open, missing);
        REQUIRE_HOOK(p->reporter, close, missing);
        REQUIRE_HOOK(p->reporter, destroy, missing);
        break;
    case BC_KIND_COMM: /* since 2.2 */
        copy_ops(&p->comm, sizeof p->comm, d->ops, size);
        REQUIRE_HOOK(p->comm, open, missing);
        REQUIRE_HOOK(p->comm, close, missing);
        REQUIRE_HOOK(p->comm, barrier, missing);
        REQUIRE_HOOK(p->comm, broadcast, missing);
        REQUIRE_HOOK(p->comm, allgather, missing);
        REQUIRE_HOOK(p->comm, abort, missing);
        break;
    }
    if (missing[0])
        return bc_error_set(err, BC_ERR_FORMAT, "%s: %s plugin is missing required hooks: %s", label,
                            bc_kind_name(d->kind), missing);
    return BC_OK;
}

/* Checks the plugin's settings table (d->n_settings rows, d->setting_size
 * bytes apart) and copies it into p->settings, each row a zeroed host-size
 * bc_setting_desc, so the host reads every row with its own sizeof. */
static bc_status copy_settings(bc_plugin *p, const bc_plugin_desc *d, const char *label, bc_error *err) {
    if (d->n_settings == 0) return BC_OK;
    if (!d->settings)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: declares %u settings but no table", label, d->n_settings);
    if (!BC_ELEM_HAS(d->setting_size, bc_setting_desc, help))
        return bc_error_set(err, BC_ERR_FORMAT, "%s: settings rows are %u bytes, ABI %d.0 rows are at least %zu",
                            label, d->setting_size, BENCHCTL_ABI_MAJOR, BC_SIZE_THROUGH(bc_setting_desc, help));
    p->settings = calloc(d->n_settings, sizeof *p->settings);
    if (!p->settings) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", label);
    for (uint32_t i = 0; i < d->n_settings; i++) {
        const bc_setting_desc *row = BC_AT(bc_setting_desc, d->settings, d->setting_size, i);
        copy_ops(&p->settings[i], sizeof p->settings[i], row, d->setting_size);
        const bc_setting_desc *s = &p->settings[i];
        if (!s->name) return bc_error_set(err, BC_ERR_FORMAT, "%s: setting %u has no name", label, i);
        if (s->type < BC_SETTING_INT || s->type > BC_SETTING_ENUM)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: setting '%s' has unknown type %d", label, s->name, (int)s->type);
        if (s->type == BC_SETTING_ENUM && !s->choices)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: enum setting '%s' has no choices", label, s->name);
    }
    return BC_OK;
}

static void plugin_free(bc_plugin *p) {
    if (!p) return;
    free(p->settings);
    free(p->path);
    free(p);
}

/* Opens and checks one file. shown_name is the name it was asked for (for
 * messages). On success *out is a new bc_plugin owned by the caller. */
static bc_status load_file(const char *path, const char *shown_name, bc_plugin **out, bc_error *err) {
    *out = NULL;
    char label[PATH_MAX + 64];
    if (strcmp(shown_name, path) == 0)
        snprintf(label, sizeof label, "plugin %s", path);
    else
        snprintf(label, sizeof label, "plugin '%s' (%s)", shown_name, path);
    if (!file_exists(path)) return bc_error_set(err, BC_ERR_NOT_FOUND, "plugin file %s does not exist", path);
    bc_status st = bc_loader_check_elf(label, path, err);
    if (st != BC_OK) return st;

    /* dlopen searches the library path for a bare name: make it a path */
    char open_path[PATH_MAX + 3];
    snprintf(open_path, sizeof open_path, "%s%s", strchr(path, '/') ? "" : "./", path);
    dlerror();
    void *handle = dlopen(open_path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        return bc_error_set(err, BC_ERR_FORMAT, "%s: cannot load: %s", label, why ? why : "unknown dlopen error");
    }
    bc_plugin_entry_fn entry;
    void *sym = dlsym(handle, BENCHCTL_PLUGIN_ENTRY);
    if (!sym) {
        dlclose(handle);
        return bc_error_set(err, BC_ERR_FORMAT, "%s: no %s symbol; not a benchctl plugin", label, BENCHCTL_PLUGIN_ENTRY);
    }
    memcpy(&entry, &sym, sizeof entry); /* object pointer to function pointer, as POSIX allows */
    const bc_plugin_desc *d = entry();
    if (!d) {
        dlclose(handle);
        return bc_error_set(err, BC_ERR_FORMAT, "%s: %s returned NULL", label, BENCHCTL_PLUGIN_ENTRY);
    }
    if (d->magic != BENCHCTL_PLUGIN_MAGIC) {
        bc_error_set(err, BC_ERR_FORMAT, "%s: wrong magic 0x%08x (expected 0x%08x); not a benchctl plugin", label,
                     d->magic, BENCHCTL_PLUGIN_MAGIC);
        dlclose(handle); /* after the last read of d, which lives in the library */
        return BC_ERR_FORMAT;
    }
    if (d->abi_major != BENCHCTL_ABI_MAJOR) {
        bc_error_set(err, BC_ERR_ABI, "%s: ABI %u.%u, benchctl speaks ABI %d.%d", label, d->abi_major,
                     d->abi_minor, BENCHCTL_ABI_MAJOR, BENCHCTL_ABI_MINOR);
        bc_error_hint(err, "rebuild the plugin against this benchctl's include/benchctl/plugin.h (ABI %d.x)",
                      BENCHCTL_ABI_MAJOR);
        dlclose(handle);
        return BC_ERR_ABI;
    }
    if (d->struct_size < BC_PLUGIN_DESC_MIN_SIZE) {
        bc_error_set(err, BC_ERR_ABI, "%s: descriptor is %u bytes, ABI %d.0 descriptors are at least %zu", label,
                     d->struct_size, BENCHCTL_ABI_MAJOR, (size_t)BC_PLUGIN_DESC_MIN_SIZE);
        dlclose(handle);
        return BC_ERR_ABI;
    }
    if (d->kind < BC_KIND_BACKEND || d->kind > BC_KIND_COMM) {
        bc_error_set(err, BC_ERR_FORMAT, "%s: unknown plugin kind %d", label, (int)d->kind);
        dlclose(handle);
        return BC_ERR_FORMAT;
    }
    if (!d->name || !d->name[0]) {
        dlclose(handle);
        return bc_error_set(err, BC_ERR_FORMAT, "%s: descriptor has no name", label);
    }
    bc_plugin *p = calloc(1, sizeof *p); /* owned by the loader once returned */
    if (!p || !(p->path = strdup(path))) {
        free(p);
        dlclose(handle);
        return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", label);
    }
    p->handle = handle;
    /* the host reads a host-size copy: fields a 2.0 plugin lacks read as 0 */
    copy_ops(&p->desc_copy, sizeof p->desc_copy, d, d->struct_size);
    p->desc = &p->desc_copy;
    st = copy_settings(p, d, label, err);
    if (st == BC_OK) {
        p->desc_copy.settings = p->settings;
        p->desc_copy.setting_size = sizeof(bc_setting_desc);
        st = check_ops(p, label, err);
    }
    if (st != BC_OK) {
        plugin_free(p);
        dlclose(handle);
        return st;
    }
    bc_host_init(&p->host, p->desc->name);
    *out = p;
    return BC_OK;
}

/* Returns the already-loaded plugin for path, or NULL. */
static bc_plugin *find_loaded(bc_loader *l, const char *path) {
    char real[PATH_MAX];
    if (!realpath(path, real)) return NULL;
    for (size_t i = 0; i < l->n_plugins; i++) {
        char other[PATH_MAX];
        if (realpath(l->plugins[i]->path, other) && strcmp(real, other) == 0) return l->plugins[i];
    }
    return NULL;
}

static bc_status loader_get(bc_loader *l, const char *path, const char *shown_name, bc_plugin **out, bc_error *err) {
    bc_plugin *p = find_loaded(l, path);
    if (p) {
        *out = p;
        return BC_OK;
    }
    bc_plugin **grown = realloc(l->plugins, (l->n_plugins + 1) * sizeof *grown);
    if (!grown) return bc_error_set(err, BC_ERR_NOMEM, "plugin loader: out of memory");
    l->plugins = grown;
    bc_status st = load_file(path, shown_name, &p, err);
    if (st != BC_OK) return st;
    l->plugins[l->n_plugins++] = p;
    *out = p;
    return BC_OK;
}

static int valid_name(const char *name) {
    if (!*name) return 0;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
              *c == '-' || *c == '.'))
            return 0;
    return 1;
}

bc_status bc_loader_load(bc_loader *l, const char *name, bc_plugin_kind want, const char *wanted_by,
                         const bc_plugin **out, bc_error *err) {
    *out = NULL;
    bc_plugin *p = NULL;
    bc_status st;
    if (is_path(name)) {
        if (!file_exists(name)) {
            bc_error_set(err, BC_ERR_NOT_FOUND, "plugin file %s does not exist", name);
            return bc_error_hint(err, "a name with '/' or ending in .so is a file path; give a plugin name to search");
        }
        st = loader_get(l, name, name, &p, err);
    } else {
        if (!valid_name(name))
            return bc_error_set(err, BC_ERR_NOT_FOUND, "'%s' is not a valid plugin name (letters, digits, '_', '-', '.')", name);
        char tried[400] = "";
        size_t used = 0;
        char path[PATH_MAX];
        int found = 0;
        for (size_t i = 0; i < l->n_dirs; i++) {
            snprintf(path, sizeof path, "%s/benchctl-%s.so", l->dirs[i], name);
            if (file_exists(path)) {
                found = 1;
                break;
            }
            if (used < sizeof tried) used += (size_t)snprintf(tried + used, sizeof tried - used, "%s%s", used ? ", " : "", path);
        }
        if (!found) {
            if (used >= sizeof tried) strcpy(tried + sizeof tried - 5, "...");
            bc_error_set(err, BC_ERR_NOT_FOUND, "plugin '%s' not found; tried %s", name,
                         tried[0] ? tried : "no directories");
            return bc_error_hint(err, "run 'benchctl plugins' to list what is found; add a directory with "
                                      "BENCHCTL_PLUGIN_PATH or plugin_path, or name the .so by path");
        }
        st = loader_get(l, path, name, &p, err);
    }
    if (st != BC_OK) return st;
    if (want && p->desc->kind != want) {
        if (wanted_by)
            return bc_error_set(err, BC_ERR_WRONG_KIND, "'%s' is a %s plugin, %s wants %s", p->desc->name,
                                bc_kind_name(p->desc->kind), wanted_by, kind_article(want));
        return bc_error_set(err, BC_ERR_WRONG_KIND, "'%s' is a %s plugin, not %s", p->desc->name,
                            bc_kind_name(p->desc->kind), kind_article(want));
    }
    *out = p;
    return BC_OK;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void bc_loader_list(bc_loader *l, bc_loader_list_fn fn, void *ctx) {
    char **seen = NULL; /* plugin names already listed, owned here */
    size_t n_seen = 0;
    for (size_t d = 0; d < l->n_dirs; d++) {
        DIR *dir = opendir(l->dirs[d]);
        if (!dir) continue;
        char **names = NULL;
        size_t n_names = 0;
        struct dirent *e;
        while ((e = readdir(dir)) != NULL) {
            size_t len = strlen(e->d_name);
            if (len <= strlen("benchctl-.so") || strncmp(e->d_name, "benchctl-", 9) != 0 ||
                strcmp(e->d_name + len - 3, ".so") != 0)
                continue;
            char **grown = realloc(names, (n_names + 1) * sizeof *grown);
            if (!grown) break;
            names = grown;
            if (!(names[n_names] = strdup(e->d_name))) break;
            n_names++;
        }
        closedir(dir);
        if (names) qsort(names, n_names, sizeof *names, cmp_str);
        for (size_t i = 0; i < n_names; i++) {
            int dup = 0;
            for (size_t k = 0; k < n_seen; k++) dup |= strcmp(seen[k], names[i]) == 0;
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%s/%s", l->dirs[d], names[i]);
            if (dup || !file_exists(path)) {
                free(names[i]);
                continue;
            }
            char **grown = realloc(seen, (n_seen + 1) * sizeof *grown);
            if (grown) {
                seen = grown;
                seen[n_seen++] = names[i];
            }
            char shown[256];
            size_t len = strlen(names[i]);
            snprintf(shown, sizeof shown, "%.*s", (int)(len - 12), names[i] + 9);
            bc_plugin *p = NULL;
            bc_error err = {0};
            if (loader_get(l, path, shown, &p, &err) == BC_OK)
                fn(ctx, path, p, NULL);
            else
                fn(ctx, path, NULL, err.message);
            if (!grown) free(names[i]);
        }
        free(names);
    }
    for (size_t k = 0; k < n_seen; k++) free(seen[k]);
    free(seen);
}

size_t bc_loader_names(const bc_loader *l, char ***out) {
    *out = NULL;
    size_t n = 0;
    for (size_t d = 0; d < l->n_dirs; d++) {
        DIR *dir = opendir(l->dirs[d]);
        if (!dir) continue;
        struct dirent *e;
        while ((e = readdir(dir)) != NULL) {
            size_t len = strlen(e->d_name);
            if (len <= strlen("benchctl-.so") || strncmp(e->d_name, "benchctl-", 9) != 0 ||
                strcmp(e->d_name + len - 3, ".so") != 0)
                continue;
            char **grown = realloc(*out, (n + 1) * sizeof *grown);
            char *name = strndup(e->d_name + 9, len - 12);
            if (!grown || !name) {
                free(name);
                if (grown) *out = grown;
                break;
            }
            *out = grown;
            (*out)[n++] = name;
        }
        closedir(dir);
    }
    return n;
}

void bc_loader_hint_near_name(const bc_loader *l, const char *name, bc_error *err) {
    char **names = NULL;
    size_t n = bc_loader_names(l, &names);
    char hint[sizeof err->hint];
    bc_suggest_hint(name, (const char *const *)names, n, hint, sizeof hint);
    if (hint[0]) bc_error_hint(err, "%s ('benchctl plugins' lists what is found)", hint);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

void bc_loader_free(bc_loader *l) {
    for (size_t i = 0; i < l->n_plugins; i++) {
        if (l->plugins[i]->handle) dlclose(l->plugins[i]->handle);
        plugin_free(l->plugins[i]);
    }
    free(l->plugins);
    for (size_t i = 0; i < l->n_dirs; i++) free(l->dirs[i]);
    free(l->dirs);
    *l = (bc_loader){0};
}
