/* plugin_dl.h: test helper that dlopens a built plugin by name.
 *
 * Loads BENCHCTL_TEST_PLUGIN_DIR/benchctl-NAME.so the way a host would, calls
 * its entry symbol and returns the descriptor. The caller owns *out_dl and
 * dlcloses it when done. Failures are reported with cmocka's fail_msg, so a
 * missing or broken plugin fails the test with its dlerror().
 */
#ifndef BENCHCTL_TEST_PLUGIN_DL_H
#define BENCHCTL_TEST_PLUGIN_DL_H

#include <dlfcn.h>
#include <stdio.h>

#include "benchctl/plugin.h"
#include "host.h"

static inline const bc_plugin_desc *test_plugin_open(const char *name, void **out_dl) {
    char path[4096];
    snprintf(path, sizeof path, "%s/benchctl-%s.so", BENCHCTL_TEST_PLUGIN_DIR, name);
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) fail_msg("dlopen %s: %s", path, dlerror());
    bc_plugin_entry_fn entry;
    void *sym = dlsym(dl, BENCHCTL_PLUGIN_ENTRY);
    if (!sym) fail_msg("%s: no symbol %s", path, BENCHCTL_PLUGIN_ENTRY);
    *(void **)&entry = sym; /* POSIX: object pointer to function pointer */
    const bc_plugin_desc *desc = entry();
    if (!desc) fail_msg("%s: entry returned NULL", path);
    *out_dl = dl;
    return desc;
}

/* The host table benchctl itself hands a plugin (bc_host_init,
 * core/src/host/host.c), for tests that call a plugin's hooks directly;
 * the plugin's log lines are benchctl's (warnings and errors, on stderr, as
 * plugin "test"). A test that calls it links benchctl_core. */
static inline const bc_host *test_plugin_host(void) {
    static bc_host host;
    if (!host.struct_size) bc_host_init(&host, "test");
    return &host;
}

/* The version header every descriptor must carry. */
static inline void test_plugin_check_header(const bc_plugin_desc *d, bc_plugin_kind kind, const char *name) {
    assert_int_equal(d->magic, BENCHCTL_PLUGIN_MAGIC);
    assert_int_equal(d->abi_major, BENCHCTL_ABI_MAJOR);
    assert_int_equal(d->abi_minor, BENCHCTL_ABI_MINOR);
    assert_int_equal(d->struct_size, sizeof(bc_plugin_desc));
    assert_int_equal(d->kind, kind);
    assert_non_null(d->name);
    assert_string_equal(d->name, name);
    assert_non_null(d->version);
    assert_true(d->version[0] != '\0');
    assert_non_null(d->description);
    assert_true(d->description[0] != '\0');
    assert_non_null(d->ops);
}

#endif /* BENCHCTL_TEST_PLUGIN_DL_H */
