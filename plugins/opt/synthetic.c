/* synthetic.c: seeded, deterministic synthetic OPT weights, so any preset runs
 * with no download (docs/opt.md, "Synthetic weights").
 *
 * Every tensor has a fixed id (its place in the list below) and every element
 * its index i in the tensor, so element i of tensor t is a pure function of
 * (seed, t, i): key = splitmix64(seed ^ splitmix64(t + 1)), then
 * r = splitmix64(key + i). The result does not depend on the thread count
 * or the order of generation, and chunks are generated in parallel.
 *
 * Values, like Hugging Face's OPT init (init_std 0.02), with two changes
 * that keep greedy generation from collapsing (docs/opt.md has the numbers):
 *   embeddings and matrices  ~ N(0, 0.02^2), approximated by the sum of the
 *                               four 16-bit uniforms of r (Irwin-Hall, mean
 *                               and variance matched, |x| <= 2 sqrt(3) sigma)
 *   q_proj and k_proj        ~ N(0, (2.5 / sqrt(C))^2): attention scores get
 *                               a standard deviation near 6, so attention is
 *                               peaked as in a trained model instead of
 *                               averaging the context
 *   fc2 bias                 -m * (row sums of fc2), m = E[relu(z)] for the
 *                               fc1 pre-activation z ~ N(0, 0.02^2 C): cancels
 *                               the constant direction relu's positive mean
 *                               would add to every position in every layer
 *   other biases 0, layer-norm gamma 1, beta 0 (as Hugging Face)
 * Values are rounded to the weight dtype by its precision ops (precision.h:
 * the precision plugin's from_f32, round to nearest even), in bulk.
 */
#include "opt_model.h"
#include "precision.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Approximately N(0, 1): four 16-bit uniforms summed, centered and scaled to
 * unit variance (each uniform has variance 1/12). */
static float unit_normal(uint64_t r) {
    float s = 0.0f;
    for (int j = 0; j < 4; j++) s += (float)((r >> (16 * j)) & 0xffff) + 0.5f;
    return (s / 65536.0f - 2.0f) * 1.7320508f;
}

typedef enum fill_kind { FILL_NORMAL, FILL_ONES, FILL_ZEROS } fill_kind;

typedef struct fill_tensor {
    void *data;
    eng_dtype dtype; /* fp32 for vectors */
    size_t n;
    uint64_t key;
    fill_kind kind;
    float std;
    size_t cols; /* row length: an int8 matrix is filled whole rows at a time (scales per row) */
} fill_tensor;

typedef struct fill_job {
    const fill_tensor *t;
    size_t n_tensors;
    size_t chunk;    /* elements per chunk */
    float *rows;     /* [threads, max_cols]: each thread's int8 row before quantising; owned by
                        opt_weights_init_synthetic */
    size_t max_cols; /* the longest int8 row */
} fill_job;

#define CHUNK (1u << 16)

/* buf[n] = the values of elements [i, i + n) of t. */
static void fill_values(const fill_tensor *t, float *buf, size_t i, size_t n) {
    for (size_t j = 0; j < n; j++) {
        if (t->kind == FILL_ONES) buf[j] = 1.0f;
        else if (t->kind == FILL_ZEROS) buf[j] = 0.0f;
        else buf[j] = t->std * unit_normal(splitmix64(t->key + i + j));
    }
}

/* Rows [i0, i1) / cols of an int8 matrix: each row's values generated once
 * into row[cols], then its scale and int8 values from them (precision.h). */
static void fill_rows_i8(const fill_tensor *t, size_t i0, size_t i1, float *row) {
    const size_t cols = t->cols, rows = t->n / cols;
    float *scale = (float *)(void *)((char *)t->data + eng_i8_scales_offset(rows, cols));
    for (size_t r = i0 / cols; r < i1 / cols; r++) {
        fill_values(t, row, r * cols, cols);
        scale[r] = eng_i8_quantize_row((int8_t *)t->data + r * cols, row, cols);
    }
}

static void fill_chunk(const fill_tensor *t, size_t i0, size_t i1, float *row) {
    if (t->dtype == ENG_I8) {
        fill_rows_i8(t, i0, i1, row);
        return;
    }
    const bc_precision_ops *prec = eng_dtype_precision(t->dtype);
    float buf[256];
    for (size_t i = i0; i < i1; i += 256) {
        size_t n = i1 - i < 256 ? i1 - i : 256;
        fill_values(t, buf, i, n);
        prec->from_f32(buf, (char *)t->data + i * prec->element_size, n);
    }
}

/* Thread i of n fills chunks i, i + n, i + 2n, ... of the whole list. */
static void fill_worker(void *ctx, int i, int n) {
    const fill_job *job = ctx;
    size_t c = 0;
    for (size_t k = 0; k < job->n_tensors; k++) {
        const fill_tensor *t = &job->t[k];
        /* whole rows per chunk for int8 (t->cols divides t->n) */
        const size_t step = t->dtype == ENG_I8 ? (job->chunk / t->cols + 1) * t->cols : job->chunk;
        for (size_t i0 = 0; i0 < t->n; i0 += step, c++) {
            if ((int)(c % (size_t)n) != i) continue;
            size_t i1 = i0 + step < t->n ? i0 + step : t->n;
            fill_chunk(t, i0, i1, job->rows + (size_t)i * job->max_cols);
        }
    }
}

bc_status opt_weights_init_synthetic(opt_weights *w, uint64_t seed, bc_error *err) {
    const opt_hparams *hp = &w->hp;
    const int L = hp->s.n_layers;
    const float std = 0.02f;
    size_t cap = 8 + (size_t)L * 16, n = 0;
    fill_tensor *list = calloc(cap, sizeof *list);
    if (!list) return bc_error_set(err, BC_ERR_NOMEM, "synthetic weights: no memory for the tensor list");
    uint64_t tid = 0;
#define ADD(ptr, dt, count, kd)                                                               \
    do {                                                                                      \
        uint64_t id_ = tid++;                                                                 \
        if (ptr) {                                                                            \
            list[n] = (fill_tensor){(void *)(ptr), (dt), (size_t)(count),                     \
                                    splitmix64(seed ^ splitmix64(id_ + 1)), (kd), std, 1};     \
            n++;                                                                              \
        }                                                                                     \
    } while (0)
#define ADD_MAT(m)                                                                            \
    do {                                                                                      \
        ADD((m).data, (m).dtype, (size_t)(m).rows * (size_t)(m).cols, FILL_NORMAL);           \
        if ((m).data) list[n - 1].cols = (size_t)(m).cols;                                    \
    } while (0)
    const size_t C = (size_t)hp->s.hidden_size, F = (size_t)hp->s.ffn_size;
    const float qk_std = (float)(2.5 / sqrt((double)C));
    ADD_MAT(w->embed_tokens);
    ADD_MAT(w->embed_positions);
    ADD_MAT(w->project_in);
    ADD_MAT(w->project_out);
    ADD(w->final_ln_gamma, ENG_F32, C, FILL_ONES);
    ADD(w->final_ln_beta, ENG_F32, C, FILL_ZEROS);
    for (int l = 0; l < L; l++) {
        opt_layer_weights *lw = &w->layers[l];
        tid = 16 + (uint64_t)l * 16;
        ADD_MAT(lw->q_proj);
        list[n - 1].std = qk_std;
        ADD_MAT(lw->k_proj);
        list[n - 1].std = qk_std;
        ADD_MAT(lw->v_proj); ADD_MAT(lw->out_proj);
        ADD(lw->q_bias, ENG_F32, C, FILL_ZEROS); ADD(lw->k_bias, ENG_F32, C, FILL_ZEROS);
        ADD(lw->v_bias, ENG_F32, C, FILL_ZEROS); ADD(lw->out_bias, ENG_F32, C, FILL_ZEROS);
        ADD(lw->ln1_gamma, ENG_F32, C, FILL_ONES); ADD(lw->ln1_beta, ENG_F32, C, FILL_ZEROS);
        ADD_MAT(lw->fc1); ADD(lw->fc1_bias, ENG_F32, F, FILL_ZEROS);
        ADD_MAT(lw->fc2); ADD(lw->fc2_bias, ENG_F32, C, FILL_ZEROS);
        ADD(lw->ln2_gamma, ENG_F32, C, FILL_ONES); ADD(lw->ln2_beta, ENG_F32, C, FILL_ZEROS);
    }
#undef ADD_MAT
#undef ADD
    fill_job job = {list, n, CHUNK, NULL, 1};
    for (size_t k = 0; k < n; k++)
        if (list[k].dtype == ENG_I8 && list[k].cols > job.max_cols) job.max_cols = list[k].cols;
    eng_pool *pool = eng_pool_create(eng_online_cores());
    const int threads = pool ? eng_pool_size(pool) : 1;
    job.rows = malloc((size_t)threads * job.max_cols * sizeof *job.rows);
    if (!job.rows) {
        eng_pool_destroy(pool);
        free(list);
        return bc_error_set(err, BC_ERR_NOMEM, "synthetic weights: no memory for %d rows of %zu floats", threads,
                            job.max_cols);
    }
    if (pool) {
        eng_pool_run(pool, fill_worker, &job);
        eng_pool_destroy(pool);
    } else {
        fill_worker(&job, 0, 1);
    }
    free(job.rows);
    free(list);
    /* fc2 bias: cancel the mean of relu(fc1(x)) (see above) */
    const double m = std * sqrt((double)C) / sqrt(2.0 * 3.14159265358979323846);
    for (int l = 0; l < L; l++) {
        const eng_matrix *w2 = &w->layers[l].fc2; /* [C, F] */
        const bc_precision_ops *prec = eng_dtype_precision(w2->dtype);
        const float *w2_scale = w2->dtype == ENG_I8 ? eng_i8_scales(w2->data, C, F) : NULL;
        for (size_t c = 0; c < C; c++) {
            double sum = 0.0;
            float row[256];
            for (size_t f0 = 0; f0 < F; f0 += 256) {
                const size_t k = F - f0 < 256 ? F - f0 : 256;
                prec->to_f32((const char *)w2->data + (c * F + f0) * prec->element_size, row, k);
                for (size_t f = 0; f < k; f++) sum += row[f];
            }
            if (w2_scale) sum *= w2_scale[c];
            w->layers[l].fc2_bias[c] = (float)(-m * sum);
        }
    }
    return BC_OK;
}
