/* cpu_threads.c: `threads = 0` on the CPU (cpu_threads.h): the candidates,
 * the choice among measured times, and the measurement on a model's weights
 * (its family's tensor table names the layer matrices; each runs through
 * eng_linear_parallel as the forward runs it).
 */
#define _POSIX_C_SOURCE 200809L
#include "cpu_threads.h"

#include <math.h>
#include <stdlib.h>

#include "clock.h"
#include "family.h"

int eng_threads_candidates(int online, int cores, int out[ENG_THREADS_MAX_CANDIDATES]) {
    int n = 0;
    out[n++] = 1;
    if (cores > 1 && cores < online) out[n++] = cores;
    if (online > 1) out[n++] = online;
    return n;
}

int eng_threads_pick(const double *ms, int n) {
    int best = 0;
    for (int i = 1; i < n; i++) {
        if (isnan(ms[i])) continue;
        if (isnan(ms[best]) || ms[i] < ms[best] * (1.0 - ENG_THREADS_MARGIN)) best = i;
    }
    return best;
}

void eng_threads_choose(eng_threads_probe *p, int online, int cores, int reps, eng_threads_measure_fn measure,
                        void *ctx) {
    p->n = eng_threads_candidates(online, cores, p->threads);
    for (int ph = 0; ph < ENG_PHASE_COUNT; ph++) {
        for (int i = 0; i < ENG_THREADS_MAX_CANDIDATES; i++) p->ms[ph][i] = NAN;
        for (int r = 0; r < reps; r++)
            for (int i = 0; i < p->n; i++) {
                const double t = measure(ctx, (eng_phase)ph, p->threads[i]);
                if (!isnan(t) && (isnan(p->ms[ph][i]) || t < p->ms[ph][i])) p->ms[ph][i] = t;
            }
        p->chosen[ph] = p->threads[eng_threads_pick(p->ms[ph], p->n)];
    }
}

/* ---- the measurement on a model ---------------------------------------- */

typedef struct model_probe {
    eng_model *m;
    float *x, *y;      /* [rows, the widest matrix's cols / rows]; owned by eng_threads_probe_model */
    int rows[ENG_PHASE_COUNT], layers[ENG_PHASE_COUNT];
} model_probe;

/* Layer l's matrix of table row t (NULL: not a present layer matrix). */
static const eng_matrix *layer_matrix(const eng_weights *w, const eng_tensor *t, int l) {
    if (t->kind != ENG_TENSOR_MATRIX || !(t->flags & ENG_TENSOR_LAYER) || t->offset == ENG_TENSOR_NO_FIELD)
        return NULL;
    const char *layers = *(char *const *)(const void *)((const char *)w + w->family->layers_offset);
    if (!layers) return NULL;
    const eng_matrix *a = (const eng_matrix *)(const void *)(layers + (size_t)l * w->family->layer_size + t->offset);
    return a->rows > 0 && a->cols > 0 && a->data ? a : NULL;
}

/* Runs every layer matrix of the first `layers` layers at `rows` rows. */
static void run_layers(const model_probe *mp, int rows, int layers) {
    const eng_weights *w = mp->m->w;
    const eng_family *f = w->family;
    for (int l = 0; l < layers; l++)
        for (int i = 0; i < f->n_tensors; i++) {
            const eng_matrix *a = layer_matrix(w, &f->tensors[i], l);
            if (a) eng_linear_parallel(mp->m->pool, mp->m->k, mp->y, mp->x, a->data, a->dtype, NULL, rows, a->cols,
                                       a->rows, 0);
        }
}

static double measure_model(void *ctx, eng_phase phase, int threads) {
    model_probe *mp = ctx;
    eng_pool_set_active(mp->m->pool, threads);
    const double t0 = eng_now_ms();
    run_layers(mp, mp->rows[phase], mp->layers[phase]);
    return eng_now_ms() - t0;
}

bc_status eng_threads_probe_model(eng_model *m, int prefill_tokens, int decode_rows, eng_threads_probe *p,
                                  bc_error *err) {
    const eng_weights *w = m->w;
    const eng_family *f = w->family;
    int widest_in = 1, widest_out = 1;
    for (int i = 0; i < f->n_tensors; i++) {
        const eng_matrix *a = layer_matrix(w, &f->tensors[i], 0);
        if (a && a->cols > widest_in) widest_in = a->cols;
        if (a && a->rows > widest_out) widest_out = a->rows;
    }
    model_probe mp = {.m = m};
    mp.rows[ENG_PHASE_PREFILL] = prefill_tokens < 1 ? 1 : prefill_tokens > 256 ? 256 : prefill_tokens;
    mp.rows[ENG_PHASE_DECODE] = decode_rows < 1 ? 1 : decode_rows;
    mp.layers[ENG_PHASE_PREFILL] = w->shape.n_layers > 0 ? 1 : 0;
    mp.layers[ENG_PHASE_DECODE] = w->shape.n_layers < 4 ? w->shape.n_layers : 4;
    const int rows = mp.rows[0] > mp.rows[1] ? mp.rows[0] : mp.rows[1];
    mp.x = malloc((size_t)rows * (size_t)widest_in * sizeof(float));
    mp.y = malloc((size_t)rows * (size_t)widest_out * sizeof(float));
    if (!mp.x || !mp.y) {
        free(mp.x);
        free(mp.y);
        return bc_error_set(err, BC_ERR_NOMEM, "threads = 0: no memory for %d x %d probe activations", rows,
                            widest_in > widest_out ? widest_in : widest_out);
    }
    for (size_t i = 0; i < (size_t)rows * (size_t)widest_in; i++) mp.x[i] = (float)((int)(i % 17) - 8) * 0.01f;
    const int all = eng_pool_size(m->pool);
    const int before = eng_pool_set_active(m->pool, all);
    run_layers(&mp, mp.rows[ENG_PHASE_PREFILL], mp.layers[ENG_PHASE_PREFILL]); /* warm-up: pages, caches, threads */
    run_layers(&mp, mp.rows[ENG_PHASE_DECODE], mp.layers[ENG_PHASE_DECODE]);
    eng_threads_choose(p, all, eng_physical_cores() < all ? eng_physical_cores() : all, 3, measure_model, &mp);
    p->rows[ENG_PHASE_PREFILL] = mp.rows[ENG_PHASE_PREFILL];
    p->rows[ENG_PHASE_DECODE] = mp.rows[ENG_PHASE_DECODE];
    eng_pool_set_active(m->pool, before);
    free(mp.x);
    free(mp.y);
    return BC_OK;
}
