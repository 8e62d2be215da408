/* bench_tokenizer.c: times the byte-level BPE tokenizer (tokenizer/bpe.h)
 * on a prompt set, for tools/bench/tokenizer_speed.py, which runs it side
 * by side with Hugging Face tokenizers (docs/performance.md).
 *
 *   bench_tokenizer TOKENIZER_DIR PROMPTS_FILE [REPEATS]
 *
 * PROMPTS_FILE holds one prompt a line (the newline is not part of it).
 * Encodes every prompt REPEATS times (default 5) on one thread and prints
 * one JSON line: prompts, bytes, tokens, the best and median seconds of one
 * pass over the set, the load time, and an FNV-1a hash of every id. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bpe.h"
#include "readfile.h"
#include "tok_to_bc.h"

TOK_READER_FROM_BC(tok_read_regular, bc_read_regular)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s TOKENIZER_DIR PROMPTS_FILE [REPEATS]\n", argv[0]);
        return 2;
    }
    int repeats = argc > 3 ? atoi(argv[3]) : 5;
    if (repeats < 1 || repeats > 1000) repeats = 5;
    tok_error err;
    double t0 = now_s();
    bpe_tokenizer *t = NULL;
    if (bpe_load_dir(argv[1], tok_read_regular, &t, &err) != TOK_OK) {
        fprintf(stderr, "bench_tokenizer: %s\n", err.message);
        return 1;
    }
    double load_s = now_s() - t0;
    char *text;
    size_t len;
    if (tok_read_regular(argv[2], "prompts", (uint64_t)1 << 32, &text, &len, &err) != TOK_OK) {
        fprintf(stderr, "bench_tokenizer: %s\n", err.message);
        bpe_free(t);
        return 1;
    }
    bpe_ids ids = {0};
    double *pass_s = malloc((size_t)repeats * sizeof *pass_s);
    size_t n_prompts = 0, n_tokens = 0;
    uint64_t fnv = 0; /* FNV-1a over every id of the last pass, to check against the other side */
    for (int r = 0; r < repeats && pass_s; r++) {
        n_prompts = n_tokens = 0;
        fnv = 1469598103934665603ull;
        double a = now_s();
        for (size_t i = 0; i < len;) {
            const char *nl = memchr(text + i, '\n', len - i);
            size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
            ids.n = 0;
            if (bpe_encode(t, text + i, n, &ids, &err) != TOK_OK) {
                fprintf(stderr, "bench_tokenizer: %s\n", err.message);
                return 1;
            }
            n_tokens += ids.n;
            for (size_t k = 0; k < ids.n; k++) fnv = (fnv ^ (uint32_t)ids.ids[k]) * 1099511628211ull;
            n_prompts++;
            i += n + 1;
        }
        pass_s[r] = now_s() - a;
    }
    if (!pass_s) return 1;
    qsort(pass_s, (size_t)repeats, sizeof *pass_s, cmp_double);
    printf("{\"impl\": \"benchctl\", \"prompts\": %zu, \"bytes\": %zu, \"tokens\": %zu, \"best_s\": %.6f, "
           "\"median_s\": %.6f, \"load_s\": %.6f, \"repeats\": %d, \"ids_fnv\": \"%016llx\"}\n",
           n_prompts, len, n_tokens, pass_s[0], pass_s[repeats / 2], load_s, repeats,
           (unsigned long long)fnv);
    free(pass_s);
    free(ids.ids);
    free(text);
    bpe_free(t);
    return 0;
}
