/* bw_read.h: the read kernel of the bandwidth probe (bandwidth.c): sums a
 * buffer with the widest loads this CPU has (AVX-512, else AVX2, else a plain
 * 64-bit loop), chosen at run time, so one build runs anywhere. Header-only
 * (static functions), so bandwidth.c still builds with one cc line; also
 * read by tools/bench/bench_b1_bound.c, which streams a model's weights with
 * it to pair a decode step with the time its bytes take to read.
 */
#ifndef BENCHCTL_TOOLS_BW_READ_H
#define BENCHCTL_TOOLS_BW_READ_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define BW_X86 1
#else
#define BW_X86 0
#endif

/* Sums n_bytes at p (n_bytes a multiple of 256, p 64-byte aligned). The
 * result only keeps the loads from being optimized away. */
typedef uint64_t (*bw_read_fn)(const uint64_t *p, size_t n_bytes);

static uint64_t bw_read_plain(const uint64_t *p, size_t n_bytes) {
    size_t n = n_bytes / sizeof(uint64_t);
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i < n; i += 4) {
        s0 += p[i];
        s1 += p[i + 1];
        s2 += p[i + 2];
        s3 += p[i + 3];
    }
    return s0 + s1 + s2 + s3;
}

#if BW_X86
__attribute__((target("avx2"))) static uint64_t bw_read_avx2(const uint64_t *p, size_t n_bytes) {
    const __m256i *v = (const __m256i *)p;
    size_t n = n_bytes / sizeof(__m256i);
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < n; i += 8) {
        a0 = _mm256_add_epi64(a0, _mm256_load_si256(v + i));
        a1 = _mm256_add_epi64(a1, _mm256_load_si256(v + i + 1));
        a2 = _mm256_add_epi64(a2, _mm256_load_si256(v + i + 2));
        a3 = _mm256_add_epi64(a3, _mm256_load_si256(v + i + 3));
        a0 = _mm256_add_epi64(a0, _mm256_load_si256(v + i + 4));
        a1 = _mm256_add_epi64(a1, _mm256_load_si256(v + i + 5));
        a2 = _mm256_add_epi64(a2, _mm256_load_si256(v + i + 6));
        a3 = _mm256_add_epi64(a3, _mm256_load_si256(v + i + 7));
    }
    __m256i a = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
    uint64_t lanes[4];
    _mm256_storeu_si256((__m256i *)lanes, a);
    return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

__attribute__((target("avx512f"))) static uint64_t bw_read_avx512(const uint64_t *p, size_t n_bytes) {
    const __m512i *v = (const __m512i *)p;
    size_t n = n_bytes / sizeof(__m512i);
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < n; i += 4) {
        a0 = _mm512_add_epi64(a0, _mm512_load_si512(v + i));
        a1 = _mm512_add_epi64(a1, _mm512_load_si512(v + i + 1));
        a2 = _mm512_add_epi64(a2, _mm512_load_si512(v + i + 2));
        a3 = _mm512_add_epi64(a3, _mm512_load_si512(v + i + 3));
    }
    __m512i a = _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3));
    /* Unsigned lane sum: _mm512_reduce_add_epi64 adds as signed and trips UBSan. */
    uint64_t lanes[8];
    _mm512_storeu_si512((void *)lanes, a);
    uint64_t s = 0;
    for (int i = 0; i < 8; ++i)
        s += lanes[i];
    return s;
}
#endif

/* Picks the widest kernel the CPU supports; *name gets its static name. */
static bw_read_fn bw_pick_kernel(const char **name) {
#if BW_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        *name = "avx512";
        return bw_read_avx512;
    }
    if (__builtin_cpu_supports("avx2")) {
        *name = "avx2";
        return bw_read_avx2;
    }
#endif
    *name = "plain";
    return bw_read_plain;
}

#endif
