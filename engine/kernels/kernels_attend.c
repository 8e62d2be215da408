/* kernels_attend.c: the order of work of attend_group (kernels.h) for the
 * SIMD variants, written once over a variant's attention parts
 * (eng_attend_parts, kernels_impl.h): the G queries' scores against the
 * shared prefix a block of ENG_ATTEND_KB keys at a time (score_group: each K
 * vector loaded and converted once for several queries), then each query's
 * own keys, each query's softmax, and the weighted V sums in the same order
 * (vsum_group over a block of prefix V rows for all queries, then each
 * query's own rows). Each output is the same fp32 chain in key order as with
 * vsum alone: blocks only spill the running sums to memory and back, which
 * changes no bit. G = 1 (attend_split) runs score and vsum only.
 */
#include "kernels_impl.h"

void eng_attend_group_run(const eng_attend_parts *a, float *out, size_t ldo, const float *q, size_t ldq, int G,
                          const void *kp, const void *vp, int np, const void *k, const void *v, size_t ld_kv,
                          eng_dtype dt, const uint8_t *keep, size_t ld_keep, int S, int D, float *scores)
{
    float inv[ENG_ATTEND_GROUP_MAX];
    if (np > S)
        np = S;
    for (int b0 = 0; b0 < np; b0 += ENG_ATTEND_KB) {
        const int b1 = np - b0 < ENG_ATTEND_KB ? np : b0 + ENG_ATTEND_KB;
        if (G > 1)
            a->score_group(scores, (size_t)S, q, ldq, G, kp, vp, dt, b0, b1, D);
        else
            a->score(scores, q, kp, vp, dt, b0, b1, D);
    }
    for (int g = 0; g < G; g++) {
        float *sc = scores + (size_t)g * S;
        a->score(sc, q + (size_t)g * ldq, (const char *)k + (size_t)g * ld_kv, (const char *)v + (size_t)g * ld_kv,
                 dt, np, S, D);
        inv[g] = a->softmax(sc, keep ? keep + (size_t)g * ld_keep : NULL, S);
    }
    for (int b0 = 0; b0 < np; b0 += ENG_ATTEND_KB) {
        const int b1 = np - b0 < ENG_ATTEND_KB ? np : b0 + ENG_ATTEND_KB;
        if (G > 1) {
            float pw[ENG_ATTEND_GROUP_MAX * ENG_ATTEND_KB];
            unsigned char any[ENG_ATTEND_KB];
            for (int s = b0; s < b1; s++) {
                any[s - b0] = 0;
                for (int g = 0; g < G; g++) {
                    const float p = scores[(size_t)g * S + s] * inv[g];
                    pw[g * ENG_ATTEND_KB + s - b0] = p;
                    any[s - b0] |= p != 0.0f;
                }
            }
            a->vsum_group(out, ldo, pw, any, G, vp, dt, b0, b1, D, b0 == 0);
        } else
            a->vsum(out, scores, inv[0], vp, dt, b0, b1, D, b0 == 0);
    }
    for (int g = 0; g < G; g++)
        a->vsum(out + (size_t)g * ldo, scores + (size_t)g * S, inv[g], (const char *)v + (size_t)g * ld_kv, dt, np,
                S, D, np == 0);
}
