/* kernels_vnni_avx512.c: the W8A8 integer tile with AVX512-VNNI: one zmm
 * vpdpbusd per (row of x, panel of 16 outputs) and quad of k; up to 4 rows x
 * 4 panels = 16 zmm accumulators, each quad's 4 weight lines loaded once for
 * the rows and each row's quad broadcast once for the panels
 * (kernels_vnni.h: layout and arithmetic). Built with -mavx512vnni;
 * eng_vnni_avx512 returns NULL when the compiler lacks it.
 */
#include "kernels_vnni.h"

#if defined(__AVX512F__) && defined(__AVX512VNNI__)
#include <immintrin.h>
#include <string.h>

/* acc += vpdpbusd(x, w). In asm with acc tied to its register: GCC 12 copies
 * the accumulators of the intrinsic in and out of other registers every
 * step (objdump: one vmovdqa per vpdpbusd). */
static inline __attribute__((always_inline)) __m512i dpbusd(__m512i acc, __m512i x, __m512i w)
{
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(w));
    return acc;
}

static inline __attribute__((always_inline)) void tile_zmm(int MR, int NP, int32_t *acc, const uint8_t *xu,
                                                           size_t ldx, const int8_t *wp, size_t Kq)
{
    __m512i a[ENG_VNNI_MR][ENG_VNNI_NP];
    for (int i = 0; i < MR; i++)
        for (int p = 0; p < NP; p++)
            a[i][p] = _mm512_setzero_si512();
    const size_t ldp = Kq * 64; /* bytes between panels */
    for (size_t kq = 0; kq < Kq; kq++) {
        __m512i xb[ENG_VNNI_MR];
        for (int i = 0; i < MR; i++) {
            int32_t q4;
            memcpy(&q4, xu + (size_t)i * ldx + 4 * kq, 4);
            xb[i] = _mm512_set1_epi32(q4);
        }
        for (int p = 0; p < NP; p++) {
            const __m512i wv = _mm512_loadu_si512((const void *)(wp + (size_t)p * ldp + kq * 64));
            for (int i = 0; i < MR; i++)
                a[i][p] = dpbusd(a[i][p], xb[i], wv);
        }
    }
    for (int i = 0; i < MR; i++)
        for (int p = 0; p < NP; p++)
            _mm512_store_si512((void *)(acc + i * 64 + 16 * p), a[i][p]);
}

#define ZMM_BODY(MR, NP, acc, xu, ldx, wp, Kq) tile_zmm(MR, NP, acc, xu, ldx, wp, Kq)
ENG_VNNI_FNS(tile_zmm, ZMM_BODY)
#define ZMM_TILE(MR, NP) tile_zmm_##MR##_##NP

static const eng_vnni_spec vnni_avx512 = {
    .name = "avx512_vnni",
    .mr = ENG_VNNI_MR,
    .np = ENG_VNNI_NP,
    .tile = ENG_VNNI_TILES(ZMM_TILE),
};

const eng_vnni_spec *eng_vnni_avx512(void) { return &vnni_avx512; }
#else
const eng_vnni_spec *eng_vnni_avx512(void) { return NULL; }
#endif
