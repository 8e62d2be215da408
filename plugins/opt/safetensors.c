/* safetensors.c: the strict, mmap-based .safetensors reader behind the OPT
 * checkpoint loader (see safetensors.h for the format and every check).
 *
 * JSON comes from jansson (json_loadb with the header's length, duplicate
 * keys rejected); everything jansson returns is validated here before any
 * offset is turned into a pointer. Offsets and sizes are u64 and every
 * product or sum is overflow-checked.
 */
#define _POSIX_C_SOURCE 200809L

#include "safetensors.h"

#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ dtypes */

static const struct {
    const char *name;
    opt_st_dtype dtype;
    size_t size;
} st_dtypes[] = {
    {"BOOL", OPT_ST_BOOL, 1},       {"U8", OPT_ST_U8, 1},   {"I8", OPT_ST_I8, 1},
    {"F8_E5M2", OPT_ST_F8_E5M2, 1}, {"F8_E4M3", OPT_ST_F8_E4M3, 1},
    {"I16", OPT_ST_I16, 2},         {"U16", OPT_ST_U16, 2}, {"F16", OPT_ST_F16, 2},
    {"BF16", OPT_ST_BF16, 2},       {"I32", OPT_ST_I32, 4}, {"U32", OPT_ST_U32, 4},
    {"F32", OPT_ST_F32, 4},         {"I64", OPT_ST_I64, 8}, {"U64", OPT_ST_U64, 8},
    {"F64", OPT_ST_F64, 8},
};
#define ST_N_DTYPES (sizeof st_dtypes / sizeof st_dtypes[0])

const char *opt_st_dtype_name(opt_st_dtype t) {
    for (size_t i = 0; i < ST_N_DTYPES; i++)
        if (st_dtypes[i].dtype == t) return st_dtypes[i].name;
    return "?";
}

size_t opt_st_dtype_size(opt_st_dtype t) {
    for (size_t i = 0; i < ST_N_DTYPES; i++)
        if (st_dtypes[i].dtype == t) return st_dtypes[i].size;
    return 0;
}

static int st_dtype_parse(const char *s, opt_st_dtype *out) {
    for (size_t i = 0; i < ST_N_DTYPES; i++) {
        if (strcmp(st_dtypes[i].name, s) == 0) {
            *out = st_dtypes[i].dtype;
            return 1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ parse */

static char *st_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int st_cmp_by_name(const void *a, const void *b) {
    return strcmp(((const opt_st_tensor *)a)->name, ((const opt_st_tensor *)b)->name);
}

/* Sort key for the tiling check: begin, then end. */
typedef struct st_span {
    uint64_t begin, end;
    size_t index; /* into the tensor table */
} st_span;

static int st_cmp_span(const void *a, const void *b) {
    const st_span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* A JSON integer that is >= 0, as u64; 0 if it is anything else. */
static int st_json_u64(const json_t *v, uint64_t *out) {
    if (!json_is_integer(v)) return 0;
    json_int_t i = json_integer_value(v);
    if (i < 0) return 0;
    *out = (uint64_t)i;
    return 1;
}

/* Fills t from one header entry; data offsets are checked by the caller. */
static bc_status st_parse_entry(const char *path, const char *name, json_t *v, opt_st_tensor *t, uint64_t *begin,
                                uint64_t *end, bc_error *err) {
    if (!json_is_object(v))
        return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': header entry is not a JSON object", path, name);
    json_t *jd = json_object_get(v, "dtype"), *js = json_object_get(v, "shape"), *jo = json_object_get(v, "data_offsets");
    if (!jd || !js || !jo)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': header entry lacks %s", path, name,
                            !jd ? "\"dtype\"" : !js ? "\"shape\"" : "\"data_offsets\"");
    if (json_object_size(v) != 3)
        return bc_error_set(err, BC_ERR_FORMAT,
                            "%s: tensor '%s': header entry has keys other than dtype, shape and data_offsets", path,
                            name);
    if (!json_is_string(jd) || !st_dtype_parse(json_string_value(jd), &t->dtype))
        return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': unknown dtype %s%.32s%s", path, name,
                            json_is_string(jd) ? "\"" : "", json_is_string(jd) ? json_string_value(jd) : "(not a string)",
                            json_is_string(jd) ? "\"" : "");
    if (!json_is_array(js))
        return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': shape is not a list", path, name);
    size_t nd = json_array_size(js);
    if (nd > OPT_ST_MAX_DIMS)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': shape has %zu dimensions (at most %d)", path, name,
                            nd, OPT_ST_MAX_DIMS);
    uint64_t numel = 1;
    int overflow = 0;
    for (size_t d = 0; d < nd; d++) {
        uint64_t dim;
        if (!st_json_u64(json_array_get(js, d), &dim))
            return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': shape[%zu] is not a non-negative integer",
                                path, name, d);
        t->shape[d] = (int64_t)dim;
        if (__builtin_mul_overflow(numel, dim, &numel)) overflow = 1;
    }
    t->ndim = (int)nd;
    uint64_t nbytes = 0;
    if (overflow || __builtin_mul_overflow(numel, (uint64_t)opt_st_dtype_size(t->dtype), &nbytes))
        return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': shape's byte count overflows 64 bits", path, name);
    t->numel = numel;
    t->nbytes = nbytes;
    if (!json_is_array(jo) || json_array_size(jo) != 2 || !st_json_u64(json_array_get(jo, 0), begin) ||
        !st_json_u64(json_array_get(jo, 1), end))
        return bc_error_set(err, BC_ERR_FORMAT,
                            "%s: tensor '%s': data_offsets is not [begin, end] of non-negative integers", path, name);
    return BC_OK;
}

static bc_status st_check_metadata(const char *path, json_t *v, bc_error *err) {
    if (!json_is_object(v))
        return bc_error_set(err, BC_ERR_FORMAT, "%s: __metadata__ is not a JSON object", path);
    const char *k;
    json_t *mv;
    json_object_foreach(v, k, mv) {
        if (!json_is_string(mv))
            return bc_error_set(err, BC_ERR_FORMAT, "%s: __metadata__ value of '%s' is not a string", path, k);
    }
    return BC_OK;
}

bc_status opt_st_parse(opt_st_file *f, const char *path, const void *bytes, size_t len, bc_error *err) {
    memset(f, 0, sizeof *f);
    json_t *root = NULL;
    st_span *spans = NULL;
    bc_status st = BC_OK;
    const unsigned char *b = bytes;

    f->path = st_strdup(path);
    if (!f->path) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
    if (len < 8) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: file is %zu bytes, too short for the 8-byte header length", path,
                          len);
        goto fail;
    }
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | b[i];
    if (n > OPT_ST_MAX_HEADER_BYTES) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: header length %llu is over the %llu-byte limit (corrupt or hostile)",
                          path, (unsigned long long)n, (unsigned long long)OPT_ST_MAX_HEADER_BYTES);
        goto fail;
    }
    if (n > len - 8) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: header length %llu runs past the end of the file (%zu bytes): truncated?",
                          path, (unsigned long long)n, len);
        goto fail;
    }
    f->header_bytes = n;
    const unsigned char *data = b + 8 + n;
    uint64_t data_bytes = (uint64_t)len - 8 - n;

    json_error_t je;
    root = json_loadb((const char *)b + 8, (size_t)n, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: header is not valid JSON (line %d, column %d: %s)", path, je.line,
                          je.column, je.text);
        goto fail;
    }
    if (!json_is_object(root)) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: header is not a JSON object", path);
        goto fail;
    }

    /* Table sizes first: one tensor per key but __metadata__. */
    size_t n_keys = json_object_size(root), names_bytes = 0;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "__metadata__") == 0) {
            if ((st = st_check_metadata(path, v, err)) != BC_OK) goto fail;
            n_keys--;
        } else {
            names_bytes += strlen(key) + 1;
        }
    }
    f->tensors = calloc(n_keys ? n_keys : 1, sizeof *f->tensors);
    spans = calloc(n_keys ? n_keys : 1, sizeof *spans);
    f->names = malloc(names_bytes ? names_bytes : 1);
    if (!f->tensors || !spans || !f->names) {
        st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory for %zu tensors", path, n_keys);
        goto fail;
    }

    char *name_at = f->names;
    size_t i = 0;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "__metadata__") == 0) continue;
        opt_st_tensor *t = &f->tensors[i];
        size_t kl = strlen(key) + 1;
        memcpy(name_at, key, kl);
        t->name = name_at;
        t->path = f->path;
        name_at += kl;
        uint64_t begin = 0, end = 0;
        if ((st = st_parse_entry(path, key, v, t, &begin, &end, err)) != BC_OK) goto fail;
        if (begin > end || end > data_bytes) {
            st = bc_error_set(err, BC_ERR_FORMAT,
                              "%s: tensor '%s': data_offsets [%llu, %llu] are not inside the %llu-byte data section%s",
                              path, key, (unsigned long long)begin, (unsigned long long)end,
                              (unsigned long long)data_bytes, begin <= end ? " (file truncated?)" : "");
            goto fail;
        }
        if (end - begin != t->nbytes) {
            st = bc_error_set(err, BC_ERR_FORMAT,
                              "%s: tensor '%s': data_offsets span %llu bytes, but %s with %llu elements needs %llu",
                              path, key, (unsigned long long)(end - begin), opt_st_dtype_name(t->dtype),
                              (unsigned long long)t->numel, (unsigned long long)t->nbytes);
            goto fail;
        }
        t->data = data + begin;
        spans[i] = (st_span){begin, end, i};
        i++;
    }
    f->n_tensors = i;

    /* The tensors must tile the data section: no overlap, no hole, no tail. */
    qsort(spans, f->n_tensors, sizeof *spans, st_cmp_span);
    uint64_t pos = 0;
    for (size_t k = 0; k < f->n_tensors; k++) {
        if (spans[k].begin < pos) {
            st = bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu] overlap tensor '%s'", path,
                              f->tensors[spans[k].index].name, (unsigned long long)spans[k].begin,
                              (unsigned long long)spans[k].end, f->tensors[spans[k - 1].index].name);
            goto fail;
        }
        if (spans[k].begin > pos) {
            st = bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': data section bytes [%llu, %llu) before it belong to no tensor",
                              path, f->tensors[spans[k].index].name, (unsigned long long)pos,
                              (unsigned long long)spans[k].begin);
            goto fail;
        }
        pos = spans[k].end;
    }
    if (pos != data_bytes) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: the last %llu bytes of the data section belong to no tensor", path,
                          (unsigned long long)(data_bytes - pos));
        goto fail;
    }
    qsort(f->tensors, f->n_tensors, sizeof *f->tensors, st_cmp_by_name);
    free(spans);
    json_decref(root);
    return BC_OK;

fail:
    free(spans);
    if (root) json_decref(root);
    opt_st_close(f);
    return st;
}

/* ------------------------------------------------------------- one file */

bc_status opt_map_readonly(const char *path, void **map, size_t *len, bc_error *err) {
    *map = NULL;
    *len = 0;
    uint64_t size = 0; /* stat before open: a FIFO is refused, not waited on */
    int fd = opt_open_regular(path, "weights file", OPT_WEIGHTS_MAX_BYTES, &size, err);
    if (fd < 0) { /* a weights file that is missing is an I/O error here */
        if (err && err->code == BC_ERR_NOT_FOUND) err->code = BC_ERR_IO;
        return BC_ERR_IO;
    }
    size_t n = (size_t)size;
    if (n > 0) {
        void *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int e = errno;
            close(fd);
            return bc_error_set(err, BC_ERR_IO, "%s: cannot mmap %zu bytes: %s", path, n, strerror(e));
        }
        *map = m;
        *len = n;
    }
    close(fd);
    return BC_OK;
}

bc_status opt_st_open(opt_st_file *f, const char *path, bc_error *err) {
    memset(f, 0, sizeof *f);
    void *map;
    size_t len;
    bc_status st = opt_map_readonly(path, &map, &len, err);
    if (st != BC_OK) return st;
    static const unsigned char empty[1] = {0};
    st = opt_st_parse(f, path, map ? map : empty, len, err);
    if (st != BC_OK) {
        if (map) munmap(map, len);
        return st;
    }
    f->map = map;
    f->map_bytes = len;
    return BC_OK;
}

const opt_st_tensor *opt_st_find(const opt_st_file *f, const char *name) {
    if (!f->tensors) return NULL;
    opt_st_tensor key = {.name = name};
    return bsearch(&key, f->tensors, f->n_tensors, sizeof key, st_cmp_by_name);
}

void opt_st_close(opt_st_file *f) {
    if (f->map) munmap(f->map, f->map_bytes);
    free(f->tensors);
    free(f->names);
    free(f->path);
    memset(f, 0, sizeof *f);
}

/* ---------------------------------------------------------- file sets */

static int st_cmp_ptr_by_name(const void *a, const void *b) {
    return strcmp((*(const opt_st_tensor *const *)a)->name, (*(const opt_st_tensor *const *)b)->name);
}

static char *st_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

/* Builds s->by_name from s->files and refuses a name that two files hold. */
static bc_status st_set_index(opt_st_set *s, bc_error *err) {
    size_t n = 0;
    for (size_t i = 0; i < s->n_files; i++) n += s->files[i].n_tensors;
    s->by_name = calloc(n ? n : 1, sizeof *s->by_name);
    if (!s->by_name) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", s->source);
    size_t k = 0;
    for (size_t i = 0; i < s->n_files; i++)
        for (size_t j = 0; j < s->files[i].n_tensors; j++) s->by_name[k++] = &s->files[i].tensors[j];
    s->n_tensors = n;
    qsort(s->by_name, n, sizeof *s->by_name, st_cmp_ptr_by_name);
    for (size_t i = 1; i < n; i++)
        if (strcmp(s->by_name[i - 1]->name, s->by_name[i]->name) == 0)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s' is in both %s and %s", s->source,
                                s->by_name[i]->name, s->by_name[i - 1]->path, s->by_name[i]->path);
    return BC_OK;
}

/* A shard name from weight_map: a plain file name inside dir. */
static int st_shard_name_ok(const char *n) {
    return n[0] != '\0' && strchr(n, '/') == NULL && strcmp(n, ".") != 0 && strcmp(n, "..") != 0;
}

static int st_cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bc_status st_set_open_index(opt_st_set *s, const char *dir, const char *index_path, bc_error *err) {
    json_t *root = NULL; /* a regular file within the index limit (fileio.h) */
    bc_status st = opt_load_json(index_path, "index file", OPT_INDEX_JSON_MAX_BYTES, &root, err);
    if (st != BC_OK) return st;
    const char **shards = NULL;
    json_t *wm = json_is_object(root) ? json_object_get(root, "weight_map") : NULL;
    if (!json_is_object(wm)) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: no \"weight_map\" object", index_path);
        goto done;
    }
    size_t n_entries = json_object_size(wm);
    shards = calloc(n_entries ? n_entries : 1, sizeof *shards);
    if (!shards) {
        st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", index_path);
        goto done;
    }
    /* The distinct shard names, sorted (n log n, whatever the index holds). */
    size_t n_shards = 0;
    const char *key;
    json_t *v;
    json_object_foreach(wm, key, v) {
        if (!json_is_string(v) || !st_shard_name_ok(json_string_value(v))) {
            st = bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': weight_map value is not a file name in %s",
                              index_path, key, dir);
            goto done;
        }
        shards[n_shards++] = json_string_value(v);
    }
    qsort(shards, n_shards, sizeof *shards, st_cmp_str);
    size_t n_unique = 0;
    for (size_t j = 0; j < n_shards; j++)
        if (n_unique == 0 || strcmp(shards[n_unique - 1], shards[j]) != 0) shards[n_unique++] = shards[j];
    n_shards = n_unique;
    if (n_shards > OPT_ST_MAX_SHARDS) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: weight_map names %zu files (at most %d)", index_path, n_shards,
                          OPT_ST_MAX_SHARDS);
        goto done;
    }
    s->files = calloc(n_shards ? n_shards : 1, sizeof *s->files);
    if (!s->files) {
        st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", index_path);
        goto done;
    }
    for (size_t j = 0; j < n_shards; j++) {
        char *p = st_join(dir, shards[j]);
        if (!p) {
            st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", index_path);
            goto done;
        }
        st = opt_st_open(&s->files[j], p, err);
        free(p);
        if (st != BC_OK) goto done;
        s->n_files = j + 1;
    }
    if ((st = st_set_index(s, err)) != BC_OK) goto done;
    json_object_foreach(wm, key, v) {
        const opt_st_tensor *t = opt_st_set_find(s, key);
        const char *fn = json_string_value(v), *base = t ? strrchr(t->path, '/') : NULL;
        if (!t || strcmp(base ? base + 1 : t->path, fn) != 0) {
            st = bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': weight_map says it is in %s, but it is not there",
                              index_path, key, fn);
            goto done;
        }
    }
done:
    free(shards);
    json_decref(root);
    return st;
}

bc_status opt_st_set_open_dir(opt_st_set *s, const char *dir, bc_error *err) {
    memset(s, 0, sizeof *s);
    char *index_path = st_join(dir, "model.safetensors.index.json");
    char *single_path = st_join(dir, "model.safetensors");
    bc_status st = BC_OK;
    if (!index_path || !single_path) {
        st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", dir);
        goto done;
    }
    if (access(index_path, F_OK) == 0) {
        s->source = index_path;
        index_path = NULL;
        st = st_set_open_index(s, dir, s->source, err);
    } else {
        s->source = single_path;
        single_path = NULL;
        s->files = calloc(1, sizeof *s->files);
        if (!s->files) {
            st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", dir);
            goto done;
        }
        if (access(s->source, F_OK) != 0) {
            st = bc_error_set(err, BC_ERR_IO, "%s: neither model.safetensors nor model.safetensors.index.json is there",
                              dir);
            goto done;
        }
        st = opt_st_open(&s->files[0], s->source, err);
        if (st == BC_OK) {
            s->n_files = 1;
            st = st_set_index(s, err);
        }
    }
done:
    free(index_path);
    free(single_path);
    if (st != BC_OK) opt_st_set_close(s);
    return st;
}

const opt_st_tensor *opt_st_set_find(const opt_st_set *s, const char *name) {
    if (!s->by_name) return NULL;
    opt_st_tensor key = {.name = name};
    const opt_st_tensor *kp = &key;
    const opt_st_tensor *const *hit = bsearch(&kp, s->by_name, s->n_tensors, sizeof *s->by_name, st_cmp_ptr_by_name);
    return hit ? *hit : NULL;
}

void opt_st_set_close(opt_st_set *s) {
    for (size_t i = 0; i < s->n_files; i++) opt_st_close(&s->files[i]);
    free(s->files);
    free(s->by_name);
    free(s->source);
    memset(s, 0, sizeof *s);
}
