/* ptbin.c: the strict, non-executing pytorch_model.bin reader behind the OPT
 * checkpoint loader (see ptbin.h for the format and the rules).
 *
 * Two layers, both on untrusted bytes: a zip central-directory reader
 * (STORED and DEFLATE entries, ZIP64 sizes and offsets) and a pickle
 * interpreter that knows only the opcodes and GLOBALs of a torch state dict.
 * Pickle objects are plain data (pt_val) from a pool the parser owns and
 * frees at once, so nothing is ever called and nothing recurses.
 */
#define _POSIX_C_SOURCE 200809L

#include "ptbin.h"

#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ------------------------------------------------------------------- zip */

static uint64_t pt_u16(const unsigned char *p) { return (uint64_t)p[0] | (uint64_t)p[1] << 8; }
static uint64_t pt_u32(const unsigned char *p) { return pt_u16(p) | pt_u16(p + 2) << 16; }
static uint64_t pt_u64(const unsigned char *p) { return pt_u32(p) | pt_u32(p + 4) << 32; }

typedef struct pt_entry {
    const char *name; /* into the mapping, not NUL-terminated */
    size_t name_len;
    int method;       /* 0 STORED, 8 DEFLATE */
    uint64_t csize, usize, local_off;
    const unsigned char *data; /* resolved on first use; NULL before */
} pt_entry;

typedef struct pt_zip {
    const char *path;
    const unsigned char *b;
    size_t len;
    pt_entry *e; /* sorted by name */
    size_t n;
    opt_pt_file *owner; /* takes inflated buffers */
} pt_zip;

static int pt_cmp_entry(const void *a, const void *b) {
    const pt_entry *x = a, *y = b;
    size_t m = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(x->name, y->name, m);
    if (c) return c;
    return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

static bc_status pt_zip_open(pt_zip *z, bc_error *err) {
    const unsigned char *b = z->b;
    size_t len = z->len;
    if (len < 22) return bc_error_set(err, BC_ERR_FORMAT, "%s: not a zip archive (%zu bytes; truncated?)", z->path, len);
    size_t eocd = SIZE_MAX;
    size_t lo = len - 22 > 65535 ? len - 22 - 65535 : 0;
    for (size_t i = len - 22 + 1; i-- > lo;) {
        if (pt_u32(b + i) == 0x06054b50u && i + 22 + pt_u16(b + i + 20) == len) {
            eocd = i;
            break;
        }
    }
    if (eocd == SIZE_MAX)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: not a zip archive (no end-of-central-directory record; truncated?)",
                            z->path);
    uint64_t n = pt_u16(b + eocd + 10), cd_size = pt_u32(b + eocd + 12), cd_off = pt_u32(b + eocd + 16);
    if (n == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_off == 0xFFFFFFFFu) {
        if (eocd < 20 || pt_u32(b + eocd - 20) != 0x07064b50u)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: ZIP64 end-of-central-directory locator missing", z->path);
        uint64_t off64 = pt_u64(b + eocd - 20 + 8);
        if (off64 > len || len - off64 < 56 || pt_u32(b + off64) != 0x06064b50u)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: bad ZIP64 end-of-central-directory record", z->path);
        n = pt_u64(b + off64 + 32);
        cd_size = pt_u64(b + off64 + 40);
        cd_off = pt_u64(b + off64 + 48);
    }
    if (cd_off > len || cd_size > len - cd_off)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: central directory [%llu, +%llu) is outside the %zu-byte file",
                            z->path, (unsigned long long)cd_off, (unsigned long long)cd_size, len);
    if (n > cd_size / 46)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: %llu entries do not fit a %llu-byte central directory",
                            z->path, (unsigned long long)n, (unsigned long long)cd_size);
    z->e = calloc(n ? n : 1, sizeof *z->e);
    if (!z->e) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", z->path);
    const unsigned char *p = b + cd_off, *end = b + cd_off + cd_size;
    for (uint64_t k = 0; k < n; k++) {
        if (end - p < 46 || pt_u32(p) != 0x02014b50u)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: central directory entry %llu is malformed", z->path,
                                (unsigned long long)k);
        pt_entry *e = &z->e[k];
        uint64_t flags = pt_u16(p + 8), nlen = pt_u16(p + 28), xlen = pt_u16(p + 30), clen = pt_u16(p + 32);
        e->method = (int)pt_u16(p + 10);
        e->csize = pt_u32(p + 20);
        e->usize = pt_u32(p + 24);
        e->local_off = pt_u32(p + 42);
        if ((uint64_t)(end - p) - 46 < nlen + xlen + clen)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: central directory entry %llu overruns the directory",
                                z->path, (unsigned long long)k);
        e->name = (const char *)p + 46;
        e->name_len = nlen;
        /* ZIP64 extra field: the 0xFFFFFFFF fields, in this order. */
        const unsigned char *x = p + 46 + nlen, *xend = x + xlen;
        while (xend - x >= 4) {
            uint64_t id = pt_u16(x), sz = pt_u16(x + 2);
            if ((uint64_t)(xend - x) - 4 < sz) break;
            if (id == 1) {
                const unsigned char *q = x + 4, *qend = x + 4 + sz;
                uint64_t *fields[3] = {&e->usize, &e->csize, &e->local_off};
                for (int f = 0; f < 3; f++) {
                    if (*fields[f] != 0xFFFFFFFFu) continue;
                    if (qend - q < 8)
                        return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: entry '%.*s': short ZIP64 extra field",
                                            z->path, (int)nlen, e->name);
                    *fields[f] = pt_u64(q);
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
    z->n = (size_t)n;
    qsort(z->e, z->n, sizeof *z->e, pt_cmp_entry);
    for (size_t k = 1; k < z->n; k++)
        if (pt_cmp_entry(&z->e[k - 1], &z->e[k]) == 0)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: entry '%.*s' appears twice", z->path,
                                (int)z->e[k].name_len, z->e[k].name);
    return BC_OK;
}

static pt_entry *pt_zip_find(pt_zip *z, const char *name, size_t name_len) {
    pt_entry key = {.name = name, .name_len = name_len};
    return z->n ? bsearch(&key, z->e, z->n, sizeof key, pt_cmp_entry) : NULL;
}

/* Points e->data at the entry's usize uncompressed bytes. */
static bc_status pt_zip_data(pt_zip *z, pt_entry *e, bc_error *err) {
    if (e->data) return BC_OK;
    const unsigned char *b = z->b;
    size_t len = z->len;
    int nl = (int)e->name_len;
    if (e->local_off > len || len - e->local_off < 30 || pt_u32(b + e->local_off) != 0x04034b50u)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: entry '%.*s': local header at %llu is missing (truncated?)",
                            z->path, nl, e->name, (unsigned long long)e->local_off);
    uint64_t start = e->local_off + 30 + pt_u16(b + e->local_off + 26) + pt_u16(b + e->local_off + 28);
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
    if (e->usize > OPT_PT_MAX_INFLATE || e->csize > OPT_PT_MAX_INFLATE || e->usize > e->csize * 1032 + 64)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: entry '%.*s' claims to inflate %llu bytes to %llu", z->path,
                            nl, e->name, (unsigned long long)e->csize, (unsigned long long)e->usize);
    opt_pt_file *f = z->owner;
    void **grown = realloc(f->inflated, (f->n_inflated + 1) * sizeof *grown);
    if (!grown) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", z->path);
    f->inflated = grown;
    unsigned char *out = malloc(e->usize ? e->usize : 1);
    if (!out) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory inflating '%.*s'", z->path, nl, e->name);
    f->inflated[f->n_inflated++] = out;
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

/* ---------------------------------------------------------------- pickle */

typedef enum { PV_NONE, PV_BOOL, PV_INT, PV_STR, PV_TUPLE, PV_DICT, PV_GLOBAL, PV_STORAGE, PV_TENSOR } pv_kind;
typedef enum { PG_ORDERED_DICT, PG_REBUILD_TENSOR, PG_STORAGE } pv_global;

typedef struct pt_val {
    pv_kind kind;
    int64_t i;           /* INT, BOOL; STORAGE: numel; TENSOR: offset */
    const char *s;       /* STR; STORAGE: key */
    size_t n;            /* STR / key length */
    struct pt_val **items; /* TUPLE; DICT: key, value pairs */
    size_t n_items, cap;
    pv_global g;         /* GLOBAL */
    opt_st_dtype dtype;  /* GLOBAL storage type, STORAGE, TENSOR */
    struct pt_val *storage; /* TENSOR */
    int ndim;            /* TENSOR */
    int64_t shape[OPT_ST_MAX_DIMS], stride[OPT_ST_MAX_DIMS];
} pt_val;

typedef struct pt_pickle {
    const char *path;
    pt_val **pool; /* every value made; owner */
    size_t n_pool, cap_pool;
    pt_val **stack;
    size_t n_stack, cap_stack;
    size_t *marks;
    size_t n_marks, cap_marks;
    pt_val **memo;
    size_t cap_memo;
} pt_pickle;

static int pt_grow(void **arr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 1;
    size_t nc = *cap ? *cap * 2 : 16;
    while (nc < need) nc *= 2;
    void *g = realloc(*arr, nc * elem);
    if (!g) return 0;
    memset((char *)g + *cap * elem, 0, (nc - *cap) * elem);
    *arr = g;
    *cap = nc;
    return 1;
}

static pt_val *pt_new(pt_pickle *pk, pv_kind kind) {
    if (pk->n_pool >= OPT_PT_MAX_OBJECTS) return NULL;
    if (!pt_grow((void **)&pk->pool, &pk->cap_pool, pk->n_pool + 1, sizeof *pk->pool)) return NULL;
    pt_val *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->kind = kind;
    pk->pool[pk->n_pool++] = v;
    return v;
}

static int pt_add_item(pt_val *c, pt_val *v) {
    if (!pt_grow((void **)&c->items, &c->cap, c->n_items + 1, sizeof *c->items)) return 0;
    c->items[c->n_items++] = v;
    return 1;
}

static void pt_pickle_free(pt_pickle *pk) {
    for (size_t i = 0; i < pk->n_pool; i++) {
        free(pk->pool[i]->items);
        free(pk->pool[i]);
    }
    free(pk->pool);
    free(pk->stack);
    free(pk->marks);
    free(pk->memo);
    memset(pk, 0, sizeof *pk);
}

static size_t pt_base(const pt_pickle *pk) { return pk->n_marks ? pk->marks[pk->n_marks - 1] : 0; }

static const char *pt_kind_name(pv_kind k) {
    static const char *names[] = {"None", "bool", "int", "str", "tuple", "dict", "global", "storage", "tensor"};
    return names[k];
}

/* Reads data.pkl (bytes[0, len)); on success *out is the state dict. */
static bc_status pt_unpickle(pt_pickle *pk, const unsigned char *b, size_t len, pt_val **out, bc_error *err) {
    const char *path = pk->path;
    size_t at = 0;
#define NEED(k)                                                                                                  \
    do {                                                                                                         \
        if (len - at < (size_t)(k))                                                                             \
            return bc_error_set(err, BC_ERR_FORMAT, "%s: data.pkl: truncated at byte %zu", path, at);            \
    } while (0)
#define FAIL(...) return bc_error_set(err, BC_ERR_FORMAT, __VA_ARGS__)
#define NEWV(var, kind)                                                                                          \
    do {                                                                                                         \
        if (!((var) = pt_new(pk, (kind))))                                                                       \
            return bc_error_set(err, BC_ERR_FORMAT, "%s: data.pkl: more than %u objects (or out of memory)", path, \
                                OPT_PT_MAX_OBJECTS);                                                             \
    } while (0)
#define PUSH(v)                                                                                                  \
    do {                                                                                                         \
        if (!pt_grow((void **)&pk->stack, &pk->cap_stack, pk->n_stack + 1, sizeof *pk->stack))                   \
            return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);                                   \
        pk->stack[pk->n_stack++] = (v);                                                                          \
    } while (0)
#define POP(var)                                                                                                 \
    do {                                                                                                         \
        if (pk->n_stack <= pt_base(pk)) FAIL("%s: data.pkl: stack underflow at byte %zu", path, op_at);          \
        (var) = pk->stack[--pk->n_stack];                                                                        \
    } while (0)
    for (;;) {
        NEED(1);
        size_t op_at = at;
        unsigned op = b[at++];
        pt_val *v, *w, *x;
        switch (op) {
        case 0x80: /* PROTO */
            NEED(1);
            if (b[at] > 5) FAIL("%s: data.pkl: pickle protocol %u is not supported", path, b[at]);
            at++;
            break;
        case '}': /* EMPTY_DICT */
            NEWV(v, PV_DICT);
            PUSH(v);
            break;
        case ')': /* EMPTY_TUPLE */
            NEWV(v, PV_TUPLE);
            PUSH(v);
            break;
        case '(': /* MARK */
            if (!pt_grow((void **)&pk->marks, &pk->cap_marks, pk->n_marks + 1, sizeof *pk->marks))
                return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
            if (pk->n_marks >= OPT_PT_MAX_OBJECTS) FAIL("%s: data.pkl: too many MARKs", path);
            pk->marks[pk->n_marks++] = pk->n_stack;
            break;
        case 'X': { /* BINUNICODE */
            NEED(4);
            uint64_t n = pt_u32(b + at);
            at += 4;
            NEED(n);
            NEWV(v, PV_STR);
            v->s = (const char *)b + at;
            v->n = (size_t)n;
            at += (size_t)n;
            PUSH(v);
            break;
        }
        case 'q': case 'r': { /* BINPUT, LONG_BINPUT */
            size_t k = op == 'q' ? 1 : 4;
            NEED(k);
            uint64_t idx = k == 1 ? b[at] : pt_u32(b + at);
            at += k;
            if (idx >= OPT_PT_MAX_MEMO) FAIL("%s: data.pkl: memo index %llu is too large", path, (unsigned long long)idx);
            if (pk->n_stack <= pt_base(pk)) FAIL("%s: data.pkl: PUT on an empty stack at byte %zu", path, op_at);
            if (!pt_grow((void **)&pk->memo, &pk->cap_memo, (size_t)idx + 1, sizeof *pk->memo))
                return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
            pk->memo[idx] = pk->stack[pk->n_stack - 1];
            break;
        }
        case 'h': case 'j': { /* BINGET, LONG_BINGET */
            size_t k = op == 'h' ? 1 : 4;
            NEED(k);
            uint64_t idx = k == 1 ? b[at] : pt_u32(b + at);
            at += k;
            if (idx >= pk->cap_memo || !pk->memo[idx])
                FAIL("%s: data.pkl: GET of unset memo index %llu at byte %zu", path, (unsigned long long)idx, op_at);
            PUSH(pk->memo[idx]);
            break;
        }
        case 'c': { /* GLOBAL "module\nname\n" */
            const char *mod = (const char *)b + at;
            const char *nl1 = memchr(mod, '\n', len - at);
            if (!nl1) FAIL("%s: data.pkl: truncated GLOBAL at byte %zu", path, op_at);
            const char *name = nl1 + 1;
            const char *nl2 = memchr(name, '\n', len - (size_t)(name - (const char *)b));
            if (!nl2) FAIL("%s: data.pkl: truncated GLOBAL at byte %zu", path, op_at);
            int ml = (int)(nl1 - mod), nlen = (int)(nl2 - name);
            at = (size_t)(nl2 + 1 - (const char *)b);
            NEWV(v, PV_GLOBAL);
#define IS(m, n) (ml == (int)strlen(m) && nlen == (int)strlen(n) && !memcmp(mod, m, (size_t)ml) && !memcmp(name, n, (size_t)nlen))
            if (IS("collections", "OrderedDict")) v->g = PG_ORDERED_DICT;
            else if (IS("torch._utils", "_rebuild_tensor_v2")) v->g = PG_REBUILD_TENSOR;
            else if (IS("torch", "FloatStorage")) v->g = PG_STORAGE, v->dtype = OPT_ST_F32;
            else if (IS("torch", "HalfStorage")) v->g = PG_STORAGE, v->dtype = OPT_ST_F16;
            else if (IS("torch", "BFloat16Storage")) v->g = PG_STORAGE, v->dtype = OPT_ST_BF16;
            else
                return bc_error_set(err, BC_ERR_UNSUPPORTED,
                                    "%s: data.pkl: refusing GLOBAL '%.*s %.*s' at byte %zu (only a torch state dict "
                                    "of F32/F16/BF16 tensors is read; nothing in the pickle is executed)",
                                    path, ml > 64 ? 64 : ml, mod, nlen > 64 ? 64 : nlen, name, op_at);
#undef IS
            PUSH(v);
            break;
        }
        case 'Q': { /* BINPERSID: ('storage', type, key, location, numel) */
            POP(w);
            if (w->kind != PV_TUPLE || w->n_items != 5 || w->items[0]->kind != PV_STR || w->items[0]->n != 7 ||
                memcmp(w->items[0]->s, "storage", 7) || w->items[1]->kind != PV_GLOBAL ||
                w->items[1]->g != PG_STORAGE || w->items[2]->kind != PV_STR || w->items[4]->kind != PV_INT ||
                w->items[4]->i < 0)
                FAIL("%s: data.pkl: persistent id at byte %zu is not ('storage', <F32/F16/BF16 storage>, key, "
                     "location, numel)", path, op_at);
            NEWV(v, PV_STORAGE);
            v->dtype = w->items[1]->dtype;
            v->s = w->items[2]->s;
            v->n = w->items[2]->n;
            v->i = w->items[4]->i;
            PUSH(v);
            break;
        }
        case 't': { /* TUPLE */
            if (!pk->n_marks) FAIL("%s: data.pkl: TUPLE without MARK at byte %zu", path, op_at);
            size_t base = pk->marks[--pk->n_marks];
            NEWV(v, PV_TUPLE);
            for (size_t k = base; k < pk->n_stack; k++)
                if (!pt_add_item(v, pk->stack[k])) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
            pk->n_stack = base;
            PUSH(v);
            break;
        }
        case 0x85: case 0x86: case 0x87: { /* TUPLE1..3 */
            size_t k = op - 0x84;
            if (pk->n_stack - pt_base(pk) < k) FAIL("%s: data.pkl: stack underflow at byte %zu", path, op_at);
            NEWV(v, PV_TUPLE);
            for (size_t j = pk->n_stack - k; j < pk->n_stack; j++)
                if (!pt_add_item(v, pk->stack[j])) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
            pk->n_stack -= k;
            PUSH(v);
            break;
        }
        case 'K': case 'M': case 'J': { /* BININT1, BININT2, BININT */
            size_t k = op == 'K' ? 1 : op == 'M' ? 2 : 4;
            NEED(k);
            NEWV(v, PV_INT);
            v->i = k == 1 ? b[at] : k == 2 ? (int64_t)pt_u16(b + at) : (int64_t)(int32_t)(uint32_t)pt_u32(b + at);
            at += k;
            PUSH(v);
            break;
        }
        case 0x8a: { /* LONG1 */
            NEED(1);
            size_t k = b[at++];
            if (k > 8) FAIL("%s: data.pkl: LONG1 of %zu bytes at byte %zu is too large", path, k, op_at);
            NEED(k);
            uint64_t u = 0;
            for (size_t j = 0; j < k; j++) u |= (uint64_t)b[at + j] << (8 * j);
            if (k > 0 && k < 8 && (b[at + k - 1] & 0x80)) u |= ~(uint64_t)0 << (8 * k); /* sign-extend */
            at += k;
            NEWV(v, PV_INT);
            memcpy(&v->i, &u, sizeof u);
            PUSH(v);
            break;
        }
        case 0x88: case 0x89: /* NEWTRUE, NEWFALSE */
            NEWV(v, PV_BOOL);
            v->i = op == 0x88;
            PUSH(v);
            break;
        case 'N':
            NEWV(v, PV_NONE);
            PUSH(v);
            break;
        case 'R': { /* REDUCE: callable(*args), for the two callables allowed */
            POP(x);
            POP(w);
            if (w->kind != PV_GLOBAL || x->kind != PV_TUPLE)
                FAIL("%s: data.pkl: REDUCE at byte %zu needs a GLOBAL and a tuple", path, op_at);
            if (w->g == PG_ORDERED_DICT && x->n_items == 0) {
                NEWV(v, PV_DICT);
            } else if (w->g == PG_REBUILD_TENSOR && x->n_items >= 6 && x->items[0]->kind == PV_STORAGE &&
                       x->items[1]->kind == PV_INT && x->items[2]->kind == PV_TUPLE &&
                       x->items[3]->kind == PV_TUPLE && x->items[2]->n_items == x->items[3]->n_items &&
                       x->items[2]->n_items <= OPT_ST_MAX_DIMS && x->items[1]->i >= 0) {
                NEWV(v, PV_TENSOR);
                v->storage = x->items[0];
                v->dtype = v->storage->dtype;
                v->i = x->items[1]->i;
                v->ndim = (int)x->items[2]->n_items;
                for (int d = 0; d < v->ndim; d++) {
                    pt_val *sd = x->items[2]->items[d], *st = x->items[3]->items[d];
                    if (sd->kind != PV_INT || st->kind != PV_INT || sd->i < 0 || st->i < 0)
                        FAIL("%s: data.pkl: tensor at byte %zu has a bad size or stride", path, op_at);
                    v->shape[d] = sd->i;
                    v->stride[d] = st->i;
                }
            } else {
                FAIL("%s: data.pkl: REDUCE at byte %zu: unexpected arguments for %s", path, op_at,
                     w->g == PG_ORDERED_DICT ? "OrderedDict" : w->g == PG_REBUILD_TENSOR ? "_rebuild_tensor_v2"
                                                                                          : "a storage type");
            }
            PUSH(v);
            break;
        }
        case 'u': { /* SETITEMS */
            if (!pk->n_marks) FAIL("%s: data.pkl: SETITEMS without MARK at byte %zu", path, op_at);
            size_t base = pk->marks[--pk->n_marks];
            if (base == 0 || pk->n_stack < base || (pk->n_stack - base) % 2 || base <= pt_base(pk) ||
                pk->stack[base - 1]->kind != PV_DICT)
                FAIL("%s: data.pkl: bad SETITEMS at byte %zu", path, op_at);
            v = pk->stack[base - 1];
            for (size_t k = base; k < pk->n_stack; k++)
                if (!pt_add_item(v, pk->stack[k])) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
            pk->n_stack = base;
            break;
        }
        case 's': /* SETITEM */
            POP(x);
            POP(w);
            if (pk->n_stack <= pt_base(pk) || pk->stack[pk->n_stack - 1]->kind != PV_DICT)
                FAIL("%s: data.pkl: bad SETITEM at byte %zu", path, op_at);
            v = pk->stack[pk->n_stack - 1];
            if (!pt_add_item(v, w) || !pt_add_item(v, x))
                return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
            break;
        case 'b': /* BUILD: only on a dict (an OrderedDict's attributes, e.g. _metadata), ignored */
            POP(x);
            if (pk->n_stack <= pt_base(pk) || pk->stack[pk->n_stack - 1]->kind != PV_DICT)
                FAIL("%s: data.pkl: BUILD at byte %zu on something other than a dict", path, op_at);
            break;
        case '.': /* STOP */
            POP(v);
            if (v->kind != PV_DICT)
                FAIL("%s: data.pkl: the pickle holds a %s, not a state dict", path, pt_kind_name(v->kind));
            *out = v;
            return BC_OK;
        default:
            return bc_error_set(err, BC_ERR_UNSUPPORTED,
                                "%s: data.pkl: refusing pickle opcode 0x%02x at byte %zu (not part of a torch state dict)",
                                path, op, op_at);
        }
    }
#undef NEED
#undef FAIL
#undef NEWV
#undef PUSH
#undef POP
}

/* ------------------------------------------------------------------ file */

static int pt_cmp_by_name(const void *a, const void *b) {
    return strcmp(((const opt_st_tensor *)a)->name, ((const opt_st_tensor *)b)->name);
}

static bc_status pt_build(opt_pt_file *f, pt_zip *z, bc_error *err) {
    const char *path = f->path;
    /* The one "<prefix>/data.pkl" entry. */
    pt_entry *pkl = NULL;
    for (size_t k = 0; k < z->n; k++) {
        pt_entry *e = &z->e[k];
        if (e->name_len < 10 || memcmp(e->name + e->name_len - 9, "/data.pkl", 9)) continue;
        if (memchr(e->name, '/', e->name_len - 9)) continue;
        if (pkl)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: zip holds two pickles ('%.*s' and '%.*s')", path,
                                (int)pkl->name_len, pkl->name, (int)e->name_len, e->name);
        pkl = e;
    }
    if (!pkl)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: no '<archive>/data.pkl' in the zip (not a torch.save file?)", path);
    size_t plen = pkl->name_len - 8; /* "<prefix>/" */
    char ename[512]; /* "<prefix>/" (<= 200) + "data/" + a key (<= 256) */
    if (plen > 200)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: zip: archive prefix of %zu bytes is too long", path, plen);
    memcpy(ename, pkl->name, plen);
    memcpy(ename + plen, "byteorder", 9);
    pt_entry *bo = pt_zip_find(z, ename, plen + 9);
    bc_status st;
    if (bo) {
        if ((st = pt_zip_data(z, bo, err)) != BC_OK) return st;
        if (bo->usize != 6 || memcmp(bo->data, "little", 6))
            return bc_error_set(err, BC_ERR_UNSUPPORTED, "%s: storages are not little-endian", path);
    }
    if ((st = pt_zip_data(z, pkl, err)) != BC_OK) return st;
    pt_pickle pk = {.path = path};
    pt_val *dict = NULL;
    st = pt_unpickle(&pk, pkl->data, (size_t)pkl->usize, &dict, err);
    if (st != BC_OK) goto done;
    size_t n = dict->n_items / 2, names_bytes = 0;
    for (size_t k = 0; k < n; k++) {
        pt_val *key = dict->items[2 * k], *val = dict->items[2 * k + 1];
        if (key->kind != PV_STR || val->kind != PV_TENSOR || memchr(key->s, 0, key->n) || key->n > 4096) {
            st = bc_error_set(err, BC_ERR_FORMAT, "%s: state dict entry %zu is not a name -> tensor pair", path, k);
            goto done;
        }
        names_bytes += key->n + 1;
    }
    f->tensors = calloc(n ? n : 1, sizeof *f->tensors);
    f->names = malloc(names_bytes ? names_bytes : 1);
    if (!f->tensors || !f->names) {
        st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    char *np = f->names;
    for (size_t k = 0; k < n; k++) {
        pt_val *key = dict->items[2 * k], *tv = dict->items[2 * k + 1];
        opt_st_tensor *t = &f->tensors[k];
        memcpy(np, key->s, key->n);
        np[key->n] = 0;
        t->name = np;
        np += key->n + 1;
        t->path = f->path;
        t->dtype = tv->dtype;
        t->ndim = tv->ndim;
        uint64_t numel = 1, esize = opt_st_dtype_size(tv->dtype), expect = 1;
        int contiguous = 1;
        for (int d = tv->ndim - 1; d >= 0; d--) {
            t->shape[d] = tv->shape[d];
            if (tv->shape[d] != 1 && (uint64_t)tv->stride[d] != expect) contiguous = 0;
            if (tv->shape[d] && numel > UINT64_MAX / 16 / (uint64_t)tv->shape[d]) {
                st = bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': shape overflows", path, t->name);
                goto done;
            }
            numel *= (uint64_t)tv->shape[d];
            expect = numel;
        }
        if (numel && !contiguous) {
            st = bc_error_set(err, BC_ERR_UNSUPPORTED, "%s: tensor '%s' is not contiguous", path, t->name);
            goto done;
        }
        pt_val *sv = tv->storage;
        uint64_t s_numel = (uint64_t)sv->i, off = (uint64_t)tv->i;
        if (off > s_numel || numel > s_numel - off) {
            st = bc_error_set(err, BC_ERR_FORMAT,
                              "%s: tensor '%s': elements [%llu, +%llu) are outside its %llu-element storage '%.*s'",
                              path, t->name, (unsigned long long)off, (unsigned long long)numel,
                              (unsigned long long)s_numel, (int)(sv->n > 64 ? 64 : sv->n), sv->s);
            goto done;
        }
        if (sv->n > 256) {
            st = bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': storage key too long", path, t->name);
            goto done;
        }
        memcpy(ename + plen, "data/", 5);
        memcpy(ename + plen + 5, sv->s, sv->n);
        pt_entry *se = pt_zip_find(z, ename, plen + 5 + sv->n);
        if (!se) {
            st = bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s': storage entry '%.*s' is not in the zip", path,
                              t->name, (int)(plen + 5 + sv->n), ename);
            goto done;
        }
        if ((st = pt_zip_data(z, se, err)) != BC_OK) goto done;
        if (s_numel > UINT64_MAX / esize || se->usize != s_numel * esize) {
            st = bc_error_set(err, BC_ERR_FORMAT,
                              "%s: tensor '%s': storage '%.*s' holds %llu bytes, not %llu elements of %s", path,
                              t->name, (int)(plen + 5 + sv->n), ename, (unsigned long long)se->usize,
                              (unsigned long long)s_numel, opt_st_dtype_name(sv->dtype));
            goto done;
        }
        t->numel = numel;
        t->nbytes = numel * esize;
        t->data = se->data + off * esize;
    }
    f->n_tensors = n;
    qsort(f->tensors, n, sizeof *f->tensors, pt_cmp_by_name);
    for (size_t k = 1; k < n; k++)
        if (strcmp(f->tensors[k - 1].name, f->tensors[k].name) == 0) {
            st = bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s' appears twice", path, f->tensors[k].name);
            goto done;
        }
done:
    pt_pickle_free(&pk);
    return st;
}

void opt_pt_close(opt_pt_file *f) {
    if (f->map) munmap(f->map, f->map_bytes);
    for (size_t i = 0; i < f->n_inflated; i++) free(f->inflated[i]);
    free(f->inflated);
    free(f->tensors);
    free(f->names);
    free(f->path);
    memset(f, 0, sizeof *f);
}

bc_status opt_pt_parse(opt_pt_file *f, const char *path, const void *bytes, size_t len, bc_error *err) {
    memset(f, 0, sizeof *f);
    size_t pl = strlen(path) + 1;
    if (!(f->path = malloc(pl))) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
    memcpy(f->path, path, pl);
    pt_zip z = {.path = f->path, .b = bytes, .len = len, .owner = f};
    bc_status st = pt_zip_open(&z, err);
    if (st == BC_OK) st = pt_build(f, &z, err);
    free(z.e);
    if (st != BC_OK) opt_pt_close(f);
    return st;
}

bc_status opt_pt_open(opt_pt_file *f, const char *path, bc_error *err) {
    memset(f, 0, sizeof *f);
    void *map;
    size_t len;
    bc_status st = opt_map_readonly(path, &map, &len, err);
    if (st != BC_OK) return st;
    static const unsigned char empty[1] = {0};
    st = opt_pt_parse(f, path, map ? map : empty, len, err);
    if (st != BC_OK) {
        if (map) munmap(map, len);
        return st;
    }
    f->map = map;
    f->map_bytes = len;
    return BC_OK;
}

/* -------------------------------------------------------------- file sets */

static char *pt_join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static int pt_cmp_ptr_by_name(const void *a, const void *b) {
    return strcmp((*(const opt_st_tensor *const *)a)->name, (*(const opt_st_tensor *const *)b)->name);
}

static const opt_st_tensor *pt_file_find(const opt_pt_file *f, const char *name) {
    opt_st_tensor key = {.name = name};
    return f->n_tensors ? bsearch(&key, f->tensors, f->n_tensors, sizeof key, pt_cmp_by_name) : NULL;
}

static bc_status pt_set_index(opt_pt_set *s, bc_error *err) {
    size_t n = 0;
    for (size_t j = 0; j < s->n_files; j++) n += s->files[j].n_tensors;
    s->by_name = calloc(n ? n : 1, sizeof *s->by_name);
    if (!s->by_name) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", s->source);
    for (size_t j = 0; j < s->n_files; j++)
        for (size_t k = 0; k < s->files[j].n_tensors; k++) s->by_name[s->n_tensors++] = &s->files[j].tensors[k];
    qsort(s->by_name, n, sizeof *s->by_name, pt_cmp_ptr_by_name);
    for (size_t k = 1; k < n; k++)
        if (strcmp(s->by_name[k - 1]->name, s->by_name[k]->name) == 0)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s' is in both %s and %s", s->source,
                                s->by_name[k]->name, s->by_name[k - 1]->path, s->by_name[k]->path);
    return BC_OK;
}

static bc_status pt_set_open_index(opt_pt_set *s, const char *dir, bc_error *err) {
    json_t *idx = NULL; /* a regular file within the index limit (fileio.h) */
    bc_status st = opt_load_json(s->source, "index file", OPT_INDEX_JSON_MAX_BYTES, &idx, err);
    if (st != BC_OK) return st;
    json_t *map = json_object_get(idx, "weight_map");
    if (!json_is_object(map) || json_object_size(map) > 1000000) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: \"weight_map\" must be an object of tensor name -> file", s->source);
        goto done;
    }
    const char *key;
    json_t *val;
    s->files = calloc(json_object_size(map) ? json_object_size(map) : 1, sizeof *s->files);
    if (!s->files) {
        st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", s->source);
        goto done;
    }
    json_object_foreach(map, key, val) {
        const char *fn = json_is_string(val) ? json_string_value(val) : NULL;
        if (!fn || !fn[0] || strchr(fn, '/') || strcmp(fn, ".") == 0 || strcmp(fn, "..") == 0) {
            st = bc_error_set(err, BC_ERR_FORMAT, "%s: weight_map['%s'] is not a plain file name", s->source, key);
            goto done;
        }
        size_t j = 0;
        for (; j < s->n_files; j++) {
            const char *b = strrchr(s->files[j].path, '/');
            if (strcmp(b ? b + 1 : s->files[j].path, fn) == 0) break;
        }
        if (j == s->n_files) {
            char *p = pt_join(dir, fn);
            if (!p) {
                st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", s->source);
                goto done;
            }
            st = opt_pt_open(&s->files[j], p, err);
            free(p);
            if (st != BC_OK) goto done;
            s->n_files++;
        }
        if (!pt_file_find(&s->files[j], key)) {
            st = bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s' is not in %s, where %s says it is",
                              s->files[j].path, key, fn, s->source);
            goto done;
        }
    }
    st = pt_set_index(s, err);
    if (st == BC_OK && s->n_tensors != json_object_size(map))
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: the shards hold %zu tensors but weight_map lists %zu", s->source,
                          s->n_tensors, json_object_size(map));
done:
    json_decref(idx);
    return st;
}

bc_status opt_pt_set_open_dir(opt_pt_set *s, const char *dir, bc_error *err) {
    memset(s, 0, sizeof *s);
    char *index_path = pt_join(dir, "pytorch_model.bin.index.json");
    char *single_path = pt_join(dir, "pytorch_model.bin");
    if (!index_path || !single_path) {
        free(index_path);
        free(single_path);
        return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", dir);
    }
    bc_status st;
    if (access(index_path, F_OK) == 0) {
        s->source = index_path;
        free(single_path);
        st = pt_set_open_index(s, dir, err);
    } else {
        s->source = single_path;
        free(index_path);
        s->files = calloc(1, sizeof *s->files);
        if (!s->files) {
            st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", dir);
        } else if ((st = opt_pt_open(&s->files[0], s->source, err)) == BC_OK) {
            s->n_files = 1;
            st = pt_set_index(s, err);
        }
    }
    if (st != BC_OK) opt_pt_set_close(s);
    return st;
}

void opt_pt_set_close(opt_pt_set *s) {
    for (size_t j = 0; j < s->n_files; j++) opt_pt_close(&s->files[j]);
    free(s->files);
    free(s->by_name);
    free(s->source);
    memset(s, 0, sizeof *s);
}
