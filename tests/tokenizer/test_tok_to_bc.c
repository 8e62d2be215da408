/* test_tok_to_bc.c: the bridge between the tokenizer's tok_error and
 * benchctl's bc_error (tokenizer/tok_to_bc.h): every code maps to its
 * namesake both ways, message and hint are kept, TOK_OK leaves err alone,
 * and a benchctl reader wrapped with TOK_READER_FROM_BC reports a missing
 * file as TOK_ERR_NOT_FOUND with the reader's message. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "readfile.h"
#include "tok_to_bc.h"

TOK_READER_FROM_BC(tok_read_regular, bc_read_regular)

static const struct {
    tok_status tok;
    bc_status bc;
} PAIRS[] = {{TOK_ERR_INVALID, BC_ERR_INVALID}, {TOK_ERR_UNSUPPORTED, BC_ERR_UNSUPPORTED},
             {TOK_ERR_NOMEM, BC_ERR_NOMEM},     {TOK_ERR_IO, BC_ERR_IO},
             {TOK_ERR_FORMAT, BC_ERR_FORMAT},   {TOK_ERR_NOT_FOUND, BC_ERR_NOT_FOUND}};

static void test_codes_message_hint_kept(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof PAIRS / sizeof PAIRS[0]; i++) {
        tok_error te;
        tok_status st = tok_error_set(&te, PAIRS[i].tok, "file %s: case %zu", "x.json", i);
        tok_error_hint(&te, "hint %zu", i);
        bc_error err = {0};
        assert_int_equal(tok_error_to_bc(st, &te, &err), PAIRS[i].bc);
        assert_int_equal(err.code, PAIRS[i].bc);
        assert_string_equal(err.message, te.message);
        assert_string_equal(err.hint, te.hint);
        tok_error back = {0};
        assert_int_equal(tok_error_from_bc(err.code, &err, &back), PAIRS[i].tok);
        assert_int_equal(back.code, PAIRS[i].tok);
        assert_string_equal(back.message, err.message);
        assert_string_equal(back.hint, err.hint);
    }
}

static void test_ok_leaves_err(void **state) {
    (void)state;
    tok_error te = {0};
    bc_error err = {.code = BC_ERR_SETTING, .message = "before", .hint = ""};
    assert_int_equal(tok_error_to_bc(TOK_OK, &te, &err), BC_OK);
    assert_int_equal(err.code, BC_ERR_SETTING);
    assert_string_equal(err.message, "before");
}

static void test_reader_not_found(void **state) {
    (void)state;
    tok_error te = {0};
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(tok_read_regular("/nonexistent/tok.json", "tokenizer.json", 1024, &text, &len, &te),
                     TOK_ERR_NOT_FOUND);
    assert_int_equal(te.code, TOK_ERR_NOT_FOUND);
    assert_non_null(strstr(te.message, "/nonexistent/tok.json"));
    assert_null(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codes_message_hint_kept),
        cmocka_unit_test(test_ok_leaves_err),
        cmocka_unit_test(test_reader_not_found),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
