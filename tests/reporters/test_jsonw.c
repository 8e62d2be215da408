/* test_jsonw.c: reporters/common/jsonw.c, the JSON writer the json and
 * jsonl reporters share: escaping (quotes, control characters, invalid
 * UTF-8), nesting and commas, null for NaN/inf, and doubles that read back
 * exactly. Output is checked by parsing it with jansson. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bc_test_assert.h"

#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"

static json_t *parse(const bc_jw *w) {
    assert_false(bc_jw_failed(w));
    json_error_t jerr;
    json_t *v = json_loads(w->text.buf, JSON_DECODE_ANY, &jerr);
    if (!v) fprintf(stderr, "not JSON (%s): %s\n", jerr.text, w->text.buf);
    assert_non_null(v);
    return v;
}

static void test_strings(void **state) {
    (void)state;
    bc_jw w;
    bc_jw_init(&w, 0);
    bc_jw_begin_array(&w);
    bc_jw_string(&w, "plain");
    bc_jw_string(&w, "quote \" backslash \\ slash /");
    bc_jw_string(&w, "tab\tnl\ncr\rbell\a del\x7f");
    bc_jw_string(&w, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"); /* valid UTF-8 passes through */
    bc_jw_string(&w, "bad \xff\xfe end \xc3");                    /* invalid bytes, truncated sequence */
    bc_jw_string(&w, "\xed\xa0\x80");                             /* a UTF-16 surrogate is not UTF-8 */
    bc_jw_string(&w, NULL);
    bc_jw_end_array(&w);
    assert_null(strchr(w.text.buf, '\n'));
    json_t *v = parse(&w);
    assert_string_equal(json_string_value(json_array_get(v, 0)), "plain");
    assert_string_equal(json_string_value(json_array_get(v, 1)), "quote \" backslash \\ slash /");
    assert_string_equal(json_string_value(json_array_get(v, 2)), "tab\tnl\ncr\rbell\a del\x7f");
    assert_string_equal(json_string_value(json_array_get(v, 3)), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    assert_string_equal(json_string_value(json_array_get(v, 4)), "bad \xef\xbf\xbd\xef\xbf\xbd end \xef\xbf\xbd");
    assert_string_equal(json_string_value(json_array_get(v, 5)), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    assert_true(json_is_null(json_array_get(v, 6)));
    json_decref(v);
    bc_jw_free(&w);
}

static void test_numbers(void **state) {
    (void)state;
    const double values[] = {0.0, -0.0, 1.0, 0.1, 0.1 + 0.2, 1.0 / 3.0, 1e-300, 1e300, DBL_MAX, DBL_MIN,
                             4.9406564584124654e-324, 123456789.125, -2.5e-7, 6783.15714941686};
    const size_t n = sizeof values / sizeof values[0];
    bc_jw w;
    bc_jw_init(&w, 2);
    bc_jw_begin_array(&w);
    for (size_t i = 0; i < n; i++) bc_jw_double(&w, values[i]);
    bc_jw_double(&w, NAN);
    bc_jw_double(&w, INFINITY);
    bc_jw_double(&w, -INFINITY);
    bc_jw_int(&w, INT64_MIN);
    bc_jw_uint(&w, 42);
    bc_jw_int_or_null(&w, -1);
    bc_jw_int_or_null(&w, 0);
    bc_jw_end_array(&w);
    json_t *v = parse(&w);
    for (size_t i = 0; i < n; i++) {
        json_t *num = json_array_get(v, i);
        assert_true(json_is_number(num));
        assert_double_close(json_number_value(num), values[i], 0.0); /* exact: reads back the same double */
    }
    for (size_t i = n; i < n + 3; i++) assert_true(json_is_null(json_array_get(v, i)));
    assert_true(json_integer_value(json_array_get(v, n + 3)) == INT64_MIN);
    assert_int_equal(json_integer_value(json_array_get(v, n + 4)), 42);
    assert_true(json_is_null(json_array_get(v, n + 5)));
    assert_int_equal(json_integer_value(json_array_get(v, n + 6)), 0);
    json_decref(v);
    bc_jw_free(&w);

    /* jansson's integers are signed and refuse UINT64_MAX, so check the text. */
    bc_jw_init(&w, 0);
    bc_jw_uint(&w, UINT64_MAX);
    assert_string_equal(w.text.buf, "18446744073709551615");
    bc_jw_free(&w);

    char buf[40];
    assert_int_equal(bc_format_double(buf, sizeof buf, NAN), 0);
    assert_string_equal(buf, "");
    bc_format_double(buf, sizeof buf, 0.1);
    assert_string_equal(buf, "0.1"); /* shortest, not 0.10000000000000001 */
    bc_format_double(buf, sizeof buf, 12.5);
    assert_string_equal(buf, "12.5");
}

static void test_nesting(void **state) {
    (void)state;
    for (int indent = 0; indent <= 4; indent += 4) {
        bc_jw w;
        bc_jw_init(&w, indent);
        bc_jw_begin_object(&w);
        bc_jw_key(&w, "empty_object");
        bc_jw_begin_object(&w);
        bc_jw_end_object(&w);
        bc_jw_key(&w, "empty_array");
        bc_jw_begin_array(&w);
        bc_jw_end_array(&w);
        bc_jw_key(&w, "list");
        bc_jw_begin_array(&w);
        bc_jw_begin_object(&w);
        bc_jw_key(&w, "a");
        bc_jw_bool(&w, 1);
        bc_jw_key(&w, "b");
        bc_jw_bool(&w, 0);
        bc_jw_end_object(&w);
        bc_jw_null(&w);
        bc_jw_end_array(&w);
        bc_jw_key(&w, "k\"ey");
        bc_jw_string(&w, "v");
        bc_jw_end_object(&w);
        json_t *v = parse(&w);
        assert_int_equal(json_object_size(v), 4);
        assert_int_equal(json_object_size(json_object_get(v, "empty_object")), 0);
        assert_int_equal(json_array_size(json_object_get(v, "empty_array")), 0);
        json_t *list = json_object_get(v, "list");
        assert_int_equal(json_array_size(list), 2);
        assert_true(json_is_true(json_object_get(json_array_get(list, 0), "a")));
        assert_true(json_is_false(json_object_get(json_array_get(list, 0), "b")));
        assert_string_equal(json_string_value(json_object_get(v, "k\"ey")), "v");
        if (indent == 0) assert_null(strchr(w.text.buf, '\n'));
        json_decref(v);
        bc_jw_reset(&w); /* reuse keeps working */
        bc_jw_begin_array(&w);
        bc_jw_end_array(&w);
        assert_string_equal(w.text.buf, "[]");
        bc_jw_free(&w);
    }
}

static void test_misuse_is_flagged(void **state) {
    (void)state;
    bc_jw w;
    bc_jw_init(&w, 0);
    bc_jw_end_object(&w); /* nothing open */
    assert_true(bc_jw_failed(&w));
    bc_jw_free(&w);
    bc_jw_init(&w, 0);
    bc_jw_key(&w, "outside"); /* a key outside an object */
    assert_true(bc_jw_failed(&w));
    bc_jw_free(&w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_nesting),
        cmocka_unit_test(test_misuse_is_flagged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
