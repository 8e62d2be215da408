/* bench_kernels.c: micro-benchmark of the OPT engine's CPU kernels and thread
 * pool, on OPT-125m's shapes (C = 768, F = 3072, V = 50272).
 *
 *   bench_kernels [--threads N] [--isa NAME] [--dtype NAME] [--m LIST] [--cpu-time]
 *                 [--quick] [--attend] [--step MODEL [--rows LIST]]
 *
 * --cpu-time times by the process's CPU time instead of the wall clock: on
 * a loaded machine, with --threads 1, that leaves out the time the thread
 * waited for a core (it still shares caches and memory with the others).
 * --m 16,64,2048 measures only linear, on the OPT-125m layers' shapes (qkv
 * fused [2304 x 768], out [768 x 768], fc1 [3072 x 768], fc2 [768 x 3072]
 * and, for M <= 64, the lm_head [50272 x 768]) at each M; --dtype keeps one
 * weight dtype (float32, float16, bfloat16, int8).
 * --attend measures only the attention of one decode step, one thread: 16
 * rows in shared-prefix groups of 4 (prompt 128 tokens, 64 generated, so
 * S = 192 keys of which 128 are the group's), OPT-125m's 12 heads of D = 64;
 * "memory": all 12 layers' KV caches (past the caches, as in a rollout),
 * "cache": one layer's prefix keys only (L2/L3-resident); each once per row
 * (attend_split, as the model called it per row before attend_group) and
 * once per group (attend_group); for the KV dtypes float32, float16,
 * bfloat16 (or --dtype). The time is per step, the GB/s the K and V bytes
 * read (prefix once per group) over it. The KV caches are advised as huge
 * pages, as the engine's are.
 * --step 125m (or 1.3b) measures only the weight stream of a B = 1 decode
 * step: every linear of the model at M = 1 in model order (per layer qkv
 * fused, out, fc1, fc2, then the lm_head), each layer's weights in their own
 * buffer, so the whole set (250 MB in bf16 for OPT-125m) streams from memory
 * as in the engine; ms per step and the weight bytes per second.
 * --step qwen0.5b does the same on Qwen2.5-0.5B's linears (C = 896, 24
 * layers: q | k | v fused [1152 x 896], o [896 x 896], gate | up fused
 * [9728 x 896], down [896 x 4864], the tied lm_head [151936 x 896]).
 * --rows 1,2,4,8,16,32,64 times the same step at each row count M (x
 * [M, widest K], y [M, V]): a decode step of M rows' linears, the step time
 * against the rows (tools/bench/crossover.sh); default 1, or --m's list.
 *
 * Prints, for every kernel variant this CPU has (or just --isa), and 1..N
 * threads:
 *   - the read bandwidth of a streaming dot product (the memory bound);
 *   - linear at M = 1 (decode, B = 1) and M = 16 (decode, B = 16): the
 *     weight bytes streamed per second (GB/s) and GFLOP/s;
 *   - linear at M = 512 (prefill): GFLOP/s;
 *   - the bulk conversions (to_f32 / from_f32: each family's tier of the
 *     precision converters) of 4 Mi values, one thread: GB/s read + written;
 *   - eng_pool_run's per-call overhead with an empty task, and with a task
 *     that is busy for 5 us per index (ideal: 5 us per call at any count).
 * Each figure is the median of several timed repetitions (the machine may be
 * shared). GB = 1e9 bytes; one multiply-add is 2 flops.
 */
#define _DEFAULT_SOURCE /* madvise */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "kernels.h"

static int g_cpu_time; /* --cpu-time: time batches by the process's CPU time */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(g_cpu_time ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int g_quick;

/* Median seconds per call of fn(ctx), over reps timed batches that each take
 * at least min_s. */
static double time_median(void (*fn)(void *), void *ctx, double min_s)
{
    enum { REPS = 7 };
    double t[REPS];
    int reps = g_quick ? 3 : REPS;
    fn(ctx); /* warm up */
    int calls = 1;
    for (;;) { /* calls per batch so a batch takes min_s */
        double t0 = now_s();
        for (int i = 0; i < calls; i++)
            fn(ctx);
        double dt = now_s() - t0;
        if (dt >= min_s || calls >= (1 << 24))
            break;
        calls = dt <= 0 ? calls * 16 : (int)(calls * (min_s / dt) * 1.2) + 1;
    }
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        for (int i = 0; i < calls; i++)
            fn(ctx);
        t[r] = (now_s() - t0) / calls;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    return t[reps / 2];
}

/* ---- bandwidth: one pass over a buffer far larger than the caches ---------- */

typedef struct bw_ctx {
    eng_pool *pool;
    const float *buf;
    size_t n;      /* floats */
    float sums[64 * 16]; /* one 64-byte line per thread */
} bw_ctx;

/* Each thread reads its slice once through the best kernel's dot product
 * with itself (both operands are the same address, so each line is loaded
 * once): the same SIMD loads the linear kernels use. */
static void bw_part(void *vctx, int i, int nt)
{
    bw_ctx *c = vctx;
    size_t per = (c->n / (size_t)nt) & ~(size_t)63;
    const float *p = c->buf + per * (size_t)i;
    size_t n = i == nt - 1 ? c->n - per * (size_t)i : per;
    c->sums[i * 16] = eng_kernels_best()->dot(p, p, ENG_F32, (int)n);
}

static void bw_run(void *vctx)
{
    bw_ctx *c = vctx;
    eng_pool_run(c->pool, bw_part, c);
}

/* ---- linear -------------------------------------------------------------------- */

typedef struct lin_ctx {
    eng_pool *pool;
    const eng_kernels *k;
    float *y;
    const float *x;
    const void *w;
    const float *bias;
    eng_dtype wt;
    int M, K, N;
} lin_ctx;

static void lin_run(void *vctx)
{
    lin_ctx *c = vctx;
    eng_linear_parallel(c->pool, c->k, c->y, c->x, c->w, c->wt, c->bias, c->M, c->K, c->N, 0);
}

/* n weights in wt. int8: every byte 0x3c, so that whatever [N, K] a shape
 * reads, its q are 60 and its scales (the bytes at eng_i8_scales_offset)
 * the normal float 0x3c3c3c3c (about 0.0115): no NaN or subnormal slows the
 * stores; the speed of int8 does not depend on the values. */
static void *make_weights(eng_dtype wt, size_t n)
{
    if (wt == ENG_I8) { /* values and scales 0x3c: up to n rows of scales (rows >= 1 column) */
        void *w = malloc(eng_matrix_bytes(ENG_I8, n, 1));
        if (w)
            memset(w, 0x3c, eng_matrix_bytes(ENG_I8, n, 1));
        return w;
    }
    void *w = malloc(n * eng_dtype_size(wt));
    if (!w)
        return NULL;
    uint64_t s = 12345;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        float v = (float)((double)(s >> 40) / (double)(1ull << 24) - 0.5) * 0.1f;
        if (wt == ENG_F32)
            ((float *)w)[i] = v;
        else if (wt == ENG_F16)
            ((uint16_t *)w)[i] = prec_f32_to_f16(v);
        else
            ((uint16_t *)w)[i] = prec_f32_to_bf16(v);
    }
    return w;
}

/* ---- --step: the weight stream of a B = 1 decode step ------------------------------- */

typedef struct step_ctx {
    eng_pool *pool;
    const eng_kernels *k;
    eng_dtype wt;
    int M;             /* rows of x */
    int n;             /* linears in the step */
    void **w;          /* w[i]: the weights of linear i */
    const int (*kn)[2]; /* kn[i]: its K and N */
    const float *x;
    float *y;
} step_ctx;

static void step_run(void *vctx)
{
    step_ctx *c = vctx;
    for (int i = 0; i < c->n; i++)
        eng_linear_parallel(c->pool, c->k, c->y, c->x, c->w[i], c->wt, NULL, c->M, c->kn[i][0], c->kn[i][1], 0);
}

/* Times step_run for every family (or --isa), dtype (or --dtype) and 1..max_threads
 * threads on the model's linears: C = 768, 12 layers (125m) or C = 2048, 24
 * layers (1.3b), F = 4 C, V = 50272; or Qwen2.5-0.5B's (qwen0.5b), at each of the n_rows row counts
 * rows[]. Returns 0, 1 when out of memory, 2 for an unknown model. */
static int bench_step(const char *model, const char *isa_only, const char *dtype_only, int max_threads, double min_s,
                      const int *rows, int n_rows)
{
    const int qwen = !strcmp(model, "qwen0.5b");
    const int C = qwen ? 896 : !strcmp(model, "125m") ? 768 : !strcmp(model, "1.3b") ? 2048 : 0;
    const int L = C == 768 ? 12 : 24;
    if (!C) {
        fprintf(stderr, "bench_kernels: --step wants 125m, 1.3b or qwen0.5b, not '%s'\n", model);
        return 2;
    }
    const int F = qwen ? 4864 : 4 * C, V = qwen ? 151936 : 50272, n = 4 * L + 1;
    int(*kn)[2] = malloc(sizeof *kn * (size_t)n);
    void **w = calloc((size_t)n, sizeof *w);
    int max_m = 1;
    for (int r = 0; r < n_rows; r++)
        max_m = rows[r] > max_m ? rows[r] : max_m;
    float *x = malloc(sizeof(float) * (size_t)F * (size_t)max_m), *y = malloc(sizeof(float) * (size_t)V * (size_t)max_m);
    if (!kn || !w || !x || !y) {
        free(kn);
        free(w);
        free(x);
        free(y);
        return 1;
    }
    for (int i = 0; i < n; i++) {
        /* K, N per layer: qkv fused, out, fc1 (gate | up), fc2 (down) */
        const int layer[4][2] = {{C, qwen ? 1152 : 3 * C}, {C, C}, {C, qwen ? 2 * F : F}, {F, C}};
        kn[i][0] = i == n - 1 ? C : layer[i % 4][0];
        kn[i][1] = i == n - 1 ? V : layer[i % 4][1];
    }
    for (long i = 0; i < (long)F * max_m; i++)
        x[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
    int rc = 0;
    for (int isa = 0; isa <= (int)eng_isa_detect() && !rc; isa++) {
        const eng_kernels *k = eng_kernels_for((eng_isa)isa);
        if (!k || (isa_only && strcmp(isa_only, eng_isa_name((eng_isa)isa))))
            continue;
        for (int wt = 0; wt <= ENG_I8 && !rc; wt++) {
            if (dtype_only && strcmp(dtype_only, eng_dtype_name((eng_dtype)wt)))
                continue;
            double bytes = 0;
            for (int i = 0; i < n && !rc; i++) {
                w[i] = make_weights((eng_dtype)wt, (size_t)kn[i][0] * kn[i][1]);
                rc = w[i] ? 0 : 1;
                bytes += (double)kn[i][0] * kn[i][1] * eng_dtype_size((eng_dtype)wt);
            }
            for (int nt = 1; nt <= max_threads && !rc; nt++) {
                eng_pool *pool = eng_pool_create(nt);
                if (!pool) {
                    rc = 1;
                    break;
                }
                for (int r = 0; r < n_rows; r++) {
                    step_ctx sc = {pool, k, (eng_dtype)wt, rows[r], n, w, (const int(*)[2])kn, x, y};
                    double t = time_median(step_run, &sc, min_s);
                    printf("step %s %-11s %-8s M=%d threads=%d: %9.3f ms  %7.1f GB/s\n", model,
                           eng_isa_name((eng_isa)isa), eng_dtype_name((eng_dtype)wt), rows[r], nt, t * 1e3,
                           bytes / t * 1e-9);
                    fflush(stdout);
                }
                eng_pool_destroy(pool);
            }
            for (int i = 0; i < n; i++) {
                free(w[i]);
                w[i] = NULL;
            }
        }
    }
    free(y);
    free(x);
    free(w);
    free(kn);
    return rc;
}

/* ---- conversions ------------------------------------------------------------------ */

typedef struct cvt_ctx {
    const eng_kernels *k;
    eng_dtype dt;
    int down; /* 1: from_f32 (f32 -> dt), 0: to_f32 */
    float *f;
    void *h;
    size_t n;
} cvt_ctx;

static void cvt_run(void *vctx)
{
    cvt_ctx *c = vctx;
    if (c->down)
        c->k->from_f32(c->h, c->dt, c->f, c->n);
    else
        c->k->to_f32(c->f, c->h, c->dt, c->n);
}

/* ---- pool overhead --------------------------------------------------------------- */

static void empty_task(void *ctx, int i, int n)
{
    (void)ctx;
    (void)i;
    (void)n;
}

/* Busy for 5 us of wall time: a stand-in for one thread's share of a
 * decode-step linear. */
static void busy_task(void *ctx, int i, int n)
{
    (void)ctx;
    (void)i;
    (void)n;
    double t0 = now_s();
    while (now_s() - t0 < 5e-6)
        ;
}

static void pool_run_busy(void *vctx);

typedef struct pool_ctx {
    eng_pool *pool;
} pool_ctx;

static void pool_run_busy(void *vctx)
{
    pool_ctx *c = vctx;
    eng_pool_run(c->pool, busy_task, NULL);
}

static void pool_run_empty(void *vctx)
{
    pool_ctx *c = vctx;
    eng_pool_run(c->pool, empty_task, NULL);
}

/* The shapes of --m: OPT-125m's linears at each M of list (comma separated). */
typedef struct lin_shape {
    char name[16];
    int M, K, N;
} lin_shape;

static int shapes_for_m(const char *list, lin_shape *out, int cap)
{
    static const struct { const char *name; int K, N; } layers[] = {
        {"qkv", 768, 2304}, {"out", 768, 768}, {"fc1", 768, 3072}, {"fc2", 3072, 768}, {"lm_head", 768, 50272},
    };
    int n = 0;
    for (const char *p = list; *p;) {
        char *end;
        long M = strtol(p, &end, 10);
        if (end == p || M < 1 || M > 4096)
            return -1;
        for (size_t l = 0; l < sizeof layers / sizeof layers[0]; l++) {
            if (layers[l].N > 4096 && M > 64)
                continue;
            if (n == cap)
                return -1;
            snprintf(out[n].name, sizeof out[n].name, "%-7s M=%-5ld", layers[l].name, M);
            out[n].M = (int)M;
            out[n].K = layers[l].K;
            out[n].N = layers[l].N;
            n++;
        }
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return n;
}

/* ---- attention: one decode step of 16 rows in groups of 4 ------------------- */

enum { AT_B = 16, AT_G = 4, AT_H = 12, AT_D = 64, AT_SMAX = 256, AT_NP = 128 };

typedef struct att_ctx {
    const eng_kernels *k;
    eng_dtype dt;
    const char *kc, *vc; /* [L][AT_B][AT_H][AT_SMAX][AT_D] in dt */
    int L, own, group;   /* layers, generated keys per row, 1: attend_group */
    const float *q;      /* [AT_B][AT_H][AT_D] */
    const uint8_t *keep; /* [AT_SMAX], all 1: the model always passes its mask row */
    float *out, *sc;     /* [AT_B][AT_H][AT_D], [AT_G][AT_SMAX] */
} att_ctx;

static void att_run(void *vctx)
{
    const att_ctx *c = vctx;
    const size_t head = (size_t)AT_SMAX * AT_D * eng_dtype_size(c->dt), layer = (size_t)AT_B * AT_H * head;
    const int S = AT_NP + c->own;
    for (int l = 0; l < c->L; l++)
        for (int g = 0; g < AT_B / AT_G; g++)
            for (int h = 0; h < AT_H; h++) {
                const int b0 = g * AT_G;
                const size_t first = (size_t)l * layer + ((size_t)b0 * AT_H + h) * head, row = (size_t)AT_H * head;
                const size_t qo = ((size_t)b0 * AT_H + h) * AT_D, ld = (size_t)AT_H * AT_D;
                if (c->group) {
                    c->k->attend_group(c->out + qo, ld, c->q + qo, ld, AT_G, c->kc + first, c->vc + first, AT_NP,
                                       c->kc + first, c->vc + first, row, c->dt, c->keep, 0, S, AT_D, c->sc);
                    continue;
                }
                for (int r = 0; r < AT_G; r++)
                    c->k->attend_split(c->out + qo + r * ld, c->q + qo + r * ld, c->kc + first, c->vc + first, AT_NP,
                                       c->kc + first + r * row, c->vc + first + r * row, c->dt, c->keep, S, AT_D,
                                       c->sc);
            }
}

static int bench_attend(const char *isa_only, const char *dtype_only, double min_s)
{
    const int L = 12;
    const size_t n = (size_t)L * AT_B * AT_H * AT_SMAX * AT_D;
    float *f = malloc(sizeof(float) * n), *q = malloc(sizeof(float) * AT_B * AT_H * AT_D);
    float *out = malloc(sizeof(float) * AT_B * AT_H * AT_D), *sc = malloc(sizeof(float) * AT_G * AT_SMAX);
    /* the KV caches in transparent huge pages where the kernel gives them, as
     * the engine allocates its KV cache (model.c, stream_alloc) */
    const size_t kv_bytes = (n * 4 + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
    char *kc = aligned_alloc(2u << 20, kv_bytes), *vc = aligned_alloc(2u << 20, kv_bytes);
    if (!f || !q || !out || !sc || !kc || !vc)
        return 1;
#ifdef MADV_HUGEPAGE
    (void)madvise(kc, kv_bytes, MADV_HUGEPAGE);
    (void)madvise(vc, kv_bytes, MADV_HUGEPAGE);
#endif
    for (size_t i = 0; i < n; i++)
        f[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
    for (size_t i = 0; i < (size_t)AT_B * AT_H * AT_D; i++)
        q[i] = (float)((i * 104729) % 1000) * 2e-4f - 0.1f;
    uint8_t keep[AT_SMAX];
    memset(keep, 1, sizeof keep);
    for (int dt = ENG_F32; dt <= ENG_BF16; dt++) {
        if (dtype_only && strcmp(dtype_only, eng_dtype_name((eng_dtype)dt)))
            continue;
        eng_kernels_best()->from_f32(kc, (eng_dtype)dt, f, n);
        eng_kernels_best()->from_f32(vc, (eng_dtype)dt, f + 1, n - 1);
        for (int isa = 0; isa <= (int)eng_isa_detect(); isa++) {
            const eng_kernels *k = eng_kernels_for((eng_isa)isa);
            if (!k || (isa_only && strcmp(isa_only, eng_isa_name((eng_isa)isa))))
                continue;
            for (int mem = 1; mem >= 0; mem--)
                for (int group = 0; group <= 1; group++) {
                    att_ctx c = {k, (eng_dtype)dt, kc, vc, mem ? L : 1, mem ? 64 : 0, group, q, keep, out, sc};
                    double t = time_median(att_run, &c, min_s);
                    double bytes = (double)c.L * AT_H * (AT_B / AT_G * AT_NP + AT_B * c.own) * AT_D * 2 *
                                   (double)eng_dtype_size((eng_dtype)dt);
                    printf("attend %-11s %-8s %-6s S=%3d %-12s: %9.1f us per step  %6.1f GB/s\n",
                           eng_isa_name((eng_isa)isa), eng_dtype_name((eng_dtype)dt), mem ? "memory" : "cache",
                           AT_NP + c.own, group ? "attend_group" : "attend_split", t * 1e6, bytes / t * 1e-9);
                    fflush(stdout);
                }
        }
    }
    free(vc);
    free(kc);
    free(sc);
    free(out);
    free(q);
    free(f);
    return 0;
}

int main(int argc, char **argv)
{
    int max_threads = 2;
    const char *isa_only = NULL, *dtype_only = NULL, *m_list = NULL, *step_model = NULL, *rows_list = NULL;
    int attend_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            max_threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--isa") && i + 1 < argc)
            isa_only = argv[++i];
        else if (!strcmp(argv[i], "--dtype") && i + 1 < argc)
            dtype_only = argv[++i];
        else if (!strcmp(argv[i], "--m") && i + 1 < argc)
            m_list = argv[++i];
        else if (!strcmp(argv[i], "--step") && i + 1 < argc)
            step_model = argv[++i];
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc)
            rows_list = argv[++i];
        else if (!strcmp(argv[i], "--cpu-time"))
            g_cpu_time = 1;
        else if (!strcmp(argv[i], "--quick"))
            g_quick = 1;
        else if (!strcmp(argv[i], "--attend"))
            attend_only = 1;
        else {
            fprintf(stderr, "usage: %s [--threads N] [--isa portable|avx2|avx512|avx512_bf16] [--dtype NAME] "
                            "[--m LIST] [--cpu-time] [--quick] [--attend] [--step 125m|1.3b|qwen0.5b [--rows LIST]]\n",
                    argv[0]);
            return 2;
        }
    }
    if (max_threads < 1 || max_threads > 64)
        max_threads = 2;
    double min_s = g_quick ? 0.02 : 0.1;
    printf("detected ISA: %s; threads 1..%d; medians of %d batches of >= %.0f ms\n", eng_isa_name(eng_isa_detect()),
           max_threads, g_quick ? 3 : 7, min_s * 1e3);
    if (step_model) {
        int rows[32], n_rows = 0;
        if (!rows_list) rows_list = m_list ? m_list : "1"; /* --m names the step's rows too */
        for (const char *p = rows_list; *p && n_rows < 32;) {
            char *end;
            long m = strtol(p, &end, 10);
            if (end == p || m < 1 || m > 4096 || (*end && *end != ',')) {
                fprintf(stderr, "%s: --rows wants comma-separated row counts in 1..4096, not '%s'\n", argv[0], rows_list);
                return 2;
            }
            rows[n_rows++] = (int)m;
            p = *end ? end + 1 : end;
        }
        return bench_step(step_model, isa_only, dtype_only, max_threads, min_s, rows, n_rows);
    }

    if (attend_only)
        return bench_attend(isa_only, dtype_only, min_s);

    lin_shape shapes[64];
    int n_shapes = 0;
    if (m_list) {
        n_shapes = shapes_for_m(m_list, shapes, 64);
        if (n_shapes <= 0) {
            fprintf(stderr, "%s: --m wants comma-separated row counts in 1..4096, not '%s'\n", argv[0], m_list);
            return 2;
        }
    } else {
        static const lin_shape fixed[] = {
            {"q_proj  M=1   ", 1, 768, 768},     {"fc1     M=1   ", 1, 768, 3072},
            {"fc2     M=1   ", 1, 3072, 768},    {"lm_head M=1   ", 1, 768, 50272},
            {"fc1     M=16  ", 16, 768, 3072},   {"lm_head M=16  ", 16, 768, 50272},
            {"fc1     M=512 ", 512, 768, 3072},  {"fc2     M=512 ", 512, 3072, 768},
        };
        n_shapes = (int)(sizeof fixed / sizeof fixed[0]);
        memcpy(shapes, fixed, sizeof fixed);
    }

    /* pool overhead */
    for (int nt = 1; !m_list && nt <= max_threads; nt++) {
        pool_ctx pc = {eng_pool_create(nt)};
        if (!pc.pool)
            return 1;
        double t = time_median(pool_run_empty, &pc, min_s);
        printf("pool   threads=%d  empty eng_pool_run: %8.0f ns/call (back to back)\n", nt, t * 1e9);
        double tb = time_median(pool_run_busy, &pc, min_s);
        printf("pool   threads=%d  5 us per index:     %8.0f ns/call (%.0f ns over 5 us)\n", nt, tb * 1e9,
               tb * 1e9 - 5000.0);
        eng_pool_destroy(pc.pool);
    }

    /* memory bandwidth */
    size_t bw_n = m_list ? 64 : (size_t)(g_quick ? 64 : 256) << 18; /* 64 or 256 MiB of floats */
    float *bw_buf = malloc(bw_n * sizeof(float));
    if (!bw_buf)
        return 1;
    for (size_t i = 0; i < bw_n; i++)
        bw_buf[i] = (float)(i & 7);
    for (int nt = 1; !m_list && nt <= max_threads; nt++) {
        bw_ctx bc = {.pool = eng_pool_create(nt), .buf = bw_buf, .n = bw_n};
        if (!bc.pool)
            return 1;
        double t = time_median(bw_run, &bc, min_s);
        printf("stream threads=%d  read %zu MiB once: %7.1f GB/s\n", nt, bw_n * 4 >> 20,
               (double)bw_n * 4 / t * 1e-9);
        eng_pool_destroy(bc.pool);
    }
    free(bw_buf);

    /* linear */
    size_t max_xk = 0, max_yn = 0;
    for (int s = 0; s < n_shapes; s++) {
        if ((size_t)shapes[s].M * shapes[s].K > max_xk)
            max_xk = (size_t)shapes[s].M * shapes[s].K;
        if ((size_t)shapes[s].M * shapes[s].N > max_yn)
            max_yn = (size_t)shapes[s].M * shapes[s].N;
    }
    float *x = malloc(sizeof(float) * max_xk);
    float *y = malloc(sizeof(float) * max_yn);
    float *bias = calloc(50272, sizeof(float));
    if (!x || !y || !bias)
        return 1;
    for (size_t i = 0; i < max_xk; i++)
        x[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
    for (int isa = 0; isa <= (int)eng_isa_detect(); isa++) {
        const eng_kernels *k = eng_kernels_for((eng_isa)isa);
        if (!k || (isa_only && strcmp(isa_only, eng_isa_name((eng_isa)isa))))
            continue;
        for (int wt = 0; wt <= ENG_I8; wt++) {
            if (dtype_only && strcmp(dtype_only, eng_dtype_name((eng_dtype)wt)))
                continue;
            void *w = make_weights((eng_dtype)wt, (size_t)50272 * 768);
            if (!w)
                return 1;
            for (int s = 0; s < n_shapes; s++) {
                if (g_quick && shapes[s].M == 512 && isa == 0)
                    continue;
                for (int nt = 1; nt <= max_threads; nt++) {
                    lin_ctx lc = {eng_pool_create(nt), k, y, x, w, bias, (eng_dtype)wt, shapes[s].M, shapes[s].K,
                                  shapes[s].N};
                    if (!lc.pool)
                        return 1;
                    double t = time_median(lin_run, &lc, min_s);
                    double bytes = (double)shapes[s].N * shapes[s].K * eng_dtype_size((eng_dtype)wt);
                    double flops = 2.0 * shapes[s].M * shapes[s].N * shapes[s].K;
                    printf("linear %-11s %-8s %s[%5d x %4d] threads=%d: %9.1f us  %7.1f GB/s  %7.1f GFLOP/s\n",
                           eng_isa_name((eng_isa)isa), eng_dtype_name((eng_dtype)wt), shapes[s].name, shapes[s].N,
                           shapes[s].K, nt, t * 1e6, bytes / t * 1e-9, flops / t * 1e-9);
                    fflush(stdout);
                    eng_pool_destroy(lc.pool);
                }
            }
            free(w);
        }
    }
    free(bias);
    free(y);
    free(x);

    if (m_list)
        return 0;

    /* conversions */
    const size_t cn = (size_t)4 << 20;
    float *cf = malloc(cn * sizeof(float));
    uint16_t *ch = malloc(cn * sizeof(uint16_t));
    if (!cf || !ch)
        return 1;
    for (size_t i = 0; i < cn; i++)
        cf[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
    for (int isa = 0; isa <= (int)eng_isa_detect(); isa++) {
        const eng_kernels *k = eng_kernels_for((eng_isa)isa);
        if (!k || (isa_only && strcmp(isa_only, eng_isa_name((eng_isa)isa))))
            continue;
        for (int dt = ENG_F16; dt <= ENG_BF16; dt++)
            for (int down = 1; down >= 0; down--) {
                cvt_ctx cc = {k, (eng_dtype)dt, down, cf, ch, cn};
                double t = time_median(cvt_run, &cc, min_s);
                printf("convert %-11s %-8s %s %zu Mi values: %9.1f us  %7.1f GB/s\n", eng_isa_name((eng_isa)isa),
                       eng_dtype_name((eng_dtype)dt), down ? "from_f32" : "to_f32  ", cn >> 20, t * 1e6,
                       (double)cn * 6 / t * 1e-9);
                fflush(stdout);
            }
    }
    free(ch);
    free(cf);
    return 0;
}
