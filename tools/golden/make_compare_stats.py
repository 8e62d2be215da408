#!/usr/bin/env python3
"""make_compare_stats.py: writes tests/core/compare_stats_golden.h, the
Mann-Whitney U reference values that tests/core/test_compare_stats.c checks
benchctl compare's statistics (core/src/analysis/compare_stats.c) against.

For each pair of samples below it records scipy's
  scipy.stats.mannwhitneyu(a, b, alternative="two-sided", method="exact")
  scipy.stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic",
                           use_continuity=True)
statistic (U of a, scipy's U1) and p-values. The exact p is recorded only for
samples without ties (scipy's exact method ignores ties, and benchctl does not
use it for tied samples); NAN in the table marks "not recorded".

How the committed file was produced (once; the tests need no Python):
  python3 -m venv /tmp/venv-scipy
  /tmp/venv-scipy/bin/pip install scipy numpy
  /tmp/venv-scipy/bin/python tools/golden/make_compare_stats.py > tests/core/compare_stats_golden.h
The header of the output names the scipy and numpy versions that wrote it.
The samples are written here literally, or drawn from numpy's PCG64 with a
fixed seed and rounded to 6 decimals, so a rerun writes the same file.
"""
import sys

import numpy as np
import scipy
from scipy.stats import mannwhitneyu


def drawn(seed, n, loc, scale):
    """n timing-like values: normal(loc, scale), rounded to 6 decimals."""
    rng = np.random.default_rng(seed)
    return [round(float(x), 6) for x in rng.normal(loc, scale, n)]


def small_ints(seed, n, top):
    """n integers in [0, top): many ties."""
    rng = np.random.default_rng(seed)
    return [float(x) for x in rng.integers(0, top, n)]


# name, a, b
CASES = [
    ("n1_vs_n1", [1.0], [2.0]),
    ("n1_vs_n5", [3.5], [1.0, 2.0, 4.0, 5.0, 6.0]),
    ("n2_vs_n2_apart", [1.0, 2.0], [3.0, 4.0]),
    ("n2_vs_n3", [10.0, 30.0], [20.0, 40.0, 50.0]),
    ("n3_vs_n3_apart", [1.0, 2.0, 3.0], [4.0, 5.0, 6.0]),
    ("n3_vs_n3_mixed", [1.0, 4.0, 5.0], [2.0, 3.0, 6.0]),
    ("n5_vs_n7_drawn", drawn(1, 5, 100.0, 5.0), drawn(2, 7, 104.0, 5.0)),
    ("n5_vs_n7_apart", [1.1, 1.2, 1.3, 1.4, 1.5], [2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 2.7]),
    ("n8_vs_n8_drawn", drawn(3, 8, 50.0, 2.0), drawn(4, 8, 53.0, 2.0)),
    ("n20_vs_n20_same", drawn(5, 20, 10.0, 1.0), drawn(6, 20, 10.0, 1.0)),
    ("n20_vs_n20_shift", drawn(7, 20, 10.0, 1.0), drawn(8, 20, 11.0, 1.0)),
    ("n25_vs_n30_drawn", drawn(9, 25, 7.0, 0.5), drawn(10, 30, 7.2, 0.5)),
    ("n60_vs_n50_drawn", drawn(11, 60, 7.0, 0.5), drawn(12, 50, 7.1, 0.5)),
    ("ties_n4_vs_n4", [1.0, 2.0, 2.0, 3.0], [2.0, 3.0, 3.0, 4.0]),
    ("ties_n10_vs_n12", small_ints(13, 10, 4), small_ints(14, 12, 4)),
    ("ties_n30_vs_n30", small_ints(15, 30, 6), small_ints(16, 30, 6)),
    ("ties_across_n3", [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]),
    ("identical_n3", [5.0, 5.0, 5.0], [5.0, 5.0, 5.0]),
    ("identical_n1", [2.0], [2.0]),
]


def c_double(x):
    if x is None:
        return "NAN"
    r = repr(float(x))
    return r if ("." in r or "e" in r or "n" in r) else r + ".0"


def c_array(name, xs):
    return "static const double %s[%d] = {%s};" % (name, len(xs), ", ".join(c_double(x) for x in xs))


def main():
    out = sys.stdout
    out.write("/* compare_stats_golden.h: Mann-Whitney U reference values for\n"
              " * tests/core/test_compare_stats.c. Written by tools/golden/make_compare_stats.py\n"
              " * with scipy %s and numpy %s; do not edit, rerun the script.\n"
              " * p_exact: method='exact' (NAN: not recorded, the samples have ties);\n"
              " * p_asymptotic: method='asymptotic', use_continuity=True; both two-sided. */\n"
              % (scipy.__version__, np.__version__))
    out.write("#ifndef COMPARE_STATS_GOLDEN_H\n#define COMPARE_STATS_GOLDEN_H\n\n#include <math.h>\n#include <stddef.h>\n\n")
    rows = []
    for i, (name, a, b) in enumerate(CASES):
        has_ties = len(set(a + b)) < len(a) + len(b)
        asym = mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True)
        exact_p = None
        if not has_ties:
            ex = mannwhitneyu(a, b, alternative="two-sided", method="exact")
            assert float(ex.statistic) == float(asym.statistic)
            exact_p = float(ex.pvalue)
        out.write(c_array("g_mwu_a%d" % i, a) + "\n")
        out.write(c_array("g_mwu_b%d" % i, b) + "\n")
        rows.append("    {\"%s\", g_mwu_a%d, %d, g_mwu_b%d, %d, %s, %s, %s, %d},"
                    % (name, i, len(a), i, len(b), c_double(asym.statistic), c_double(exact_p),
                       c_double(asym.pvalue), int(has_ties)))
    out.write("\ntypedef struct mwu_golden {\n"
              "    const char *name;\n"
              "    const double *a;\n    size_t n_a;\n"
              "    const double *b;\n    size_t n_b;\n"
              "    double u_a, p_exact, p_asymptotic;\n"
              "    int has_ties;\n"
              "} mwu_golden;\n\n")
    out.write("static const mwu_golden k_mwu_golden[] = {\n" + "\n".join(rows) + "\n};\n\n#endif\n")


if __name__ == "__main__":
    main()
