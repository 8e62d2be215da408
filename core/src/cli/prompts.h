/* prompts.h: `benchctl prompts`: the token ids a text prompt set becomes,
 * exactly as the opt backend's prompts_text makes them (the same reader,
 * tokenizer/prompt_set.h), printed so a user can check them against their
 * own tokenizer, or keep them as a prompts_file. */
#ifndef BENCHCTL_PROMPTS_H
#define BENCHCTL_PROMPTS_H

#include <stdio.h>

#include "benchctl/plugin.h"

typedef struct bc_prompts_request {
    const char *file;       /* the prompts */
    const char *checkpoint; /* the directory holding tokenizer.json or vocab.json + merges.txt */
    const char *format;     /* "auto", "jsonl", "lines" (NULL: auto) */
    const char *field;      /* JSON field (NULL: "text") */
    int bos_id;             /* put first; -1: nothing */
} bc_prompts_request;

/* What was written. */
typedef struct bc_prompts_summary {
    int count;         /* prompts */
    int min, p50, max; /* tokens per prompt, BOS included */
    long long tokens;  /* all prompts */
} bc_prompts_summary;

/* Tokenizes r->file with r->checkpoint's tokenizer and writes one line per
 * prompt to out: its ids, space-separated (the prompts_file format).
 * Errors name the file (and line): the tokenizer's and the reader's
 * (bpe.h, prompt_set.h), BC_ERR_INVALID for an unknown format, BC_ERR_IO
 * when out cannot be written. */
bc_status bc_prompts_write(const bc_prompts_request *r, FILE *out, bc_prompts_summary *summary, bc_error *err);

#endif
