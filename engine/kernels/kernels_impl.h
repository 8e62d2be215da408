/* kernels_impl.h: private to the kernel files (kernels*.c, pool.c). Each
 * variant file exports one getter returning its table, or NULL when it was
 * built without that ISA; kernels.c (the dispatcher) picks among them. The
 * variants reach the number formats through plugins/precision/common: the
 * bit rules inline (float_bits.h) and the bulk converters of their own tier
 * (convert.h), never through the dispatcher.
 */
#ifndef ENG_KERNELS_IMPL_H
#define ENG_KERNELS_IMPL_H

#include <string.h>

#include "convert.h"
#include "formats.h" /* prec_int8_ops: int8 elements, one rule for every tier */
#include "kernels.h"
#include "kernels_vnni.h" /* the W8A8 linear every family dispatches to */

const eng_kernels *eng_kernels_portable(void);    /* kernels_portable.c */
const eng_kernels *eng_kernels_avx2(void);        /* kernels_avx2.c */
const eng_kernels *eng_kernels_avx512(void);      /* kernels_avx512.c */
const eng_kernels *eng_kernels_avx512_bf16(void); /* kernels_avx512.c */
/* The flops per second of vdpbf16ps over those of fp32 vfmadd on the
 * calling core: independent chains of each, timed alternately (about 1 ms
 * in all); 0 when this build or CPU has no AVX512-BF16 (kernels_avx512.c,
 * which must only be called on a CPU that runs avx512_bf16). */
double eng_avx512_dpbf16_over_fma(void);

/* The table entries to_f32 and from_f32 of a variant: n values from or to
 * dtype, with the bulk converters cv (the variant's tier). */
static inline void eng_convert_to_f32(const prec_converters *cv, float *dst, const void *src, eng_dtype st, size_t n)
{
    switch (st) {
    case ENG_F32: memmove(dst, src, n * sizeof(float)); return;
    case ENG_F16: cv->f16_to_f32(src, dst, n); return;
    case ENG_BF16: cv->bf16_to_f32(src, dst, n); return;
    case ENG_I8:
    case ENG_W8A8: prec_int8_ops.to_f32(src, dst, n); return;
    }
}

static inline void eng_convert_from_f32(const prec_converters *cv, void *dst, eng_dtype dt, const float *src, size_t n)
{
    switch (dt) {
    case ENG_F32: memmove(dst, src, n * sizeof(float)); return;
    case ENG_F16: cv->f32_to_f16(src, dst, n); return;
    case ENG_BF16: cv->f32_to_bf16(src, dst, n); return;
    case ENG_I8:
    case ENG_W8A8: prec_int8_ops.from_f32(src, dst, n); return;
    }
}

/* ---- attention (kernels_attend.c) -------------------------------------
 * A SIMD variant's attend_group (kernels.h) is eng_attend_group_run over
 * its parts; attend_split is attend_group with G = 1. */
enum {
    ENG_ATTEND_KB = 32,           /* shared-prefix keys per block: 32 K or V rows of D = 128 fp32 are 16 KiB of L1 */
    ENG_ATTEND_PAIRS_MAX_D = 256, /* bf16 K and V in pairs up to this D (the queries' pair copies on the stack) */
};

typedef struct eng_attend_parts {
    /* sc[s] = q . k[s, :] for keys s in [s0, s1) (k indexed from key 0); may
     * prefetch the same rows of v for the V sum */
    void (*score)(float *sc, const float *q, const void *k, const void *v, eng_dtype dt, int s0, int s1, int D);
    /* sc[S] becomes the unnormalised probabilities of attend (kernels.h:
     * masked keys 0, uniform 1 when nothing is kept); returns 1 / their sum */
    float (*softmax)(float *sc, const uint8_t *keep, int S);
    /* out[d] = (first ? 0 : out[d]) + sum over s in [s0, s1) with sc[s] != 0,
     * in key order, of (sc[s] * inv) * v[s, d]; d < D */
    void (*vsum)(float *out, const float *sc, float inv, const void *v, eng_dtype dt, int s0, int s1, int D,
                 int first);
    /* score for G queries q + g * ldq at once, into sc + g * ldsc: each K
     * vector loaded (and converted) once for several queries */
    void (*score_group)(float *sc, size_t ldsc, const float *q, size_t ldq, int G, const void *k, const void *v,
                        eng_dtype dt, int s0, int s1, int D);
    /* vsum for G outputs out + g * ldo at once over keys s in [s0, s1),
     * s1 - s0 <= ENG_ATTEND_KB: query g's probability of key s is
     * pw[g * ENG_ATTEND_KB + s - s0] (sc[s] * inv already), any[s - s0]
     * whether some query's is not 0; each V vector loaded (and converted) once
     * for several queries; each output the same chain in key order as vsum's */
    void (*vsum_group)(float *out, size_t ldo, const float *pw, const unsigned char *any, int G, const void *v,
                       eng_dtype dt, int s0, int s1, int D, int first);
} eng_attend_parts;

/* The rows of queries g0 .. g0 + 3 of G (g0 < G) in rows[4], query g at
 * base + g * ld, a chunk of fewer than four repeating its last; returns how
 * many are the chunk's own (1..4). The group parts take four at a time. */
static inline int eng_attend_chunk4(const float *rows[4], const float *base, size_t ld, int g0, int G)
{
    const int n = G - g0 < 4 ? G - g0 : 4;
    for (int j = 0; j < 4; j++)
        rows[j] = base + (size_t)(g0 + (j < n ? j : n - 1)) * ld;
    return n;
}

/* Prefetches the bytes [p, p + bytes) into L1, a 64-byte line at a time (the
 * score parts fetch the V rows of the keys they score). */
static inline void eng_prefetch_l1(const void *p, size_t bytes)
{
    for (size_t b = 0; b < bytes; b += 64)
        __builtin_prefetch((const char *)p + b, 0, 3);
}

/* The attend_group entry's contract (kernels.h) through a variant's parts. */
void eng_attend_group_run(const eng_attend_parts *a, float *out, size_t ldo, const float *q, size_t ldq, int G,
                          const void *kp, const void *vp, int np, const void *k, const void *v, size_t ld_kv,
                          eng_dtype dt, const uint8_t *keep, size_t ld_keep, int S, int D, float *scores);

/* A variant's three table entries over its parts PARTS (an eng_attend_parts):
 * attend_group_SUFFIX, attend_split_SUFFIX (G = 1) and attend_SUFFIX (np = 0). */
#define ENG_ATTEND_ENTRIES(SUFFIX, PARTS)                                                                              \
    static void attend_group_##SUFFIX(float *out, size_t ldo, const float *q, size_t ldq, int G, const void *kp,      \
                                      const void *vp, int np, const void *k, const void *v, size_t ld_kv,             \
                                      eng_dtype dt, const uint8_t *keep, size_t ld_keep, int S, int D, float *scores) \
    {                                                                                                                  \
        eng_attend_group_run(&(PARTS), out, ldo, q, ldq, G, kp, vp, np, k, v, ld_kv, dt, keep, ld_keep, S, D,        \
                             scores);                                                                                  \
    }                                                                                                                  \
    static void attend_split_##SUFFIX(float *out, const float *q, const void *kp, const void *vp, int np,            \
                                      const void *k, const void *v, eng_dtype dt, const uint8_t *keep, int S, int D,  \
                                      float *scores)                                                                   \
    {                                                                                                                  \
        attend_group_##SUFFIX(out, 0, q, 0, 1, kp, vp, np, k, v, 0, dt, keep, 0, S, D, scores);                       \
    }                                                                                                                  \
    static void attend_##SUFFIX(float *out, const float *q, const void *k, const void *v, eng_dtype dt,              \
                                const uint8_t *keep, int S, int D, float *scores)                                      \
    {                                                                                                                  \
        attend_split_##SUFFIX(out, q, k, v, 0, k, v, dt, keep, S, D, scores);                                         \
    }

/* ---- the column path (kernels_cols.c) ---------------------------------
 * linear for many rows of x (M >= a variant's threshold), vectors along M:
 * x is transposed once per block of rows and chunk of K, xt[k][i] =
 * x[m0 + i, kx + k] (i < mp, zero beyond M), and a panel of np weight rows
 * x kc columns is converted to fp32, pk[j][k] = w[n + j, kb + k] (zero rows
 * beyond n1; fp32 weights are read in place instead, rows K apart, where
 * that does not crowd L1's sets: kernels_cols.c). A tile keeps mv vectors of x rows by nr weight rows in
 * registers:
 *   acc[j][i] += sum_{k < kc} xt[k][i] * pk[j][k]
 * (one broadcast of pk[j][k] per FMA row, no horizontal sums), over all K
 * blocks of a chunk before y is written (once per chunk of 1024 columns).
 * Each y[m, n] is the same fp32 chains in k order whatever the tile, the
 * panel or the split of [n0, n1), so every split gives the same bits. */
enum {
    ENG_COLS_XT_FLOATS = 65536, /* xt on the stack (256 KiB): rows x columns of a chunk */
    ENG_COLS_MC = 64,           /* rows of x per block at most */
    ENG_COLS_NP_MAX = 24,       /* rows of w per panel at most */
    ENG_COLS_KC_MAX = 256,      /* columns per panel at most */
};

/* What a tile prefetches while it computes (the weights of the next panel
 * block, so memory streams during the FMAs): lines 64-byte lines of each of
 * rows rows, row r at base + r * ld. rows = 0: nothing. r is the cursor
 * (0 to start): eng_cols_prefetch_next issues row r's line, then the next
 * row's, then the next line of each row. */
typedef struct eng_cols_prefetch {
    const char *base;
    size_t ld;
    int rows, lines, r;
} eng_cols_prefetch;

/* The k steps of a kc-step tile that prefetch (one line each). */
static inline int eng_cols_prefetch_steps(const eng_cols_prefetch *pf, int kc)
{
    return pf->rows * pf->lines < kc ? pf->rows * pf->lines : kc;
}

static inline void eng_cols_prefetch_next(eng_cols_prefetch *pf)
{
    __builtin_prefetch(pf->base + (size_t)pf->r * pf->ld); /* prefetcht0 */
    if (++pf->r == pf->rows) {
        pf->r = 0;
        pf->base += 64;
    }
}

/* acc[j * ldacc + i] += sum_{k < kc} xt[k * ldxt + i] * pk[j * ldpk + k]
 * for i < mv * lanes, j < nr (the tile's own constants; ldpk is the spec's
 * kc for a panel, K for fp32 weights read in place), prefetching pf one
 * line per k step. */
typedef void (*eng_cols_tile_fn)(const float *xt, size_t ldxt, const float *pk, size_t ldpk, int kc, float *acc,
                                 size_t ldacc, eng_cols_prefetch pf);

/* Where a tile reads its weight rows: row j at k step 0 is
 * g[j / 4] + (j % 4) * ld floats, groups of 4 rows off one base each. In
 * place (ld = K at run time) the few bases and ld, 3 * ld stay in
 * registers, every broadcast addresses base + index * scale (row 0, 1, 2,
 * 3 of a group: + 0, ld * 4, ld * 8, ld3 * 4 bytes), and the bases advance
 * one float per k step; over a panel (IN_PLACE = 0) the constant ld folds
 * into displacements off the bases. */
typedef struct eng_cols_rows {
    const float *g[ENG_COLS_NP_MAX / 4];
    size_t ld, ld3;
} eng_cols_rows;

/* r for nr rows from pk, ld floats apart; in place, ld3 opaque to the
 * compiler, which would otherwise form row 3 of each group with one more
 * instruction per k step (base + 2 ld, then + ld). */
static inline eng_cols_rows eng_cols_rows_at(const float *pk, size_t ld, int nr, int in_place)
{
    eng_cols_rows r = {.ld = ld, .ld3 = 3 * ld};
    if (in_place)
        __asm__("" : "+r"(r.ld3));
    for (int q = 0; q < (nr + 3) / 4; q++)
        r.g[q] = pk + (size_t)(4 * q) * ld;
    return r;
}

/* Row j of r's weights at the current k step. */
static inline const float *eng_cols_row(const eng_cols_rows *r, int j)
{
    const float *g = r->g[j / 4];
    switch (j % 4) {
    case 0: return g;
    case 1: return g + r->ld;
    case 2: return g + 2 * r->ld;
    default: return g + r->ld3;
    }
}

/* The next k step of r's nr rows; in place, opaque to the compiler so that
 * it keeps the bases rather than one derived pointer per row (more than the
 * registers hold). */
static inline void eng_cols_rows_next(eng_cols_rows *r, int nr, int in_place)
{
    for (int q = 0; q < (nr + 3) / 4; q++) {
        r->g[q]++;
        if (in_place)
            __asm__("" : "+r"(r->g[q]));
    }
}

/* Defines a variant's two instances of its col_tile(MV, NR, IN_PLACE, xt,
 * ldxt, pk, ldpk, kc, acc, ldacc, pf): col_tile_NAME over a panel (the
 * variant's constant COLS_KC as the stride, which the broadcasts' addresses
 * fold; ldpk is the spec's kc) and col_tile_NAME_w over fp32 weights in
 * place (rows ldpk floats apart), for eng_cols_spec.tile and .tile_f32. */
#define ENG_COLS_TILES(NAME, MV, NR)                                                                                   \
    static void col_tile_##NAME(const float *xt, size_t ldxt, const float *pk, size_t ldpk, int kc, float *acc,      \
                                size_t ldacc, eng_cols_prefetch pf)                                                    \
    {                                                                                                                  \
        (void)ldpk;                                                                                                    \
        col_tile(MV, NR, 0, xt, ldxt, pk, COLS_KC, kc, acc, ldacc, pf);                                                \
    }                                                                                                                  \
    static void col_tile_##NAME##_w(const float *xt, size_t ldxt, const float *pk, size_t ldpk, int kc, float *acc,  \
                                    size_t ldacc, eng_cols_prefetch pf)                                                \
    {                                                                                                                  \
        col_tile(MV, NR, 1, xt, ldxt, pk, ldpk, kc, acc, ldacc, pf);                                                   \
    }

/* What a variant gives the column path. */
typedef struct eng_cols_spec {
    int lanes;                  /* floats per vector */
    int np;                     /* rows of w per panel, a multiple of both nr */
    int kc;                     /* columns per panel (the tiles' row stride of pk) */
    int nr[2];                  /* rows of w of the tiles with 1 and 2 vectors of x rows */
    eng_cols_tile_fn tile[2];   /* those tiles, over a panel (ldpk = kc) */
    eng_cols_tile_fn tile_f32[2]; /* the same over fp32 weights in place (ldpk = K) */
    /* dst[k] = w[k] in fp32 (int8: q, no scale), k < n: one row of a panel */
    void (*pack_row)(float *dst, const void *w, eng_dtype wt, int n);
    /* dst[i * ldd + j] = src[j * lds + i], i < m, j < n: x into xt, and the
     * accumulators into rows of y */
    void (*transpose)(float *dst, size_t ldd, const float *src, size_t lds, int m, int n);
} eng_cols_spec;

#if defined(__AVX__)
#include <immintrin.h>

/* d[i * ldd + j] = s[j * lds + i] for i, j < 8, in registers (unpack,
 * shuffle, swap of 128-bit halves). */
static inline void eng_cols_transpose_8x8(float *d, size_t ldd, const float *s, size_t lds)
{
    __m256 t[8], u[8];
    for (int r = 0; r < 8; r += 2) {
        const __m256 a = _mm256_loadu_ps(s + (size_t)r * lds), b = _mm256_loadu_ps(s + (size_t)(r + 1) * lds);
        t[r] = _mm256_unpacklo_ps(a, b);
        t[r + 1] = _mm256_unpackhi_ps(a, b);
    }
    for (int h = 0; h < 8; h += 4) { /* rows h..h+3 of s: their columns 0..7, in 4-row halves */
        u[h] = _mm256_shuffle_ps(t[h], t[h + 2], 0x44);
        u[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], 0xee);
        u[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0x44);
        u[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0xee);
    }
    for (int c = 0; c < 4; c++) {
        _mm256_storeu_ps(d + (size_t)c * ldd, _mm256_permute2f128_ps(u[c], u[c + 4], 0x20));
        _mm256_storeu_ps(d + (size_t)(c + 4) * ldd, _mm256_permute2f128_ps(u[c], u[c + 4], 0x31));
    }
}

/* eng_cols_spec.transpose for the AVX variants: 8 x 8 blocks in registers,
 * the edges one value at a time. Strips of 16 rows of dst where there are
 * 16, so each 64-byte line of a row of src is read once (rows of x are often
 * a multiple of 4 KiB apart and evict each other when walked down). */
static inline void eng_cols_transpose_avx(float *dst, size_t ldd, const float *src, size_t lds, int m, int n)
{
    int i = 0;
    while (i + 8 <= m) {
        const int ib = i + 16 <= m ? 16 : 8;
        int j = 0;
        for (; j + 8 <= n; j += 8)
            for (int h = 0; h < ib; h += 8)
                eng_cols_transpose_8x8(dst + (size_t)(i + h) * ldd + j, ldd, src + (size_t)j * lds + i + h, lds);
        for (; j < n; j++)
            for (int r = 0; r < ib; r++)
                dst[(size_t)(i + r) * ldd + j] = src[(size_t)j * lds + i + r];
        i += ib;
    }
    for (; i < m; i++)
        for (int j = 0; j < n; j++)
            dst[(size_t)i * ldd + j] = src[(size_t)j * lds + i];
}
#endif

/* The linear entry's contract (kernels.h) through the column path. */
void eng_linear_cols(const eng_cols_spec *s, float *y, const float *x, const void *w, eng_dtype wt, const float *bias,
                     int M, int K, int N, int n0, int n1, int relu);

/* ---- the direct path at M = 1 (the B = 1 decode step) -------------------- */

enum {
    ENG_ROW_NR = 4,          /* rows of w per 1-row tile */
    ENG_ROW_PF_NEAR = 16384, /* the farthest ahead (bytes) the 1-row tiles prefetch into L1 */
    ENG_ROW_PF_FAR = 65536,  /* how far ahead (bytes) they also prefetch into L2 */
    ENG_ROW_MAX_K = 65536,   /* the longest row of x (floats) eng_linear_row takes */
};

/* out[n] = sum_{k < K} x[k] * w[n * ldw + k] for the tile's rows n (1 to
 * ENG_ROW_NR), x in the pair order of x_in_pairs for bf16 weights; the same
 * rows and columns of near (into L1) and far (into L2) are prefetched, or of
 * w itself when NULL. */
typedef void (*eng_row_fn)(const float *x, const void *w, size_t ldw, int K, const void *near, const void *far,
                           float out[ENG_ROW_NR]);

/* What a variant gives the M = 1 loop. */
typedef struct eng_row_spec {
    eng_row_fn tile[4][ENG_ROW_NR]; /* [dtype][rows - 1] */
    /* xp = x[0, K) in the bf16 tiles' pair order, zero-padded to 2 vectors */
    void (*x_in_pairs)(float *xp, const float *x, int K);
} eng_row_spec;

/* Defines a variant's eng_row_spec `name`: one eng_row_fn per dtype and row
 * count over the variant's always-inline
 * row_tile(int rows, eng_dtype, x, w, ldw, K, near, far, out), and its
 * x_in_pairs. */
#define ENG_ROW_FN_(NR, DT, NAME)                                                                                      \
    static void row_##NAME##_##NR(const float *x, const void *w, size_t ldw, int K, const void *near, const void *far, \
                                  float out[ENG_ROW_NR])                                                               \
    {                                                                                                                  \
        row_tile(NR, DT, x, w, ldw, K, near, far, out);                                                                \
    }
#define ENG_ROW_FNS_(DT, NAME) ENG_ROW_FN_(1, DT, NAME) ENG_ROW_FN_(2, DT, NAME) ENG_ROW_FN_(3, DT, NAME) ENG_ROW_FN_(4, DT, NAME)
#define ENG_ROW_PTRS_(NAME) {row_##NAME##_1, row_##NAME##_2, row_##NAME##_3, row_##NAME##_4}
#define ENG_ROW_SPEC(name, x_in_pairs_fn)                                                                              \
    ENG_ROW_FNS_(ENG_F32, f32)                                                                                         \
    ENG_ROW_FNS_(ENG_F16, f16)                                                                                         \
    ENG_ROW_FNS_(ENG_BF16, bf16)                                                                                       \
    ENG_ROW_FNS_(ENG_I8, i8)                                                                                           \
    static const eng_row_spec name = {                                                                                 \
        .tile = {ENG_ROW_PTRS_(f32), ENG_ROW_PTRS_(f16), ENG_ROW_PTRS_(bf16), ENG_ROW_PTRS_(i8)},                      \
        .x_in_pairs = x_in_pairs_fn,                                                                                   \
    };

/* The linear entry's contract (kernels.h) at M = 1, K <= ENG_ROW_MAX_K: the
 * rows [n0, n1) of w in groups of ENG_ROW_NR, each through the variant's
 * 1-row tile. It prefetches into L1 the next group's rows, or at most
 * ENG_ROW_PF_NEAR bytes ahead (long rows: the lines prefetched and the group
 * being read must stay in L1 together, with x), and into L2 ENG_ROW_PF_FAR
 * bytes ahead (one core needs more lines in flight than L1 holds to cover
 * memory's latency), neither past the rows [n0, n1). */
static inline void eng_linear_row(const eng_row_spec *s, float *y, const float *x, const void *w, eng_dtype wt,
                                  const float *bias, int K, int N, int n0, int n1, int relu)
{
    const size_t es = eng_dtype_size(wt);
    const float *scale = wt == ENG_I8 ? eng_i8_scales(w, (size_t)N, (size_t)K) : NULL; /* int8: per row */
    _Alignas(64) float xp[ENG_ROW_MAX_K];
    const float *xr = x;
    if (wt == ENG_BF16) { /* x in the tiles' pair order, once per call */
        s->x_in_pairs(xp, x, K);
        xr = xp;
    }
    const size_t group_bytes = (size_t)ENG_ROW_NR * K * es;
    const size_t near_bytes = group_bytes < ENG_ROW_PF_NEAR ? group_bytes : ENG_ROW_PF_NEAR;
    const char *const wend = (const char *)w + (size_t)n1 * K * es;
    float out[ENG_ROW_NR];
    for (int n = n0; n < n1; n += ENG_ROW_NR) {
        const int nr = n1 - n < ENG_ROW_NR ? n1 - n : ENG_ROW_NR;
        const char *wn = (const char *)w + (size_t)n * K * es;
        const void *near = n + ENG_ROW_NR < n1 ? wn + near_bytes : NULL;
        const void *far = (size_t)(wend - wn) >= ENG_ROW_PF_FAR + group_bytes ? wn + ENG_ROW_PF_FAR : NULL;
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
