/* prompt_set.h: a text prompt set, tokenized: the one reader of text
 * prompts, used by the OPT plugin (prompts_text) and by `benchctl prompts`,
 * so both give the same ids.
 *
 * A prompts file is either
 *   JSON lines: one JSON object a line, the prompt in a string field
 *               ("text" unless told otherwise), other fields ignored; or
 *   plain lines: each line is a prompt (its newline, and a CR before it,
 *               are not part of it).
 * Blank lines are skipped in both. Each prompt is encoded with the
 * tokenizer and, when bos_id >= 0, preceded by bos_id.
 */
#ifndef BPE_PROMPT_SET_H
#define BPE_PROMPT_SET_H

#include "bpe.h"

typedef enum bpe_prompt_format {
    BPE_PROMPTS_AUTO = 0,  /* JSON lines for a name ending in .jsonl or .json, else plain lines */
    BPE_PROMPTS_JSONL = 1,
    BPE_PROMPTS_LINES = 2
} bpe_prompt_format;

/* "auto", "jsonl", "lines" -> the format; -1 for anything else. */
int bpe_prompt_format_from_name(const char *name);

typedef struct bpe_prompt {
    int32_t *ids; /* [n], owned by the set */
    int n;        /* tokens, BOS included */
    int line;     /* 1-based line of the file */
} bpe_prompt;

typedef struct bpe_prompt_set {
    bpe_prompt *prompts; /* [count], owned */
    int count;
} bpe_prompt_set;

/* Reads and tokenizes path (through read, at most max_bytes). field names
 * the JSON field (NULL: "text"). Errors name the file and line:
 * TOK_ERR_FORMAT (a line that is not a JSON object, a missing or non-string
 * field, an empty prompt, a NUL byte in plain lines, no prompt at all), the
 * reader's errors, TOK_ERR_NOMEM. */
tok_status bpe_prompt_set_read(bpe_prompt_set *out, const char *path, bpe_read_fn read, uint64_t max_bytes,
                              bpe_prompt_format format, const char *field, const bpe_tokenizer *t, int32_t bos_id,
                              tok_error *err);
void bpe_prompt_set_free(bpe_prompt_set *s);

/* Token lengths of n prompts: shortest, median (the lower middle one) and
 * longest; all 0 when n == 0, p50 -1 when there was no memory to sort.
 * lengths is not changed. */
typedef struct bpe_length_summary {
    int min, p50, max;
} bpe_length_summary;
bpe_length_summary bpe_length_summary_of(const int *lengths, int n);

#endif
