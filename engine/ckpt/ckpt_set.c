/* ckpt_set.c: the sharded file-set reader over the per-format openers
 * (ckpt_set.h for every rule). The index is JSON read through fileio.c
 * (bounded, duplicate keys refused); shard names are validated, deduplicated
 * and sorted before any file is opened, so the work is n log n whatever the
 * index holds.
 */
#define _POSIX_C_SOURCE 200809L

#include "ckpt_set.h"

#include "fileio.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The formats in the order a directory is tried. */
static const eng_ck_format *const ck_formats[] = {&eng_ck_safetensors, &eng_ck_pytorch};
#define CK_N_FORMATS (sizeof ck_formats / sizeof ck_formats[0])

static char *ck_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

int eng_ck_dir_has(const char *dir, const char *name) {
    char *p = ck_join(dir, name);
    int yes = p && access(p, F_OK) == 0;
    free(p);
    return yes;
}

static int ck_cmp_ptr_by_name(const void *a, const void *b) {
    return strcmp((*(const eng_ck_tensor *const *)a)->name, (*(const eng_ck_tensor *const *)b)->name);
}

static int ck_cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Builds s->by_name from s->files and refuses a name that two files hold. */
static bc_status ck_set_index(eng_ck_set *s, bc_error *err) {
    size_t n = 0;
    for (size_t i = 0; i < s->n_files; i++) n += s->files[i].n_tensors;
    s->by_name = calloc(n ? n : 1, sizeof *s->by_name);
    if (!s->by_name) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", s->source);
    for (size_t i = 0; i < s->n_files; i++)
        for (size_t j = 0; j < s->files[i].n_tensors; j++) s->by_name[s->n_tensors++] = &s->files[i].tensors[j];
    qsort(s->by_name, n, sizeof *s->by_name, ck_cmp_ptr_by_name);
    for (size_t i = 1; i < n; i++)
        if (strcmp(s->by_name[i - 1]->name, s->by_name[i]->name) == 0)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s' is in both %s and %s", s->source,
                                s->by_name[i]->name, s->by_name[i - 1]->path, s->by_name[i]->path);
    return BC_OK;
}

/* A shard name from weight_map: a plain file name inside the directory. */
static int ck_shard_name_ok(const char *n) {
    return n[0] != '\0' && strchr(n, '/') == NULL && strcmp(n, ".") != 0 && strcmp(n, "..") != 0;
}

static const char *ck_base_name(const char *path) {
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* Opens the shards s->source (an index) names, in sorted order. */
static bc_status ck_set_open_index(eng_ck_set *s, const char *dir, bc_error *err) {
    json_t *root = NULL; /* a regular file within the index limit (fileio.h) */
    bc_status st = eng_load_json(s->source, "index file", ENG_INDEX_JSON_MAX_BYTES, &root, err);
    if (st != BC_OK) return st;
    const char **shards = NULL;
    json_t *wm = json_is_object(root) ? json_object_get(root, "weight_map") : NULL;
    if (!json_is_object(wm)) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: no \"weight_map\" object (tensor name -> file name)", s->source);
        goto done;
    }
    size_t n_entries = json_object_size(wm);
    shards = calloc(n_entries ? n_entries : 1, sizeof *shards);
    if (!shards) {
        st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", s->source);
        goto done;
    }
    size_t n_shards = 0;
    const char *key;
    json_t *v;
    json_object_foreach(wm, key, v) {
        if (!json_is_string(v) || !ck_shard_name_ok(json_string_value(v))) {
            st = bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': weight_map value is not a file name in %s",
                              s->source, key, dir);
            goto done;
        }
        shards[n_shards++] = json_string_value(v);
    }
    qsort(shards, n_shards, sizeof *shards, ck_cmp_str);
    size_t n_unique = 0;
    for (size_t j = 0; j < n_shards; j++)
        if (n_unique == 0 || strcmp(shards[n_unique - 1], shards[j]) != 0) shards[n_unique++] = shards[j];
    n_shards = n_unique;
    if (n_shards > ENG_CK_MAX_SHARDS) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: weight_map names %zu files (at most %d)", s->source, n_shards,
                          ENG_CK_MAX_SHARDS);
        goto done;
    }
    s->files = calloc(n_shards ? n_shards : 1, sizeof *s->files);
    if (!s->files) {
        st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", s->source);
        goto done;
    }
    for (size_t j = 0; j < n_shards; j++) {
        char *p = ck_join(dir, shards[j]);
        if (!p) {
            st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", s->source);
            goto done;
        }
        st = eng_ck_file_open(&s->files[j], s->format->parse, p, err);
        free(p);
        if (st != BC_OK) goto done;
        s->n_files = j + 1;
    }
    if ((st = ck_set_index(s, err)) != BC_OK) goto done;
    json_object_foreach(wm, key, v) {
        const eng_ck_tensor *t = eng_ck_set_find(s, key);
        if (!t || strcmp(ck_base_name(t->path), json_string_value(v)) != 0) {
            st = bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': weight_map says it is in %s/%s, but it is not there",
                              s->source, key, dir, json_string_value(v));
            goto done;
        }
    }
    for (size_t i = 0; i < s->n_tensors; i++) {
        if (!json_object_get(wm, s->by_name[i]->name)) {
            st = bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s' is in %s but not in weight_map", s->source,
                              s->by_name[i]->name, s->by_name[i]->path);
            goto done;
        }
    }
done:
    free(shards);
    json_decref(root);
    return st;
}

bc_status eng_ck_set_open_format(eng_ck_set *s, const eng_ck_format *format, const char *dir, bc_error *err) {
    memset(s, 0, sizeof *s);
    s->format = format;
    bc_status st;
    if (eng_ck_dir_has(dir, format->index_file)) {
        if (!(s->source = ck_join(dir, format->index_file))) {
            st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", dir);
            goto done;
        }
        st = ck_set_open_index(s, dir, err);
        goto done;
    }
    if (!eng_ck_dir_has(dir, format->single_file)) {
        st = bc_error_set(err, BC_ERR_IO, "%s: neither %s nor %s is there", dir, format->single_file,
                          format->index_file);
        goto done;
    }
    s->source = ck_join(dir, format->single_file);
    s->files = calloc(1, sizeof *s->files);
    if (!s->source || !s->files) {
        st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", dir);
        goto done;
    }
    if ((st = eng_ck_file_open(&s->files[0], format->parse, s->source, err)) != BC_OK) goto done;
    s->n_files = 1;
    st = ck_set_index(s, err);
done:
    if (st != BC_OK) eng_ck_set_close(s);
    return st;
}

const eng_ck_format *eng_ck_format_of_dir(const char *dir) {
    for (size_t i = 0; i < CK_N_FORMATS; i++)
        if (eng_ck_dir_has(dir, ck_formats[i]->index_file) || eng_ck_dir_has(dir, ck_formats[i]->single_file))
            return ck_formats[i];
    return NULL;
}

bc_status eng_ck_set_open_dir(eng_ck_set *s, const char *dir, bc_error *err) {
    const eng_ck_format *format = eng_ck_format_of_dir(dir);
    if (format) return eng_ck_set_open_format(s, format, dir, err);
    memset(s, 0, sizeof *s);
    return bc_error_set(err, BC_ERR_IO, "%s: no weights: neither %s, %s, %s nor %s is there", dir,
                        eng_ck_safetensors.single_file, eng_ck_safetensors.index_file, eng_ck_pytorch.single_file,
                        eng_ck_pytorch.index_file);
}

static int ck_cmp_name_to_ptr(const void *key, const void *elem) {
    return strcmp((const char *)key, (*(const eng_ck_tensor *const *)elem)->name);
}

size_t eng_ck_set_slot(const eng_ck_set *s, const char *name) {
    if (!s->n_tensors) return s->n_tensors;
    const eng_ck_tensor *const *hit = bsearch(name, s->by_name, s->n_tensors, sizeof *s->by_name, ck_cmp_name_to_ptr);
    return hit ? (size_t)(hit - s->by_name) : s->n_tensors;
}

const eng_ck_tensor *eng_ck_set_find(const eng_ck_set *s, const char *name) {
    size_t i = eng_ck_set_slot(s, name);
    return i < s->n_tensors ? s->by_name[i] : NULL;
}

void eng_ck_set_close(eng_ck_set *s) {
    for (size_t i = 0; i < s->n_files; i++) eng_ck_file_close(&s->files[i]);
    free(s->files);
    free(s->by_name);
    free(s->source);
    memset(s, 0, sizeof *s);
}
