/* ptbin.c: the pytorch_model.bin opener of the checkpoint file set (ptbin.h):
 * finds the pickle in the zip (ptzip.c), reads the state dict from it
 * (ptpickle.c) and resolves each tensor to the bytes of its storage entry,
 * checking that the view is contiguous and inside the storage.
 */
#include "ptbin.h"

#include "ptpickle.h"
#include "ptzip.h"

#include <stdlib.h>
#include <string.h>

#define PT_MAX_PREFIX 200      /* bytes of "<prefix>/" */
#define PT_MAX_STORAGE_KEY 256 /* bytes of a storage key */

/* The one "<prefix>/data.pkl" entry; *prefix_len gets the length of
 * "<prefix>/". */
static bc_status pt_find_pickle(eng_zip *z, eng_zip_entry **out, size_t *prefix_len, bc_error *err) {
    eng_zip_entry *pkl = NULL;
    for (size_t k = 0; k < z->n_entries; k++) {
        eng_zip_entry *e = &z->entries[k];
        if (e->name_len < 10 || memcmp(e->name + e->name_len - 9, "/data.pkl", 9)) continue;
        if (memchr(e->name, '/', e->name_len - 9)) continue;
        if (pkl)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: zip holds two pickles ('%.*s' and '%.*s')", z->path,
                                (int)pkl->name_len, pkl->name, (int)e->name_len, e->name);
        pkl = e;
    }
    if (!pkl)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: no '<archive>/data.pkl' in the zip (not a torch.save file?)",
                            z->path);
    *prefix_len = pkl->name_len - 8;
    if (*prefix_len > PT_MAX_PREFIX)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: archive prefix of %zu bytes is too long", z->path,
                            *prefix_len);
    *out = pkl;
    return BC_OK;
}

/* Fills t (name already set) from the pickle's view p, whose storage is the
 * entry "<prefix>/data/<key>"; ename holds "<prefix>/" (plen bytes). */
static bc_status pt_resolve(eng_zip *z, const eng_pickle_tensor *p, eng_ck_tensor *t, char *ename, size_t plen,
                            bc_error *err) {
    const char *path = z->path;
    t->dtype = p->dtype;
    t->ndim = p->ndim;
    uint64_t numel = 1, esize = eng_ck_dtype_size(p->dtype), expect = 1;
    int contiguous = 1;
    for (int d = p->ndim - 1; d >= 0; d--) {
        t->shape[d] = p->shape[d];
        if (p->shape[d] != 1 && (uint64_t)p->stride[d] != expect) contiguous = 0;
        if (p->shape[d] && numel > UINT64_MAX / 16 / (uint64_t)p->shape[d])
            return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': shape overflows", path, t->name);
        numel *= (uint64_t)p->shape[d];
        expect = numel;
    }
    if (numel && !contiguous)
        return bc_error_set(err, BC_ERR_UNSUPPORTED, "%s: tensor '%s' is not contiguous", path, t->name);
    const int key_shown = (int)(p->storage_key_len > 64 ? 64 : p->storage_key_len);
    if (p->offset > p->storage_numel || numel > p->storage_numel - p->offset)
        return bc_error_set(err, BC_ERR_FORMAT,
                            "%s: tensor '%s': elements [%llu, +%llu) are outside its %llu-element storage '%.*s'",
                            path, t->name, (unsigned long long)p->offset, (unsigned long long)numel,
                            (unsigned long long)p->storage_numel, key_shown, p->storage_key);
    if (p->storage_key_len > PT_MAX_STORAGE_KEY)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': storage key too long", path, t->name);
    memcpy(ename + plen, "data/", 5);
    memcpy(ename + plen + 5, p->storage_key, p->storage_key_len);
    const int elen = (int)(plen + 5 + p->storage_key_len);
    eng_zip_entry *se = eng_zip_find(z, ename, (size_t)elen);
    if (!se)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': storage entry '%.*s' is not in the zip", path,
                            t->name, elen, ename);
    bc_status st = eng_zip_entry_data(z, se, err);
    if (st != BC_OK) return st;
    if (p->storage_numel > UINT64_MAX / esize || se->usize != p->storage_numel * esize)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': storage '%.*s' holds %llu bytes, not %llu elements of %s",
                            path, t->name, elen, ename, (unsigned long long)se->usize,
                            (unsigned long long)p->storage_numel, eng_ck_dtype_name(p->dtype));
    t->numel = numel;
    t->nbytes = numel * esize;
    t->data = se->data + p->offset * esize;
    return BC_OK;
}

/* Reads the state dict of archive z into f. */
static bc_status pt_read_archive(eng_ck_file *f, eng_zip *z, bc_error *err) {
    eng_zip_entry *pkl = NULL;
    size_t plen = 0;
    bc_status st = pt_find_pickle(z, &pkl, &plen, err);
    if (st != BC_OK) return st;
    char ename[PT_MAX_PREFIX + 5 + PT_MAX_STORAGE_KEY + 1]; /* "<prefix>/" "data/" key */
    memcpy(ename, pkl->name, plen);
    memcpy(ename + plen, "byteorder", 9);
    eng_zip_entry *bo = eng_zip_find(z, ename, plen + 9);
    if (bo) {
        if ((st = eng_zip_entry_data(z, bo, err)) != BC_OK) return st;
        if (bo->usize != 6 || memcmp(bo->data, "little", 6))
            return bc_error_set(err, BC_ERR_UNSUPPORTED, "%s: storages are not little-endian", f->path);
    }
    if ((st = eng_zip_entry_data(z, pkl, err)) != BC_OK) return st;
    eng_pickle_tensor *views = NULL;
    size_t n = 0, names_bytes = 0;
    if ((st = eng_pickle_read_state_dict(f->path, pkl->data, (size_t)pkl->usize, &views, &n, err)) != BC_OK) return st;
    for (size_t k = 0; k < n; k++) names_bytes += views[k].name_len + 1;
    if ((st = eng_ck_file_alloc(f, n, names_bytes, err)) != BC_OK) goto done;
    char *np = f->names;
    for (size_t k = 0; k < n; k++) {
        eng_ck_tensor *t = &f->tensors[k];
        memcpy(np, views[k].name, views[k].name_len);
        np[views[k].name_len] = '\0';
        t->name = np;
        t->path = f->path;
        np += views[k].name_len + 1;
        if ((st = pt_resolve(z, &views[k], t, ename, plen, err)) != BC_OK) goto done;
    }
    f->n_tensors = n;
    st = eng_ck_file_sort(f, err);
done:
    free(views);
    return st;
}

bc_status eng_pt_parse(eng_ck_file *f, const char *path, const void *bytes, size_t len, bc_error *err) {
    bc_status st = eng_ck_file_begin(f, path, err);
    if (st != BC_OK) return st;
    eng_zip z;
    st = eng_zip_open(&z, f->path, bytes, len, err);
    if (st == BC_OK) st = pt_read_archive(f, &z, err);
    if (st == BC_OK) eng_zip_take_inflated(&z, &f->owned, &f->n_owned);
    eng_zip_close(&z);
    if (st != BC_OK) eng_ck_file_close(f);
    return st;
}

const eng_ck_format eng_ck_pytorch = {
    .name = "pytorch",
    .single_file = "pytorch_model.bin",
    .index_file = "pytorch_model.bin.index.json",
    .parse = eng_pt_parse,
};
