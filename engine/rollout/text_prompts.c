/* text_prompts.c: text prompt sets for the engine (text_prompts.h). */
#define _POSIX_C_SOURCE 200809L
#include "text_prompts.h"

#include <stdlib.h>
#include <string.h>

#include "bpe.h"
#include "fileio.h"
#include "prompt_set.h"
#include "tok_to_bc.h"

TOK_READER_FROM_BC(tok_read_regular, eng_read_regular)

int eng_prompt_fit_from_name(const char *name) {
    if (!name || !strcmp(name, "ragged")) return ENG_FIT_RAGGED;
    if (!strcmp(name, "bucket")) return ENG_FIT_BUCKET;
    if (!strcmp(name, "truncate_pad")) return ENG_FIT_TRUNCATE_PAD;
    return -1;
}

void eng_text_prompts_free(eng_text_prompts *tp) {
    if (!tp) return;
    eng_prompts_free(&tp->all);
    free(tp->lines);
    free(tp->view.lines); /* its ids are all's */
    memset(tp, 0, sizeof *tp);
}

bc_status eng_text_prompts_read(eng_text_prompts *tp, const char *path, const char *format, const char *field,
                                const char *checkpoint, int bos_id, int V, eng_prompt_fit fit, int bucket_width,
                                bc_error *err) {
    memset(tp, 0, sizeof *tp);
    int fmt = bpe_prompt_format_from_name(format);
    if (fmt < 0)
        return bc_error_set(err, BC_ERR_SETTING, "prompts_format \"%s\": must be auto, jsonl or lines", format);
    bpe_tokenizer *t = NULL;
    tok_error te;
    bc_status st = tok_error_to_bc(bpe_load_dir(checkpoint, tok_read_regular, &t, &te), &te, err);
    if (st != BC_OK) {
        bc_error_hint(err, "prompts_text is tokenized with the checkpoint's tokenizer; prompts_file takes token ids");
        return st;
    }
    bpe_prompt_set set;
    st = tok_error_to_bc(bpe_prompt_set_read(&set, path, tok_read_regular, ENG_PROMPTS_MAX_BYTES,
                                             (bpe_prompt_format)fmt, field, t, bos_id, &te),
                         &te, err);
    bpe_free(t);
    if (st != BC_OK) return st;
    tp->path = path;
    tp->fit = fit;
    tp->bucket_width = bucket_width;
    tp->all.n_lines = set.count;
    tp->all.lines = malloc((size_t)set.count * sizeof *tp->all.lines);
    tp->lines = malloc((size_t)set.count * sizeof *tp->lines);
    tp->view.lines = malloc((size_t)set.count * sizeof *tp->view.lines);
    if (!tp->all.lines || !tp->lines || !tp->view.lines) {
        tp->all.n_lines = 0;
        bpe_prompt_set_free(&set);
        eng_text_prompts_free(tp);
        return bc_error_set(err, BC_ERR_NOMEM, "prompts_text %s: no memory for %d prompts", path, set.count);
    }
    for (int i = 0; i < set.count; i++) { /* the ids move from the set to all */
        tp->all.lines[i] = (eng_prompt){.ids = set.prompts[i].ids, .n = set.prompts[i].n};
        tp->lines[i] = set.prompts[i].line;
        set.prompts[i].ids = NULL;
    }
    bpe_prompt_set_free(&set);
    for (int i = 0; i < tp->all.n_lines; i++)
        for (int k = 0; k < tp->all.lines[i].n; k++)
            if (tp->all.lines[i].ids[k] >= V) {
                bc_error_set(err, BC_ERR_FORMAT,
                             "prompts_text %s:%d: token id %d is not below the model's vocab_size %d; is this the "
                             "checkpoint's own tokenizer?",
                             path, tp->lines[i], tp->all.lines[i].ids[k], V);
                eng_text_prompts_free(tp);
                return BC_ERR_FORMAT;
            }
    return BC_OK;
}

int64_t eng_text_prompts_bytes(const eng_text_prompts *tp) {
    int64_t n = (int64_t)tp->all.n_lines * (int64_t)(2 * sizeof(eng_prompt) + sizeof(int));
    for (int i = 0; i < tp->all.n_lines; i++) n += (int64_t)tp->all.lines[i].n * (int64_t)sizeof(int32_t);
    return n;
}

/* tp->batch for the first batch_size prompts of the view. */
static void describe_batch(eng_text_prompts *tp, int batch_size, int truncate_to) {
    eng_text_batch *b = &tp->batch;
    int small[256] = {0}; /* (initialised: gcc cannot see that batch_size >= 1 fills it) */
    int *len = batch_size <= 256 ? small : malloc((size_t)batch_size * sizeof *len);
    int64_t real = 0;
    b->set_size = tp->view.n_lines;
    b->truncated = 0;
    b->width = tp->view.width;
    for (int i = 0; i < batch_size; i++) {
        int n = tp->view.lines[i % tp->view.n_lines].n;
        if (truncate_to > 0 && tp->all.lines[i % tp->view.n_lines].n > truncate_to) b->truncated++;
        if (n > b->width) b->width = n;
        if (len) len[i] = n;
        real += n;
    }
    bpe_length_summary s = len ? bpe_length_summary_of(len, batch_size) : (bpe_length_summary){-1, -1, -1};
    if (len != small) free(len);
    b->min = s.min;
    b->p50 = s.p50;
    b->max = s.max;
    b->slots = (int64_t)batch_size * b->width;
    b->pad_tokens = b->slots - real;
}

bc_status eng_text_prompts_fit(eng_text_prompts *tp, int L, int batch_size, const eng_prompts **prompts,
                               int *rollout_prompt_length, bc_error *err) {
    const eng_prompts *all = &tp->all;
    tp->view.n_lines = 0;
    tp->view.width = 0;
    if (tp->fit == ENG_FIT_RAGGED) {
        if (L > 0) {
            bc_error_set(err, BC_ERR_SETTING,
                         "prompt length %d with prompts_text and prompts_fit = \"ragged\": the prompts decide their "
                         "length",
                         L);
            return bc_error_hint(err, "leave matrix.prompt_lengths out, or set prompts_fit = \"bucket\" or "
                                      "\"truncate_pad\" to fit the prompts to each length");
        }
        memcpy(tp->view.lines, all->lines, (size_t)all->n_lines * sizeof *all->lines);
        tp->view.n_lines = all->n_lines;
    } else {
        if (L <= 0) {
            bc_error_set(err, BC_ERR_SETTING, "prompts_fit = \"%s\" needs a prompt length per case",
                         tp->fit == ENG_FIT_BUCKET ? "bucket" : "truncate_pad");
            return bc_error_hint(err, "set matrix.prompt_lengths, or prompts_fit = \"ragged\"");
        }
        int shortest = all->lines[0].n, longest = all->lines[0].n;
        for (int i = 0; i < all->n_lines; i++) {
            int n = all->lines[i].n;
            if (n < shortest) shortest = n;
            if (n > longest) longest = n;
            if (tp->fit == ENG_FIT_TRUNCATE_PAD)
                tp->view.lines[tp->view.n_lines++] = (eng_prompt){.ids = all->lines[i].ids, .n = n < L ? n : L};
            else if (n <= L && n > L - tp->bucket_width)
                tp->view.lines[tp->view.n_lines++] = all->lines[i];
        }
        if (tp->view.n_lines == 0) {
            bc_error_set(err, BC_ERR_INFEASIBLE,
                         "prompts_text %s: no prompt of %d..%d tokens for prompt length %d (the prompts have %d..%d "
                         "tokens, BOS included)",
                         tp->path, L - tp->bucket_width + 1 > 1 ? L - tp->bucket_width + 1 : 1, L, L, shortest,
                         longest);
            return bc_error_hint(err, "choose matrix.prompt_lengths within the prompts' range, widen "
                                      "prompts_bucket_width, or set prompts_fit = \"truncate_pad\"");
        }
        tp->view.width = L;
    }
    describe_batch(tp, batch_size, tp->fit == ENG_FIT_TRUNCATE_PAD ? L : 0);
    *prompts = &tp->view;
    *rollout_prompt_length = tp->fit == ENG_FIT_RAGGED ? L : 0;
    return BC_OK;
}
