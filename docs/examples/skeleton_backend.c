/* skeleton_backend.c: a minimal, complete benchctl backend, to copy from.
 *
 * Every hook of bc_backend_ops is here, with a comment saying what it must do
 * and whether it is required. The "model" is a stand-in: each generated token
 * is a hash of the row and step, and its "KV entry" is one value stored in the
 * case's precision, so the skeleton does a small, deterministic amount of real
 * work and shows how a backend uses the precision plugin.
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
 * never write to stdout; report failures as a bc_status plus bc_error_set();
 * host->log for diagnostics. Everything allocated here is freed here.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <benchctl/plugin.h>

/* ------------------------------------------------------------- settings */

/* The settings table: what bench.cfg may give in the backend's group. The host
 * validates types and ranges against it and fills in defaults before create()
 * runs; `benchctl plugins skeleton` prints it. Values arrive in create() in
 * this order. */
enum { SET_NS_PER_TOKEN = 0, SET_MODEL_NAME, N_SETTINGS };

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
};

/* ------------------------------------------------------------- instance */

/* Everything one instance owns. The host sees only a void *. */
typedef struct skeleton {
    const bc_host *host;    /* host services; valid until destroy */
    int64_t ns_per_token;
    const char *model_name; /* host-owned setting string; valid until destroy */

    /* The current case (between begin_case and end_case). */
    const bc_precision_ops *prec; /* host-owned */
    uint32_t rows, prompt_len, response_len; /* R, P, S */
    uint64_t seed;
    int32_t *tokens;        /* [R, P + S], owned; prompt then response */
    unsigned char *kv;      /* [R, P + S] elements of prec->element_size bytes, owned; NULL while released */
    size_t kv_bytes;
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

/* ---------------------------------------------------------------- hooks */

/* create: REQUIRED. Makes an instance from the resolved settings (in table
 * order, already validated, defaults filled in). Load weights, open devices
 * here: this is not timed. On failure, free what was allocated, set err and
 * return non-BC_OK; *out_instance is then ignored. */
static bc_status skeleton_create(const bc_host *host, const bc_setting_value *settings, void **out_instance,
                                 bc_error *err) {
    skeleton *sk = calloc(1, sizeof *sk);
    if (!sk) return bc_error_set(err, BC_ERR_NOMEM, "skeleton: out of memory");
    sk->host = host;
    sk->ns_per_token = settings[SET_NS_PER_TOKEN].i;
    sk->model_name = settings[SET_MODEL_NAME].s;
    *out_instance = sk;
    return BC_OK;
}

/* destroy: REQUIRED. Frees everything the instance owns. Called exactly once
 * per successful create, also after any error, and after end_case. */
static void skeleton_destroy(void *instance) {
    skeleton *sk = instance;
    free(sk);
}

/* describe: REQUIRED. Fills info for the run report. Strings must stay valid
 * until destroy (static, or owned by the instance). */
static bc_status skeleton_describe(void *instance, bc_backend_info *info, bc_error *err) {
    skeleton *sk = instance;
    (void)err;
    info->model = sk->model_name;
    info->device = "cpu";
    info->device_name = NULL; /* no accelerator */
    info->driver = NULL;
    return BC_OK;
}

/* plan_memory: OPTIONAL (NULL: `benchctl plan` shows the memory as unknown).
 * Says how much memory case c will need, without allocating it. Fields it
 * cannot tell stay -1. */
static bc_status skeleton_plan_memory(void *instance, const bc_case *c, bc_memory_stats *out, bc_error *err) {
    (void)instance; (void)err;
    uint64_t rows = bc_case_effective_batch(c), len = (uint64_t)c->prompt_length + c->response_length;
    out->weights_bytes = 0;
    out->kv_cache_bytes = (int64_t)(rows * len * (c->precision_ops ? c->precision_ops->element_size : 4));
    out->workspace_bytes = (int64_t)(rows * len * sizeof(int32_t));
    out->host_peak_bytes = out->kv_cache_bytes + out->workspace_bytes;
    out->device_peak_bytes = out->device_free_bytes = out->device_total_bytes = -1;
    return BC_OK;
}

/* begin_case: REQUIRED. Prepares case c: checks that it can run it (precision,
 * shapes), sizes and allocates buffers. Not timed. Must refuse a precision it
 * has no kernels for with BC_ERR_UNSUPPORTED and a message naming it. The
 * host calls end_case afterwards even when this fails. c is valid only during
 * this call: copy what later hooks need. */
static bc_status skeleton_begin_case(void *instance, const bc_case *c, bc_error *err) {
    skeleton *sk = instance;
    const bc_precision_ops *p = c->precision_ops;
    if (!p || (strcmp(p->dtype, "float32") && strcmp(p->dtype, "float16") && strcmp(p->dtype, "bfloat16")))
        return bc_error_set(err, BC_ERR_UNSUPPORTED, "skeleton: precision '%s' is not supported (float32, float16, bfloat16 are)",
                            c->precision ? c->precision : "?");
    uint64_t rows = bc_case_effective_batch(c), width = (uint64_t)c->prompt_length + c->response_length;
    if (rows > UINT32_MAX || rows * width > SIZE_MAX / 8 || c->prompt_length == 0 || c->response_length == 0)
        return bc_error_set(err, BC_ERR_INVALID, "skeleton: shape rows=%llu prompt=%u response=%u not supported",
                            (unsigned long long)rows, c->prompt_length, c->response_length);
    sk->prec = p;
    sk->rows = (uint32_t)rows;
    sk->prompt_len = c->prompt_length;
    sk->response_len = c->response_length;
    sk->seed = c->sampling.seed;
    size_t cells = (size_t)sk->rows * (sk->prompt_len + sk->response_len);
    sk->tokens = sk_alloc(sk, cells * sizeof(int32_t));
    sk->kv_bytes = cells * p->element_size;
    sk->kv = sk_alloc(sk, sk->kv_bytes);
    if (!sk->tokens || !sk->kv) return bc_error_set(err, BC_ERR_NOMEM, "skeleton: out of memory for %zu cells", cells);
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
 * row and fills out: num_generated_tokens is required (tokens produced, all
 * rows); a field it cannot measure must be BC_NOT_MEASURED (doubles) or -1
 * (integers), never a guess, since the host reports it as is. Returns only
 * when the work is done. */
static bc_status skeleton_generate(void *instance, bc_generation_stats *out, bc_error *err) {
    skeleton *sk = instance;
    if (!sk->kv) return bc_error_set(err, BC_ERR_INTERNAL, "skeleton: generate while the cache is released");
    uint32_t width = sk->prompt_len + sk->response_len;

    uint64_t t0 = sk->host->now_ns(); /* prefill: the prompt's KV entries and the first token */
    for (uint32_t t = 0; t < sk->prompt_len; t++) store_kv(sk, t);
    for (uint32_t r = 0; r < sk->rows; r++)
        sk->tokens[(size_t)r * width + sk->prompt_len] = fake_token(sk->seed, r, sk->prompt_len);
    spin(sk, sk->ns_per_token * (int64_t)sk->rows);
    out->prefill_forward_ms = ms_since(sk, t0);

    t0 = sk->host->now_ns(); /* decode: one forward per further token */
    for (uint32_t t = sk->prompt_len + 1; t < width; t++) {
        store_kv(sk, t - 1);
        for (uint32_t r = 0; r < sk->rows; r++) sk->tokens[(size_t)r * width + t] = fake_token(sk->seed, r, t);
        spin(sk, sk->ns_per_token * (int64_t)sk->rows);
    }
    out->decode_forward_ms = ms_since(sk, t0);

    out->num_decode_forwards = sk->response_len - 1;
    out->num_generated_tokens = (int64_t)sk->rows * sk->response_len;
    out->returned_response_length = sk->response_len;
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
 * Reads the memory accounting; what it cannot tell stays -1. */
static bc_status skeleton_read_memory(void *instance, bc_memory_stats *out, bc_error *err) {
    skeleton *sk = instance;
    (void)err;
    out->weights_bytes = 0;
    out->kv_cache_bytes = sk->kv ? (int64_t)sk->kv_bytes : 0;
    out->workspace_bytes = sk->tokens ? (int64_t)((size_t)sk->rows * (sk->prompt_len + sk->response_len) * sizeof(int32_t)) : 0;
    out->host_peak_bytes = sk->peak_bytes;
    out->device_peak_bytes = out->device_free_bytes = out->device_total_bytes = -1;
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
    sk->tokens = NULL;
    sk->kv = NULL;
    sk->kv_bytes = 0;
    sk->rows = sk->prompt_len = sk->response_len = 0;
    sk->prec = NULL;
}

/* ----------------------------------------------------------- descriptor */

/* The ops table: designated initializers, so a hook added to the ABI later is
 * NULL here and the host knows this backend does not have it. struct_size
 * lets a newer host tell how much of the table this plugin knows. */
static const bc_backend_ops skeleton_ops = {
    .struct_size = sizeof(bc_backend_ops),
    .create = skeleton_create,
    .destroy = skeleton_destroy,
    .describe = skeleton_describe,
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
};

/* The descriptor: BC_PLUGIN_DESC_HEADER fills magic, ABI version and size,
 * which the host checks before calling anything else. name is what bench.cfg
 * uses when the plugin is found along the search path. */
static const bc_plugin_desc skeleton_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_BACKEND,
    .name = "skeleton",
    .version = "0.1.0",
    .description = "a minimal example backend: hashes stand in for the model",
    .settings = skeleton_settings,
    .n_settings = N_SETTINGS,
    .ops = &skeleton_ops,
};

/* The one exported symbol, benchctl_plugin_entry, returning the descriptor. */
BC_PLUGIN_DEFINE(skeleton_desc)
