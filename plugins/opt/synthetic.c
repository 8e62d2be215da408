/* synthetic.c: seeded, deterministic synthetic OPT weights, so any preset runs
 * with no download (docs/opt.md, "Synthetic weights").
 *
 * Every tensor has a fixed id (its place in the list below) and every element
 * its index i in the tensor, so element i of tensor t is a pure function of
 * (seed, t, i): key = splitmix64(seed ^ splitmix64(t + 1)), then
 * r = splitmix64(key + i). The result does not depend on the thread count
 * or the order of generation, and chunks are generated in parallel.
 *
 * Values, like Hugging Face's OPT init (init_std 0.02), with two changes
 * that keep greedy generation from collapsing (docs/opt.md has the numbers):
 *   embeddings and matrices  ~ N(0, 0.02^2), approximated by the sum of the
 *                               four 16-bit uniforms of r (Irwin-Hall, mean
 *                               and variance matched, |x| <= 2 sqrt(3) sigma)
 *   q_proj and k_proj        ~ N(0, (2.5 / sqrt(C))^2): attention scores get
 *                               a standard deviation near 6, so attention is
 *                               peaked as in a trained model instead of
 *                               averaging the context
 *   fc2 bias                 -m * (row sums of fc2), m = E[relu(z)] for the
 *                               fc1 pre-activation z ~ N(0, 0.02^2 C): cancels
 *                               the constant direction relu's positive mean
 *                               would add to every position in every layer
 *   other biases 0, layer-norm gamma 1, beta 0 (as Hugging Face)
 * Values are rounded to the weight dtype by its precision ops (precision.h:
 * the precision plugin's from_f32, round to nearest even), in bulk.
 */
#include "opt_model.h"
#include "precision.h"
#include "synthetic.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bc_status opt_weights_init_synthetic(opt_weights *w, uint64_t seed, bc_error *err) {
    const opt_hparams *hp = &w->hp;
    const int L = hp->s.n_layers;
    const float std = 0.02f;
    size_t cap = 8 + (size_t)L * 16, n = 0;
    eng_fill_tensor *list = calloc(cap, sizeof *list);
    if (!list) return bc_error_set(err, BC_ERR_NOMEM, "synthetic weights: no memory for the tensor list");
    uint64_t tid = 0;
#define ADD(ptr, dt, count, kd)                                                               \
    do {                                                                                      \
        uint64_t id_ = tid++;                                                                 \
        if (ptr) {                                                                            \
            list[n] = (eng_fill_tensor){(void *)(ptr), (dt), (size_t)(count),                     \
                                    eng_synthetic_key(seed, id_), (kd), std, 1};     \
            n++;                                                                              \
        }                                                                                     \
    } while (0)
#define ADD_MAT(m)                                                                            \
    do {                                                                                      \
        ADD((m).data, (m).dtype, (size_t)(m).rows * (size_t)(m).cols, ENG_FILL_NORMAL);           \
        if ((m).data) list[n - 1].cols = (size_t)(m).cols;                                    \
    } while (0)
    const size_t C = (size_t)hp->s.hidden_size, F = (size_t)hp->s.ffn_size;
    const float qk_std = (float)(2.5 / sqrt((double)C));
    ADD_MAT(w->embed_tokens);
    ADD_MAT(w->embed_positions);
    ADD_MAT(w->project_in);
    ADD_MAT(w->project_out);
    ADD(w->final_ln_gamma, ENG_F32, C, ENG_FILL_ONES);
    ADD(w->final_ln_beta, ENG_F32, C, ENG_FILL_ZEROS);
    for (int l = 0; l < L; l++) {
        opt_layer_weights *lw = &w->layers[l];
        tid = 16 + (uint64_t)l * 16;
        ADD_MAT(lw->q_proj);
        list[n - 1].std = qk_std;
        ADD_MAT(lw->k_proj);
        list[n - 1].std = qk_std;
        ADD_MAT(lw->v_proj); ADD_MAT(lw->out_proj);
        ADD(lw->q_bias, ENG_F32, C, ENG_FILL_ZEROS); ADD(lw->k_bias, ENG_F32, C, ENG_FILL_ZEROS);
        ADD(lw->v_bias, ENG_F32, C, ENG_FILL_ZEROS); ADD(lw->out_bias, ENG_F32, C, ENG_FILL_ZEROS);
        ADD(lw->ln1_gamma, ENG_F32, C, ENG_FILL_ONES); ADD(lw->ln1_beta, ENG_F32, C, ENG_FILL_ZEROS);
        ADD_MAT(lw->fc1); ADD(lw->fc1_bias, ENG_F32, F, ENG_FILL_ZEROS);
        ADD_MAT(lw->fc2); ADD(lw->fc2_bias, ENG_F32, C, ENG_FILL_ZEROS);
        ADD(lw->ln2_gamma, ENG_F32, C, ENG_FILL_ONES); ADD(lw->ln2_beta, ENG_F32, C, ENG_FILL_ZEROS);
    }
#undef ADD_MAT
#undef ADD
    bc_status st = eng_synthetic_fill(list, n, err);
    free(list);
    if (st != BC_OK) return st;
    /* fc2 bias: cancel the mean of relu(fc1(x)) (see above) */
    const double m = std * sqrt((double)C) / sqrt(2.0 * 3.14159265358979323846);
    for (int l = 0; l < L; l++) {
        const eng_matrix *w2 = &w->layers[l].fc2; /* [C, F] */
        const bc_precision_ops *prec = eng_dtype_precision(w2->dtype);
        const float *w2_scale = w2->dtype == ENG_I8 ? eng_i8_scales(w2->data, C, F) : NULL;
        for (size_t c = 0; c < C; c++) {
            double sum = 0.0;
            float row[256];
            for (size_t f0 = 0; f0 < F; f0 += 256) {
                const size_t k = F - f0 < 256 ? F - f0 : 256;
                prec->to_f32((const char *)w2->data + (c * F + f0) * prec->element_size, row, k);
                for (size_t f = 0; f < k; f++) sum += row[f];
            }
            if (w2_scale) sum *= w2_scale[c];
            w->layers[l].fc2_bias[c] = (float)(-m * sum);
        }
    }
    return BC_OK;
}
