/* example_backend.c: the smallest useful out-of-tree benchctl backend
 * (ABI 2.0).
 *
 * Only the required hooks (the optional ones, check_case and prepare among
 * them, are left NULL, which the host must accept; so is check_settings in
 * the descriptor). Each rollout "generates" response_length tokens for each
 * of the R = batch_size x samples_per_prompt rows by filling a token buffer,
 * and reports exactly that count; what it does not measure it leaves as the
 * host set it ("not measured"). Built by tests/outoftree against an
 * installed benchctl and run by path.
 */
#include <stdint.h>
#include <stdlib.h>

#include <benchctl/plugin.h>

typedef struct example {
    int32_t *tokens; /* [R, S], owned; allocated by begin_case */
    uint64_t rows;   /* R */
    uint32_t response_len; /* S */
    int64_t sum;     /* of the generated tokens, read by post_process */
} example;

static bc_status example_create(const bc_host *host, const bc_settings *settings, void **out, bc_error *err) {
    (void)host; (void)settings;
    example *e = calloc(1, sizeof *e);
    if (!e) return bc_error_set(err, BC_ERR_NOMEM, "example: out of memory");
    *out = e;
    return BC_OK;
}

static void example_destroy(void *instance) { free(instance); }

static bc_status example_describe(void *instance, bc_backend_info *info, bc_error *err) {
    (void)instance; (void)err;
    BC_SET(info, bc_backend_info, model, "example-outoftree");
    BC_SET(info, bc_backend_info, device, "cpu");
    return BC_OK;
}

static bc_status example_begin_case(void *instance, const bc_case *c, bc_error *err) {
    example *e = instance;
    e->rows = bc_case_effective_batch(c);
    e->response_len = c->response_length;
    e->tokens = calloc(e->rows * e->response_len + 1, sizeof *e->tokens);
    if (!e->tokens) return bc_error_set(err, BC_ERR_NOMEM, "example: out of memory");
    return BC_OK;
}

static bc_status example_expand_prompts(void *instance, bc_error *err) {
    (void)instance; (void)err;
    return BC_OK;
}

static bc_status example_generate(void *instance, bc_generation_stats *out, bc_error *err) {
    example *e = instance;
    (void)err;
    for (uint64_t i = 0; i < e->rows * e->response_len; i++) e->tokens[i] = (int32_t)(i % 50272u);
    BC_SET(out, bc_generation_stats, num_generated_tokens, (int64_t)(e->rows * e->response_len));
    BC_SET(out, bc_generation_stats, returned_response_length, e->response_len);
    return BC_OK;
}

static bc_status example_post_process(void *instance, bc_error *err) {
    example *e = instance;
    (void)err;
    e->sum = 0;
    for (uint64_t i = 0; i < e->rows * e->response_len; i++) e->sum += e->tokens[i];
    return BC_OK;
}

static void example_end_case(void *instance) {
    example *e = instance;
    free(e->tokens);
    e->tokens = NULL;
}

static const bc_backend_ops example_ops = {
    .struct_size = sizeof(bc_backend_ops),
    .create = example_create,
    .destroy = example_destroy,
    .describe = example_describe,
    .begin_case = example_begin_case,
    .expand_prompts = example_expand_prompts,
    .generate = example_generate,
    .post_process = example_post_process,
    .end_case = example_end_case,
};

static const bc_plugin_desc example_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_BACKEND,
    .name = "example",
    .version = "0.1.0",
    .description = "out-of-tree example backend (fills token buffers)",
    .ops = &example_ops,
};

BC_PLUGIN_DEFINE(example_desc)
