/* eng_cases.c: the hooks of a case of the backend every family shares
 * (eng_plugin.h): check_case, plan_memory, prepare, begin_case (the
 * weights, the rollout, memory admission), expand_prompts, generate,
 * read_metrics, post_process, the cache's release and acquire, memory
 * reports, end_case; and the ops table over them and eng_backend.c's.
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

/* ------------------------------------------------------------------ cases */

/* The case's precision as a dtype this backend has kernels for: the layout
 * its precision plugin's conversions produce (precision.h); int8 has CPU
 * kernels only and takes no LoRA adapter. */
static bc_status case_dtype(const eng_backend *s, const bc_case *c, eng_dtype *dt, bc_error *err) {
    bc_status st = eng_precision_dtype(c->precision, c->precision_ops, dt, err);
    if (st != BC_OK) return eng_backend_with_family_name(err);
    if (st == BC_OK && *dt == ENG_I8 && s->dev != &eng_device_cpu)
        return bc_error_set(err, BC_ERR_UNSUPPORTED,
                            "%s: precision %s (int8) has CPU kernels only; device = \"cuda\" runs float32, float16 "
                            "and bfloat16", NAME,
                            c->precision ? c->precision : "?");
    if (st == BC_OK && *dt == ENG_I8 && s->lora)
        return bc_error_set(err, BC_ERR_UNSUPPORTED,
                            "%s: precision %s (int8): a LoRA adapter is not fused into int8 weights (one scale per "
                            "row); use fp32, fp16 or bf16 with lora_adapter / lora_rank", NAME,
                            c->precision ? c->precision : "?");
    return st;
}

/* The rollout a case asks for. */
static bc_status rollout_params(const eng_backend *s, const bc_case *c, eng_rollout_params *p, bc_error *err) {
    if (!c->sampling) return bc_error_set(err, BC_ERR_INVALID, "%s: case %u has no sampling parameters", NAME, c->index);
    if (c->batch_size > INT_MAX || c->samples_per_prompt > INT_MAX || c->prompt_length > INT_MAX ||
        c->response_length > INT_MAX)
        return bc_error_set(err, BC_ERR_INFEASIBLE, "%s: case %u: batch %u x %u samples, prompt %u, response %u: too large", NAME,
                            c->index, c->batch_size, c->samples_per_prompt, c->prompt_length, c->response_length);
    const bc_sampling *sp = c->sampling;
    *p = (eng_rollout_params){.batch_size = (int)c->batch_size,
                              .samples_per_prompt = (int)c->samples_per_prompt,
                              .prompt_length = (int)c->prompt_length,
                              .response_length = (int)c->response_length,
                              .sampling = {sp->temperature, sp->top_p, sp->top_k, sp->seed},
                              .stop_at_eos = s->stop_at_eos,
                              .shared_prefill = s->shared_prefill,
                              .per_iteration_stream = s->per_iteration_stream,
                              .prompts = s->have_prompts ? &s->prompts : NULL,
                              .lengths = s->lengths,
                              .continuous = s->continuous,
                              .capacity = s->capacity,
                              .kv_paged = s->kv_paged,
                              .page_tokens = s->page_tokens};
    if (s->text) /* fitted to this case (the view lives in s->text until the next fit) */
        return eng_text_prompts_fit(s->text, p->prompt_length, p->batch_size, &p->prompts, &p->prompt_length, err);
    return BC_OK;
}

/* a + b, or -1 once either is -1 or the sum leaves int64 */
static int64_t add_bytes(int64_t a, int64_t b) {
    int64_t r;
    return a < 0 || b < 0 || __builtin_add_overflow(a, b, &r) ? -1 : r;
}

/* The memory case c will take, without allocating it (all fields). Every sum
 * is checked: a plan that leaves 64 bits is refused, not wrapped. */
static bc_status plan_case(const eng_backend *s, const bc_case *c, bc_memory_stats *out, bc_error *err) {
    eng_dtype dt = ENG_F32;
    eng_rollout_params p;
    eng_rollout ro;
    bc_status st = case_dtype(s, c, &dt, err);
    if (st == BC_OK) st = rollout_params(s, c, &p, err);
    if (st == BC_OK) st = eng_rollout_dims(&ro, shape_of(s), &p, err);
    if (st == BC_OK && s->fam->check_positions) st = s->fam->check_positions(s->hp, ro.Stot, err);
    if (st != BC_OK) return st;
    const eng_shape *hp = shape_of(s);
    const footprint f = eng_backend_footprint(s, s->hp, dt, &ro);
    const int64_t host_fixed = add_bytes(add_bytes(add_bytes(f.weights, f.layer_table), f.prompts), f.buffers);
    const int on_host = f.dev.device_peak < 0; /* the cache is on the host */
    int64_t peak = on_host ? add_bytes(add_bytes(host_fixed, f.dev.kv_cache), f.dev.workspace) : host_fixed;
    /* a scorer of this case's shape frees the rollout's cache and takes the
     * score path's (score.h): the peak is the larger of the two */
    if (on_host && s->dev->score && peak >= 0) {
        eng_weights_describe(s->desc, s->fam, s->hp, dt);
        const size_t sb = eng_score_plan_bytes(hp, &s->desc->ws, dt, ro.R, ro.Tp, ro.Tr, s->threads);
        const int64_t score_peak = sb > (size_t)INT64_MAX ? -1 : add_bytes(host_fixed, (int64_t)sb);
        if (score_peak < 0 || score_peak > peak) peak = score_peak;
    }
    if (f.weights <= 0 || peak < 0)
        return bc_error_set(err, BC_ERR_INFEASIBLE,
                            "the case's memory does not fit in 64 bits (%d layers x %d rows x %d positions x "
                            "hidden_size %d of KV cache)",
                            hp->n_layers, ro.R, ro.Stot, hp->hidden_size);
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->weights_bytes = f.dev.weights >= 0 ? f.dev.weights : f.weights;
    out->kv_cache_bytes = f.dev.kv_cache;
    out->workspace_bytes = f.dev.workspace;
    out->host_peak_bytes = peak;
    out->device_peak_bytes = f.dev.device_peak;
    out->resident_bytes = on_host ? peak : f.dev.device_peak;
    out->device_free_bytes = out->device_total_bytes = -1;
    return BC_OK;
}

static double gib(int64_t bytes) { return (double)bytes / (1024.0 * 1024.0 * 1024.0); }

/* Memory admission: the plan against what the device says there is (the
 * host: MemAvailable plus what this backend already holds, which is reused
 * or freed before the case allocates; a GPU: its memory). memory_check
 * decides what an excess is: an error, a warning, nothing. */
static bc_status admit_memory(const eng_backend *s, const bc_memory_stats *plan, bc_error *err) {
    if (s->memory_check == MEMCHECK_OFF) return BC_OK;
    const int on_device = plan->device_peak_bytes >= 0;
    const int64_t need = on_device ? plan->device_peak_bytes : plan->host_peak_bytes;
    char there[200] = "";
    const int64_t have = s->dev->capacity(s->dev_ctx, eng_backend_current_bytes(s), there, sizeof there);
    if (have <= 0 || need <= have) return BC_OK;
    const char *what = on_device ? "device memory" : "memory";
    if (s->memory_check == MEMCHECK_WARN) {
        if (s->host && s->host->log)
            s->host->log(s->host, BC_LOG_WARN, "case needs %.1f GiB of %s; %s (memory_check = \"warn\": running it anyway)",
                         gib(need), what, there);
        return BC_OK;
    }
    bc_error_set(err, BC_ERR_INFEASIBLE, "needs %.1f GiB of %s (weights %.1f GiB, KV cache %.1f GiB, workspace %.1f GiB); %s",
                 gib(need), what, gib(plan->weights_bytes), gib(plan->kv_cache_bytes), gib(plan->workspace_bytes), there);
    return bc_error_hint(err, "backend setting memory_check = \"warn\" (or \"off\") runs such a case anyway");
}

/* Can case c run? Precision, prompt length, positions and memory, from the
 * shape alone: loads nothing. */
static bc_status backend_check_case(void *inst, const bc_case *c, bc_error *err) {
    eng_backend *s = inst;
    bc_memory_stats plan;
    bc_status st = plan_case(s, c, &plan, err);
    if (st != BC_OK) return st;
    return admit_memory(s, &plan, err);
}

static bc_status backend_plan_memory(void *inst, const bc_case *c, bc_memory_stats *out, bc_error *err) {
    bc_memory_stats plan;
    bc_status st = plan_case(inst, c, &plan, err);
    if (st == BC_OK) eng_backend_put_memory(out, &plan);
    return st;
}

/* Heavy checks, once before the first case: the device and the
 * checkpoint's tensors (so a broken file stops the run before it starts). */
static bc_status backend_prepare(void *inst, bc_error *err) {
    eng_backend *s = inst;
    bc_status st = s->dev->open(s->dev_ctx, err);
    if (st == BC_OK && s->checkpoint[0]) st = eng_weights_validate(s->fam, s->checkpoint, err);
    return st;
}

static bc_status build_weights(eng_backend *s, eng_dtype dt, bc_error *err) {
    if (s->have_weights && s->w->dtype == dt) return BC_OK;
    eng_backend_end_rollout(s);
    if (s->have_weights) eng_weights_free(s->w);
    s->have_weights = 0;
    bc_status st = s->checkpoint[0] ? eng_weights_load(s->w, s->fam, s->checkpoint, dt, err)
                                    : eng_weights_synthetic(s->w, s->fam, s->hp, dt, s->weights_seed, err);
    if (st != BC_OK) {
        eng_weights_free(s->w);
        return st;
    }
    s->have_weights = 1;
    memcpy(s->hp, (const char *)s->w + s->fam->hparams_offset, s->fam->hparams_size);
    eng_backend_account(s);
    return BC_OK;
}

/* The case's prompts as they will run, from the rollout's prompt mask
 * [Bp, Tp] (whatever their source): the median real prompt
 * (bpe_length_summary_of's) and the pad slots, Bp x Tp minus the real
 * tokens. The median stays -1 without memory for the lengths. */
static void summarize_prompts(eng_backend *s) {
    const eng_rollout *ro = &s->ro;
    int *len = malloc((size_t)ro->Bp * sizeof *len);
    int64_t real = 0;
    for (int b = 0; b < ro->Bp; b++) {
        const uint8_t *mk = ro->prompt_mask + (size_t)b * ro->Tp;
        int n = 0;
        for (int t = 0; t < ro->Tp; t++) n += mk[t];
        if (len) len[b] = n;
        real += n;
    }
    s->prompt_p50_tokens = len ? bpe_length_summary_of(len, ro->Bp).p50 : -1;
    s->prompt_pad_tokens = (int64_t)ro->Bp * ro->Tp - real;
    free(len);
}

static bc_status backend_begin_case(void *inst, const bc_case *c, bc_error *err) {
    eng_backend *s = inst;
    eng_dtype dt = ENG_F32;
    eng_rollout_params p;
    bc_memory_stats plan;
    bc_status st = case_dtype(s, c, &dt, err);
    if (st == BC_OK) st = rollout_params(s, c, &p, err);
    /* admission again, with the memory there is now: a failed case, not an OOM kill */
    if (st == BC_OK) st = plan_case(s, c, &plan, err);
    if (st == BC_OK) st = admit_memory(s, &plan, err);
    if (st != BC_OK) return st;
    if (s->text && s->host && s->host->log) {
        const eng_text_batch *b = &s->text->batch;
        s->host->log(s->host, BC_LOG_INFO,
                     "case %u: prompts_text: %d prompts fit; this batch: %d..%d tokens (p50 %d), padded to %d, "
                     "%lld of %lld slots padding, %d truncated",
                     c->index, b->set_size, b->min, b->max, b->p50, b->width, (long long)b->pad_tokens,
                     (long long)b->slots, b->truncated);
    }
    eng_backend_end_rollout(s);
    s->case_index = c->index;
    s->n_generates = 0;
    clear_metrics(s);
    if ((st = s->dev->open(s->dev_ctx, err)) != BC_OK) return st; /* before building weights */
    if ((st = build_weights(s, dt, err)) != BC_OK) return st;
    s->w->lora_unfused = s->lora_unfused ? s->lora : NULL; /* the CPU forward applies it (the family's) */
    if ((st = eng_rollout_init(&s->ro, &s->w->shape, &p, err)) != BC_OK) return st;
    s->have_rollout = 1;
    summarize_prompts(s);
    st = s->dev->begin_case(s->dev_ctx, s->w, &s->ro, err);
    eng_backend_account(s);
    return st;
}

static bc_status backend_expand_prompts(void *inst, bc_error *err) {
    eng_backend *s = inst;
    if (!s->have_rollout) return bc_error_set(err, BC_ERR_INTERNAL, "%s: expand_prompts outside a case", NAME);
    return eng_rollout_expand(&s->ro, err);
}

/* The last rollout's results into the host's out, as far as out reaches. */
static void put_generation_stats(bc_generation_stats *out, const eng_rollout *ro) {
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
    /* the schedule (the rollout's arrays, until end_case) */
    _Static_assert(sizeof(int) == sizeof(int32_t), "the rollout's int arrays are the ABI's int32_t");
    BC_SET(out, bc_generation_stats, step_active_rows, (const int32_t *)ro->step_active);
    BC_SET(out, bc_generation_stats, schedule_rows, (int64_t)ro->R);
    BC_SET(out, bc_generation_stats, row_first_token_ms, ro->row_first_ms);
    BC_SET(out, bc_generation_stats, row_done_step, (const int32_t *)ro->row_done_step);
}

/* A count as a metric value: NaN when unknown (< 0), as the host reads
 * its 2.3 fields. */
static double count_metric(int64_t n) { return n >= 0 ? (double)n : BC_NOT_MEASURED; }

/* The last rollout's eng_metrics values into s->metrics (read_metrics
 * hands them to the host). */
static void take_metrics(eng_backend *s) {
    const eng_rollout *ro = &s->ro;
    double *m = s->metrics;
    clear_metrics(s);
    m[M_PADDED_TOKEN_SLOTS] = count_metric(ro->n_padded_slots);
    m[M_RESPONSE_LENGTH_MIN] = ro->lengths_drawn.min;
    m[M_RESPONSE_LENGTH_P50] = ro->lengths_drawn.p50;
    m[M_RESPONSE_LENGTH_P95] = ro->lengths_drawn.p95;
    m[M_RESPONSE_LENGTH_MAX] = ro->lengths_drawn.max;
    m[M_NUM_PREFILL_FORWARDS] = count_metric(ro->n_prefill_forwards);
    m[M_SCHEDULER_OVERHEAD_MS] = ro->scheduler_ms;
    m[M_CACHE_MANAGEMENT_OVERHEAD_MS] = ro->cache_mgmt_ms;
    int64_t active = 0;
    for (int i = 0; i < ro->n_steps; i++) active += ro->step_active[i];
    const double mean_active = ro->n_steps > 0 ? (double)active / ro->n_steps : BC_NOT_MEASURED;
    m[M_ACTIVE_BATCH_SIZE] = mean_active;
    m[M_CONTINUOUS_BATCH_SIZE] = ro->Cap ? (double)ro->Cap : BC_NOT_MEASURED;
    m[M_OCCUPANCY] = mean_active / (ro->Cap ? ro->Cap : ro->R);
    m[M_KV_PAGES_PEAK] = count_metric(ro->kv_pages_peak);
    m[M_KV_BYTES_PEAK] = count_metric(ro->kv_bytes_peak);
    m[M_KV_FRAGMENTATION] = ro->kv_fragmentation;
    /* may be negative (a paged peak above the contiguous cache); INT64_MIN = unknown */
    m[M_KV_BYTES_SAVED] = ro->kv_bytes_saved != INT64_MIN ? (double)ro->kv_bytes_saved : BC_NOT_MEASURED;
    if (s->lora && !s->lora_unfused) {
        m[M_LORA_FUSE_MS] = s->lora->fuse_ms;
        m[M_LORA_UNFUSE_MS] = s->lora->unfuse_ms;
    }
}

/* The device's generate stage, as eng_lora_around runs it. */
static bc_status device_generate(void *inst, bc_error *err) {
    eng_backend *s = inst;
    return s->dev->generate(s->dev_ctx, &s->ro, err);
}

static bc_status backend_generate(void *inst, bc_generation_stats *out, bc_error *err) {
    eng_backend *s = inst;
    if (!s->have_rollout) return bc_error_set(err, BC_ERR_INTERNAL, "%s: generate outside a case", NAME);
    s->ro.iteration = s->n_generates++;
    clear_metrics(s);
    bc_status st = s->lora && !s->lora_unfused /* as the hybrid engine: fuse, generate, unfuse (also after a failed
                                                  generate); unfused, the forward applies it */
                       ? eng_lora_around(s->lora, s->w, device_generate, s, s->host, err)
                       : s->dev->generate(s->dev_ctx, &s->ro, err);
    eng_backend_account(s);
    if (st != BC_OK) return st;
    put_generation_stats(out, &s->ro);
    BC_SET(out, bc_generation_stats, prompt_p50_tokens, s->prompt_p50_tokens);
    BC_SET(out, bc_generation_stats, prompt_pad_tokens, s->prompt_pad_tokens);
    take_metrics(s);
    return BC_OK;
}

/* The per-iteration metrics (eng_metrics' order) of the last generate; no
 * per-case ones. */
static bc_status backend_read_metrics(void *inst, bc_metric_scope scope, double *values, uint32_t n_values,
                                      bc_error *err) {
    (void)err;
    const eng_backend *s = inst;
    if (scope != BC_METRIC_PER_ITERATION) return BC_OK;
    for (uint32_t i = 0; i < n_values && i < M_COUNT; i++) values[i] = s->metrics[i];
    return BC_OK;
}

/* An output setting's path with "{case}" replaced by the case index. */
static void case_path(const char *setting, uint32_t case_index, char *path, size_t size) {
    const char *mark = strstr(setting, "{case}");
    if (mark) snprintf(path, size, "%.*s%u%s", (int)(mark - setting), setting, case_index, mark + 6);
    else snprintf(path, size, "%s", setting);
}

/* Writes the generated ids of every row, one line each, to save_tokens
 * ("{case}" in the path becomes the case index). */
static bc_status save_tokens(eng_backend *s, bc_error *err) {
    char path[4096];
    case_path(s->save_tokens, s->case_index, path, sizeof path);
    bc_output *o = s->host->output_open(s->host, path, err);
    if (!o) return err && err->code ? err->code : BC_ERR_IO;
    const eng_rollout *ro = &s->ro;
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

/* Writes the last rollout's schedule to save_schedule ("{case}" as in
 * save_tokens): a line "steps" with the rows each decode step generated
 * for, then one line per row: "row R length N first_token_ms T done_step K"
 * (its drawn length, the ms from the start of generate to its token 0, the
 * decode steps run when it finished). */
static bc_status save_schedule(eng_backend *s, bc_error *err) {
    char path[4096];
    case_path(s->save_schedule, s->case_index, path, sizeof path);
    bc_output *o = s->host->output_open(s->host, path, err);
    if (!o) return err && err->code ? err->code : BC_ERR_IO;
    const eng_rollout *ro = &s->ro;
    bc_status st = s->host->output_printf(o, err, "steps");
    for (int k = 0; k < ro->n_steps && st == BC_OK; k++) st = s->host->output_printf(o, err, " %d", ro->step_active[k]);
    if (st == BC_OK) st = s->host->output_printf(o, err, "\n");
    for (int r = 0; r < ro->R && st == BC_OK; r++)
        st = s->host->output_printf(o, err, "row %d length %d first_token_ms %.3f done_step %d\n", r, ro->row_len[r],
                                    ro->row_first_ms[r], ro->row_done_step[r]);
    if (st != BC_OK) {
        s->host->output_abort(o);
        return st;
    }
    return s->host->output_commit(o, err);
}

static bc_status backend_post_process(void *inst, bc_error *err) {
    eng_backend *s = inst;
    if (!s->have_rollout) return bc_error_set(err, BC_ERR_INTERNAL, "%s: post_process outside a case", NAME);
    bc_status st = eng_rollout_post_process(&s->ro, err);
    if (st == BC_OK && s->save_tokens[0]) st = save_tokens(s, err);
    if (st == BC_OK && s->save_schedule[0]) st = save_schedule(s, err);
    return st;
}

static bc_status backend_cache_release(void *inst, bc_error *err) {
    (void)err;
    eng_backend *s = inst;
    if (s->have_rollout) s->dev->cache_release(s->dev_ctx, &s->ro);
    return BC_OK;
}

static bc_status backend_cache_acquire(void *inst, bc_error *err) {
    eng_backend *s = inst;
    if (!s->have_rollout) return bc_error_set(err, BC_ERR_INTERNAL, "%s: cache_acquire outside a case", NAME);
    bc_status st = s->dev->cache_acquire(s->dev_ctx, &s->ro, err);
    eng_backend_account(s);
    return st;
}

static void backend_reset_peak_memory(void *inst) {
    eng_backend *s = inst;
    s->peak_bytes = eng_backend_current_bytes(s);
    s->dev->reset_peak(s->dev_ctx);
}

static bc_status backend_read_memory(void *inst, bc_memory_stats *out, bc_error *err) {
    eng_backend *s = inst;
    eng_backend_account(s);
    eng_device_memory dm;
    bc_status st = s->dev->read_memory(s->dev_ctx, s->have_rollout ? &s->ro : NULL, &dm, err);
    bc_memory_stats m = {.struct_size = sizeof m};
    m.weights_bytes = dm.weights >= 0 ? dm.weights : s->have_weights ? (int64_t)s->w->arena_bytes : 0;
    m.kv_cache_bytes = dm.kv_cache;
    m.workspace_bytes = dm.workspace;
    m.host_peak_bytes = s->peak_bytes;
    m.device_peak_bytes = dm.device_peak;
    m.device_free_bytes = dm.device_free;
    m.device_total_bytes = dm.device_total;
    /* after a release: without the cache */
    m.resident_bytes = dm.device_resident >= 0 ? dm.device_resident : eng_backend_current_bytes(s);
    eng_backend_put_memory(out, &m);
    return st;
}

/* The last rollout's tokens (score.h), with its log-probabilities when the
 * device's sampling kept them (the CPU's; the CUDA device's samples on the
 * GPU and keeps none: response_logprobs NULL). */
static bc_status backend_read_rollout(void *inst, bc_rollout_tokens *out, bc_error *err) {
    eng_backend *s = inst;
    if (!s->have_rollout || s->n_generates == 0)
        return bc_error_set(err, BC_ERR_INTERNAL, "%s: read_rollout before a rollout of the case", NAME);
    bc_status st = eng_rollout_tokens_fill(&s->tokens, &s->ro, s->dev->logprobs, out, err);
    eng_backend_account(s);
    return st;
}

static bc_status device_score(void *inst, bc_error *err) {
    eng_backend *s = inst;
    return s->dev->score(s->dev_ctx, &s->ro, s->score_in, s->score_out, err);
}

/* One forward over each row's prompt + response on this instance's weights
 * (score.h), a fused LoRA adapter fused around it as around a generate. */
static bc_status backend_score(void *inst, const bc_rollout_tokens *in, float *logprobs, bc_error *err) {
    eng_backend *s = inst;
    if (!s->have_rollout || !s->have_weights) return bc_error_set(err, BC_ERR_INTERNAL, "%s: score outside a case", NAME);
    if (!s->dev->score)
        return bc_error_set(err, BC_ERR_UNSUPPORTED,
                            "%s: score runs on device = \"cpu\" only (the %s device's score path is not tested on a "
                            "GPU)", NAME, s->dev->name);
    s->score_in = in;
    s->score_out = logprobs;
    bc_status st = s->lora && !s->lora_unfused ? eng_lora_around(s->lora, s->w, device_score, s, s->host, err)
                                               : device_score(s, err);
    s->score_in = NULL;
    s->score_out = NULL;
    eng_backend_account(s);
    return st;
}

static void backend_end_case(void *inst) {
    eng_backend *s = inst;
    eng_backend_end_rollout(s);
}

const bc_backend_ops eng_backend_ops = {
    .struct_size = sizeof(bc_backend_ops),
    .create = eng_backend_create,
    .destroy = eng_backend_destroy,
    .describe = eng_backend_describe,
    .check_case = backend_check_case,
    .prepare = backend_prepare,
    .plan_memory = backend_plan_memory,
    .begin_case = backend_begin_case,
    .expand_prompts = backend_expand_prompts,
    .generate = backend_generate,
    .post_process = backend_post_process,
    .cache_release = backend_cache_release,
    .cache_acquire = backend_cache_acquire,
    .reset_peak_memory = backend_reset_peak_memory,
    .read_memory = backend_read_memory,
    .end_case = backend_end_case,
    /* begin_case converts the weights when the precision changes; nothing
     * else is costly to switch */
    .rebuild_axes = BC_AXIS_PRECISION,
    .read_metrics = backend_read_metrics, /* eng_metrics (the descriptor's table) */
    .read_rollout = backend_read_rollout,
    .score = backend_score,
};

