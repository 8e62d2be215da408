/* rollout.c: prompts files, expand prompts, generate with the KV cache,
 * post-process (see rollout.h for the shapes and the row order).
 *
 * Generation, like transformers' generate() with use_cache:
 *   prefill   one forward over the Tp prompt tokens of every row (or, with
 *             shared_prefill, of every prompt once, its KV rows then copied
 *             to its Sp samples), logits of the last position only;
 *   step k    sample token k of every row from the last logits; then, unless
 *             it was the last, one decode forward of that token (T = 1).
 * With Sp > 1 (unless private_prefix), the decode steps read a prompt's Tp
 * cached tokens from its first sample's row for all its samples (the rows
 * hold the same values; see eng_kv_cache.group), and shared prefill copies the
 * prompt's KV rows to that row only.
 * Default: exactly Tr tokens, EOS suppressed at every step (its logit set to
 * -inf, like min_new_tokens = max_new_tokens). stop_at_eos: a row that
 * emitted EOS is finished and emits the pad id afterwards (still fed with
 * mask 1, as transformers does); generation stops when every row is
 * finished, so returned_len can be < Tr.
 * No allocation happens between the first prefill and the last decode step.
 */
#define _POSIX_C_SOURCE 200809L
#include "rollout.h"

#include "fileio.h"
#include "../../plugins/common/synthetic_prompts.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- prompts */

void eng_prompts_free(eng_prompts *p) {
    if (!p) return;
    for (int i = 0; i < p->n_lines; i++) free(p->lines[i].ids);
    free(p->lines);
    p->lines = NULL;
    p->n_lines = 0;
}

/* Appends one prompt (ids owned by p from now on). */
static bc_status prompts_append(eng_prompts *p, int *cap, int32_t *ids, int n, const char *path, bc_error *err) {
    if (p->n_lines == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        eng_prompt *nl = realloc(p->lines, (size_t)nc * sizeof *nl);
        if (!nl) {
            free(ids);
            return bc_error_set(err, BC_ERR_NOMEM, "prompts_file %s: no memory", path);
        }
        p->lines = nl;
        *cap = nc;
    }
    p->lines[p->n_lines].ids = ids;
    p->lines[p->n_lines].n = n;
    p->n_lines++;
    return BC_OK;
}

/* Parses one line's ids into a new array; *n = 0 for a blank or comment line. */
static bc_status parse_prompt_line(char *line, int V, const char *path, int lineno, int32_t **out, int *n,
                                   bc_error *err) {
    *out = NULL;
    *n = 0;
    char *p = line;
    while (*p == ' ' || *p == '\t' || *p == '\r') p++;
    if (*p == '\0' || *p == '#') return BC_OK;
    int32_t *ids = NULL;
    int k = 0, kcap = 0;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v >= V) {
            free(ids);
            return bc_error_set(err, BC_ERR_FORMAT, "prompts_file %s:%d: \"%.20s\" is not a token id in [0, %d)", path,
                                lineno, p, V);
        }
        if (k == kcap) {
            kcap = kcap ? kcap * 2 : 32;
            int32_t *ni = realloc(ids, (size_t)kcap * sizeof *ids);
            if (!ni) {
                free(ids);
                return bc_error_set(err, BC_ERR_NOMEM, "prompts_file %s: no memory", path);
            }
            ids = ni;
        }
        ids[k++] = (int32_t)v;
        p = end;
        while (*p == ' ' || *p == '\t' || *p == '\r') p++;
    }
    *out = ids;
    *n = k;
    return BC_OK;
}

bc_status eng_prompts_read(eng_prompts *out, const char *path, int V, bc_error *err) {
    memset(out, 0, sizeof *out);
    /* a regular file of at most ENG_PROMPTS_MAX_BYTES, checked before it is
     * opened (fileio.h): /dev/zero or a FIFO is refused, not read forever */
    char *text = NULL;
    size_t len = 0;
    bc_status st = eng_read_regular(path, "prompts_file", ENG_PROMPTS_MAX_BYTES, &text, &len, err);
    if (st != BC_OK) return st;
    eng_prompts p = {0};
    int cap = 0, lineno = 0;
    for (size_t start = 0; start < len && st == BC_OK;) {
        char *line = text + start;
        char *nl = memchr(line, '\n', len - start);
        size_t n = nl ? (size_t)(nl - line) : len - start;
        lineno++;
        if (memchr(line, '\0', n)) {
            st = bc_error_set(err, BC_ERR_FORMAT, "prompts_file %s: line %d holds a NUL byte; the file must be text",
                              path, lineno);
            break;
        }
        line[n] = '\0'; /* the newline, or the buffer's own NUL */
        start += n + 1;
        int32_t *ids;
        int k;
        if ((st = parse_prompt_line(line, V, path, lineno, &ids, &k, err)) != BC_OK) break;
        if (k > 0) st = prompts_append(&p, &cap, ids, k, path, err);
    }
    if (st == BC_OK && p.n_lines == 0)
        st = bc_error_set(err, BC_ERR_FORMAT, "prompts_file %s: no prompts (one line of token ids each)", path);
    free(text);
    if (st != BC_OK) {
        eng_prompts_free(&p);
        return st;
    }
    *out = p;
    return BC_OK;
}

/* The largest rows x tokens a rollout indexes (int offsets, with headroom). */
#define ENG_ROLLOUT_MAX_CELLS (1ll << 30)

bc_status eng_rollout_check(const eng_shape *hp, const eng_rollout_params *p, eng_prompt_shape *shape,
                            bc_error *err) {
    const int Bp = p->batch_size, Sp = p->samples_per_prompt, Tr = p->response_length;
    if (Bp < 1 || Sp < 1 || Tr < 1)
        return bc_error_set(err, BC_ERR_INVALID,
                            "rollout: batch_size %d, samples_per_prompt %d, response_length %d must be >= 1", Bp, Sp,
                            Tr);
    eng_prompt_shape sh;
    if (p->prompts) {
        if (p->prompts->n_lines < 1) return bc_error_set(err, BC_ERR_INVALID, "rollout: an empty prompt set");
        if (p->prompt_length > 0) /* one case per listed length would repeat the same work */
            return bc_error_set(err, BC_ERR_SETTING,
                                "prompt length %d given with prompts_file: the prompts decide their length; leave "
                                "matrix.prompt_lengths out",
                                p->prompt_length);
        sh.width = 0;
        sh.min_len = INT32_MAX;
        for (int b = 0; b < Bp && b < p->prompts->n_lines; b++) {
            int n = p->prompts->lines[b].n;
            if (n > sh.width) sh.width = n;
            if (n < sh.min_len) sh.min_len = n;
        }
        sh.max_len = sh.width;
        if (p->prompts->width > sh.width) sh.width = p->prompts->width;
    } else {
        if (p->prompt_length == 0)
            return bc_error_set(err, BC_ERR_SETTING,
                                "prompt length 0 needs prompts_file (0 means: the prompts file decides the length)");
        if (p->prompt_length < 0)
            return bc_error_set(err, BC_ERR_INVALID, "rollout: prompt length %d must be >= 1", p->prompt_length);
        sh.width = sh.min_len = sh.max_len = p->prompt_length;
    }
    const long long total = (long long)sh.width + Tr;
    if (total > hp->max_positions)
        return bc_error_set(err, BC_ERR_INFEASIBLE,
                            "prompt of %d tokens + response of %d tokens = %lld tokens exceed %s's %d positions",
                            sh.width, Tr, total, hp->name, hp->max_positions);
    const long long rows = (long long)Bp * Sp;
    if (rows * total > ENG_ROLLOUT_MAX_CELLS)
        return bc_error_set(err, BC_ERR_INFEASIBLE, "rollout of %lld rows x %lld tokens is too large for the engine",
                            rows, total);
    const eng_length_dist *ld = &p->lengths;
    if (ld->kind == ENG_LENGTHS_UNIFORM && !(ld->min_ratio > 0.0 && ld->min_ratio <= 1.0))
        return bc_error_set(err, BC_ERR_SETTING, "response lengths uniform: min_ratio %g must be in (0, 1]",
                            ld->min_ratio);
    if (ld->kind == ENG_LENGTHS_LOGNORMAL && !(ld->mean > 0.0 && ld->sigma >= 0.0 && ld->sigma <= 10.0))
        return bc_error_set(err, BC_ERR_SETTING,
                            "response lengths lognormal: mean %g must be > 0 and sigma %g in [0, 10]", ld->mean,
                            ld->sigma);
    if (ld->kind == ENG_LENGTHS_EMPIRICAL && (ld->n_values < 1 || !ld->values))
        return bc_error_set(err, BC_ERR_SETTING, "response lengths empirical: no lengths given");
    if (p->capacity < 0)
        return bc_error_set(err, BC_ERR_SETTING, "continuous batching: capacity %d must be >= 0", p->capacity);
    if (p->page_tokens < 0)
        return bc_error_set(err, BC_ERR_SETTING, "kv_page_tokens %d must be >= 0", p->page_tokens);
    if (shape) *shape = sh;
    return BC_OK;
}

bc_status eng_rollout_dims(eng_rollout *ro, const eng_shape *hp, const eng_rollout_params *p, bc_error *err) {
    memset(ro, 0, sizeof *ro);
    eng_prompt_shape sh;
    bc_status st = eng_rollout_check(hp, p, &sh, err);
    if (st != BC_OK) return st;
    ro->p = *p;
    ro->p.prompts = NULL; /* borrowed for eng_rollout_init only */
    ro->V = hp->vocab_size;
    /* The id pad slots and finished rows feed the forward: the model's pad
     * id, or, for a model without one (pad_token_id -1, the Llama presets),
     * its EOS or id 0. Its value never matters (the mask hides it, see
     * eng_rollout_post_process), but the forward takes only ids in [0, V). */
    const int pad_ok = hp->pad_token_id >= 0 && hp->pad_token_id < hp->vocab_size;
    const int eos_ok = hp->eos_token_id >= 0 && hp->eos_token_id < hp->vocab_size;
    ro->pad_id = pad_ok ? hp->pad_token_id : eos_ok ? hp->eos_token_id : 0;
    ro->eos_id = hp->eos_token_id;
    ro->Bp = p->batch_size;
    ro->Sp = p->samples_per_prompt;
    ro->R = ro->Bp * ro->Sp;
    ro->Tr = p->response_length;
    ro->Tp = sh.width;
    ro->prompt_min = sh.min_len;
    ro->prompt_max = sh.max_len;
    ro->Stot = ro->Tp + ro->Tr;
    ro->forced_lengths = p->lengths.kind != ENG_LENGTHS_FIXED;
    ro->p.lengths.values = NULL; /* borrowed for eng_rollout_init only */
    ro->Cap = !p->continuous ? 0 : p->capacity > 0 && p->capacity < ro->R ? p->capacity : ro->R;
    /* continuous: every step but the last of a queue's drain decodes Cap rows */
    ro->max_steps = ro->Cap ? (int)(((long long)ro->R * ro->Tr + ro->Cap - 1) / ro->Cap) + ro->Tr : ro->Tr;
    return BC_OK;
}

bc_status eng_rollout_init(eng_rollout *ro, const eng_shape *hp, const eng_rollout_params *p, bc_error *err) {
    bc_status st = eng_rollout_dims(ro, hp, p, err);
    if (st != BC_OK) return st;
    const size_t R = (size_t)ro->R, Bp = (size_t)ro->Bp;
    ro->prompt_ids = malloc(Bp * ro->Tp * sizeof *ro->prompt_ids);
    ro->prompt_mask = malloc(Bp * ro->Tp);
    ro->seq = malloc(R * ro->Stot * sizeof *ro->seq);
    ro->mask = malloc(R * ro->Stot);
    ro->prefill_ids = malloc(R * ro->Tp * sizeof *ro->prefill_ids);
    ro->step_tokens = malloc(R * sizeof *ro->step_tokens);
    ro->eos_at = malloc(R * sizeof *ro->eos_at);
    ro->logprobs = calloc(R * (size_t)ro->Tr, sizeof *ro->logprobs);
    ro->rngs = malloc(R * sizeof *ro->rngs);
    ro->step_ms = malloc((size_t)ro->max_steps * sizeof *ro->step_ms);
    ro->marks = malloc((size_t)eng_rollout_n_marks(ro->Tr) * sizeof *ro->marks);
    ro->row_len = malloc(R * sizeof *ro->row_len);
    ro->step_active = malloc((size_t)ro->max_steps * sizeof *ro->step_active);
    ro->row_first_ms = malloc(R * sizeof *ro->row_first_ms);
    ro->row_done_step = malloc(R * sizeof *ro->row_done_step);
    int ok = 1;
    if (ro->Cap) {
        const size_t Cap = (size_t)ro->Cap;
        ro->slot_row = malloc(Cap * sizeof *ro->slot_row);
        ro->slot_len = malloc(Cap * sizeof *ro->slot_len);
        ro->batch_slot = malloc(Cap * sizeof *ro->batch_slot);
        ro->batch_len = malloc(Cap * sizeof *ro->batch_len);
        ro->batch_mask = malloc(Cap * ro->Stot);
        ro->batch_ids = malloc(Cap * ro->Tp * sizeof *ro->batch_ids);
        ro->batch_row = malloc(Cap * sizeof *ro->batch_row);
        ro->batch_k = malloc(Cap * sizeof *ro->batch_k);
        ro->batch_more = malloc(Cap * sizeof *ro->batch_more);
        ro->batch_prefix = malloc(Cap * sizeof *ro->batch_prefix);
        ro->join_slot = malloc(Cap * sizeof *ro->join_slot);
        ro->prompt_slot = malloc(Bp * sizeof *ro->prompt_slot);
        ro->prompt_rows = malloc(Bp * sizeof *ro->prompt_rows);
        ok = ro->slot_row && ro->slot_len && ro->batch_slot && ro->batch_len && ro->batch_mask && ro->batch_ids &&
             ro->batch_row && ro->batch_k && ro->batch_more && ro->batch_prefix && ro->join_slot && ro->prompt_slot && ro->prompt_rows;
    }
    if (!ok || !ro->prompt_ids || !ro->prompt_mask || !ro->seq || !ro->mask || !ro->prefill_ids || !ro->step_tokens ||
        !ro->eos_at || !ro->logprobs || !ro->rngs || !ro->step_ms || !ro->marks || !ro->row_len || !ro->step_active ||
        !ro->row_first_ms || !ro->row_done_step) {
        eng_rollout_free(ro);
        return bc_error_set(err, BC_ERR_NOMEM, "rollout: no memory for %d rows x %d tokens", (int)R, ro->Stot);
    }
    for (int b = 0; b < ro->Bp; b++) {
        int32_t *ids = ro->prompt_ids + (size_t)b * ro->Tp;
        uint8_t *mk = ro->prompt_mask + (size_t)b * ro->Tp;
        if (p->prompts) {
            const eng_prompt *ln = &p->prompts->lines[b % p->prompts->n_lines];
            int pad = ro->Tp - ln->n;
            for (int t = 0; t < pad; t++) ids[t] = ro->pad_id, mk[t] = 0;
            for (int t = 0; t < ln->n; t++) ids[pad + t] = ln->ids[t], mk[pad + t] = 1;
        } else {
            bc_synthetic_prompt(p->sampling.seed, (uint64_t)b, ro->V, ids, ro->Tp); /* plugins/common */
            memset(mk, 1, (size_t)ro->Tp);
        }
    }
    eng_lengths_draw(&p->lengths, p->sampling.seed, ro->Tr, ro->R, ro->row_len);
    ro->lengths_drawn = eng_lengths_summarize(ro->row_len, ro->R, ro->row_done_step /* scratch until generate */);
    return BC_OK;
}

/* ------------------------------------------------------------------ sizes */

int eng_rollout_shared_prefill(const eng_rollout *ro) { return ro->p.shared_prefill && ro->Sp > 1 && !ro->Cap; }

int eng_rollout_prompt_sharing(const eng_rollout *ro) {
    return ro->Cap && ro->Sp > 1 && (!ro->p.private_prefix || ro->p.shared_prefill);
}

int eng_rollout_cache_rows(const eng_rollout *ro) { return ro->Cap ? ro->Cap : ro->R; }

int eng_rollout_cache_positions(const eng_rollout *ro, const eng_shape *hp, eng_dtype dtype) {
    if (!ro->p.kv_paged) return ro->Stot;
    const int P = eng_kv_page_tokens(hp, dtype, ro->p.page_tokens);
    return (int)(((long long)ro->Stot + P - 1) / P * P);
}

int eng_rollout_n_marks(int Tr) { return 3 * Tr + 4; }

eng_rollout_bytes eng_rollout_plan(const eng_rollout *ro, const eng_shape *hp, const eng_ws_needs *need, eng_dtype dtype,
                                   int n_threads) {
    eng_rollout_bytes b;
    const int shared = eng_rollout_shared_prefill(ro);
    const int rows = eng_rollout_cache_rows(ro), prefill_rows = shared ? ro->Bp : rows;
    const int S = eng_rollout_cache_positions(ro, hp, eng_kv_dtype(dtype));
    b.kv_cache = eng_kv_cache_bytes(hp, eng_kv_dtype(dtype), rows, S); /* paged: reserved, the most it can take */
    if (shared) b.kv_cache += eng_kv_cache_bytes(hp, eng_kv_dtype(dtype), ro->Bp, ro->Tp);
    int max_tokens = prefill_rows * ro->Tp > rows ? prefill_rows * ro->Tp : rows;
    b.workspace = eng_workspace_bytes(hp, need, max_tokens, S, n_threads);
    b.workspace += (size_t)rows * ro->V * sizeof(float);
    if (shared) b.workspace += (size_t)ro->Bp * ro->V * sizeof(float);
    if (eng_rollout_prompt_sharing(ro)) b.workspace += (size_t)ro->Cap * ro->V * sizeof(float);
    b.workspace += (size_t)n_threads * ((size_t)ro->V * sizeof(eng_sample_pair) + sizeof(eng_sampler));
    b.buffers = (size_t)ro->Bp * ro->Tp * 5 + (size_t)ro->R * ro->Stot * 5 + (size_t)ro->R * ro->Tp * sizeof(int32_t) +
                (size_t)ro->R * (sizeof(int32_t) + sizeof(int) + sizeof(eng_rng)) +
                (size_t)ro->R * ro->Tr * sizeof(float) +
                (size_t)ro->max_steps * (sizeof(double) + sizeof(int)) +
                (size_t)eng_rollout_n_marks(ro->Tr) * sizeof(double) + (size_t)ro->R * (2 * sizeof(int) + sizeof(double)) +
                (size_t)ro->Cap * (9 * sizeof(int) + (size_t)ro->Stot + (size_t)ro->Tp * sizeof(int32_t)) +
                (ro->Cap ? (size_t)ro->Bp * 2 * sizeof(int) : 0);
    return b;
}

/* ----------------------------------------------------------------- stages */

bc_status eng_rollout_expand(eng_rollout *ro, bc_error *err) {
    (void)err;
    for (int r = 0; r < ro->R; r++) {
        int b = r / ro->Sp;
        int32_t *seq = ro->seq + (size_t)r * ro->Stot;
        uint8_t *mk = ro->mask + (size_t)r * ro->Stot;
        memcpy(seq, ro->prompt_ids + (size_t)b * ro->Tp, (size_t)ro->Tp * sizeof *seq);
        memcpy(ro->prefill_ids + (size_t)r * ro->Tp, seq, (size_t)ro->Tp * sizeof *seq);
        memcpy(mk, ro->prompt_mask + (size_t)b * ro->Tp, (size_t)ro->Tp);
        for (int t = ro->Tp; t < ro->Stot; t++) seq[t] = ro->pad_id, mk[t] = 0;
    }
    return BC_OK;
}

int eng_rollout_sample_row(eng_rollout *ro, eng_sampler *smp, float *lg, int r, int k, int *running) {
    int32_t *seq = ro->seq + (size_t)r * ro->Stot;
    float *lp = ro->logprobs + (size_t)r * ro->Tr + k;
    *running = 0;
    if (ro->eos_at[r] >= 0) {
        seq[ro->Tp + k] = ro->pad_id;
        *lp = 0.0f;
        return 0;
    }
    const int has_eos = ro->eos_id >= 0 && ro->eos_id < ro->V;
    /* the model's distribution before any change to the row: one pass */
    const float lse = eng_logsumexp(lg, ro->V), eos_logit = has_eos ? lg[ro->eos_id] : 0.0f;
    if (!ro->p.stop_at_eos && has_eos) lg[ro->eos_id] = -INFINITY;
    int32_t tok = eng_sample(smp, lg, &ro->rngs[r]);
    /* the drawn length: the row's last token is EOS (the draw still advances
     * the row's generator, as it would have without the length) */
    if (ro->forced_lengths && k + 1 >= ro->row_len[r] && has_eos) tok = ro->eos_id;
    seq[ro->Tp + k] = tok;
    *lp = (has_eos && tok == ro->eos_id ? eos_logit : lg[tok]) - lse;
    if ((ro->p.stop_at_eos || ro->forced_lengths) && tok == ro->eos_id) ro->eos_at[r] = k;
    else *running = 1;
    return 1;
}

/* The results every generate starts from: rows' generators, no EOS, no
 * token, no step. */
void eng_rollout_results_reset(eng_rollout *ro) {
    const uint64_t seed = ro->p.per_iteration_stream ? eng_rng_stream_seed(ro->p.sampling.seed, ro->iteration)
                                                     : ro->p.sampling.seed;
    for (int r = 0; r < ro->R; r++) {
        ro->rngs[r] = eng_rng_for_row(seed, (uint64_t)r);
        ro->eos_at[r] = -1;
        ro->row_done_step[r] = 0;
        ro->row_first_ms[r] = 0.0;
    }
    ro->n_generated = 0;
    ro->n_decode_forwards = 0;
    ro->decode_ms = 0.0;
    ro->n_steps = 0;
    ro->returned_len = 0;
    ro->response_start = ro->Tp;
    ro->n_prefill_forwards = 0;
    ro->scheduler_ms = ro->cache_mgmt_ms = 0.0;
    ro->kv_pages_peak = -1;
    ro->kv_bytes_peak = ro->have_cache ? (int64_t)ro->kv.bytes : -1; /* -1: the cache is on another device */
    ro->kv_bytes_saved = 0;
    ro->kv_fragmentation = NAN;
}

bc_status eng_rollout_post_process(eng_rollout *ro, bc_error *err) {
    (void)err;
    /* the attention mask of prompt + response: 1 up to and including a row's
     * EOS, 0 after it (pad id 0 is legal: the mask comes from the structure,
     * never from comparing tokens with the pad id) */
    for (int r = 0; r < ro->R; r++) {
        uint8_t *mk = ro->mask + (size_t)r * ro->Stot + ro->Tp;
        for (int k = 0; k < ro->Tr; k++)
            mk[k] = k < ro->returned_len && (ro->eos_at[r] < 0 || k <= ro->eos_at[r]);
    }
    ro->response_start = ro->Tp;
    return BC_OK;
}

void eng_rollout_free(eng_rollout *ro) {
    free(ro->prompt_ids);
    free(ro->prompt_mask);
    free(ro->seq);
    free(ro->mask);
    free(ro->prefill_ids);
    free(ro->step_tokens);
    free(ro->eos_at);
    free(ro->logprobs);
    free(ro->rngs);
    free(ro->step_ms);
    free(ro->marks);
    free(ro->row_len);
    free(ro->step_active);
    free(ro->row_first_ms);
    free(ro->row_done_step);
    free(ro->slot_row);
    free(ro->slot_len);
    free(ro->batch_slot);
    free(ro->batch_len);
    free(ro->batch_mask);
    free(ro->batch_ids);
    free(ro->batch_row);
    free(ro->batch_k);
    free(ro->batch_more);
    free(ro->batch_prefix);
    free(ro->join_slot);
    free(ro->prompt_slot);
    free(ro->prompt_rows);
    memset(ro, 0, sizeof *ro);
}
