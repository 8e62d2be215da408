/* loop.c: the generate stage, written once over a device's steps
 * (eng_rollout_run, device.h): acquire, prefill (shared when the rollout
 * says so), token 0, the decode steps, the stage and step timings. It calls
 * the device only through eng_step_ops and nothing calls back into it: a
 * device's generate picks this loop (a static batch) or its own (the CPU's
 * continuous batching, continuous.c).
 */
#include "device.h"

#define TRY(x)                        \
    do {                              \
        bc_status st_ = (x);          \
        if (st_ != BC_OK) return st_; \
    } while (0)

bc_status eng_rollout_run(eng_rollout *ro, const eng_step_ops *ops, void *ctx, bc_error *err) {
    ops->marks_reset(ctx, ro);
    const int m_start = ops->mark(ctx, ro);
    TRY(ops->acquire(ctx, ro, err));
    const int R = ro->R, Tp = ro->Tp, Sp = ro->Sp;
    eng_rollout_results_reset(ro);
    ro->n_prefill_forwards = 1;
    const int shared = eng_rollout_shared_prefill(ro);
    ro->n_prefill_tokens = (int64_t)(shared ? ro->Bp : R) * Tp;
    TRY(ops->start(ctx, ro, err));

    /* prefill; prefix sharing is off during it (it writes every row) */
    const int group = Sp > 1 && !ro->p.private_prefix && ops->grouped_prefix;
    TRY(ops->set_cache(ctx, ro, 0, 0, 0, err));
    const int m0 = ops->mark(ctx, ro);
    if (shared) {
        TRY(ops->prefill(ctx, ro, 1, err));
        for (int r = 0; r < R; r++) TRY(ops->copy_prompt(ctx, ro, r, !group || r % Sp == 0, err));
    } else {
        TRY(ops->prefill(ctx, ro, 0, err));
    }
    TRY(ops->set_cache(ctx, ro, Tp, group ? Sp : 0, group ? Tp : 0, err));
    const int m1 = ops->mark(ctx, ro);

    /* token 0 of every row, from the prefill's logits; then decode step k
     * feeds token k - 1 and samples token k. Marks per step: before the
     * forward, after it, after sampling. */
    int running = 0, k = 1;
    TRY(ops->sample(ctx, ro, 0, &running, err));
    const int m_first = ops->mark(ctx, ro);
    int first = -1; /* the first step's first mark; steps are 3 marks apart */
    for (; k < ro->Tr; k++) {
        if (running == 0) break; /* every row finished (stop_at_eos or its drawn length) */
        const int a = ops->mark(ctx, ro);
        TRY(ops->decode(ctx, ro, k, err));
        (void)ops->mark(ctx, ro);
        if (first < 0) first = a;
        ro->step_active[ro->n_decode_forwards] = running; /* the rows this step generates for */
        ro->n_decode_forwards++;
        TRY(ops->sample(ctx, ro, k, &running, err));
        (void)ops->mark(ctx, ro);
    }
    ro->returned_len = k;
    TRY(ops->finish(ctx, ro, err));
    ro->prefill_ms = ops->elapsed_ms(ctx, ro, m0, m1);
    ro->first_token_ms = ops->elapsed_ms(ctx, ro, m_start, m_first);
    for (int i = 0; i < (int)ro->n_decode_forwards && first >= 0; i++) {
        const int a = first + 3 * i;
        ro->decode_ms += ops->elapsed_ms(ctx, ro, a, a + 1);
        ro->step_ms[ro->n_steps++] = ops->elapsed_ms(ctx, ro, a, a + 2);
    }
    /* token 0 comes from the prefill: one per row (no row has finished yet) */
    ro->n_decode_tokens = ro->n_generated - R;
    ro->n_padded_slots = (int64_t)R * ro->returned_len;
    for (int r = 0; r < R; r++) {
        ro->row_first_ms[r] = ro->first_token_ms;
        ro->row_done_step[r] = ro->eos_at[r] >= 0 ? ro->eos_at[r] : ro->returned_len - 1;
    }
    return BC_OK;
}

