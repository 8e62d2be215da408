/* fuzz_tokenizer.c: fuzz target for the byte-level BPE tokenizer
 * (tokenizer/bpe.c, bpe_pretok.c, bpe_split.c). The first byte of the input
 * chooses:
 *   0 mod 4: the rest is text, encoded with the golden GPT-2 tokenizer
 *         (tests/tokenizer/golden/json_pairs, loaded once); decode must give
 *         the text back, with no more ids than bytes (with an NFC
 *         normalizer: the normalized text, which round-trips itself);
 *   2 mod 4: the same with the golden Llama-3 style tokenizer (the Split
 *         pre-tokenizer through PCRE2, special tokens in the text);
 *   odd:  the rest is a tokenizer.json; loading must succeed or fail with an
 *         error naming the file, and a loaded tokenizer must round-trip the
 *         input's own bytes.
 * Built as fuzz_tokenizer (libFuzzer, BENCHCTL_FUZZ=ON) and always as
 * fuzz_tokenizer_replay over tests/fuzz/corpus/tokenizer. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bpe.h"
#include "readfile.h"
#include "tok_to_bc.h"

TOK_READER_FROM_BC(tok_read_regular, bc_read_regular)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* decode(encode(s)) == s; with a normalizer (NFC), decode(encode(s)) is
 * the normalized text, which must encode and decode to itself. */
static void round_trip(const bpe_tokenizer *t, const uint8_t *s, size_t n) {
    bpe_ids ids = {0};
    tok_error err;
    if (bpe_encode(t, (const char *)s, n, &ids, &err) != TOK_OK) abort();
    char *text;
    size_t len;
    if (bpe_decode(t, ids.ids, ids.n, &text, &len, &err) != TOK_OK) abort();
    free(ids.ids);
    if (bpe_normalizes(t)) {
        ids = (bpe_ids){0};
        char *again;
        size_t again_len;
        if (bpe_encode(t, text, len, &ids, &err) != TOK_OK) abort();
        if (bpe_decode(t, ids.ids, ids.n, &again, &again_len, &err) != TOK_OK) abort();
        if (again_len != len || (len && memcmp(again, text, len) != 0)) abort();
        free(again);
        free(ids.ids);
    } else if (ids.n > n || len != n || (n && memcmp(text, s, n) != 0)) {
        abort();
    }
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static bpe_tokenizer *golden, *golden_split;
    if (!golden) {
        tok_error err;
        if (bpe_load_dir(BENCHCTL_TOKENIZER_GOLDEN, tok_read_regular, &golden, &err) != TOK_OK) abort();
        if (bpe_load_dir(BENCHCTL_TOKENIZER_GOLDEN_SPLIT, tok_read_regular, &golden_split, &err) != TOK_OK) abort();
    }
    if (size == 0) return 0;
    /* a private copy, so ASan sees the exact bounds */
    uint8_t *buf = malloc(size - 1 ? size - 1 : 1);
    if (!buf) return 0;
    memcpy(buf, data + 1, size - 1);
    if ((data[0] & 1) == 0) {
        round_trip((data[0] & 2) ? golden_split : golden, buf, size - 1);
    } else {
        bpe_tokenizer *t = NULL;
        tok_error err;
        err.message[0] = '\0';
        if (bpe_load_tokenizer_json((const char *)buf, size - 1, "fuzz-input", &t, &err) == TOK_OK) {
            round_trip(t, buf, size - 1);
            bpe_free(t);
        } else if (t != NULL || strstr(err.message, "fuzz-input") == NULL) {
            abort(); /* every error names the file, and nothing is handed back */
        }
    }
    free(buf);
    return 0;
}
