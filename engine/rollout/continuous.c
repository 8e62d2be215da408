/* continuous.c: continuous batching on the CPU device (rollout.h,
 * eng_rollout_run_continuous).
 *
 * The KV cache has Cap rows ("slots"), each at its own length (eng_kv_cache
 * slot_of / len_of). Rows wait in row order; whenever slots are free the
 * next waiting rows take them and join together: one prefill forward of the
 * prompts they need, their token 0 sampled from its last logits. Then one
 * decode forward runs the active rows only, each at its own position, and
 * samples each row's next token with the row's own generator (on the pool,
 * like the static path); a row that emitted EOS (stop_at_eos, or its drawn
 * length) or reached Tr tokens retires and frees its slot.
 *
 * Prompt sharing (Sp > 1 with the shared prefix or shared_prefill,
 * eng_rollout_prompt_sharing): a prompt's Tp cached tokens and last logits
 * are computed once, when the first of its rows joins, into that row's slot
 * (the prompt's "holder", prompt_slot), and every row of the prompt that
 * joins while one of them is in the cache takes them from there without a
 * prefill. With the shared prefix (not private_prefix) the other rows never
 * hold the prompt: their decode attention reads keys s < Tp from the
 * holder's slot (eng_kv_cache.prefix_of, attend_split) and their own slots
 * hold their responses only; when the holder retires first, the prompt's
 * tokens and logits move to another of its rows' slots; with the last, they
 * go (a paged cache gets the pages back). With private_prefix (and
 * shared_prefill) each row copies the prompt's tokens into its own slot.
 * A prompt none of whose rows is in the cache when another of its rows
 * joins is prefilled again.
 *
 * A row's tokens are computed from the same inputs, keys and generator as in
 * the static batch, so they are the same tokens (tests/opt/test_rollout.c
 * and test_golden.c check it).
 */
#define _POSIX_C_SOURCE 200809L
#include "device.h"

#include <string.h>

#include "clock.h"

/* Prompt p's row in slot s leaves the cache: with the shared prefix, the
 * prompt's tokens move to another of its rows' slots when s held them (with
 * private copies, its logits only); with its last row, the prompt goes. */
static void hand_prompt_on(eng_rollout *ro, int s, int p, int group) {
    ro->prompt_rows[p]--;
    if (ro->prompt_slot[p] != s) return;
    int to = -1;
    for (int t = 0; t < ro->Cap && to < 0 && ro->prompt_rows[p] > 0; t++)
        if (ro->slot_row[t] >= 0 && ro->slot_row[t] / ro->Sp == p) to = t;
    ro->prompt_slot[p] = to;
    if (to < 0) return;
    if (group) eng_kv_cache_copy_row(&ro->kv, to, &ro->kv, s, ro->Tp);
    memcpy(ro->logits_prompt + (size_t)to * ro->V, ro->logits_prompt + (size_t)s * ro->V,
           (size_t)ro->V * sizeof(float));
}

/* Row r leaves slot s after `step` decode steps; its prompt is handed on
 * (prompt sharing) and a paged cache gets the slot's pages back. */
static void retire(eng_rollout *ro, int s, int step, int group, int *n_active) {
    const int r = ro->slot_row[s];
    ro->row_done_step[r] = step;
    ro->slot_row[s] = -1;
    (*n_active)--;
    const double t0 = eng_now_ms();
    if (ro->logits_prompt) hand_prompt_on(ro, s, r / ro->Sp, group);
    if (ro->kv.paged) eng_kv_cache_return_row(&ro->kv, s);
    ro->cache_mgmt_ms += eng_now_ms() - t0;
}

/* The pages the occupied slots hold now (P tokens each; with the shared
 * prefix a row that does not hold its prompt has only its response's
 * pages); keeps the peak and the share of its token slots that were empty
 * then. */
static void note_pages(eng_rollout *ro, int P, int group) {
    int64_t pages = 0, tokens = 0;
    for (int s = 0; s < ro->Cap; s++) {
        const int r = ro->slot_row[s];
        if (r < 0) continue;
        const int from = group && ro->prompt_slot[r / ro->Sp] != s ? ro->Tp : 0; /* its first token */
        pages += (ro->slot_len[s] + P - 1) / P - from / P;
        tokens += ro->slot_len[s] - from;
    }
    if (pages > ro->kv_pages_peak) {
        ro->kv_pages_peak = pages;
        ro->kv_fragmentation = pages > 0 ? 1.0 - (double)tokens / ((double)pages * P) : 0.0;
    }
}

/* The joining rows (batch_row, join_slot [n_join]) take their prompts'
 * cached tokens: one prefill forward of those it needs (every row's own
 * without prompt sharing), then their token 0's logits in ro->logits
 * [n_join, V]. */
static bc_status join_prefill(eng_rollout *ro, eng_model *m, int n_join, int group, bc_error *err) {
    const int Tp = ro->Tp, Stot = ro->Stot, V = ro->V, sharing = ro->logits_prompt != NULL;
    eng_kv_cache *kv = &ro->kv;
    double t0 = eng_now_ms();
    int n_pf = 0; /* rows of the prefill forward */
    for (int j = 0; j < n_join; j++) {
        const int s = ro->join_slot[j], r = ro->batch_row[j], p = r / ro->Sp;
        ro->slot_len[s] = Tp;
        if (sharing) {
            ro->prompt_rows[p]++;
            if (ro->prompt_slot[p] >= 0) continue; /* in the cache: no prefill */
            ro->prompt_slot[p] = s;
        }
        ro->batch_slot[n_pf] = s;
        ro->batch_len[n_pf] = 0;
        memcpy(ro->batch_ids + (size_t)n_pf * Tp, ro->prefill_ids + (size_t)r * Tp, (size_t)Tp * sizeof(int32_t));
        memcpy(ro->batch_mask + (size_t)n_pf * Stot, ro->mask + (size_t)r * Stot, (size_t)Tp);
        n_pf++;
    }
    double t1 = eng_now_ms();
    ro->cache_mgmt_ms += t1 - t0;
    if (n_pf > 0) {
        kv->prefix_of = NULL; /* the prefill writes and reads the holders' own rows */
        bc_status st = eng_forward(m, kv, ro->batch_ids, ro->batch_mask, Stot, n_pf, Tp, ENG_LOGITS_LAST, ro->logits,
                                   err);
        if (st != BC_OK) return st;
        t0 = eng_now_ms();
        ro->prefill_ms += t0 - t1;
        ro->n_prefill_forwards++;
        ro->n_prefill_tokens += (int64_t)n_pf * Tp;
        t1 = t0;
    }
    if (!sharing) return BC_OK; /* row j's logits are the forward's row j */
    for (int i = 0; i < n_pf; i++)
        memcpy(ro->logits_prompt + (size_t)ro->batch_slot[i] * V, ro->logits + (size_t)i * V,
               (size_t)V * sizeof(float));
    for (int j = 0; j < n_join; j++) {
        const int s = ro->join_slot[j], h = ro->prompt_slot[ro->batch_row[j] / ro->Sp];
        if (!group && h != s) eng_kv_cache_copy_row(kv, s, kv, h, Tp); /* a private copy */
        memcpy(ro->logits + (size_t)j * V, ro->logits_prompt + (size_t)h * V, (size_t)V * sizeof(float));
    }
    ro->cache_mgmt_ms += eng_now_ms() - t1;
    return BC_OK;
}

bc_status eng_rollout_run_continuous(eng_rollout *ro, eng_model *m, bc_error *err) {
    const int R = ro->R, Tp = ro->Tp, Cap = ro->Cap, Stot = ro->Stot, Tr = ro->Tr;
    const double t_start = eng_now_ms();
    eng_kv_cache *kv = &ro->kv;
    kv->len = kv->group = kv->prefix = 0;
    kv->slot_of = ro->batch_slot;
    kv->len_of = ro->batch_len;
    kv->prefix_of = NULL;
    for (int s = 0; s < Cap; s++) ro->slot_row[s] = -1;
    /* the shared prefix: rows read their prompt's tokens from its holder's slot */
    const int group = ro->logits_prompt && !ro->p.private_prefix;
    if (ro->logits_prompt)
        for (int p = 0; p < ro->Bp; p++) ro->prompt_slot[p] = -1, ro->prompt_rows[p] = 0;
    ro->n_prefill_tokens = 0;
    ro->prefill_ms = 0.0;
    ro->first_token_ms = -1.0;
    const eng_shape *hp = &m->w->shape;
    const int P = kv->paged ? eng_kv_page_tokens(hp, kv->dtype, ro->p.page_tokens) : 0;
    if (P) ro->kv_pages_peak = 0;
    int next = 0, n_active = 0, step = 0;
    int64_t active_sum = 0;
    bc_status st = BC_OK;
    while (st == BC_OK && (next < R || n_active > 0)) {
        /* join: waiting rows into free slots, their prompts prefilled together */
        double t0 = eng_now_ms();
        int n_join = 0;
        for (int s = 0; s < Cap && next < R; s++) {
            if (ro->slot_row[s] >= 0) continue;
            const int r = next++;
            ro->slot_row[s] = r;
            ro->join_slot[n_join] = s;
            ro->batch_row[n_join] = r;
            n_join++;
        }
        ro->scheduler_ms += eng_now_ms() - t0;
        if (n_join > 0) {
            st = join_prefill(ro, m, n_join, group, err);
            if (st != BC_OK) break;
            n_active += n_join;
            if (P) note_pages(ro, P, group);
            eng_rollout_sample_rows(ro, m, ro->batch_row, NULL, 0, n_join, ro->batch_more);
            const double t_first = eng_now_ms() - t_start;
            for (int j = 0; j < n_join; j++) {
                ro->row_first_ms[ro->batch_row[j]] = t_first;
                if (!ro->batch_more[j] || Tr <= 1) retire(ro, ro->join_slot[j], step, group, &n_active);
            }
            if (ro->first_token_ms < 0) ro->first_token_ms = t_first;
            if (n_active < Cap && next < R) continue; /* rows that finished at token 0 left room */
        }
        if (n_active == 0) continue;

        /* one decode step of the active rows, each at its own length */
        t0 = eng_now_ms();
        int n = 0;
        for (int s = 0; s < Cap; s++) {
            const int r = ro->slot_row[s];
            if (r < 0) continue;
            const int pos = ro->slot_len[s]; /* token k - 1 = seq[pos - Tp] of the response */
            uint8_t *mk = ro->mask + (size_t)r * Stot;
            mk[pos] = 1;
            ro->step_tokens[n] = ro->seq[(size_t)r * Stot + pos];
            ro->batch_slot[n] = s;
            ro->batch_len[n] = pos;
            ro->batch_row[n] = r;
            ro->batch_k[n] = pos + 1 - Tp; /* the token this step samples */
            if (group) ro->batch_prefix[n] = ro->prompt_slot[r / ro->Sp];
            memcpy(ro->batch_mask + (size_t)n * Stot, mk, (size_t)pos + 1);
            n++;
        }
        kv->prefix_of = group ? ro->batch_prefix : NULL;
        kv->prefix = group ? Tp : 0;
        const double t1 = eng_now_ms();
        ro->scheduler_ms += t1 - t0;
        st = eng_forward(m, kv, ro->step_tokens, ro->batch_mask, Stot, n, 1, ENG_LOGITS_LAST, ro->logits, err);
        kv->prefix_of = NULL;
        kv->prefix = 0;
        if (st != BC_OK) break;
        const double t2 = eng_now_ms();
        ro->decode_ms += t2 - t1;
        ro->n_decode_forwards++;
        ro->step_active[step] = n;
        active_sum += n;
        step++;
        for (int i = 0; i < n; i++) ro->slot_len[ro->batch_slot[i]]++;
        if (P) note_pages(ro, P, group);
        eng_rollout_sample_rows(ro, m, ro->batch_row, ro->batch_k, 0, n, ro->batch_more);
        for (int i = 0; i < n; i++)
            if (!ro->batch_more[i] || ro->batch_k[i] + 1 >= Tr) retire(ro, ro->batch_slot[i], step, group, &n_active);
        ro->step_ms[step - 1] = eng_now_ms() - t1;
    }
    kv->slot_of = kv->len_of = NULL;
    kv->prefix_of = NULL;
    if (st != BC_OK) return st;
    ro->n_steps = step;
    ro->returned_len = 0;
    for (int r = 0; r < R; r++) {
        const int len = ro->eos_at[r] >= 0 ? ro->eos_at[r] + 1 : ro->Tr;
        if (len > ro->returned_len) ro->returned_len = len;
    }
    ro->n_decode_tokens = ro->n_generated - R;
    ro->n_padded_slots = R + active_sum;
    if (ro->first_token_ms < 0) ro->first_token_ms = 0.0;
    if (P) {
        const int64_t page_bytes = eng_kv_row_page_bytes(hp, kv->dtype, P);
        ro->kv_bytes_peak = ro->kv_pages_peak * page_bytes;
        ro->kv_bytes_saved = (int64_t)eng_kv_cache_bytes(hp, kv->dtype, Cap, Stot) - ro->kv_bytes_peak;
    }
    return BC_OK;
}
