/* text_prompts.h: the engine's text prompt sets (setting prompts_text).
 * The file is read and tokenized with the checkpoint's own tokenizer
 * (tokenizer/prompt_set.h, the reader `benchctl prompts` uses too), each
 * prompt preceded by the model's BOS; then, per case, the prompts are
 * fitted to the case's prompt length:
 *
 *   ragged        as they are; a batch is left-padded to its longest
 *                 prompt (the case gives no prompt length);
 *   bucket        only prompts of L - bucket_width < n <= L tokens, each
 *                 left-padded to L;
 *   truncate_pad  every prompt: cut to its first L tokens, or left-padded
 *                 to L.
 *
 * Prompt b of a batch is the fitted set's prompt b modulo its size, in file
 * order (as with prompts_file).
 */
#ifndef ENG_TEXT_PROMPTS_H
#define ENG_TEXT_PROMPTS_H

#include "rollout.h"

typedef enum eng_prompt_fit {
    ENG_FIT_RAGGED = 0,
    ENG_FIT_BUCKET = 1,
    ENG_FIT_TRUNCATE_PAD = 2
} eng_prompt_fit;

/* "ragged", "bucket", "truncate_pad" -> the fit; -1 for anything else. */
int eng_prompt_fit_from_name(const char *name);

/* The prompts of the last case fitted: token lengths of its batch's real
 * prompts, the padded width, and padding. */
typedef struct eng_text_batch {
    int set_size;        /* prompts of the fitted set (the bucket's, for bucket) */
    int min, p50, max;   /* real tokens of the batch's prompts, BOS included */
    int width;           /* every prompt left-padded to this */
    int truncated;       /* prompts of the batch that were cut (truncate_pad) */
    int64_t pad_tokens;  /* pad slots of the batch: batch x width - real tokens */
    int64_t slots;       /* batch x width */
} eng_text_batch;

typedef struct eng_text_prompts {
    const char *path;     /* borrowed: the setting's value */
    eng_prompt_fit fit;
    int bucket_width;
    eng_prompts all;      /* owned: every prompt, BOS first */
    int *lines;           /* owned: [all.n_lines] the file line of each */
    eng_prompts view;     /* the last fitted set: lines owned ([all.n_lines]), ids borrowed from all */
    eng_text_batch batch; /* of the last eng_text_prompts_fit */
} eng_text_prompts;

/* Reads and tokenizes path with checkpoint's tokenizer (tokenizer.json, or
 * vocab.json + merges.txt), bos_id first; format "auto", "jsonl" or
 * "lines"; field the JSON field. Ids must be below V. Errors name the file
 * (and line, and the setting where one is wrong). */
bc_status eng_text_prompts_read(eng_text_prompts *tp, const char *path, const char *format, const char *field,
                                const char *checkpoint, int bos_id, int V, eng_prompt_fit fit, int bucket_width,
                                bc_error *err);
void eng_text_prompts_free(eng_text_prompts *tp);

/* Fits the set to a case of prompt length L (0: none given) and batch
 * size: *prompts (valid until the next call) and *rollout_prompt_length
 * (what eng_rollout_params.prompt_length must be) for the rollout, and
 * tp->batch. BC_ERR_SETTING for a prompt length the fit cannot use,
 * BC_ERR_INFEASIBLE for a bucket without prompts. */
bc_status eng_text_prompts_fit(eng_text_prompts *tp, int L, int batch_size, const eng_prompts **prompts,
                               int *rollout_prompt_length, bc_error *err);

/* Bytes held (for the backend's accounting). */
int64_t eng_text_prompts_bytes(const eng_text_prompts *tp);

#endif
