/* ptpickle.c: the state-dict pickle reader of the pytorch opener
 * (ptpickle.h). Pickle objects are plain data (pt_val) from a pool the
 * reader owns and frees at once, so nothing is ever called and nothing
 * recurses; self-referencing objects are harmless.
 */
#include "ptpickle.h"

#include <stdlib.h>
#include <string.h>

static uint64_t pk_u16(const unsigned char *p) { return (uint64_t)p[0] | (uint64_t)p[1] << 8; }
static uint64_t pk_u32(const unsigned char *p) { return pk_u16(p) | pk_u16(p + 2) << 16; }


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
    eng_ck_dtype dtype;  /* GLOBAL storage type, STORAGE, TENSOR */
    struct pt_val *storage; /* TENSOR */
    int ndim;            /* TENSOR */
    int64_t shape[ENG_CK_MAX_DIMS], stride[ENG_CK_MAX_DIMS];
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
    if (pk->n_pool >= ENG_PICKLE_MAX_OBJECTS) return NULL;
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
                                ENG_PICKLE_MAX_OBJECTS);                                                             \
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
            if (pk->n_marks >= ENG_PICKLE_MAX_OBJECTS) FAIL("%s: data.pkl: too many MARKs", path);
            pk->marks[pk->n_marks++] = pk->n_stack;
            break;
        case 'X': { /* BINUNICODE */
            NEED(4);
            uint64_t n = pk_u32(b + at);
            at += 4;
            NEED(n);
            NEWV(v, PV_STR);
            v->s = (const char *)b + at;
            v->n = (size_t)n;
            at += (size_t)n;
            PUSH(v);
            break;
        }
        case 'q': case 'r': case 'h': case 'j': { /* BINPUT, LONG_BINPUT, BINGET, LONG_BINGET */
            const int put = op == 'q' || op == 'r';
            size_t k = op == 'q' || op == 'h' ? 1 : 4;
            NEED(k);
            uint64_t idx = k == 1 ? b[at] : pk_u32(b + at);
            at += k;
            if (!put) {
                if (idx >= pk->cap_memo || !pk->memo[idx])
                    FAIL("%s: data.pkl: GET of unset memo index %llu at byte %zu", path, (unsigned long long)idx, op_at);
                PUSH(pk->memo[idx]);
                break;
            }
            if (idx >= ENG_PICKLE_MAX_MEMO) FAIL("%s: data.pkl: memo index %llu is too large", path, (unsigned long long)idx);
            if (pk->n_stack <= pt_base(pk)) FAIL("%s: data.pkl: PUT on an empty stack at byte %zu", path, op_at);
            if (!pt_grow((void **)&pk->memo, &pk->cap_memo, (size_t)idx + 1, sizeof *pk->memo))
                return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
            pk->memo[idx] = pk->stack[pk->n_stack - 1];
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
            else if (IS("torch", "FloatStorage")) v->g = PG_STORAGE, v->dtype = ENG_CK_F32;
            else if (IS("torch", "HalfStorage")) v->g = PG_STORAGE, v->dtype = ENG_CK_F16;
            else if (IS("torch", "BFloat16Storage")) v->g = PG_STORAGE, v->dtype = ENG_CK_BF16;
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
            v->i = k == 1 ? b[at] : k == 2 ? (int64_t)pk_u16(b + at) : (int64_t)(int32_t)(uint32_t)pk_u32(b + at);
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
                       x->items[2]->n_items <= ENG_CK_MAX_DIMS && x->items[1]->i >= 0) {
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

bc_status eng_pickle_read_state_dict(const char *path, const unsigned char *bytes, size_t len,
                                     eng_pickle_tensor **out, size_t *n_out, bc_error *err) {
    *out = NULL;
    *n_out = 0;
    pt_pickle pk = {.path = path};
    pt_val *dict = NULL;
    eng_pickle_tensor *ts = NULL;
    bc_status st = pt_unpickle(&pk, bytes, len, &dict, err);
    if (st != BC_OK) goto done;
    size_t n = dict->n_items / 2;
    ts = calloc(n ? n : 1, sizeof *ts);
    if (!ts) {
        st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    for (size_t k = 0; k < n; k++) {
        const pt_val *key = dict->items[2 * k], *tv = dict->items[2 * k + 1];
        if (key->kind != PV_STR || tv->kind != PV_TENSOR || memchr(key->s, 0, key->n) ||
            key->n > ENG_PICKLE_MAX_NAME) {
            st = bc_error_set(err, BC_ERR_FORMAT, "%s: state dict entry %zu is not a name -> tensor pair", path, k);
            goto done;
        }
        const pt_val *sv = tv->storage;
        eng_pickle_tensor *t = &ts[k];
        t->name = key->s;
        t->name_len = key->n;
        t->dtype = tv->dtype;
        t->storage_key = sv->s;
        t->storage_key_len = sv->n;
        t->storage_numel = (uint64_t)sv->i;
        t->offset = (uint64_t)tv->i;
        t->ndim = tv->ndim;
        memcpy(t->shape, tv->shape, sizeof t->shape);
        memcpy(t->stride, tv->stride, sizeof t->stride);
    }
    *out = ts;
    *n_out = n;
    ts = NULL;
done:
    free(ts);
    pt_pickle_free(&pk);
    return st;
}
