/* continuous.c: continuous batching on the CPU device (rollout.h,
 * opt_rollout_run_continuous).
 *
 * The KV cache has Cap rows ("slots"), each at its own length (opt_kv_cache
 * slot_of / len_of). Rows wait in row order; whenever slots are free the
 * next waiting rows take them and are prefilled together (one forward of
 * their Tp prompt tokens, exactly the static prefill's rows), their token 0
 * sampled from it. Then one decode forward runs the active rows only, each at
 * its own position, and samples each row's next token with the row's own
 * generator; a row that emitted EOS (stop_at_eos, or its drawn length) or
 * reached Tr tokens retires and frees its slot. A row's tokens are computed
 * from the same inputs, keys and generator as in the static batch, so they
 * are the same tokens (tests/opt/test_rollout.c checks it on the golden
 * models). Shared prefill and shared prefix are not used: each row is
 * prefilled from its own prompt row.
 */
#define _POSIX_C_SOURCE 200809L
#include "rollout.h"

#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Row r leaves slot s after `step` decode steps; a paged cache gets the
 * row's pages back. */
static void retire(opt_rollout *ro, int s, int step, int *n_active) {
    ro->row_done_step[ro->slot_row[s]] = step;
    ro->slot_row[s] = -1;
    (*n_active)--;
    if (ro->kv.paged) {
        const double t0 = now_ms();
        opt_kv_cache_return_row(&ro->kv, s);
        ro->cache_mgmt_ms += now_ms() - t0;
    }
}

/* The pages the occupied slots hold now (P tokens each); keeps the peak and
 * the share of its token slots that were empty then. */
static void note_pages(opt_rollout *ro, int P) {
    int64_t pages = 0, tokens = 0;
    for (int s = 0; s < ro->Cap; s++)
        if (ro->slot_row[s] >= 0) {
            pages += (ro->slot_len[s] + P - 1) / P;
            tokens += ro->slot_len[s];
        }
    if (pages > ro->kv_pages_peak) {
        ro->kv_pages_peak = pages;
        ro->kv_fragmentation = pages > 0 ? 1.0 - (double)tokens / ((double)pages * P) : 0.0;
    }
}

/* Samples row r's token k from lg into seq; retires the row from slot s when
 * it finished (EOS, or Tr tokens). */
static void sample_in_slot(opt_rollout *ro, int s, float *lg, int k, int step, int *n_active) {
    const int r = ro->slot_row[s];
    int goes_on;
    ro->n_generated += opt_rollout_sample_row(ro, &ro->samplers[0], lg, r, k, &goes_on);
    if (!goes_on || k + 1 >= ro->Tr) retire(ro, s, step, n_active);
}

bc_status opt_rollout_run_continuous(opt_rollout *ro, opt_model *m, bc_error *err) {
    const int R = ro->R, Tp = ro->Tp, Cap = ro->Cap, Stot = ro->Stot, V = ro->V;
    const double t_start = now_ms();
    opt_kv_cache *kv = &ro->kv;
    kv->len = kv->group = kv->prefix = 0;
    kv->slot_of = ro->batch_slot;
    kv->len_of = ro->batch_len;
    for (int s = 0; s < Cap; s++) ro->slot_row[s] = -1;
    ro->n_prefill_tokens = 0;
    ro->prefill_ms = 0.0;
    ro->first_token_ms = -1.0;
    const opt_hparams *hp = &m->w->hp;
    const int P = kv->paged ? opt_kv_page_tokens(hp, kv->dtype, ro->p.page_tokens) : 0;
    if (P) ro->kv_pages_peak = 0;
    int next = 0, n_active = 0, step = 0;
    int64_t active_sum = 0;
    bc_status st = BC_OK;
    while (st == BC_OK && (next < R || n_active > 0)) {
        /* join: waiting rows into free slots, prefilled together */
        double t0 = now_ms();
        int n_join = 0;
        for (int s = 0; s < Cap && next < R; s++) {
            if (ro->slot_row[s] >= 0) continue;
            const int r = next++;
            ro->slot_row[s] = r;
            ro->batch_slot[n_join] = s;
            ro->batch_len[n_join] = 0;
            n_join++;
        }
        double t1 = now_ms();
        ro->scheduler_ms += t1 - t0;
        if (n_join > 0) {
            for (int j = 0; j < n_join; j++) {
                const int r = ro->slot_row[ro->batch_slot[j]];
                memcpy(ro->batch_ids + (size_t)j * Tp, ro->prefill_ids + (size_t)r * Tp, (size_t)Tp * sizeof(int32_t));
                memcpy(ro->batch_mask + (size_t)j * Stot, ro->mask + (size_t)r * Stot, (size_t)Tp);
                ro->slot_len[ro->batch_slot[j]] = Tp;
            }
            const double t2 = now_ms();
            ro->cache_mgmt_ms += t2 - t1;
            st = opt_forward(m, kv, ro->batch_ids, ro->batch_mask, Stot, n_join, Tp, OPT_LOGITS_LAST, ro->logits, err);
            if (st != BC_OK) break;
            const double t3 = now_ms();
            ro->prefill_ms += t3 - t2;
            ro->n_prefill_forwards++;
            ro->n_prefill_tokens += (int64_t)n_join * Tp;
            n_active += n_join;
            if (P) note_pages(ro, P);
            for (int j = 0; j < n_join; j++) {
                const int s = ro->batch_slot[j], r = ro->slot_row[s];
                sample_in_slot(ro, s, ro->logits + (size_t)j * V, 0, step, &n_active);
                ro->row_first_ms[r] = now_ms() - t_start;
            }
            if (ro->first_token_ms < 0) ro->first_token_ms = now_ms() - t_start;
            if (n_active < Cap && next < R) continue; /* rows that finished at token 0 left room */
        }
        if (n_active == 0) continue;

        /* one decode step of the active rows, each at its own length */
        t0 = now_ms();
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
            memcpy(ro->batch_mask + (size_t)n * Stot, mk, (size_t)pos + 1);
            n++;
        }
        t1 = now_ms();
        ro->scheduler_ms += t1 - t0;
        st = opt_forward(m, kv, ro->step_tokens, ro->batch_mask, Stot, n, 1, OPT_LOGITS_LAST, ro->logits, err);
        if (st != BC_OK) break;
        const double t2 = now_ms();
        ro->decode_ms += t2 - t1;
        ro->n_decode_forwards++;
        ro->step_active[step] = n;
        active_sum += n;
        step++;
        for (int i = 0; i < n; i++) ro->slot_len[ro->batch_slot[i]]++;
        if (P) note_pages(ro, P);
        for (int i = 0; i < n; i++) {
            const int s = ro->batch_slot[i];
            sample_in_slot(ro, s, ro->logits + (size_t)i * V, ro->slot_len[s] - Tp, step, &n_active);
        }
        ro->step_ms[step - 1] = now_ms() - t1;
    }
    kv->slot_of = kv->len_of = NULL;
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
        const int64_t page_bytes = 2 * (int64_t)hp->num_hidden_layers * P * hp->hidden_size *
                                   (int64_t)opt_dtype_size(kv->dtype);
        ro->kv_bytes_peak = ro->kv_pages_peak * page_bytes;
        ro->kv_bytes_saved = (int64_t)opt_kv_cache_bytes(hp, kv->dtype, Cap, Stot) - ro->kv_bytes_peak;
    }
    return BC_OK;
}
