/* retain.c: the "retain" cache policy plugin.
 *
 * The backend keeps its KV cache and workspace between rollouts: they are
 * allocated for the first rollout of a case and reused by the next, so no
 * rollout pays for allocation. Each case gets release_cache = 0, and the
 * host does not call the backend's cache_release / cache_acquire hooks.
 */
#include "benchctl/plugin.h"

/* c: the case about to run (unused: the answer is the same for every case). */
static int retain_release_after_rollout(const bc_case *c) {
    (void)c;
    return 0;
}

static const bc_cache_ops retain_ops = {
    .struct_size = sizeof(bc_cache_ops),
    .release_after_rollout = retain_release_after_rollout,
};

static const bc_plugin_desc retain_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_CACHE,
    .name = "retain",
    .version = "0.1.0",
    .description = "keep the KV cache and workspace between rollouts",
    .settings = NULL,
    .n_settings = 0,
    .ops = &retain_ops,
};

BC_PLUGIN_DEFINE(retain_desc)
