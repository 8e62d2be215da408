/* test_prompt_set.c: reading text prompt sets (tokenizer/prompt_set.h):
 * JSON lines and plain lines, BOS first, blank lines skipped, the ids
 * those of the tokenizer (checked against cases.json's, which come from
 * Hugging Face tokenizers), and errors that name the file and line. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "prompt_set.h"
#include "readfile.h"
#include "tok_to_bc.h"

TOK_READER_FROM_BC(tok_read_regular, bc_read_regular)

#define GOLDEN BENCHCTL_SOURCE_DIR "/tests/tokenizer/golden"

typedef struct fixture {
    char dir[64];
    char path[128];
    bpe_tokenizer *t;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/bc_prompt_set.XXXXXX");
    tok_error err;
    if (!mkdtemp(f->dir) || bpe_load_dir(GOLDEN "/json_pairs", tok_read_regular, &f->t, &err) != TOK_OK) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    if (f->path[0]) unlink(f->path);
    rmdir(f->dir);
    bpe_free(f->t);
    free(f);
    return 0;
}

static const char *write_file(fixture *f, const char *name, const char *text, size_t len) {
    if (f->path[0]) unlink(f->path);
    snprintf(f->path, sizeof f->path, "%s/%s", f->dir, name);
    FILE *fp = fopen(f->path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(text, 1, len, fp), len);
    fclose(fp);
    return f->path;
}

static tok_status read_set(fixture *f, const char *name, const char *text, bpe_prompt_format fmt, const char *field,
                          int bos, bpe_prompt_set *s, tok_error *err) {
    const char *path = write_file(f, name, text, strlen(text));
    return bpe_prompt_set_read(s, path, tok_read_regular, 1 << 20, fmt, field, f->t, bos, err);
}

/* The ids tokenizers gave for a case's text, from cases.json. */
static json_t *case_ids(const char *text) {
    json_error_t jerr;
    json_t *root = json_load_file(GOLDEN "/cases.json", 0, &jerr);
    assert_non_null(root);
    char hex[512] = "";
    for (size_t i = 0; text[i]; i++) sprintf(hex + 2 * i, "%02x", (unsigned char)text[i]);
    json_t *found = NULL;
    const json_t *cases = json_object_get(root, "cases");
    for (size_t i = 0; i < json_array_size(cases) && !found; i++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(cases, i), "hex")), hex))
            found = json_incref(json_object_get(json_array_get(cases, i), "ids"));
    json_decref(root);
    if (!found) fail_msg("\"%s\" is not a case of cases.json", text);
    return found;
}

static void assert_prompt(const bpe_prompt *p, int bos, const char *text, int line) {
    json_t *want = case_ids(text);
    size_t off = bos >= 0;
    assert_int_equal(p->line, line);
    assert_int_equal((size_t)p->n, json_array_size(want) + off);
    if (bos >= 0) assert_int_equal(p->ids[0], bos);
    for (size_t i = 0; i < json_array_size(want); i++)
        assert_int_equal(p->ids[off + i], json_integer_value(json_array_get(want, i)));
    json_decref(want);
}

static void test_jsonl_and_lines(void **state) {
    fixture *f = *state;
    bpe_prompt_set s;
    tok_error err;
    const char *jsonl = "{\"id\": 1, \"text\": \"  leading spaces\"}\n"
                        "\n"
                        "{\"text\": \"I'm sure we'll see they've done it, can't you? She'd say it's yours, you're right.\"}\r\n"
                        "{\"prompt\": \"x  y\", \"text\": \"1234567890\"}";
    assert_int_equal(read_set(f, "p.jsonl", jsonl, BPE_PROMPTS_AUTO, NULL, 2, &s, &err), TOK_OK);
    assert_int_equal(s.count, 3);
    assert_prompt(&s.prompts[0], 2, "  leading spaces", 1);
    assert_prompt(&s.prompts[1], 2, "I'm sure we'll see they've done it, can't you? She'd say it's yours, you're right.", 3);
    assert_prompt(&s.prompts[2], 2, "1234567890", 4);
    bpe_prompt_set_free(&s);
    /* another field, no BOS */
    assert_int_equal(read_set(f, "p.jsonl", "{\"prompt\": \"x  y\"}\n", BPE_PROMPTS_AUTO, "prompt", -1, &s, &err), TOK_OK);
    assert_prompt(&s.prompts[0], -1, "x  y", 1);
    bpe_prompt_set_free(&s);
    /* plain lines: the line as it is, blank lines skipped, CRLF's CR dropped */
    assert_int_equal(read_set(f, "p.txt", "x  y\n   \n  leading spaces\r\n1234567890", BPE_PROMPTS_AUTO, NULL, 2, &s,
                              &err),
                     TOK_OK);
    assert_int_equal(s.count, 3);
    assert_prompt(&s.prompts[0], 2, "x  y", 1);
    assert_prompt(&s.prompts[1], 2, "  leading spaces", 3);
    assert_prompt(&s.prompts[2], 2, "1234567890", 4);
    bpe_prompt_set_free(&s);
    /* a .jsonl name read as plain lines when told so */
    assert_int_equal(read_set(f, "p.jsonl", "{\"text\": 1}\n", BPE_PROMPTS_LINES, NULL, 2, &s, &err), TOK_OK);
    assert_int_equal(s.count, 1);
    char *text;
    size_t len;
    assert_int_equal(bpe_decode(f->t, s.prompts[0].ids + 1, (size_t)s.prompts[0].n - 1, &text, &len, &err), TOK_OK);
    assert_string_equal(text, "{\"text\": 1}");
    free(text);
    bpe_prompt_set_free(&s);
}

static void expect_error(fixture *f, const char *name, const char *text, size_t len, bpe_prompt_format fmt,
                         const char *const *words) {
    bpe_prompt_set s;
    tok_error err = {0};
    const char *path = write_file(f, name, text, len);
    assert_int_equal(bpe_prompt_set_read(&s, path, tok_read_regular, 1 << 20, fmt, NULL, f->t, 2, &err), TOK_ERR_FORMAT);
    assert_null(s.prompts);
    assert_non_null(strstr(err.message, path));
    for (size_t i = 0; words[i]; i++)
        if (!strstr(err.message, words[i])) fail_msg("\"%s\" lacks \"%s\"", err.message, words[i]);
}

static void test_errors_name_file_and_line(void **state) {
    fixture *f = *state;
    expect_error(f, "a.jsonl", "{\"text\": \"ok\"}\n{\"text\": \"ok\"\n", 29, BPE_PROMPTS_AUTO,
                 (const char *[]){":2:", "not a JSON object", NULL});
    expect_error(f, "a.jsonl", "{\"text\": \"ok\"}\n\n[\"text\"]\n", 25, BPE_PROMPTS_AUTO,
                 (const char *[]){":3:", "not a JSON object", NULL});
    expect_error(f, "a.jsonl", "{\"body\": \"ok\"}\n", 15, BPE_PROMPTS_AUTO, (const char *[]){":1:", "no field \"text\"", NULL});
    expect_error(f, "a.jsonl", "{\"text\": 3}\n", 12, BPE_PROMPTS_AUTO, (const char *[]){":1:", "not a string", NULL});
    expect_error(f, "a.jsonl", "{\"text\": \"\"}\n", 13, BPE_PROMPTS_AUTO, (const char *[]){":1:", "empty", NULL});
    expect_error(f, "a.txt", "ok\nn\0l\n", 7, BPE_PROMPTS_AUTO, (const char *[]){":2:", "NUL", NULL});
    expect_error(f, "a.txt", "\n  \n\n", 5, BPE_PROMPTS_AUTO, (const char *[]){"no prompts", NULL});
    bpe_prompt_set s;
    tok_error err;
    assert_int_equal(bpe_prompt_set_read(&s, "/nonexistent/p.txt", tok_read_regular, 1 << 20, BPE_PROMPTS_AUTO, NULL,
                                         f->t, 2, &err),
                     TOK_ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "/nonexistent/p.txt"));
    assert_int_equal(bpe_prompt_format_from_name("csv"), -1);
}

static void test_length_summary(void **state) {
    (void)state;
    int v[] = {9, 3, 7, 5};
    bpe_length_summary s = bpe_length_summary_of(v, 4);
    assert_int_equal(s.min, 3);
    assert_int_equal(s.p50, 5); /* the lower middle one */
    assert_int_equal(s.max, 9);
    assert_int_equal(v[0], 9);  /* unchanged */
    s = bpe_length_summary_of(v, 3);
    assert_int_equal(s.p50, 7);
    s = bpe_length_summary_of(v, 0);
    assert_int_equal(s.max, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_jsonl_and_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors_name_file_and_line, setup, teardown),
        cmocka_unit_test(test_length_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
