/* bandwidth: measures this machine's main-memory read bandwidth, in GB/s.
 *
 * It stream-reads a buffer much larger than the last-level cache (default
 * 1024 MiB; the LLC of the benchmark machine is 32 MiB) with 1 thread and
 * with T threads (default 2), each thread summing its own contiguous slice
 * with the widest loads this CPU has (AVX-512, else AVX2, else a plain
 * 64-bit loop the compiler may vectorize). The kernel is chosen at run time
 * from the CPU's features, so one build runs anywhere.
 *
 * It is the denominator of docs/performance.md's bandwidth bound: a B=1
 * decode step of a model must read every weight once, so
 *     bound_ms = weight_bytes / (GB/s * 1e9) * 1e3.
 *
 * Build (no Makefile needed; tools/bench/run_performance.sh does this):
 *     cc -O2 -std=c11 -Wall -Wextra -Werror -pthread \
 *        -o build/bandwidth tools/bandwidth/bandwidth.c
 * or through tools/bandwidth/CMakeLists.txt (target `bandwidth`).
 *
 * Usage: bandwidth [--mib N] [--threads T] [--reps R] [--thp 0|1] [--json PATH]
 *   Each thread count is measured R times (default 5) after one untimed pass;
 *   the best and the median pass are reported. GB = 1e9 bytes. --thp 1
 *   (default) asks for transparent huge pages with madvise.
 *   --json writes {"buffer_bytes", "kernel", "results": [{"threads",
 *   "best_gb_per_s", "median_gb_per_s", "passes_gb_per_s": [...]}]}.
 *
 * A pass's time runs from a barrier all threads leave together to the last
 * thread's end, so a slow thread counts. This is a standalone tool, not part
 * of benchctl: it prints, and exits non-zero on a bad argument or failure.
 */
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "bw_read.h" /* this folder: the read kernels, shared with tools/bench/bench_b1_bound.c */
#include "probe.h"   /* this folder: threads, timing, options shared with fmapeak.c */

enum { BW_MAX_THREADS = PROBE_MAX_THREADS, BW_MAX_REPS = PROBE_MAX_REPS, BW_ALIGN = 4096 };

/* One pass's work: thread index sums its own slice. */
typedef struct bw_work {
    const unsigned char *buf;
    size_t slice_bytes; /* per thread, a multiple of 256 */
    bw_read_fn read;
    uint64_t sink[BW_MAX_THREADS]; /* keeps the sums alive */
} bw_work;

static void bw_thread_work(void *opaque, unsigned index) {
    bw_work *w = opaque;
    w->sink[index] = w->read((const uint64_t *)(w->buf + (size_t)index * w->slice_bytes), w->slice_bytes);
}

/* One pass over n_threads * slice_bytes bytes; returns GB/s, or -1 on error. */
static double bw_pass(const unsigned char *buf, size_t slice_bytes, unsigned n_threads, bw_read_fn read,
                      uint64_t *sink) {
    bw_work w = {.buf = buf, .slice_bytes = slice_bytes, .read = read};
    double seconds = probe_pass("bandwidth", n_threads, bw_thread_work, &w);
    for (unsigned t = 0; t < n_threads; ++t)
        *sink += w.sink[t];
    return seconds > 0.0 ? (double)slice_bytes * n_threads / seconds / 1e9 : -1.0;
}

static void bw_usage(FILE *f) {
    fprintf(f, "usage: bandwidth [--mib N] [--threads T] [--reps R] [--thp 0|1] [--json PATH]\n"
               "  Stream-reads an N MiB buffer (default 1024) with 1 and T threads (default 2),\n"
               "  R timed passes each (default 5), and prints the read bandwidth in GB/s.\n"
               "  --thp 1 (default) asks for transparent huge pages (madvise).\n");
}

int main(int argc, char **argv) {
    unsigned long mib = 1024, max_threads = 2, reps = 5, use_thp = 1;
    const char *json_path = NULL;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            bw_usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "bandwidth: %s needs a value\n", a);
            bw_usage(stderr);
            return 2;
        }
        const char *v = argv[++i];
        int rc = 0;
        if (strcmp(a, "--mib") == 0)
            rc = probe_parse_uint("bandwidth", a, v, 64, 1UL << 20, &mib);
        else if (strcmp(a, "--threads") == 0)
            rc = probe_parse_uint("bandwidth", a, v, 1, BW_MAX_THREADS, &max_threads);
        else if (strcmp(a, "--reps") == 0)
            rc = probe_parse_uint("bandwidth", a, v, 1, BW_MAX_REPS, &reps);
        else if (strcmp(a, "--thp") == 0)
            rc = probe_parse_uint("bandwidth", a, v, 0, 1, &use_thp);
        else if (strcmp(a, "--json") == 0)
            json_path = v;
        else {
            fprintf(stderr, "bandwidth: unknown option '%s'\n", a);
            bw_usage(stderr);
            return 2;
        }
        if (rc != 0)
            return 2;
    }

    const char *kernel_name = NULL;
    bw_read_fn read = bw_pick_kernel(&kernel_name);

    /* One buffer, owned by main, freed at the end. Every slice is a multiple
     * of 256 bytes so the unrolled kernels need no tail. */
    size_t buf_bytes = (size_t)mib << 20;
    unsigned char *buf = NULL;
    if (posix_memalign((void **)&buf, BW_ALIGN, buf_bytes) != 0) {
        fprintf(stderr, "bandwidth: cannot allocate %lu MiB\n", mib);
        return 1;
    }
#ifdef MADV_HUGEPAGE
    /* Ask for transparent huge pages where THP is in "madvise" mode, so TLB
     * misses do not cap the stream; harmless where THP is off. */
    if (use_thp)
        (void)madvise(buf, buf_bytes, MADV_HUGEPAGE);
#endif
    /* Touch every page with non-zero data so reads hit real memory. */
    for (size_t i = 0; i < buf_bytes; i += sizeof(uint64_t)) {
        uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ULL;
        memcpy(buf + i, &x, sizeof x);
    }

    unsigned thread_counts[2] = {1, (unsigned)max_threads};
    unsigned n_counts = max_threads > 1 ? 2 : 1;
    double best[2] = {0}, median[2] = {0};
    double passes[2][BW_MAX_REPS];
    uint64_t sink = 0;

    printf("bandwidth: %lu MiB buffer, kernel %s, thp %s, %lu passes per thread count (GB = 1e9 B)\n", mib,
           kernel_name, use_thp ? "madvise" : "off", reps);
    for (unsigned k = 0; k < n_counts; ++k) {
        unsigned nt = thread_counts[k];
        size_t slice = (buf_bytes / nt) & ~(size_t)255;
        if (bw_pass(buf, slice, nt, read, &sink) < 0) { /* untimed warm pass */
            fprintf(stderr, "bandwidth: timing failed\n");
            free(buf);
            return 1;
        }
        for (unsigned long r = 0; r < reps; ++r) {
            double gbs = bw_pass(buf, slice, nt, read, &sink);
            if (gbs < 0) {
                fprintf(stderr, "bandwidth: timing failed\n");
                free(buf);
                return 1;
            }
            passes[k][r] = gbs;
        }
        probe_best_median(passes[k], reps, &best[k], &median[k]);
        printf("  threads %2u: best %7.2f GB/s, median %7.2f GB/s\n", nt, best[k], median[k]);
    }
    /* Printing the sink keeps every load observable. */
    printf("  (checksum %016llx)\n", (unsigned long long)sink);

    int status = 0;
    if (json_path) {
        FILE *f = fopen(json_path, "w");
        if (!f) {
            fprintf(stderr, "bandwidth: cannot write %s: %s\n", json_path, strerror(errno));
            status = 1;
        } else {
            fprintf(f, "{\n  \"tool\": \"bandwidth\",\n  \"buffer_bytes\": %zu,\n  \"kernel\": \"%s\",\n", buf_bytes,
                    kernel_name);
            fprintf(f, "  \"thp_madvise\": %s,\n", use_thp ? "true" : "false");
            fprintf(f, "  \"results\": [\n");
            for (unsigned k = 0; k < n_counts; ++k) {
                fprintf(f, "    {\"threads\": %u, \"best_gb_per_s\": %.3f, \"median_gb_per_s\": %.3f, \"passes_gb_per_s\": [",
                        thread_counts[k], best[k], median[k]);
                for (unsigned long r = 0; r < reps; ++r)
                    fprintf(f, "%s%.3f", r ? ", " : "", passes[k][r]);
                fprintf(f, "]}%s\n", k + 1 < n_counts ? "," : "");
            }
            fprintf(f, "  ]\n}\n");
            if (fclose(f) != 0) {
                fprintf(stderr, "bandwidth: error writing %s\n", json_path);
                status = 1;
            }
        }
    }
    free(buf);
    return status;
}
