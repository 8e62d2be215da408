/* lora.c: LoRA adapters, fused into and unfused from the weights (lora.h). */
#define _POSIX_C_SOURCE 200809L
#include "lora.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fileio.h"
#include "precision.h"
#include "safetensors.h"
#include "sampling.h"

const char *eng_lora_module_name(const eng_family *f, int m) {
    return m >= 0 && m < f->lora_n_modules ? f->lora_module_names[m] : "?";
}

static int module_index(const eng_family *f, const char *name, size_t len) {
    for (int m = 0; m < f->lora_n_modules; m++)
        if (strlen(f->lora_module_names[m]) == len && memcmp(f->lora_module_names[m], name, len) == 0) return m;
    return -1;
}

/* f's modules, ", "-separated, into buf. */
static const char *module_list(const eng_family *f, char *buf, size_t n) {
    size_t at = 0;
    buf[0] = 0;
    for (int m = 0; m < f->lora_n_modules && at < n; m++) {
        int k = snprintf(buf + at, n - at, "%s%s", m ? ", " : "", f->lora_module_names[m]);
        if (k < 0) break;
        at += (size_t)k;
    }
    return buf;
}

bc_status eng_lora_targets_parse(const eng_family *f, const char *list, unsigned *targets, bc_error *err) {
    *targets = 0;
    char names[256];
    if (f->lora_n_modules < 1 || f->lora_n_modules > ENG_LORA_MAX_MODULES)
        return bc_error_set(err, BC_ERR_UNSUPPORTED, "lora: the %s family takes no LoRA adapter", f->name);
    if (!strcmp(list, "all")) {
        *targets = (1u << f->lora_n_modules) - 1;
        return BC_OK;
    }
    for (const char *p = list; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int m = module_index(f, p, len);
        if (m < 0) {
            bc_error_set(err, BC_ERR_SETTING, "lora_targets: \"%.*s\" is not a module of a %s layer", (int)len, p,
                         f->name);
            return bc_error_hint(err, "targets are among %s, or \"all\"", module_list(f, names, sizeof names));
        }
        *targets |= 1u << m;
        p += len + (comma != NULL);
    }
    if (!*targets) return bc_error_set(err, BC_ERR_SETTING, "lora_targets: no module named");
    return BC_OK;
}

void eng_lora_free(eng_lora *lo) {
    if (!lo) return;
    free(lo->pairs);
    free(lo->arena);
    free(lo->scratch);
    free(lo->backup);
    free(lo->ax);
    if (lo->pool) eng_pool_destroy(lo->pool);
    memset(lo, 0, sizeof *lo);
}

size_t eng_lora_bytes(const eng_lora *lo) { return lo->n_floats * sizeof(float); }

/* The weight matrix of module m in layer l. */
/* (by its tensor name in the family's table, tensor_table.h) */
static eng_matrix *module_matrix(eng_weights *w, int l, int m) { return eng_weights_lora_matrix(w, l, m); }

#define PAIR(lo, l, m) (&(lo)->pairs[(size_t)(l) * ENG_LORA_MAX_MODULES + (size_t)(m)])

/* Sizes lo for hp, rank and targets and points every pair into the arena. */
static bc_status lora_alloc(eng_lora *lo, const eng_family *f, const eng_shape *hp, int rank, double alpha,
                            int rslora, unsigned targets, const char *what, bc_error *err) {
    memset(lo, 0, sizeof *lo);
    if (f->lora_n_modules < 1 || f->lora_n_modules > ENG_LORA_MAX_MODULES)
        return bc_error_set(err, BC_ERR_UNSUPPORTED, "%s: the %s family takes no LoRA adapter", what, f->name);
    if (targets >> f->lora_n_modules)
        return bc_error_set(err, BC_ERR_SETTING, "%s: targets 0x%x name modules a %s layer does not have", what,
                            targets, f->name);
    if (rank < 1 || rank > 65536)
        return bc_error_set(err, BC_ERR_SETTING, "%s: rank %d must be in [1, 65536]", what, rank);
    if (!(alpha > 0) || !isfinite(alpha))
        return bc_error_set(err, BC_ERR_SETTING, "%s: alpha %g must be a positive number", what, alpha);
    const int L = hp->n_layers;
    size_t n = 0;
    for (int m = 0; m < f->lora_n_modules; m++) {
        if (!(targets >> m & 1)) continue;
        int out, in;
        bc_status st = eng_weights_lora_shape(f, hp, m, &out, &in, err);
        if (st != BC_OK) return st;
        n += (size_t)L * (size_t)rank * ((size_t)in + (size_t)out);
    }
    lo->pairs = calloc((size_t)L * ENG_LORA_MAX_MODULES, sizeof *lo->pairs);
    lo->arena = malloc(n * sizeof *lo->arena);
    lo->ax = malloc((size_t)rank * sizeof *lo->ax);
    if (!lo->pairs || !lo->arena || !lo->ax) {
        eng_lora_free(lo);
        return bc_error_set(err, BC_ERR_NOMEM, "%s: no memory for an adapter of %zu floats", what, n);
    }
    lo->family = f;
    lo->rank = rank;
    lo->n_layers = L;
    lo->targets = targets;
    lo->scale = (float)(rslora ? alpha / sqrt((double)rank) : alpha / rank);
    lo->n_floats = n;
    float *p = lo->arena;
    for (int l = 0; l < L; l++)
        for (int m = 0; m < f->lora_n_modules; m++) {
            if (!(targets >> m & 1)) continue;
            eng_lora_pair *pr = PAIR(lo, l, m);
            (void)eng_weights_lora_shape(f, hp, m, &pr->out, &pr->in, err); /* checked above */
            pr->A = p;
            p += (size_t)rank * pr->in;
            pr->B = p;
            p += (size_t)pr->out * rank;
        }
    return BC_OK;
}

/* Uniform in [-bound, bound). */
static float uniform(eng_rng *g, float bound) {
    return bound * (2.0f * (float)((eng_rng_next(g) >> 40) * (1.0 / 16777216.0)) - 1.0f);
}

bc_status eng_lora_synthetic(eng_lora *lo, const eng_family *f, const eng_shape *hp, int rank, double alpha,
                             unsigned targets, uint64_t seed, bc_error *err) {
    bc_status st = lora_alloc(lo, f, hp, rank, alpha, 0, targets, "lora (synthetic)", err);
    if (st != BC_OK) return st;
    for (int i = 0; i < lo->n_layers * ENG_LORA_MAX_MODULES; i++) {
        eng_lora_pair *pr = &lo->pairs[i];
        if (!pr->A) continue;
        /* the stream of layer l's module m as when OPT's six were the stride */
        const int l = i / ENG_LORA_MAX_MODULES, m = i % ENG_LORA_MAX_MODULES;
        eng_rng g = eng_rng_for_row(seed ^ 0x6c6f7261ull, (uint64_t)l * (uint64_t)f->lora_n_modules + (uint64_t)m);
        const float a = 1.0f / sqrtf((float)pr->in);
        for (size_t k = 0; k < (size_t)rank * pr->in; k++) pr->A[k] = uniform(&g, a);
        for (size_t k = 0; k < (size_t)pr->out * rank; k++) pr->B[k] = uniform(&g, 0.02f);
    }
    return BC_OK;
}

/* ------------------------------------------------------------------ PEFT */

/* A field of adapter_config.json that must be absent, null, false, "none",
 * empty or an empty object/list. */
static bc_status refuse_key(const json_t *cfg, const char *key, const char *path, bc_error *err) {
    const json_t *v = json_object_get(cfg, key);
    if (!v || json_is_null(v) || json_is_false(v) || (json_is_string(v) && (!strcmp(json_string_value(v), "none") ||
                                                                           json_string_length(v) == 0)) ||
        (json_is_object(v) && json_object_size(v) == 0) || (json_is_array(v) && json_array_size(v) == 0))
        return BC_OK;
    return bc_error_set(err, BC_ERR_UNSUPPORTED, "%s: \"%s\" is set; the engine's LoRA does not support it", path,
                        key);
}

/* Copies tensor t (F32, F16 or BF16; [rows, cols]) into dst as fp32. */
static bc_status copy_tensor(float *dst, const eng_ck_tensor *t, int rows, int cols, bc_error *err) {
    if (t->ndim != 2 || t->shape[0] != rows || t->shape[1] != cols)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor %s: shape must be [%d, %d]", t->path, t->name, rows, cols);
    if (t->dtype != ENG_CK_F32 && t->dtype != ENG_CK_F16 && t->dtype != ENG_CK_BF16)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor %s: dtype %s; LoRA weights must be F32, F16 or BF16",
                            t->path, t->name, eng_ck_dtype_name(t->dtype));
    eng_convert_values(dst, ENG_F32, t->data, t->dtype == ENG_CK_F32 ? ENG_F32 : t->dtype == ENG_CK_F16 ? ENG_F16 : ENG_BF16,
                       (size_t)rows * cols);
    return BC_OK;
}

/* The tensor of layer l, module m, "A" or "B", under any prefix PEFT
 * writes for the family's model. */
static const eng_ck_tensor *find_lora(const eng_family *fam, const eng_ck_file *f, int l, int m, char ab) {
    for (const char *const *p = fam->lora_peft_prefixes; p && *p; p++) {
        char name[256];
        snprintf(name, sizeof name, "%s.%d.%s.lora_%c.weight", *p, l, fam->lora_module_paths[m], ab);
        const eng_ck_tensor *t = eng_ck_file_find(f, name);
        if (t) return t;
    }
    return NULL;
}

bc_status eng_lora_load_peft(eng_lora *lo, const eng_family *fam, const char *dir, const eng_shape *hp,
                             bc_error *err) {
    memset(lo, 0, sizeof *lo);
    if (fam->lora_n_modules < 1 || fam->lora_n_modules > ENG_LORA_MAX_MODULES)
        return bc_error_set(err, BC_ERR_UNSUPPORTED, "%s: the %s family takes no LoRA adapter", dir, fam->name);
    char names[256];
    char cpath[4096], wpath[4096];
    snprintf(cpath, sizeof cpath, "%s/adapter_config.json", dir);
    snprintf(wpath, sizeof wpath, "%s/adapter_model.safetensors", dir);
    json_t *cfg = NULL;
    bc_status st = eng_load_json(cpath, "adapter_config.json", ENG_CONFIG_JSON_MAX_BYTES, &cfg, err);
    if (st != BC_OK) return st;
    const json_t *r = json_object_get(cfg, "r"), *alpha = json_object_get(cfg, "lora_alpha");
    const json_t *tm = json_object_get(cfg, "target_modules");
    const json_t *rs = json_object_get(cfg, "use_rslora");
    unsigned targets = 0;
    if (!json_is_integer(r) || json_integer_value(r) < 1 || json_integer_value(r) > 65536)
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: \"r\" must be an integer in [1, 65536]", cpath);
    else if (!json_is_number(alpha))
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: \"lora_alpha\" must be a number", cpath);
    else if (!json_is_array(tm) || json_array_size(tm) == 0)
        st = bc_error_set(err, BC_ERR_UNSUPPORTED, "%s: \"target_modules\" must be a non-empty list of names", cpath);
    for (size_t i = 0; st == BC_OK && i < json_array_size(tm); i++) {
        const json_t *n = json_array_get(tm, i);
        int m = json_is_string(n) ? module_index(fam, json_string_value(n), json_string_length(n)) : -1;
        if (m < 0)
            st = bc_error_set(err, BC_ERR_UNSUPPORTED, "%s: target_modules[%zu] is not one of %s (a %s layer's)", cpath,
                              i, module_list(fam, names, sizeof names), fam->name);
        else
            targets |= 1u << m;
    }
    static const char *const refused[] = {"use_dora", "fan_in_fan_out", "rank_pattern", "alpha_pattern",
                                          "layers_to_transform", "modules_to_save", "bias"};
    for (size_t i = 0; st == BC_OK && i < sizeof refused / sizeof refused[0]; i++)
        st = refuse_key(cfg, refused[i], cpath, err);
    if (st == BC_OK)
        st = lora_alloc(lo, fam, hp, (int)json_integer_value(r), json_number_value(alpha), json_is_true(rs), targets, cpath,
                        err);
    json_decref(cfg);
    if (st != BC_OK) return st;
    eng_ck_file f;
    if ((st = eng_ck_file_open(&f, eng_st_parse, wpath, err)) != BC_OK) {
        eng_lora_free(lo);
        return st;
    }
    size_t used = 0;
    for (int l = 0; st == BC_OK && l < lo->n_layers; l++)
        for (int m = 0; st == BC_OK && m < fam->lora_n_modules; m++) {
            eng_lora_pair *pr = PAIR(lo, l, m);
            if (!pr->A) continue;
            const eng_ck_tensor *a = find_lora(fam, &f, l, m, 'A'), *b = find_lora(fam, &f, l, m, 'B');
            if (!a || !b)
                st = bc_error_set(err, BC_ERR_FORMAT, "%s: no lora_%c of layer %d's %s", wpath, a ? 'B' : 'A', l,
                                  fam->lora_module_names[m]);
            else if ((st = copy_tensor(pr->A, a, lo->rank, pr->in, err)) == BC_OK)
                st = copy_tensor(pr->B, b, pr->out, lo->rank, err);
            used += 2;
        }
    if (st == BC_OK && used != f.n_tensors)
        st = bc_error_set(err, BC_ERR_FORMAT,
                          "%s: %zu tensors, of which %zu are the targets' lora_A and lora_B; the others are not LoRA "
                          "weights of a %s layer this adapter_config.json names",
                          wpath, f.n_tensors, used, fam->name);
    eng_ck_file_close(&f);
    if (st != BC_OK) eng_lora_free(lo);
    return st;
}

/* ----------------------------------------------------------------- apply */

typedef struct apply_job {
    const eng_lora *lo;
    eng_weights *w;
    float sign_scale;
    float *scratch; /* [n_threads * 2 * max_in] */
    int max_in;
    const eng_kernels *kernels; /* the CPU's best */
} apply_job;

/* Rows o of W += sign s (B A)[o, :], for rows [r0, r1): the row's delta in
 * fp32 (rank axpys), added to the row in fp32, rounded back to W's dtype
 * with the CPU's conversion kernels. */
static void apply_rows(const eng_kernels *kn, const eng_lora_pair *pr, eng_matrix *W, int rank, float ss, int r0,
                       int r1, float *restrict delta, float *restrict row) {
    const int in = pr->in;
    const size_t es = eng_dtype_size(W->dtype);
    for (int o = r0; o < r1; o++) {
        memset(delta, 0, (size_t)in * sizeof *delta);
        for (int k = 0; k < rank; k++) kn->axpy(delta, ss * pr->B[(size_t)o * rank + k], pr->A + (size_t)k * in, ENG_F32, in);
        void *wr = (char *)W->data + (size_t)o * in * es;
        if (W->dtype == ENG_F32) {
            float *restrict w32 = wr;
            for (int i = 0; i < in; i++) w32[i] += delta[i];
        } else {
            kn->to_f32(row, wr, W->dtype, (size_t)in);
            for (int i = 0; i < in; i++) row[i] += delta[i];
            kn->from_f32(wr, W->dtype, row, (size_t)in);
        }
    }
}

/* Thread i of n: its share of every target's rows. */
static void apply_part(void *ctx, int i, int n) {
    apply_job *j = ctx;
    float *delta = j->scratch + (size_t)i * 2 * j->max_in, *row = delta + j->max_in;
    for (int l = 0; l < j->lo->n_layers; l++)
        for (int m = 0; m < j->lo->family->lora_n_modules; m++) {
            const eng_lora_pair *pr = PAIR(j->lo, l, m);
            if (!pr->A) continue;
            eng_matrix *W = module_matrix(j->w, l, m);
            int r0 = (int)((int64_t)pr->out * i / n), r1 = (int)((int64_t)pr->out * (i + 1) / n);
            apply_rows(j->kernels, pr, W, j->lo->rank, j->sign_scale, r0, r1, delta, row);
        }
}

/* Copies every target of w into lo->backup (to 1) or back (to 0). */
static void copy_targets(eng_lora *lo, eng_weights *w, int to_backup) {
    char *b = lo->backup;
    for (int l = 0; l < lo->n_layers; l++)
        for (int m = 0; m < lo->family->lora_n_modules; m++) {
            if (!PAIR(lo, l, m)->A) continue;
            eng_matrix *W = module_matrix(w, l, m);
            size_t n = (size_t)W->rows * W->cols * eng_dtype_size(W->dtype);
            if (to_backup) memcpy(b, W->data, n);
            else memcpy(W->data, b, n);
            b += n;
        }
}

/* Bytes of w's targets. */
static size_t targets_bytes(const eng_lora *lo, eng_weights *w) {
    size_t n = 0;
    for (int l = 0; l < lo->n_layers; l++)
        for (int m = 0; m < lo->family->lora_n_modules; m++)
            if (PAIR(lo, l, m)->A) {
                const eng_matrix *W = module_matrix(w, l, m);
                n += (size_t)W->rows * W->cols * eng_dtype_size(W->dtype);
            }
    return n;
}

bc_status eng_lora_apply(eng_lora *lo, eng_weights *w, int sign, eng_pool *pool, bc_error *err) {
    if (lo->restore && sign < 0) {
        if (!lo->backup) return bc_error_set(err, BC_ERR_INTERNAL, "lora: unfuse without a fuse");
        copy_targets(lo, w, 0);
        return BC_OK;
    }
    if (lo->restore) {
        size_t need = targets_bytes(lo, w); /* the dtype may have changed since the last fuse */
        if (lo->backup_bytes < need) {
            void *nb = realloc(lo->backup, need);
            if (!nb)
                return bc_error_set(err, BC_ERR_NOMEM, "lora: no memory for a copy of the %zu bytes of base weights "
                                                       "the adapter targets (lora_unfuse = restore)",
                                    need);
            lo->backup = nb;
            lo->backup_bytes = need;
        }
    }
    const int n = pool ? eng_pool_size(pool) : 1;
    const eng_shape *sh = &w->shape;
    int max_in = sh->hidden_size > sh->ffn_size ? sh->hidden_size : sh->ffn_size;
    if (sh->n_heads * sh->head_dim > max_in) max_in = sh->n_heads * sh->head_dim;
    const size_t need = (size_t)n * 2 * (size_t)max_in;
    if (lo->scratch_floats < need) { /* kept, so the unfuse after a fuse never allocates */
        float *ns = realloc(lo->scratch, need * sizeof *ns);
        if (!ns)
            return bc_error_set(err, BC_ERR_NOMEM, "lora: no memory for %d rows of %d floats to %s the adapter",
                                2 * n, max_in, sign > 0 ? "fuse" : "unfuse");
        lo->scratch = ns;
        lo->scratch_floats = need;
    }
    if (lo->restore) copy_targets(lo, w, 1);
    apply_job j = {.lo = lo, .w = w, .sign_scale = (float)sign * lo->scale, .scratch = lo->scratch, .max_in = max_in,
                   .kernels = eng_kernels_best()};
    if (pool && n > 1) eng_pool_run(pool, apply_part, &j);
    else apply_part(&j, 0, 1);
    return BC_OK;
}

bc_status eng_lora_set_threads(eng_lora *lo, int threads, bc_error *err) {
    if (lo->pool) eng_pool_destroy(lo->pool);
    lo->pool = NULL;
    if (threads > 1 && !(lo->pool = eng_pool_create(threads)))
        return bc_error_set(err, BC_ERR_NOMEM, "lora: no thread pool of %d threads", threads);
    return BC_OK;
}

bc_status eng_lora_around(eng_lora *lo, eng_weights *w, bc_status (*run)(void *ctx, bc_error *err), void *ctx,
                          const bc_host *host, bc_error *err) {
    double t0 = eng_now_ms();
    bc_status st = eng_lora_fuse(lo, w, lo->pool, err);
    lo->fuse_ms = eng_now_ms() - t0;
    if (st != BC_OK) return st;
    st = run(ctx, err);
    bc_error uerr;
    t0 = eng_now_ms();
    bc_status su = eng_lora_unfuse(lo, w, lo->pool, st == BC_OK ? err : &uerr);
    lo->unfuse_ms = eng_now_ms() - t0;
    if (host && host->log)
        host->log(host, BC_LOG_DEBUG, "lora: rank %d, fuse %.3f ms, unfuse %.3f ms", lo->rank, lo->fuse_ms,
                  lo->unfuse_ms);
    return st != BC_OK ? st : su;
}

/* ------------------------------------------------------------- unfused */

void eng_lora_forward_add(eng_lora *lo, int l, int m, float *y, int ldy, const float *x, int ldx, int N) {
    const eng_lora_pair *pr = PAIR(lo, l, m);
    if (!pr->A) return;
    const int rank = lo->rank, in = pr->in, out = pr->out;
    float *ax = lo->ax; /* [rank] */
    for (int n = 0; n < N; n++) {
        const float *xn = x + (size_t)n * ldx; /* [in] */
        float *yn = y + (size_t)n * ldy;       /* [out] */
        for (int k = 0; k < rank; k++) {
            const float *ak = pr->A + (size_t)k * in;
            float acc = 0.0f;
            for (int i = 0; i < in; i++) acc += ak[i] * xn[i];
            ax[k] = lo->scale * acc;
        }
        for (int o = 0; o < out; o++) {
            const float *bo = pr->B + (size_t)o * rank;
            float acc = 0.0f;
            for (int k = 0; k < rank; k++) acc += bo[k] * ax[k];
            yn[o] += acc;
        }
    }
}
