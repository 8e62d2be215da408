/* kernels_vnni_avx2.c: the W8A8 integer tile with AVX-VNNI (the VEX
 * vpdpbusd on ymm, for AVX2 machines that have it): a panel of 16 outputs
 * is two ymm; up to 4 rows x 1 panel = 8 ymm accumulators, so the weight
 * lines and broadcasts fit the 16 ymm registers (kernels_vnni.h: layout and
 * arithmetic). Built with -mavxvnni; eng_vnni_avx2 returns NULL when the
 * compiler lacks it.
 */
#include "kernels_vnni.h"

#if defined(__AVX2__) && defined(__AVXVNNI__)
#include <immintrin.h>
#include <string.h>

enum { YMM_NP = 1 }; /* panels per tile: 2 ymm each */

/* acc += vpdpbusd(x, w), VEX-encoded, in asm with acc tied to its register
 * (GCC 12 copies the intrinsic's accumulators every step). */
static inline __attribute__((always_inline)) __m256i dpbusd(__m256i acc, __m256i x, __m256i w)
{
    __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(x), "x"(w));
    return acc;
}

static inline __attribute__((always_inline)) void tile_ymm(int MR, int NP, int32_t *acc, const uint8_t *xu,
                                                           size_t ldx, const int8_t *wp, size_t Kq)
{
    __m256i a[ENG_VNNI_MR][2 * YMM_NP];
    for (int i = 0; i < MR; i++)
        for (int h = 0; h < 2 * NP; h++)
            a[i][h] = _mm256_setzero_si256();
    const size_t ldp = Kq * 64;
    for (size_t kq = 0; kq < Kq; kq++) {
        __m256i wv[2 * YMM_NP];
        for (int p = 0; p < NP; p++) {
            wv[2 * p] = _mm256_loadu_si256((const __m256i *)(const void *)(wp + (size_t)p * ldp + kq * 64));
            wv[2 * p + 1] = _mm256_loadu_si256((const __m256i *)(const void *)(wp + (size_t)p * ldp + kq * 64 + 32));
        }
        for (int i = 0; i < MR; i++) {
            int32_t q4;
            memcpy(&q4, xu + (size_t)i * ldx + 4 * kq, 4);
            const __m256i xb = _mm256_set1_epi32(q4);
            for (int h = 0; h < 2 * NP; h++)
                a[i][h] = dpbusd(a[i][h], xb, wv[h]);
        }
    }
    for (int i = 0; i < MR; i++)
        for (int h = 0; h < 2 * NP; h++)
            _mm256_store_si256((__m256i *)(void *)(acc + i * 64 + 8 * h), a[i][h]);
}

/* Only NP = 1 is in the spec (.np = YMM_NP); the wider ones are never called. */
#define YMM_BODY(MR, NP, acc, xu, ldx, wp, Kq) tile_ymm(MR, (NP) < YMM_NP ? (NP) : YMM_NP, acc, xu, ldx, wp, Kq)
ENG_VNNI_FNS(tile_ymm, YMM_BODY)
#define YMM_TILE(MR, NP) tile_ymm_##MR##_##NP

static const eng_vnni_spec vnni_avx2 = {
    .name = "avx_vnni",
    .mr = ENG_VNNI_MR,
    .np = YMM_NP,
    .tile = ENG_VNNI_TILES(YMM_TILE),
};

const eng_vnni_spec *eng_vnni_avx2(void) { return &vnni_avx2; }
#else
const eng_vnni_spec *eng_vnni_avx2(void) { return NULL; }
#endif
