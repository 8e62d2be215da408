/* kernels_impl.h: private to the kernel files (kernels*.c, pool.c). Each
 * variant file exports one getter returning its table, or NULL when it was
 * built without that ISA; kernels.c (the dispatcher) picks among them. The
 * variants reach the number formats through plugins/precision/common: the
 * bit rules inline (float_bits.h) and the bulk converters of their own tier
 * (convert.h), never through the dispatcher.
 */
#ifndef OPT_KERNELS_IMPL_H
#define OPT_KERNELS_IMPL_H

#include <string.h>

#include "convert.h"
#include "formats.h" /* prec_int8_ops: int8 elements, one rule for every tier */
#include "kernels.h"

const opt_kernels *opt_kernels_portable(void);    /* kernels_portable.c */
const opt_kernels *opt_kernels_avx2(void);        /* kernels_avx2.c */
const opt_kernels *opt_kernels_avx512(void);      /* kernels_avx512.c */
const opt_kernels *opt_kernels_avx512_bf16(void); /* kernels_avx512.c */
/* The flops per second of vdpbf16ps over those of fp32 vfmadd on the
 * calling core: independent chains of each, timed alternately (about 1 ms
 * in all); 0 when this build or CPU has no AVX512-BF16 (kernels_avx512.c,
 * which must only be called on a CPU that runs avx512_bf16). */
double opt_avx512_dpbf16_over_fma(void);

/* The table entries to_f32 and from_f32 of a variant: n values from or to
 * dtype, with the bulk converters cv (the variant's tier). */
static inline void opt_convert_to_f32(const prec_converters *cv, float *dst, const void *src, opt_dtype st, size_t n)
{
    switch (st) {
    case OPT_F32: memmove(dst, src, n * sizeof(float)); return;
    case OPT_F16: cv->f16_to_f32(src, dst, n); return;
    case OPT_BF16: cv->bf16_to_f32(src, dst, n); return;
    case OPT_I8: prec_int8_ops.to_f32(src, dst, n); return;
    }
}

static inline void opt_convert_from_f32(const prec_converters *cv, void *dst, opt_dtype dt, const float *src, size_t n)
{
    switch (dt) {
    case OPT_F32: memmove(dst, src, n * sizeof(float)); return;
    case OPT_F16: cv->f32_to_f16(src, dst, n); return;
    case OPT_BF16: cv->f32_to_bf16(src, dst, n); return;
    case OPT_I8: prec_int8_ops.from_f32(src, dst, n); return;
    }
}

/* ---- the column path (kernels_cols.c) ---------------------------------
 * linear for many rows of x (M >= a variant's threshold), vectors along M:
 * x is transposed once per block of rows and chunk of K, xt[k][i] =
 * x[m0 + i, kx + k] (i < mp, zero beyond M), and a panel of np weight rows
 * x kc columns is converted to fp32, pk[j][k] = w[n + j, kb + k] (zero rows
 * beyond n1). A tile keeps mv vectors of x rows by nr weight rows in
 * registers:
 *   acc[j][i] += sum_{k < kc} xt[k][i] * pk[j][k]
 * (one broadcast of pk[j][k] per FMA row, no horizontal sums), over all K
 * blocks of a chunk before y is written (once per chunk of 1024 columns).
 * Each y[m, n] is the same fp32 chains in k order whatever the tile, the
 * panel or the split of [n0, n1), so every split gives the same bits. */
enum {
    OPT_COLS_XT_FLOATS = 65536, /* xt on the stack (256 KiB): rows x columns of a chunk */
    OPT_COLS_MC = 64,           /* rows of x per block at most */
    OPT_COLS_NP_MAX = 24,       /* rows of w per panel at most */
    OPT_COLS_KC_MAX = 256,      /* columns per panel at most */
};

/* What a tile prefetches while it computes (the weights of the next panel
 * block, so memory streams during the FMAs): lines 64-byte lines of each of
 * rows rows, row r at base + r * ld. rows = 0: nothing. r is the cursor
 * (0 to start): opt_cols_prefetch_next issues row r's line, then the next
 * row's, then the next line of each row. */
typedef struct opt_cols_prefetch {
    const char *base;
    size_t ld;
    int rows, lines, r;
} opt_cols_prefetch;

/* The k steps of a kc-step tile that prefetch (one line each). */
static inline int opt_cols_prefetch_steps(const opt_cols_prefetch *pf, int kc)
{
    return pf->rows * pf->lines < kc ? pf->rows * pf->lines : kc;
}

static inline void opt_cols_prefetch_next(opt_cols_prefetch *pf)
{
    __builtin_prefetch(pf->base + (size_t)pf->r * pf->ld); /* prefetcht0 */
    if (++pf->r == pf->rows) {
        pf->r = 0;
        pf->base += 64;
    }
}

/* acc[j * ldacc + i] += sum_{k < kc} xt[k * ldxt + i] * pk[j * kc_stride + k]
 * for i < mv * lanes, j < nr (the tile's own constants; kc_stride is the
 * spec's kc), prefetching pf one line per k step. */
typedef void (*opt_cols_tile_fn)(const float *xt, size_t ldxt, const float *pk, int kc, float *acc, size_t ldacc,
                                 opt_cols_prefetch pf);

/* What a variant gives the column path. */
typedef struct opt_cols_spec {
    int lanes;                  /* floats per vector */
    int np;                     /* rows of w per panel, a multiple of both nr */
    int kc;                     /* columns per panel (the tiles' row stride of pk) */
    int nr[2];                  /* rows of w of the tiles with 1 and 2 vectors of x rows */
    opt_cols_tile_fn tile[2];   /* those tiles */
    /* dst[k] = w[k] in fp32 (int8: q, no scale), k < n: one row of a panel */
    void (*pack_row)(float *dst, const void *w, opt_dtype wt, int n);
} opt_cols_spec;

/* The linear entry's contract (kernels.h) through the column path. */
void opt_linear_cols(const opt_cols_spec *s, float *y, const float *x, const void *w, opt_dtype wt, const float *bias,
                     int M, int K, int N, int n0, int n1, int relu);

/* ---- the direct path at M = 1 (the B = 1 decode step) -------------------- */

enum {
    OPT_ROW_NR = 4,          /* rows of w per 1-row tile */
    OPT_ROW_PF_NEAR = 16384, /* the farthest ahead (bytes) the 1-row tiles prefetch into L1 */
    OPT_ROW_PF_FAR = 65536,  /* how far ahead (bytes) they also prefetch into L2 */
    OPT_ROW_MAX_K = 65536,   /* the longest row of x (floats) opt_linear_row takes */
};

/* out[n] = sum_{k < K} x[k] * w[n * ldw + k] for the tile's rows n (1 to
 * OPT_ROW_NR), x in the pair order of x_in_pairs for bf16 weights; the same
 * rows and columns of near (into L1) and far (into L2) are prefetched, or of
 * w itself when NULL. */
typedef void (*opt_row_fn)(const float *x, const void *w, size_t ldw, int K, const void *near, const void *far,
                           float out[OPT_ROW_NR]);

/* What a variant gives the M = 1 loop. */
typedef struct opt_row_spec {
    opt_row_fn tile[4][OPT_ROW_NR]; /* [dtype][rows - 1] */
    /* xp = x[0, K) in the bf16 tiles' pair order, zero-padded to 2 vectors */
    void (*x_in_pairs)(float *xp, const float *x, int K);
} opt_row_spec;

/* Defines a variant's opt_row_spec `name`: one opt_row_fn per dtype and row
 * count over the variant's always-inline
 * row_tile(int rows, opt_dtype, x, w, ldw, K, near, far, out), and its
 * x_in_pairs. */
#define OPT_ROW_FN_(NR, DT, NAME)                                                                                      \
    static void row_##NAME##_##NR(const float *x, const void *w, size_t ldw, int K, const void *near, const void *far, \
                                  float out[OPT_ROW_NR])                                                               \
    {                                                                                                                  \
        row_tile(NR, DT, x, w, ldw, K, near, far, out);                                                                \
    }
#define OPT_ROW_FNS_(DT, NAME) OPT_ROW_FN_(1, DT, NAME) OPT_ROW_FN_(2, DT, NAME) OPT_ROW_FN_(3, DT, NAME) OPT_ROW_FN_(4, DT, NAME)
#define OPT_ROW_PTRS_(NAME) {row_##NAME##_1, row_##NAME##_2, row_##NAME##_3, row_##NAME##_4}
#define OPT_ROW_SPEC(name, x_in_pairs_fn)                                                                              \
    OPT_ROW_FNS_(OPT_F32, f32)                                                                                         \
    OPT_ROW_FNS_(OPT_F16, f16)                                                                                         \
    OPT_ROW_FNS_(OPT_BF16, bf16)                                                                                       \
    OPT_ROW_FNS_(OPT_I8, i8)                                                                                           \
    static const opt_row_spec name = {                                                                                 \
        .tile = {OPT_ROW_PTRS_(f32), OPT_ROW_PTRS_(f16), OPT_ROW_PTRS_(bf16), OPT_ROW_PTRS_(i8)},                      \
        .x_in_pairs = x_in_pairs_fn,                                                                                   \
    };

/* The linear entry's contract (kernels.h) at M = 1, K <= OPT_ROW_MAX_K: the
 * rows [n0, n1) of w in groups of OPT_ROW_NR, each through the variant's
 * 1-row tile. It prefetches into L1 the next group's rows, or at most
 * OPT_ROW_PF_NEAR bytes ahead (long rows: the lines prefetched and the group
 * being read must stay in L1 together, with x), and into L2 OPT_ROW_PF_FAR
 * bytes ahead (one core needs more lines in flight than L1 holds to cover
 * memory's latency), neither past the rows [n0, n1). */
static inline void opt_linear_row(const opt_row_spec *s, float *y, const float *x, const void *w, opt_dtype wt,
                                  const float *bias, int K, int N, int n0, int n1, int relu)
{
    const size_t es = opt_dtype_size(wt);
    const float *scale = wt == OPT_I8 ? opt_i8_scales(w, (size_t)N, (size_t)K) : NULL; /* int8: per row */
    _Alignas(64) float xp[OPT_ROW_MAX_K];
    const float *xr = x;
    if (wt == OPT_BF16) { /* x in the tiles' pair order, once per call */
        s->x_in_pairs(xp, x, K);
        xr = xp;
    }
    const size_t group_bytes = (size_t)OPT_ROW_NR * K * es;
    const size_t near_bytes = group_bytes < OPT_ROW_PF_NEAR ? group_bytes : OPT_ROW_PF_NEAR;
    const char *const wend = (const char *)w + (size_t)n1 * K * es;
    float out[OPT_ROW_NR];
    for (int n = n0; n < n1; n += OPT_ROW_NR) {
        const int nr = n1 - n < OPT_ROW_NR ? n1 - n : OPT_ROW_NR;
        const char *wn = (const char *)w + (size_t)n * K * es;
        const void *near = n + OPT_ROW_NR < n1 ? wn + near_bytes : NULL;
        const void *far = (size_t)(wend - wn) >= OPT_ROW_PF_FAR + group_bytes ? wn + OPT_ROW_PF_FAR : NULL;
        s->tile[wt][nr - 1](xr, wn, (size_t)K, K, near, far, out);
        for (int j = 0; j < nr; j++) {
            const float o = scale ? scale[n + j] * out[j] : out[j];
            float v = o + (bias ? bias[n + j] : 0.0f);
            if (relu && v < 0.0f)
                v = 0.0f;
            y[n + j] = v;
        }
    }
}

#endif
