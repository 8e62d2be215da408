/* synthetic_prompts.h: the synthetic prompts of a case, in one place, for
 * every backend that makes them: the native engine (engine/, every family) and the
 * worker backend (plugins/worker), which sends them to a foreign engine, so
 * both engines run the same token ids for the same case and seed.
 *
 * Prompt b of a case seeded with seed holds Tp token ids, each uniform in
 * [3, V) (0..2 are OPT's pad, bos and eos), drawn from prompt b's own
 * generator: splitmix64 over the state splitmix64(s ^ splitmix64(b + 0x5eed))
 * with s = seed ^ "prompt", the stream engine/rollout/sampling.c gives each row.
 * The ids depend on (seed, b, V, Tp) only, never on the batch composition.
 * Header-only (static inline), so it needs no library of its own.
 */
#ifndef BENCHCTL_SYNTHETIC_PROMPTS_H
#define BENCHCTL_SYNTHETIC_PROMPTS_H

#include <stdint.h>

#define BC_PROMPT_GOLDEN 0x9e3779b97f4a7c15ull

/* splitmix64's output function of a state. */
static inline uint64_t bc_prompt_finalize(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ids[0 .. Tp) := prompt b of a case seeded with seed, for a vocabulary of
 * V > 3 tokens. */
static inline void bc_synthetic_prompt(uint64_t seed, uint64_t b, int32_t V, int32_t *ids, int32_t Tp) {
    uint64_t row_key = bc_prompt_finalize(b + 0x5eed + BC_PROMPT_GOLDEN);
    uint64_t state = bc_prompt_finalize(((seed ^ 0x70726f6d7074ull) ^ row_key) + BC_PROMPT_GOLDEN);
    for (int32_t t = 0; t < Tp; t++) {
        state += BC_PROMPT_GOLDEN;
        ids[t] = 3 + (int32_t)(bc_prompt_finalize(state) % (uint64_t)(V - 3));
    }
}

#endif
