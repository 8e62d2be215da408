/* prompts.c: `benchctl prompts` (prompts.h). */
#define _POSIX_C_SOURCE 200809L
#include "prompts.h"

#include <stdlib.h>

#include "bpe.h"
#include "prompt_set.h"
#include "readfile.h"
#include "tok_to_bc.h"

TOK_READER_FROM_BC(tok_read_regular, bc_read_regular)

/* The largest prompts file read: the native engine's limit (ENG_PROMPTS_MAX_BYTES, engine/base/fileio.h). */
#define BC_PROMPTS_MAX_BYTES ((uint64_t)1 << 30)

bc_status bc_prompts_write(const bc_prompts_request *r, FILE *out, bc_prompts_summary *summary, bc_error *err) {
    int format = bpe_prompt_format_from_name(r->format);
    if (format < 0) return bc_error_set(err, BC_ERR_INVALID, "--format %s: must be auto, jsonl or lines", r->format);
    bpe_tokenizer *t = NULL;
    tok_error te;
    bc_status st = tok_error_to_bc(bpe_load_dir(r->checkpoint, tok_read_regular, &t, &te), &te, err);
    if (st != BC_OK) return st;
    bpe_prompt_set set;
    st = tok_error_to_bc(bpe_prompt_set_read(&set, r->file, tok_read_regular, BC_PROMPTS_MAX_BYTES,
                                             (bpe_prompt_format)format, r->field, t, r->bos_id, &te),
                         &te, err);
    bpe_free(t);
    if (st != BC_OK) return st;
    int *len = malloc((size_t)set.count * sizeof *len);
    if (!len) st = bc_error_set(err, BC_ERR_NOMEM, "prompts %s: no memory", r->file);
    long long tokens = 0;
    for (int i = 0; st == BC_OK && i < set.count; i++) {
        const bpe_prompt *p = &set.prompts[i];
        for (int k = 0; k < p->n; k++) fprintf(out, k ? " %d" : "%d", p->ids[k]);
        fputc('\n', out);
        len[i] = p->n;
        tokens += p->n;
    }
    if (st == BC_OK && (fflush(out) != 0 || ferror(out)))
        st = bc_error_set(err, BC_ERR_IO, "prompts: the token ids could not be written");
    if (st == BC_OK) {
        bpe_length_summary s = bpe_length_summary_of(len, set.count);
        *summary = (bc_prompts_summary){.count = set.count, .min = s.min, .p50 = s.p50, .max = s.max, .tokens = tokens};
    }
    free(len);
    bpe_prompt_set_free(&set);
    return st;
}
