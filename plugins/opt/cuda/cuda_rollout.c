/* cuda_rollout.c: the generate stage on a CUDA device (see cuda_rollout.h),
 * step for step as rollout.c's opt_rollout_generate:
 *   prefill   one forward over the prompts of every row (or, with shared
 *             prefill, of every prompt once, its KV rows and logits copied
 *             to its samples); sample token 0;
 *   step k    one decode forward of token k - 1 (a graph replay when
 *             use_graphs), then sample token k, all on the device.
 * Timings are CUDA events on the device's stream (opt_cuda_mark): the
 * prefill forward, each decode forward, each decode step (forward +
 * sampling) and the first token (from the start of generate, a mark before
 * the uploads, to token 0 of every row sampled).
 */
#include "cuda_rollout.h"

#include <stdlib.h>
#include <string.h>

static int shared(const opt_rollout *ro) { return ro->p.shared_prefill && ro->Sp > 1; }

void opt_cuda_rollout_init(opt_cuda_rollout *cr, opt_rollout *ro, opt_cuda_device *dev, opt_cuda_model *m,
                           int use_graphs) {
    memset(cr, 0, sizeof *cr);
    cr->ro = ro;
    cr->dev = dev;
    cr->m = m;
    cr->use_graphs = use_graphs;
}

opt_cuda_plan opt_cuda_rollout_plan(const opt_cuda_rollout *cr) {
    const opt_rollout *ro = cr->ro;
    return opt_cuda_plan_rollout(opt_cuda_model_hparams(cr->m), opt_cuda_model_dtype(cr->m), ro->R, ro->Bp, ro->Tp,
                                 ro->Stot, shared(ro));
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
    const opt_rollout *ro = cr->ro;
    const opt_hparams *hp = opt_cuda_model_hparams(cr->m);
    const opt_dtype dt = opt_cuda_model_dtype(cr->m);
    const opt_cuda_plan plan = opt_cuda_rollout_plan(cr);
    bc_status st = opt_cuda_kv_cache_alloc(cr->dev, &cr->kv, hp, dt, ro->R, ro->Stot, err);
    if (st == BC_OK && shared(ro)) st = opt_cuda_kv_cache_alloc(cr->dev, &cr->kv_shared, hp, dt, ro->Bp, ro->Tp, err);
    if (st == BC_OK) st = opt_cuda_model_reserve(cr->m, plan.max_tokens, err);
    if (st == BC_OK) {
        cr->buf_bytes = opt_cuda_rollout_layout_for(ro->V, ro->R, ro->Bp, ro->Tp, ro->Stot, shared(ro), &cr->l);
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
    const opt_rollout *ro = cr->ro;
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

bc_status opt_cuda_rollout_generate(opt_cuda_rollout *cr, bc_error *err) {
    opt_rollout *ro = cr->ro;
    opt_cuda_device *d = cr->dev;
    /* every time below is between two marks on the stream (CUDA events);
     * m_start stands for the start of generate */
    opt_cuda_marks_reset(d);
    const int m_start = opt_cuda_mark(d);
    TRY(opt_cuda_rollout_acquire(cr, err));
    const int R = ro->R, Tp = ro->Tp, Bp = ro->Bp, V = ro->V;
    /* the expanded rows, masks, generators and counters to the device */
    uint64_t *rng = malloc((size_t)R * sizeof *rng);
    int32_t *eos = malloc((size_t)R * sizeof *eos);
    if (!rng || !eos) {
        free(rng);
        free(eos);
        return bc_error_set(err, BC_ERR_NOMEM, "CUDA rollout: no host memory for %d rows", R);
    }
    for (int r = 0; r < R; r++) {
        rng[r] = opt_rng_for_row(ro->p.sampling.seed, (uint64_t)r).state;
        eos[r] = -1;
        ro->eos_at[r] = -1;
    }
    const int64_t zero[2] = {0, 0};
    bc_status st = opt_cuda_upload(d, BUF(void, rng), rng, (size_t)R * sizeof *rng, err);
    if (st == BC_OK) st = opt_cuda_upload(d, BUF(void, eos_at), eos, (size_t)R * sizeof *eos, err);
    free(rng);
    free(eos);
    TRY(st);
    TRY(opt_cuda_upload(d, BUF(void, counters), zero, sizeof zero, err));
    TRY(opt_cuda_upload(d, BUF(void, seq), ro->seq, (size_t)R * ro->Stot * sizeof *ro->seq, err));
    TRY(opt_cuda_upload(d, BUF(void, mask), ro->mask, (size_t)R * ro->Stot, err));
    TRY(opt_cuda_upload(d, BUF(void, prefill_ids), ro->prefill_ids, (size_t)R * Tp * sizeof *ro->prefill_ids, err));
    if (shared(ro)) {
        TRY(opt_cuda_upload(d, BUF(void, prompt_ids), ro->prompt_ids, (size_t)Bp * Tp * sizeof *ro->prompt_ids, err));
        TRY(opt_cuda_upload(d, BUF(void, prompt_mask), ro->prompt_mask, (size_t)Bp * Tp, err));
    }
    ro->n_generated = 0;
    ro->n_decode_forwards = 0;
    ro->decode_ms = 0.0;
    ro->n_steps = 0;
    ro->returned_len = 0;
    ro->response_start = Tp;
    ro->n_prefill_tokens = (int64_t)(shared(ro) ? Bp : R) * Tp;

    /* prefill */
    TRY(opt_cuda_kv_cache_set_len(d, &cr->kv, 0, err));
    const int m0 = opt_cuda_mark(d);
    if (shared(ro)) {
        TRY(opt_cuda_kv_cache_set_len(d, &cr->kv_shared, 0, err));
        TRY(opt_cuda_forward(cr->m, &cr->kv_shared, BUF(int32_t, prompt_ids), BUF(uint8_t, prompt_mask), Tp, Bp, Tp,
                             OPT_LOGITS_LAST, BUF(float, logits_shared), err));
        for (int r = 0; r < R; r++) {
            TRY(opt_cuda_kv_cache_copy_row(d, &cr->kv, r, &cr->kv_shared, r / ro->Sp, Tp, err));
            TRY(opt_cuda_copy(d, BUF(float, logits) + (size_t)r * V, BUF(float, logits_shared) + (size_t)(r / ro->Sp) * V,
                              (size_t)V * sizeof(float), err));
        }
        TRY(opt_cuda_kv_cache_set_len(d, &cr->kv, Tp, err));
    } else {
        TRY(opt_cuda_forward(cr->m, &cr->kv, BUF(int32_t, prefill_ids), BUF(uint8_t, mask), ro->Stot, R, Tp,
                             OPT_LOGITS_LAST, BUF(float, logits), err));
    }
    const int m1 = opt_cuda_mark(d);

    /* token 0 of every row; then decode step k feeds token k - 1 and samples
     * token k. Marks per step: before the forward, after it, after sampling. */
    int running = 0, k = 1;
    TRY(sample(cr, &running, err));
    const int m_first = opt_cuda_mark(d);
    int first = -1; /* the first step's first mark; steps are 3 marks apart */
    for (; k < ro->Tr; k++) {
        if (ro->p.stop_at_eos && running == 0) break;
        int a = opt_cuda_mark(d);
        TRY(opt_cuda_decode_step(cr->m, &cr->kv, BUF(int32_t, step_tokens), BUF(uint8_t, mask), ro->Stot, R,
                                 BUF(float, logits), cr->use_graphs, err));
        (void)opt_cuda_mark(d);
        if (first < 0) first = a;
        ro->n_decode_forwards++;
        TRY(sample(cr, &running, err));
        (void)opt_cuda_mark(d);
    }
    ro->returned_len = k;
    TRY(opt_cuda_sync(d, err));
    ro->prefill_ms = opt_cuda_marks_ms(d, m0, m1);
    ro->first_token_ms = opt_cuda_marks_ms(d, m_start, m_first);
    for (int i = 0; i < (int)ro->n_decode_forwards && first >= 0; i++) {
        const int a = first + 3 * i;
        ro->decode_ms += opt_cuda_marks_ms(d, a, a + 1);
        ro->step_ms[ro->n_steps++] = opt_cuda_marks_ms(d, a, a + 2);
    }

    /* results back: sequences, EOS positions, the token count */
    TRY(opt_cuda_download(d, ro->seq, BUF(void, seq), (size_t)R * ro->Stot * sizeof *ro->seq, err));
    TRY(opt_cuda_download(d, ro->mask, BUF(void, mask), (size_t)R * ro->Stot, err));
    TRY(opt_cuda_download(d, ro->eos_at, BUF(void, eos_at), (size_t)R * sizeof *ro->eos_at, err));
    TRY(opt_cuda_download(d, cr->counters, BUF(void, counters), sizeof cr->counters, err));
    ro->n_generated = cr->counters[1];
    /* token 0 comes from the prefill: one per row (no row has finished yet) */
    ro->n_decode_tokens = ro->n_generated - R;
    return BC_OK;
}

void opt_cuda_rollout_free(opt_cuda_rollout *cr) {
    if (!cr) return;
    opt_cuda_rollout_release(cr);
    memset(cr, 0, sizeof *cr);
}
