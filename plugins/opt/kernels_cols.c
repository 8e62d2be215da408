/* kernels_cols.c: the column path of the SIMD linear kernels (kernels_impl.h
 * says what it computes), written once for every variant: the blocking, the
 * packing of x and w and the stores into y are plain C; the register tiles
 * and the weight conversion come from the variant's opt_cols_spec.
 *
 * Loop order, for x[M, K], w[N, K], y[M, N], outputs [n0, n1):
 *   for each block of mc <= OPT_COLS_MC rows of x:
 *     for each chunk of kx columns (mc * kx <= OPT_COLS_XT_FLOATS: 1024):
 *       xt[kx][mp] = the block's chunk transposed (mp = mc rounded up to the lanes)
 *       for each panel of np weight rows in [n0, n1):
 *         acc[np][mp] = 0
 *         for each block of kc columns: pk[np][kc] = the panel in fp32, then
 *           every tile (1 or 2 vectors of rows by nr weight rows) adds its part
 *         y[m, n] (+)= scale[n] * acc (+ bias[n] on the first chunk, ReLU after the last)
 * The weights are read once per block of rows: once per call at decode sizes
 * (M <= OPT_COLS_MC), and from cache after that for prefill. With K <= 1024,
 * every output is written once.
 */
#include "kernels_impl.h"

#include <stdalign.h>

/* Rows of x per block: OPT_COLS_MC, a multiple of two vectors (so the
 * 2-vector tile runs). */
static int rows_per_block(const opt_cols_spec *s) { return OPT_COLS_MC / (2 * s->lanes) * (2 * s->lanes); }

/* xt[k * mp + i] = x[(m0 + i) * K + k0 + k] for k < kn, i < mc, 0 for
 * mc <= i < mp (the variant's transpose, then the padding). */
static void pack_x_transposed(const opt_cols_spec *s, float *xt, const float *x, int K, int m0, int mc, int mp, int k0,
                              int kn)
{
    s->transpose(xt, (size_t)mp, x + (size_t)m0 * K + k0, (size_t)K, kn, mc);
    if (mc < mp)
        for (int k = 0; k < kn; k++)
            memset(xt + (size_t)k * mp + mc, 0, sizeof(float) * (size_t)(mp - mc));
}

/* y[m0 + i, n + j] from acc[j * ldacc + i] (the sums over one chunk of K),
 * i < mc, j < nr: transposed into t (rows of nr sums), then written with
 * bias on the first chunk, added on later ones, int8 scale on each, ReLU
 * after the last; by rows of y (contiguous stores). */
static void store_rows(const opt_cols_spec *s, float *y, int N, int m0, int mc, int n, int nr, const float *acc,
                       size_t ldacc, float *t, const float *scale, const float *bias, int first, int last, int relu)
{
    s->transpose(t, (size_t)nr, acc, ldacc, mc, nr);
    for (int i = 0; i < mc; i++) {
        float *yr = y + (size_t)(m0 + i) * N + n;
        const float *tr = t + (size_t)i * nr;
        for (int j = 0; j < nr; j++) {
            const float o = scale ? scale[n + j] * tr[j] : tr[j];
            float v = first ? o + (bias ? bias[n + j] : 0.0f) : yr[j] + o;
            if (last && relu && v < 0.0f)
                v = 0.0f;
            yr[j] = v;
        }
    }
}

void opt_linear_cols(const opt_cols_spec *s, float *y, const float *x, const void *w, opt_dtype wt, const float *bias,
                     int M, int K, int N, int n0, int n1, int relu)
{
    alignas(64) float xt[OPT_COLS_XT_FLOATS];
    alignas(64) float pk[OPT_COLS_NP_MAX * OPT_COLS_KC_MAX];
    alignas(64) float acc[OPT_COLS_NP_MAX * OPT_COLS_MC];
    alignas(64) float t[OPT_COLS_MC * OPT_COLS_NP_MAX]; /* acc transposed: rows of y */
    const size_t es = opt_dtype_size(wt);
    const float *scale = wt == OPT_I8 ? opt_i8_scales(w, (size_t)N, (size_t)K) : NULL; /* int8: per row */
    const int mc_max = rows_per_block(s), np = s->np, kc_max = s->kc;
    /* columns of x per transposed chunk: xt holds mc_max rows of them */
    const int kx_max = OPT_COLS_XT_FLOATS / mc_max / kc_max * kc_max;
    for (int m0 = 0; m0 < M; m0 += mc_max) {
        const int mc = M - m0 < mc_max ? M - m0 : mc_max;
        const int mp = (mc + s->lanes - 1) / s->lanes * s->lanes;
        for (int kx = 0; kx < K; kx += kx_max) {
            const int kxn = K - kx < kx_max ? K - kx : kx_max;
            const int first = kx == 0, last = kx + kxn >= K;
            pack_x_transposed(s, xt, x, K, m0, mc, mp, kx, kxn);
            for (int n = n0; n < n1; n += np) {
                const int nr = n1 - n < np ? n1 - n : np;
                memset(acc, 0, sizeof(float) * (size_t)np * mp);
                if (nr < np)
                    memset(pk + (size_t)nr * kc_max, 0, sizeof(float) * (size_t)(np - nr) * kc_max);
                /* fp32 panels of np rows are read in place, not packed, unless
                 * their rows are a multiple of 2 KiB apart: then half of them
                 * or more share one set of L1 (64 sets of 64-byte lines) and
                 * evict each other */
                const int in_place = wt == OPT_F32 && nr == np && (size_t)K * sizeof(float) % 2048 != 0;
                for (int kb = kx; kb < kx + kxn; kb += kc_max) {
                    const int kc = kx + kxn - kb < kc_max ? kx + kxn - kb : kc_max;
                    const float *pb = in_place ? (const float *)w + (size_t)n * K + kb : pk;
                    const size_t ldpb = in_place ? (size_t)K : (size_t)kc_max;
                    for (int j = 0; j < nr && !in_place; j++)
                        s->pack_row(pk + (size_t)j * kc_max, (const char *)w + ((size_t)(n + j) * K + kb) * es, wt,
                                    kc);
                    /* the block packed next: these rows' next columns, or the next panel's first */
                    const int more = kb + kc < kx + kxn;
                    const int nb = more ? n : n + np, kn = more ? kb + kc : kx;
                    const int nbr = n1 - nb < np ? n1 - nb : np;
                    const int knc = kx + kxn - kn < kc_max ? kx + kxn - kn : kc_max;
                    for (int i = 0; i < mp;) {
                        const int mv = mp - i >= 2 * s->lanes ? 2 : 1;
                        const int tr = s->nr[mv - 1];
                        for (int j = 0; j < nr; j += tr) {
                            opt_cols_prefetch pf = {NULL, 0, 0, 0, 0};
                            if (i == 0 && nbr > j) { /* each line once: by the first tile of rows */
                                pf.base = (const char *)w + ((size_t)(nb + j) * K + kn) * es;
                                pf.ld = (size_t)K * es;
                                pf.rows = nbr - j < tr ? nbr - j : tr;
                                pf.lines = (int)(((size_t)knc * es + 63) / 64);
                            }
                            (in_place ? s->tile_f32 : s->tile)[mv - 1](xt + (size_t)(kb - kx) * mp + i, (size_t)mp, pb + (size_t)j * ldpb, ldpb,
                                            kc, acc + (size_t)j * mp + i, (size_t)mp, pf);
                        }
                        i += mv * s->lanes;
                    }
                }
                store_rows(s, y, N, m0, mc, n, nr, acc, (size_t)mp, t, scale, bias, first, last, relu);
            }
        }
    }
}
