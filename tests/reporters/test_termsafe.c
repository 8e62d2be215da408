/* test_termsafe.c: lib/text/termsafe.h, the escaping of text from files and
 * peers for a terminal: controls (C0, DEL, C1) and invalid UTF-8 become
 * visible \xNN, printable UTF-8 passes, and a cut never splits an escape. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "termsafe.h"

/* bc_text_put_terminal of s as a string (caller frees). */
static char *put(const char *s, size_t n, int keep_newline) {
    bc_text t = {0};
    bc_text_put_terminal(&t, s, n, keep_newline);
    assert_false(t.failed);
    return t.buf ? t.buf : strdup("");
}

/* The title-setting and screen-clearing sequence of the issue: no ESC, BEL
 * or other control byte survives. */
static void test_osc_title_escaped(void **state) {
    (void)state;
    const char *hostile = "opt\x1b]0;PWNED\x07\x1b[2J";
    char *out = put(hostile, strlen(hostile), 1);
    assert_string_equal(out, "opt\\x1b]0;PWNED\\x07\\x1b[2J");
    for (const char *p = out; *p; p++) assert_true((unsigned char)*p >= 0x20 && (unsigned char)*p != 0x7f);
    free(out);
    char buf[64];
    assert_string_equal(bc_terminal_safe(buf, sizeof buf, hostile), "opt\\x1b]0;PWNED\\x07\\x1b[2J");
}

/* C1 controls as UTF-8 (U+009B, the one-byte CSI) and as a lone byte, DEL,
 * NUL inside a counted string, CR and TAB. */
static void test_c1_del_and_c0(void **state) {
    (void)state;
    const char s[] = "a\xc2\x9b" "2Jb\x9b" "c\x7f" "d\0e\rf\tg";
    char *out = put(s, sizeof s - 1, 1);
    assert_string_equal(out, "a\\xc2\\x9b2Jb\\x9bc\\x7fd\\x00e\\x0df\\x09g");
    free(out);
}

/* Printable UTF-8 (U+00A0 and up, 3- and 4-byte characters) passes; newlines
 * pass only when asked. */
static void test_utf8_and_newlines(void **state) {
    (void)state;
    const char *s = "caf\xc3\xa9 \xe2\x80\x99 \xf0\x9f\x98\x80\n";
    char *out = put(s, strlen(s), 1);
    assert_string_equal(out, s);
    free(out);
    out = put(s, strlen(s), 0);
    assert_string_equal(out, "caf\xc3\xa9 \xe2\x80\x99 \xf0\x9f\x98\x80\\x0a");
    free(out);
    assert_true(bc_terminal_is_safe(s, strlen(s)));
    assert_false(bc_terminal_is_safe("a\x1b", 2));
}

/* Invalid UTF-8: an overlong form, a surrogate, a truncated sequence at the
 * end of the string, a stray continuation byte; each byte escaped. */
static void test_invalid_utf8(void **state) {
    (void)state;
    const char *s = "\xc0\xaf|\xed\xa0\x80|\x80|\xe2\x80";
    char *out = put(s, strlen(s), 1);
    assert_string_equal(out, "\\xc0\\xaf|\\xed\\xa0\\x80|\\x80|\\xe2\\x80");
    free(out);
    /* a counted string that ends inside a sequence: the bytes past n are not read */
    out = put("\xe2\x80\x99", 2, 1);
    assert_string_equal(out, "\\xe2\\x80");
    free(out);
}

/* A short buffer: cut before an escape or a character that does not fit. */
static void test_cut_whole(void **state) {
    (void)state;
    char buf[7];
    assert_string_equal(bc_terminal_safe(buf, 6, "ab\x1b" "cd"), "ab"); /* "ab\\x1b" needs 7 with its NUL */
    assert_string_equal(bc_terminal_safe(buf, sizeof buf, "ab\x1b" "cd"), "ab\\x1b");
    assert_string_equal(bc_terminal_safe(buf, sizeof buf, "abc\xe2\x80\x99"), "abc\xe2\x80\x99");
    assert_string_equal(bc_terminal_safe(buf, 6, "abc\xe2\x80\x99"), "abc");
    assert_string_equal(bc_terminal_safe(buf, sizeof buf, NULL), "");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_osc_title_escaped), cmocka_unit_test(test_c1_del_and_c0),
        cmocka_unit_test(test_utf8_and_newlines), cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_cut_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
