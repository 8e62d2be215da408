/* fuzz_vocab_merges.c: fuzz target for the byte-level BPE tokenizer's
 * vocab.json + merges.txt loader (tokenizer/bpe.c, bpe_load_vocab_merges).
 * The input is "VOCAB\x00MERGES": up to the first NUL byte, vocab.json; the
 * rest, merges.txt (no NUL: the vocabulary is the golden GPT-2 style one of
 * tests/tokenizer/golden/vocab_merges, with the whole input as merges.txt).
 * Loading must succeed or fail with a one-line error naming the file (for a
 * bad merges.txt line, file:line and that line only: no text of the lines
 * after it), handing nothing back; a loaded tokenizer must round-trip the
 * first 256 bytes of the merges text (decode(encode(s)) == s, no more ids
 * than bytes; fuzz_tokenizer fuzzes encoding itself).
 * Built as fuzz_vocab_merges (libFuzzer, BENCHCTL_FUZZ=ON) and always as
 * fuzz_vocab_merges_replay over tests/fuzz/corpus/vocab_merges. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpe.h"
#include "readfile.h"
#include "tok_to_bc.h"

TOK_READER_FROM_BC(tok_read_regular, bc_read_regular)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An error is one line naming a file; for a merges.txt line that is not two
 * tokens ("m.txt:N: merge \"Q\" is not two tokens separated by one
 * space"), Q is that line's text alone (its first 80 bytes, up to a NUL,
 * and "..." when longer): no text of the lines after it. */
static void check_error(const tok_error *err, const char *merges, size_t merges_len) {
    static const char tail[] = "\" is not two tokens separated by one space";
    const char *m = err->message;
    if (!m[0] || strchr(m, '\n') || (!strstr(m, "v.json") && !strstr(m, "m.txt"))) {
        fprintf(stderr, "fuzz_vocab_merges: the error \"%s\" is not one line naming the file\n", m);
        abort();
    }
    const size_t n = strlen(m), tn = sizeof tail - 1;
    if (strncmp(m, "m.txt:", 6) != 0 || n < tn || strcmp(m + n - tn, tail) != 0) return;
    long line = strtol(m + 6, NULL, 10);
    const char *q = strstr(m, ": merge \"");
    if (line < 1 || !q) abort();
    q += 9;
    const size_t qlen = (size_t)(m + n - tn - q);
    size_t pos = 0;
    for (long i = 1; i < line; i++) { /* the start of line `line` */
        const char *nl = memchr(merges + pos, '\n', merges_len - pos);
        if (!nl) abort();
        pos = (size_t)(nl - merges) + 1;
    }
    const char *nl = memchr(merges + pos, '\n', merges_len - pos);
    size_t len = nl ? (size_t)(nl - (merges + pos)) : merges_len - pos;
    if (len && merges[pos + len - 1] == '\r') len--;
    size_t want = len > 80 ? 80 : len;
    const char *nul = memchr(merges + pos, '\0', want);
    if (nul) want = (size_t)(nul - (merges + pos));
    const int dots = len > 80;
    if (qlen != want + (dots ? 3 : 0) || memcmp(q, merges + pos, want) != 0 || (dots && memcmp(q + want, "...", 3))) {
        fprintf(stderr, "fuzz_vocab_merges: the error \"%s\" does not quote line %ld alone\n", m, line);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char *golden_vocab;
    static size_t golden_len;
    if (!golden_vocab) {
        tok_error err;
        if (tok_read_regular(BENCHCTL_TOKENIZER_VOCAB_MERGES "/vocab.json", "vocab.json", BPE_JSON_MAX_BYTES,
                             &golden_vocab, &golden_len, &err) != TOK_OK)
            abort();
    }
    const uint8_t *nul = memchr(data, '\0', size);
    char *vocab, *merges;
    size_t vlen, mlen;
    if (nul) {
        vlen = (size_t)(nul - data), mlen = size - vlen - 1;
        vocab = malloc(vlen ? vlen : 1), merges = malloc(mlen ? mlen : 1);
        if (!vocab || !merges) return free(vocab), free(merges), 0;
        memcpy(vocab, data, vlen);
        memcpy(merges, nul + 1, mlen);
    } else {
        vlen = golden_len, mlen = size;
        vocab = malloc(vlen), merges = malloc(mlen ? mlen : 1);
        if (!vocab || !merges) return free(vocab), free(merges), 0;
        memcpy(vocab, golden_vocab, vlen);
        memcpy(merges, data, mlen);
    }
    bpe_tokenizer *t = (bpe_tokenizer *)1;
    tok_error err;
    err.message[0] = '\0';
    if (bpe_load_vocab_merges(vocab, vlen, "v.json", merges, mlen, "m.txt", &t, &err) == TOK_OK) {
        bpe_ids ids = {0};
        char *text;
        size_t len;
        const size_t n = mlen < 256 ? mlen : 256; /* the text's start: the load is what is fuzzed here */
        if (bpe_encode(t, merges, n, &ids, &err) == TOK_OK) { /* may refuse a run too long to split */
            if (bpe_decode(t, ids.ids, ids.n, &text, &len, &err) != TOK_OK) abort();
            if (!bpe_normalizes(t) && (ids.n > n || len != n || (n && memcmp(text, merges, n) != 0))) abort();
            free(text);
        }
        free(ids.ids);
        bpe_free(t);
    } else {
        if (t != NULL) abort();
        check_error(&err, merges, mlen);
    }
    free(vocab);
    free(merges);
    return 0;
}
