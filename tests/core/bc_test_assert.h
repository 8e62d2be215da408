/* bc_test_assert.h: the project's assertions for doubles. Include after cmocka.h.
 *
 * cmocka 1.1's assert_float_equal compares as float and, like its
 * assert_double_equal, passes when a value is NaN (every comparison with NaN
 * is false, so "difference > epsilon" never fires). These replace both: they
 * fail on NaN, print both values with full precision, and compare as double.
 * Use assert_nan for a value that must be NaN ("not measured").
 */
#ifndef BC_TEST_ASSERT_H
#define BC_TEST_ASSERT_H

#include <math.h>

/* |a - b| <= eps, and neither is NaN. */
#define assert_double_close(a, b, eps)                                                                  \
    do {                                                                                                \
        double a_ = (double)(a), b_ = (double)(b);                                                      \
        if (!(fabs(a_ - b_) <= (double)(eps)))                                                          \
            fail_msg("%s = %.17g, expected %.17g (eps %g)", #a, a_, b_, (double)(eps));                 \
    } while (0)

/* x is NaN. */
#define assert_nan(x)                                                                                   \
    do {                                                                                                \
        double x_ = (double)(x);                                                                        \
        if (!isnan(x_)) fail_msg("%s = %.17g, expected NaN (not measured)", #x, x_);                    \
    } while (0)

/* cmocka's own spellings mean the same here, so no test can pass on NaN. */
#undef assert_double_equal
#define assert_double_equal(a, b, eps) assert_double_close(a, b, eps)
#undef assert_float_equal
#define assert_float_equal(a, b, eps) assert_double_close(a, b, eps)

#endif
