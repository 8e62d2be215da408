/* synthetic.c: what OPT's synthetic weights derive beyond the tensor
 * table's rules (opt_family.c; engine/weights/tensor_table.h), so any preset
 * runs with no download (docs/opt.md, "Synthetic weights").
 *
 * Values, like Hugging Face's OPT init (init_std 0.02), with two changes
 * that keep greedy generation from collapsing (docs/opt.md has the numbers):
 *   embeddings and matrices  ~ N(0, 0.02^2) (the engine's Irwin-Hall
 *                               approximation, synthetic.h)
 *   q_proj and k_proj        ~ N(0, (2.5 / sqrt(C))^2): attention scores get
 *                               a standard deviation near 6, so attention is
 *                               peaked as in a trained model instead of
 *                               averaging the context
 *   fc2 bias                 -m * (row sums of fc2), m = E[relu(z)] for the
 *                               fc1 pre-activation z ~ N(0, 0.02^2 C): cancels
 *                               the constant direction relu's positive mean
 *                               would add to every position in every layer
 *                               (computed here, after the table's fill)
 *   other biases 0, layer-norm gamma 1, beta 0 (as Hugging Face)
 */
#include "opt_model.h"
#include "precision.h"

#include <math.h>
#include <stddef.h>

/* fc2's bias from fc2 as filled (the family's synthetic_done, family.h). */
void opt_synthetic_done(eng_weights *base) {
    const opt_weights *w = (const opt_weights *)base;
    const opt_hparams *hp = &w->hp;
    const int L = hp->s.n_layers;
    const size_t C = (size_t)hp->s.hidden_size, F = (size_t)hp->s.ffn_size;
    const float std = 0.02f; /* the table's for fc1 (opt_family.c) */
    const double m = std * sqrt((double)C) / sqrt(2.0 * 3.14159265358979323846);
    for (int l = 0; l < L; l++) {
        const eng_matrix *w2 = &w->layers[l].fc2; /* [C, F] */
        const bc_precision_ops *prec = eng_dtype_precision(w2->dtype);
        const float *w2_scale = w2->dtype == ENG_I8 ? eng_i8_scales(w2->data, C, F) : NULL;
        for (size_t c = 0; c < C; c++) {
            double sum = 0.0;
            if (w2->dtype == ENG_W8A8) { /* packed rows: the sum is the correction's (kernels.h) */
                sum = (double)(eng_w8a8_corrections(w2->data, C, F)[c] / 128) * eng_w8a8_scales(w2->data, C, F)[c];
                w->layers[l].fc2_bias[c] = (float)(-m * sum);
                continue;
            }
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
}
