/* test_split.c: the Split pre-tokenizer path of the tokenizer (Llama-3 /
 * Qwen2 tokenizer.json: a regex Split through PCRE2, then ByteLevel, added
 * tokens matched first) against Hugging Face tokenizers. Fixtures in
 * tests/tokenizer/golden/, made by tools/golden/make_tokenizer_golden.py:
 *   llama3/         trained with Llama-3's pattern, ignore_merges, special
 *                   tokens and one normalized added token;
 *   qwen2/          trained with Qwen2's pattern, its NFC normalizer and its
 *                   special tokens;
 *   ignore_merges/  a hand-made vocabulary where ignore_merges decides;
 * each with cases.json: strings (hex) and the ids tokenizers gave. Every
 * case's ids must be equal, and decode must give the bytes back (or, where
 * NFC changed the text, what tokenizers decodes: decoded_hex). Files of
 * other shapes are refused with one line naming what was found. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bpe.h"
#include "readfile.h"
#include "tok_to_bc.h"

TOK_READER_FROM_BC(tok_read_regular, bc_read_regular)

#define GOLDEN BENCHCTL_SOURCE_DIR "/tests/tokenizer/golden"

static bpe_tokenizer *load(const char *dir) {
    bpe_tokenizer *t = NULL;
    tok_error err = {0};
    tok_status st = bpe_load_dir(dir, tok_read_regular, &t, &err);
    if (st != TOK_OK) fail_msg("%s: %s", dir, err.message);
    return t;
}

static size_t unhex(const char *hex, uint8_t *out, size_t cap) {
    size_t n = strlen(hex) / 2;
    assert_true(n <= cap);
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
    return n;
}

/* Every case of dir/cases.json: ids equal to tokenizers', decode gives the
 * bytes back. Returns the number of cases. */
static size_t check_dir(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/cases.json", dir);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root) fail_msg("%s: %s", path, jerr.text);
    const json_t *cases = json_object_get(root, "cases");
    bpe_tokenizer *t = load(dir);
    assert_int_equal(bpe_vocab_size(t), json_integer_value(json_object_get(root, "vocab_size")));
    assert_int_equal(bpe_merge_count(t), json_integer_value(json_object_get(root, "n_merges")));
    int bad = 0, normalized = 0;
    for (size_t c = 0; c < json_array_size(cases); c++) {
        const json_t *cs = json_array_get(cases, c);
        const char *hex = json_string_value(json_object_get(cs, "hex"));
        const json_t *want = json_object_get(cs, "ids");
        uint8_t buf[2048];
        size_t n = unhex(hex, buf, sizeof buf);
        bpe_ids got = {0};
        tok_error err;
        if (bpe_encode(t, (const char *)buf, n, &got, &err) != TOK_OK) fail_msg("%s case %zu: %s", dir, c, err.message);
        int same = got.n == json_array_size(want);
        for (size_t i = 0; same && i < got.n; i++) same = got.ids[i] == json_integer_value(json_array_get(want, i));
        if (!same && bad++ < 5) {
            fprintf(stderr, "%s: case %zu (hex %s): expected", dir, c, hex);
            for (size_t i = 0; i < json_array_size(want); i++)
                fprintf(stderr, " %lld", (long long)json_integer_value(json_array_get(want, i)));
            fprintf(stderr, "\n  got");
            for (size_t i = 0; i < got.n; i++) fprintf(stderr, " %d", got.ids[i]);
            fprintf(stderr, "\n");
        }
        const char *dhex = json_string_value(json_object_get(cs, "decoded_hex"));
        if (dhex) {
            n = unhex(dhex, buf, sizeof buf);
            normalized++;
        }
        char *text;
        size_t len;
        assert_int_equal(bpe_decode(t, got.ids, got.n, &text, &len, &err), TOK_OK);
        assert_int_equal(len, n);
        assert_memory_equal(text, buf, n);
        free(text);
        free(got.ids);
    }
    assert_int_equal(normalized, json_integer_value(json_object_get(root, "normalized_cases")));
    assert_int_equal(bpe_normalizes(t), json_is_true(json_object_get(root, "nfc")));
    size_t count = json_array_size(cases);
    if (bad) fail_msg("%s: %d of %zu cases differ from tokenizers", dir, bad, count);
    bpe_free(t);
    json_decref(root);
    return count;
}

static void test_llama3_golden(void **state) {
    (void)state;
    assert_true(check_dir(GOLDEN "/llama3") > 300);
}

static void test_qwen2_golden(void **state) {
    (void)state;
    assert_true(check_dir(GOLDEN "/qwen2") > 300);
    /* NFC composes before the split; invalid bytes stay as they are between normalized runs */
    bpe_tokenizer *t = load(GOLDEN "/qwen2");
    tok_error err;
    bpe_ids a = {0}, b = {0};
    const char *decomposed = "cafe\xcc\x81 \xff e\xcc\x81", *composed = "caf\xc3\xa9 \xff \xc3\xa9";
    assert_int_equal(bpe_encode(t, decomposed, strlen(decomposed), &a, &err), TOK_OK);
    assert_int_equal(bpe_encode(t, composed, strlen(composed), &b, &err), TOK_OK);
    assert_int_equal(a.n, b.n);
    assert_memory_equal(a.ids, b.ids, a.n * sizeof *a.ids);
    free(a.ids);
    free(b.ids);
    bpe_free(t);
}

static void test_ignore_merges_golden(void **state) {
    (void)state;
    assert_true(check_dir(GOLDEN "/ignore_merges") >= 5);
}

/* The special tokens of the llama3 fixture, found inside text: one id
 * each, never split, and a partial one is text. */
static void test_special_tokens(void **state) {
    (void)state;
    bpe_tokenizer *t = load(GOLDEN "/llama3");
    tok_error err;
    bpe_ids ids = {0};
    const char *s = "<|eot_id|><|eot_id|";
    assert_int_equal(bpe_encode(t, s, strlen(s), &ids, &err), TOK_OK);
    assert_true(ids.n >= 2);
    assert_int_equal(ids.ids[0], 4); /* <|eot_id|> is id 4 in the fixture */
    for (size_t i = 1; i < ids.n; i++) assert_int_not_equal(ids.ids[i], 4);
    free(ids.ids);
    bpe_free(t);
}

/* A tokenizer.json of the Split shape with the given pieces changed. */
static tok_status load_shape(const char *normalizer, const char *pre, const char *decoder, const char *added,
                            bpe_tokenizer **t, tok_error *err) {
    char vocab[8192];
    size_t k = (size_t)snprintf(vocab, sizeof vocab, "{");
    for (int b = 0, next = 256; b < 256; b++) { /* the 256 byte tokens, ids 0..255 */
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        unsigned cp = printable ? (unsigned)b : (unsigned)next++;
        k += (size_t)snprintf(vocab + k, sizeof vocab - k, "%s\"\\u%04x\": %d", b ? ", " : "", cp, b);
    }
    snprintf(vocab + k, sizeof vocab - k, ", \"ab\": 256}");
    char text[16384];
    snprintf(text, sizeof text,
             "{\"normalizer\": %s, \"pre_tokenizer\": %s, \"decoder\": %s, \"added_tokens\": %s, "
             "\"model\": {\"type\": \"BPE\", \"vocab\": %s, \"merges\": [[\"a\", \"b\"]]}}",
             normalizer, pre, decoder, added, vocab);
    return bpe_load_tokenizer_json(text, strlen(text), "shape.json", t, err);
}

#define SPLIT(beh, inv) "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\p{L}+|\\\\s+\"}, \"behavior\": \"" beh "\", \"invert\": " inv "}"
#define BL(re) "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": " re "}"
#define SEQ(a, b) "{\"type\": \"Sequence\", \"pretokenizers\": [" a ", " b "]}"
#define BLDEC "{\"type\": \"ByteLevel\"}"
#define SPECIAL "[{\"id\": 257, \"content\": \"<x>\", \"special\": true}]"

static void refused(tok_status st, const tok_error *err, tok_status want, const char *needle) {
    assert_int_equal(st, want);
    assert_non_null(strstr(err->message, "shape.json"));
    if (!strstr(err->message, needle)) fail_msg("\"%s\" not in: %s", needle, err->message);
    assert_null(strchr(err->message, '\n'));
}

static void test_shapes(void **state) {
    (void)state;
    bpe_tokenizer *t = NULL;
    tok_error err;
    /* the supported shape, first, so that each refusal below is about what it changes */
    assert_int_equal(load_shape("null", SEQ(SPLIT("Isolated", "false"), BL("false")), BLDEC, SPECIAL, &t, &err), TOK_OK);
    bpe_ids ids = {0};
    assert_int_equal(bpe_encode(t, "ab<x> ab", 8, &ids, &err), TOK_OK);
    assert_int_equal(ids.n, 4);
    assert_int_equal(ids.ids[0], 256);
    assert_int_equal(ids.ids[1], 257);
    assert_int_equal(ids.ids[2], ' ');
    assert_int_equal(ids.ids[3], 256);
    free(ids.ids);
    bpe_free(t);
    t = NULL;

    refused(load_shape("null", SEQ(SPLIT("Removed", "false"), BL("false")), BLDEC, "[]", &t, &err), &err,
            TOK_ERR_UNSUPPORTED, "pre_tokenizer is Sequence[Split(Regex, Removed), ByteLevel(use_regex false)]");
    refused(load_shape("null", SEQ(SPLIT("Isolated", "true"), BL("false")), BLDEC, "[]", &t, &err), &err,
            TOK_ERR_UNSUPPORTED, "Split(Regex, Isolated, invert)");
    refused(load_shape("null", SEQ(SPLIT("Isolated", "false"), BL("true")), BLDEC, "[]", &t, &err), &err,
            TOK_ERR_UNSUPPORTED, "ByteLevel(use_regex true)]");
    refused(load_shape("null", SPLIT("Isolated", "false"), BLDEC, "[]", &t, &err), &err, TOK_ERR_UNSUPPORTED,
            "pre_tokenizer is Split(Regex, Isolated)");
    refused(load_shape("null", SEQ(BL("false"), SPLIT("Isolated", "false")), BLDEC, "[]", &t, &err), &err,
            TOK_ERR_UNSUPPORTED, "Sequence[ByteLevel(use_regex false), Split(Regex, Isolated)]");
    refused(load_shape("null", SEQ("{\"type\": \"Metaspace\"}", BL("false")), BLDEC, "[]", &t, &err), &err,
            TOK_ERR_UNSUPPORTED, "Sequence[Metaspace,");
    refused(load_shape("null", "{\"type\": \"Whitespace\"}", BLDEC, "[]", &t, &err), &err, TOK_ERR_UNSUPPORTED,
            "pre_tokenizer is Whitespace");
    refused(load_shape("{\"type\": \"NFKC\"}", SEQ(SPLIT("Isolated", "false"), BL("false")), BLDEC, "[]", &t, &err),
            &err, TOK_ERR_UNSUPPORTED, "normalizer NFKC");
    refused(load_shape("null", SEQ(SPLIT("Isolated", "false"), BL("false")), "{\"type\": \"WordPiece\"}", "[]", &t,
                       &err),
            &err, TOK_ERR_UNSUPPORTED, "decoder WordPiece");
    refused(load_shape("null", SEQ(SPLIT("Isolated", "false"), BL("false")), BLDEC,
                       "[{\"id\": 257, \"content\": \"<x>\", \"lstrip\": true}]", &t, &err),
            &err, TOK_ERR_UNSUPPORTED, "\"<x>\" has lstrip set");
    const char *bad_re = "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": "
                         "\"(a\"}, \"behavior\": \"Isolated\", \"invert\": false}, " BL("false") "]}";
    refused(load_shape("null", bad_re, BLDEC, "[]", &t, &err), &err, TOK_ERR_FORMAT, "PCRE2 refuses it");
    assert_null(t);
}

/* A literal Split pattern ({"String": ...}) and a pattern that does not
 * cover the text: the gaps between matches are pieces too (Isolated). */
static void test_gaps_and_literal(void **state) {
    (void)state;
    bpe_tokenizer *t = NULL;
    tok_error err;
    const char *lit = "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"String\": "
                      "\"b\"}, \"behavior\": \"Isolated\", \"invert\": false}, " BL("false") "]}";
    assert_int_equal(load_shape("null", lit, BLDEC, "[]", &t, &err), TOK_OK);
    bpe_ids ids = {0};
    assert_int_equal(bpe_encode(t, "aab", 3, &ids, &err), TOK_OK); /* pieces "aa", "b": no "ab" across */
    assert_int_equal(ids.n, 3);
    assert_int_equal(ids.ids[0], 'a');
    assert_int_equal(ids.ids[1], 'a');
    assert_int_equal(ids.ids[2], 'b');
    ids.n = 0;
    assert_int_equal(bpe_encode(t, "xab", 3, &ids, &err), TOK_OK);
    assert_int_equal(ids.n, 3);
    free(ids.ids);
    bpe_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama3_golden),      cmocka_unit_test(test_qwen2_golden),
        cmocka_unit_test(test_ignore_merges_golden), cmocka_unit_test(test_special_tokens),
        cmocka_unit_test(test_shapes),             cmocka_unit_test(test_gaps_and_literal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
