/* golden_check.h: the checks of a family's engine against Hugging Face
 * transformers' golden data (golden_check.c), shared by tests/opt and
 * tests/llama: the golden.bin reader (format: tools/golden/README.md), the
 * logits comparison, the forward + greedy decode case and the rollout case.
 * Include after cmocka.h.
 */
#ifndef BC_GOLDEN_CHECK_H
#define BC_GOLDEN_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "forward.h"

enum { G_F32 = 0, G_I32 = 1 };

typedef struct golden_array {
    char name[96];
    int dtype, ndim;
    int64_t dims[4];
    size_t numel;
    void *data; /* owned; float or int32_t */
} golden_array;
typedef struct golden_file {
    golden_array *a;
    int n;
} golden_file;
typedef struct golden_stats {
    double max_diff, scale;
    int mismatches, argmax_checked, argmax_mismatches;
} golden_stats;
typedef struct golden_case_cfg {
    const char *model;  /* checkpoint directory under the family's tests/<family>/golden */
    const char *golden; /* whose golden.bin */
    eng_dtype dtype;
    int isa;            /* kernel family forced (eng_isa), -1 = auto */
    double tol;         /* the precision plugin's rel_tolerance, set in main */
} golden_case_cfg;
/* How a golden rollout runs: shared prefill; continuous batching on
 * `capacity` rows (0: a static batch); response lengths uniform within
 * min_ratio of the golden length (0: fixed). */
typedef struct rollout_mode {
    int shared_prefill, capacity;
    double min_ratio;
} rollout_mode;

void golden_free(golden_file *g);
/* Reads path into g; on failure prints why and returns 0. */
int golden_read(golden_file *g, const char *path);
/* The array "<c>.<what>", failing the test when absent or of another type. */
const golden_array *golden_get(const golden_file *g, const char *c, const char *what, int dtype, int ndim);
/* Compares rows of V logits where row_ok[r] (NULL: all); see golden_check.c. */
int compare_rows(const char *label, const float *got, const float *ref, int n_rows, int per_b, int V,
                 const int *row_ok, double tol, golden_stats *st);
/* The model on w with the case's kernel family; 0 (skip) when this CPU cannot run it. */
int model_init(eng_model *m, const eng_weights *w, const golden_case_cfg *cfg);
int argmax_no_eos(const float *x, int V, int eos);
/* Prefill + decode logits and greedy tokens of case c against g. */
void run_case(eng_model *m, const eng_weights *w, const golden_file *g, const char *c, const golden_case_cfg *cfg,
              golden_stats *st);
/* The engine's rollout of case c in mode against generate()'s tokens;
 * returns the mismatches. */
int rollout_case(eng_model *m, const eng_weights *w, const golden_file *g, const char *c, const char *model,
                 rollout_mode mode);

/* Runs a family's golden tests with cmocka as `group`: first (NULL: none),
 * then for the best kernel family and each eng_isa forced, `golden` on every
 * cfg and `rollout` on the first n_rollout (fp32) ones, named
 * golden_<model>[_lora]_<dtype>[_<isa>] and rollout_golden_<model>[_lora][_<isa>];
 * each cfg's tol is its precision plugin's rel_tolerance. Returns cmocka's
 * result (1 when cfgs are out of order). */
int golden_main(const char *group, const golden_case_cfg *cfgs, size_t n_cfgs, size_t n_rollout,
                void (*golden)(void **), void (*rollout)(void **), void (*first)(void **), const char *first_name);

#endif
