/* opt_plugin.c: the `opt` backend plugin, benchctl's native OPT rollout
 * engine on the CPU. ABI glue only: the model is in model.c (forward.h), the
 * rollout in rollout.c, sampling in sampling.c, kernels in kernels*.c.
 *
 * Lifetime of what it owns:
 *   create       settings, the shape (preset); nothing big
 *   begin_case   weights (built again only when the case's precision changes),
 *                the model's pool (once), the rollout's prompts and buffers,
 *                and its cache (KV cache + workspace)
 *   cache_release / cache_acquire   free and take back the cache
 *   end_case     frees the rollout and its cache; weights stay for the next case
 *   destroy      everything
 * Memory accounting is exact: every byte this plugin allocates for the model,
 * the cache and the rollout is counted (see docs/opt.md, "Memory").
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h> /* malloc_trim */
#endif

#include "benchctl/plugin.h"
#include "checkpoint.h"
#include "rollout.h"
#ifdef OPT_HAVE_CUDA
#include "cuda_backend.h" /* CUDA path: plugins/opt/cuda, docs/cuda.md */
#endif

enum { S_MODEL, S_CHECKPOINT, S_WEIGHTS_SEED, S_THREADS, S_DEVICE, S_STOP_AT_EOS, S_SHARED_PREFILL, S_PROMPTS_FILE,
       S_SAVE_TOKENS, S_DEVICE_INDEX, S_CUDA_GRAPHS, S_COUNT };

static const char *const model_choices[] = {"125m", "350m", "1.3b", "2.7b", "6.7b", "13b", "30b", "66b", NULL};
static const char *const device_choices[] = {"cpu", "cuda", NULL};

static const bc_setting_desc opt_settings[S_COUNT] = {
    [S_MODEL] = {.name = "model", .type = BC_SETTING_ENUM, .default_string = "125m", .choices = model_choices,
                 .help = "OPT shape preset (synthetic weights unless checkpoint is set)"},
    [S_CHECKPOINT] = {.name = "checkpoint", .type = BC_SETTING_STRING, .default_string = "",
                      .help = "Hugging Face checkpoint directory (config.json + safetensors); \"\" = synthetic"},
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
                        .help = "prompts, one line of space-separated token ids each (\"\" = synthetic)"},
    [S_SAVE_TOKENS] = {.name = "save_tokens", .type = BC_SETTING_STRING, .default_string = "",
                       .help = "write each rollout's generated ids here, one line per row ({case} = case index)"},
    /* CUDA path (docs/cuda.md) */
    [S_DEVICE_INDEX] = {.name = "device_index", .type = BC_SETTING_INT, .default_int = 0, .has_range = 1, .min = 0,
                        .max = 1024, .help = "CUDA device index (device = \"cuda\")"},
    [S_CUDA_GRAPHS] = {.name = "cuda_graphs", .type = BC_SETTING_BOOL, .default_int = 1,
                       .help = "capture the decode step in a CUDA graph per batch and replay it (device = \"cuda\")"},
};

typedef struct opt_backend {
    const bc_host *host;
    const char *preset, *checkpoint, *prompts_file, *save_tokens; /* host-owned settings */
    uint64_t weights_seed;
    int threads, stop_at_eos, shared_prefill;
    opt_hparams hp;        /* the preset's shape, or the checkpoint's once read */
    int have_checkpoint_hp;/* hp is the checkpoint's config.json (read by a plan or the load) */
    int have_weights;
    opt_weights w;         /* owned; rebuilt when the precision changes */
    int have_model;
    opt_model m;           /* owned: pool + workspace; borrows w */
    int have_rollout;
    opt_rollout ro;        /* owned; one per case */
    bc_case c;             /* the current case */
    int64_t case_kv_bytes, case_ws_bytes; /* what the case holds while generating */
    int64_t peak_bytes;    /* high-water mark of current_bytes() */
    char model_desc[600], device_name[160];
    int cuda;              /* device = "cuda": generation runs in cu */
#ifdef OPT_HAVE_CUDA
    opt_cuda_backend cu;   /* owned: device, device weights, the case's device cache */
    char device_str[32];   /* "cuda:N" */
#endif
} opt_backend;

/* ------------------------------------------------------------- accounting */

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

/* Every byte allocated now: weights (arena + layer table), cache, rollout buffers. */
static int64_t current_bytes(const opt_backend *s) {
    int64_t kv, ws, n = cache_bytes_now(s, &kv, &ws);
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

/* -------------------------------------------------------------- lifecycle */

static int online_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static bc_status opt_create(const bc_host *host, const bc_setting_value *v, void **out, bc_error *err) {
#ifndef OPT_HAVE_CUDA
    if (strcmp(v[S_DEVICE].s, "cuda") == 0)
        return bc_error_set(err, BC_ERR_DEVICE, "no CUDA device: this build of the opt plugin has no CUDA path");
#endif
    opt_backend *s = calloc(1, sizeof *s);
    if (!s) return bc_error_set(err, BC_ERR_NOMEM, "opt: out of memory");
    s->host = host;
    s->preset = v[S_MODEL].s;
    s->checkpoint = v[S_CHECKPOINT].s ? v[S_CHECKPOINT].s : "";
    s->prompts_file = v[S_PROMPTS_FILE].s ? v[S_PROMPTS_FILE].s : "";
    s->save_tokens = v[S_SAVE_TOKENS].s ? v[S_SAVE_TOKENS].s : "";
    s->weights_seed = (uint64_t)v[S_WEIGHTS_SEED].i;
    s->threads = v[S_THREADS].i > 0 ? (int)v[S_THREADS].i : online_cores();
    s->stop_at_eos = v[S_STOP_AT_EOS].i != 0;
    s->shared_prefill = v[S_SHARED_PREFILL].i != 0;
    bc_status st = opt_hparams_preset(s->preset, &s->hp, err);
    if (st != BC_OK) {
        free(s);
        return st;
    }
    if (s->checkpoint[0])
        snprintf(s->model_desc, sizeof s->model_desc, "%s", s->checkpoint);
    else
        snprintf(s->model_desc, sizeof s->model_desc, "facebook/opt-%s (synthetic weights, seed %llu)", s->preset,
                 (unsigned long long)s->weights_seed);
    /* the kernels opt_model_init will pick: the best ISA with a kernel table */
    const opt_kernels *k = NULL;
    for (int i = (int)opt_isa_detect(); !k && i >= 0; i--) k = opt_kernels_for((opt_isa)i);
    snprintf(s->device_name, sizeof s->device_name, "CPU, %s kernels, %d threads",
             k ? opt_isa_name(k->isa) : "no", s->threads);
#ifdef OPT_HAVE_CUDA
    /* CUDA: the device is opened now for describe; without one, every case
     * fails with "no CUDA device: ..." and the run goes on */
    s->cuda = strcmp(v[S_DEVICE].s, "cuda") == 0;
    if (s->cuda) opt_cuda_backend_init(&s->cu, (int)v[S_DEVICE_INDEX].i, v[S_CUDA_GRAPHS].i != 0);
#endif
    *out = s;
    return BC_OK;
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
    free(s);
}

static bc_status opt_describe(void *inst, bc_backend_info *info, bc_error *err) {
    (void)err;
    opt_backend *s = inst;
    info->model = s->model_desc;
    info->device = "cpu";
    info->device_name = s->device_name;
    info->driver = NULL;
#ifdef OPT_HAVE_CUDA
    if (s->cuda) opt_cuda_backend_describe(&s->cu, info, s->device_str, sizeof s->device_str);
#endif
    return BC_OK;
}

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

static opt_rollout_params rollout_params(const opt_backend *s, const bc_case *c) {
    opt_rollout_params p = {.batch_size = (int)c->batch_size,
                            .samples_per_prompt = (int)c->samples_per_prompt,
                            .prompt_length = (int)c->prompt_length,
                            .response_length = (int)c->response_length,
                            .sampling = c->sampling,
                            .stop_at_eos = s->stop_at_eos,
                            .shared_prefill = s->shared_prefill,
                            .prompts_file = s->prompts_file};
    return p;
}

static bc_status opt_plan_memory(void *inst, const bc_case *c, bc_memory_stats *out, bc_error *err) {
    opt_backend *s = inst;
    opt_dtype dt = OPT_F32;
    bc_status st = case_dtype(c, &dt, err);
    if (st != BC_OK) return st;
    if (s->checkpoint[0] && !s->have_checkpoint_hp) {
        /* the shape is the checkpoint's config.json, not the preset's; read
         * it once, without the weights */
        if ((st = opt_hparams_from_checkpoint(s->checkpoint, &s->hp, err)) != BC_OK) return st;
        s->have_checkpoint_hp = 1;
    }
    const opt_hparams *hp = s->have_weights ? &s->w.hp : &s->hp;
    opt_rollout ro;
    opt_rollout_params p = rollout_params(s, c);
    if ((st = opt_rollout_init(&ro, hp, &p, err)) != BC_OK) return st;
    opt_rollout_bytes b = opt_rollout_plan(&ro, hp, dt, s->threads);
    opt_rollout_free(&ro, NULL);
    int64_t weights = (int64_t)opt_weights_bytes(hp, dt);
    out->weights_bytes = weights;
    out->kv_cache_bytes = (int64_t)b.kv_cache;
    out->workspace_bytes = (int64_t)b.workspace;
    out->host_peak_bytes = weights + (int64_t)hp->num_hidden_layers * (int64_t)sizeof(opt_layer_weights) +
                           (int64_t)(b.kv_cache + b.workspace + b.buffers);
    out->device_peak_bytes = out->device_free_bytes = out->device_total_bytes = -1;
#ifdef OPT_HAVE_CUDA
    if (s->cuda) { /* device bytes; the host keeps weights and the rollout's buffers */
        if ((st = opt_rollout_init(&ro, hp, &p, err)) != BC_OK) return st;
        opt_cuda_backend_plan_memory(hp, dt, &ro, out);
        opt_rollout_free(&ro, NULL);
        out->host_peak_bytes = weights + (int64_t)hp->num_hidden_layers * (int64_t)sizeof(opt_layer_weights) +
                               (int64_t)b.buffers;
    }
#endif
    return BC_OK;
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
    s->have_checkpoint_hp = s->checkpoint[0] != 0;
    account(s);
    return BC_OK;
}

static bc_status opt_begin_case(void *inst, const bc_case *c, bc_error *err) {
    opt_backend *s = inst;
    opt_dtype dt = OPT_F32;
    bc_status st = case_dtype(c, &dt, err);
    if (st != BC_OK) return st;
    end_rollout(s);
#ifdef OPT_HAVE_CUDA
    if (s->cuda && (st = opt_cuda_backend_open(&s->cu, err)) != BC_OK) return st; /* before building weights */
#endif
    if ((st = build_weights(s, dt, err)) != BC_OK) return st;
#ifdef OPT_HAVE_CUDA
    if (s->cuda) { /* no CPU model: prompts and buffers here, the cache on the device */
        s->c = *c;
        opt_rollout_params cp = rollout_params(s, c);
        if ((st = opt_rollout_init(&s->ro, &s->w.hp, &cp, err)) != BC_OK) return st;
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
    s->c = *c;
    opt_rollout_params p = rollout_params(s, c);
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

static bc_status opt_generate(void *inst, bc_generation_stats *out, bc_error *err) {
    opt_backend *s = inst;
    if (!s->have_rollout) return bc_error_set(err, BC_ERR_INTERNAL, "opt: generate outside a case");
#ifdef OPT_HAVE_CUDA
    if (s->cuda) return opt_cuda_backend_generate(&s->cu, out, err);
#endif
    bc_status st = opt_rollout_generate(&s->ro, &s->m, err);
    account(s);
    if (st != BC_OK) return st;
    out->prefill_forward_ms = s->ro.prefill_ms;
    out->decode_forward_ms = s->ro.decode_ms;
    out->num_decode_forwards = s->ro.n_decode_forwards;
    out->num_generated_tokens = s->ro.n_generated;
    out->returned_response_length = s->ro.returned_len;
    return BC_OK;
}

/* Writes the generated ids of every row, one line each, to save_tokens
 * ("{case}" in the path becomes the case index). */
static bc_status save_tokens(opt_backend *s, bc_error *err) {
    char path[4096];
    const char *mark = strstr(s->save_tokens, "{case}");
    if (mark)
        snprintf(path, sizeof path, "%.*s%u%s", (int)(mark - s->save_tokens), s->save_tokens, s->c.index, mark + 6);
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
    (void)err;
    opt_backend *s = inst;
    account(s);
    out->weights_bytes = s->have_weights ? (int64_t)s->w.arena_bytes : 0;
    out->kv_cache_bytes = s->have_rollout ? s->case_kv_bytes : 0;
    out->workspace_bytes = s->have_rollout ? s->case_ws_bytes : 0;
    out->host_peak_bytes = s->peak_bytes;
    out->device_peak_bytes = out->device_free_bytes = out->device_total_bytes = -1;
#ifdef OPT_HAVE_CUDA
    if (s->cuda) return opt_cuda_backend_read_memory(&s->cu, out, err); /* device bytes */
#endif
    return BC_OK;
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
};

static const bc_plugin_desc opt_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_BACKEND,
    .name = "opt",
    .version = "0.1.0",
    .description = "native OPT rollout engine (CPU): synthetic or Hugging Face weights, fp32/fp16/bf16",
    .settings = opt_settings,
    .n_settings = S_COUNT,
    .ops = &opt_ops,
};

BC_PLUGIN_DEFINE(opt_desc)
