/* test_htmlw.c: the HTML pieces of lib/html (htmlw.h): escaping
 * that keeps a page well-formed XML whatever the text, numbers for cells
 * and tick labels, and axis ticks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bc_test_assert.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "htmlw.h"

/* bc_html_text(s) as a string (caller frees). */
static char *escaped(const char *s) {
    bc_text t = {0};
    bc_html_text(&t, s);
    bc_text_puts(&t, ""); /* a buffer even for empty text */
    assert_false(t.failed);
    return t.buf;
}

static void assert_escapes(const char *in, const char *want) {
    char *got = escaped(in);
    assert_string_equal(got, want);
    free(got);
}

static void test_escape(void **state) {
    (void)state;
    assert_escapes("plain text 123", "plain text 123");
    assert_escapes("<a href=\"x\">'&'</a>", "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    assert_escapes("tab\there\nline\rcr", "tab\there\nline\rcr");
    assert_escapes("bell\x07 esc\x1b del\x7f.", "bell esc del."); /* dropped */
    const char *utf8 = "\xc3\xa9t\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x99\x82"; /* kept as it is */
    assert_escapes(utf8, utf8);
    assert_escapes("a\xff" "b", "a\xef\xbf\xbd" "b"); /* invalid byte */
    assert_escapes("\xc3", "\xef\xbf\xbd"); /* cut at the end */
    assert_escapes("\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"); /* a surrogate: 3 bad bytes */
    assert_escapes("\xef\xbf\xbe|\xef\xbf\xbf", "\xef\xbf\xbd|\xef\xbf\xbd"); /* U+FFFE, U+FFFF */
    assert_escapes("", "");
    bc_text t = {0};
    bc_html_text(&t, NULL);
    assert_int_equal(t.len, 0);
    bc_html_textf(&t, "%d<%s>", 7, "b&");
    assert_string_equal(t.buf, "7&lt;b&amp;&gt;");
    /* longer than the formatter's stack buffer */
    char big[2000];
    memset(big, '<', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    t.len = 0;
    bc_html_textf(&t, "%s", big);
    assert_int_equal(t.len, 4 * (sizeof big - 1));
    free(t.buf);
}

static void assert_number(double v, const char *want) {
    char buf[32];
    int n = bc_html_format_number(buf, sizeof buf, v);
    assert_string_equal(buf, want);
    assert_int_equal(n, (int)strlen(want));
}

static void test_numbers(void **state) {
    (void)state;
    assert_number(12345.6, "12346");
    assert_number(123.45, "123.5");
    assert_number(12.345, "12.35");
    assert_number(1.5, "1.50");
    assert_number(0.01234, "0.0123");
    assert_number(0.0001234, "0.000123");
    assert_number(2.5e9, "2.5e+09");
    assert_number(0.0, "0");
    assert_number(-0.001, "-0.001");
    assert_number(-3.25, "-3.25");
    assert_number(-0.0, "0");
    assert_number(NAN, "");
    assert_number(INFINITY, "");

    char buf[32];
    bc_html_format_tick(buf, sizeof buf, 2.5, 2.5);
    assert_string_equal(buf, "2.5");
    bc_html_format_tick(buf, sizeof buf, 0.75, 0.25);
    assert_string_equal(buf, "0.75");
    bc_html_format_tick(buf, sizeof buf, 1500, 500);
    assert_string_equal(buf, "1500");
    bc_html_format_tick(buf, sizeof buf, -2e-17, 0.1); /* rounding noise at zero, as many decimals as the step */
    assert_string_equal(buf, "0.0");
    bc_html_format_tick(buf, sizeof buf, -0.2, 0.1);
    assert_string_equal(buf, "-0.2");
}

static void test_ticks(void **state) {
    (void)state;
    bc_ticks tk;
    bc_ticks_linear(&tk, 0.0, 4650.0, 5);
    assert_double_close(tk.step, 1000.0, 0.0);
    assert_int_equal(tk.n, 6);
    assert_double_close(tk.lo, 0.0, 0.0);
    assert_double_close(tk.hi, 5000.0, 0.0);

    bc_ticks_linear(&tk, -3.2, 7.9, 8);
    assert_double_close(tk.step, 2.0, 0.0);
    assert_double_close(tk.lo, -4.0, 0.0);
    assert_double_close(tk.hi, 8.0, 0.0);
    for (int i = 1; i < tk.n; i++) assert_double_close(tk.v[i] - tk.v[i - 1], 2.0, 1e-12);

    bc_ticks_linear(&tk, 242.0, 303.0, 5); /* an axis that does not start at zero */
    assert_double_close(tk.lo, 240.0, 0.0);
    assert_double_close(tk.hi, 320.0, 0.0);

    bc_ticks_linear(&tk, 5.0, 5.0, 5); /* one value: a range around it */
    assert_true(tk.lo < 5.0 && tk.hi > 5.0 && tk.lo >= 0.0);
    bc_ticks_linear(&tk, 0.0, 0.0, 5);
    assert_true(tk.lo <= 0.0 && tk.hi > 0.0);
    bc_ticks_linear(&tk, NAN, 3.0, 5);
    assert_true(tk.n >= 2 && tk.lo == 0.0 && tk.hi == 1.0);
    bc_ticks_linear(&tk, 0.0, 1e9, 50); /* target clamped */
    assert_true(tk.n <= BC_TICKS_MAX);

    bc_ticks_log2(&tk, 1.0, 16.0, 10);
    assert_int_equal(tk.n, 5);
    assert_double_close(tk.v[0], 1.0, 0.0);
    assert_double_close(tk.v[4], 16.0, 0.0);
    assert_double_close(tk.lo, 1.0 / sqrt(2.0), 1e-12);
    assert_double_close(tk.hi, 16.0 * sqrt(2.0), 1e-12);

    bc_ticks_log2(&tk, 1.0, 4096.0, 7); /* 13 powers, 7 labels at most: every other one */
    assert_int_equal(tk.n, 7);
    assert_double_close(tk.v[1], 4.0, 0.0);
    assert_double_close(tk.v[6], 4096.0, 0.0);

    bc_ticks_log2(&tk, 3.0, 3.0, 5); /* between two powers: both labelled */
    assert_int_equal(tk.n, 2);
    assert_double_close(tk.v[0], 2.0, 0.0);
    assert_double_close(tk.v[1], 4.0, 0.0);
    assert_true(tk.lo < 3.0 && tk.hi > 3.0);

    bc_ticks_log2(&tk, 0.0, -1.0, 5); /* nonsense: one tick at 1 */
    assert_int_equal(tk.n, 1);
    assert_double_close(tk.v[0], 1.0, 0.0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_ticks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
