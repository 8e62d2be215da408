/* fmapeak: measures this machine's peak multiply-add throughput, in GFLOP/s
 * (one multiply-add = 2 flops), for each kernel family the OPT engine has
 * that this CPU runs (docs/kernels.md):
 *   avx2         8-lane fp32 vfmadd (what the avx2 kernels' inner loops issue),
 *   avx512       16-lane fp32 vfmadd,
 *   avx512_bf16  vdpbf16ps: 16 lanes x 2 bf16 pairs, 4 flops per lane.
 * Each thread runs a loop of independent multiply-add chains held in
 * registers (more chains than latency x ports, so the FMA units are the only
 * limit), with 1 thread and with T threads (default 2), R timed passes each
 * (default 5) after one untimed pass; the best and the median are reported.
 *
 * It is the denominator of docs/performance.md's compute bound, next to the
 * bandwidth probe's memory bound (bandwidth.c): a decode step over R rows
 * does 2 x R x (weights it multiplies) flops, so
 *     fma_bound_ms = flops / (GFLOP/s * 1e9) * 1e3,
 * and a step cannot beat max(bandwidth bound, FMA bound).
 *
 * Build (tools/bench/run_performance.sh does this):
 *     cc -O2 -std=c11 -Wall -Wextra -Werror -pthread \
 *        -o build/fmapeak tools/bandwidth/fmapeak.c
 * or through tools/bandwidth/CMakeLists.txt (target `fmapeak`).
 *
 * Usage: fmapeak [--threads T] [--reps R] [--miters N] [--json PATH]
 *   --miters: millions of loop iterations per thread and pass (default 8).
 *   --json writes {"tool": "fmapeak", "results": [{"kernel", "threads",
 *   "best_gflop_per_s", "median_gflop_per_s", "passes_gflop_per_s": [...]}]}.
 * A standalone tool, not part of benchctl: it prints, and exits non-zero on
 * a bad argument or failure. The machine's load shows in its figures as in
 * any timing: run it in the same script as what it bounds.
 */
#define _DEFAULT_SOURCE /* pthread barriers */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h" /* this folder: threads, timing, options shared with bandwidth.c */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define FP_X86 1
#else
#define FP_X86 0
#endif

/* Runs iters iterations of chains independent multiply-adds; returns a value
 * that depends on all of them (so nothing is optimised away). */
typedef float (*fp_loop_fn)(uint64_t iters);

#if FP_X86
/* The body of every loop: N chains c[i] of type VEC start at SET1(i), each
 * iteration applies STEP(c) to every chain (unrolled, so each chain lives in
 * a register), and s gets their sum (ADD). */
#define FP_CHAINS(VEC, N, SET1, STEP, ADD)                                                                             \
    VEC c[N];                                                                                                          \
    _Pragma("GCC unroll 32") for (int i = 0; i < N; i++) c[i] = SET1((float)i);                                        \
    for (uint64_t n = 0; n < iters; n++)                                                                               \
        _Pragma("GCC unroll 32") for (int i = 0; i < N; i++) c[i] = STEP(c[i]);                                        \
    VEC s = c[0];                                                                                                      \
    for (int i = 1; i < N; i++)                                                                                        \
        s = ADD(s, c[i]);

/* 12 chains of 8 lanes: 12 + 2 of the 16 ymm registers; 12 >= 4-cycle
 * latency x 2 FMA ports with room. c = c * a + b converges to 1: no
 * overflow, no denormals. */
__attribute__((target("avx2,fma"))) static float fp_loop_avx2(uint64_t iters) {
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-6f);
#define FP_STEP(c) _mm256_fmadd_ps(c, a, b)
    FP_CHAINS(__m256, 12, _mm256_set1_ps, FP_STEP, _mm256_add_ps)
#undef FP_STEP
    float lanes[8];
    _mm256_storeu_ps(lanes, s);
    return lanes[0] + lanes[7];
}

/* 16 chains of 16 lanes: 16 + 2 of the 32 zmm registers. */
__attribute__((target("avx512f"))) static float fp_loop_avx512(uint64_t iters) {
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-6f);
#define FP_STEP(c) _mm512_fmadd_ps(c, a, b)
    FP_CHAINS(__m512, 16, _mm512_set1_ps, FP_STEP, _mm512_add_ps)
#undef FP_STEP
    return _mm512_reduce_add_ps(s);
}

/* 16 chains of vdpbf16ps: c += x . y over bf16 pairs; x and y small so the
 * sums stay finite for any iteration count we run. */
__attribute__((target("avx512f,avx512bf16"))) static float fp_loop_avx512_bf16(uint64_t iters) {
    const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3400); /* bf16 2^-23 */
    const __m512bh y = (__m512bh)_mm512_set1_epi16(0x3f80); /* bf16 1 */
#define FP_STEP(c) _mm512_dpbf16_ps(c, x, y)
    FP_CHAINS(__m512, 16, _mm512_set1_ps, FP_STEP, _mm512_add_ps)
#undef FP_STEP
    return _mm512_reduce_add_ps(s);
}
#endif

typedef struct fp_kernel {
    const char *name;
    fp_loop_fn loop;
    double flops_per_iter; /* chains x lanes x flops per lane */
    const char *needs;     /* the CPU features it needs, for the message when they are missing */
} fp_kernel;

static int fp_cpu_runs(const char *name) {
#if FP_X86
    __builtin_cpu_init();
    if (strcmp(name, "avx2") == 0)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (strcmp(name, "avx512") == 0)
        return __builtin_cpu_supports("avx512f");
    if (strcmp(name, "avx512_bf16") == 0)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
#endif
    (void)name;
    return 0;
}

/* One pass's work: every thread runs the loop; sink keeps the results. */
typedef struct fp_work {
    fp_loop_fn loop;
    uint64_t iters;
    float sink[PROBE_MAX_THREADS];
} fp_work;

static void fp_thread_work(void *opaque, unsigned index) {
    fp_work *w = opaque;
    w->sink[index] = w->loop(w->iters);
}

static void fp_usage(FILE *f) {
    fprintf(f, "usage: fmapeak [--threads T] [--reps R] [--miters N] [--json PATH]\n"
               "  Runs multiply-add chains in registers with 1 and T threads (default 2), R timed passes\n"
               "  each (default 5) of N million iterations (default 8), for each kernel family this CPU\n"
               "  runs (avx2, avx512, avx512_bf16), and prints GFLOP/s (multiply-add = 2 flops).\n");
}

int main(int argc, char **argv) {
    unsigned long max_threads = 2, reps = 5, miters = 8;
    const char *json_path = NULL;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fp_usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "fmapeak: %s needs a value\n", a);
            fp_usage(stderr);
            return 2;
        }
        const char *v = argv[++i];
        int rc = 0;
        if (strcmp(a, "--threads") == 0)
            rc = probe_parse_uint("fmapeak", a, v, 1, PROBE_MAX_THREADS, &max_threads);
        else if (strcmp(a, "--reps") == 0)
            rc = probe_parse_uint("fmapeak", a, v, 1, PROBE_MAX_REPS, &reps);
        else if (strcmp(a, "--miters") == 0)
            rc = probe_parse_uint("fmapeak", a, v, 1, 100000, &miters);
        else if (strcmp(a, "--json") == 0)
            json_path = v;
        else {
            fprintf(stderr, "fmapeak: unknown option '%s'\n", a);
            fp_usage(stderr);
            return 2;
        }
        if (rc != 0)
            return 2;
    }

#if FP_X86
    static const fp_kernel kernels[] = {
        {"avx2", fp_loop_avx2, 12 * 8 * 2, "avx2 fma"},
        {"avx512", fp_loop_avx512, 16 * 16 * 2, "avx512f"},
        {"avx512_bf16", fp_loop_avx512_bf16, 16 * 16 * 4, "avx512f avx512bf16"},
    };
    enum { N_KERNELS = 3 };
#else
    static const fp_kernel kernels[1] = {{"none", NULL, 0, ""}};
    enum { N_KERNELS = 0 };
#endif
    FILE *jf = NULL;
    if (json_path) {
        jf = fopen(json_path, "w");
        if (!jf) {
            fprintf(stderr, "fmapeak: cannot write %s: %s\n", json_path, strerror(errno));
            return 1;
        }
        fprintf(jf, "{\n  \"tool\": \"fmapeak\",\n  \"iterations_per_pass\": %llu,\n  \"results\": [",
                (unsigned long long)miters * 1000000ull);
    }
    const uint64_t iters = (uint64_t)miters * 1000000u;
    unsigned thread_counts[2] = {1, (unsigned)max_threads};
    unsigned n_counts = max_threads > 1 ? 2 : 1, n_results = 0;
    float sink = 0.0f;
    printf("fmapeak: %lu M iterations per pass, %lu passes per kernel and thread count (GFLOP = 1e9 flops)\n",
           miters, reps);
    for (int k = 0; k < N_KERNELS; k++) {
        if (!fp_cpu_runs(kernels[k].name)) {
            printf("  %-12s not run: this CPU lacks %s\n", kernels[k].name, kernels[k].needs);
            continue;
        }
        for (unsigned c = 0; c < n_counts; ++c) {
            const unsigned nt = thread_counts[c];
            fp_work w = {.loop = kernels[k].loop, .iters = iters};
            double passes[PROBE_MAX_REPS], best, median;
            if (probe_pass("fmapeak", nt, fp_thread_work, &w) < 0) { /* untimed warm pass */
                fprintf(stderr, "fmapeak: timing failed\n");
                if (jf)
                    fclose(jf);
                return 1;
            }
            for (unsigned long r = 0; r < reps; ++r) {
                double s = probe_pass("fmapeak", nt, fp_thread_work, &w);
                if (s < 0) {
                    fprintf(stderr, "fmapeak: timing failed\n");
                    if (jf)
                        fclose(jf);
                    return 1;
                }
                passes[r] = kernels[k].flops_per_iter * (double)iters * nt / s / 1e9;
            }
            for (unsigned t = 0; t < nt; ++t)
                sink += w.sink[t];
            probe_best_median(passes, reps, &best, &median);
            printf("  %-12s threads %2u: best %8.1f GFLOP/s, median %8.1f GFLOP/s\n", kernels[k].name, nt, best,
                   median);
            if (jf) {
                fprintf(jf, "%s\n    {\"kernel\": \"%s\", \"threads\": %u, \"best_gflop_per_s\": %.2f, "
                            "\"median_gflop_per_s\": %.2f, \"passes_gflop_per_s\": [",
                        n_results ? "," : "", kernels[k].name, nt, best, median);
                for (unsigned long r = 0; r < reps; ++r)
                    fprintf(jf, "%s%.2f", r ? ", " : "", passes[r]);
                fprintf(jf, "]}");
            }
            n_results++;
        }
    }
    /* Printing the sink keeps every chain observable. */
    printf("  (checksum %g)\n", (double)sink);
    int status = 0;
    if (jf) {
        fprintf(jf, "\n  ]\n}\n");
        if (fclose(jf) != 0) {
            fprintf(stderr, "fmapeak: error writing %s\n", json_path);
            status = 1;
        }
    }
    if (n_results == 0) {
        fprintf(stderr, "fmapeak: this CPU runs none of the kernel families (avx2, avx512, avx512_bf16)\n");
        status = 1;
    }
    return status;
}
