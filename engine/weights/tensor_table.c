/* tensor_table.c: a family's weights from its tensor table (tensor_table.h):
 * the arena's layout, synthetic weights, checkpoint loading over
 * engine/ckpt, the parameter count and LoRA's matrices by name. Every walk
 * goes over the same rows in the same order: the model's, then each
 * layer's.
 */
#include "tensor_table.h"
#include "ckpt_host.h"

#include "ckpt_load.h"
#include "family.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a walk over the table knows of the shape. */
typedef struct table_ctx {
    const eng_family *f;
    int64_t dims[ENG_DIM_COUNT]; /* each eng_dim's length; ENG_DIM_NONE 1 */
    unsigned conds;              /* the family's conditions for the shape */
    int n_layers;
} table_ctx;

static void dims_of_shape(const eng_shape *s, int64_t *d) {
    d[ENG_DIM_NONE] = 1;
    d[ENG_DIM_V] = s->vocab_size;
    d[ENG_DIM_C] = s->hidden_size;
    d[ENG_DIM_F] = s->ffn_size;
    d[ENG_DIM_Q] = (int64_t)s->n_heads * s->head_dim;
    d[ENG_DIM_K] = (int64_t)s->n_kv_heads * s->head_dim;
    d[ENG_DIM_TMAX] = s->max_positions;
    d[ENG_DIM_X0] = d[ENG_DIM_X1] = -1; /* the family's, when it has them */
}

static void ctx_init(table_ctx *c, const eng_family *f, const void *hp) {
    const eng_shape *s = hp;
    memset(c, 0, sizeof *c);
    c->f = f;
    dims_of_shape(s, c->dims);
    if (f->extra_dims) {
        int64_t x[2] = {-1, -1};
        f->extra_dims(hp, x);
        c->dims[ENG_DIM_X0] = x[0];
        c->dims[ENG_DIM_X1] = x[1];
    }
    c->conds = f->conditions ? f->conditions(hp) : 0;
    c->n_layers = s->n_layers;
}

static int conds_hold(const table_ctx *c, const eng_tensor *t) {
    return (t->when & ~c->conds) == 0 && (t->unless & c->conds) == 0;
}
/* A tied row that is its tie (not a tensor of its own) for this shape. */
static int row_tied(const table_ctx *c, const eng_tensor *t) { return t->tie && !(t->when && conds_hold(c, t)); }
/* A row with storage of its own in the arena. */
static int row_stored(const table_ctx *c, const eng_tensor *t) {
    return t->kind != ENG_TENSOR_IGNORED && !row_tied(c, t) && conds_hold(c, t);
}
/* A row the weights read at layer l (-1: the model's own rows), from a
 * checkpoint or as synthetic values: stored, not computed at load, kept in
 * a field of the weights. */
static int row_read_at(const table_ctx *c, const eng_tensor *t, int l) {
    return ((t->flags & ENG_TENSOR_LAYER) != 0) == (l >= 0) && row_stored(c, t) && !(t->flags & ENG_TENSOR_COMPUTED) &&
           t->offset != ENG_TENSOR_NO_FIELD;
}

static size_t align_up(size_t n) { return (n + 63) / 64 * 64; }

static const void *hp_of(const eng_weights *w) { return (const char *)w + w->family->hparams_offset; }
static char **layers_of(eng_weights *w) { return (char **)(void *)((char *)w + w->family->layers_offset); }

/* Row t's field: in the weights struct, or in layer l's struct. */
static void *field_of(eng_weights *w, const eng_tensor *t, int l) {
    if (t->offset == ENG_TENSOR_NO_FIELD) return NULL;
    if (!(t->flags & ENG_TENSOR_LAYER)) return (char *)w + t->offset;
    char *layers = *layers_of(w);
    return layers ? layers + (size_t)l * w->family->layer_size + t->offset : NULL;
}

static const eng_tensor *row_named(const eng_family *f, const char *name) {
    for (int i = 0; i < f->n_tensors; i++)
        if (!(f->tensors[i].flags & ENG_TENSOR_LAYER) && strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
    return NULL;
}

/* Lays out row t of layer l at *off: sizing (arena NULL) or pointing its
 * field into arena; an absent row's field zeroed. */
static void layout_row(const table_ctx *c, eng_weights *w, char *arena, eng_dtype dtype, const eng_tensor *t, int l,
                       size_t *off) {
    if (t->kind == ENG_TENSOR_IGNORED || row_tied(c, t)) return;
    void *fld = w ? field_of(w, t, l) : NULL;
    if (!conds_hold(c, t)) {
        if (fld) memset(fld, 0, t->kind == ENG_TENSOR_MATRIX ? sizeof(eng_matrix) : sizeof(float *));
        return;
    }
    const size_t rows = (size_t)c->dims[t->rows], cols = (size_t)c->dims[t->cols];
    char *at = arena ? arena + *off : NULL;
    if (t->kind == ENG_TENSOR_MATRIX) {
        if (fld) *(eng_matrix *)fld = (eng_matrix){dtype, (int)rows, (int)cols, at};
        *off += align_up(eng_matrix_bytes(dtype, rows, cols));
    } else {
        if (fld) *(float **)fld = (float *)(void *)at;
        *off += align_up(rows * sizeof(float));
    }
}

/* The arena's bytes for the shape in dtype, pointing w's fields into arena
 * when both are given. */
static size_t layout(const table_ctx *c, eng_weights *w, char *arena, eng_dtype dtype) {
    const eng_family *f = c->f;
    size_t off = 0;
    for (int i = 0; i < f->n_tensors; i++) {
        const eng_tensor *t = &f->tensors[i];
        if (!(t->flags & ENG_TENSOR_LAYER)) layout_row(c, w, arena, dtype, t, 0, &off);
    }
    for (int l = 0; l < c->n_layers; l++)
        for (int i = 0; i < f->n_tensors; i++) {
            const eng_tensor *t = &f->tensors[i];
            if (t->flags & ENG_TENSOR_LAYER) layout_row(c, w, arena, dtype, t, l, &off);
        }
    if (!w) return off;
    for (int i = 0; i < f->n_tensors; i++) { /* a tied head gets its tie's matrix */
        const eng_tensor *t = &f->tensors[i], *to;
        void *fld = field_of(w, t, 0);
        if (!(t->flags & ENG_TENSOR_LAYER) && row_tied(c, t) && fld && (to = row_named(f, t->tie)) != NULL)
            *(eng_matrix *)fld = *(const eng_matrix *)field_of(w, to, 0);
    }
    return off;
}

void eng_weights_describe(eng_weights *w, const eng_family *f, const void *hp, eng_dtype dtype) {
    memset(w, 0, f->weights_size);
    memcpy((char *)w + f->hparams_offset, hp, f->hparams_size);
    const void *mine = (const char *)w + f->hparams_offset;
    *w = (eng_weights){.family = f, .shape = *(const eng_shape *)mine, .ws = f->ws_needs(mine), .dtype = dtype};
}

size_t eng_weights_bytes(const eng_family *f, const void *hp, eng_dtype dtype) {
    bc_error ignored;
    if (f->check(hp, &ignored) != BC_OK) return 0; /* a size that could wrap is not computed */
    table_ctx c;
    ctx_init(&c, f, hp);
    return layout(&c, NULL, NULL, dtype);
}

int64_t eng_weights_n_parameters(const eng_family *f, const void *hp) {
    table_ctx c;
    ctx_init(&c, f, hp);
    int64_t model = 0, layer = 0;
    for (int i = 0; i < f->n_tensors; i++) {
        const eng_tensor *t = &f->tensors[i];
        if (!row_stored(&c, t) || (t->flags & ENG_TENSOR_COMPUTED)) continue;
        const int64_t n = c.dims[t->rows] * c.dims[t->cols];
        if (t->flags & ENG_TENSOR_LAYER) layer += n;
        else model += n;
    }
    return model + (int64_t)c.n_layers * layer;
}

bc_status eng_weights_alloc(eng_weights *w, const eng_family *f, const void *hp, eng_dtype dtype, bc_error *err) {
    eng_weights_describe(w, f, hp, dtype);
    const void *mine = hp_of(w);
    bc_status st = f->check(mine, err);
    if (st != BC_OK) return st;
    const int L = w->shape.n_layers;
    char *layers = calloc((size_t)L, f->layer_size);
    if (!layers) return bc_error_set(err, BC_ERR_NOMEM, "%s weights: no memory for %d layers", f->name, L);
    *layers_of(w) = layers;
    table_ctx c;
    ctx_init(&c, f, mine);
    if ((st = eng_weights_arena(w, layout(&c, NULL, NULL, dtype), w->shape.name, err)) != BC_OK) return st;
    layout(&c, w, w->arena, dtype);
    return f->computed ? f->computed(w, err) : BC_OK;
}

void eng_weights_free(eng_weights *w) {
    if (!w || !w->family) return;
    eng_weights_arena_free(w);
    char **layers = layers_of(w);
    free(*layers);
    *layers = NULL;
}

/* ------------------------------------------------------ synthetic weights */

/* Row t of layer l as a tensor to fill. */
static eng_fill_tensor fill_of(const table_ctx *c, eng_weights *w, const eng_tensor *t, int l, uint64_t seed) {
    void *fld = field_of(w, t, l);
    const uint64_t id = (uint64_t)t->id + ((t->flags & ENG_TENSOR_LAYER) ? 16 + 16 * (uint64_t)l : 0);
    float std = t->std;
    if (t->flags & ENG_TENSOR_STD_PER_SQRT_C) std = (float)(t->std / sqrt((double)c->dims[ENG_DIM_C]));
    eng_fill_tensor ft = {.key = eng_synthetic_key(seed, id), .kind = t->fill, .std = std, .cols = 1};
    if (t->kind == ENG_TENSOR_MATRIX) {
        const eng_matrix *m = fld;
        ft.data = m->data;
        ft.dtype = m->dtype;
        ft.n = (size_t)m->rows * (size_t)m->cols;
        ft.cols = (size_t)m->cols;
    } else {
        ft.data = *(float **)fld;
        ft.dtype = ENG_F32;
        ft.n = (size_t)c->dims[t->rows];
    }
    return ft;
}

bc_status eng_weights_fill_synthetic(eng_weights *w, uint64_t seed, bc_error *err) {
    const eng_family *f = w->family;
    table_ctx c;
    ctx_init(&c, f, hp_of(w));
    eng_fill_tensor *list = calloc((size_t)f->n_tensors * ((size_t)c.n_layers + 1), sizeof *list);
    if (!list) return bc_error_set(err, BC_ERR_NOMEM, "synthetic weights: no memory for the tensor list");
    size_t n = 0;
    for (int l = -1; l < c.n_layers; l++) /* -1: the model's rows */
        for (int i = 0; i < f->n_tensors; i++) {
            const eng_tensor *t = &f->tensors[i];
            if (!row_read_at(&c, t, l)) continue;
            list[n++] = fill_of(&c, w, t, l < 0 ? 0 : l, seed);
        }
    bc_status st = eng_synthetic_fill(list, n, err);
    free(list);
    if (st == BC_OK && f->synthetic_done) f->synthetic_done(w);
    return st;
}

bc_status eng_weights_synthetic(eng_weights *w, const eng_family *f, const void *hp, eng_dtype dtype, uint64_t seed,
                                bc_error *err) {
    bc_status st = eng_weights_alloc(w, f, hp, dtype, err);
    return st == BC_OK ? eng_weights_fill_synthetic(w, seed, err) : st;
}

/* ------------------------------------------------------------- checkpoint */

/* name with its "%d" replaced by l. */
static void expand_name(char *buf, size_t cap, const char *name, int l) {
    const char *d = strstr(name, "%d");
    if (!d) snprintf(buf, cap, "%s", name);
    else snprintf(buf, cap, "%.*s%d%s", (int)(d - name), name, l, d + 2);
}

/* The prefix the checkpoint's names sit under: the first of the family's
 * under which its first row is there. */
static bc_status choose_prefix(eng_ck_loader *c, const eng_family *f, bc_error *err) {
    const char *const *p = f->ckpt_prefixes;
    if (!p || !p[0]) {
        c->prefix = "";
        return BC_OK;
    }
    if (!p[1]) {
        c->prefix = p[0];
        return BC_OK;
    }
    const char *first = f->tensors[0].name;
    char name[256], tried[512];
    size_t at = 0;
    for (int i = 0; p[i]; i++) {
        snprintf(name, sizeof name, "%s%s", p[i], first);
        if (eng_ck_set_find(c->set, name)) {
            c->prefix = p[i];
            return BC_OK;
        }
        if (at < sizeof tried)
            at += (size_t)snprintf(tried + at, sizeof tried - at, i == 0 ? "'%s'" : i == 1 ? " (or '%s'" : ", '%s'",
                                   name);
    }
    return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor %s) is missing", c->set->source, tried);
}

/* Row t of layer l from the checkpoint into its field (w NULL: checked
 * only). */
static bc_status load_row(eng_ck_loader *c, const table_ctx *tc, eng_weights *w, const eng_tensor *t, int l,
                          bc_error *err) {
    if ((t->flags & ENG_TENSOR_COMPUTED) || row_tied(tc, t) || !conds_hold(tc, t)) return BC_OK;
    char name[256];
    expand_name(name, sizeof name, t->name, l);
    const char *prefix = c->prefix;
    if (t->flags & ENG_TENSOR_TOP) c->prefix = "";
    bc_status st = BC_OK;
    if (t->kind == ENG_TENSOR_IGNORED) {
        char full[320];
        snprintf(full, sizeof full, "%s%s", c->prefix, name);
        (void)eng_ck_take(c, full);
    } else if (t->kind == ENG_TENSOR_MATRIX) {
        eng_matrix none = {0};
        eng_matrix *m = w ? field_of(w, t, l) : &none;
        st = eng_ck_matrix(c, name, m ? m : &none, (int)tc->dims[t->rows], (int)tc->dims[t->cols], err);
    } else {
        st = eng_ck_vector(c, name, w ? *(float **)field_of(w, t, l) : NULL, (int)tc->dims[t->rows], err);
    }
    c->prefix = prefix;
    return st;
}

/* A tied row's copy in the checkpoint: taken, and with
 * ENG_TENSOR_TIE_CHECKED refused unless it equals its tie. */
static bc_status check_tie(eng_ck_loader *c, const table_ctx *tc, const eng_tensor *t, const char *what,
                           bc_error *err) {
    const char *prefix = t->flags & ENG_TENSOR_TOP ? "" : c->prefix;
    char name[256];
    snprintf(name, sizeof name, "%s%s", prefix, t->name);
    if (!eng_ck_set_find(c->set, name)) return BC_OK;
    if (!(t->flags & ENG_TENSOR_TIE_CHECKED)) {
        (void)eng_ck_take(c, name);
        return BC_OK;
    }
    const eng_tensor *to = row_named(tc->f, t->tie);
    if (!to) return bc_error_set(err, BC_ERR_INTERNAL, "%s: tied to '%s', which the table lacks", t->name, t->tie);
    const eng_ck_tensor *h, *e;
    eng_dtype hd, ed;
    const int rows = (int)tc->dims[t->rows], cols = (int)tc->dims[t->cols];
    bc_status st;
    if ((st = eng_ck_get(c, prefix, t->name, rows, cols, &h, &hd, err)) != BC_OK) return st;
    const char *to_prefix = to->flags & ENG_TENSOR_TOP ? "" : c->prefix;
    if ((st = eng_ck_get(c, to_prefix, to->name, rows, cols, &e, &ed, err)) != BC_OK) return st;
    for (size_t i = 0; i < h->numel; i++)
        if (eng_ck_read_f32(h->data, hd, i) != eng_ck_read_f32(e->data, ed, i))
            return bc_error_set(err, BC_ERR_UNSUPPORTED,
                                "%s: tensor '%s' differs from '%s%s' (element %zu); the %s engine ties them and does "
                                "not support an untied head",
                                h->path, name, to_prefix, to->name, i, what);
    return BC_OK;
}

/* The table's rows from the loader's set into w (w NULL: checked only),
 * ties checked, every tensor of the set used. */
static bc_status walk_set(eng_ck_loader *c, const eng_family *f, const void *hp, eng_weights *w, bc_error *err) {
    table_ctx tc;
    ctx_init(&tc, f, hp);
    const char *what = f->display_name ? f->display_name(hp) : f->name;
    bc_status st = choose_prefix(c, f, err);
    for (int l = -1; st == BC_OK && l < tc.n_layers; l++) /* -1: the model's rows */
        for (int i = 0; st == BC_OK && i < f->n_tensors; i++) {
            const eng_tensor *t = &f->tensors[i];
            if (((t->flags & ENG_TENSOR_LAYER) != 0) == (l >= 0)) st = load_row(c, &tc, w, t, l < 0 ? 0 : l, err);
        }
    for (int i = 0; st == BC_OK && i < f->n_tensors; i++)
        if (!(f->tensors[i].flags & ENG_TENSOR_LAYER) && row_tied(&tc, &f->tensors[i]))
            st = check_tie(c, &tc, &f->tensors[i], what, err);
    if (st == BC_OK) st = eng_ck_all_used(c, what, err);
    return st;
}

/* dir's tensors by the table: into w (allocated here in dtype), or, with w
 * NULL, every name, dtype and shape checked only. */
static bc_status load_walk(const eng_family *f, const char *dir, eng_dtype dtype, eng_weights *w, bc_error *err) {
    void *hp = calloc(1, f->hparams_size);
    if (!hp) return bc_error_set(err, BC_ERR_NOMEM, "checkpoint %s: no memory for its config", dir);
    bc_status st = f->config(dir, hp, err);
    if (st == BC_OK) st = w ? eng_weights_alloc(w, f, hp, dtype, err) : f->check(hp, err);
    eng_ck_set set;
    eng_ck_loader c;
    if (st != BC_OK || (st = eng_ck_loader_open(&c, &set, dir, dtype, w == NULL, err)) != BC_OK) {
        free(hp);
        return st;
    }
    st = walk_set(&c, f, hp, w, err);
    eng_ck_loader_close(&c, &set);
    free(hp);
    return st;
}

bc_status eng_weights_refit(eng_weights *w, const eng_ck_set *set, bc_error *err) {
    if (!w || !w->family || !w->arena)
        return bc_error_set(err, BC_ERR_INTERNAL, "refit: no weights to load into");
    eng_ck_loader c;
    bc_status st = eng_ck_loader_over(&c, set, w->dtype, 0, err);
    if (st != BC_OK) return st;
    st = walk_set(&c, w->family, hp_of(w), w, err);
    eng_ck_loader_end(&c);
    return st;
}

bc_status eng_weights_refit_dir(eng_weights *w, const char *dir, uint64_t *source_bytes, bc_error *err) {
    eng_ck_set set;
    bc_status st = eng_ck_set_open_dir(&set, dir, err);
    if (st != BC_OK) return st;
    st = eng_weights_refit(w, &set, err);
    if (source_bytes) *source_bytes = eng_ck_set_bytes(&set);
    eng_ck_set_close(&set);
    return st;
}

uint64_t eng_weights_loaded_bytes(const eng_weights *w) {
    const eng_family *f = w->family;
    table_ctx c;
    ctx_init(&c, f, hp_of(w));
    uint64_t n = 0;
    for (int i = 0; i < f->n_tensors; i++) {
        const eng_tensor *t = &f->tensors[i];
        if (!row_stored(&c, t) || (t->flags & ENG_TENSOR_COMPUTED)) continue;
        const size_t rows = (size_t)c.dims[t->rows], cols = (size_t)c.dims[t->cols];
        const uint64_t b = t->kind == ENG_TENSOR_MATRIX ? eng_matrix_bytes(w->dtype, rows, cols) : rows * sizeof(float);
        n += (t->flags & ENG_TENSOR_LAYER) ? b * (uint64_t)c.n_layers : b;
    }
    return n;
}

int eng_weights_same(const eng_weights *a, const eng_weights *b) {
    const eng_family *f = a->family;
    if (f != b->family || a->dtype != b->dtype ||
        memcmp(&a->shape, &b->shape, offsetof(eng_shape, name)) != 0) /* the dimensions and ids, not the name */
        return 0;
    table_ctx c;
    ctx_init(&c, f, hp_of(a));
    eng_weights *ma = (eng_weights *)(void *)a, *mb = (eng_weights *)(void *)b; /* field_of's pointer */
    for (int l = -1; l < c.n_layers; l++)
        for (int i = 0; i < f->n_tensors; i++) {
            const eng_tensor *t = &f->tensors[i];
            if (((t->flags & ENG_TENSOR_LAYER) != 0) != (l >= 0) || !row_stored(&c, t) || t->offset == ENG_TENSOR_NO_FIELD)
                continue;
            const void *fa = field_of(ma, t, l < 0 ? 0 : l), *fb = field_of(mb, t, l < 0 ? 0 : l);
            const size_t rows = (size_t)c.dims[t->rows], cols = (size_t)c.dims[t->cols];
            const int mat = t->kind == ENG_TENSOR_MATRIX;
            const void *da = mat ? ((const eng_matrix *)fa)->data : *(float *const *)fa;
            const void *db = mat ? ((const eng_matrix *)fb)->data : *(float *const *)fb;
            if ((da == NULL) != (db == NULL)) return 0;
            if (!da) continue;
            if (mat && a->dtype == ENG_I8) { /* the values, then the scales (padding between) */
                if (memcmp(da, db, rows * cols) != 0 ||
                    memcmp(eng_i8_scales(da, rows, cols), eng_i8_scales(db, rows, cols), rows * sizeof(float)) != 0)
                    return 0;
            } else if (memcmp(da, db, mat ? eng_matrix_bytes(a->dtype, rows, cols) : rows * sizeof(float)) != 0) {
                return 0;
            }
        }
    return 1;
}

bc_status eng_weights_export(const eng_weights *w, eng_ck_set *out, const char *source, bc_error *err) {
    const eng_family *f = w->family;
    if (w->dtype != ENG_F32)
        return bc_error_set(err, BC_ERR_INTERNAL, "export: weights in %s, not float32", eng_dtype_name(w->dtype));
    table_ctx c;
    ctx_init(&c, f, hp_of(w));
    const char *prefix = f->ckpt_prefixes && f->ckpt_prefixes[0] ? f->ckpt_prefixes[0] : "";
    size_t n = 0, names = 0, data = 0;
    for (int l = -1; l < c.n_layers; l++)
        for (int i = 0; i < f->n_tensors; i++) {
            const eng_tensor *t = &f->tensors[i];
            if (!row_read_at(&c, t, l)) continue;
            n++;
            names += strlen(prefix) + strlen(t->name) + 24;
            data += ((size_t)c.dims[t->rows] * (size_t)c.dims[t->cols] * sizeof(float) + 63) / 64 * 64;
        }
    eng_ck_host_builder b;
    bc_status st = eng_ck_host_begin(&b, out, n, names, data, source, err);
    if (st != BC_OK) return st;
    eng_weights *mw = (eng_weights *)(void *)w; /* field_of reads through a non-const pointer */
    for (int l = -1; l < c.n_layers; l++)
        for (int i = 0; i < f->n_tensors; i++) {
            const eng_tensor *t = &f->tensors[i];
            if (!row_read_at(&c, t, l)) continue;
            char name[256], full[320];
            expand_name(name, sizeof name, t->name, l < 0 ? 0 : l);
            snprintf(full, sizeof full, "%s%s", (t->flags & ENG_TENSOR_TOP) ? "" : prefix, name);
            const void *fld = field_of(mw, t, l < 0 ? 0 : l);
            const int64_t shape[2] = {c.dims[t->rows], c.dims[t->cols]};
            const int ndim = t->kind == ENG_TENSOR_MATRIX ? 2 : 1;
            const void *src = t->kind == ENG_TENSOR_MATRIX ? ((const eng_matrix *)fld)->data : *(float *const *)fld;
            void *dst = eng_ck_host_add(&b, full, ENG_CK_F32, ndim, shape);
            if (!dst || !src) {
                eng_ck_set_close(out);
                return bc_error_set(err, BC_ERR_INTERNAL, "export: tensor '%s' has no room or no data", full);
            }
            memcpy(dst, src, (size_t)shape[0] * (size_t)(ndim == 2 ? shape[1] : 1) * sizeof(float));
        }
    return eng_ck_host_finish(&b, out, err);
}

bc_status eng_weights_load(eng_weights *w, const eng_family *f, const char *dir, eng_dtype dtype, bc_error *err) {
    memset(w, 0, f->weights_size);
    bc_status st = load_walk(f, dir, dtype, w, err);
    if (st != BC_OK) eng_weights_free(w);
    return st;
}

bc_status eng_weights_validate(const eng_family *f, const char *dir, bc_error *err) {
    return load_walk(f, dir, ENG_F32, NULL, err);
}

/* ------------------------------------------------------------------ LoRA */

/* The table's row for LoRA module m: the layer matrix "...%d.<path>.weight". */
static const eng_tensor *lora_row(const eng_family *f, int m) {
    if (m < 0 || m >= f->lora_n_modules) return NULL;
    const char *path = f->lora_module_paths[m];
    const size_t n = strlen(path);
    for (int i = 0; i < f->n_tensors; i++) {
        const eng_tensor *t = &f->tensors[i];
        const char *d = strstr(t->name, "%d.");
        if ((t->flags & ENG_TENSOR_LAYER) && t->kind == ENG_TENSOR_MATRIX && d && strncmp(d + 3, path, n) == 0 &&
            strcmp(d + 3 + n, ".weight") == 0)
            return t;
    }
    return NULL;
}

eng_matrix *eng_weights_lora_matrix(eng_weights *w, int l, int m) {
    const eng_tensor *t = lora_row(w->family, m);
    return t && l >= 0 && l < w->shape.n_layers ? field_of(w, t, l) : NULL;
}

bc_status eng_weights_lora_shape(const eng_family *f, const eng_shape *s, int m, int *out, int *in, bc_error *err) {
    const eng_tensor *t = lora_row(f, m);
    int64_t d[ENG_DIM_COUNT];
    dims_of_shape(s, d);
    if (!t || d[t->rows] < 0 || d[t->cols] < 0)
        return bc_error_set(err, BC_ERR_INTERNAL, "%s: LoRA module %d has no layer matrix of the shape's dimensions",
                            f->name, m);
    *out = (int)d[t->rows];
    *in = (int)d[t->cols];
    return BC_OK;
}
