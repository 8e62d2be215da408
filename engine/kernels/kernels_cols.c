/* kernels_cols.c: the column path of the SIMD linear kernels (kernels_impl.h
 * says what it computes), written once for every variant: the blocking, the
 * packing of x and w and the stores into y are plain C; the register tiles
 * and the weight conversion come from the variant's eng_cols_spec.
 *
 * Loop order, for x[M, K], w[N, K], y[M, N], outputs [n0, n1), at decode
 * sizes (M <= ENG_COLS_MC, one block of rows: linear_cols_by_block):
 *   for each block of mc <= ENG_COLS_MC rows of x:
 *     for each chunk of kx columns (mc * kx <= ENG_COLS_XT_FLOATS: 1024):
 *       xt[kx][mp] = the block's chunk transposed (mp = mc rounded up to the lanes)
 *       for each panel of np weight rows in [n0, n1):
 *         acc[np][mp] = 0
 *         for each block of kc columns: pk[np][kc] = the panel in fp32, then
 *           every tile (1 or 2 vectors of rows by nr weight rows) adds its part
 *         y[m, n] (+)= scale[n] * acc (+ bias[n] on the first chunk, ReLU after the last)
 * and for many more rows (prefill of 8 blocks or more: linear_cols_by_group) of weights that the
 * order above converts for every block of rows (bf16, fp16, fp32 rows a
 * multiple of 2 KiB apart: takes_groups), each converted once per call:
 *   for each chunk of kx columns:
 *     for each group of panels in [n0, n1) (up to COLS_GROUP_BYTES):
 *       g = the group's panels in fp32 over the chunk, kc block by kc block
 *       for each block of mc rows of x:
 *         xt = the block's chunk transposed
 *         for each panel of the group: acc = 0, the tiles over g's kc
 *           blocks in k order, y (+)= acc as above
 * Both give every output the same fp32 chain (acc from 0 over a chunk's kc
 * blocks in k order, then into y), so the same bits. int8 weights, and fp32
 * read in place, keep the first order at every M.
 * At decode sizes the weights are read once per call; in prefill g is read
 * from L2 once per block of rows. With K <= 1024, every output is
 * written once. */
#include "kernels_impl.h"

#include <stdalign.h>
#include <stdlib.h>

/* The most bytes of converted weights a group of panels holds (prefill:
 * every block of rows runs against the group, GotoBLAS's packed B): 384
 * weight rows of a 1024-column chunk, which stay in L2 beside xt (2 MiB per
 * core on the Xeon of docs/kernels.md; a whole layer, read from L3, measured
 * slower). */
enum { COLS_GROUP_BYTES = 1536 << 10 };

/* The fewest blocks of rows that take the group order: its fp32 panels come
 * from L2 for every block, where the decode order converts raw weights from
 * L3 once per block, so it pays only over many blocks (bf16 on the Xeon of
 * docs/kernels.md: 0.93x to 0.97x at 2 blocks, about 1.04x at 8, 1.06x to
 * 1.13x from 16). */
enum { COLS_GROUP_MIN_BLOCKS = 8 };

/* Rows of x per block: ENG_COLS_MC, a multiple of two vectors (so the
 * 2-vector tile runs). */
static int rows_per_block(const eng_cols_spec *s) { return ENG_COLS_MC / (2 * s->lanes) * (2 * s->lanes); }

/* xt[k * mp + i] = x[(m0 + i) * K + k0 + k] for k < kn, i < mc, 0 for
 * mc <= i < mp (the variant's transpose, then the padding). */
static void pack_x_transposed(const eng_cols_spec *s, float *xt, const float *x, int K, int m0, int mc, int mp, int k0,
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
static void store_rows(const eng_cols_spec *s, float *y, int N, int m0, int mc, int n, int nr, const float *acc,
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

/* Where the tiles read, or a pack takes, a panel's weights over one chunk:
 * row j of kc block b at base + b * block + j * row bytes (the weights as
 * stored, rows K elements apart, or a packed fp32 group: kernels_cols.c's
 * top comment). */
typedef struct cols_panel {
    const char *base;
    size_t block, row;
} cols_panel;

/* Panel rows from n, chunk columns from kx, of w as stored. */
static cols_panel panel_stored(const void *w, size_t es, int K, int n, int kx, int kc_max)
{
    return (cols_panel){(const char *)w + ((size_t)n * K + kx) * es, (size_t)kc_max * es, (size_t)K * es};
}

/* acc[j][i] = sum over the chunk's kxn columns of xt[k][i] * w[j][k] for
 * j < nr, i < mp: every tile over each kc block in k order, the weights read
 * from `read` (fp32; in_place: rows `read.row` apart, else a panel of the
 * spec's kc floats per row), or, when pack is given, converted from it into
 * pk block by block first (dtype wt, es bytes). While a block computes, the
 * tiles prefetch the block read (or packed) next: the panel's next block,
 * or after the last one `next`'s first (nrn rows; 0: none). */
static void panel_chunk(const eng_cols_spec *s, const float *xt, int mp, int kxn, cols_panel read, int in_place,
                        const cols_panel *pack, eng_dtype wt, size_t es, int nr, cols_panel next, int nrn, float *pk,
                        float *acc)
{
    const int kc_max = s->kc;
    const cols_panel src = pack ? *pack : read;
    memset(acc, 0, sizeof(float) * (size_t)s->np * mp);
    for (int kb = 0; kb < kxn; kb += kc_max) {
        const int kc = kxn - kb < kc_max ? kxn - kb : kc_max, b = kb / kc_max;
        const float *pb = (const float *)(read.base + b * read.block);
        size_t ldpb = read.row / sizeof(float);
        if (pack) {
            for (int j = 0; j < nr; j++)
                s->pack_row(pk + (size_t)j * kc_max, pack->base + b * pack->block + j * pack->row, wt, kc);
            pb = pk;
            ldpb = (size_t)kc_max;
        }
        /* the block read or packed next: these rows' next columns, or next's first */
        const int more = kb + kc < kxn;
        const char *nb = more ? src.base + (b + 1) * src.block : next.base;
        const size_t nld = more ? src.row : next.row, nes = pack ? es : sizeof(float);
        const int nbr = more ? nr : nrn, knc = more ? (kxn - kb - kc < kc_max ? kxn - kb - kc : kc_max)
                                                    : (kxn < kc_max ? kxn : kc_max);
        for (int i = 0; i < mp;) {
            const int mv = mp - i >= 2 * s->lanes ? 2 : 1;
            const int tr = s->nr[mv - 1];
            for (int j = 0; j < nr; j += tr) {
                eng_cols_prefetch pf = {NULL, 0, 0, 0, 0};
                if (i == 0 && nbr > j) { /* each line once: by the first tile of rows */
                    pf.base = nb + (size_t)j * nld;
                    pf.ld = nld;
                    pf.rows = nbr - j < tr ? nbr - j : tr;
                    pf.lines = (int)(((size_t)knc * nes + 63) / 64);
                }
                (in_place ? s->tile_f32 : s->tile)[mv - 1](xt + (size_t)kb * mp + i, (size_t)mp, pb + (size_t)j * ldpb,
                                                           ldpb, kc, acc + (size_t)j * mp + i, (size_t)mp, pf);
            }
            i += mv * s->lanes;
        }
    }
}

/* Rows of w from n, at most np, before n1 (0 when none). */
static int panel_rows(int n, int n1, int np) { return n1 - n <= 0 ? 0 : n1 - n < np ? n1 - n : np; }

/* Whether a full panel of fp32 weights is read in place rather than packed:
 * unless its rows are a multiple of 2 KiB apart, where half of them or more
 * would share one set of L1 (64 sets of 64-byte lines) and evict each other. */
static int reads_in_place(eng_dtype wt, int K, int nr, int np)
{
    return wt == ENG_F32 && nr == np && (size_t)K * sizeof(float) % 2048 != 0;
}

/* The columns of x per transposed chunk: xt holds a block of rows of them. */
static int chunk_columns(const eng_cols_spec *s) { return ENG_COLS_XT_FLOATS / rows_per_block(s) / s->kc * s->kc; }

/* Bytes of a panel's fp32 weights over the longest chunk of rows K long. */
static size_t panel_bytes(const eng_cols_spec *s, int K)
{
    const int kxn = K < chunk_columns(s) ? K : chunk_columns(s);
    return sizeof(float) * (size_t)s->np * s->kc * (size_t)((kxn + s->kc - 1) / s->kc);
}

/* Panels per group for outputs [n0, n1) of rows K long: all of them, or as
 * many as COLS_GROUP_BYTES holds (at least one). */
static int group_panels(const eng_cols_spec *s, int K, int n0, int n1)
{
    const int all = (n1 - n0 + s->np - 1) / s->np, fit = (int)(COLS_GROUP_BYTES / panel_bytes(s, K));
    return all < fit ? all : fit > 0 ? fit : 1;
}

/* Whether M rows take the group order: COLS_GROUP_MIN_BLOCKS blocks of rows
 * or more, and weights the decode order converts for every block, 2 bytes or more (bf16,
 * fp16, and fp32 rows a multiple of 2 KiB apart). int8 weights come from
 * L3 for a quarter of the group's fp32 bytes, and fp32 read in place has
 * nothing to convert: the group order measured no faster for either
 * (docs/kernels.md). */
static int takes_groups(const eng_cols_spec *s, eng_dtype wt, int M, int K)
{
    return M >= COLS_GROUP_MIN_BLOCKS * rows_per_block(s) && wt != ENG_I8 && !reads_in_place(wt, K, s->np, s->np);
}

/* The order for one block of rows (decode sizes; int8 and fp32 read in place
 * at every M): each panel converted into pk block by block (or read in
 * place) just before its tiles. */
static void linear_cols_by_block(const eng_cols_spec *s, float *y, const float *x, const void *w, eng_dtype wt,
                                 const float *bias, int M, int K, int N, int n0, int n1, int relu)
{
    alignas(64) float xt[ENG_COLS_XT_FLOATS];
    alignas(64) float pk[ENG_COLS_NP_MAX * ENG_COLS_KC_MAX];
    alignas(64) float acc[ENG_COLS_NP_MAX * ENG_COLS_MC];
    alignas(64) float t[ENG_COLS_MC * ENG_COLS_NP_MAX]; /* acc transposed: rows of y */
    const size_t es = eng_dtype_size(wt);
    const float *scale = wt == ENG_I8 ? eng_i8_scales(w, (size_t)N, (size_t)K) : NULL; /* int8: per row */
    const int mc_max = rows_per_block(s), np = s->np, kc_max = s->kc, kx_max = chunk_columns(s);
    for (int m0 = 0; m0 < M; m0 += mc_max) {
        const int mc = M - m0 < mc_max ? M - m0 : mc_max;
        const int mp = (mc + s->lanes - 1) / s->lanes * s->lanes;
        for (int kx = 0; kx < K; kx += kx_max) {
            const int kxn = K - kx < kx_max ? K - kx : kx_max;
            pack_x_transposed(s, xt, x, K, m0, mc, mp, kx, kxn);
            for (int n = n0; n < n1; n += np) {
                const int nr = panel_rows(n, n1, np);
                if (nr < np)
                    memset(pk + (size_t)nr * kc_max, 0, sizeof(float) * (size_t)(np - nr) * kc_max);
                const int in_place = reads_in_place(wt, K, nr, np);
                const int nrn = panel_rows(n + np, n1, np);
                const cols_panel stored = panel_stored(w, es, K, n, kx, kc_max);
                const cols_panel next = nrn ? panel_stored(w, es, K, n + np, kx, kc_max) : (cols_panel){NULL, 0, 0};
                panel_chunk(s, xt, mp, kxn, stored, in_place, in_place ? NULL : &stored, wt, es, nr, next, nrn, pk,
                            acc);
                store_rows(s, y, N, m0, mc, n, nr, acc, (size_t)mp, t, scale, bias, kx == 0, kx + kxn >= K, relu);
            }
        }
    }
}

/* The order for many blocks of rows (prefill): a group of panels converted
 * once per chunk into g (panel p's kc block b: np rows of the spec's kc
 * floats at g + (p * nb + b) * np * kc, nb the chunk's kc blocks), then
 * every block of rows against it. g holds group_panels panels of the
 * longest chunk. */
static void linear_cols_by_group(const eng_cols_spec *s, float *g, float *y, const float *x, const void *w,
                                 eng_dtype wt, const float *bias, int M, int K, int N, int n0, int n1, int relu)
{
    alignas(64) float xt[ENG_COLS_XT_FLOATS];
    alignas(64) float acc[ENG_COLS_NP_MAX * ENG_COLS_MC];
    alignas(64) float t[ENG_COLS_MC * ENG_COLS_NP_MAX]; /* acc transposed: rows of y */
    const size_t es = eng_dtype_size(wt);
    const float *scale = wt == ENG_I8 ? eng_i8_scales(w, (size_t)N, (size_t)K) : NULL; /* int8: per row */
    const int mc_max = rows_per_block(s), np = s->np, kc_max = s->kc, kx_max = chunk_columns(s);
    const int panels = group_panels(s, K, n0, n1);
    for (int kx = 0; kx < K; kx += kx_max) {
        const int kxn = K - kx < kx_max ? K - kx : kx_max, nb = (kxn + kc_max - 1) / kc_max;
        const size_t panel_floats = (size_t)nb * np * kc_max;
        for (int g0 = n0; g0 < n1; g0 += panels * np) {
            const int gp = (panel_rows(g0, n1, panels * np) + np - 1) / np; /* panels in this group */
            for (int p = 0; p < gp; p++) { /* convert the group's panels */
                const int n = g0 + p * np, nr = panel_rows(n, n1, np);
                const cols_panel stored = panel_stored(w, es, K, n, kx, kc_max);
                for (int b = 0; b < nb; b++) {
                    float *pb = g + p * panel_floats + (size_t)b * np * kc_max;
                    const int kc = kxn - b * kc_max < kc_max ? kxn - b * kc_max : kc_max;
                    for (int j = 0; j < nr; j++)
                        s->pack_row(pb + (size_t)j * kc_max, stored.base + b * stored.block + j * stored.row, wt, kc);
                    if (nr < np)
                        memset(pb + (size_t)nr * kc_max, 0, sizeof(float) * (size_t)(np - nr) * kc_max);
                }
            }
            for (int m0 = 0; m0 < M; m0 += mc_max) {
                const int mc = M - m0 < mc_max ? M - m0 : mc_max;
                const int mp = (mc + s->lanes - 1) / s->lanes * s->lanes;
                pack_x_transposed(s, xt, x, K, m0, mc, mp, kx, kxn);
                for (int p = 0; p < gp; p++) {
                    const int n = g0 + p * np, nr = panel_rows(n, n1, np);
                    const int nrn = p + 1 < gp ? panel_rows(n + np, n1, np) : 0;
                    const size_t block = sizeof(float) * (size_t)np * kc_max, row = sizeof(float) * (size_t)kc_max;
                    const cols_panel packed = {(const char *)(g + p * panel_floats), block, row};
                    const cols_panel next = {nrn ? packed.base + sizeof(float) * panel_floats : NULL, block, row};
                    panel_chunk(s, xt, mp, kxn, packed, 0, NULL, wt, es, nr, next, nrn, NULL, acc);
                    store_rows(s, y, N, m0, mc, n, nr, acc, (size_t)mp, t, scale, bias, kx == 0, kx + kxn >= K,
                               relu);
                }
            }
        }
    }
}

void eng_linear_cols(const eng_cols_spec *s, float *y, const float *x, const void *w, eng_dtype wt, const float *bias,
                     int M, int K, int N, int n0, int n1, int relu)
{
    if (takes_groups(s, wt, M, K)) {
        /* the group's panels, owned by this call */
        float *g = aligned_alloc(64, (size_t)group_panels(s, K, n0, n1) * panel_bytes(s, K));
        if (g) {
            linear_cols_by_group(s, g, y, x, w, wt, bias, M, K, N, n0, n1, relu);
            free(g);
            return;
        }
        /* without it, the decode order gives the same bits */
    }
    linear_cols_by_block(s, y, x, w, wt, bias, M, K, N, n0, n1, relu);
}
