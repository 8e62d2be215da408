/* ptzip.c: the zip archive reader of the pytorch opener (ptzip.h). Every
 * field read from the archive is bounds-checked against its bytes before it
 * is followed; ZIP64 sizes and offsets come from the extra field, in the
 * order the format gives them.
 */
#include "ptzip.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static uint64_t zip_u16(const unsigned char *p) { return (uint64_t)p[0] | (uint64_t)p[1] << 8; }
static uint64_t zip_u32(const unsigned char *p) { return zip_u16(p) | zip_u16(p + 2) << 16; }
static uint64_t zip_u64(const unsigned char *p) { return zip_u32(p) | zip_u32(p + 4) << 32; }

static int zip_cmp_entry(const void *a, const void *b) {
    const eng_zip_entry *x = a, *y = b;
    size_t m = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(x->name, y->name, m);
    if (c) return c;
    return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

bc_status eng_zip_open(eng_zip *z, const char *path, const void *bytes, size_t len, bc_error *err) {
    memset(z, 0, sizeof *z);
    z->path = path;
    z->bytes = bytes;
    z->len = len;
    const unsigned char *b = z->bytes;
    if (len < 22) return bc_error_set(err, BC_ERR_FORMAT, "%s: not a zip archive (%zu bytes; truncated?)", z->path, len);
    size_t eocd = SIZE_MAX;
    size_t lo = len - 22 > 65535 ? len - 22 - 65535 : 0;
    for (size_t i = len - 22 + 1; i-- > lo;) {
        if (zip_u32(b + i) == 0x06054b50u && i + 22 + zip_u16(b + i + 20) == len) {
            eocd = i;
            break;
        }
    }
    if (eocd == SIZE_MAX)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: not a zip archive (no end-of-central-directory record; truncated?)",
                            z->path);
    uint64_t n = zip_u16(b + eocd + 10), cd_size = zip_u32(b + eocd + 12), cd_off = zip_u32(b + eocd + 16);
    if (n == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_off == 0xFFFFFFFFu) {
        if (eocd < 20 || zip_u32(b + eocd - 20) != 0x07064b50u)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: ZIP64 end-of-central-directory locator missing", z->path);
        uint64_t off64 = zip_u64(b + eocd - 20 + 8);
        if (off64 > len || len - off64 < 56 || zip_u32(b + off64) != 0x06064b50u)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: bad ZIP64 end-of-central-directory record", z->path);
        n = zip_u64(b + off64 + 32);
        cd_size = zip_u64(b + off64 + 40);
        cd_off = zip_u64(b + off64 + 48);
    }
    if (cd_off > len || cd_size > len - cd_off)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: central directory [%llu, +%llu) is outside the %zu-byte file",
                            z->path, (unsigned long long)cd_off, (unsigned long long)cd_size, len);
    if (n > cd_size / 46)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: %llu entries do not fit a %llu-byte central directory",
                            z->path, (unsigned long long)n, (unsigned long long)cd_size);
    z->entries = calloc(n ? n : 1, sizeof *z->entries);
    if (!z->entries) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", z->path);
    const unsigned char *p = b + cd_off, *end = b + cd_off + cd_size;
    for (uint64_t k = 0; k < n; k++) {
        if (end - p < 46 || zip_u32(p) != 0x02014b50u)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: central directory entry %llu is malformed", z->path,
                                (unsigned long long)k);
        eng_zip_entry *e = &z->entries[k];
        uint64_t flags = zip_u16(p + 8), nlen = zip_u16(p + 28), xlen = zip_u16(p + 30), clen = zip_u16(p + 32);
        e->method = (int)zip_u16(p + 10);
        e->csize = zip_u32(p + 20);
        e->usize = zip_u32(p + 24);
        e->local_off = zip_u32(p + 42);
        if ((uint64_t)(end - p) - 46 < nlen + xlen + clen)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: central directory entry %llu overruns the directory",
                                z->path, (unsigned long long)k);
        e->name = (const char *)p + 46;
        e->name_len = nlen;
        /* ZIP64 extra field: the 0xFFFFFFFF fields, in this order. */
        const unsigned char *x = p + 46 + nlen, *xend = x + xlen;
        while (xend - x >= 4) {
            uint64_t id = zip_u16(x), sz = zip_u16(x + 2);
            if ((uint64_t)(xend - x) - 4 < sz) break;
            if (id == 1) {
                const unsigned char *q = x + 4, *qend = x + 4 + sz;
                uint64_t *fields[3] = {&e->usize, &e->csize, &e->local_off};
                for (int f = 0; f < 3; f++) {
                    if (*fields[f] != 0xFFFFFFFFu) continue;
                    if (qend - q < 8)
                        return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: entry '%.*s': short ZIP64 extra field",
                                            z->path, (int)nlen, e->name);
                    *fields[f] = zip_u64(q);
                    q += 8;
                }
            }
            x += 4 + sz;
        }
        if (flags & 1)
            return bc_error_set(err, BC_ERR_UNSUPPORTED, "%s: zip: entry '%.*s' is encrypted", z->path, (int)nlen,
                                e->name);
        p += 46 + nlen + xlen + clen;
    }
    z->n_entries = (size_t)n;
    qsort(z->entries, z->n_entries, sizeof *z->entries, zip_cmp_entry);
    for (size_t k = 1; k < z->n_entries; k++)
        if (zip_cmp_entry(&z->entries[k - 1], &z->entries[k]) == 0)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: entry '%.*s' appears twice", z->path,
                                (int)z->entries[k].name_len, z->entries[k].name);
    return BC_OK;
}

eng_zip_entry *eng_zip_find(eng_zip *z, const char *name, size_t name_len) {
    eng_zip_entry key = {.name = name, .name_len = name_len};
    return z->n_entries ? bsearch(&key, z->entries, z->n_entries, sizeof key, zip_cmp_entry) : NULL;
}

bc_status eng_zip_entry_data(eng_zip *z, eng_zip_entry *e, bc_error *err) {
    if (e->data) return BC_OK;
    const unsigned char *b = z->bytes;
    size_t len = z->len;
    int nl = (int)e->name_len;
    if (e->local_off > len || len - e->local_off < 30 || zip_u32(b + e->local_off) != 0x04034b50u)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: entry '%.*s': local header at %llu is missing (truncated?)",
                            z->path, nl, e->name, (unsigned long long)e->local_off);
    uint64_t start = e->local_off + 30 + zip_u16(b + e->local_off + 26) + zip_u16(b + e->local_off + 28);
    if (start > len || len - start < e->csize)
        return bc_error_set(err, BC_ERR_FORMAT,
                            "%s: zip: entry '%.*s': %llu bytes at %llu run past the end of the %zu-byte file (truncated?)",
                            z->path, nl, e->name, (unsigned long long)e->csize, (unsigned long long)start, len);
    if (e->method == 0) {
        if (e->usize != e->csize)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: stored entry '%.*s' has sizes %llu and %llu", z->path,
                                nl, e->name, (unsigned long long)e->csize, (unsigned long long)e->usize);
        e->data = b + start;
        return BC_OK;
    }
    if (e->method != 8)
        return bc_error_set(err, BC_ERR_UNSUPPORTED, "%s: zip: entry '%.*s' uses compression method %d (only STORED "
                            "and DEFLATE are read)", z->path, nl, e->name, e->method);
    /* DEFLATE expands at most ~1032:1; a larger claim is a lie. */
    if (e->usize > ENG_ZIP_MAX_INFLATE || e->csize > ENG_ZIP_MAX_INFLATE || e->usize > e->csize * 1032 + 64)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: entry '%.*s' claims to inflate %llu bytes to %llu", z->path,
                            nl, e->name, (unsigned long long)e->csize, (unsigned long long)e->usize);
    void **grown = realloc(z->inflated, (z->n_inflated + 1) * sizeof *grown);
    if (!grown) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", z->path);
    z->inflated = grown;
    unsigned char *out = malloc(e->usize ? e->usize : 1);
    if (!out) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory inflating '%.*s'", z->path, nl, e->name);
    z->inflated[z->n_inflated++] = out;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -15) != Z_OK) return bc_error_set(err, BC_ERR_NOMEM, "%s: zlib init failed", z->path);
    zs.next_in = (Bytef *)(uintptr_t)(b + start);
    zs.avail_in = (uInt)e->csize;
    zs.next_out = out;
    zs.avail_out = (uInt)e->usize;
    int rc = inflate(&zs, Z_FINISH);
    uint64_t got = zs.total_out;
    inflateEnd(&zs);
    if (rc != Z_STREAM_END || got != e->usize)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: entry '%.*s' does not inflate to its %llu bytes", z->path,
                            nl, e->name, (unsigned long long)e->usize);
    e->data = out;
    return BC_OK;
}

void eng_zip_take_inflated(eng_zip *z, void ***bufs, size_t *n) {
    *bufs = z->inflated;
    *n = z->n_inflated;
    z->inflated = NULL;
    z->n_inflated = 0;
}

void eng_zip_close(eng_zip *z) {
    for (size_t i = 0; i < z->n_inflated; i++) free(z->inflated[i]);
    free(z->inflated);
    free(z->entries);
    memset(z, 0, sizeof *z);
}
