/* cuda_plan.c: byte layouts of the device buffers (see cuda_plan.h). */
#include "cuda_plan.h"

#include "forward.h"
#include "opt_model.h"

static size_t al(size_t n) { return (n + OPT_CUDA_ALIGN - 1) / OPT_CUDA_ALIGN * OPT_CUDA_ALIGN; }

size_t opt_cuda_ws_layout_for(const opt_hparams *hp, eng_dtype dt, int N, opt_cuda_ws_layout *l) {
    const size_t n = (size_t)(N > 0 ? N : 0), C = (size_t)hp->s.hidden_size, P = (size_t)hp->word_embed_proj_dim;
    const size_t F = (size_t)hp->s.ffn_size, Cm = C > P ? C : P, es = eng_dtype_size(dt);
    size_t off = 0;
#define BUF(field, bytes) (l->field = off, off += al(bytes))
    l->N = (int)n;
    BUF(x, n * Cm * 4);
    BUF(xh, n * Cm * es);
    BUF(q, n * C * 4);
    BUF(k, n * C * 4);
    BUF(v, n * C * 4);
    BUF(att, n * C * es);
    BUF(y, n * Cm * 4);
    BUF(ff, n * F * 4);
    if (dt == ENG_F32) l->ffh = l->ff;
    else BUF(ffh, n * F * es);
    BUF(embh, n * Cm * es);
    BUF(lt, OPT_CUDA_LT_WORKSPACE);
#undef BUF
    l->bytes = off;
    return off;
}

size_t opt_cuda_rollout_layout_for(int V, int R, int Bp, int Tp, int Stot, int shared, opt_cuda_rollout_layout *l) {
    const size_t v = (size_t)V, r = (size_t)R, bp = (size_t)Bp, tp = (size_t)Tp, st = (size_t)Stot;
    size_t off = 0;
#define BUF(field, bytes) (l->field = off, off += al(bytes))
    BUF(logits, r * v * 4);
    if (shared) BUF(logits_shared, bp * v * 4);
    else l->logits_shared = off;
    BUF(scratch, r * v * 4);
    BUF(seq, r * st * 4);
    BUF(mask, r * st);
    BUF(prefill_ids, r * tp * 4);
    BUF(prompt_ids, bp * tp * 4);
    BUF(prompt_mask, bp * tp);
    BUF(step_tokens, r * 4);
    BUF(eos_at, r * 4);
    BUF(rng, r * 8);
    BUF(counters, 2 * 8);
#undef BUF
    l->bytes = off;
    return off;
}

opt_cuda_plan opt_cuda_plan_rollout(const opt_hparams *hp, eng_dtype dt, int R, int Bp, int Tp, int Stot, int shared) {
    opt_cuda_plan p;
    const int prefill_rows = shared ? Bp : R;
    p.max_tokens = prefill_rows * Tp > R ? prefill_rows * Tp : R;
    p.weights = opt_weights_bytes(hp, dt);
    p.kv_cache = eng_kv_cache_bytes(&hp->s, dt, R, Stot);
    if (shared) p.kv_cache += eng_kv_cache_bytes(&hp->s, dt, Bp, Tp);
    opt_cuda_ws_layout wl;
    opt_cuda_rollout_layout rl;
    p.workspace = opt_cuda_ws_layout_for(hp, dt, p.max_tokens, &wl) +
                  opt_cuda_rollout_layout_for(hp->s.vocab_size, R, Bp, Tp, Stot, shared, &rl);
    return p;
}
