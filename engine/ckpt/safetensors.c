/* safetensors.c: the strict .safetensors opener of the checkpoint file set
 * (see safetensors.h for the format and every check; ckpt_set.c maps the
 * file and reads the sharded index).
 *
 * JSON comes from jansson (json_loadb with the header's length, duplicate
 * keys rejected); everything jansson returns is validated here before any
 * offset is turned into a pointer. Offsets and sizes are u64 and every
 * product or sum is overflow-checked.
 */
#define _POSIX_C_SOURCE 200809L

#include "safetensors.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ parse */

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
static bc_status st_parse_entry(const char *path, const char *name, json_t *v, eng_ck_tensor *t, uint64_t *begin,
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
    if (!json_is_string(jd) || !eng_ck_dtype_parse(json_string_value(jd), &t->dtype))
        return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': unknown dtype %s%.32s%s", path, name,
                            json_is_string(jd) ? "\"" : "", json_is_string(jd) ? json_string_value(jd) : "(not a string)",
                            json_is_string(jd) ? "\"" : "");
    if (!json_is_array(js))
        return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': shape is not a list", path, name);
    size_t nd = json_array_size(js);
    if (nd > ENG_CK_MAX_DIMS)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': shape has %zu dimensions (at most %d)", path, name,
                            nd, ENG_CK_MAX_DIMS);
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
    if (overflow || __builtin_mul_overflow(numel, (uint64_t)eng_ck_dtype_size(t->dtype), &nbytes))
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

bc_status eng_st_parse(eng_ck_file *f, const char *path, const void *bytes, size_t len, bc_error *err) {
    json_t *root = NULL;
    st_span *spans = NULL;
    const unsigned char *b = bytes;
    bc_status st = eng_ck_file_begin(f, path, err);
    if (st != BC_OK) return st;
    if (len < 8) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: file is %zu bytes, too short for the 8-byte header length", path,
                          len);
        goto fail;
    }
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | b[i];
    if (n > ENG_ST_MAX_HEADER_BYTES) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: header length %llu is over the %llu-byte limit (corrupt or hostile)",
                          path, (unsigned long long)n, (unsigned long long)ENG_ST_MAX_HEADER_BYTES);
        goto fail;
    }
    if (n > len - 8) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: header length %llu runs past the end of the file (%zu bytes): truncated?",
                          path, (unsigned long long)n, len);
        goto fail;
    }
    const unsigned char *data = b + 8 + n;
    uint64_t data_bytes = (uint64_t)len - 8 - n;

    json_error_t je;
    root = json_loadb((const char *)b + 8, (size_t)n, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        for (char *c = je.text; *c; c++) /* jansson quotes the file's text: keep the message one line */
            if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
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
    if ((st = eng_ck_file_alloc(f, n_keys, names_bytes, err)) != BC_OK) goto fail;
    spans = calloc(n_keys ? n_keys : 1, sizeof *spans);
    if (!spans) {
        st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory for %zu tensors", path, n_keys);
        goto fail;
    }

    char *name_at = f->names;
    size_t i = 0;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "__metadata__") == 0) continue;
        eng_ck_tensor *t = &f->tensors[i];
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
                              path, key, (unsigned long long)(end - begin), eng_ck_dtype_name(t->dtype),
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
    if ((st = eng_ck_file_sort(f, err)) != BC_OK) goto fail; /* JSON keys are unique already */
    free(spans);
    json_decref(root);
    return BC_OK;

fail:
    free(spans);
    if (root) json_decref(root);
    eng_ck_file_close(f);
    return st;
}

const eng_ck_format eng_ck_safetensors = {
    .name = "safetensors",
    .single_file = "model.safetensors",
    .index_file = "model.safetensors.index.json",
    .parse = eng_st_parse,
};
