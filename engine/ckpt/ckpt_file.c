/* ckpt_file.c: one checkpoint weights file, whatever its format (ckpt_file.h):
 * the dtype table, the tensor table's allocation, sorting and duplicate
 * check, lookup, and opening a file through a format's parser.
 */
#define _POSIX_C_SOURCE 200809L

#include "ckpt_file.h"

#include "fileio.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static const struct {
    const char *name;
    eng_ck_dtype dtype;
    size_t size;
} ck_dtypes[] = {
    {"BOOL", ENG_CK_BOOL, 1},       {"U8", ENG_CK_U8, 1},   {"I8", ENG_CK_I8, 1},
    {"F8_E5M2", ENG_CK_F8_E5M2, 1}, {"F8_E4M3", ENG_CK_F8_E4M3, 1},
    {"I16", ENG_CK_I16, 2},         {"U16", ENG_CK_U16, 2}, {"F16", ENG_CK_F16, 2},
    {"BF16", ENG_CK_BF16, 2},       {"I32", ENG_CK_I32, 4}, {"U32", ENG_CK_U32, 4},
    {"F32", ENG_CK_F32, 4},         {"I64", ENG_CK_I64, 8}, {"U64", ENG_CK_U64, 8},
    {"F64", ENG_CK_F64, 8},
};
#define CK_N_DTYPES (sizeof ck_dtypes / sizeof ck_dtypes[0])

const char *eng_ck_dtype_name(eng_ck_dtype t) {
    for (size_t i = 0; i < CK_N_DTYPES; i++)
        if (ck_dtypes[i].dtype == t) return ck_dtypes[i].name;
    return "?";
}

size_t eng_ck_dtype_size(eng_ck_dtype t) {
    for (size_t i = 0; i < CK_N_DTYPES; i++)
        if (ck_dtypes[i].dtype == t) return ck_dtypes[i].size;
    return 0;
}

int eng_ck_dtype_parse(const char *name, eng_ck_dtype *out) {
    for (size_t i = 0; i < CK_N_DTYPES; i++) {
        if (strcmp(ck_dtypes[i].name, name) == 0) {
            *out = ck_dtypes[i].dtype;
            return 1;
        }
    }
    return 0;
}

bc_status eng_ck_file_begin(eng_ck_file *f, const char *path, bc_error *err) {
    memset(f, 0, sizeof *f);
    size_t n = strlen(path) + 1;
    f->path = malloc(n);
    if (!f->path) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
    memcpy(f->path, path, n);
    return BC_OK;
}

bc_status eng_ck_file_alloc(eng_ck_file *f, size_t n, size_t names_bytes, bc_error *err) {
    f->tensors = calloc(n ? n : 1, sizeof *f->tensors);
    f->names = malloc(names_bytes ? names_bytes : 1);
    if (!f->tensors || !f->names)
        return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory for %zu tensors", f->path, n);
    return BC_OK;
}

static int ck_cmp_tensor_name(const void *a, const void *b) {
    return strcmp(((const eng_ck_tensor *)a)->name, ((const eng_ck_tensor *)b)->name);
}

bc_status eng_ck_file_sort(eng_ck_file *f, bc_error *err) {
    qsort(f->tensors, f->n_tensors, sizeof *f->tensors, ck_cmp_tensor_name);
    for (size_t k = 1; k < f->n_tensors; k++)
        if (strcmp(f->tensors[k - 1].name, f->tensors[k].name) == 0)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s' appears twice", f->path, f->tensors[k].name);
    return BC_OK;
}

bc_status eng_ck_file_open(eng_ck_file *f, eng_ck_parse_fn parse, const char *path, bc_error *err) {
    memset(f, 0, sizeof *f);
    void *map;
    size_t len;
    bc_status st = eng_map_regular(path, "weights file", ENG_WEIGHTS_MAX_BYTES, &map, &len, err);
    if (st != BC_OK) return st;
    static const unsigned char empty[1] = {0};
    st = parse(f, path, map ? map : empty, len, err);
    if (st != BC_OK) {
        if (map) munmap(map, len);
        return st;
    }
    f->map = map;
    f->map_bytes = len;
    return BC_OK;
}

const eng_ck_tensor *eng_ck_file_find(const eng_ck_file *f, const char *name) {
    if (!f->n_tensors) return NULL;
    eng_ck_tensor key = {.name = name};
    return bsearch(&key, f->tensors, f->n_tensors, sizeof key, ck_cmp_tensor_name);
}

void eng_ck_file_close(eng_ck_file *f) {
    if (f->map) munmap(f->map, f->map_bytes);
    for (size_t i = 0; i < f->n_owned; i++) free(f->owned[i]);
    free(f->owned);
    free(f->tensors);
    free(f->names);
    free(f->path);
    memset(f, 0, sizeof *f);
}
