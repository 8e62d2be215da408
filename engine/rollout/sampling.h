/* sampling.h: next-token selection from one row's logits[V], as transformers'
 * generate() does it: greedy when temperature == 0, else temperature, then
 * top-k, then top-p, then a draw from the renormalised distribution. Every
 * row has its own generator (eng_rng_for_row), so a run is reproducible
 * whatever the batch composition or thread count. Device-independent: a CUDA
 * path copies logits back and reuses this.
 */
#ifndef ENG_SAMPLING_H
#define ENG_SAMPLING_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"

/* A row's generator: splitmix64 over a 64-bit state. */
typedef struct eng_rng {
    uint64_t state;
} eng_rng;

/* The generator of row `row` of a run seeded with seed. */
eng_rng eng_rng_for_row(uint64_t seed, uint64_t row);
/* The seed of a run's iteration-th stream (sample_stream = "per_iteration"):
 * a different stream per iteration, the same from run to run. */
uint64_t eng_rng_stream_seed(uint64_t seed, uint64_t iteration);
uint64_t eng_rng_next(eng_rng *r);
/* Uniform in [0, 1), 53 bits. */
double eng_rng_uniform(eng_rng *r);

/* How the next token is chosen: benchctl's bc_sampling without its ABI
 * framing (the engine keeps its own copy, so the ABI struct can grow). */
typedef struct eng_sampling {
    double temperature; /* 0 = greedy */
    double top_p;       /* (0, 1]; 1 = off */
    int64_t top_k;      /* 0 = off */
    uint64_t seed;      /* of the rows' generators (and of synthetic prompts) */
} eng_sampling;

typedef struct eng_sample_pair {
    float v;
    int32_t i;
} eng_sample_pair;

/* Sampling parameters and scratch for one vocabulary size. Not thread-safe:
 * one sampler per thread. */
typedef struct eng_sampler {
    int V;
    eng_sampling p;          /* temperature, top_p, top_k (seed unused here) */
    eng_sample_pair *pairs;  /* [V] scratch, owned */
    int n_kept;              /* after eng_sampler_filter: kept tokens ... */
    eng_sample_pair *kept;   /* ... pairs[0..n_kept): token and probability */
} eng_sampler;

bc_status eng_sampler_init(eng_sampler *s, int V, const eng_sampling *p, bc_error *err);
void eng_sampler_free(eng_sampler *s);

/* Applies temperature, top-k and top-p to logits[V] (left as they are) and leaves the allowed tokens with their renormalised probabilities
 * in s->kept[0..n_kept). Tokens whose logit is -inf are never kept; when all
 * are -inf, the result is empty. Not used for greedy. */
void eng_sampler_filter(eng_sampler *s, const float *logits);

/* The next token of one row: argmax (first maximum) when temperature == 0,
 * else a draw after eng_sampler_filter with one uniform from rng. logits[V]
 * are left as they are. */
int32_t eng_sample(eng_sampler *s, const float *logits, eng_rng *rng);

/* log(sum_v exp(x[v])) over x[n], n >= 1, computed as max + log(sum exp(x -
 * max)): a token's natural-log probability at temperature 1 is x[id] minus
 * it. -inf when every entry is -inf. */
float eng_logsumexp(const float *x, int n);

#endif
