/* device.h: where the engine runs a rollout. The plugin glue
 * (engine/plugin/eng_backend.c) picks one device at create (the `device`
 * setting) and drives it through eng_device_ops; the rollout loop (loop.c,
 * eng_rollout_run) is written once over eng_step_ops. Devices: the CPU
 * (device_cpu.c: the model of forward.h, the cache in the eng_rollout) and
 * a family's CUDA device (plugins/opt/cuda: the model, cache and sampler on
 * a GPU; NULL in a build without the CUDA Toolkit).
 *
 * Who owns what: the plugin owns the host weights, the prompts and the
 * eng_rollout (prompts, sequences, results); a device owns its context
 * (create / destroy) and, between begin_case and end_case, the case's
 * cache (KV cache, activations, logits, sampler scratch), which
 * cache_release frees and cache_acquire takes back.
 */
#ifndef ENG_DEVICE_H
#define ENG_DEVICE_H

#include "rollout.h"
#include "scorer.h"

/* ------------------------------------------------------------ rollout steps */

/* What the rollout loop asks of a device, in this order for one generate:
 *   acquire, marks_reset, mark (start), start, set_cache (0), prefill, [copy_prompt per row],
 *   set_cache (Tp, group, prefix), sample (token 0), { decode, sample } per step, finish,
 *   elapsed_ms.
 * ctx is the device's state for the rollout; every hook is required. */
typedef struct eng_step_ops {
    /* 1: decode attention can read a prompt's cached prefix from the first
     * row of its group (eng_kv_cache group/prefix), so shared prefill copies
     * the prompt's KV rows to that row only; 0: every row holds its copy. */
    int grouped_prefix;
    /* The case's cache (no-op when held). */
    bc_status (*acquire)(void *ctx, eng_rollout *ro, bc_error *err);
    /* Timing: mark records a point in the device's order of work and returns
     * its index; elapsed_ms (after finish) is the ms between two marks. */
    void (*marks_reset)(void *ctx, eng_rollout *ro);
    int (*mark)(void *ctx, eng_rollout *ro);
    double (*elapsed_ms)(void *ctx, eng_rollout *ro, int from, int to);
    /* The expanded rows, masks and ro->rngs / ro->eos_at (set by the loop)
     * to where the device works on them. */
    bc_status (*start)(void *ctx, eng_rollout *ro, bc_error *err);
    /* The row cache's length and prefix sharing (group 0: off). */
    bc_status (*set_cache)(void *ctx, eng_rollout *ro, int len, int group, int prefix, bc_error *err);
    /* One forward over the Tp prompt tokens, logits of the last position:
     * prompts = 0: of every row (prefill_ids) into the row cache and logits;
     * prompts = 1: of every prompt once (prompt_ids) into the prompt cache. */
    bc_status (*prefill)(void *ctx, eng_rollout *ro, int prompts, bc_error *err);
    /* Row `row` takes its prompt's logits and, with kv, its Tp cached tokens
     * (after a prefill of the prompts). */
    bc_status (*copy_prompt)(void *ctx, eng_rollout *ro, int row, int kv, bc_error *err);
    /* Decode step k: one forward of token k - 1 of every row (mask 1 there). */
    bc_status (*decode)(void *ctx, eng_rollout *ro, int k, bc_error *err);
    /* Token k of every row from the last logits (EOS rule of rollout.c);
     * *running: rows not finished (R unless stop_at_eos). Host-side devices
     * add to ro->n_generated here. */
    bc_status (*sample)(void *ctx, eng_rollout *ro, int k, int *running, bc_error *err);
    /* Waits for the device; seq, mask, eos_at and n_generated in ro. */
    bc_status (*finish)(void *ctx, eng_rollout *ro, bc_error *err);
} eng_step_ops;

/* The generate stage, written once: prefill (shared when the rollout says
 * so), token 0, decode steps, stage and step timings (see rollout.c). */
bc_status eng_rollout_run(eng_rollout *ro, const eng_step_ops *ops, void *ctx, bc_error *err);

/* The CPU's steps (device_cpu.c); ctx is an eng_model. */
extern const eng_step_ops eng_cpu_steps;

/* ---------------------------------------------- the CPU device's rollout */

/* Samples n rows on m's pool (device_cpu.c), each with its own generator, so
 * the tokens do not depend on the threads: batch row i is rollout row
 * rows[i] (rows NULL: i), at response index ks[i] (ks NULL: k), from logits
 * ro->logits + i V; more[i] (more may be NULL) says whether it goes on.
 * Adds the tokens to ro->n_generated; returns the rows that go on. */
int eng_rollout_sample_rows(eng_rollout *ro, eng_model *m, const int *rows, const int *ks, int k, int n, int *more);
/* Continuous batching on the CPU device (continuous.c): the generate stage
 * with rows retiring at their EOS or length and waiting rows prefilled into
 * the freed cache rows; tokens equal the static path's row for row. */
bc_status eng_rollout_run_continuous(eng_rollout *ro, eng_model *m, bc_error *err);
/* The CPU device's cache (device_cpu.c): allocates the KV cache(s), logits,
 * the samplers (one per pool thread) and m's workspace ... */
bc_status eng_rollout_acquire(eng_rollout *ro, eng_model *m, bc_error *err);
/* ... and frees them (the model keeps its weights and pool). */
void eng_rollout_release(eng_rollout *ro, eng_model *m);

/* The generate stage on the CPU device: continuous batching with a
 * capacity (eng_rollout_run_continuous), else eng_rollout_run over
 * eng_cpu_steps; acquires the cache first if it is released, and fills the
 * rollout's results (timings included). */
bc_status eng_rollout_generate(eng_rollout *ro, eng_model *m, bc_error *err);
/* eng_rollout_release, then eng_rollout_free. */
void eng_cpu_rollout_free(eng_rollout *ro, eng_model *m);

/* ------------------------------------------------------------------ device */

/* The settings a device is made from. */
typedef struct eng_device_config {
    int threads;      /* CPU worker threads (>= 1) */
    int isa;          /* CPU kernel family (eng_isa), -1 = the best this CPU has */
    int index;        /* CUDA device index */
    int graphs;       /* CUDA: capture and replay decode steps */
} eng_device_config;

/* What a device tells the run report. Strings are the device's (valid
 * until destroy); NULL = not applicable. */
typedef struct eng_device_info {
    const char *device, *device_name, *driver;
    const char *cpu_kernels; /* NULL off the CPU */
    int cpu_threads;         /* -1 off the CPU */
} eng_device_info;

/* The bytes of a case's cache on the device that holds it. */
typedef struct eng_device_plan {
    int64_t weights;     /* the weights where the model runs (-1: the host's, counted by the plugin) */
    int64_t kv_cache, workspace;
    int64_t device_peak; /* everything on the device during the case; -1: a host device */
} eng_device_plan;

/* What a device holds now. */
typedef struct eng_device_memory {
    int64_t kv_cache, workspace; /* the case's cache while generating (0 outside a case) */
    int64_t weights;           /* device weights (-1: host weights) */
    int64_t device_resident, device_peak, device_free, device_total; /* -1 on the CPU */
} eng_device_memory;

typedef struct eng_device_ops {
    const char *name; /* the `device` setting's value: "cpu", "cuda" */
    /* Never fails for lack of hardware (a CUDA device is opened lazily). */
    bc_status (*create)(const eng_device_config *cfg, void **ctx, bc_error *err);
    void (*destroy)(void *ctx);
    /* The hardware is there (CUDA: "no CUDA device: ..." otherwise). */
    bc_status (*open)(void *ctx, bc_error *err);
    void (*describe)(void *ctx, eng_device_info *out);
    /* The case's cache bytes for a rollout's dimensions, without hardware. */
    void (*plan)(void *ctx, const eng_weights *w, const eng_rollout *ro, eng_device_plan *out);
    /* Bytes there are for a case whose plan needs `need` (host: MemAvailable
     * + held_host; device: its total), -1 unknown; where: a phrase for the
     * error ("12.0 GiB is available (...)"). */
    int64_t (*capacity)(void *ctx, int64_t held_host, char *where, size_t where_len);
    /* A case on w with ro (after eng_rollout_init): the model (built or
     * uploaded when w changed) and the case's cache. */
    bc_status (*begin_case)(void *ctx, const eng_weights *w, eng_rollout *ro, bc_error *err);
    /* The generate stage (eng_rollout_run over the device's steps). */
    bc_status (*generate)(void *ctx, eng_rollout *ro, bc_error *err);
    bc_status (*cache_acquire)(void *ctx, eng_rollout *ro, bc_error *err);
    void (*cache_release)(void *ctx, eng_rollout *ro);
    /* Frees the case's cache (before the plugin frees ro). */
    void (*end_case)(void *ctx, eng_rollout *ro);
    void (*reset_peak)(void *ctx);
    /* Host bytes of ro's cache held now, as allocated (0 when released, or
     * when the cache is on a device); ro may be NULL (no case). Cheap: the
     * plugin's accounting calls it after every hook that allocates. */
    int64_t (*host_bytes)(void *ctx, const eng_rollout *ro);
    bc_status (*read_memory)(void *ctx, const eng_rollout *ro, eng_device_memory *out, bc_error *err);
    /* The score path (score.h) on the case's model, between begin_case and
     * end_case: frees the rollout's cache first (a scorer does not
     * generate; a later generate takes it back), then its own buffers,
     * kept until end_case (host_bytes counts them). NULL: the device does
     * not score. */
    bc_status (*score)(void *ctx, eng_rollout *ro, const bc_rollout_tokens *in, float *logprobs, bc_error *err);
    /* 1: generate fills ro->logprobs (the sampling runs on the host). */
    int logprobs;
} eng_device_ops;

extern const eng_device_ops eng_device_cpu;

#endif
