/* golden_check.c: the golden checks every family's test_golden.c runs
 * (golden_check.h): the golden.bin reader (tools/golden/README.md), logits
 * compared row by row, the KV-cached forward and greedy decode against
 * transformers, and the engine's rollout (static and continuous batching,
 * shared prefill, drawn lengths) against generate()'s tokens.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "golden_check.h"
#include "device.h"
#include "precision.h"
#include "rollout.h"

/* ------------------------------------------------------- golden reader */




void golden_free(golden_file *g) {
    for (int i = 0; i < g->n; i++) free(g->a[i].data);
    free(g->a);
    memset(g, 0, sizeof *g);
}

static int rd(FILE *f, void *p, size_t n) { return fread(p, 1, n, f) == n; }

/* Reads path into g; on failure prints why and returns 0. */
int golden_read(golden_file *g, const char *path) {
    memset(g, 0, sizeof *g);
    FILE *f = fopen(path, "rb");
    if (!f) {
        print_error("%s: cannot open\n", path);
        return 0;
    }
    char magic[8];
    uint32_t version, n;
    int ok = rd(f, magic, 8) && memcmp(magic, "BCGOLDEN", 8) == 0 && rd(f, &version, 4) && version == 1 &&
             rd(f, &n, 4) && n > 0 && n < 1000;
    if (ok) ok = (g->a = calloc(n, sizeof *g->a)) != NULL;
    for (uint32_t i = 0; ok && i < n; i++) {
        golden_array *a = &g->a[i];
        uint32_t nl, dt, nd;
        ok = rd(f, &nl, 4) && nl < sizeof a->name && rd(f, a->name, nl) && rd(f, &dt, 4) && dt <= 1 &&
             rd(f, &nd, 4) && nd <= 4 && rd(f, a->dims, 8 * nd);
        if (!ok) break;
        g->n = (int)i + 1;
        a->dtype = (int)dt;
        a->ndim = (int)nd;
        a->numel = 1;
        for (uint32_t d = 0; d < nd; d++) {
            ok = ok && a->dims[d] >= 0 && a->dims[d] < (1 << 24);
            a->numel *= (size_t)a->dims[d];
        }
        ok = ok && a->numel < (1u << 26) && (a->data = malloc(4 * a->numel + 4)) != NULL && rd(f, a->data, 4 * a->numel);
    }
    if (ok) { /* nothing may follow the last array */
        char extra;
        ok = fread(&extra, 1, 1, f) == 0;
    }
    fclose(f);
    if (!ok) {
        print_error("%s: not a version-1 golden file, or truncated\n", path);
        golden_free(g);
    }
    return ok;
}

const golden_array *golden_get(const golden_file *g, const char *c, const char *what, int dtype, int ndim) {
    char name[96];
    snprintf(name, sizeof name, "%s.%s", c, what);
    for (int i = 0; i < g->n; i++)
        if (strcmp(g->a[i].name, name) == 0) {
            if (g->a[i].dtype != dtype || g->a[i].ndim != ndim) fail_msg("golden array %s: dtype/ndim mismatch", name);
            return &g->a[i];
        }
    fail_msg("golden file lacks %s", name);
    return NULL;
}

/* ------------------------------------------------------------- checks */


/* Compares rows of V logits where row_ok[r] (NULL: all); row r is batch row
 * r / per_b, position r % per_b. Prints the first mismatches; accumulates
 * into st. Returns the number of bad values. */
int compare_rows(const char *label, const float *got, const float *ref, int n_rows, int per_b, int V,
                        const int *row_ok, double tol, golden_stats *st) {
    double scale = 1.0;
    for (int r = 0; r < n_rows; r++)
        if (!row_ok || row_ok[r])
            for (int v = 0; v < V; v++) scale = fmax(scale, fabs((double)ref[(size_t)r * V + v]));
    int bad = 0;
    double max_diff = 0;
    for (int r = 0; r < n_rows; r++) {
        if (row_ok && !row_ok[r]) continue;
        const float *g = got + (size_t)r * V, *e = ref + (size_t)r * V;
        int ga = 0, ea = 0, e2 = -1;
        for (int v = 0; v < V; v++) {
            double d = fabs((double)g[v] - (double)e[v]);
            if (!(d <= tol * scale)) { /* NaN fails too */
                if (bad < 5)
                    print_error("  %s row %d pos %d token %d: got %.6f want %.6f (|diff| %.3g > %.3g)\n", label,
                                r / per_b, r % per_b, v, g[v], e[v], d, tol * scale);
                bad++;
            }
            if (!(d <= max_diff)) max_diff = d;
            if (g[v] > g[ga]) ga = v;
            if (e[v] > e[ea]) {
                e2 = ea;
                ea = v;
            } else if (v != ea && (e2 < 0 || e[v] > e[e2])) {
                e2 = v;
            }
        }
        if (e2 >= 0 && (double)e[ea] - (double)e[e2] > 2 * tol * scale) {
            st->argmax_checked++;
            if (ga != ea) {
                print_error("  %s row %d pos %d: argmax %d, want %d (margin %.3g)\n", label, r / per_b, r % per_b, ga,
                            ea, e[ea] - e[e2]);
                st->argmax_mismatches++;
            }
        }
    }
    st->max_diff = fmax(st->max_diff, max_diff / scale);
    st->scale = fmax(st->scale, scale);
    st->mismatches += bad;
    return bad;
}

/* ------------------------------------------------------------- the test */


/* Loads the model with the case's kernel family; 0 (the test skipped) when
 * this CPU cannot run it. */
int model_init(eng_model *m, const eng_weights *w, const golden_case_cfg *cfg) {
    bc_error err = {0};
    if (cfg->isa > (int)eng_isa_detect()) {
        print_message("  this CPU runs at most %s: %s kernels skipped\n", eng_isa_name(eng_isa_detect()),
                      eng_isa_name((eng_isa)cfg->isa));
        return 0;
    }
    if (eng_model_init_isa(m, w, 2, cfg->isa, &err) != BC_OK) fail_msg("%s", err.message);
    if (cfg->isa >= 0) assert_int_equal(m->k->isa, cfg->isa);
    return 1;
}

int argmax_no_eos(const float *x, int V, int eos) {
    int best = eos == 0 ? 1 : 0;
    for (int v = 0; v < V; v++)
        if (v != eos && x[v] > x[best]) best = v;
    return best;
}

void run_case(eng_model *m, const eng_weights *w, const golden_file *g, const char *c,
                     const golden_case_cfg *cfg, golden_stats *st) {
    const int V = w->shape.vocab_size;
    const golden_array *ids = golden_get(g, c, "input_ids", G_I32, 2);
    const golden_array *mask = golden_get(g, c, "attention_mask", G_I32, 2);
    const golden_array *pre = golden_get(g, c, "prefill_logits", G_F32, 3);
    const golden_array *dids = golden_get(g, c, "decode_input_ids", G_I32, 2);
    const golden_array *dlog = golden_get(g, c, "decode_logits", G_F32, 3);
    const golden_array *nrs = golden_get(g, c, "num_return_sequences", G_I32, 1);
    const golden_array *gen = golden_get(g, c, "generate_tokens", G_I32, 2);
    const int B = (int)ids->dims[0], T = (int)ids->dims[1], K = (int)dids->dims[1];
    const int R = ((const int32_t *)nrs->data)[0], N = (int)gen->dims[1];
    assert_int_equal(pre->dims[2], V);
    assert_int_equal(gen->dims[0], B * R);
    const int32_t *id = ids->data, *mk = mask->data;
    bc_error err = {0};
    char label[128];

    /* Prefill + K decode steps on the B rows. */
    const int Smax = T + K;
    eng_kv_cache kv;
    if (eng_kv_cache_alloc(&kv, &w->shape, eng_kv_dtype(cfg->dtype), B, Smax, &err) != BC_OK) fail_msg("%s", err.message);
    uint8_t *mbuf = calloc((size_t)B * Smax, 1);
    float *logits = malloc(sizeof(float) * (size_t)B * T * V);
    int *row_ok = malloc(sizeof(int) * (size_t)B * T);
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)B * R);
    assert_true(mbuf && logits && row_ok && tok);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            mbuf[(size_t)b * Smax + t] = (uint8_t)mk[b * T + t];
            row_ok[b * T + t] = mk[b * T + t];
        }
    if (eng_forward(m, &kv, id, mbuf, Smax, B, T, ENG_LOGITS_ALL, logits, &err) != BC_OK) fail_msg("%s", err.message);
    snprintf(label, sizeof label, "%s %s %s prefill", cfg->model, eng_dtype_name(cfg->dtype), c);
    compare_rows(label, logits, pre->data, B * T, T, V, row_ok, cfg->tol, st);
    for (int k = 0; k < K; k++) {
        for (int b = 0; b < B; b++) {
            tok[b] = ((const int32_t *)dids->data)[b * K + k];
            mbuf[(size_t)b * Smax + T + k] = 1;
        }
        if (eng_forward(m, &kv, tok, mbuf, Smax, B, 1, ENG_LOGITS_LAST, logits, &err) != BC_OK)
            fail_msg("%s", err.message);
        snprintf(label, sizeof label, "%s %s %s decode step %d", cfg->model, eng_dtype_name(cfg->dtype), c, k);
        compare_rows(label, logits, (const float *)dlog->data + (size_t)k * B * V, B, 1, V, NULL, cfg->tol, st);
    }
    eng_kv_cache_free(&kv);
    free(mbuf);

    /* Greedy generation on the expanded rows (p0s0, p0s1, ...), EOS
     * suppressed for all N steps, as generate() with min_new_tokens == N. */
    const int BR = B * R, SR = T + N;
    if (eng_kv_cache_alloc(&kv, &w->shape, eng_kv_dtype(cfg->dtype), BR, SR, &err) != BC_OK) fail_msg("%s", err.message);
    int32_t *xids = malloc(sizeof(int32_t) * (size_t)BR * T), *out = malloc(sizeof(int32_t) * (size_t)BR * N);
    mbuf = calloc((size_t)BR * SR, 1);
    float *lg = malloc(sizeof(float) * (size_t)BR * V);
    assert_true(xids && out && mbuf && lg);
    for (int r = 0; r < BR; r++)
        for (int t = 0; t < T; t++) {
            xids[r * T + t] = id[(r / R) * T + t];
            mbuf[(size_t)r * SR + t] = (uint8_t)mk[(r / R) * T + t];
        }
    if (eng_forward(m, &kv, xids, mbuf, SR, BR, T, ENG_LOGITS_LAST, lg, &err) != BC_OK) fail_msg("%s", err.message);
    for (int n = 0; n < N; n++) {
        for (int r = 0; r < BR; r++) {
            out[r * N + n] = argmax_no_eos(lg + (size_t)r * V, V, w->shape.eos_token_id);
            tok[r] = out[r * N + n];
            mbuf[(size_t)r * SR + T + n] = 1;
        }
        if (n + 1 < N && eng_forward(m, &kv, tok, mbuf, SR, BR, 1, ENG_LOGITS_LAST, lg, &err) != BC_OK)
            fail_msg("%s", err.message);
    }
    int tok_bad = 0;
    const int32_t *want = gen->data;
    for (int i = 0; i < BR * N; i++)
        if (out[i] != want[i] && tok_bad++ < 5 && cfg->dtype == ENG_F32)
            print_error("  %s %s %s greedy: row %d step %d: token %d, generate() gave %d\n", cfg->model,
                        eng_dtype_name(cfg->dtype), c, i / N, i % N, out[i], want[i]);
    if (cfg->dtype == ENG_F32) {
        if (tok_bad) print_error("  %s %s: %d of %d greedy tokens differ\n", cfg->model, c, tok_bad, BR * N);
        st->mismatches += tok_bad;
    } else if (tok_bad) {
        print_message("  (%s %s %s: %d of %d greedy tokens differ from fp32 transformers; not asserted)\n",
                      cfg->model, eng_dtype_name(cfg->dtype), c, tok_bad, BR * N);
    }
    eng_kv_cache_free(&kv);
    free(mbuf);
    free(lg);
    free(xids);
    free(out);
    free(tok);
    free(logits);
    free(row_ok);
}


/* The engine's rollout (rollout.h) on the golden prompts: the prompts go
 * through a prompts file (left-padded by the rollout), expansion makes R rows
 * per prompt, greedy generation with EOS suppressed must give generate()'s
 * tokens, and post-processing must leave prompt, response and mask in place.
 * With drawn lengths, a row of length n has generate()'s first n - 1 tokens,
 * then EOS, then the pad id (mask 0); continuous batching gives the same. */
int rollout_case(eng_model *m, const eng_weights *w, const golden_file *g, const char *c, const char *model,
                        rollout_mode mode) {
    const int shared_prefill = mode.shared_prefill;
    const golden_array *ids = golden_get(g, c, "input_ids", G_I32, 2);
    const golden_array *mask = golden_get(g, c, "attention_mask", G_I32, 2);
    const golden_array *nrs = golden_get(g, c, "num_return_sequences", G_I32, 1);
    const golden_array *gen = golden_get(g, c, "generate_tokens", G_I32, 2);
    const int B = (int)ids->dims[0], T = (int)ids->dims[1], R = ((const int32_t *)nrs->data)[0];
    const int N = (int)gen->dims[1];
    const int32_t *id = ids->data, *mk = mask->data, *want = gen->data;

    char path[64];
    snprintf(path, sizeof path, "/tmp/bc_golden_prompts_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++)
            if (mk[b * T + t]) fprintf(f, "%d ", id[b * T + t]);
        fputc('\n', f);
    }
    fclose(f);

    eng_prompts prompts;
    bc_error err = {0};
    bc_status st = eng_prompts_read(&prompts, path, w->shape.vocab_size, &err);
    unlink(path);
    if (st != BC_OK) fail_msg("prompts %s %s: %s", model, c, err.message);
    eng_rollout_params p = {.batch_size = B, .samples_per_prompt = R, .response_length = N,
                            .sampling = {.temperature = 0, .top_p = 1, .top_k = 0, .seed = 1},
                            .stop_at_eos = 0, .shared_prefill = shared_prefill, .prompts = &prompts,
                            .continuous = mode.capacity > 0, .capacity = mode.capacity};
    if (mode.min_ratio > 0) p.lengths = (eng_length_dist){.kind = ENG_LENGTHS_UNIFORM, .min_ratio = mode.min_ratio};
    eng_rollout ro;
    st = eng_rollout_init(&ro, &w->shape, &p, &err);
    eng_prompts_free(&prompts);
    if (st == BC_OK) st = eng_rollout_acquire(&ro, m, &err);
    if (st == BC_OK) st = eng_rollout_expand(&ro, &err);
    if (st == BC_OK) st = eng_rollout_generate(&ro, m, &err);
    if (st == BC_OK) st = eng_rollout_post_process(&ro, &err);
    if (st != BC_OK) fail_msg("rollout %s %s: %s", model, c, err.message);

    int bad = 0;
    assert_int_equal(ro.R, B * R);
    assert_int_equal(ro.Tp, T);
    if (mode.min_ratio == 0) assert_int_equal(ro.returned_len, N);
    assert_int_equal(ro.response_start, T);
    int64_t useful = 0;
    for (int r = 0; r < B * R; r++) {
        const int32_t *row = ro.seq + (size_t)r * ro.Stot;
        const uint8_t *rm = ro.mask + (size_t)r * ro.Stot;
        for (int t = 0; t < T; t++) {
            int real = mk[(r / R) * T + t];
            if (rm[t] != real || (real && row[t] != id[(r / R) * T + t])) {
                if (bad++ < 5) print_error("  rollout %s %s: row %d prompt pos %d: token %d mask %d, want %d mask %d\n",
                                           model, c, r, t, row[t], rm[t], id[(r / R) * T + t], real);
            }
        }
        const int n = ro.row_len[r];
        useful += n;
        for (int k = 0; k < N; k++) {
            const int32_t w_tok = mode.min_ratio == 0 || k < n - 1 ? want[r * N + k]
                                  : k == n - 1                 ? ro.eos_id
                                                               : ro.pad_id;
            const int w_mask = mode.min_ratio == 0 || k < n;
            if (row[T + k] != w_tok || rm[T + k] != w_mask) {
                if (bad++ < 5)
                    print_error("  rollout %s %s%s, capacity %d, min_ratio %g: row %d (length %d) step %d: token %d "
                                "mask %d, want %d mask %d\n",
                                model, c, shared_prefill ? " (shared prefill)" : "", mode.capacity, mode.min_ratio, r,
                                n, k, row[T + k], rm[T + k], w_tok, w_mask);
            }
        }
    }
    if (ro.n_generated != useful) {
        print_error("  rollout %s %s: %lld tokens generated, the rows' lengths sum to %lld\n", model, c,
                    (long long)ro.n_generated, (long long)useful);
        bad++;
    }
    eng_cpu_rollout_free(&ro, m);
    return bad;
}


int golden_main(const char *group, const golden_case_cfg *cfgs, size_t n_cfgs, size_t n_rollout,
                void (*golden)(void **), void (*rollout)(void **), void (*first)(void **), const char *first_name) {
    enum { N_FAMILIES = 1 + 4 }; /* auto, then each eng_isa */
    const size_t per = n_cfgs + n_rollout, n_max = 1 + N_FAMILIES * per;
    golden_case_cfg *runs = calloc(N_FAMILIES * n_cfgs, sizeof *runs);
    struct CMUnitTest *tests = calloc(n_max, sizeof *tests);
    char(*names)[80] = calloc(n_max, sizeof *names);
    if (!runs || !tests || !names) return 1;
    size_t n = 0;
    if (first) tests[n++] = (struct CMUnitTest){first_name, first, NULL, NULL, NULL};
    for (int f = 0; f < N_FAMILIES; f++) {
        const int isa = f - 1;
        char fam[24] = "";
        if (isa >= 0) snprintf(fam, sizeof fam, "_%s", eng_isa_name((eng_isa)isa));
        for (size_t i = 0; i < n_cfgs; i++) {
            golden_case_cfg *r = &runs[(size_t)f * n_cfgs + i];
            *r = cfgs[i];
            r->isa = isa;
            r->tol = eng_dtype_precision(cfgs[i].dtype)->rel_tolerance; /* the plugin's own */
            snprintf(names[n], sizeof names[n], "golden_%s%s_%s%s", cfgs[i].model,
                     strstr(cfgs[i].golden, "_lora") ? "_lora" : "", eng_dtype_name(cfgs[i].dtype), fam);
            tests[n] = (struct CMUnitTest){names[n], golden, NULL, NULL, r};
            n++;
        }
        for (size_t i = 0; i < n_rollout; i++) {
            if (cfgs[i].dtype != ENG_F32) return 1; /* cfgs out of order */
            snprintf(names[n], sizeof names[n], "rollout_golden_%s%s%s", cfgs[i].model,
                     strstr(cfgs[i].golden, "_lora") ? "_lora" : "", fam);
            tests[n] = (struct CMUnitTest){names[n], rollout, NULL, NULL, &runs[(size_t)f * n_cfgs + i]};
            n++;
        }
    }
    const int rc = _cmocka_run_group_tests(group, tests, n, NULL, NULL);
    free(names);
    free(tests);
    free(runs);
    return rc;
}
