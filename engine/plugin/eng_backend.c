/* eng_backend.c: the backend plugin every model family shares (eng_plugin.h):
 * the backend instance and its hooks, on the CPU or
 * (device = "cuda") the family's CUDA device. ABI glue only: the family
 * (family.h) gives the shape, the weights and the forward; the device is
 * picked once at create (device.h: device_cpu.c, the family's cuda/); the
 * rollout and its one generate loop are in engine/rollout. The glue's files:
 * eng_settings.c (the settings and metrics tables, their checks), this one
 * (accounting, create, destroy, describe), eng_cases.c (the hooks of a case,
 * the ops table).
 *
 * Lifetime of what it owns:
 *   check_settings  (no instance) the files the settings name exist, and the
 *                settings agree with each other; also run by create
 *   create       settings, the shape (a preset's, or the checkpoint's
 *                config.json), the prompts file's prompts; no weights
 *   check_case   nothing: can the case run (precision, positions, memory)?
 *   prepare      checks every tensor of the checkpoint; opens the device
 *   begin_case   weights (built again only when the case's precision changes,
 *                hence rebuild_axes = precision), the rollout's prompts and
 *                buffers, and on the device the model and the case's cache
 *                (KV cache + workspace)
 *   cache_release / cache_acquire   free and take back the cache
 *   end_case     frees the rollout and its cache; weights stay for the next case
 *   destroy      everything
 * Memory accounting is exact: every byte this plugin allocates for the model,
 * the prompts, the cache and the rollout is counted (see docs/opt.md,
 * "Memory"); the plan of a case is one function, eng_backend_footprint().
 * Structs the host passes in to be filled are written with BC_SET, only as
 * far as the host's struct reaches.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "eng_backend.h"
#include "fileio.h"
#include "precision.h"
#include "prompt_set.h"

/* ------------------------------------------------------------- accounting */

static int64_t size_bytes(size_t n) { return n > (size_t)INT64_MAX ? -1 : (int64_t)n; }

/* The one footprint formula: a case of ro's dimensions on shape hp in dt
 * (plan_memory, check_case, begin_case's admission and the memory reports
 * all come from here). */
footprint eng_backend_footprint(const eng_backend *s, const void *hp, eng_dtype dt, const eng_rollout *ro) {
    footprint f;
    f.weights = size_bytes(eng_weights_bytes(s->fam, hp, dt));
    f.layer_table = (int64_t)((const eng_shape *)hp)->n_layers * (int64_t)s->fam->layer_size;
    f.prompts = s->text ? eng_text_prompts_bytes(s->text) : 0;
    if (s->have_prompts) {
        f.prompts = (int64_t)s->prompts.n_lines * (int64_t)sizeof(eng_prompt);
        for (int i = 0; i < s->prompts.n_lines; i++)
            f.prompts += (int64_t)s->prompts.lines[i].n * (int64_t)sizeof(int32_t);
    }
    f.buffers = 0;
    f.dev = (eng_device_plan){.weights = -1, .device_peak = -1};
    if (ro) { /* the shape the plan reads: a weights header without arena */
        eng_weights *desc = s->desc;
        eng_weights_describe(desc, s->fam, hp, dt);
        f.buffers = size_bytes(eng_rollout_plan(ro, &desc->shape, &desc->ws, dt, s->threads).buffers);
        s->dev->plan(s->dev_ctx, desc, ro, &f.dev);
    }
    return f;
}

/* Every host byte allocated now: weights (arena + layer table), prompts,
 * rollout buffers, the cache where the device keeps it on the host. */
int64_t eng_backend_current_bytes(const eng_backend *s) {
    const footprint f = eng_backend_footprint(s, s->hp, s->have_weights ? s->w->dtype : ENG_F32, s->have_rollout ? &s->ro : NULL);
    int64_t n = f.prompts + (s->have_rollout ? f.buffers : 0);
    if (s->have_weights) n += (int64_t)s->w->arena_bytes + f.layer_table;
    return n + s->dev->host_bytes(s->dev_ctx, s->have_rollout ? &s->ro : NULL);
}

void eng_backend_account(eng_backend *s) {
    int64_t n = eng_backend_current_bytes(s);
    if (n > s->peak_bytes) s->peak_bytes = n;
}

/* Copies m into the host's out, field by field, as far as out reaches. */
void eng_backend_put_memory(bc_memory_stats *out, const bc_memory_stats *m) {
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

void eng_backend_end_rollout(eng_backend *s) {
    if (s->have_rollout) {
        s->dev->end_case(s->dev_ctx, &s->ro);
        eng_rollout_free(&s->ro);
    }
    eng_rollout_tokens_free(&s->tokens);
    s->have_rollout = 0;
}

void eng_backend_destroy(void *inst) {
    eng_backend *s = inst;
    if (!s) return;
    if (s->dev_ctx) {
        eng_backend_end_rollout(s);
        s->dev->destroy(s->dev_ctx);
    }
    if (s->have_weights) eng_weights_free(s->w);
    free(s->w);
    free(s->desc);
    free(s->hp);
    if (s->have_prompts) eng_prompts_free(&s->prompts);
    eng_text_prompts_free(s->text);
    free(s->text);
    eng_lora_free(s->lora);
    free(s->lora);
    free((void *)s->lengths.values);
    free(s);
}

bc_status eng_backend_create(const bc_host *host, const bc_settings *v, void **out, bc_error *err) {
    bc_status st = eng_settings_check(v, err);
    if (st != BC_OK) return st;
    eng_backend *s = calloc(1, sizeof *s);
    if (!s) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", NAME);
    s->fam = eng_plugin.family;
    clear_metrics(s);
    s->hp = calloc(1, s->fam->hparams_size);
    s->w = calloc(1, s->fam->weights_size);
    s->desc = calloc(1, s->fam->weights_size);
    if (!s->hp || !s->w || !s->desc) {
        free(s->hp);
        free(s->w);
        free(s->desc);
        free(s);
        return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", NAME);
    }
    s->host = host;
    s->checkpoint = setting_str(v, S_CHECKPOINT);
    s->prompts_file = setting_str(v, S_PROMPTS_FILE);
    s->save_tokens = setting_str(v, S_SAVE_TOKENS);
    s->weights_seed = (uint64_t)setting_int(v, S_WEIGHTS_SEED);
    s->threads = setting_int(v, S_THREADS) > 0 ? (int)setting_int(v, S_THREADS) : eng_online_cores();
    s->stop_at_eos = setting_int(v, S_STOP_AT_EOS) != 0;
    s->shared_prefill = setting_int(v, S_SHARED_PREFILL) != 0;
    s->per_iteration_stream = strcmp(setting_str(v, S_SAMPLE_STREAM), "per_iteration") == 0;
    for (int k = 0; eng_response_lengths_choices[k]; k++)
        if (strcmp(setting_str(v, S_RESPONSE_LENGTHS), eng_response_lengths_choices[k]) == 0) s->lengths.kind = k;
    s->lengths.min_ratio = bc_setting_at(v, S_LENGTH_MIN_RATIO)->f;
    s->lengths.mean = bc_setting_at(v, S_LENGTH_MEAN)->f;
    s->lengths.sigma = bc_setting_at(v, S_LENGTH_SIGMA)->f;
    s->continuous = strcmp(setting_str(v, S_BATCHING), "continuous") == 0;
    s->capacity = (int)setting_int(v, S_BATCH_CAPACITY);
    s->kv_paged = strcmp(setting_str(v, S_KV_LAYOUT), "paged") == 0;
    s->page_tokens = (int)setting_int(v, S_KV_PAGE_TOKENS);
    s->save_schedule = setting_str(v, S_SAVE_SCHEDULE);
    const char *mc = setting_str(v, S_MEMORY_CHECK);
    eng_kernels_choose(setting_str(v, S_KERNELS), eng_isa_detect(), &s->kernels_isa, err); /* checked above */
    s->memory_check = strcmp(mc, "off") == 0 ? MEMCHECK_OFF : strcmp(mc, "warn") == 0 ? MEMCHECK_WARN : MEMCHECK_REFUSE;
    /* the device (eng_settings_check refused "cuda" in a build without it); a
     * CUDA device is opened now for describe, and without one prepare fails
     * with "no CUDA device: ..." (the backend cannot start) */
    s->dev = strcmp(setting_str(v, S_DEVICE), "cuda") == 0 ? eng_plugin.cuda_device() : &eng_device_cpu;
    const eng_device_config cfg = {.threads = s->threads,
                                   .isa = s->kernels_isa,
                                   .index = (int)setting_int(v, S_DEVICE_INDEX),
                                   .graphs = setting_int(v, S_CUDA_GRAPHS) != 0};
    if ((st = s->dev->create(&cfg, &s->dev_ctx, err)) != BC_OK) {
        s->dev_ctx = NULL;
        eng_backend_destroy(s);
        return st;
    }
    if (s->checkpoint[0]) {
        /* the shape is the checkpoint's config.json; its weights load later */
        st = s->fam->config(s->checkpoint, s->hp, err);
        snprintf(s->model_desc, sizeof s->model_desc, "%s", s->checkpoint);
    } else {
        const char *model = setting_str(v, S_MODEL);
        s->preset = model[0] ? model : s->fam->default_preset;
        st = s->fam->preset(s->preset, s->hp, err);
        char name[128];
        snprintf(name, sizeof name, s->fam->preset_fmt, s->preset);
        snprintf(s->model_desc, sizeof s->model_desc, "%s (synthetic weights, seed %llu)", name,
                 (unsigned long long)s->weights_seed);
    }
    if (st == BC_OK && s->prompts_file[0]) {
        st = eng_prompts_read(&s->prompts, s->prompts_file, shape_of(s)->vocab_size, err);
        s->have_prompts = st == BC_OK;
    }
    if (st == BC_OK && s->lengths.kind == ENG_LENGTHS_EMPIRICAL) {
        int32_t *values = NULL;
        st = eng_lengths_read(setting_str(v, S_LENGTHS_FILE), &values, &s->lengths.n_values, err);
        s->lengths.values = values;
    }
    if (st == BC_OK && setting_str(v, S_PROMPTS_TEXT)[0]) {
        if (!(s->text = calloc(1, sizeof *s->text))) st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", NAME);
        else
            st = eng_text_prompts_read(s->text, setting_str(v, S_PROMPTS_TEXT), setting_str(v, S_PROMPTS_FORMAT),
                                       setting_str(v, S_PROMPTS_FIELD), s->checkpoint, shape_of(s)->bos_token_id,
                                       shape_of(s)->vocab_size, eng_prompt_fit_from_name(setting_str(v, S_PROMPTS_FIT)),
                                       (int)setting_int(v, S_PROMPTS_BUCKET_WIDTH), err);
    }
    if (st == BC_OK && (setting_str(v, S_LORA_ADAPTER)[0] || setting_int(v, S_LORA_RANK) > 0)) {
        unsigned targets = 0;
        if (!(s->lora = calloc(1, sizeof *s->lora))) st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", NAME);
        else if (setting_str(v, S_LORA_ADAPTER)[0])
            st = eng_lora_load_peft(s->lora, eng_plugin.family, setting_str(v, S_LORA_ADAPTER), shape_of(s), err);
        else if ((st = eng_lora_targets_parse(eng_plugin.family, setting_str(v, S_LORA_TARGETS), &targets, err)) == BC_OK)
            st = eng_lora_synthetic(s->lora, eng_plugin.family, shape_of(s), (int)setting_int(v, S_LORA_RANK),
                                    bc_setting_at(v, S_LORA_ALPHA)->f, targets, s->weights_seed, err);
        if (st == BC_OK) {
            s->lora->restore = !strcmp(setting_str(v, S_LORA_UNFUSE), "restore");
            s->lora_unfused = !strcmp(setting_str(v, S_LORA_MODE), "unfused");
            st = eng_lora_set_threads(s->lora, s->threads, err);
        }
    }
    if (st != BC_OK) {
        eng_backend_destroy(s);
        return st;
    }
    s->peak_bytes = eng_backend_current_bytes(s);
    *out = s;
    return BC_OK;
}

bc_status eng_backend_describe(void *inst, bc_backend_info *info, bc_error *err) {
    (void)err;
    eng_backend *s = inst;
    const eng_shape *hp = shape_of(s);
    eng_device_info d;
    s->dev->describe(s->dev_ctx, &d);
    BC_SET(info, bc_backend_info, model, s->model_desc);
    BC_SET(info, bc_backend_info, device, d.device);
    BC_SET(info, bc_backend_info, device_name, d.device_name);
    BC_SET(info, bc_backend_info, driver, d.driver);
    BC_SET(info, bc_backend_info, model_family, s->fam->name);
    BC_SET(info, bc_backend_info, n_parameters, eng_weights_n_parameters(s->fam, s->hp));
    BC_SET(info, bc_backend_info, n_layers, hp->n_layers);
    BC_SET(info, bc_backend_info, hidden_size, hp->hidden_size);
    BC_SET(info, bc_backend_info, n_heads, hp->n_heads);
    BC_SET(info, bc_backend_info, ffn_size, hp->ffn_size);
    BC_SET(info, bc_backend_info, vocab_size, hp->vocab_size);
    BC_SET(info, bc_backend_info, max_positions, hp->max_positions);
    BC_SET(info, bc_backend_info, cpu_kernels, d.cpu_kernels);
    BC_SET(info, bc_backend_info, cpu_threads, d.cpu_threads);
    return BC_OK;
}
