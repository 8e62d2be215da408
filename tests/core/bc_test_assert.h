/* bc_test_assert.h: assertions the installed cmocka may lack. Include after cmocka.h. */
#ifndef BC_TEST_ASSERT_H
#define BC_TEST_ASSERT_H

#include <math.h>

#ifndef assert_double_equal
/* |a - b| <= eps, printing both values on failure. */
#define assert_double_equal(a, b, eps)                                                                  \
    do {                                                                                                \
        double a_ = (double)(a), b_ = (double)(b);                                                      \
        if (!(fabs(a_ - b_) <= (double)(eps)))                                                          \
            fail_msg("%s = %.17g, expected %.17g (eps %g)", #a, a_, b_, (double)(eps));                 \
    } while (0)
#endif

#endif
