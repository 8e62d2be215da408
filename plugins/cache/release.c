/* release.c: the "release" cache policy plugin.
 *
 * The backend frees its KV cache and workspace after every rollout and takes
 * them back before the next, as DeepSpeed's release_inference_cache does. The
 * host calls the backend's cache_release after each rollout and cache_acquire
 * before the next, and reports their wall time as cache_release_ms and
 * cache_acquire_ms. A backend without those hooks treats this policy as a
 * no-op (see bc_backend_ops in benchctl/plugin.h).
 */
#include "benchctl/plugin.h"

/* c: the case about to run (unused: the answer is the same for every case). */
static int release_release_after_rollout(const bc_case *c) {
    (void)c;
    return 1;
}

static const bc_cache_ops release_ops = {
    .struct_size = sizeof(bc_cache_ops),
    .release_after_rollout = release_release_after_rollout,
};

static const bc_plugin_desc release_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_CACHE,
    .name = "release",
    .version = "0.1.0",
    .description = "free the KV cache and workspace after every rollout, take them back before the next",
    .settings = NULL,
    .n_settings = 0,
    .ops = &release_ops,
};

BC_PLUGIN_DEFINE(release_desc)
