/* test_bpe.c: the byte-level BPE tokenizer (tokenizer/bpe.h) against Hugging
 * Face tokenizers. tests/tokenizer/golden/ holds a tiny BPE trained by
 * tools/golden/make_tokenizer_golden.py, saved three ways (tokenizer.json
 * with ["a", "b"] merges, with "a b" merges, vocab.json + merges.txt), and
 * cases.json: hard strings (as hex) with the ids tokenizers gave. Every form
 * must give every case's ids; decode must give the bytes back, for the cases
 * and for seeded random byte strings; bad files are refused with an error
 * naming the file. */
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
#include "bpe_unicode.h"
#include "readfile.h"
#include "tok_to_bc.h"

TOK_READER_FROM_BC(tok_read_regular, bc_read_regular)

#define GOLDEN BENCHCTL_SOURCE_DIR "/tests/tokenizer/golden"

static const char *const FORMS[] = {GOLDEN "/json_pairs", GOLDEN "/json_strings", GOLDEN "/vocab_merges"};

static bpe_tokenizer *load(const char *dir) {
    bpe_tokenizer *t = NULL;
    tok_error err = {0};
    tok_status st = bpe_load_dir(dir, tok_read_regular, &t, &err);
    if (st != TOK_OK) fail_msg("%s: %s", dir, err.message);
    return t;
}

static size_t unhex(const char *hex, uint8_t *out) {
    size_t n = strlen(hex) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
    return n;
}

static void test_golden_cases(void **state) {
    (void)state;
    json_error_t jerr;
    json_t *root = json_load_file(GOLDEN "/cases.json", 0, &jerr);
    if (!root) fail_msg("cases.json: %s", jerr.text);
    const json_t *cases = json_object_get(root, "cases");
    assert_true(json_array_size(cases) > 50);
    for (size_t f = 0; f < sizeof FORMS / sizeof FORMS[0]; f++) {
        bpe_tokenizer *t = load(FORMS[f]);
        assert_int_equal(bpe_vocab_size(t), json_integer_value(json_object_get(root, "vocab_size")));
        assert_int_equal(bpe_merge_count(t), json_integer_value(json_object_get(root, "n_merges")));
        int bad = 0;
        for (size_t c = 0; c < json_array_size(cases); c++) {
            const json_t *cs = json_array_get(cases, c);
            const char *hex = json_string_value(json_object_get(cs, "hex"));
            const json_t *want = json_object_get(cs, "ids");
            uint8_t buf[1024];
            size_t n = unhex(hex, buf);
            bpe_ids got = {0};
            tok_error err;
            assert_int_equal(bpe_encode(t, (const char *)buf, n, &got, &err), TOK_OK);
            int same = got.n == json_array_size(want);
            for (size_t i = 0; same && i < got.n; i++)
                same = got.ids[i] == json_integer_value(json_array_get(want, i));
            if (!same && bad++ < 5) {
                fprintf(stderr, "%s: case %zu (hex %s): expected", FORMS[f], c, hex);
                for (size_t i = 0; i < json_array_size(want); i++)
                    fprintf(stderr, " %lld", (long long)json_integer_value(json_array_get(want, i)));
                fprintf(stderr, "\n  got");
                for (size_t i = 0; i < got.n; i++) fprintf(stderr, " %d", got.ids[i]);
                fprintf(stderr, "\n");
            }
            char *text;
            size_t len;
            assert_int_equal(bpe_decode(t, got.ids, got.n, &text, &len, &err), TOK_OK);
            assert_int_equal(len, n);
            assert_memory_equal(text, buf, n);
            free(text);
            free(got.ids);
        }
        if (bad) fail_msg("%s: %d of %zu cases differ from tokenizers", FORMS[f], bad, json_array_size(cases));
        bpe_free(t);
    }
    json_decref(root);
}

/* decode(encode(s)) == s on seeded random bytes, biased towards what the
 * split and the merges care about (spaces, quotes, letters, UTF-8 lead and
 * continuation bytes). */
static void test_round_trip_random_bytes(void **state) {
    (void)state;
    bpe_tokenizer *t = load(FORMS[0]);
    static const uint8_t interesting[] = {' ', ' ', '\'', 's', 'e', 't', 'h', '\n', '\t', '1', 0xC3, 0xA9, 0xE6,
                                          0x97, 0xA5, 0xF0, 0x9F, 0x98, 0x80, 0xFF, 0x80, 0x00};
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int k = 0; k < 3000; k++) {
        uint8_t buf[300];
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t n = (size_t)(x % sizeof buf);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            buf[i] = (x >> 40) & 1 ? interesting[(x >> 8) % sizeof interesting] : (uint8_t)(x >> 16);
        }
        bpe_ids ids = {0};
        tok_error err;
        char *text;
        size_t len;
        assert_int_equal(bpe_encode(t, (const char *)buf, n, &ids, &err), TOK_OK);
        assert_true(ids.n <= n);
        assert_int_equal(bpe_decode(t, ids.ids, ids.n, &text, &len, &err), TOK_OK);
        assert_int_equal(len, n);
        assert_memory_equal(text, buf, n);
        free(text);
        free(ids.ids);
    }
    bpe_free(t);
}

/* The split on its own, for the look-ahead rule and the optional space
 * (expected pieces as tokenizers' ByteLevel pre_tokenize_str gives them). */
static void test_piece_split(void **state) {
    (void)state;
    static const struct {
        const char *s;
        const char *pieces; /* pieces separated by '|' */
    } cases[] = {
        {"a  b", "a| | b"},       {"a \n b", "a| \n| b"},      {"a\n\nb", "a|\n|\n|b"},   {"  ", "  "},
        {"x ", "x| "},            {"it's", "it|'s"},           {"IT'S", "IT|'|S"},        {"we'll", "we|'ll"},
        {" 123abc", " 123|abc"},  {"!!'s", "!!'|s"},           {"\t x", "\t| x"},          {"a\xff b", "a|\xff| b"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const uint8_t *s = (const uint8_t *)cases[c].s;
        size_t n = strlen(cases[c].s);
        char got[64] = "";
        size_t k = 0;
        for (size_t i = 0; i < n;) {
            size_t e = bpe_piece_end(s, n, i);
            assert_true(e > i && e <= n);
            if (i) got[k++] = '|';
            memcpy(got + k, s + i, e - i);
            k += e - i;
            i = e;
        }
        got[k] = '\0';
        if (strcmp(got, cases[c].pieces) != 0) fail_msg("split of \"%s\": \"%s\", expected \"%s\"", cases[c].s, got, cases[c].pieces);
    }
    assert_int_equal(bpe_char_class(0x3000), BPE_CLASS_SPACE);
    assert_int_equal(bpe_char_class(0x1F), BPE_CLASS_OTHER);
    assert_int_equal(bpe_char_class(0x65E5), BPE_CLASS_LETTER);
    assert_int_equal(bpe_char_class(0x0663), BPE_CLASS_NUMBER);
    assert_int_equal(bpe_char_class(0x0301), BPE_CLASS_OTHER); /* a combining mark is Mn */
}

/* A tokenizer.json with the given merges and vocabulary JSON. */
static tok_status load_json_text(const char *vocab, const char *merges, const char *extra, bpe_tokenizer **t,
                                tok_error *err) {
    char byte_vocab[8192];
    size_t k = 0;
    /* all 256 byte tokens: ids 0..255 in the byte-level alphabet's order */
    k += (size_t)snprintf(byte_vocab + k, sizeof byte_vocab - k, "{");
    for (int b = 0, next = 256; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        unsigned cp = printable ? (unsigned)b : (unsigned)next++;
        k += (size_t)snprintf(byte_vocab + k, sizeof byte_vocab - k, "%s\"\\u%04x\": %d", b ? ", " : "", cp, b);
    }
    char text[16384];
    snprintf(text, sizeof text,
             "{\"model\": {\"type\": \"BPE\", \"vocab\": %s%s}, \"merges\": %s}, \"pre_tokenizer\": "
             "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}%s}",
             byte_vocab, vocab, merges, extra);
    return bpe_load_tokenizer_json(text, strlen(text), "test.json", t, err);
}

static void test_refusals(void **state) {
    (void)state;
    bpe_tokenizer *t = NULL;
    tok_error err;
    /* a working one first, so the refusals below are about what they change */
    assert_int_equal(load_json_text(", \"ab\": 256", "[\"a b\"]", "", &t, &err), TOK_OK);
    bpe_ids ids = {0};
    assert_int_equal(bpe_encode(t, "abab", 4, &ids, &err), TOK_OK);
    assert_int_equal(ids.n, 2);
    assert_int_equal(ids.ids[0], 256);
    free(ids.ids);
    char *text;
    size_t len;
    int32_t bad_id = 999;
    assert_int_equal(bpe_decode(t, &bad_id, 1, &text, &len, &err), TOK_ERR_INVALID);
    assert_non_null(strstr(err.message, "999"));
    bpe_free(t);

    assert_int_equal(load_json_text(", \"ab\": 256", "[]", "", &t, &err), TOK_ERR_FORMAT);
    assert_non_null(strstr(err.message, "merge table is empty"));
    assert_null(t);
    assert_int_equal(load_json_text("", "[\"a b\"]", "", &t, &err), TOK_ERR_FORMAT);
    assert_non_null(strstr(err.message, "\"ab\" is not in the vocabulary"));
    assert_int_equal(load_json_text(", \"ab\": 256", "[\"ab\"]", "", &t, &err), TOK_ERR_FORMAT);
    assert_non_null(strstr(err.message, "model.merges[0]"));
    assert_int_equal(load_json_text(", \"ab\": 256", "[[\"a\", 1]]", "", &t, &err), TOK_ERR_FORMAT);
    assert_int_equal(load_json_text(", \"ab\": 256", "[\"a b\"]", ", \"normalizer\": {\"type\": \"NFC\"}", &t, &err),
                     TOK_ERR_UNSUPPORTED);
    assert_int_equal(load_json_text(", \"ab\": -1", "[\"a b\"]", "", &t, &err), TOK_ERR_FORMAT);
    assert_int_equal(load_json_text(", \"ab\": 5", "[\"a b\"]", "", &t, &err), TOK_ERR_FORMAT);
    assert_non_null(strstr(err.message, "two strings"));
    const char *no_bytes = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": "
                           "[\"a b\"]}, \"pre_tokenizer\": {\"type\": \"ByteLevel\"}}";
    assert_int_equal(bpe_load_tokenizer_json(no_bytes, strlen(no_bytes), "nb.json", &t, &err), TOK_ERR_FORMAT);
    assert_non_null(strstr(err.message, "byte 0x00"));
    assert_int_equal(bpe_load_tokenizer_json("{", 1, "broken.json", &t, &err), TOK_ERR_FORMAT);
    assert_non_null(strstr(err.message, "broken.json"));

    /* merges.txt: a bad line is named by file and line */
    const char *vocab_path = GOLDEN "/vocab_merges/vocab.json";
    char *vocab;
    size_t vlen;
    assert_int_equal(tok_read_regular(vocab_path, "vocab.json", BPE_JSON_MAX_BYTES, &vocab, &vlen, &err), TOK_OK);
    const char *merges = "#version: 0.2\n\xc4\xa0 t\nnot-a-merge\n";
    assert_int_equal(bpe_load_vocab_merges(vocab, vlen, "v.json", merges, strlen(merges), "m.txt", &t, &err),
                     TOK_ERR_FORMAT);
    assert_non_null(strstr(err.message, "m.txt:3"));
    /* a line of three fields is quoted alone: none of the lines after it reach the message */
    const char *three = "#version: 0.2\n\xc4\xa0 t\na b c\n\xc4\xa0 t\nNEXT-LINE\n";
    assert_int_equal(bpe_load_vocab_merges(vocab, vlen, "v.json", three, strlen(three), "m.txt", &t, &err),
                     TOK_ERR_FORMAT);
    assert_non_null(strstr(err.message, "m.txt:3: merge \"a b c\" is not two tokens"));
    assert_null(strstr(err.message, "NEXT-LINE"));
    assert_int_equal(bpe_load_vocab_merges(vocab, vlen, "v.json", "#version: 0.2\n", 14, "m.txt", &t, &err),
                     TOK_ERR_FORMAT);
    assert_non_null(strstr(err.message, "empty"));
    free(vocab);

    /* a run longer than BPE_MAX_PIECE_BYTES is refused; one of exactly that length is not */
    t = load(FORMS[0]);
    char *run = malloc(BPE_MAX_PIECE_BYTES + 2);
    assert_non_null(run);
    memset(run, 'a', BPE_MAX_PIECE_BYTES + 1);
    ids = (bpe_ids){0};
    assert_int_equal(bpe_encode(t, run, BPE_MAX_PIECE_BYTES, &ids, &err), TOK_OK);
    assert_true(ids.n > 0 && ids.n <= BPE_MAX_PIECE_BYTES);
    ids.n = 0;
    assert_int_equal(bpe_encode(t, run, BPE_MAX_PIECE_BYTES + 1, &ids, &err), TOK_ERR_INVALID);
    assert_non_null(strstr(err.message, "no break"));
    free(ids.ids);
    free(run);
    bpe_free(t);
    assert_int_equal(bpe_load_dir(BENCHCTL_SOURCE_DIR "/tests/tokenizer", tok_read_regular, &t, &err), TOK_ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "tests/tokenizer"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_cases),
        cmocka_unit_test(test_round_trip_random_bytes),
        cmocka_unit_test(test_piece_split),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
