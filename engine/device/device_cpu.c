/* device_cpu.c: the CPU device (device.h): the model of model.h on a thread
 * pool, the case's cache (KV caches, logits, samplers, the model's
 * workspace) in the eng_rollout, and the rollout loop's steps on it.
 * Timing marks are wall-clock readings (CLOCK_MONOTONIC) in ro->marks.
 */
#define _POSIX_C_SOURCE 200809L
#include "device.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h> /* malloc_trim */
#endif

#include "clock.h"

/* ------------------------------------------------------------------ cache */

/* The bytes of ro's cache as allocated (0 when released): KV caches, logits,
 * samplers and m's workspace. */
static void cache_held(const eng_rollout *ro, const eng_model *m, int64_t *kv, int64_t *ws) {
    *kv = *ws = 0;
    if (!ro->have_cache) return;
    *kv = (int64_t)(ro->kv.bytes + ro->kv_shared.bytes);
    if (ro->logits) *ws += (int64_t)eng_rollout_cache_rows(ro) * ro->V * (int64_t)sizeof(float);
    if (ro->logits_shared) *ws += (int64_t)ro->Bp * ro->V * (int64_t)sizeof(float);
    if (ro->logits_prompt) *ws += (int64_t)ro->Cap * ro->V * (int64_t)sizeof(float);
    *ws += (int64_t)ro->n_samplers * ((int64_t)ro->V * (int64_t)sizeof(eng_sample_pair) + (int64_t)sizeof(eng_sampler));
    if (m) *ws += (int64_t)m->ws.bytes;
}

bc_status eng_rollout_acquire(eng_rollout *ro, eng_model *m, bc_error *err) {
    if (ro->have_cache) return BC_OK;
    const eng_shape *hp = &m->w->shape;
    const int shared = eng_rollout_shared_prefill(ro);
    const int rows = eng_rollout_cache_rows(ro), prefill_rows = shared ? ro->Bp : rows;
    int max_tokens = prefill_rows * ro->Tp > rows ? prefill_rows * ro->Tp : rows;
    const eng_dtype kv_dt = eng_kv_dtype(m->w->dtype);
    const int S = eng_rollout_cache_positions(ro, hp, kv_dt);
    bc_status st = ro->p.kv_paged ? eng_kv_cache_alloc_paged(&ro->kv, hp, kv_dt, rows, S,
                                                             eng_kv_page_tokens(hp, kv_dt, ro->p.page_tokens), err)
                                  : eng_kv_cache_alloc(&ro->kv, hp, kv_dt, rows, S, err);
    if (st == BC_OK && shared) st = eng_kv_cache_alloc(&ro->kv_shared, hp, kv_dt, ro->Bp, ro->Tp, err);
    if (st == BC_OK) st = eng_model_reserve(m, max_tokens, S, err);
    if (st == BC_OK) {
        int n = eng_pool_size(m->pool);
        ro->samplers = calloc((size_t)n, sizeof *ro->samplers);
        if (!ro->samplers) st = bc_error_set(err, BC_ERR_NOMEM, "rollout: no memory for %d samplers", n);
        for (int i = 0; i < n && st == BC_OK; i++) {
            st = eng_sampler_init(&ro->samplers[i], ro->V, &ro->p.sampling, err);
            if (st == BC_OK) ro->n_samplers = i + 1;
        }
    }
    if (st == BC_OK) {
        ro->logits = malloc((size_t)rows * ro->V * sizeof(float));
        if (shared) ro->logits_shared = malloc((size_t)ro->Bp * ro->V * sizeof(float));
        const int sharing = eng_rollout_prompt_sharing(ro);
        if (sharing) ro->logits_prompt = malloc((size_t)ro->Cap * ro->V * sizeof(float));
        if (!ro->logits || (shared && !ro->logits_shared) || (sharing && !ro->logits_prompt))
            st = bc_error_set(err, BC_ERR_NOMEM, "rollout: no memory for %d x %d logits", rows, ro->V);
    }
    ro->have_cache = 1;
    if (st != BC_OK) {
        eng_rollout_release(ro, m);
        return st;
    }
    /* touch every page now, so taking the cache back costs what it costs
     * here (cache_acquire_ms) and not as page faults inside the prefill */
    if (!ro->kv.paged) { /* paged: memory is taken as rows are written */
        memset(ro->kv.k, 0, ro->kv.bytes / 2);
        memset(ro->kv.v, 0, ro->kv.bytes / 2);
    }
    if (ro->kv_shared.k) {
        memset(ro->kv_shared.k, 0, ro->kv_shared.bytes / 2);
        memset(ro->kv_shared.v, 0, ro->kv_shared.bytes / 2);
    }
    memset(ro->logits, 0, (size_t)rows * ro->V * sizeof(float));
    if (ro->logits_shared) memset(ro->logits_shared, 0, (size_t)ro->Bp * ro->V * sizeof(float));
    if (ro->logits_prompt) memset(ro->logits_prompt, 0, (size_t)ro->Cap * ro->V * sizeof(float));
    memset(m->ws.arena, 0, m->ws.bytes);
    return BC_OK;
}

void eng_rollout_release(eng_rollout *ro, eng_model *m) {
    eng_kv_cache_free(&ro->kv);
    eng_kv_cache_free(&ro->kv_shared);
    for (int i = 0; i < ro->n_samplers; i++) eng_sampler_free(&ro->samplers[i]);
    free(ro->samplers);
    ro->samplers = NULL;
    ro->n_samplers = 0;
    free(ro->logits);
    free(ro->logits_shared);
    free(ro->logits_prompt);
    ro->logits = ro->logits_shared = ro->logits_prompt = NULL;
    if (m) eng_model_release_workspace(m);
    ro->have_cache = 0;
}

/* ------------------------------------------------------------------ steps */

static bc_status cpu_acquire(void *ctx, eng_rollout *ro, bc_error *err) { return eng_rollout_acquire(ro, ctx, err); }

static void cpu_marks_reset(void *ctx, eng_rollout *ro) {
    (void)ctx;
    ro->n_marks = 0;
}

static int cpu_mark(void *ctx, eng_rollout *ro) {
    (void)ctx;
    const int i = ro->n_marks < eng_rollout_n_marks(ro->Tr) ? ro->n_marks++ : ro->n_marks - 1;
    ro->marks[i] = eng_now_ms();
    return i;
}

static double cpu_elapsed_ms(void *ctx, eng_rollout *ro, int from, int to) {
    (void)ctx;
    return ro->marks[to] - ro->marks[from];
}

static bc_status cpu_start(void *ctx, eng_rollout *ro, bc_error *err) {
    (void)ctx, (void)ro, (void)err; /* the rows are where the model reads them */
    return BC_OK;
}

static bc_status cpu_set_cache(void *ctx, eng_rollout *ro, int len, int group, int prefix, bc_error *err) {
    (void)ctx, (void)err;
    ro->kv.len = len;
    ro->kv.group = group;
    ro->kv.prefix = prefix;
    return BC_OK;
}

static bc_status cpu_prefill(void *ctx, eng_rollout *ro, int prompts, bc_error *err) {
    eng_model *m = ctx;
    if (prompts) {
        ro->kv_shared.len = 0;
        return eng_forward(m, &ro->kv_shared, ro->prompt_ids, ro->prompt_mask, ro->Tp, ro->Bp, ro->Tp,
                           ENG_LOGITS_LAST, ro->logits_shared, err);
    }
    return eng_forward(m, &ro->kv, ro->prefill_ids, ro->mask, ro->Stot, ro->R, ro->Tp, ENG_LOGITS_LAST, ro->logits,
                       err);
}

static bc_status cpu_copy_prompt(void *ctx, eng_rollout *ro, int r, int kv, bc_error *err) {
    (void)ctx, (void)err;
    const int b = r / ro->Sp;
    if (kv) eng_kv_cache_copy_row(&ro->kv, r, &ro->kv_shared, b, ro->Tp);
    memcpy(ro->logits + (size_t)r * ro->V, ro->logits_shared + (size_t)b * ro->V, (size_t)ro->V * sizeof(float));
    return BC_OK;
}

static bc_status cpu_decode(void *ctx, eng_rollout *ro, int k, bc_error *err) {
    for (int r = 0; r < ro->R; r++) {
        ro->step_tokens[r] = ro->seq[(size_t)r * ro->Stot + ro->Tp + k - 1];
        ro->mask[(size_t)r * ro->Stot + ro->Tp + k - 1] = 1;
    }
    return eng_forward(ctx, &ro->kv, ro->step_tokens, ro->mask, ro->Stot, ro->R, 1, ENG_LOGITS_LAST, ro->logits, err);
}

/* One sampling split across the pool: thread i samples batch rows
 * [n i / t, n (i + 1) / t) with its own sampler; every row has its own
 * generator, so the tokens do not depend on the split. */
typedef struct sample_job {
    eng_rollout *ro;
    const int *rows, *ks;      /* batch row i: rollout row rows[i] (NULL: i) at response index ks[i] (NULL: k) */
    int k, n;
    int *more;                 /* [n] whether each row goes on, or NULL */
    int64_t generated[64][8];  /* per thread (first 64), padded to a cache line */
    int running[64][16];
} sample_job;

static void sample_worker(void *ctx, int i, int n) {
    sample_job *j = ctx;
    eng_rollout *ro = j->ro;
    const int lo = (int)((long)j->n * i / n), hi = (int)((long)j->n * (i + 1) / n);
    eng_sampler *smp = &ro->samplers[i < ro->n_samplers ? i : 0];
    int64_t generated = 0;
    int running = 0;
    for (int b = lo; b < hi; b++) {
        int goes_on;
        generated += eng_rollout_sample_row(ro, smp, ro->logits + (size_t)b * ro->V, j->rows ? j->rows[b] : b,
                                            j->ks ? j->ks[b] : j->k, &goes_on);
        running += goes_on;
        if (j->more) j->more[b] = goes_on;
    }
    j->generated[i % 64][0] += generated;
    j->running[i % 64][0] += running;
}

int eng_rollout_sample_rows(eng_rollout *ro, eng_model *m, const int *rows, const int *ks, int k, int n, int *more) {
    sample_job job;
    memset(&job, 0, sizeof job);
    job.ro = ro;
    job.rows = rows;
    job.ks = ks;
    job.k = k;
    job.n = n;
    job.more = more;
    if (ro->n_samplers > 1 && n > 1 && eng_pool_size(m->pool) <= 64) eng_pool_run(m->pool, sample_worker, &job);
    else sample_worker(&job, 0, 1);
    int running = 0;
    for (int i = 0; i < 64; i++) {
        ro->n_generated += job.generated[i][0];
        running += job.running[i][0];
    }
    return running;
}

/* Samples token k of every row from ro->logits [R, V] into seq. */
static bc_status cpu_sample(void *ctx, eng_rollout *ro, int k, int *running, bc_error *err) {
    (void)err;
    *running = eng_rollout_sample_rows(ro, ctx, NULL, NULL, k, ro->R, NULL);
    return BC_OK;
}

/* A static batch on the paged KV layout: the pages its rows wrote (each
 * row's written stretch, [0, len) or, for the samples of a shared prefill
 * that read their prompt's first row, [Tp, len), in whole pages of P
 * tokens), their share of empty token slots and the contiguous layout's
 * bytes minus theirs; then every row's pages go back to the system. The
 * reservation beyond the longest row's length was never written, so never
 * taken. */
static void cpu_static_pages(eng_rollout *ro, const eng_shape *hp) {
    eng_kv_cache *kv = &ro->kv;
    const int P = eng_kv_page_tokens(hp, kv->dtype, ro->p.page_tokens), len = kv->len;
    const int read_from_first = eng_rollout_shared_prefill(ro) && kv->group > 1;
    int64_t pages = 0, tokens = 0;
    for (int r = 0; r < ro->R; r++) {
        const int start = read_from_first && r % kv->group != 0 ? kv->prefix : 0;
        pages += (len + P - 1) / P - start / P;
        tokens += len - start;
    }
    const int64_t page_bytes = eng_kv_row_page_bytes(hp, kv->dtype, P);
    ro->kv_pages_peak = pages;
    ro->kv_fragmentation = pages > 0 ? 1.0 - (double)tokens / ((double)pages * P) : 0.0;
    ro->kv_bytes_peak = pages * page_bytes;
    ro->kv_bytes_saved = (int64_t)eng_kv_cache_bytes(hp, kv->dtype, ro->R, ro->Stot) - ro->kv_bytes_peak;
    const double t0 = eng_now_ms();
    for (int r = 0; r < ro->R; r++) eng_kv_cache_return_row(kv, r);
    ro->cache_mgmt_ms += eng_now_ms() - t0;
}

static bc_status cpu_finish(void *ctx, eng_rollout *ro, bc_error *err) {
    (void)err; /* everything happened on the host already */
    const eng_model *m = ctx;
    if (ro->kv.paged) cpu_static_pages(ro, &m->w->shape);
    return BC_OK;
}

const eng_step_ops eng_cpu_steps = {
    .grouped_prefix = 1,
    .acquire = cpu_acquire,
    .marks_reset = cpu_marks_reset,
    .mark = cpu_mark,
    .elapsed_ms = cpu_elapsed_ms,
    .start = cpu_start,
    .set_cache = cpu_set_cache,
    .prefill = cpu_prefill,
    .copy_prompt = cpu_copy_prompt,
    .decode = cpu_decode,
    .sample = cpu_sample,
    .finish = cpu_finish,
};

/* ----------------------------------------------------------------- device */

typedef struct cpu_device {
    int threads;
    int isa;                /* eng_model_init_isa's: -1 = the best */
    int have_model;
    eng_model m;            /* owned: pool + workspace; borrows the plugin's weights */
    int64_t case_kv, case_ws; /* what the case holds while generating */
    eng_scorer sc;          /* owned: the score path's buffers (score.h), until end_case */
    int scored;             /* the model's workspace is the score's (the rollout's cache released) */
} cpu_device;

static bc_status cpu_create(const eng_device_config *cfg, void **out, bc_error *err) {
    cpu_device *d = calloc(1, sizeof *d);
    if (!d) return bc_error_set(err, BC_ERR_NOMEM, "CPU device: out of memory");
    d->threads = cfg->threads > 0 ? cfg->threads : eng_online_cores();
    d->isa = cfg->isa;
    *out = d;
    return BC_OK;
}

static void cpu_destroy(void *ctx) {
    cpu_device *d = ctx;
    if (!d) return;
    if (d->have_model) eng_model_free(&d->m);
    eng_scorer_free(&d->sc);
    free(d);
}

static bc_status cpu_open(void *ctx, bc_error *err) {
    (void)ctx, (void)err;
    return BC_OK;
}

static void cpu_describe(void *ctx, eng_device_info *out) {
    cpu_device *d = ctx;
    /* the kernels the model uses, or will: the asked family, else the best with a table */
    const eng_kernels *k = d->have_model ? d->m.k : d->isa >= 0 ? eng_kernels_for((eng_isa)d->isa) : NULL;
    if (!k) k = eng_kernels_best();
    *out = (eng_device_info){.device = "cpu", .cpu_kernels = eng_isa_name(k->isa), .cpu_threads = d->threads};
}

static void cpu_plan(void *ctx, const eng_weights *w, const eng_rollout *ro, eng_device_plan *out) {
    const cpu_device *d = ctx;
    const eng_rollout_bytes b = eng_rollout_plan(ro, &w->shape, &w->ws, w->dtype, d->threads);
    out->weights = -1;
    out->kv_cache = b.kv_cache >= SIZE_MAX / 2 ? -1 : (int64_t)b.kv_cache;
    out->workspace = b.workspace > (size_t)INT64_MAX ? -1 : (int64_t)b.workspace;
    out->device_peak = -1;
}

static int64_t physical_memory_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (int64_t)pages * page : -1;
}

/* MemAvailable from /proc/meminfo (the kernel's estimate of what can be
 * allocated without swapping), or -1 where there is none. */
static int64_t available_memory_bytes(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1;
    char line[256];
    long long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kib) == 1) break;
    fclose(f);
    return kib >= 0 && kib < INT64_MAX / 1024 ? (int64_t)kib * 1024 : -1;
}

static double gib(int64_t bytes) { return (double)bytes / (1024.0 * 1024.0 * 1024.0); }

/* MemAvailable plus what this backend already holds (its weights and cache
 * are reused or freed before the case allocates), or, without
 * /proc/meminfo, the physical memory. */
static int64_t cpu_capacity(void *ctx, int64_t held_host, char *where, size_t where_len) {
    (void)ctx;
    const int64_t total = physical_memory_bytes(), avail = available_memory_bytes();
    const int64_t have = avail >= 0 && held_host >= 0 && avail <= INT64_MAX - held_host ? avail + held_host : total;
    if (avail >= 0)
        snprintf(where, where_len, "%.1f GiB is available (MemAvailable %.1f GiB + %.1f GiB this backend holds; "
                 "the machine has %.1f GiB)", gib(have), gib(avail), gib(held_host), gib(total));
    else
        snprintf(where, where_len, "this machine has %.1f GiB", gib(total));
    return have;
}

static bc_status cpu_begin_case(void *ctx, const eng_weights *w, eng_rollout *ro, bc_error *err) {
    cpu_device *d = ctx;
    if (d->have_model && d->m.w != w) {
        eng_model_free(&d->m);
        d->have_model = 0;
    }
    bc_status st;
    if (!d->have_model) {
        if ((st = eng_model_init_isa(&d->m, w, d->threads, d->isa, err)) != BC_OK) return st;
        d->have_model = 1;
    }
    if ((st = eng_rollout_acquire(ro, &d->m, err)) != BC_OK) return st;
    cache_held(ro, &d->m, &d->case_kv, &d->case_ws);
    return BC_OK;
}

/* The CPU device picks the batching below the device interface: continuous
 * batching (continuous.c) with a capacity, else the one static loop (loop.c)
 * over the CPU's steps. */
bc_status eng_rollout_generate(eng_rollout *ro, eng_model *m, bc_error *err) {
    if (ro->Cap) {
        bc_status st = eng_rollout_acquire(ro, m, err);
        if (st != BC_OK) return st;
        eng_rollout_results_reset(ro);
        return eng_rollout_run_continuous(ro, m, err);
    }
    return eng_rollout_run(ro, &eng_cpu_steps, m, err);
}

void eng_cpu_rollout_free(eng_rollout *ro, eng_model *m) {
    eng_rollout_release(ro, m);
    eng_rollout_free(ro);
}

static bc_status cpu_generate(void *ctx, eng_rollout *ro, bc_error *err) {
    cpu_device *d = ctx;
    if (!d->have_model) return bc_error_set(err, BC_ERR_INTERNAL, "cpu: generate outside a case");
    return eng_rollout_generate(ro, &d->m, err);
}

static bc_status cpu_cache_acquire(void *ctx, eng_rollout *ro, bc_error *err) {
    cpu_device *d = ctx;
    if (!d->have_model) return bc_error_set(err, BC_ERR_INTERNAL, "opt cpu: cache_acquire outside a case");
    return eng_rollout_acquire(ro, &d->m, err);
}

static void cpu_cache_release(void *ctx, eng_rollout *ro) {
    cpu_device *d = ctx;
    eng_rollout_release(ro, d->have_model ? &d->m : NULL);
#if defined(__GLIBC__)
    /* glibc keeps freed blocks below its (adaptive) mmap threshold in the
     * heap; give them back to the system, so release really releases */
    malloc_trim(0);
#endif
}

static void cpu_end_case(void *ctx, eng_rollout *ro) {
    cpu_device *d = ctx;
    eng_rollout_release(ro, d->have_model ? &d->m : NULL);
    eng_scorer_free(&d->sc);
    if (d->scored && d->have_model) eng_model_release_workspace(&d->m);
    d->scored = 0;
    d->case_kv = d->case_ws = 0;
}

static bc_status cpu_score(void *ctx, eng_rollout *ro, const bc_rollout_tokens *in, float *logprobs, bc_error *err) {
    cpu_device *d = ctx;
    if (!d->have_model) return bc_error_set(err, BC_ERR_INTERNAL, "cpu: score outside a case");
    if (ro->have_cache) eng_rollout_release(ro, &d->m); /* the scorer's memory instead of the rollout's */
    d->scored = 1;
    bc_status st = eng_score(&d->sc, &d->m, in, logprobs, err);
    d->case_kv = (int64_t)d->sc.kv.bytes;
    d->case_ws = (int64_t)(d->sc.bytes - d->sc.kv.bytes + d->m.ws.bytes);
    return st;
}

static void cpu_reset_peak(void *ctx) { (void)ctx; }

static int64_t cpu_host_bytes(void *ctx, const eng_rollout *ro) {
    cpu_device *d = ctx;
    int64_t kv = 0, ws = 0;
    if (ro) cache_held(ro, d->have_model ? &d->m : NULL, &kv, &ws);
    else if (d->have_model) ws = (int64_t)d->m.ws.bytes;
    if (d->scored) /* the score's buffers, and the model's workspace when the rollout's cache does not count it */
        ws += (int64_t)d->sc.bytes + (ro && !ro->have_cache && d->have_model ? (int64_t)d->m.ws.bytes : 0);
    return kv + ws;
}

static bc_status cpu_read_memory(void *ctx, const eng_rollout *ro, eng_device_memory *out, bc_error *err) {
    (void)err;
    cpu_device *d = ctx;
    *out = (eng_device_memory){.kv_cache = ro ? d->case_kv : 0,
                               .workspace = ro ? d->case_ws : 0,
                               .weights = -1,
                               .device_resident = -1,
                               .device_peak = -1,
                               .device_free = -1,
                               .device_total = -1};
    return BC_OK;
}

const eng_device_ops eng_device_cpu = {
    .name = "cpu",
    .create = cpu_create,
    .destroy = cpu_destroy,
    .open = cpu_open,
    .describe = cpu_describe,
    .plan = cpu_plan,
    .capacity = cpu_capacity,
    .begin_case = cpu_begin_case,
    .generate = cpu_generate,
    .cache_acquire = cpu_cache_acquire,
    .cache_release = cpu_cache_release,
    .end_case = cpu_end_case,
    .reset_peak = cpu_reset_peak,
    .host_bytes = cpu_host_bytes,
    .read_memory = cpu_read_memory,
    .score = cpu_score,
    .logprobs = 1,
};
