/* skeleton_backend.c: a minimal, complete benchctl backend (ABI 2.4: two
 * declared metrics, kv_store_ms and kv_store_gb_per_s), to copy from.
 *
 * Every hook of bc_backend_ops is here but more_metrics (optional: metric
 * rows only an instance can name, as the worker backend's engine declares
 * them), plus the descriptor's check_settings and metric table, each with a
 * comment saying what it must do and whether it is required. The
 * "model" is a stand-in: each generated token is a hash of the row and step,
 * and its "KV entry" is one value stored in the case's precision, so the
 * skeleton does a small, deterministic amount of real work and shows how a
 * backend uses the precision plugin.
 *
 * Build it out of tree against an installed benchctl (docs/plugins.md):
 *   find_package(benchctl 0.1 REQUIRED)
 *   benchctl_add_plugin(skeleton SOURCES skeleton_backend.c)
 * or by hand:
 *   cc $(pkg-config --cflags benchctl-plugin) -std=c11 -shared -fPIC \
 *      -fvisibility=hidden -o benchctl-skeleton.so skeleton_backend.c
 * and name it in bench.cfg by path:
 *   backend = { name = "/path/to/benchctl-skeleton.so"; settings = { ns_per_token = 1000; }; };
 *
 * Dimension legend: R = rows generated at once (batch_size x
 * samples_per_prompt), P = prompt_length, S = response_length (tokens).
 *
 * Rules that hold for every hook (benchctl/plugin.h): never exit() or abort(),
 * never write to stdout; report failures as a bc_status plus bc_error_set()
 * (and bc_error_hint() when there is something to suggest); host->log for
 * diagnostics. Structs the host hands in to be filled (bc_backend_info,
 * bc_generation_stats, bc_memory_stats) may come from an older host and be
 * smaller than this file's: write them with BC_SET, which skips a field the
 * host's struct does not have. Everything allocated here is freed here.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <benchctl/plugin.h>

/* ------------------------------------------------------------- settings */

/* The settings table: what bench.cfg may give in the backend's group. The host
 * validates types and ranges against it and fills in defaults before
 * check_settings and create run; `benchctl plugins skeleton` prints it.
 * Values arrive as a bc_settings, one per row in this order: read row i with
 * bc_setting_at(settings, i). */
enum { SET_NS_PER_TOKEN = 0, SET_MODEL_NAME, SET_MAX_POSITIONS, N_SETTINGS };

static const bc_setting_desc skeleton_settings[N_SETTINGS] = {
    [SET_NS_PER_TOKEN] = {
        .name = "ns_per_token",
        .type = BC_SETTING_INT,
        .default_int = 0,
        .has_range = 1, .min = 0, .max = 1e9,
        .help = "busy-wait this many nanoseconds per generated token, to stand in for real work",
    },
    [SET_MODEL_NAME] = {
        .name = "model_name",
        .type = BC_SETTING_STRING,
        .default_string = "skeleton",
        .help = "the model name the run report shows",
    },
    [SET_MAX_POSITIONS] = {
        .name = "max_positions",
        .type = BC_SETTING_INT,
        .default_int = 2048,
        .has_range = 1, .min = 1, .max = 1 << 20,
        .help = "the longest prompt + response the stand-in model takes",
    },
};

/* -------------------------------------------------------------- metrics */

/* The metric table (since ABI 2.4): what the backend measures beyond the
 * host's own fields (docs/plugins.md, "Metrics"). Each row becomes a field
 * of every report under its name, with its unit and the direction that is
 * better (compare judges by it); read_metrics fills the values in this
 * order. A new measurement is one row here plus its value there. */
enum { M_KV_STORE_MS = 0, M_KV_STORE_GB_PER_S, N_METRICS };

static const bc_metric_desc skeleton_metrics[N_METRICS] = {
    [M_KV_STORE_MS] = {.name = "kv_store_ms", .unit = "ms", .better = BC_BETTER_LOWER,
                       .scope = BC_METRIC_PER_ITERATION,
                       .help = "time generate spent storing KV entries in the case's precision"},
    [M_KV_STORE_GB_PER_S] = {.name = "kv_store_gb_per_s", .unit = "GB/s", .better = BC_BETTER_HIGHER,
                             .scope = BC_METRIC_PER_ITERATION, .help = "KV bytes generate stored, per second of storing"},
};

/* ------------------------------------------------------------- instance */

/* Everything one instance owns. The host sees only a void *. */
typedef struct skeleton {
    const bc_host *host;    /* host services; valid until destroy */
    int64_t ns_per_token;
    const char *model_name; /* host-owned setting string; valid until destroy */
    int64_t max_positions;

    /* The current case (between begin_case and end_case). */
    const bc_precision_ops *prec; /* host-owned */
    uint32_t rows, prompt_len, response_len; /* R, P, S */
    uint64_t seed;
    int32_t *tokens;        /* [R, P + S], owned; prompt then response */
    unsigned char *kv;      /* [R, P + S] elements of prec->element_size bytes, owned; NULL while released */
    size_t kv_bytes;
    double *step_ms;        /* [S]: the last generate's decode step times, owned (the host reads them) */
    double kv_store_ms;     /* the last generate's time in store_kv (the kv_store_ms metric) */
    uint64_t checksum;      /* of the last post_process, so the work cannot be optimised away */

    /* Memory accounting, bytes. */
    int64_t live_bytes, peak_bytes;
} skeleton;

static void *sk_alloc(skeleton *sk, size_t bytes) {
    void *p = calloc(1, bytes ? bytes : 1);
    if (p) {
        sk->live_bytes += (int64_t)bytes;
        if (sk->live_bytes > sk->peak_bytes) sk->peak_bytes = sk->live_bytes;
    }
    return p;
}

static void sk_free(skeleton *sk, void *p, size_t bytes) {
    if (p) {
        free(p);
        sk->live_bytes -= (int64_t)bytes;
    }
}

static double ms_since(const skeleton *sk, uint64_t t0_ns) {
    return (double)(sk->host->now_ns() - t0_ns) / 1e6;
}

/* A stand-in for a forward: the next token of row r at position t. */
static int32_t fake_token(uint64_t seed, uint32_t r, uint32_t t) {
    uint64_t x = seed ^ ((uint64_t)r << 32) ^ t;
    x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull; x ^= x >> 33;
    return (int32_t)(x % 50272u); /* OPT's vocabulary size */
}

/* Whether this backend has kernels for case c's precision. */
static int skeleton_knows_precision(const bc_case *c) {
    const bc_precision_ops *p = c->precision_ops;
    return p && p->dtype &&
           (!strcmp(p->dtype, "float32") || !strcmp(p->dtype, "float16") || !strcmp(p->dtype, "bfloat16"));
}

/* ---------------------------------------------------------------- hooks */

/* check_settings (in the descriptor): OPTIONAL (NULL: only the host's type
 * and range checks). Checks the resolved settings beyond what the table can
 * say: a path that must exist, two settings that contradict each other.
 * Quick and without side effects: `benchctl validate` calls it, and `run`
 * calls it before anything else of the plugin. There is no instance yet. A
 * backend that does real checks here usually calls the same function from
 * create, so a host that skips this hook gets the same answer. The skeleton
 * has nothing that could contradict, so it only shows the shape. */
static bc_status skeleton_check_settings(const bc_host *host, const bc_settings *settings, bc_error *err) {
    (void)host;
    const char *name = bc_setting_at(settings, SET_MODEL_NAME)->s;
    if (!name || !name[0]) {
        bc_error_set(err, BC_ERR_SETTING, "model_name is empty");
        return bc_error_hint(err, "give the model a name the report can show, or leave model_name out");
    }
    return BC_OK;
}

/* create: REQUIRED. Makes an instance from the resolved settings (validated,
 * defaults filled in; they stay valid until destroy). Light: read what
 * describe needs (say a model's config file), load no weights; `benchctl
 * validate` and `plan` create an instance too. A setting that cannot work
 * fails here with BC_ERR_SETTING or BC_ERR_NOT_FOUND and names the setting.
 * On failure, free what was allocated, set err and return non-BC_OK;
 * *out_instance is then ignored. */
static bc_status skeleton_create(const bc_host *host, const bc_settings *settings, void **out_instance,
                                 bc_error *err) {
    bc_status st = skeleton_check_settings(host, settings, err);
    if (st != BC_OK) return st;
    skeleton *sk = calloc(1, sizeof *sk);
    if (!sk) return bc_error_set(err, BC_ERR_NOMEM, "skeleton: out of memory");
    sk->host = host;
    sk->ns_per_token = bc_setting_at(settings, SET_NS_PER_TOKEN)->i;
    sk->model_name = bc_setting_at(settings, SET_MODEL_NAME)->s;
    sk->max_positions = bc_setting_at(settings, SET_MAX_POSITIONS)->i;
    *out_instance = sk;
    return BC_OK;
}

/* destroy: REQUIRED. Frees everything the instance owns. Called exactly once
 * per successful create, also after any error, and after end_case. */
static void skeleton_destroy(void *instance) {
    skeleton *sk = instance;
    free(sk);
}

/* describe: REQUIRED. Fills info for the run report. The host sets every
 * field to "unknown" (NULL, -1) first; leave what you cannot tell. Strings
 * must stay valid until destroy (static, or owned by the instance). */
static bc_status skeleton_describe(void *instance, bc_backend_info *info, bc_error *err) {
    skeleton *sk = instance;
    (void)err;
    BC_SET(info, bc_backend_info, model, sk->model_name);
    BC_SET(info, bc_backend_info, device, "cpu");
    BC_SET(info, bc_backend_info, device_name, NULL); /* no accelerator */
    BC_SET(info, bc_backend_info, driver, NULL);
    BC_SET(info, bc_backend_info, model_family, "skeleton");
    BC_SET(info, bc_backend_info, n_parameters, 0); /* the stand-in model has none */
    BC_SET(info, bc_backend_info, vocab_size, 50272);
    BC_SET(info, bc_backend_info, max_positions, sk->max_positions);
    BC_SET(info, bc_backend_info, cpu_kernels, "portable");
    BC_SET(info, bc_backend_info, cpu_threads, 1);
    return BC_OK;
}

/* check_case: OPTIONAL (NULL: every case is assumed to run). Can case c run
 * at all? Answer from the shape alone, loading nothing: the host calls it
 * for every case before the first one runs, and `validate` and `plan` call
 * it too, so a run that cannot work stops before it starts. Refuse a prompt
 * plus response longer than the model's positions (BC_ERR_INFEASIBLE, with
 * both numbers), a precision without kernels (BC_ERR_UNSUPPORTED) and, when
 * it is cheap to tell, a case too large for the memory there is. A
 * prompt_length of 0 means "the backend's own prompts decide" (a prompts
 * file); a backend without any refuses it (BC_ERR_SETTING). */
static bc_status skeleton_check_case(void *instance, const bc_case *c, bc_error *err) {
    skeleton *sk = instance;
    if (!skeleton_knows_precision(c))
        return bc_error_set(err, BC_ERR_UNSUPPORTED, "skeleton: precision '%s' is not supported (float32, float16, bfloat16 are)",
                            c->precision ? c->precision : "?");
    if (c->prompt_length == 0)
        return bc_error_set(err, BC_ERR_SETTING, "skeleton: prompt length 0 needs prompts of its own, which it has not");
    if ((int64_t)c->prompt_length + c->response_length > sk->max_positions)
        return bc_error_set(err, BC_ERR_INFEASIBLE, "skeleton: prompt %u + response %u tokens exceed max_positions %lld",
                            c->prompt_length, c->response_length, (long long)sk->max_positions);
    return BC_OK;
}

/* prepare: OPTIONAL (NULL: nothing heavy to do). The heavy setup, once,
 * before the first case of a run and after every check_case: load or map
 * the weights, open the device. A failure here means the backend could not
 * start, and the run stops with that one error instead of failing every
 * case the same way. Setup that depends on a case (weights converted to its
 * precision) belongs in begin_case, with rebuild_axes saying so. */
static bc_status skeleton_prepare(void *instance, bc_error *err) {
    (void)instance; (void)err;
    return BC_OK; /* the stand-in model has no weights */
}

/* plan_memory: OPTIONAL (NULL: `benchctl plan` shows the memory as unknown).
 * Says how much memory case c will need, without allocating it. Fields it
 * cannot tell stay -1. */
static bc_status skeleton_plan_memory(void *instance, const bc_case *c, bc_memory_stats *out, bc_error *err) {
    (void)instance; (void)err;
    uint64_t rows = bc_case_effective_batch(c), len = (uint64_t)c->prompt_length + c->response_length;
    int64_t kv = (int64_t)(rows * len * (c->precision_ops ? c->precision_ops->element_size : 4));
    int64_t ws = (int64_t)(rows * len * sizeof(int32_t));
    BC_SET(out, bc_memory_stats, weights_bytes, 0);
    BC_SET(out, bc_memory_stats, kv_cache_bytes, kv);
    BC_SET(out, bc_memory_stats, workspace_bytes, ws);
    BC_SET(out, bc_memory_stats, host_peak_bytes, kv + ws);
    BC_SET(out, bc_memory_stats, resident_bytes, kv + ws);
    BC_SET(out, bc_memory_stats, device_peak_bytes, -1);
    BC_SET(out, bc_memory_stats, device_free_bytes, -1);
    BC_SET(out, bc_memory_stats, device_total_bytes, -1);
    return BC_OK;
}

/* begin_case: REQUIRED. Prepares case c: checks that it can run it (the
 * checks of check_case again, since a host may not call that), sizes and
 * allocates buffers, rebuilds what depends on the case. Not timed. Must
 * refuse a precision it has no kernels for with BC_ERR_UNSUPPORTED and a
 * message naming it. The host calls end_case afterwards even when this
 * fails. c is valid only during this call: copy what later hooks need (not
 * the pointers in it). */
static bc_status skeleton_begin_case(void *instance, const bc_case *c, bc_error *err) {
    skeleton *sk = instance;
    bc_status st = skeleton_check_case(instance, c, err);
    if (st != BC_OK) return st;
    uint64_t rows = bc_case_effective_batch(c), width = (uint64_t)c->prompt_length + c->response_length;
    if (rows > UINT32_MAX || rows * width > SIZE_MAX / 8 || c->response_length == 0)
        return bc_error_set(err, BC_ERR_INFEASIBLE, "skeleton: shape rows=%llu prompt=%u response=%u not supported",
                            (unsigned long long)rows, c->prompt_length, c->response_length);
    sk->prec = c->precision_ops;
    sk->rows = (uint32_t)rows;
    sk->prompt_len = c->prompt_length;
    sk->response_len = c->response_length;
    sk->seed = c->sampling ? c->sampling->seed : 0;
    size_t cells = (size_t)sk->rows * (sk->prompt_len + sk->response_len);
    sk->tokens = sk_alloc(sk, cells * sizeof(int32_t));
    sk->kv_bytes = cells * sk->prec->element_size;
    sk->kv = sk_alloc(sk, sk->kv_bytes);
    sk->step_ms = calloc(sk->response_len, sizeof *sk->step_ms);
    if (!sk->tokens || !sk->kv || !sk->step_ms)
        return bc_error_set(err, BC_ERR_NOMEM, "skeleton: out of memory for %zu cells", cells);
    return BC_OK;
}

/* expand_prompts: REQUIRED, timed as prompt_expansion_ms. Builds the R rows
 * of prompt tokens (each prompt repeated samples_per_prompt times). Returns
 * only when the work is done (synchronize any device before returning). */
static bc_status skeleton_expand_prompts(void *instance, bc_error *err) {
    skeleton *sk = instance;
    (void)err;
    uint32_t width = sk->prompt_len + sk->response_len;
    for (uint32_t r = 0; r < sk->rows; r++)
        for (uint32_t t = 0; t < sk->prompt_len; t++) sk->tokens[(size_t)r * width + t] = fake_token(0, r, t);
    return BC_OK;
}

/* Busy-waits ns nanoseconds on the host clock (the stand-in for compute). */
static void spin(const skeleton *sk, int64_t ns) {
    if (ns <= 0) return;
    uint64_t end = sk->host->now_ns() + (uint64_t)ns;
    while (sk->host->now_ns() < end) {
    }
}

/* Writes one KV entry per row at position t, in the case's precision. */
static void store_kv(skeleton *sk, uint32_t t) {
    uint32_t width = sk->prompt_len + sk->response_len;
    for (uint32_t r = 0; r < sk->rows; r++) {
        float v = (float)sk->tokens[(size_t)r * width + t] / 50272.0f;
        sk->prec->from_f32(&v, sk->kv + ((size_t)r * width + t) * sk->prec->element_size, 1);
    }
}

/* generate: REQUIRED, timed as generation_ms. Generates S tokens for every
 * row and fills out (host-sized: BC_SET). num_generated_tokens is required
 * (tokens produced, all rows). The host sets every other field to "not
 * measured" (NaN, -1, NULL) first and reports it as it is: leave what you do
 * not measure, never guess. What a backend can say:
 *   prefill_forward_ms, decode_forward_ms, num_decode_forwards  the forwards
 *   first_token_ms      from the start of generate to token 0 of every row
 *   decode_step_ms[n_decode_steps]  each decode step (forward + sampling);
 *                       the array is the backend's, valid until its next hook
 *   num_prefill_tokens  token slots the prefill processed (rows x prompt width)
 *   num_decode_tokens   tokens the decode steps produced, all rows
 *   prompt_width_tokens, prompt_min_tokens, prompt_max_tokens  the prompts as
 *                       they ran (padded width, shortest, longest)
 * Returns only when the work is done. */
static bc_status skeleton_generate(void *instance, bc_generation_stats *out, bc_error *err) {
    skeleton *sk = instance;
    if (!sk->kv) return bc_error_set(err, BC_ERR_INTERNAL, "skeleton: generate while the cache is released");
    uint32_t width = sk->prompt_len + sk->response_len;

    uint64_t t0 = sk->host->now_ns(); /* prefill: the prompt's KV entries and the first token */
    for (uint32_t t = 0; t < sk->prompt_len; t++) store_kv(sk, t);
    sk->kv_store_ms = ms_since(sk, t0);
    for (uint32_t r = 0; r < sk->rows; r++)
        sk->tokens[(size_t)r * width + sk->prompt_len] = fake_token(sk->seed, r, sk->prompt_len);
    spin(sk, sk->ns_per_token * (int64_t)sk->rows);
    double prefill_ms = ms_since(sk, t0);

    uint64_t t1 = sk->host->now_ns(); /* decode: one step per further token */
    uint32_t steps = 0;
    for (uint32_t t = sk->prompt_len + 1; t < width; t++) {
        uint64_t ts = sk->host->now_ns();
        store_kv(sk, t - 1);
        sk->kv_store_ms += ms_since(sk, ts);
        for (uint32_t r = 0; r < sk->rows; r++) sk->tokens[(size_t)r * width + t] = fake_token(sk->seed, r, t);
        spin(sk, sk->ns_per_token * (int64_t)sk->rows);
        sk->step_ms[steps++] = ms_since(sk, ts);
    }
    double decode_ms = ms_since(sk, t1);

    BC_SET(out, bc_generation_stats, num_generated_tokens, (int64_t)sk->rows * sk->response_len);
    BC_SET(out, bc_generation_stats, returned_response_length, sk->response_len);
    BC_SET(out, bc_generation_stats, prefill_forward_ms, prefill_ms);
    BC_SET(out, bc_generation_stats, decode_forward_ms, decode_ms);
    BC_SET(out, bc_generation_stats, num_decode_forwards, steps);
    BC_SET(out, bc_generation_stats, first_token_ms, prefill_ms); /* the prefill samples token 0 too */
    BC_SET(out, bc_generation_stats, decode_step_ms, sk->step_ms);
    BC_SET(out, bc_generation_stats, n_decode_steps, steps);
    BC_SET(out, bc_generation_stats, num_prefill_tokens, (int64_t)sk->rows * sk->prompt_len);
    BC_SET(out, bc_generation_stats, num_decode_tokens, (int64_t)sk->rows * steps);
    BC_SET(out, bc_generation_stats, prompt_width_tokens, sk->prompt_len);
    BC_SET(out, bc_generation_stats, prompt_min_tokens, sk->prompt_len);
    BC_SET(out, bc_generation_stats, prompt_max_tokens, sk->prompt_len);
    return BC_OK;
}

/* read_metrics: REQUIRED with a metric table (since ABI 2.4). After every
 * iteration's post_process the host asks for the per-iteration metrics of
 * the rollout just run (and, after a case's last iteration, for the
 * per-case ones): values[n] in table order, each NaN when called; write
 * what was measured, leave the rest. */
static bc_status skeleton_read_metrics(void *instance, bc_metric_scope scope, double *values, uint32_t n,
                                       bc_error *err) {
    (void)err;
    skeleton *sk = instance;
    if (scope != BC_METRIC_PER_ITERATION || n < N_METRICS) return BC_OK;
    values[M_KV_STORE_MS] = sk->kv_store_ms;
    double stored = (double)sk->rows * (sk->prompt_len + sk->response_len - 1) * sk->prec->element_size;
    if (sk->kv_store_ms > 0) values[M_KV_STORE_GB_PER_S] = stored / (sk->kv_store_ms * 1e6);
    return BC_OK;
}

/* post_process: REQUIRED, timed as post_processing_ms. Whatever follows
 * generation (detokenize, score, copy to the host). Returns when done. */
static bc_status skeleton_post_process(void *instance, bc_error *err) {
    skeleton *sk = instance;
    (void)err;
    size_t cells = (size_t)sk->rows * (sk->prompt_len + sk->response_len);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < cells; i++) h = (h ^ (uint32_t)sk->tokens[i]) * 1099511628211ull;
    sk->checksum = h;
    return BC_OK;
}

/* cache_release: OPTIONAL (NULL: a "release" cache policy is a no-op for this
 * backend). Frees the KV cache and workspace after a rollout; timed as
 * cache_release_ms. cache_acquire: OPTIONAL, paired with cache_release. Takes
 * them back before the next rollout; timed as cache_acquire_ms. */
static bc_status skeleton_cache_release(void *instance, bc_error *err) {
    skeleton *sk = instance;
    (void)err;
    sk_free(sk, sk->kv, sk->kv_bytes);
    sk->kv = NULL;
    return BC_OK;
}

static bc_status skeleton_cache_acquire(void *instance, bc_error *err) {
    skeleton *sk = instance;
    if (sk->kv) return BC_OK;
    sk->kv = sk_alloc(sk, sk->kv_bytes);
    if (!sk->kv) return bc_error_set(err, BC_ERR_NOMEM, "skeleton: out of memory for a %zu-byte KV cache", sk->kv_bytes);
    return BC_OK;
}

/* reset_peak_memory: OPTIONAL. Restarts the high-water marks; the host calls
 * it after the warmup iterations. */
static void skeleton_reset_peak_memory(void *instance) {
    skeleton *sk = instance;
    sk->peak_bytes = sk->live_bytes;
}

/* read_memory: OPTIONAL (NULL: the report's backend memory fields are null).
 * Reads the memory accounting (host-sized: BC_SET); what it cannot tell
 * stays -1. resident_bytes is what the backend holds at this moment: the
 * host reads it after the cache policy ran, so after a release it is what a
 * "release" saves the machine between rollouts. */
static bc_status skeleton_read_memory(void *instance, bc_memory_stats *out, bc_error *err) {
    skeleton *sk = instance;
    (void)err;
    int64_t ws = sk->tokens ? (int64_t)((size_t)sk->rows * (sk->prompt_len + sk->response_len) * sizeof(int32_t)) : 0;
    BC_SET(out, bc_memory_stats, weights_bytes, 0);
    BC_SET(out, bc_memory_stats, kv_cache_bytes, sk->kv ? (int64_t)sk->kv_bytes : 0);
    BC_SET(out, bc_memory_stats, workspace_bytes, ws);
    BC_SET(out, bc_memory_stats, host_peak_bytes, sk->peak_bytes);
    BC_SET(out, bc_memory_stats, resident_bytes, sk->live_bytes);
    BC_SET(out, bc_memory_stats, device_peak_bytes, -1);
    BC_SET(out, bc_memory_stats, device_free_bytes, -1);
    BC_SET(out, bc_memory_stats, device_total_bytes, -1);
    return BC_OK;
}

/* end_case: REQUIRED. Ends the case begin_case started, freeing its buffers.
 * Called once after every begin_case, including one that failed, so it must
 * cope with a half-prepared case. */
static void skeleton_end_case(void *instance) {
    skeleton *sk = instance;
    size_t cells = (size_t)sk->rows * (sk->prompt_len + sk->response_len);
    sk_free(sk, sk->tokens, cells * sizeof(int32_t));
    sk_free(sk, sk->kv, sk->kv_bytes);
    free(sk->step_ms);
    sk->tokens = NULL;
    sk->kv = NULL;
    sk->step_ms = NULL;
    sk->kv_bytes = 0;
    sk->rows = sk->prompt_len = sk->response_len = 0;
    sk->prec = NULL;
}

/* ----------------------------------------------------------- descriptor */

/* The ops table: designated initializers, so a hook added to the ABI later is
 * NULL here and the host knows this backend does not have it. struct_size
 * lets a newer host tell how much of the table this plugin knows.
 * rebuild_axes: the case axes (bc_axis bits) whose change makes begin_case
 * rebuild something costly, such as weights converted to another precision;
 * the host runs the cases grouped by them so the rebuilds happen once per
 * group. 0 means "not said" and counts as BC_AXIS_PRECISION; BC_AXIS_NONE
 * says nothing is costly. The skeleton converts nothing per case. */
static const bc_backend_ops skeleton_ops = {
    .struct_size = sizeof(bc_backend_ops),
    .create = skeleton_create,
    .destroy = skeleton_destroy,
    .describe = skeleton_describe,
    .check_case = skeleton_check_case,
    .prepare = skeleton_prepare,
    .plan_memory = skeleton_plan_memory,
    .begin_case = skeleton_begin_case,
    .expand_prompts = skeleton_expand_prompts,
    .generate = skeleton_generate,
    .post_process = skeleton_post_process,
    .cache_release = skeleton_cache_release,
    .cache_acquire = skeleton_cache_acquire,
    .reset_peak_memory = skeleton_reset_peak_memory,
    .read_memory = skeleton_read_memory,
    .end_case = skeleton_end_case,
    .rebuild_axes = BC_AXIS_NONE,
    .read_metrics = skeleton_read_metrics,
};

/* The descriptor: BC_PLUGIN_DESC_HEADER fills magic, ABI version and size,
 * which the host checks before calling anything else. name is what bench.cfg
 * uses when the plugin is found along the search path. BC_SETTINGS_TABLE
 * fills settings, n_settings and setting_size (the row size, so a host of
 * another minor steps through the rows correctly). */
static const bc_plugin_desc skeleton_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_BACKEND,
    .name = "skeleton",
    .version = "0.2.0",
    .description = "a minimal example backend: hashes stand in for the model",
    BC_SETTINGS_TABLE(skeleton_settings),
    .ops = &skeleton_ops,
    .check_settings = skeleton_check_settings,
    BC_METRICS_TABLE(skeleton_metrics),
};

/* The one exported symbol, benchctl_plugin_entry, returning the descriptor. */
BC_PLUGIN_DEFINE(skeleton_desc)
