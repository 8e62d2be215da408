/* eta.c: the cost model behind the runner's estimate of time left (eta.h). */
#include "eta.h"

#include <math.h>

double bc_eta_units(const bc_eta *e, const bc_case *c) {
    uint32_t prompt = c->prompt_length ? c->prompt_length : e->widest_prompt;
    return (double)bc_case_effective_batch(c) * ((double)prompt + (double)c->response_length);
}

void bc_eta_add_point(bc_eta *e, double units, double iteration_ms) {
    if (!(units > 0) || !isfinite(iteration_ms) || iteration_ms < 0) return;
    e->n++;
    e->su += units;
    e->suu += units * units;
    e->st += iteration_ms;
    e->sut += units * iteration_ms;
}

void bc_eta_add(bc_eta *e, double units, uint32_t warmup, uint32_t measured, double wall_ms, int64_t prompt_width) {
    if (prompt_width > (int64_t)e->widest_prompt && prompt_width <= (int64_t)UINT32_MAX)
        e->widest_prompt = (uint32_t)prompt_width;
    if (measured == 0) return;
    bc_eta_add_point(e, units, wall_ms / ((double)warmup + (double)measured));
    e->n_cases++;
    e->measured_sum += measured;
}

double bc_eta_iteration_ms(const bc_eta *e, double units) {
    if (e->n == 0) return NAN;
    double n = (double)e->n, mu = e->su / n, mt = e->st / n;
    double var = e->suu / n - mu * mu, cov = e->sut / n - mu * mt;
    if (e->n >= 2 && var > 1e-9 * mu * mu) {
        double b = cov / var, a = mt - b * mu;
        if (b >= 0 && a >= 0) return a + b * units;
    }
    return mu > 0 ? mt * units / mu : mt;
}

static uint32_t clamp(double v, uint32_t lo, uint32_t hi) {
    if (!(v >= (double)lo)) return lo; /* NaN too */
    return v >= (double)hi ? hi : (uint32_t)v;
}

uint32_t bc_eta_iterations_to_target(uint32_t n, double rel_ci, double target, uint32_t lo, uint32_t hi,
                                     uint32_t none_yet) {
    if (!isfinite(rel_ci) || !(target > 0)) return none_yet;
    return clamp(ceil((double)n * (rel_ci / target) * (rel_ci / target)), lo, hi);
}

uint32_t bc_eta_expected_iterations(const bc_eta *e, uint32_t lo, uint32_t hi, uint32_t none_yet) {
    if (e->n_cases == 0) return none_yet;
    double mean = e->measured_sum / (double)e->n_cases;
    uint32_t v = mean >= (double)hi ? hi : (uint32_t)(mean + 0.5);
    return v < lo ? lo : v > hi ? hi : v;
}

double bc_eta_case_ms(const bc_eta *e, double units, uint32_t warmup, uint32_t measured, double max_seconds) {
    double per = bc_eta_iteration_ms(e, units);
    double ms = per * ((double)warmup + (double)measured);
    if (max_seconds > 0 && ms > max_seconds * 1000.0 + per) ms = max_seconds * 1000.0 + per;
    return ms;
}
