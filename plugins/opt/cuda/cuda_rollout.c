/* cuda_rollout.c: the rollout loop's steps on a CUDA device (see
 * cuda_rollout.h and ../device.h): the loop (../rollout.c, eng_rollout_run)
 * is the CPU's; here each step queues its work on the device's stream:
 *   start     the expanded rows, masks and generators to the device;
 *   prefill   one forward over the prompts of every row (or of every prompt
 *             once, whose KV rows and logits copy_prompt copies to its samples);
 *   decode    one forward of token k - 1 (a graph replay when use_graphs);
 *   sample    token k of every row, on the device;
 *   finish    waits, and brings the tokens back.
 * Timing marks are CUDA events on the stream (opt_cuda_mark).
 */
#include "cuda_rollout.h"

#include <stdlib.h>
#include <string.h>

void opt_cuda_rollout_init(opt_cuda_rollout *cr, eng_rollout *ro, opt_cuda_device *dev, opt_cuda_model *m,
                           int use_graphs) {
    memset(cr, 0, sizeof *cr);
    cr->ro = ro;
    cr->dev = dev;
    cr->m = m;
    cr->use_graphs = use_graphs;
}

opt_cuda_plan opt_cuda_rollout_plan(const opt_cuda_rollout *cr) {
    const eng_rollout *ro = cr->ro;
    return opt_cuda_plan_rollout(opt_cuda_model_hparams(cr->m), opt_cuda_model_dtype(cr->m), ro->R, ro->Bp, ro->Tp,
                                 ro->Stot, eng_rollout_shared_prefill(ro));
}

void opt_cuda_rollout_release(opt_cuda_rollout *cr) {
    opt_cuda_kv_cache_free(cr->dev, &cr->kv);
    opt_cuda_kv_cache_free(cr->dev, &cr->kv_shared);
    opt_cuda_free(cr->dev, OPT_CUDA_MEM_WORKSPACE, cr->d_buf, cr->buf_bytes);
    cr->d_buf = NULL;
    cr->buf_bytes = 0;
    if (cr->m) opt_cuda_model_release_workspace(cr->m);
    cr->have_cache = 0;
}

bc_status opt_cuda_rollout_acquire(opt_cuda_rollout *cr, bc_error *err) {
    if (cr->have_cache) return BC_OK;
    const eng_rollout *ro = cr->ro;
    const opt_hparams *hp = opt_cuda_model_hparams(cr->m);
    const eng_dtype dt = opt_cuda_model_dtype(cr->m);
    const opt_cuda_plan plan = opt_cuda_rollout_plan(cr);
    bc_status st = opt_cuda_kv_cache_alloc(cr->dev, &cr->kv, hp, dt, ro->R, ro->Stot, err);
    if (st == BC_OK && eng_rollout_shared_prefill(ro)) st = opt_cuda_kv_cache_alloc(cr->dev, &cr->kv_shared, hp, dt, ro->Bp, ro->Tp, err);
    if (st == BC_OK) st = opt_cuda_model_reserve(cr->m, plan.max_tokens, err);
    if (st == BC_OK) {
        cr->buf_bytes = opt_cuda_rollout_layout_for(ro->V, ro->R, ro->Bp, ro->Tp, ro->Stot, eng_rollout_shared_prefill(ro), &cr->l);
        st = opt_cuda_alloc(cr->dev, OPT_CUDA_MEM_WORKSPACE, cr->buf_bytes, (void **)&cr->d_buf, "rollout buffers", err);
        if (st != BC_OK) cr->buf_bytes = 0;
    }
    cr->have_cache = 1;
    if (st != BC_OK) opt_cuda_rollout_release(cr);
    return st;
}

#define BUF(T, field) ((T *)(void *)(cr->d_buf + cr->l.field))
#define TRY(x)                        \
    do {                              \
        bc_status st_ = (x);          \
        if (st_ != BC_OK) return st_; \
    } while (0)

static bc_status sample(opt_cuda_rollout *cr, int *running, bc_error *err) {
    const eng_rollout *ro = cr->ro;
    opt_cuda_sample_args a;
    memset(&a, 0, sizeof a);
    a.R = ro->R;
    a.V = ro->V;
    a.stride = ro->Stot;
    a.eos_id = ro->eos_id;
    a.pad_id = ro->pad_id;
    a.stop_at_eos = ro->p.stop_at_eos;
    a.response_start = ro->Tp;
    a.p = ro->p.sampling;
    a.d_logits = BUF(float, logits);
    a.d_scratch = BUF(float, scratch);
    a.d_pos = cr->kv.d_len;
    a.d_seq = BUF(int32_t, seq);
    a.d_mask = BUF(uint8_t, mask);
    a.d_step_tokens = BUF(int32_t, step_tokens);
    a.d_eos_at = BUF(int32_t, eos_at);
    a.d_rng = BUF(uint64_t, rng);
    a.d_counters = BUF(int64_t, counters);
    TRY(opt_cuda_sample(cr->dev, &a, err));
    *running = ro->R;
    if (ro->p.stop_at_eos) {
        TRY(opt_cuda_download(cr->dev, cr->counters, a.d_counters, sizeof cr->counters, err));
        *running = (int)cr->counters[0];
    }
    return BC_OK;
}

static bc_status cuda_acquire(void *ctx, eng_rollout *ro, bc_error *err) {
    (void)ro;
    return opt_cuda_rollout_acquire(ctx, err);
}

static void cuda_marks_reset(void *ctx, eng_rollout *ro) {
    (void)ro;
    opt_cuda_marks_reset(((opt_cuda_rollout *)ctx)->dev);
}

static int cuda_mark(void *ctx, eng_rollout *ro) {
    (void)ro;
    return opt_cuda_mark(((opt_cuda_rollout *)ctx)->dev);
}

static double cuda_elapsed_ms(void *ctx, eng_rollout *ro, int from, int to) {
    (void)ro;
    return opt_cuda_marks_ms(((opt_cuda_rollout *)ctx)->dev, from, to);
}

/* The expanded rows, masks, generators, EOS positions and counters to the device. */
static bc_status cuda_start(void *ctx, eng_rollout *ro, bc_error *err) {
    opt_cuda_rollout *cr = ctx;
    opt_cuda_device *d = cr->dev;
    const size_t R = (size_t)ro->R, Tp = (size_t)ro->Tp;
    const int64_t zero[2] = {0, 0};
    _Static_assert(sizeof(eng_rng) == sizeof(uint64_t), "a generator is its 64-bit state");
    _Static_assert(sizeof(int) == sizeof(int32_t), "eos_at is int32 on the device");
    TRY(opt_cuda_upload(d, BUF(void, rng), ro->rngs, R * sizeof *ro->rngs, err));
    TRY(opt_cuda_upload(d, BUF(void, eos_at), ro->eos_at, R * sizeof *ro->eos_at, err));
    TRY(opt_cuda_upload(d, BUF(void, counters), zero, sizeof zero, err));
    TRY(opt_cuda_upload(d, BUF(void, seq), ro->seq, R * ro->Stot * sizeof *ro->seq, err));
    TRY(opt_cuda_upload(d, BUF(void, mask), ro->mask, R * ro->Stot, err));
    TRY(opt_cuda_upload(d, BUF(void, prefill_ids), ro->prefill_ids, R * Tp * sizeof *ro->prefill_ids, err));
    if (eng_rollout_shared_prefill(ro)) {
        TRY(opt_cuda_upload(d, BUF(void, prompt_ids), ro->prompt_ids, (size_t)ro->Bp * Tp * sizeof *ro->prompt_ids,
                            err));
        TRY(opt_cuda_upload(d, BUF(void, prompt_mask), ro->prompt_mask, (size_t)ro->Bp * Tp, err));
    }
    return BC_OK;
}

/* The device kernels read every row's keys from the row itself: no prefix
 * sharing (grouped_prefix = 0, so the loop never asks for it). */
static bc_status cuda_set_cache(void *ctx, eng_rollout *ro, int len, int group, int prefix, bc_error *err) {
    (void)ro, (void)prefix;
    opt_cuda_rollout *cr = ctx;
    if (group > 1) return bc_error_set(err, BC_ERR_INTERNAL, "opt cuda: prefix sharing asked of the CUDA device");
    if (len == 0 || cr->kv.c.len != len) return opt_cuda_kv_cache_set_len(cr->dev, &cr->kv, len, err);
    return BC_OK;
}

static bc_status cuda_prefill(void *ctx, eng_rollout *ro, int prompts, bc_error *err) {
    opt_cuda_rollout *cr = ctx;
    if (prompts) {
        TRY(opt_cuda_kv_cache_set_len(cr->dev, &cr->kv_shared, 0, err));
        return opt_cuda_forward(cr->m, &cr->kv_shared, BUF(int32_t, prompt_ids), BUF(uint8_t, prompt_mask), ro->Tp,
                                ro->Bp, ro->Tp, ENG_LOGITS_LAST, BUF(float, logits_shared), err);
    }
    return opt_cuda_forward(cr->m, &cr->kv, BUF(int32_t, prefill_ids), BUF(uint8_t, mask), ro->Stot, ro->R, ro->Tp,
                            ENG_LOGITS_LAST, BUF(float, logits), err);
}

static bc_status cuda_copy_prompt(void *ctx, eng_rollout *ro, int r, int kv, bc_error *err) {
    opt_cuda_rollout *cr = ctx;
    const int b = r / ro->Sp;
    const size_t V = (size_t)ro->V;
    if (kv) TRY(opt_cuda_kv_cache_copy_row(cr->dev, &cr->kv, r, &cr->kv_shared, b, ro->Tp, err));
    return opt_cuda_copy(cr->dev, BUF(float, logits) + (size_t)r * V, BUF(float, logits_shared) + (size_t)b * V,
                         V * sizeof(float), err);
}

/* The sampler left token k - 1 in step_tokens and the mask set on the device. */
static bc_status cuda_decode(void *ctx, eng_rollout *ro, int k, bc_error *err) {
    (void)k;
    opt_cuda_rollout *cr = ctx;
    return opt_cuda_decode_step(cr->m, &cr->kv, BUF(int32_t, step_tokens), BUF(uint8_t, mask), ro->Stot, ro->R,
                                BUF(float, logits), cr->use_graphs, err);
}

static bc_status cuda_sample(void *ctx, eng_rollout *ro, int k, int *running, bc_error *err) {
    (void)ro, (void)k;
    return sample(ctx, running, err);
}

/* Sequences, masks, EOS positions and the token count back. */
static bc_status cuda_finish(void *ctx, eng_rollout *ro, bc_error *err) {
    opt_cuda_rollout *cr = ctx;
    opt_cuda_device *d = cr->dev;
    const size_t R = (size_t)ro->R;
    TRY(opt_cuda_sync(d, err));
    TRY(opt_cuda_download(d, ro->seq, BUF(void, seq), R * ro->Stot * sizeof *ro->seq, err));
    TRY(opt_cuda_download(d, ro->mask, BUF(void, mask), R * ro->Stot, err));
    TRY(opt_cuda_download(d, ro->eos_at, BUF(void, eos_at), R * sizeof *ro->eos_at, err));
    TRY(opt_cuda_download(d, cr->counters, BUF(void, counters), sizeof cr->counters, err));
    ro->n_generated = cr->counters[1];
    return BC_OK;
}

const eng_step_ops opt_cuda_steps = {
    .grouped_prefix = 0,
    .acquire = cuda_acquire,
    .marks_reset = cuda_marks_reset,
    .mark = cuda_mark,
    .elapsed_ms = cuda_elapsed_ms,
    .start = cuda_start,
    .set_cache = cuda_set_cache,
    .prefill = cuda_prefill,
    .copy_prompt = cuda_copy_prompt,
    .decode = cuda_decode,
    .sample = cuda_sample,
    .finish = cuda_finish,
};

bc_status opt_cuda_rollout_generate(opt_cuda_rollout *cr, bc_error *err) {
    return eng_rollout_run(cr->ro, &opt_cuda_steps, cr, err);
}

void opt_cuda_rollout_free(opt_cuda_rollout *cr) {
    if (!cr) return;
    opt_cuda_rollout_release(cr);
    memset(cr, 0, sizeof *cr);
}
