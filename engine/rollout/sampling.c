/* sampling.c: greedy, temperature, top-k and top-p sampling (see sampling.h).
 *
 * Order and rules follow transformers' logits warpers:
 *   temperature  logits / T
 *   top-k        remove logits < the k-th largest (ties with it are kept)
 *   top-p        softmax, sort descending, keep a token while the probability
 *                of the tokens above it is < top_p (so the smallest set whose
 *                mass reaches top_p, and always at least one token)
 *   draw         one uniform u in [0, 1), walk the kept tokens in descending
 *                probability until their cumulative mass exceeds u * total.
 * Only the tokens that can be kept are sorted: the top M by quickselect, with
 * M doubling until the kept set is complete, so a 50k vocabulary is not
 * sorted at every step.
 */
#include "sampling.h"

#include "norm_rope_act.h"
#include "splitmix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t x) { return eng_splitmix_next(&x); }

eng_rng eng_rng_for_row(uint64_t seed, uint64_t row) {
    eng_rng r = {splitmix64(seed ^ splitmix64(row + 0x5eed))};
    return r;
}

uint64_t eng_rng_stream_seed(uint64_t seed, uint64_t iteration) {
    return seed ^ splitmix64(splitmix64(iteration) ^ 0x6974657261746eull);
}

uint64_t eng_rng_next(eng_rng *r) { return eng_splitmix_next(&r->state); }

double eng_rng_uniform(eng_rng *r) { return eng_uniform_from(eng_rng_next(r)); }

bc_status eng_sampler_init(eng_sampler *s, int V, const eng_sampling *p, bc_error *err) {
    memset(s, 0, sizeof *s);
    if (V < 1) return bc_error_set(err, BC_ERR_INVALID, "sampler: vocabulary size %d", V);
    if (!(p->temperature >= 0.0) || !(p->top_p > 0.0 && p->top_p <= 1.0) || p->top_k < 0)
        return bc_error_set(err, BC_ERR_INVALID, "sampler: temperature %g must be >= 0, top_p %g in (0, 1], top_k %lld >= 0",
                            p->temperature, p->top_p, (long long)p->top_k);
    s->pairs = malloc((size_t)V * sizeof *s->pairs);
    if (!s->pairs) return bc_error_set(err, BC_ERR_NOMEM, "sampler: no memory for %d candidates", V);
    s->V = V;
    s->p = *p;
    s->kept = s->pairs;
    return BC_OK;
}

void eng_sampler_free(eng_sampler *s) {
    if (!s) return;
    free(s->pairs);
    s->pairs = s->kept = NULL;
}

static void swap(eng_sample_pair *a, eng_sample_pair *b) {
    eng_sample_pair t = *a;
    *a = *b;
    *b = t;
}

/* Reorders p[0..n) so the m largest values (ties broken by lower token id)
 * come first, in no particular order. */
static int pair_greater(const eng_sample_pair *a, const eng_sample_pair *b) {
    return a->v > b->v || (a->v == b->v && a->i < b->i);
}

static void select_top(eng_sample_pair *p, int n, int m) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        eng_sample_pair pivot = p[lo + (hi - lo) / 2];
        int i = lo, j = hi;
        while (i <= j) {
            while (pair_greater(&p[i], &pivot)) i++;
            while (pair_greater(&pivot, &p[j])) j--;
            if (i <= j) swap(&p[i++], &p[j--]);
        }
        if (m - 1 <= j) hi = j;
        else if (m - 1 >= i) lo = i;
        else break;
    }
}

static int cmp_desc(const void *a, const void *b) {
    const eng_sample_pair *x = a, *y = b;
    return pair_greater(x, y) ? -1 : pair_greater(y, x) ? 1 : 0;
}

/* The k-th largest of the finite-or-+inf values of x[V] (k >= 1), by a
 * min-heap of the k largest seen so far in heap[k]; returns -inf when fewer
 * than k values are not -inf. */
static float kth_largest(const float *x, int V, int k, float *heap) {
    int n = 0;
    for (int v = 0; v < V; v++) {
        float a = x[v];
        if (a == -INFINITY) continue;
        if (n < k) { /* sift up */
            int i = n++;
            while (i > 0 && heap[(i - 1) / 2] > a) {
                heap[i] = heap[(i - 1) / 2];
                i = (i - 1) / 2;
            }
            heap[i] = a;
        } else if (a > heap[0]) { /* replace the minimum, sift down */
            int i = 0;
            for (;;) {
                int c = 2 * i + 1;
                if (c >= k) break;
                if (c + 1 < k && heap[c + 1] < heap[c]) c++;
                if (heap[c] >= a) break;
                heap[i] = heap[c];
                i = c;
            }
            heap[i] = a;
        }
    }
    return n < k ? -INFINITY : heap[0];
}

void eng_sampler_filter(eng_sampler *s, const float *logits) {
    const int V = s->V;
    const float inv_t = (float)(1.0 / s->p.temperature);
    int n = 0;
    s->kept = s->pairs;
    s->n_kept = 0;
    if (s->p.top_k > 0 && s->p.top_k < V) {
        /* top-k: keep every logit >= the k-th largest (scaling by 1/T > 0
         * keeps the order, so only the survivors are scaled) */
        float *heap = (float *)(void *)(s->pairs + V / 2); /* scratch: k floats in the upper half */
        const int k = (int)s->p.top_k;
        float kth = k <= V / 2 ? kth_largest(logits, V, k, heap) : -INFINITY;
        if (k > V / 2) {
            /* rare: k above half the vocabulary; fall back to sorting all */
            for (int v = 0; v < V; v++)
                if (logits[v] != -INFINITY) s->pairs[n++] = (eng_sample_pair){logits[v], v};
            if (n > k) {
                select_top(s->pairs, n, k);
                kth = s->pairs[0].v;
                for (int i = 1; i < k; i++) kth = fminf(kth, s->pairs[i].v);
            }
            n = 0;
        }
        for (int v = 0; v < V; v++)
            if (logits[v] != -INFINITY && logits[v] >= kth) s->pairs[n++] = (eng_sample_pair){logits[v] * inv_t, v};
    } else {
        for (int v = 0; v < V; v++) {
            if (logits[v] == -INFINITY) continue;
            s->pairs[n++] = (eng_sample_pair){logits[v] * inv_t, v};
        }
    }
    if (n == 0) return;
    /* softmax over the survivors */
    float mx = s->pairs[0].v;
    for (int i = 1; i < n; i++) mx = fmaxf(mx, s->pairs[i].v);
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        s->pairs[i].v = expf(s->pairs[i].v - mx);
        sum += s->pairs[i].v;
    }
    for (int i = 0; i < n; i++) s->pairs[i].v = (float)(s->pairs[i].v / sum);
    /* top-p over the top m, m doubling until the kept set ends inside it */
    if (s->p.top_p < 1.0) {
        int m = n < 64 ? n : 64;
        int sorted = 0;
        for (;;) {
            select_top(s->pairs + sorted, n - sorted, m - sorted);
            qsort(s->pairs + sorted, (size_t)(m - sorted), sizeof *s->pairs, cmp_desc);
            sorted = m;
            double cum = 0.0;
            int keep = 0;
            while (keep < m && cum < s->p.top_p) cum += s->pairs[keep++].v;
            if (cum >= s->p.top_p || m == n) {
                n = keep;
                break;
            }
            m = m * 2 < n ? m * 2 : n;
        }
    }
    /* renormalise the kept set */
    sum = 0.0;
    for (int i = 0; i < n; i++) sum += s->pairs[i].v;
    for (int i = 0; i < n; i++) s->pairs[i].v = (float)(s->pairs[i].v / sum);
    s->n_kept = n;
}

/* The first index of the largest of x[0, n), NaNs ignored (and 0 when x[0]
 * is NaN): what `for v: if (x[v] > x[best]) best = v` returns, but the max
 * runs in 16 independent lanes (eng_max_f32: no chain through a load of
 * x[best]), then one pass finds its first index. */
static int argmax_first(const float *x, int n) {
    if (x[0] != x[0]) return 0; /* nothing compares greater than a NaN x[0] */
    const float mx = eng_max_f32(x, n, x[0]);
    for (int v = 0; v < n; v++)
        if (x[v] == mx) return v;
    return 0;
}

int32_t eng_sample(eng_sampler *s, const float *logits, eng_rng *rng) {
    if (s->p.temperature == 0.0) return argmax_first(logits, s->V);
    eng_sampler_filter(s, logits);
    double u = eng_rng_uniform(rng);
    if (s->n_kept == 0) return 0;
    double total = 0.0;
    for (int i = 0; i < s->n_kept; i++) total += s->kept[i].v;
    double target = u * total, cum = 0.0;
    for (int i = 0; i < s->n_kept; i++) {
        cum += s->kept[i].v;
        if (target < cum) return s->kept[i].i;
    }
    return s->kept[s->n_kept - 1].i;
}

/* The best row kernels this CPU runs (norm_rope_act.h), chosen once. */
float eng_logsumexp(const float *x, int n) {
    static const eng_nra_kernels *k;
    const eng_nra_kernels *t = __atomic_load_n(&k, __ATOMIC_ACQUIRE);
    if (!t) {
        t = eng_nra_for(cpu_isa_detect());
        __atomic_store_n(&k, t, __ATOMIC_RELEASE);
    }
    return t->logsumexp(x, n);
}
