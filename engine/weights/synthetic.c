/* synthetic.c: seeded, deterministic synthetic weights over a family's list
 * of tensors (synthetic.h). Element i of tensor t is a pure function of
 * (seed, t's id, i), so the result does not depend on the thread count or
 * the order of generation; chunks are generated in parallel. Values are
 * rounded to the weight dtype by its precision ops (precision.h: the
 * precision plugin's from_f32, round to nearest even), in bulk.
 */
#include "synthetic.h"

#include "precision.h"

#include <stdlib.h>

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

typedef struct fill_job {
    const eng_fill_tensor *t;
    size_t n_tensors;
    size_t chunk;    /* elements per chunk */
    float *rows;     /* [threads, max_cols]: each thread's int8 row before quantising; owned by
                        eng_synthetic_fill */
    size_t max_cols; /* the longest int8 row */
} fill_job;

#define CHUNK (1u << 16)

/* buf[n] = the values of elements [i, i + n) of t. */
static void fill_values(const eng_fill_tensor *t, float *buf, size_t i, size_t n) {
    for (size_t j = 0; j < n; j++) {
        if (t->kind == ENG_FILL_ONES) buf[j] = 1.0f;
        else if (t->kind == ENG_FILL_ZEROS) buf[j] = 0.0f;
        else buf[j] = t->std * unit_normal(splitmix64(t->key + i + j));
    }
}

/* Rows [i0, i1) / cols of an int8 matrix: each row's values generated once
 * into row[cols], then its scale and int8 values from them (precision.h). */
static void fill_rows_i8(const eng_fill_tensor *t, size_t i0, size_t i1, float *row) {
    const size_t cols = t->cols, rows = t->n / cols;
    float *scale = (float *)(void *)((char *)t->data + eng_i8_scales_offset(rows, cols));
    for (size_t r = i0 / cols; r < i1 / cols; r++) {
        fill_values(t, row, r * cols, cols);
        scale[r] = eng_i8_quantize_row((int8_t *)t->data + r * cols, row, cols);
    }
}

/* Rows [i0 / cols, i1 / cols) of a W8A8 matrix, packed (precision.h). */
static void fill_rows_w8a8(const eng_fill_tensor *t, size_t i0, size_t i1, float *row) {
    const size_t cols = t->cols, rows = t->n / cols;
    for (size_t r = i0 / cols; r < i1 / cols; r++) {
        fill_values(t, row, r * cols, cols);
        eng_w8a8_pack_row(t->data, rows, cols, r, row);
    }
}

static void fill_chunk(const eng_fill_tensor *t, size_t i0, size_t i1, float *row) {
    if (t->dtype == ENG_W8A8) {
        fill_rows_w8a8(t, i0, i1, row);
        return;
    }
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
        const eng_fill_tensor *t = &job->t[k];
        /* whole rows per chunk for int8 (t->cols divides t->n) */
        const size_t step = eng_dtype_is_int8(t->dtype) ? (job->chunk / t->cols + 1) * t->cols : job->chunk;
        for (size_t i0 = 0; i0 < t->n; i0 += step, c++) {
            if ((int)(c % (size_t)n) != i) continue;
            size_t i1 = i0 + step < t->n ? i0 + step : t->n;
            fill_chunk(t, i0, i1, job->rows + (size_t)i * job->max_cols);
        }
    }
}

uint64_t eng_synthetic_key(uint64_t seed, uint64_t id) { return splitmix64(seed ^ splitmix64(id + 1)); }

bc_status eng_synthetic_fill(const eng_fill_tensor *list, size_t n, bc_error *err) {
    fill_job job = {list, n, CHUNK, NULL, 1};
    for (size_t k = 0; k < n; k++)
        if (eng_dtype_is_int8(list[k].dtype) && list[k].cols > job.max_cols) job.max_cols = list[k].cols;
    for (size_t k = 0; k < n; k++) /* the packed padding: zeros (rows pack in parallel below) */
        if (list[k].dtype == ENG_W8A8) eng_w8a8_clear(list[k].data, list[k].n / list[k].cols, list[k].cols);
    eng_pool *pool = eng_pool_create(eng_online_cores());
    const int threads = pool ? eng_pool_size(pool) : 1;
    job.rows = malloc((size_t)threads * job.max_cols * sizeof *job.rows);
    if (!job.rows) {
        eng_pool_destroy(pool);
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
    return BC_OK;
}
