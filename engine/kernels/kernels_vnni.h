/* kernels_vnni.h: private to the kernel files. The W8A8 linear (weights
 * ENG_W8A8, activations quantised per row on the fly) with integer dot
 * products: one driver (kernels_vnni.c) over a family's integer tile, plain C
 * (the reference, and the fallback where the CPU has no VNNI), AVX512-VNNI
 * (zmm vpdpbusd, kernels_vnni_avx512.c) or AVX-VNNI (ymm vpdpbusd,
 * kernels_vnni_avx2.c).
 *
 * Dimension legend: M rows of x, K columns (the reduction), N outputs
 * (weight rows); Kq = ceil(K / 4) quads of k; P = ceil(N / 16) panels.
 *
 * Weight pack layout (kernels.h, eng_matrix_bytes of ENG_W8A8), made at load
 * by eng_w8a8_pack_row (precision.c):
 *   byte ((p * Kq + kq) * 16 + j) * 4 + t  =  q[16 p + j, 4 kq + t]
 * for panel p, quad kq, lane j < 16, t < 4: one 64-byte line per (panel,
 * quad) is one zmm (two ymm) of vpdpbusd's signed operand, lane j holding
 * four consecutive k of output 16 p + j; rows beyond N and k beyond K are 0.
 * Then N fp32 scales sw[n] (the int8 quantiser's, eng_i8_quantize_row) and
 * N int32 corrections corr[n] = 128 * sum_k q[n, k].
 *
 * Activations, per call and row m: sx[m] = the int8 quantiser's scale of
 * x[m, :], xs[m, k] its int8 values (eng_i8_quantize_row, the weights' rule),
 * stored as u8 xu[m, k] = xs[m, k] + 128 (vpdpbusd multiplies u8 by s8), k
 * beyond K padded with 128. Then, exactly in int32,
 *   acc[m, n] = sum_k xu[m, k] * q[n, k],   dot = acc[m, n] - corr[n]
 *             = sum_k xs[m, k] * q[n, k]
 * (|xu * q| <= 255 * 127, so K <= ENG_W8A8_MAX_K keeps acc in int32), and in
 * fp32, in this order, for every family:
 *   y[m, n] = (float)dot * (sx[m] * sw[n]) + bias[n], then ReLU.
 * Every family's integer tile gives the same int32 acc and the epilogue is
 * the driver's one loop, so all families give the same bits
 * (tests/engine/test_w8a8.c).
 */
#ifndef ENG_KERNELS_VNNI_H
#define ENG_KERNELS_VNNI_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

enum {
    ENG_W8A8_MAX_K = 65536,     /* the longest row of x (int32 accumulators cannot overflow) */
    ENG_VNNI_MR = 4,            /* rows of x per tile at most */
    ENG_VNNI_NP = 4,            /* panels (16 outputs each) per tile at most */
    ENG_VNNI_XQ_BYTES = 131072, /* quantised rows of x on the stack */
    ENG_VNNI_MC = 256,          /* rows of x quantised per block at most */
};

/* acc[i * 64 + 16 * p + j] = sum_{kq < Kq, t < 4} xu[i * ldx + 4 kq + t] *
 * wp[(p * Kq + kq) * 64 + 4 j + t]  for rows i < MR, panels p < NP, lanes
 * j < 16 (MR, NP: the tile's own constants). */
typedef void (*eng_vnni_tile_fn)(int32_t *acc, const uint8_t *xu, size_t ldx, const int8_t *wp, size_t Kq);

/* What a family gives the W8A8 driver. */
typedef struct eng_vnni_spec {
    const char *name;                                /* "portable", "avx_vnni", "avx512_vnni" */
    int mr, np;                                      /* the largest tile: rows of x, panels */
    eng_vnni_tile_fn tile[ENG_VNNI_MR][ENG_VNNI_NP]; /* [rows - 1][panels - 1] */
} eng_vnni_spec;

const eng_vnni_spec *eng_vnni_portable(void); /* kernels_vnni.c, always */
const eng_vnni_spec *eng_vnni_avx2(void);     /* kernels_vnni_avx2.c: NULL when built without AVX-VNNI */
const eng_vnni_spec *eng_vnni_avx512(void);   /* kernels_vnni_avx512.c: NULL when built without AVX512-VNNI */

/* Does this CPU (and OS) run the avx512_vnni / avx_vnni tile? cpuid leaf 7
 * (ECX bit 11; subleaf 1 EAX bit 4) on top of the avx512 / avx2 tier. */
int eng_cpu_has_avx512_vnni(void);
int eng_cpu_has_avx_vnni(void);

/* The W8A8 tile a kernel family runs: avx512 and avx512_bf16 the
 * avx512_vnni tile where the CPU has it, else the avx_vnni one, avx2 the
 * avx_vnni tile, every family the portable one where its CPU has neither.
 * Never NULL. */
const eng_vnni_spec *eng_vnni_for_family(eng_isa family);

/* The linear entry's contract (kernels.h) for ENG_W8A8 through spec s. */
void eng_linear_w8a8(const eng_vnni_spec *s, float *y, const float *x, const void *w, const float *bias, int M, int K,
                     int N, int n0, int n1, int relu);

/* The tiles of a spec, [rows - 1][panels - 1], from a macro TILE(MR, NP)
 * naming the function of that shape. */
#define ENG_VNNI_ROW_(TILE, MR) {TILE(MR, 1), TILE(MR, 2), TILE(MR, 3), TILE(MR, 4)}
#define ENG_VNNI_TILES(TILE)                                                                                           \
    {ENG_VNNI_ROW_(TILE, 1), ENG_VNNI_ROW_(TILE, 2), ENG_VNNI_ROW_(TILE, 3), ENG_VNNI_ROW_(TILE, 4)}
/* Defines tile functions NAME_MR_NP for MR, NP in 1..4 over an always-inline
 * BODY(MR, NP, acc, xu, ldx, wp, Kq). */
#define ENG_VNNI_FN_(NAME, BODY, MR, NP)                                                                               \
    static void NAME##_##MR##_##NP(int32_t *acc, const uint8_t *xu, size_t ldx, const int8_t *wp, size_t Kq)          \
    {                                                                                                                  \
        BODY(MR, NP, acc, xu, ldx, wp, Kq);                                                                            \
    }
#define ENG_VNNI_FNS_ROW_(NAME, BODY, MR)                                                                              \
    ENG_VNNI_FN_(NAME, BODY, MR, 1) ENG_VNNI_FN_(NAME, BODY, MR, 2) ENG_VNNI_FN_(NAME, BODY, MR, 3)                    \
        ENG_VNNI_FN_(NAME, BODY, MR, 4)
#define ENG_VNNI_FNS(NAME, BODY)                                                                                       \
    ENG_VNNI_FNS_ROW_(NAME, BODY, 1) ENG_VNNI_FNS_ROW_(NAME, BODY, 2) ENG_VNNI_FNS_ROW_(NAME, BODY, 3)                 \
        ENG_VNNI_FNS_ROW_(NAME, BODY, 4)

#endif
