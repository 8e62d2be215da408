/* opt_plugin.c: the `opt` backend plugin, benchctl's native OPT rollout
 * engine, on the CPU or (device = "cuda") a CUDA GPU. ABI glue only: the
 * model is in model.c (forward.h), the rollout in rollout.c, sampling in
 * sampling.c, kernels in kernels*.c, checkpoints in checkpoint.c, the CUDA
 * path in cuda/.
 *
 * Lifetime of what it owns:
 *   check_settings  (no instance) the files the settings name exist, and the
 *                settings agree with each other; also run by create
 *   create       settings, the shape (a preset's, or the checkpoint's
 *                config.json), the prompts file's prompts; no weights
 *   check_case   nothing: can the case run (precision, positions, memory)?
 *   prepare      checks every tensor of the checkpoint; opens the CUDA device
 *   begin_case   weights (built again only when the case's precision changes,
 *                hence rebuild_axes = precision), the model's pool (once),
 *                the rollout's prompts and buffers, and its cache (KV cache +
 *                workspace)
 *   cache_release / cache_acquire   free and take back the cache
 *   end_case     frees the rollout and its cache; weights stay for the next case
 *   destroy      everything
 * Memory accounting is exact: every byte this plugin allocates for the model,
 * the prompts, the cache and the rollout is counted (see docs/opt.md,
 * "Memory"). Structs the host passes in to be filled are written with
 * BC_SET, only as far as the host's struct reaches.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h> /* malloc_trim */
#endif

#include "benchctl/plugin.h"
#include "checkpoint.h"
#include "fileio.h"
#include "rollout.h"
#ifdef OPT_HAVE_CUDA
#include "cuda_backend.h" /* CUDA path: plugins/opt/cuda, docs/cuda.md */
#endif

enum { S_MODEL, S_CHECKPOINT, S_WEIGHTS_SEED, S_THREADS, S_DEVICE, S_STOP_AT_EOS, S_SHARED_PREFILL, S_PROMPTS_FILE,
       S_SAVE_TOKENS, S_DEVICE_INDEX, S_CUDA_GRAPHS, S_MEMORY_CHECK, S_COUNT };

/* memory_check: what a case whose planned memory exceeds what there is gets. */
enum { MEMCHECK_REFUSE, MEMCHECK_WARN, MEMCHECK_OFF };

/* The shape of synthetic weights when `model` is left empty. */
#define OPT_DEFAULT_PRESET "125m"

/* "" first: the default, "from the checkpoint, else 125m". */
static const char *const model_choices[] = {"", "125m", "350m", "1.3b", "2.7b", "6.7b", "13b", "30b", "66b", NULL};
static const char *const device_choices[] = {"cpu", "cuda", NULL};
static const char *const memory_check_choices[] = {"refuse", "warn", "off", NULL};

static const bc_setting_desc opt_settings[S_COUNT] = {
    [S_MODEL] = {.name = "model", .type = BC_SETTING_ENUM, .default_string = "", .choices = model_choices,
                 .help = "shape preset of synthetic weights (\"\" = 125m); leave it out with a checkpoint"},
    [S_CHECKPOINT] = {.name = "checkpoint", .type = BC_SETTING_STRING, .default_string = "",
                      .help = "Hugging Face checkpoint directory (config.json + weights); \"\" = synthetic weights"},
    [S_WEIGHTS_SEED] = {.name = "weights_seed", .type = BC_SETTING_INT, .default_int = 0, .has_range = 1, .min = 0,
                        .max = 9007199254740992.0, .help = "seed of the synthetic weights"},
    [S_THREADS] = {.name = "threads", .type = BC_SETTING_INT, .default_int = 0, .has_range = 1, .min = 0, .max = 1024,
                   .help = "worker threads (0 = all online cores)"},
    [S_DEVICE] = {.name = "device", .type = BC_SETTING_ENUM, .default_string = "cpu", .choices = device_choices,
                  .help = "where the model runs"},
    [S_STOP_AT_EOS] = {.name = "stop_at_eos", .type = BC_SETTING_BOOL, .default_int = 0,
                       .help = "stop a row at EOS (else exactly response_length tokens, EOS suppressed)"},
    [S_SHARED_PREFILL] = {.name = "shared_prefill", .type = BC_SETTING_BOOL, .default_int = 0,
                          .help = "prefill each prompt once and share its KV cache with its samples"},
    [S_PROMPTS_FILE] = {.name = "prompts_file", .type = BC_SETTING_STRING, .default_string = "",
                        .help = "prompts, one line of space-separated token ids each (\"\" = synthetic); they set "
                                "the prompt length"},
    [S_SAVE_TOKENS] = {.name = "save_tokens", .type = BC_SETTING_STRING, .default_string = "",
                       .help = "write each rollout's generated ids here, one line per row ({case} = case index)"},
    /* CUDA path (docs/cuda.md) */
    [S_DEVICE_INDEX] = {.name = "device_index", .type = BC_SETTING_INT, .default_int = 0, .has_range = 1, .min = 0,
                        .max = 1024, .help = "CUDA device index (device = \"cuda\")"},
    [S_CUDA_GRAPHS] = {.name = "cuda_graphs", .type = BC_SETTING_BOOL, .default_int = 1,
                       .help = "capture the decode step in a CUDA graph per batch and replay it (device = \"cuda\")"},
    [S_MEMORY_CHECK] = {.name = "memory_check", .type = BC_SETTING_ENUM, .default_string = "refuse",
                        .choices = memory_check_choices,
                        .help = "a case planned to need more memory than is available: refuse it, warn, or off"},
};

typedef struct opt_backend {
    const bc_host *host;
    const char *checkpoint, *prompts_file, *save_tokens; /* host-owned settings, "" when unset */
    const char *preset;    /* the synthetic weights' preset; NULL with a checkpoint */
    uint64_t weights_seed;
    int threads, stop_at_eos, shared_prefill;
    int memory_check;      /* MEMCHECK_* */
    opt_hparams hp;        /* the preset's shape, or the checkpoint's config.json */
    int have_prompts;
    opt_prompts prompts;   /* owned: the prompts file, read once in create */
    int have_weights;
    opt_weights w;         /* owned; rebuilt when the precision changes */
    int have_model;
    opt_model m;           /* owned: pool + workspace; borrows w */
    int have_rollout;
    opt_rollout ro;        /* owned; one per case */
    uint32_t case_index;   /* of the current case (save_tokens) */
    int64_t case_kv_bytes, case_ws_bytes; /* what the case holds while generating */
    int64_t peak_bytes;    /* high-water mark of current_bytes() */
    char model_desc[600];
    int cuda;              /* device = "cuda": generation runs in cu */
#ifdef OPT_HAVE_CUDA
    opt_cuda_backend cu;   /* owned: device, device weights, the case's device cache */
    char device_str[32];   /* "cuda:N" */
#endif
} opt_backend;

/* --------------------------------------------------------------- settings */

static const char *setting_str(const bc_settings *v, int i) {
    const char *s = bc_setting_at(v, (uint32_t)i)->s;
    return s ? s : "";
}

static int64_t setting_int(const bc_settings *v, int i) { return bc_setting_at(v, (uint32_t)i)->i; }

/* prompts_file names a file this process can read. */
static bc_status check_prompts_file(const char *path, bc_error *err) {
    struct stat sb;
    if (stat(path, &sb) != 0) {
        const int e = errno;
        bc_error_set(err, e == ENOENT || e == ENOTDIR ? BC_ERR_NOT_FOUND : BC_ERR_IO, "prompts_file %s: %s", path,
                     strerror(e));
        return bc_error_hint(err, "prompts_file names a text file: one prompt per line, as token ids");
    }
    if (S_ISDIR(sb.st_mode)) return bc_error_set(err, BC_ERR_IO, "prompts_file %s: a directory, not a file", path);
    if (!S_ISREG(sb.st_mode)) /* /dev/zero, a FIFO: never opened (fileio.h) */
        return bc_error_set(err, BC_ERR_IO, "prompts_file %s: must be a regular file", path);
    if ((uint64_t)sb.st_size > OPT_PROMPTS_MAX_BYTES)
        return bc_error_set(err, BC_ERR_FORMAT, "prompts_file %s: %lld bytes is over the limit of %llu bytes", path,
                            (long long)sb.st_size, (unsigned long long)OPT_PROMPTS_MAX_BYTES);
    if (access(path, R_OK) != 0)
        return bc_error_set(err, BC_ERR_IO, "prompts_file %s: cannot be read: %s", path, strerror(errno));
    return BC_OK;
}

/* What can be told of the settings without a model: the files they name
 * exist and they do not contradict each other. Quick and without side
 * effects; the descriptor's check_settings hook and create both run it. */
static bc_status check_settings(const bc_settings *v, bc_error *err) {
    if (!v || v->count < S_COUNT)
        return bc_error_set(err, BC_ERR_INTERNAL, "opt: %u setting values for a table of %d rows", v ? v->count : 0,
                            S_COUNT);
    const char *model = setting_str(v, S_MODEL), *checkpoint = setting_str(v, S_CHECKPOINT);
    const char *prompts_file = setting_str(v, S_PROMPTS_FILE);
#ifndef OPT_HAVE_CUDA
    if (strcmp(setting_str(v, S_DEVICE), "cuda") == 0) {
        bc_error_set(err, BC_ERR_DEVICE, "no CUDA device: this build of the opt plugin has no CUDA path (device = \"cuda\")");
        return bc_error_hint(err, "set device = \"cpu\", or rebuild benchctl where CMake finds the CUDA Toolkit");
    }
#endif
    if (model[0] && checkpoint[0]) {
        bc_error_set(err, BC_ERR_SETTING,
                     "model and checkpoint both set: the checkpoint's config.json gives the shape; remove model");
        return bc_error_hint(err, "model (\"%s\") picks the shape of synthetic weights only", model);
    }
    bc_status st;
    if (checkpoint[0] && (st = opt_checkpoint_check_files(checkpoint, err)) != BC_OK) return st;
    if (prompts_file[0] && (st = check_prompts_file(prompts_file, err)) != BC_OK) return st;
    return BC_OK;
}

static bc_status opt_check_settings(const bc_host *host, const bc_settings *settings, bc_error *err) {
    bc_status st = check_settings(settings, err);
    /* save_tokens is an output like a report's: the host refuses a path that
     * is not a regular file, a folder, or one another output also names */
    const char *save = setting_str(settings, S_SAVE_TOKENS);
    if (st == BC_OK && err && save[0] && BC_HAS(host, bc_host, output_check) && host->output_check &&
        (st = host->output_check(host, save, err)) != BC_OK) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err->message);
        snprintf(err->message, sizeof err->message, "opt: save_tokens: %.*s", (int)sizeof msg - 40, msg);
    }
    return st;
}

/* ------------------------------------------------------------- accounting */

static int64_t prompts_bytes(const opt_backend *s) {
    if (!s->have_prompts) return 0;
    int64_t n = (int64_t)s->prompts.n_lines * (int64_t)sizeof(opt_prompt);
    for (int i = 0; i < s->prompts.n_lines; i++) n += (int64_t)s->prompts.lines[i].n * (int64_t)sizeof(int32_t);
    return n;
}

static int64_t cache_bytes_now(const opt_backend *s, int64_t *kv, int64_t *ws) {
    *kv = *ws = 0;
    if (s->have_rollout) {
        *kv = (int64_t)(s->ro.kv.bytes + s->ro.kv_shared.bytes);
        if (s->ro.logits) *ws += (int64_t)s->ro.R * s->ro.V * (int64_t)sizeof(float);
        if (s->ro.logits_shared) *ws += (int64_t)s->ro.Bp * s->ro.V * (int64_t)sizeof(float);
        *ws += (int64_t)s->ro.n_samplers * ((int64_t)s->ro.V * (int64_t)sizeof(opt_sample_pair) + (int64_t)sizeof(opt_sampler));
    }
    if (s->have_model) *ws += (int64_t)s->m.ws.bytes;
    return *kv + *ws;
}

/* Every byte allocated now: weights (arena + layer table), prompts, cache,
 * rollout buffers. */
static int64_t current_bytes(const opt_backend *s) {
    int64_t kv, ws, n = cache_bytes_now(s, &kv, &ws) + prompts_bytes(s);
    if (s->have_weights)
        n += (int64_t)s->w.arena_bytes + (int64_t)s->w.hp.num_hidden_layers * (int64_t)sizeof(opt_layer_weights);
    if (s->have_rollout) {
        opt_rollout_bytes b = opt_rollout_plan(&s->ro, &s->w.hp, s->w.dtype, opt_pool_size(s->m.pool));
        n += (int64_t)b.buffers;
    }
    return n;
}

static void account(opt_backend *s) {
    int64_t n = current_bytes(s);
    if (n > s->peak_bytes) s->peak_bytes = n;
}

/* Copies m into the host's out, field by field, as far as out reaches. */
static void put_memory_stats(bc_memory_stats *out, const bc_memory_stats *m) {
    BC_SET(out, bc_memory_stats, weights_bytes, m->weights_bytes);
    BC_SET(out, bc_memory_stats, kv_cache_bytes, m->kv_cache_bytes);
    BC_SET(out, bc_memory_stats, workspace_bytes, m->workspace_bytes);
    BC_SET(out, bc_memory_stats, host_peak_bytes, m->host_peak_bytes);
    BC_SET(out, bc_memory_stats, device_peak_bytes, m->device_peak_bytes);
    BC_SET(out, bc_memory_stats, device_free_bytes, m->device_free_bytes);
    BC_SET(out, bc_memory_stats, device_total_bytes, m->device_total_bytes);
    BC_SET(out, bc_memory_stats, resident_bytes, m->resident_bytes);
}

/* -------------------------------------------------------------- lifecycle */

static int online_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static void end_rollout(opt_backend *s) {
#ifdef OPT_HAVE_CUDA
    if (s->cuda) opt_cuda_backend_end_case(&s->cu); /* borrows s->ro */
#endif
    if (s->have_rollout) opt_rollout_free(&s->ro, s->have_model ? &s->m : NULL);
    s->have_rollout = 0;
}

static void opt_destroy(void *inst) {
    opt_backend *s = inst;
    if (!s) return;
    end_rollout(s);
#ifdef OPT_HAVE_CUDA
    if (s->cuda) opt_cuda_backend_free(&s->cu);
#endif
    if (s->have_model) opt_model_free(&s->m);
    if (s->have_weights) opt_weights_free(&s->w);
    if (s->have_prompts) opt_prompts_free(&s->prompts);
    free(s);
}

static bc_status opt_create(const bc_host *host, const bc_settings *v, void **out, bc_error *err) {
    bc_status st = check_settings(v, err);
    if (st != BC_OK) return st;
    opt_backend *s = calloc(1, sizeof *s);
    if (!s) return bc_error_set(err, BC_ERR_NOMEM, "opt: out of memory");
    s->host = host;
    s->checkpoint = setting_str(v, S_CHECKPOINT);
    s->prompts_file = setting_str(v, S_PROMPTS_FILE);
    s->save_tokens = setting_str(v, S_SAVE_TOKENS);
    s->weights_seed = (uint64_t)setting_int(v, S_WEIGHTS_SEED);
    s->threads = setting_int(v, S_THREADS) > 0 ? (int)setting_int(v, S_THREADS) : online_cores();
    s->stop_at_eos = setting_int(v, S_STOP_AT_EOS) != 0;
    s->shared_prefill = setting_int(v, S_SHARED_PREFILL) != 0;
    const char *mc = setting_str(v, S_MEMORY_CHECK);
    s->memory_check = strcmp(mc, "off") == 0 ? MEMCHECK_OFF : strcmp(mc, "warn") == 0 ? MEMCHECK_WARN : MEMCHECK_REFUSE;
    if (s->checkpoint[0]) {
        /* the shape is the checkpoint's config.json; its weights load later */
        st = opt_hparams_from_checkpoint(s->checkpoint, &s->hp, err);
        snprintf(s->model_desc, sizeof s->model_desc, "%s", s->checkpoint);
    } else {
        const char *model = setting_str(v, S_MODEL);
        s->preset = model[0] ? model : OPT_DEFAULT_PRESET;
        st = opt_hparams_preset(s->preset, &s->hp, err);
        snprintf(s->model_desc, sizeof s->model_desc, "facebook/opt-%s (synthetic weights, seed %llu)", s->preset,
                 (unsigned long long)s->weights_seed);
    }
    if (st == BC_OK && s->prompts_file[0]) {
        st = opt_prompts_read(&s->prompts, s->prompts_file, s->hp.vocab_size, err);
        s->have_prompts = st == BC_OK;
    }
    if (st != BC_OK) {
        opt_destroy(s);
        return st;
    }
    s->peak_bytes = current_bytes(s);
#ifdef OPT_HAVE_CUDA
    /* CUDA: the device is opened now for describe; without one, prepare
     * fails with "no CUDA device: ..." (the backend cannot start) */
    s->cuda = strcmp(setting_str(v, S_DEVICE), "cuda") == 0;
    if (s->cuda) opt_cuda_backend_init(&s->cu, (int)setting_int(v, S_DEVICE_INDEX), setting_int(v, S_CUDA_GRAPHS) != 0);
#endif
    *out = s;
    return BC_OK;
}

static bc_status opt_describe(void *inst, bc_backend_info *info, bc_error *err) {
    (void)err;
    opt_backend *s = inst;
    const opt_hparams *hp = &s->hp;
    BC_SET(info, bc_backend_info, model, s->model_desc);
    BC_SET(info, bc_backend_info, device, "cpu");
    BC_SET(info, bc_backend_info, device_name, NULL);
    BC_SET(info, bc_backend_info, driver, NULL);
    BC_SET(info, bc_backend_info, model_family, "opt");
    BC_SET(info, bc_backend_info, n_parameters, opt_hparams_n_parameters(hp));
    BC_SET(info, bc_backend_info, n_layers, hp->num_hidden_layers);
    BC_SET(info, bc_backend_info, hidden_size, hp->hidden_size);
    BC_SET(info, bc_backend_info, n_heads, hp->num_attention_heads);
    BC_SET(info, bc_backend_info, ffn_size, hp->ffn_dim);
    BC_SET(info, bc_backend_info, vocab_size, hp->vocab_size);
    BC_SET(info, bc_backend_info, max_positions, hp->max_position_embeddings);
    /* the kernels opt_model_init picks (or picked): the best with a table */
    const opt_kernels *k = s->have_model ? s->m.k : opt_kernels_best();
    BC_SET(info, bc_backend_info, cpu_kernels, opt_isa_name(k->isa));
    BC_SET(info, bc_backend_info, cpu_threads, s->threads);
#ifdef OPT_HAVE_CUDA
    if (s->cuda) {
        opt_cuda_backend_describe(&s->cu, info, s->device_str, sizeof s->device_str);
        BC_SET(info, bc_backend_info, cpu_kernels, NULL);
        BC_SET(info, bc_backend_info, cpu_threads, -1);
    }
#endif
    return BC_OK;
}

/* ------------------------------------------------------------------ cases */

/* The case's precision as a dtype this backend has kernels for. */
static bc_status case_dtype(const bc_case *c, opt_dtype *dt, bc_error *err) {
    const char *name = c->precision_ops && c->precision_ops->dtype ? c->precision_ops->dtype : "(none)";
    if (strcmp(name, "float32") == 0) *dt = OPT_F32;
    else if (strcmp(name, "float16") == 0) *dt = OPT_F16;
    else if (strcmp(name, "bfloat16") == 0) *dt = OPT_BF16;
    else
        return bc_error_set(err, BC_ERR_UNSUPPORTED,
                            "opt: precision %s (dtype %s) is not supported; the opt backend has kernels for float32, "
                            "float16 and bfloat16",
                            c->precision ? c->precision : "?", name);
    return BC_OK;
}

/* The rollout a case asks for. */
static bc_status rollout_params(const opt_backend *s, const bc_case *c, opt_rollout_params *p, bc_error *err) {
    if (!c->sampling) return bc_error_set(err, BC_ERR_INVALID, "opt: case %u has no sampling parameters", c->index);
    if (c->batch_size > INT_MAX || c->samples_per_prompt > INT_MAX || c->prompt_length > INT_MAX ||
        c->response_length > INT_MAX)
        return bc_error_set(err, BC_ERR_INFEASIBLE, "opt: case %u: batch %u x %u samples, prompt %u, response %u: too large",
                            c->index, c->batch_size, c->samples_per_prompt, c->prompt_length, c->response_length);
    const bc_sampling *sp = c->sampling;
    *p = (opt_rollout_params){.batch_size = (int)c->batch_size,
                              .samples_per_prompt = (int)c->samples_per_prompt,
                              .prompt_length = (int)c->prompt_length,
                              .response_length = (int)c->response_length,
                              .sampling = {sp->temperature, sp->top_p, sp->top_k, sp->seed},
                              .stop_at_eos = s->stop_at_eos,
                              .shared_prefill = s->shared_prefill,
                              .prompts = s->have_prompts ? &s->prompts : NULL};
    return BC_OK;
}

/* a + b, or -1 once either is -1 or the sum leaves int64 */
static int64_t add_bytes(int64_t a, int64_t b) {
    int64_t r;
    return a < 0 || b < 0 || __builtin_add_overflow(a, b, &r) ? -1 : r;
}

static int64_t size_bytes(size_t n) { return n > (size_t)INT64_MAX ? -1 : (int64_t)n; }

/* The memory case c will take, without allocating it (all fields). Every sum
 * is checked: a plan that leaves 64 bits is refused, not wrapped. */
static bc_status plan_case(const opt_backend *s, const bc_case *c, bc_memory_stats *out, bc_error *err) {
    opt_dtype dt = OPT_F32;
    opt_rollout_params p;
    opt_rollout ro;
    bc_status st = case_dtype(c, &dt, err);
    if (st == BC_OK) st = rollout_params(s, c, &p, err);
    if (st == BC_OK) st = opt_rollout_dims(&ro, &s->hp, &p, err);
    if (st != BC_OK) return st;
    const opt_hparams *hp = &s->hp;
    const opt_rollout_bytes b = opt_rollout_plan(&ro, hp, dt, s->threads);
    const int64_t weights = size_bytes(opt_weights_bytes(hp, dt));
    const int64_t kv = b.kv_cache >= SIZE_MAX / 2 ? -1 : size_bytes(b.kv_cache);
    int64_t host_fixed = add_bytes(weights, (int64_t)hp->num_hidden_layers * (int64_t)sizeof(opt_layer_weights));
    host_fixed = add_bytes(add_bytes(host_fixed, prompts_bytes(s)), size_bytes(b.buffers));
    const int64_t peak = add_bytes(add_bytes(host_fixed, kv), size_bytes(b.workspace));
    if (weights <= 0 || peak < 0)
        return bc_error_set(err, BC_ERR_INFEASIBLE,
                            "the case's memory does not fit in 64 bits (%d layers x %d rows x %d positions x "
                            "hidden_size %d of KV cache)",
                            hp->num_hidden_layers, ro.R, ro.Stot, hp->hidden_size);
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->weights_bytes = weights;
    out->kv_cache_bytes = kv;
    out->workspace_bytes = (int64_t)b.workspace;
    out->host_peak_bytes = peak;
    out->resident_bytes = out->host_peak_bytes;
    out->device_peak_bytes = out->device_free_bytes = out->device_total_bytes = -1;
#ifdef OPT_HAVE_CUDA
    if (s->cuda) { /* device bytes; the host keeps weights and the rollout's buffers */
        opt_cuda_backend_plan_memory(hp, dt, &ro, out);
        out->host_peak_bytes = host_fixed;
        out->resident_bytes = out->device_peak_bytes;
    }
#endif
    return BC_OK;
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

/* Memory admission on the host: the plan against MemAvailable plus what this
 * backend already holds (its weights and cache are reused or freed before
 * the case allocates), or, without /proc/meminfo, the physical memory.
 * memory_check decides what an excess is: an error, a warning, nothing. */
static bc_status admit_host_memory(const opt_backend *s, const bc_memory_stats *plan, bc_error *err) {
    if (s->memory_check == MEMCHECK_OFF) return BC_OK;
    const int64_t total = physical_memory_bytes(), avail = available_memory_bytes();
    const int64_t held = current_bytes(s);
    const int64_t have = avail >= 0 ? add_bytes(avail, held) : total;
    if (have <= 0 || plan->host_peak_bytes <= have) return BC_OK;
    char there[160];
    if (avail >= 0)
        snprintf(there, sizeof there, "%.1f GiB is available (MemAvailable %.1f GiB + %.1f GiB this backend holds; "
                 "the machine has %.1f GiB)", gib(have), gib(avail), gib(held), gib(total));
    else
        snprintf(there, sizeof there, "this machine has %.1f GiB", gib(total));
    if (s->memory_check == MEMCHECK_WARN) {
        if (s->host && s->host->log)
            s->host->log(s->host, BC_LOG_WARN,
                         "case needs %.1f GiB of memory; %s (memory_check = \"warn\": running it anyway)",
                         gib(plan->host_peak_bytes), there);
        return BC_OK;
    }
    bc_error_set(err, BC_ERR_INFEASIBLE,
                 "needs %.1f GiB of memory (weights %.1f GiB, KV cache %.1f GiB, workspace %.1f GiB); %s",
                 gib(plan->host_peak_bytes), gib(plan->weights_bytes), gib(plan->kv_cache_bytes),
                 gib(plan->workspace_bytes), there);
    return bc_error_hint(err, "backend setting memory_check = \"warn\" (or \"off\") runs such a case anyway");
}

/* Can case c run? Precision, prompt length, positions and memory, from the
 * shape alone: loads nothing. */
static bc_status opt_check_case(void *inst, const bc_case *c, bc_error *err) {
    opt_backend *s = inst;
    bc_memory_stats plan;
    bc_status st = plan_case(s, c, &plan, err);
    if (st != BC_OK) return st;
    if (!s->cuda && (st = admit_host_memory(s, &plan, err)) != BC_OK) return st;
#ifdef OPT_HAVE_CUDA
    if (s->cuda && s->memory_check != MEMCHECK_OFF) {
        const int64_t have = opt_cuda_backend_total_bytes(&s->cu);
        if (have > 0 && plan.device_peak_bytes > have) {
            if (s->memory_check == MEMCHECK_WARN) {
                if (s->host && s->host->log)
                    s->host->log(s->host, BC_LOG_WARN, "case needs %.1f GiB of device memory; %s has %.1f GiB",
                                 gib(plan.device_peak_bytes), s->cu.name, gib(have));
                return BC_OK;
            }
            return bc_error_set(err, BC_ERR_INFEASIBLE,
                                "needs %.1f GiB of device memory (weights %.1f GiB, KV cache %.1f GiB, workspace "
                                "%.1f GiB); %s has %.1f GiB",
                                gib(plan.device_peak_bytes), gib(plan.weights_bytes), gib(plan.kv_cache_bytes),
                                gib(plan.workspace_bytes), s->cu.name, gib(have));
        }
    }
#endif
    return BC_OK;
}

static bc_status opt_plan_memory(void *inst, const bc_case *c, bc_memory_stats *out, bc_error *err) {
    bc_memory_stats plan;
    bc_status st = plan_case(inst, c, &plan, err);
    if (st == BC_OK) put_memory_stats(out, &plan);
    return st;
}

/* Heavy checks, once before the first case: the checkpoint's tensors (so
 * a broken file stops the run before it starts) and the CUDA device. */
static bc_status opt_prepare(void *inst, bc_error *err) {
    opt_backend *s = inst;
    bc_status st = BC_OK;
#ifdef OPT_HAVE_CUDA
    if (s->cuda && (st = opt_cuda_backend_open(&s->cu, err)) != BC_OK) return st;
#endif
    if (s->checkpoint[0]) st = opt_checkpoint_validate(s->checkpoint, err);
    return st;
}

static bc_status build_weights(opt_backend *s, opt_dtype dt, bc_error *err) {
    if (s->have_weights && s->w.dtype == dt) return BC_OK;
    end_rollout(s);
    if (s->have_weights) opt_weights_free(&s->w);
    s->have_weights = 0;
    bc_status st;
    if (s->checkpoint[0]) {
        st = opt_weights_load_checkpoint(&s->w, s->checkpoint, dt, err);
    } else {
        st = opt_weights_alloc(&s->w, &s->hp, dt, err);
        if (st == BC_OK && (st = opt_weights_init_synthetic(&s->w, s->weights_seed, err)) != BC_OK)
            opt_weights_free(&s->w);
    }
    if (st != BC_OK) return st;
    s->have_weights = 1;
    s->hp = s->w.hp;
    account(s);
    return BC_OK;
}

static bc_status opt_begin_case(void *inst, const bc_case *c, bc_error *err) {
    opt_backend *s = inst;
    opt_dtype dt = OPT_F32;
    opt_rollout_params p;
    bc_status st = case_dtype(c, &dt, err);
    if (st == BC_OK) st = rollout_params(s, c, &p, err);
    if (st != BC_OK) return st;
    if (!s->cuda) { /* admission again, with the memory there is now: a failed case, not an OOM kill */
        bc_memory_stats plan;
        if ((st = plan_case(s, c, &plan, err)) != BC_OK || (st = admit_host_memory(s, &plan, err)) != BC_OK)
            return st;
    }
    end_rollout(s);
    s->case_index = c->index;
#ifdef OPT_HAVE_CUDA
    if (s->cuda && (st = opt_cuda_backend_open(&s->cu, err)) != BC_OK) return st; /* before building weights */
#endif
    if ((st = build_weights(s, dt, err)) != BC_OK) return st;
#ifdef OPT_HAVE_CUDA
    if (s->cuda) { /* no CPU model: prompts and buffers here, the cache on the device */
        if ((st = opt_rollout_init(&s->ro, &s->w.hp, &p, err)) != BC_OK) return st;
        s->have_rollout = 1;
        st = opt_cuda_backend_begin_case(&s->cu, &s->w, &s->ro, err);
        account(s);
        return st;
    }
#endif
    if (!s->have_model) {
        if ((st = opt_model_init(&s->m, &s->w, s->threads, err)) != BC_OK) return st;
        s->have_model = 1;
    }
    if ((st = opt_rollout_init(&s->ro, &s->w.hp, &p, err)) != BC_OK) return st;
    s->have_rollout = 1;
    if ((st = opt_rollout_acquire(&s->ro, &s->m, err)) != BC_OK) return st;
    cache_bytes_now(s, &s->case_kv_bytes, &s->case_ws_bytes);
    account(s);
    return BC_OK;
}

static bc_status opt_expand_prompts(void *inst, bc_error *err) {
    opt_backend *s = inst;
    if (!s->have_rollout) return bc_error_set(err, BC_ERR_INTERNAL, "opt: expand_prompts outside a case");
    return opt_rollout_expand(&s->ro, err);
}

/* The last rollout's results into the host's out, as far as out reaches. */
static void put_generation_stats(bc_generation_stats *out, const opt_rollout *ro) {
    BC_SET(out, bc_generation_stats, prefill_forward_ms, ro->prefill_ms);
    BC_SET(out, bc_generation_stats, decode_forward_ms, ro->decode_ms);
    BC_SET(out, bc_generation_stats, num_decode_forwards, ro->n_decode_forwards);
    BC_SET(out, bc_generation_stats, num_generated_tokens, ro->n_generated);
    BC_SET(out, bc_generation_stats, returned_response_length, ro->returned_len);
    BC_SET(out, bc_generation_stats, first_token_ms, ro->first_token_ms);
    BC_SET(out, bc_generation_stats, decode_step_ms, ro->step_ms); /* owned by the rollout, freed by end_case */
    BC_SET(out, bc_generation_stats, n_decode_steps, (uint32_t)ro->n_steps);
    BC_SET(out, bc_generation_stats, num_prefill_tokens, ro->n_prefill_tokens);
    BC_SET(out, bc_generation_stats, num_decode_tokens, ro->n_decode_tokens);
    BC_SET(out, bc_generation_stats, prompt_width_tokens, ro->Tp);
    BC_SET(out, bc_generation_stats, prompt_min_tokens, ro->prompt_min);
    BC_SET(out, bc_generation_stats, prompt_max_tokens, ro->prompt_max);
    BC_SET(out, bc_generation_stats, tokens, ro->seq + ro->response_start); /* the rollout's, until end_case */
    BC_SET(out, bc_generation_stats, token_rows, (int64_t)ro->R);
    BC_SET(out, bc_generation_stats, token_cols, (int64_t)ro->returned_len);
    BC_SET(out, bc_generation_stats, token_stride, (int64_t)ro->Stot);
}

static bc_status opt_generate(void *inst, bc_generation_stats *out, bc_error *err) {
    opt_backend *s = inst;
    if (!s->have_rollout) return bc_error_set(err, BC_ERR_INTERNAL, "opt: generate outside a case");
    bc_status st;
#ifdef OPT_HAVE_CUDA
    if (s->cuda)
        st = opt_cuda_backend_generate(&s->cu, err);
    else
#endif
        st = opt_rollout_generate(&s->ro, &s->m, err);
    account(s);
    if (st != BC_OK) return st;
    put_generation_stats(out, &s->ro);
    return BC_OK;
}

/* Writes the generated ids of every row, one line each, to save_tokens
 * ("{case}" in the path becomes the case index). */
static bc_status save_tokens(opt_backend *s, bc_error *err) {
    char path[4096];
    const char *mark = strstr(s->save_tokens, "{case}");
    if (mark)
        snprintf(path, sizeof path, "%.*s%u%s", (int)(mark - s->save_tokens), s->save_tokens, s->case_index, mark + 6);
    else
        snprintf(path, sizeof path, "%s", s->save_tokens);
    bc_output *o = s->host->output_open(s->host, path, err);
    if (!o) return err && err->code ? err->code : BC_ERR_IO;
    const opt_rollout *ro = &s->ro;
    bc_status st = BC_OK;
    for (int r = 0; r < ro->R && st == BC_OK; r++) {
        const int32_t *resp = ro->seq + (size_t)r * ro->Stot + ro->response_start;
        for (int k = 0; k < ro->returned_len && st == BC_OK; k++)
            st = s->host->output_printf(o, err, k ? " %d" : "%d", (int)resp[k]);
        if (st == BC_OK) st = s->host->output_printf(o, err, "\n");
    }
    if (st != BC_OK) {
        s->host->output_abort(o);
        return st;
    }
    return s->host->output_commit(o, err);
}

static bc_status opt_post_process(void *inst, bc_error *err) {
    opt_backend *s = inst;
    if (!s->have_rollout) return bc_error_set(err, BC_ERR_INTERNAL, "opt: post_process outside a case");
    bc_status st = opt_rollout_post_process(&s->ro, err);
    if (st == BC_OK && s->save_tokens[0]) st = save_tokens(s, err);
    return st;
}

static bc_status opt_cache_release(void *inst, bc_error *err) {
    (void)err;
    opt_backend *s = inst;
#ifdef OPT_HAVE_CUDA
    if (s->cuda) {
        opt_cuda_backend_cache_release(&s->cu);
        return BC_OK;
    }
#endif
    if (s->have_rollout) opt_rollout_release(&s->ro, &s->m);
#if defined(__GLIBC__)
    /* glibc keeps freed blocks below its (adaptive) mmap threshold in the
     * heap; give them back to the system, so release really releases */
    malloc_trim(0);
#endif
    return BC_OK;
}

static bc_status opt_cache_acquire(void *inst, bc_error *err) {
    opt_backend *s = inst;
    if (!s->have_rollout) return bc_error_set(err, BC_ERR_INTERNAL, "opt: cache_acquire outside a case");
#ifdef OPT_HAVE_CUDA
    if (s->cuda) return opt_cuda_backend_cache_acquire(&s->cu, err);
#endif
    bc_status st = opt_rollout_acquire(&s->ro, &s->m, err);
    account(s);
    return st;
}

static void opt_reset_peak_memory(void *inst) {
    opt_backend *s = inst;
    s->peak_bytes = current_bytes(s);
#ifdef OPT_HAVE_CUDA
    if (s->cuda) opt_cuda_backend_reset_peak(&s->cu);
#endif
}

static bc_status opt_read_memory(void *inst, bc_memory_stats *out, bc_error *err) {
    opt_backend *s = inst;
    account(s);
    bc_memory_stats m = {.struct_size = sizeof m};
    m.weights_bytes = s->have_weights ? (int64_t)s->w.arena_bytes : 0;
    m.kv_cache_bytes = s->have_rollout ? s->case_kv_bytes : 0;
    m.workspace_bytes = s->have_rollout ? s->case_ws_bytes : 0;
    m.host_peak_bytes = s->peak_bytes;
    m.device_peak_bytes = m.device_free_bytes = m.device_total_bytes = -1;
    m.resident_bytes = current_bytes(s); /* after a release: without the cache */
    bc_status st = BC_OK;
#ifdef OPT_HAVE_CUDA
    if (s->cuda) st = opt_cuda_backend_read_memory(&s->cu, &m, err); /* device bytes */
#else
    (void)err;
#endif
    put_memory_stats(out, &m);
    return st;
}

static void opt_end_case(void *inst) {
    opt_backend *s = inst;
    end_rollout(s);
}

static const bc_backend_ops opt_ops = {
    .struct_size = sizeof(bc_backend_ops),
    .create = opt_create,
    .destroy = opt_destroy,
    .describe = opt_describe,
    .check_case = opt_check_case,
    .prepare = opt_prepare,
    .plan_memory = opt_plan_memory,
    .begin_case = opt_begin_case,
    .expand_prompts = opt_expand_prompts,
    .generate = opt_generate,
    .post_process = opt_post_process,
    .cache_release = opt_cache_release,
    .cache_acquire = opt_cache_acquire,
    .reset_peak_memory = opt_reset_peak_memory,
    .read_memory = opt_read_memory,
    .end_case = opt_end_case,
    /* begin_case converts the weights when the precision changes; nothing
     * else is costly to switch */
    .rebuild_axes = BC_AXIS_PRECISION,
};

static const bc_plugin_desc opt_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_BACKEND,
    .name = "opt",
    .version = "0.2.0",
    .description = "native OPT rollout engine on the CPU or a CUDA GPU: synthetic or Hugging Face weights, "
                   "fp32/fp16/bf16",
    BC_SETTINGS_TABLE(opt_settings),
    .ops = &opt_ops,
    .check_settings = opt_check_settings,
};

BC_PLUGIN_DEFINE(opt_desc)
