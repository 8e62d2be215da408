/* pool.c: the engine's thread pool and eng_linear_parallel.
 *
 * n_threads - 1 persistent pthreads plus the caller. A run of n indices
 * (n = the active count, eng_pool_set_active: n_threads unless lowered):
 *   1. the caller stores fn/ctx, sets `remaining` = n - 1 and `claim` =
 *      (n, next index 1), and bumps `generation`;
 *   2. a worker that is spinning on `generation` sees it at once; one that
 *      has spun for too long sleeps on a condition variable, so the caller
 *      broadcasts only when `sleepers` > 0;
 *   3. the caller runs index 0; every thread, the caller included, then
 *      claims indices from `claim` (a compare-and-swap of the next index,
 *      which carries the run's n beside it) until they run out, runs each
 *      and decrements `remaining`; the caller spins on `remaining`, then
 *      sleeps the same way. Claiming means that when a worker is not
 *      scheduled (a 2-core machine shared with other processes) the caller
 *      runs its index instead of waiting a whole time slice for it.
 * So an index is a unit of work, not a thread identity: it runs exactly once,
 * on some pool thread. A worker that wakes late may claim an index of the
 * next run; that is safe because the caller resets `claim` only after the
 * previous run's indices are all done, and fn/ctx are published before it;
 * n travels in the same word as the index, so a claimer never pairs one
 * run's index with another run's n when the active count changes.
 * The wake-up handshake is Dekker style on seq_cst atomics: the waiter
 * publishes itself (sleepers / caller_waiting) before rechecking the
 * condition under the mutex; the notifier changes the condition before
 * reading the waiter flag. One of the two always sees the other.
 *
 * Every field written by one thread and read by others sits on its own
 * 64-byte line, and each worker's slot is padded to 64 bytes (no false
 * sharing). Spinning is bounded (POOL_SPIN_NS) so idle workers do not burn a
 * core between decode steps on a shared machine, and a spinning thread calls
 * sched_yield every 256 pauses: when another process holds the second core
 * and the caller and a worker share one, the spinner must not hold the core
 * for its whole time slice while the other has the work.
 */
#define _POSIX_C_SOURCE 200809L
#include "kernels.h"

#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

/* How long a thread spins before it sleeps, in nanoseconds. Long enough to
 * bridge the gap between two linears of a decode step (layer norm,
 * attention: tens of microseconds), short enough not to hog a shared core. */
#define POOL_SPIN_NS 200000L
/* With more threads than CPUs a spinning thread only delays the one it waits
 * for, so an oversubscribed pool barely spins. */
#define POOL_SPIN_NS_OVERSUBSCRIBED 2000L

typedef struct pool_worker {
    alignas(64) struct eng_pool *pool;
    pthread_t thread;
    int index;
    int started;
} pool_worker;

struct eng_pool {
    /* written by the caller once per run, read by every worker: one line, so
     * a worker's wake-up costs one cache-line transfer */
    alignas(64) atomic_uint generation; /* bumped by the caller per run */
    void (*fn)(void *ctx, int i, int n);
    void *ctx;
    int n_threads;
    int active;                         /* indices per run, [1, n_threads]; the caller's */
    /* (n << 32) | next index: the run's index count and the next index to
     * claim, one word so a claim reads both from the same run */
    alignas(64) atomic_ullong claim;
    alignas(64) atomic_int remaining;   /* indices 1..n-1 not yet done */
    alignas(64) atomic_int sleepers;    /* workers in (or entering) cond_wait */
    atomic_int caller_waiting;          /* the caller is in (or entering) cond_wait */
    atomic_int stop;
    long spin_ns; /* how long to spin before sleeping */
    pthread_mutex_t mu;
    pthread_cond_t wake; /* workers wait here for a new generation */
    pthread_cond_t done; /* the caller waits here for remaining == 0 */
    pool_worker *workers; /* [n_threads - 1], owned by the pool */
};

static long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Claims and runs indices until none are left. fn/ctx are read after the
 * claim, which synchronises with the caller's store of `claim`. */
static void run_claimed(eng_pool *p, int notify)
{
    for (;;) {
        unsigned long long c = atomic_load(&p->claim);
        int i, n;
        do {
            n = (int)(c >> 32);
            i = (int)(c & 0xffffffffu);
            if (i >= n)
                return;
        } while (!atomic_compare_exchange_weak(&p->claim, &c, c + 1));
        p->fn(p->ctx, i, n);
        if (atomic_fetch_sub(&p->remaining, 1) == 1 && notify && atomic_load(&p->caller_waiting)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

static void *worker_main(void *arg)
{
    pool_worker *self = arg;
    eng_pool *p = self->pool;
    unsigned seen = 0; /* the generation at creation: a run may come before this thread starts */
    for (;;) {
        /* spin, checking the clock only now and then */
        unsigned g = atomic_load_explicit(&p->generation, memory_order_acquire);
        if (g == seen) {
            long t0 = now_ns();
            for (int it = 1;; it++) {
                cpu_relax();
                g = atomic_load_explicit(&p->generation, memory_order_acquire);
                if (g != seen)
                    break;
                if ((it & 255) == 0) {
                    if (now_ns() - t0 > p->spin_ns)
                        break;
                    sched_yield(); /* lets a thread that shares this core (the caller) run */
                }
            }
        }
        if (g == seen) {
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleepers, 1);
            while ((g = atomic_load(&p->generation)) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->wake, &p->mu);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop))
            return NULL;
        seen = g;
        run_claimed(p, 1);
    }
}

int eng_online_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* The first CPU a sysfs list such as "0-1,4" names; -1 when unreadable. */
static int first_listed_cpu(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int cpu = -1;
    if (fscanf(f, "%d", &cpu) != 1)
        cpu = -1;
    fclose(f);
    return cpu;
}

int eng_physical_cores(void)
{
    const int online = eng_online_cores();
    int cores = 0;
    for (int cpu = 0; cpu < online; cpu++) {
        char path[128];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
        const int first = first_listed_cpu(path);
        if (first < 0)
            return online; /* no topology (or offline CPUs among the first ones): every CPU a core */
        cores += first == cpu; /* a core counted once, at its first sibling */
    }
    return cores > 0 ? cores : online;
}

eng_pool *eng_pool_create(int n_threads)
{
    if (n_threads < 1)
        n_threads = 1;
    eng_pool *p = aligned_alloc(64, (sizeof(eng_pool) + 63) / 64 * 64);
    if (!p)
        return NULL;
    atomic_init(&p->generation, 0);
    atomic_init(&p->claim, (unsigned long long)n_threads << 32 | (unsigned)n_threads);
    atomic_init(&p->remaining, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->caller_waiting, 0);
    atomic_init(&p->stop, 0);
    p->fn = NULL;
    p->ctx = NULL;
    p->n_threads = n_threads;
    p->active = n_threads;
    p->spin_ns = n_threads > eng_online_cores() ? POOL_SPIN_NS_OVERSUBSCRIBED : POOL_SPIN_NS;
    p->workers = NULL;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    if (n_threads == 1)
        return p;
    size_t wbytes = (size_t)(n_threads - 1) * sizeof(pool_worker);
    p->workers = aligned_alloc(64, (wbytes + 63) / 64 * 64);
    if (!p->workers) {
        eng_pool_destroy(p);
        return NULL;
    }
    for (int i = 0; i < n_threads - 1; i++) {
        p->workers[i].pool = p;
        p->workers[i].index = i + 1;
        p->workers[i].started = 0;
    }
    for (int i = 0; i < n_threads - 1; i++) {
        if (pthread_create(&p->workers[i].thread, NULL, worker_main, &p->workers[i]) != 0) {
            eng_pool_destroy(p);
            return NULL;
        }
        p->workers[i].started = 1;
    }
    return p;
}

int eng_pool_size(const eng_pool *p) { return p ? p->n_threads : 1; }

int eng_pool_active(const eng_pool *p) { return p ? p->active : 1; }

int eng_pool_set_active(eng_pool *p, int n)
{
    if (!p)
        return 1;
    if (n < 1 || n > p->n_threads)
        n = p->n_threads;
    const int before = p->active;
    p->active = n;
    return before;
}

void eng_pool_run(eng_pool *p, void (*fn)(void *ctx, int i, int n), void *ctx)
{
    if (!p || p->active == 1) {
        fn(ctx, 0, 1);
        return;
    }
    const int n = p->active;
    p->fn = fn;
    p->ctx = ctx;
    atomic_store(&p->remaining, n - 1);
    atomic_store(&p->claim, (unsigned long long)n << 32 | 1u); /* seq_cst: publishes fn, ctx, remaining */
    atomic_fetch_add(&p->generation, 1); /* seq_cst: wakes the spinning workers */
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    fn(ctx, 0, n);
    run_claimed(p, 0);
    if (atomic_load_explicit(&p->remaining, memory_order_acquire) != 0) {
        long t0 = now_ns();
        for (int it = 1; atomic_load_explicit(&p->remaining, memory_order_acquire) != 0; it++) {
            cpu_relax();
            if ((it & 255) == 0) {
                if (now_ns() - t0 > p->spin_ns)
                    break;
                sched_yield(); /* lets a worker that shares this core finish */
            }
        }
    }
    if (atomic_load(&p->remaining) != 0) {
        pthread_mutex_lock(&p->mu);
        atomic_store(&p->caller_waiting, 1);
        while (atomic_load(&p->remaining) != 0)
            pthread_cond_wait(&p->done, &p->mu);
        atomic_store(&p->caller_waiting, 0);
        pthread_mutex_unlock(&p->mu);
    }
}

void eng_pool_destroy(eng_pool *p)
{
    if (!p)
        return;
    if (p->workers) {
        pthread_mutex_lock(&p->mu);
        atomic_store(&p->stop, 1);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
        for (int i = 0; i < p->n_threads - 1; i++)
            if (p->workers[i].started)
                pthread_join(p->workers[i].thread, NULL);
        free(p->workers);
    }
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* ---- eng_linear_parallel ----------------------------------------------- */

typedef struct linear_job {
    const eng_kernels *k;
    float *y;
    const float *x;
    const void *w;
    const float *bias;
    eng_dtype wt;
    int M, K, N, relu;
} linear_job;

#define LINEAR_BLOCK 16 /* outputs per 64-byte line of y */

static void linear_part(void *ctx, int i, int n)
{
    const linear_job *j = ctx;
    int blocks = (j->N + LINEAR_BLOCK - 1) / LINEAR_BLOCK;
    int b0 = (int)((long)blocks * i / n), b1 = (int)((long)blocks * (i + 1) / n);
    int n0 = b0 * LINEAR_BLOCK, n1 = b1 * LINEAR_BLOCK;
    if (n1 > j->N)
        n1 = j->N;
    if (n0 < n1)
        j->k->linear(j->y, j->x, j->w, j->wt, j->bias, j->M, j->K, j->N, n0, n1, j->relu);
}

void eng_linear_parallel(eng_pool *pool, const eng_kernels *k, float *y, const float *x, const void *w, eng_dtype wt,
                         const float *bias, int M, int K, int N, int relu)
{
    linear_job j = {k, y, x, w, bias, wt, M, K, N, relu};
    if (!pool || pool->active == 1 || N <= LINEAR_BLOCK) {
        k->linear(y, x, w, wt, bias, M, K, N, 0, N, relu);
        return;
    }
    eng_pool_run(pool, linear_part, &j);
}
