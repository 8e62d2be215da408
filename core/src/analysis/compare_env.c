/* compare_env.c: whether two runs are comparable (compare.h,
 * bc_cmp_env_compare): the environment fields that must agree (model and
 * shape, machine, software, kind of work), the informational ones, and the
 * settings a backend marks as defining the work. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "compare.h"

/* ---------------------------------------------------------- environment */

typedef enum env_kind {
    ENV_STRING,        /* a char * member of bc_runfile */
    ENV_INT,           /* an int64_t member, -1 unknown */
    ENV_UINT,          /* a uint32_t member */
    ENV_WORLD_SIZE     /* world_size, 1 when the file does not say */
} env_kind;

typedef struct env_field {
    const char *name;
    env_kind kind;
    size_t offset;
    int informational; /* reported when it differs, never refuses */
} env_field;

#define ENV_S(name, member) {name, ENV_STRING, offsetof(bc_runfile, member), 0}
#define ENV_I(name, member) {name, ENV_INT, offsetof(bc_runfile, member), 0}

/* What makes two runs comparable: the same model (and shape), machine,
 * software and kind of work. The informational ones are printed when they
 * differ. */
static const env_field k_env_fields[] = {
    ENV_S("model", model),
    ENV_S("model_family", model_family),
    ENV_I("parameters", n_parameters),
    ENV_I("layers", n_layers),
    ENV_I("hidden_size", hidden_size),
    ENV_I("heads", n_heads),
    ENV_I("ffn_size", ffn_size),
    ENV_I("vocab_size", vocab_size),
    ENV_I("max_positions", max_positions),
    ENV_S("device", device),
    ENV_S("gpu", gpu),
    ENV_S("driver", driver),
    ENV_S("cpu_model", cpu_model),
    ENV_S("cpu_kernels", cpu_kernels),
    ENV_I("cpu_threads", cpu_threads),
    ENV_S("benchctl_version", benchctl_version),
    ENV_S("backend", backend),
    {"world_size", ENV_WORLD_SIZE, 0, 0},
    {"warmup", ENV_UINT, offsetof(bc_runfile, warmup), 1},
    {"iterations", ENV_UINT, offsetof(bc_runfile, iterations), 1},
    {"git_commit", ENV_STRING, offsetof(bc_runfile, git_commit), 1},
    {"hostname", ENV_STRING, offsetof(bc_runfile, hostname), 1},
};
#define N_ENV_FIELDS (sizeof k_env_fields / sizeof k_env_fields[0])

int bc_cmp_is_workload(const bc_runfile *rf, const char *name) {
    for (size_t i = 0; i < rf->n_backend_settings; i++)
        if (rf->backend_settings[i].workload && strcmp(rf->backend_settings[i].name, name) == 0) return 1;
    return 0;
}

/* f's value in rf as text; "" when the file does not say. */
static void env_value(const bc_runfile *rf, const env_field *f, char *buf, size_t cap) {
    const char *base = (const char *)rf;
    buf[0] = '\0';
    switch (f->kind) {
    case ENV_STRING: {
        const char *s = *(char *const *)(base + f->offset);
        if (s) snprintf(buf, cap, "%s", s);
        break;
    }
    case ENV_INT: {
        int64_t v = *(const int64_t *)(base + f->offset);
        if (v >= 0) snprintf(buf, cap, "%lld", (long long)v);
        break;
    }
    case ENV_UINT: snprintf(buf, cap, "%u", *(const uint32_t *)(base + f->offset)); break;
    case ENV_WORLD_SIZE: snprintf(buf, cap, "%lld", (long long)(rf->world_size > 0 ? rf->world_size : 1)); break;
    }
}

size_t bc_cmp_env_compare(const bc_runfile *a, const bc_runfile *b, bc_cmp_env_diff *out, size_t *n_refusing) {
    /* three passes so the refusing differences come first */
    size_t n = 0;
    *n_refusing = 0;
    for (int pass = 0; pass < 3; pass++)
        for (size_t i = 0; i < N_ENV_FIELDS && n < BC_CMP_MAX_ENV; i++) {
            const env_field *f = &k_env_fields[i];
            bc_cmp_env_diff d = {.field = f->name};
            env_value(a, f, d.a, sizeof d.a);
            env_value(b, f, d.b, sizeof d.b);
            int both = d.a[0] && d.b[0], differ = strcmp(d.a, d.b) != 0;
            if (!differ) continue;
            int kind = both && !f->informational ? 0 : both ? 1 : 2;
            if (kind != pass) continue;
            d.refuses = kind == 0;
            *n_refusing += (size_t)d.refuses;
            out[n++] = d;
        }
    /* then the settings either backend marks as defining the work: another
     * value refuses (after the fields above, which a file always has) */
    for (int side = 0; side < 2; side++) {
        const bc_runfile *rf = side ? b : a;
        for (size_t i = 0; i < rf->n_backend_settings && n < BC_CMP_MAX_ENV; i++) {
            const char *name = rf->backend_settings[i].name;
            if (!rf->backend_settings[i].workload || (side == 1 && bc_cmp_is_workload(a, name))) continue;
            const char *va = bc_runfile_setting(a, name), *vb = bc_runfile_setting(b, name);
            if (va && vb && strcmp(va, vb) == 0) continue;
            bc_cmp_env_diff d = {.field = name, .refuses = va && vb};
            snprintf(d.a, sizeof d.a, "%s", va ? va : "");
            snprintf(d.b, sizeof d.b, "%s", vb ? vb : "");
            *n_refusing += (size_t)d.refuses;
            out[n++] = d;
        }
    }
    /* refusing first, then informational, then one-sided, each in order */
    for (size_t i = 1; i < n; i++) {
        bc_cmp_env_diff d = out[i];
        int kind = d.refuses ? 0 : d.a[0] && d.b[0] ? 1 : 2;
        size_t j = i;
        for (; j > 0; j--) {
            const bc_cmp_env_diff *p = &out[j - 1];
            if ((p->refuses ? 0 : p->a[0] && p->b[0] ? 1 : 2) <= kind) break;
            out[j] = out[j - 1];
        }
        out[j] = d;
    }
    return n;
}

