/* probe.h: what the machine probes in this folder share (bandwidth.c, the
 * memory read bandwidth; fmapeak.c, the FMA throughput): a monotonic clock,
 * running one pass of work on T threads that start together, the best and
 * median of R passes, and strict integer options. Header-only (static
 * functions), so each probe still builds with one cc line.
 */
#ifndef BENCHCTL_TOOLS_PROBE_H
#define BENCHCTL_TOOLS_PROBE_H

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { PROBE_MAX_THREADS = 64, PROBE_MAX_REPS = 100 };

static double probe_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The work of one thread in one pass: index in [0, n_threads). */
typedef void (*probe_work_fn)(void *ctx, unsigned index);

/* Shared by the threads of one pass. Owned by probe_pass's stack. */
typedef struct probe_pass_ctx {
    probe_work_fn work;
    void *work_ctx;
    pthread_barrier_t start;
    double t_start;                  /* written by thread 0 after the barrier */
    double t_end[PROBE_MAX_THREADS]; /* each thread's end time */
} probe_pass_ctx;

typedef struct probe_thread_arg {
    probe_pass_ctx *ctx;
    unsigned index;
} probe_thread_arg;

static void *probe_thread_main(void *opaque) {
    probe_thread_arg *arg = opaque;
    probe_pass_ctx *ctx = arg->ctx;
    pthread_barrier_wait(&ctx->start);
    if (arg->index == 0)
        ctx->t_start = probe_now_s();
    ctx->work(ctx->work_ctx, arg->index);
    ctx->t_end[arg->index] = probe_now_s();
    return NULL;
}

/* Runs work on n_threads threads (the caller is thread 0) that leave a
 * barrier together; returns the seconds from then to the last thread's end
 * (a slow thread counts), or -1 on error. tool names the probe in messages. */
static double probe_pass(const char *tool, unsigned n_threads, probe_work_fn work, void *work_ctx) {
    probe_pass_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.work = work;
    ctx.work_ctx = work_ctx;
    if (n_threads < 1 || n_threads > PROBE_MAX_THREADS || pthread_barrier_init(&ctx.start, NULL, n_threads) != 0)
        return -1.0;
    pthread_t tids[PROBE_MAX_THREADS];
    probe_thread_arg args[PROBE_MAX_THREADS];
    for (unsigned t = 1; t < n_threads; ++t) {
        args[t] = (probe_thread_arg){&ctx, t};
        if (pthread_create(&tids[t], NULL, probe_thread_main, &args[t]) != 0) {
            /* The started threads wait at the barrier forever; we cannot
             * recover cleanly, so give up the whole program. */
            fprintf(stderr, "%s: pthread_create failed after %u threads\n", tool, t - 1);
            exit(1);
        }
    }
    args[0] = (probe_thread_arg){&ctx, 0};
    probe_thread_main(&args[0]);
    for (unsigned t = 1; t < n_threads; ++t)
        pthread_join(tids[t], NULL);
    pthread_barrier_destroy(&ctx.start);
    double t_end = ctx.t_end[0];
    for (unsigned t = 1; t < n_threads; ++t)
        if (ctx.t_end[t] > t_end)
            t_end = ctx.t_end[t];
    double seconds = t_end - ctx.t_start;
    return seconds > 0.0 ? seconds : -1.0;
}

static int probe_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The best (largest) and the median of n > 0 values. */
static void probe_best_median(const double *v, unsigned long n, double *best, double *median) {
    double sorted[PROBE_MAX_REPS];
    memcpy(sorted, v, n * sizeof sorted[0]);
    qsort(sorted, n, sizeof sorted[0], probe_cmp_double);
    *best = sorted[n - 1];
    *median = (n % 2) ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

static int probe_parse_uint(const char *tool, const char *flag, const char *text, unsigned long min,
                            unsigned long max, unsigned long *out) {
    char *end = NULL;
    errno = 0;
    unsigned long v = strtoul(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "%s: %s wants an integer in [%lu, %lu], got '%s'\n", tool, flag, min, max, text);
        return -1;
    }
    *out = v;
    return 0;
}

#endif
