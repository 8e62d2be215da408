/* kernels_vnni.c: the W8A8 linear's driver (activation quantisation, the
 * blocking, the fp32 epilogue), the plain-C integer tile every VNNI tile is
 * tested against, and which tile each kernel family runs (kernels_vnni.h has
 * the layout and the arithmetic).
 */
#include "kernels_vnni.h"

#include <cpuid.h>
#include <pthread.h>

#include "precision.h" /* eng_i8_quantize_row: the one int8 quantiser */

/* ---- the plain-C tile: the reference ------------------------------------ */

/* The portable tile's body: the sums of kernels_vnni.h in int32, quad by
 * quad, the order vpdpbusd adds (any order gives the same integers). */
static inline __attribute__((always_inline)) void tile_portable(int MR, int NP, int32_t *acc, const uint8_t *xu,
                                                                size_t ldx, const int8_t *wp, size_t Kq)
{
    for (int i = 0; i < MR; i++)
        for (int c = 0; c < NP * 16; c++)
            acc[i * 64 + c] = 0;
    for (size_t kq = 0; kq < Kq; kq++)
        for (int p = 0; p < NP; p++) {
            const int8_t *wq = wp + ((size_t)p * Kq + kq) * 64;
            for (int i = 0; i < MR; i++) {
                const uint8_t *xq = xu + (size_t)i * ldx + 4 * kq;
                int32_t *a = acc + i * 64 + 16 * p;
                for (int j = 0; j < 16; j++)
                    a[j] += (int32_t)xq[0] * wq[4 * j] + (int32_t)xq[1] * wq[4 * j + 1] +
                            (int32_t)xq[2] * wq[4 * j + 2] + (int32_t)xq[3] * wq[4 * j + 3];
            }
        }
}

#define PORTABLE_BODY(MR, NP, acc, xu, ldx, wp, Kq) tile_portable(MR, NP, acc, xu, ldx, wp, Kq)
ENG_VNNI_FNS(tile_c, PORTABLE_BODY)
#define PORTABLE_TILE(MR, NP) tile_c_##MR##_##NP

static const eng_vnni_spec vnni_portable = {
    .name = "portable",
    .mr = ENG_VNNI_MR,
    .np = ENG_VNNI_NP,
    .tile = ENG_VNNI_TILES(PORTABLE_TILE),
};

const eng_vnni_spec *eng_vnni_portable(void) { return &vnni_portable; }

/* ---- which tile a family runs ------------------------------------------- */

static int has_avx512_vnni, has_avx_vnni;

static void detect(void)
{
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_max(0, NULL) < 7)
        return;
    __cpuid_count(7, 0, a, b, c, d);
    const unsigned max_sub = a;
    has_avx512_vnni = eng_isa_detect() >= ENG_ISA_AVX512 && (c >> 11 & 1u);
    if (max_sub >= 1) {
        __cpuid_count(7, 1, a, b, c, d);
        has_avx_vnni = eng_isa_detect() >= ENG_ISA_AVX2 && (a >> 4 & 1u);
    }
}

static pthread_once_t detect_once = PTHREAD_ONCE_INIT;

int eng_cpu_has_avx512_vnni(void)
{
    pthread_once(&detect_once, detect);
    return has_avx512_vnni;
}

int eng_cpu_has_avx_vnni(void)
{
    pthread_once(&detect_once, detect);
    return has_avx_vnni;
}

const eng_vnni_spec *eng_vnni_for_family(eng_isa family)
{
    if (family >= ENG_ISA_AVX512 && eng_cpu_has_avx512_vnni() && eng_vnni_avx512())
        return eng_vnni_avx512();
    if (family >= ENG_ISA_AVX2 && eng_cpu_has_avx_vnni() && eng_vnni_avx2())
        return eng_vnni_avx2();
    return &vnni_portable;
}

/* ---- the driver ---------------------------------------------------------- */

void eng_linear_w8a8(const eng_vnni_spec *s, float *y, const float *x, const void *w, const float *bias, int M, int K,
                     int N, int n0, int n1, int relu)
{
    const size_t Kq = eng_w8a8_quads((size_t)K), ldx = 4 * Kq;
    const float *sw = eng_w8a8_scales(w, (size_t)N, (size_t)K);
    const int32_t *corr = eng_w8a8_corrections(w, (size_t)N, (size_t)K);
    _Alignas(64) uint8_t xu[ENG_VNNI_XQ_BYTES];
    float sx[ENG_VNNI_MC];
    _Alignas(64) int32_t acc[ENG_VNNI_MR * 64];
    int mc = (int)(ENG_VNNI_XQ_BYTES / ldx);
    mc = mc > ENG_VNNI_MC ? ENG_VNNI_MC : mc < 1 ? 1 : mc;
    const int p0 = n0 / 16, p1 = (n1 + 15) / 16;
    for (int m0 = 0; m0 < M; m0 += mc) {
        const int rows = M - m0 < mc ? M - m0 : mc;
        for (int r = 0; r < rows; r++) { /* int8 by the weights' rule, then + 128 as u8 */
            uint8_t *xr = xu + (size_t)r * ldx;
            sx[r] = eng_i8_quantize_row((int8_t *)(void *)xr, x + (size_t)(m0 + r) * K, (size_t)K);
            for (size_t k = 0; k < (size_t)K; k++)
                xr[k] ^= 0x80u;
            for (size_t k = (size_t)K; k < ldx; k++)
                xr[k] = 0x80u;
        }
        for (int p = p0; p < p1; p += s->np) {
            const int np = p1 - p < s->np ? p1 - p : s->np;
            const int8_t *wp = (const int8_t *)w + (size_t)p * Kq * 64;
            const int c0 = n0 > 16 * p ? n0 - 16 * p : 0, c1 = n1 < 16 * (p + np) ? n1 - 16 * p : 16 * np;
            for (int r0 = 0; r0 < rows; r0 += s->mr) {
                const int mr = rows - r0 < s->mr ? rows - r0 : s->mr;
                s->tile[mr - 1][np - 1](acc, xu + (size_t)r0 * ldx, ldx, wp, Kq);
                for (int i = 0; i < mr; i++) {
                    const float si = sx[r0 + i];
                    float *yr = y + (size_t)(m0 + r0 + i) * N + 16 * p;
                    const int32_t *ar = acc + i * 64;
                    const int nb = 16 * p;
                    for (int c = c0; c < c1; c++) {
                        const float d = (float)(ar[c] - corr[nb + c]);
                        const float sc = si * sw[nb + c];
                        float v = d * sc;
                        v = v + (bias ? bias[nb + c] : 0.0f);
                        yr[c] = relu && v < 0.0f ? 0.0f : v;
                    }
                }
            }
        }
    }
}
