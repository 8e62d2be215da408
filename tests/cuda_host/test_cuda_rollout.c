/* test_cuda_rollout.c: the rollout loop's steps on the CUDA device
 * (cuda_rollout.c) and the device hooks (cuda_backend.c) on the host mock of the device API
 * (mock_device.c), against the CPU rollout on the golden models:
 * identical greedy tokens in every mode (graphs on/off, retain/release,
 * shared prefill, stop_at_eos), top-k 1 sampling equal to greedy, sampled
 * runs reproducible, graph captures per effective batch, device bytes
 * held equal to the plan, what generate measures, the no-device error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuda_backend.h"
#include "cuda_rollout.h"

extern int mock_cuda_devices;

typedef struct fixture {
    opt_weights w;
    opt_cuda_device *dev;
    opt_cuda_model *m;
} fixture;

static int setup_model(void **state, const char *model) {
    fixture *f = calloc(1, sizeof *f);
    bc_error err = {0};
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/opt/golden/%s", BENCHCTL_SOURCE_DIR, model);
    if (!f || opt_weights_load_checkpoint(&f->w, dir, ENG_F32, &err) != BC_OK) {
        fprintf(stderr, "%s: %s\n", dir, err.message);
        free(f);
        return -1;
    }
    mock_cuda_devices = 1;
    if (opt_cuda_device_open(&f->dev, 0, &err) != BC_OK || opt_cuda_model_create(&f->m, f->dev, &f->w, &err) != BC_OK) {
        fprintf(stderr, "%s\n", err.message);
        return -1;
    }
    *state = f;
    return 0;
}
static int setup_preln(void **state) { return setup_model(state, "preln"); }
static int setup_postln(void **state) { return setup_model(state, "postln_proj"); }
static int setup_hd80(void **state) { return setup_model(state, "hd80"); }

static int teardown(void **state) {
    fixture *f = *state;
    opt_cuda_model_destroy(f->m);
    assert_int_equal(opt_cuda_device_mem(f->dev)->current, 0);
    assert_int_equal(opt_cuda_device_mem(f->dev)->n_bad_frees, 0);
    opt_cuda_device_close(f->dev);
    opt_weights_free(&f->w);
    free(f);
    return 0;
}

typedef struct mode {
    int graphs, release, shared, stop_at_eos, top_k;
    double temperature, top_p;
} mode;

static eng_rollout_params params(const mode *md) {
    eng_rollout_params p;
    memset(&p, 0, sizeof p);
    p.batch_size = 2;
    p.samples_per_prompt = 3;
    p.prompt_length = 5;
    p.response_length = 9;
    p.sampling.temperature = md->temperature;
    p.sampling.top_p = md->top_p > 0 ? md->top_p : 1.0;
    p.sampling.top_k = md->top_k;
    p.sampling.seed = 7;
    p.stop_at_eos = md->stop_at_eos;
    p.shared_prefill = md->shared;
    return p;
}

/* What generate measures, as the CPU path measures it: a step time per
 * decode forward (the mock's marks are host clock readings), the first
 * token after the prefill, token counts per stage. */
static void check_timings(const eng_rollout *ro, const mode *md) {
    assert_int_equal(ro->n_steps, ro->n_decode_forwards);
    double sum = 0.0;
    for (int k = 0; k < ro->n_steps; k++) {
        assert_true(ro->step_ms[k] > 0.0);
        sum += ro->step_ms[k];
    }
    assert_true(sum >= ro->decode_ms && ro->decode_ms > 0.0);
    assert_true(ro->first_token_ms >= ro->prefill_ms && ro->prefill_ms > 0.0);
    assert_int_equal(ro->n_prefill_tokens, (int64_t)(md->shared ? ro->Bp : ro->R) * ro->Tp);
    assert_int_equal(ro->n_decode_tokens, ro->n_generated - ro->R);
    if (!md->stop_at_eos) assert_int_equal(ro->n_decode_tokens, (int64_t)ro->R * (ro->Tr - 1));
}

/* Two rollouts on the mock device; the tokens of the last. */
static void device_rollout(fixture *f, const mode *md, int32_t *seq, int *returned, int *eos_at) {
    bc_error err = {0};
    eng_rollout_params p = params(md);
    eng_rollout ro;
    assert_int_equal(eng_rollout_init(&ro, &f->w.hp.s, &p, &err), BC_OK);
    opt_cuda_rollout cr;
    opt_cuda_rollout_init(&cr, &ro, f->dev, f->m, md->graphs);
    const opt_cuda_mem *mem = opt_cuda_device_mem(f->dev);
    for (int it = 0; it < 2; it++) {
        assert_int_equal(opt_cuda_rollout_acquire(&cr, &err), BC_OK);
        opt_cuda_plan plan = opt_cuda_rollout_plan(&cr);
        const size_t counters = (size_t)(md->shared && ro.Sp > 1 ? 2 : 1) * OPT_CUDA_ALIGN;
        assert_int_equal(mem->held[OPT_CUDA_MEM_KV], plan.kv_cache + counters);
        assert_int_equal(mem->held[OPT_CUDA_MEM_WORKSPACE], plan.workspace);
        assert_int_equal(mem->held[OPT_CUDA_MEM_WEIGHTS], plan.weights);
        assert_int_equal(eng_rollout_expand(&ro, &err), BC_OK);
        if (opt_cuda_rollout_generate(&cr, &err) != BC_OK) fail_msg("%s", err.message);
        assert_int_equal(eng_rollout_post_process(&ro, &err), BC_OK);
        assert_int_equal(ro.n_decode_forwards, ro.returned_len - 1);
        check_timings(&ro, md);
        if (md->release) {
            opt_cuda_rollout_release(&cr);
            assert_int_equal(mem->held[OPT_CUDA_MEM_KV], 0);
            assert_int_equal(mem->held[OPT_CUDA_MEM_WORKSPACE], 0);
        }
    }
    memcpy(seq, ro.seq, (size_t)ro.R * ro.Stot * sizeof *seq);
    memcpy(eos_at, ro.eos_at, (size_t)ro.R * sizeof *eos_at);
    *returned = ro.returned_len;
    opt_cuda_rollout_free(&cr);
    eng_rollout_free(&ro);
    assert_int_equal(mem->held[OPT_CUDA_MEM_KV] + mem->held[OPT_CUDA_MEM_WORKSPACE], 0);
}

static void cpu_rollout(fixture *f, const mode *md, int32_t *seq, int *returned, int *eos_at) {
    bc_error err = {0};
    eng_rollout_params p = params(md);
    eng_model m;
    eng_rollout ro;
    assert_int_equal(eng_model_init(&m, &f->w.base, 1, &err), BC_OK);
    assert_int_equal(eng_rollout_init(&ro, &f->w.hp.s, &p, &err), BC_OK);
    assert_int_equal(eng_rollout_expand(&ro, &err), BC_OK);
    assert_int_equal(eng_rollout_generate(&ro, &m, &err), BC_OK);
    assert_int_equal(eng_rollout_post_process(&ro, &err), BC_OK);
    memcpy(seq, ro.seq, (size_t)ro.R * ro.Stot * sizeof *seq);
    memcpy(eos_at, ro.eos_at, (size_t)ro.R * sizeof *eos_at);
    *returned = ro.returned_len;
    eng_cpu_rollout_free(&ro, &m);
    eng_model_free(&m);
}

#define N_TOK (2 * 3 * (5 + 9))

static void greedy_modes_equal_cpu(void **state) {
    fixture *f = *state;
    int32_t cpu[N_TOK], dev[N_TOK];
    int rc, rd, ec[6], ed[6];
    for (int eos = 0; eos <= 1; eos++) {
        mode base = {0, 0, 0, eos, 0, 0.0, 1.0};
        cpu_rollout(f, &base, cpu, &rc, ec);
        for (int variant = 0; variant < 8; variant++) {
            mode md = base;
            md.graphs = variant & 1;
            md.release = (variant >> 1) & 1;
            md.shared = (variant >> 2) & 1;
            device_rollout(f, &md, dev, &rd, ed);
            assert_int_equal(rd, rc);
            assert_memory_equal(dev, cpu, sizeof cpu);
            assert_memory_equal(ed, ec, sizeof ec);
        }
        /* top-k 1 with a temperature is greedy too (the draw has one token) */
        mode k1 = base;
        k1.temperature = 0.8;
        k1.top_k = 1;
        device_rollout(f, &k1, dev, &rd, ed);
        assert_memory_equal(dev, cpu, sizeof cpu);
    }
}

/* EOS made likely: the eos id set to a token the greedy run emits, so rows
 * stop early (stop_at_eos) or have it suppressed (exact length). */
static void forced_eos_equal_cpu(void **state) {
    fixture *f = *state;
    int32_t cpu[N_TOK], dev[N_TOK];
    int rc, rd, ec[6], ed[6];
    mode base = {0, 0, 0, 0, 0, 0.0, 1.0};
    cpu_rollout(f, &base, cpu, &rc, ec);
    const int saved = f->w.hp.s.eos_token_id;
    f->w.hp.s.eos_token_id = cpu[1 * 14 + 5 + 2]; /* row 1, response token 2 */
    int stopped = 0;
    for (int eos = 0; eos <= 1; eos++)
        for (int variant = 0; variant < 4; variant++) {
            mode md = base;
            md.stop_at_eos = eos;
            md.graphs = variant & 1;
            md.shared = (variant >> 1) & 1;
            cpu_rollout(f, &md, cpu, &rc, ec);
            device_rollout(f, &md, dev, &rd, ed);
            assert_int_equal(rd, rc);
            assert_memory_equal(dev, cpu, sizeof cpu);
            assert_memory_equal(ed, ec, sizeof ec);
            for (int r = 0; r < 6; r++) stopped += ed[r] >= 0;
        }
    f->w.hp.s.eos_token_id = saved;
    assert_true(stopped > 0); /* some row did stop at EOS */
}

static void sampled_reproducible(void **state) {
    fixture *f = *state;
    int32_t a[N_TOK], b[N_TOK];
    int ra, rb, ea[6], eb[6];
    mode md = {0, 0, 0, 0, 20, 0.9, 0.9};
    device_rollout(f, &md, a, &ra, ea);
    md.graphs = 1;
    md.release = 1;
    device_rollout(f, &md, b, &rb, eb);
    assert_memory_equal(a, b, sizeof a);
    for (int i = 0; i < N_TOK; i++) assert_true(a[i] >= 0 && a[i] < f->w.hp.s.vocab_size);
}

/* sample_stream "per_iteration" on the device: the loop seeds the rows'
 * generators from the iteration, so iterations 0 and 1 differ and the same
 * iteration repeats. */
static void device_iteration_streams(void **state) {
    fixture *f = *state;
    bc_error err = {0};
    mode md = {1, 0, 0, 0, 20, 0.9, 0.9};
    eng_rollout_params p = params(&md);
    p.per_iteration_stream = 1;
    int32_t seqs[3][N_TOK];
    const uint64_t iterations[3] = {0, 1, 1};
    for (int i = 0; i < 3; i++) {
        eng_rollout ro;
        assert_int_equal(eng_rollout_init(&ro, &f->w.hp.s, &p, &err), BC_OK);
        opt_cuda_rollout cr;
        opt_cuda_rollout_init(&cr, &ro, f->dev, f->m, md.graphs);
        ro.iteration = iterations[i];
        assert_int_equal(eng_rollout_expand(&ro, &err), BC_OK);
        if (opt_cuda_rollout_generate(&cr, &err) != BC_OK) fail_msg("%s", err.message);
        memcpy(seqs[i], ro.seq, sizeof seqs[i]);
        opt_cuda_rollout_free(&cr);
        eng_rollout_free(&ro);
    }
    assert_memory_not_equal(seqs[0], seqs[1], sizeof seqs[0]);
    assert_memory_equal(seqs[1], seqs[2], sizeof seqs[1]);
}

static void graphs_per_batch(void **state) {
    fixture *f = *state;
    int32_t seq[N_TOK];
    int r, e[6];
    int64_t cap0, rep0, cap1, rep1;
    opt_cuda_graph_stats(f->m, NULL, &cap0, &rep0, NULL);
    mode md = {1, 0, 0, 0, 0, 0.0, 1.0};
    device_rollout(f, &md, seq, &r, e); /* 2 rollouts x 8 decode steps, retained */
    opt_cuda_graph_stats(f->m, NULL, &cap1, &rep1, NULL);
    assert_int_equal(cap1 - cap0, 1);           /* step 1 warm-up, step 2 captured ... */
    assert_int_equal(rep1 - rep0, 8 - 2 + 8);   /* ... then replays, also in the second rollout */
    md.release = 1;                              /* released between rollouts: captured again */
    device_rollout(f, &md, seq, &r, e);
    int64_t cap2;
    opt_cuda_graph_stats(f->m, NULL, &cap2, NULL, NULL);
    assert_true(cap2 - cap1 >= 2);
}

/* The CUDA device's hooks (../device.h, as the plugin calls them): plan,
 * case, generate, memory, on the mock device. */
static void device_hooks(void **state) {
    fixture *f = *state;
    bc_error err = {0};
    mode md = {1, 0, 1, 0, 0, 0.0, 1.0};
    eng_rollout_params p = params(&md);
    eng_rollout ro;
    assert_int_equal(eng_rollout_init(&ro, &f->w.hp.s, &p, &err), BC_OK);
    const eng_device_ops *d = opt_device_cuda;
    assert_non_null(d);
    assert_string_equal(d->name, "cuda");
    const eng_device_config cfg = {.threads = 1, .isa = -1, .index = 0, .graphs = 1};
    void *ctx = NULL;
    assert_int_equal(d->create(&cfg, &ctx, &err), BC_OK);
    eng_device_plan plan;
    d->plan(ctx, &f->w.base, &ro, &plan);
    assert_int_equal(d->open(ctx, &err), BC_OK);
    assert_int_equal(d->begin_case(ctx, &f->w.base, &ro, &err), BC_OK);
    d->reset_peak(ctx);
    assert_int_equal(eng_rollout_expand(&ro, &err), BC_OK);
    assert_int_equal(d->generate(ctx, &ro, &err), BC_OK);
    assert_int_equal(ro.returned_len, 9);
    assert_int_equal(ro.n_decode_forwards, 8);
    assert_int_equal(ro.n_generated, 6 * 9);
    eng_device_memory ms;
    assert_int_equal(d->read_memory(ctx, &ro, &ms, &err), BC_OK);
    assert_int_equal(d->host_bytes(ctx, &ro), 0);
    assert_int_equal(ms.weights, plan.weights);
    assert_int_equal(ms.kv_cache, plan.kv_cache);
    assert_int_equal(ms.workspace, plan.workspace);
    assert_int_equal(ms.device_peak, plan.device_peak);
    assert_int_equal(ms.device_resident, plan.device_peak); /* everything is held during the case */
    assert_true(ms.device_free >= 0 && ms.device_total > 0);
    char where[200];
    assert_int_equal(d->capacity(ctx, 0, where, sizeof where), ms.device_total);
    assert_non_null(strstr(where, "mock device has "));
    d->cache_release(ctx, &ro);
    assert_int_equal(d->read_memory(ctx, &ro, &ms, &err), BC_OK);
    assert_int_equal(ms.device_resident, plan.weights); /* released: the weights stay */
    assert_int_equal(d->cache_acquire(ctx, &ro, &err), BC_OK);
    eng_device_info info;
    d->describe(ctx, &info);
    assert_string_equal(info.device, "cuda:0");
    assert_string_equal(info.device_name, "mock device");
    assert_null(info.cpu_kernels);
    assert_int_equal(info.cpu_threads, -1);
    d->end_case(ctx, &ro);
    d->destroy(ctx);
    eng_rollout_free(&ro);
    /* no device: each case fails with the one line */
    mock_cuda_devices = 0;
    assert_int_equal(eng_rollout_init(&ro, &f->w.hp.s, &p, &err), BC_OK);
    assert_int_equal(d->create(&cfg, &ctx, &err), BC_OK);
    assert_int_equal(d->begin_case(ctx, &f->w.base, &ro, &err), BC_ERR_DEVICE);
    assert_int_equal(strncmp(err.message, "no CUDA device: ", 16), 0);
    d->destroy(ctx);
    eng_rollout_free(&ro);
    mock_cuda_devices = 1;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(greedy_modes_equal_cpu, setup_preln, teardown),
        cmocka_unit_test_setup_teardown(greedy_modes_equal_cpu, setup_postln, teardown),
        cmocka_unit_test_setup_teardown(greedy_modes_equal_cpu, setup_hd80, teardown),
        cmocka_unit_test_setup_teardown(forced_eos_equal_cpu, setup_preln, teardown),
        cmocka_unit_test_setup_teardown(forced_eos_equal_cpu, setup_hd80, teardown),
        cmocka_unit_test_setup_teardown(sampled_reproducible, setup_preln, teardown),
        cmocka_unit_test_setup_teardown(device_iteration_streams, setup_preln, teardown),
        cmocka_unit_test_setup_teardown(graphs_per_batch, setup_preln, teardown),
        cmocka_unit_test_setup_teardown(device_hooks, setup_preln, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
