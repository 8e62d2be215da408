/* kernels_cols.c: the column path of the SIMD linear kernels (kernels_impl.h
 * says what it computes), written once for every variant: the blocking, the
 * packing of x and w and the stores into y are plain C; the register tiles
 * and the weight conversion come from the variant's opt_cols_spec.
 *
 * Loop order, for x[M, K], w[N, K], y[M, N], outputs [n0, n1):
 *   for each block of mc <= OPT_COLS_MC rows of x (mc * K <= OPT_COLS_XT_FLOATS):
 *     xt[K][mp] = the block transposed (mp = mc rounded up to the lanes)
 *     for each panel of np weight rows in [n0, n1):
 *       acc[np][mp] = 0
 *       for each block of kc columns: pk[np][kc] = the panel in fp32, then
 *         every tile (1 or 2 vectors of rows by nr weight rows) adds its part
 *       y[m, n] = scale[n] * acc + bias[n], ReLU           (once per output)
 * The weights are read once per block of rows: once per call at decode sizes
 * (M <= OPT_COLS_MC), and from cache after that for prefill.
 */
#include "kernels_impl.h"

#include <stdalign.h>

int opt_linear_cols_fits(const opt_cols_spec *s, int M, int K)
{
    return M > 0 && K > 0 && (long)K * s->lanes <= OPT_COLS_XT_FLOATS;
}

/* Rows of x per block: as many as xt holds, at most OPT_COLS_MC, a multiple
 * of two vectors when that many fit (so the 2-vector tile runs), else of one. */
static int rows_per_block(const opt_cols_spec *s, int K)
{
    int mc = OPT_COLS_XT_FLOATS / K;
    if (mc > OPT_COLS_MC)
        mc = OPT_COLS_MC;
    int step = mc >= 2 * s->lanes ? 2 * s->lanes : s->lanes;
    return mc / step * step;
}

/* xt[k * mp + i] = x[(m0 + i) * K + k] for i < mc, 0 for mc <= i < mp.
 * Sixteen columns (one 64-byte line of a row of x) at a time: rows of x are
 * K floats apart, often a multiple of 4 KiB, so walking all mc rows for each
 * k would evict a line of x before its next column is read. */
static void pack_x_transposed(float *xt, const float *x, int K, int m0, int mc, int mp)
{
    for (int k0 = 0; k0 < K; k0 += 16) {
        const int kn = K - k0 < 16 ? K - k0 : 16;
        for (int i = 0; i < mc; i++) {
            const float *xr = x + (size_t)(m0 + i) * K + k0;
            for (int k = 0; k < kn; k++)
                xt[(size_t)(k0 + k) * mp + i] = xr[k];
        }
        for (int k = 0; k < kn; k++)
            for (int i = mc; i < mp; i++)
                xt[(size_t)(k0 + k) * mp + i] = 0.0f;
    }
}

void opt_linear_cols(const opt_cols_spec *s, float *y, const float *x, const void *w, opt_dtype wt, const float *bias,
                     int M, int K, int N, int n0, int n1, int relu)
{
    alignas(64) float xt[OPT_COLS_XT_FLOATS];
    alignas(64) float pk[OPT_COLS_NP_MAX * OPT_COLS_KC_MAX];
    alignas(64) float acc[OPT_COLS_NP_MAX * OPT_COLS_MC];
    const size_t es = opt_dtype_size(wt);
    const float *scale = wt == OPT_I8 ? opt_i8_scales(w, (size_t)N, (size_t)K) : NULL; /* int8: per row */
    const int mc_max = rows_per_block(s, K), np = s->np, kc_max = s->kc;
    for (int m0 = 0; m0 < M; m0 += mc_max) {
        const int mc = M - m0 < mc_max ? M - m0 : mc_max;
        const int mp = (mc + s->lanes - 1) / s->lanes * s->lanes;
        pack_x_transposed(xt, x, K, m0, mc, mp);
        for (int n = n0; n < n1; n += np) {
            const int nr = n1 - n < np ? n1 - n : np;
            memset(acc, 0, sizeof(float) * (size_t)np * mp);
            if (nr < np)
                memset(pk + (size_t)nr * kc_max, 0, sizeof(float) * (size_t)(np - nr) * kc_max);
            for (int kb = 0; kb < K; kb += kc_max) {
                const int kc = K - kb < kc_max ? K - kb : kc_max;
                for (int j = 0; j < nr; j++) {
                    const char *row = (const char *)w + ((size_t)(n + j) * K + kb) * es;
                    s->to_f32(pk + (size_t)j * kc_max, row, wt, (size_t)kc);
                }
                /* the block packed next: these rows' next columns, or the next panel's first */
                const int nb = kb + kc < K ? n : n + np, kn = kb + kc < K ? kb + kc : 0;
                const int nbr = n1 - nb < np ? n1 - nb : np, knc = K - kn < kc_max ? K - kn : kc_max;
                for (int i = 0; i < mp;) {
                    const int mv = mp - i >= 2 * s->lanes ? 2 : 1;
                    const int tr = s->nr[mv - 1];
                    for (int j = 0; j < nr; j += tr) {
                        opt_cols_prefetch pf = {NULL, 0, 0, 0};
                        if (i == 0 && nbr > j) { /* each line once: by the first tile of rows */
                            pf.base = (const char *)w + ((size_t)(nb + j) * K + kn) * es;
                            pf.ld = (size_t)K * es;
                            pf.rows = nbr - j < tr ? nbr - j : tr;
                            pf.lines = (int)(((size_t)knc * es + 63) / 64);
                        }
                        s->tile[mv - 1](xt + (size_t)kb * mp + i, (size_t)mp, pk + (size_t)j * kc_max, kc,
                                        acc + (size_t)j * mp + i, (size_t)mp, pf);
                    }
                    i += mv * s->lanes;
                }
            }
            for (int i = 0; i < mc; i++) { /* by rows of y: contiguous stores */
                float *yr = y + (size_t)(m0 + i) * N + n;
                for (int j = 0; j < nr; j++) {
                    const float a = acc[(size_t)j * mp + i];
                    float v = (scale ? scale[n + j] * a : a) + (bias ? bias[n + j] : 0.0f);
                    if (relu && v < 0.0f)
                        v = 0.0f;
                    yr[j] = v;
                }
            }
        }
    }
}
