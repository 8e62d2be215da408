/* main.c: the benchctl command line.
 *
 *   benchctl run FILE [--set key=value]... [--reporter a,b] [-v] [-q]
 *   benchctl validate FILE [--set key=value]... [--reporter a,b]
 *   benchctl plan FILE [--set key=value]...
 *   benchctl plugins [NAME]
 *   benchctl --help | --version | COMMAND --help
 *
 * Errors print once, here, as "benchctl: <message>" (plus a hint line where
 * one helps). Exit status: 0 ok; 1 a run could not complete (backend or
 * reporter failure); 2 usage, config or plugin-loading errors; 3 some cases
 * failed; 130 interrupted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "host.h"
#include "loader.h"
#include "matrix.h"
#include "metadata.h"
#include "runner.h"

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

static void print_error(const char *message, const char *hint) {
    fprintf(stderr, "benchctl: %s\n", message);
    if (hint && *hint) fprintf(stderr, "benchctl: hint: %s\n", hint);
}

/* ------------------------------------------------------------------ help */

static const char *const usage_main =
    "usage: benchctl COMMAND [options]\n"
    "\n"
    "Benchmarks LLM generation rollouts: loads the plugins bench.cfg names,\n"
    "runs the case matrix and writes the reports.\n"
    "\n"
    "commands:\n"
    "  run FILE        run the benchmark FILE describes\n"
    "  validate FILE   check FILE and every plugin's settings; runs nothing\n"
    "  plan FILE       print the cases in execution order with their memory\n"
    "  plugins [NAME]  list the plugins found, or print NAME's settings\n"
    "\n"
    "options:\n"
    "  -h, --help      this help (benchctl COMMAND --help: the command's)\n"
    "  --version       print the version and git commit\n"
    "\n"
    "Plugins are searched in: plugin_path in FILE, BENCHCTL_PLUGIN_PATH\n"
    "(colon-separated), the build tree's plugins/ folder next to the\n"
    "executable, " BENCHCTL_PLUGIN_RELATIVE_DIR " relative to the executable,\n"
    "and " BENCHCTL_PLUGIN_INSTALL_DIR ".\n"
    "A plugin may also be named by the path of its .so file.\n";

static const char *const usage_run =
    "usage: benchctl run FILE [--set key=value]... [--reporter a,b] [-v|--verbose] [-q|--quiet]\n"
    "\n"
    "Runs every case of FILE's matrix and writes the reports.\n"
    "  --set key=value   override a setting of FILE, e.g. --set run.iterations=3\n"
    "                    (value as libconfig reads it: 3, 0.5, \"text\", true, [1, 2])\n"
    "  --reporter a,b    use these reporters instead of FILE's\n"
    "  -v, --verbose     log plugin info messages (twice: debug)\n"
    "  -q, --quiet       only errors\n"
    "Ctrl-C (SIGINT) or SIGTERM once: the current iteration finishes, the remaining\n"
    "cases are marked skipped and the reports are still written; a second one stops at once.\n"
    "Exit status: 0 all cases ok, 3 some case failed, 130 interrupted,\n"
    "1 a backend or reporter failed, 2 usage, config or plugin errors.\n";

static const char *const usage_validate =
    "usage: benchctl validate FILE [--set key=value]... [--reporter a,b]\n"
    "\n"
    "Checks FILE, loads every plugin it names and checks their settings.\n"
    "Runs nothing. Exit status 0 when valid, 2 otherwise.\n";

static const char *const usage_plan =
    "usage: benchctl plan FILE [--set key=value]...\n"
    "\n"
    "Prints the cases in execution order (largest effective batch first) with\n"
    "the memory the backend says each needs, when it can tell.\n";

static const char *const usage_plugins =
    "usage: benchctl plugins [NAME]\n"
    "\n"
    "Without NAME: every plugin found on the search path, with its kind,\n"
    "version, description and file; broken plugins are listed with their error.\n"
    "With NAME (or the path of a .so): that plugin's settings table.\n";

/* ------------------------------------------------------------- arguments */

typedef struct args {
    const char *command;
    const char *file;       /* FILE, or NAME for plugins */
    const char **sets;      /* --set values, owned array */
    size_t n_sets;
    const char *reporters;  /* --reporter */
    int verbose, quiet, help, version;
} args;

static int parse_args(int argc, char **argv, args *a) {
    a->sets = calloc((size_t)argc + 1, sizeof *a->sets);
    if (!a->sets) {
        print_error("out of memory", NULL);
        return EXIT_USAGE;
    }
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
            a->help = 1;
        } else if (strcmp(s, "--version") == 0) {
            a->version = 1;
        } else if (strcmp(s, "-v") == 0 || strcmp(s, "--verbose") == 0) {
            a->verbose++;
        } else if (strcmp(s, "-vv") == 0) {
            a->verbose += 2;
        } else if (strcmp(s, "-q") == 0 || strcmp(s, "--quiet") == 0) {
            a->quiet = 1;
        } else if (strcmp(s, "--set") == 0 || strcmp(s, "--reporter") == 0) {
            if (i + 1 >= argc) {
                char msg[64];
                snprintf(msg, sizeof msg, "%s needs a value", s);
                print_error(msg, strcmp(s, "--set") == 0 ? "--set key=value, e.g. --set run.iterations=3" : NULL);
                return EXIT_USAGE;
            }
            if (strcmp(s, "--set") == 0) a->sets[a->n_sets++] = argv[++i];
            else a->reporters = argv[++i];
        } else if (strncmp(s, "--set=", 6) == 0) {
            a->sets[a->n_sets++] = s + 6;
        } else if (strncmp(s, "--reporter=", 11) == 0) {
            a->reporters = s + 11;
        } else if (s[0] == '-' && s[1] != '\0') {
            char msg[300];
            snprintf(msg, sizeof msg, "unknown option '%.200s'", s);
            print_error(msg, "see benchctl --help");
            return EXIT_USAGE;
        } else if (!a->command) {
            a->command = s;
        } else if (!a->file) {
            a->file = s;
        } else {
            char msg[300];
            snprintf(msg, sizeof msg, "unexpected argument '%.200s'", s);
            print_error(msg, "see benchctl --help");
            return EXIT_USAGE;
        }
    }
    for (size_t i = 0; i < a->n_sets; i++)
        if (!strchr(a->sets[i], '=')) {
            char msg[300];
            snprintf(msg, sizeof msg, "--set '%.200s': expected key=value", a->sets[i]);
            print_error(msg, "e.g. --set run.iterations=3");
            return EXIT_USAGE;
        }
    return 0;
}

/* --------------------------------------------------------------- session */

/* Everything loaded for one config. Owns every allocation below; the loader
 * owns the plugins. */
typedef struct session {
    bc_config cfg;
    bc_loader loader;
    const bc_plugin *backend;
    bc_setting_value *backend_settings;
    const bc_plugin **precisions;
    bc_setting_value **precision_settings;
    const bc_plugin **caches;
    bc_setting_value **cache_settings;
    const bc_plugin **reporters;
    bc_setting_value **reporter_settings;
    const char **precision_names, **cache_names; /* desc names, borrowed */
    bc_case *cases;
    size_t n_cases;
} session;

static void session_free(session *s) {
    for (size_t i = 0; i < s->cfg.n_precisions && s->precision_settings; i++) free(s->precision_settings[i]);
    for (size_t i = 0; i < s->cfg.n_cache_policies && s->cache_settings; i++) free(s->cache_settings[i]);
    for (size_t i = 0; i < s->cfg.n_reporters && s->reporter_settings; i++) free(s->reporter_settings[i]);
    free(s->precision_settings), free(s->cache_settings), free(s->reporter_settings);
    free(s->precisions), free(s->caches), free(s->reporters);
    free(s->precision_names), free(s->cache_names);
    free(s->backend_settings);
    free(s->cases);
    bc_loader_free(&s->loader); /* after every instance is gone: callers destroy theirs first */
    bc_config_free(&s->cfg);
}

/* The hint for a plugin that did not load: the loader's, or "did you mean"
 * when a near name is on the search path. */
static void load_hint(const bc_loader *l, const char *name, const bc_error *err, char *hint, size_t cap) {
    snprintf(hint, cap, "%s", l->hint);
    if (!strstr(err->message, "not found")) return;
    char **names = NULL;
    size_t n = bc_loader_names(l, &names);
    const char *near = bc_suggest(name, (const char *const *)names, n);
    if (near) snprintf(hint, cap, "did you mean '%s'? ('benchctl plugins' lists what is found)", near);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* Loads one plugin spec of kind want and resolves its settings. Prints the
 * error and returns non-zero on failure. */
static int load_spec(session *s, const bc_plugin_spec *spec, bc_plugin_kind want, const bc_plugin **out,
                     bc_setting_value **values) {
    char wanted_by[PATH_MAX + 64], where[2 * PATH_MAX + 160];
    bc_config_spec_location(&s->cfg, spec, wanted_by, sizeof wanted_by); /* "bench.cfg:5", "--reporter", ... */
    snprintf(where, sizeof where, "%s: %s: ", wanted_by, spec->where ? spec->where : "");
    bc_error err = {0};
    if (bc_loader_load(&s->loader, spec->name, want, wanted_by, out, &err) != BC_OK) {
        char msg[sizeof err.message + sizeof where];
        /* a wrong-kind message already names where the plugin was wanted */
        snprintf(msg, sizeof msg, "%s%s", strstr(err.message, wanted_by) ? "" : where, err.message);
        char hint[sizeof s->loader.hint + 128];
        load_hint(&s->loader, spec->name, &err, hint, sizeof hint);
        print_error(msg, hint);
        return EXIT_USAGE;
    }
    if (bc_host_log_level() >= BC_LOG_INFO)
        fprintf(stderr, "benchctl: %s: %s plugin %s %s from %s\n", wanted_by, bc_kind_name((*out)->desc->kind),
                (*out)->desc->name, (*out)->desc->version ? (*out)->desc->version : "?", (*out)->path);
    uint32_t n = (*out)->desc->n_settings;
    *values = calloc(n + 1, sizeof **values);
    if (!*values) {
        print_error("out of memory", NULL);
        return EXIT_USAGE;
    }
    if (bc_config_resolve_settings(&s->cfg, spec, (*out)->desc, *values, &err) != BC_OK) {
        char hint[300];
        snprintf(hint, sizeof hint, "'benchctl plugins %.200s' lists its settings", (*out)->desc->name);
        int hinted = strstr(err.message, "benchctl plugins") || strstr(err.message, "has no settings");
        print_error(err.message, hinted ? NULL : hint);
        return EXIT_USAGE;
    }
    return 0;
}

/* Loads config, plugins and their settings, and builds the matrix. */
static int session_open(session *s, const args *a) {
    bc_error err = {0};
    if (!a->file) {
        print_error("missing FILE", "e.g. benchctl run configs/bench.cfg");
        return EXIT_USAGE;
    }
    if (bc_config_load(&s->cfg, a->file, a->sets, a->n_sets, a->reporters, &err) != BC_OK) {
        print_error(err.message, NULL);
        return EXIT_USAGE;
    }
    /* plugin_path entries, like every relative path in bench.cfg, are relative
     * to the directory benchctl runs in (docs/config.md) */
    if (bc_loader_init(&s->loader, NULL, 0, (const char *const *)s->cfg.plugin_paths, s->cfg.n_plugin_paths, &err) !=
        BC_OK)
        return print_error(err.message, NULL), EXIT_USAGE;

    int rc = load_spec(s, &s->cfg.backend, BC_KIND_BACKEND, &s->backend, &s->backend_settings);
    if (rc) return rc;
    size_t np = s->cfg.n_precisions, nc = s->cfg.n_cache_policies, nr = s->cfg.n_reporters;
    s->precisions = calloc(np + 1, sizeof *s->precisions);
    s->precision_settings = calloc(np + 1, sizeof *s->precision_settings);
    s->precision_names = calloc(np + 1, sizeof *s->precision_names);
    s->caches = calloc(nc + 1, sizeof *s->caches);
    s->cache_settings = calloc(nc + 1, sizeof *s->cache_settings);
    s->cache_names = calloc(nc + 1, sizeof *s->cache_names);
    s->reporters = calloc(nr + 1, sizeof *s->reporters);
    s->reporter_settings = calloc(nr + 1, sizeof *s->reporter_settings);
    if (!s->precisions || !s->precision_settings || !s->precision_names || !s->caches || !s->cache_settings ||
        !s->cache_names || !s->reporters || !s->reporter_settings)
        return print_error("out of memory", NULL), EXIT_USAGE;
    for (size_t i = 0; i < np; i++) {
        if ((rc = load_spec(s, &s->cfg.precisions[i], BC_KIND_PRECISION, &s->precisions[i], &s->precision_settings[i])))
            return rc;
        s->precision_names[i] = s->precisions[i]->desc->name;
    }
    for (size_t i = 0; i < nc; i++) {
        if ((rc = load_spec(s, &s->cfg.cache_policies[i], BC_KIND_CACHE, &s->caches[i], &s->cache_settings[i])))
            return rc;
        s->cache_names[i] = s->caches[i]->desc->name;
    }
    for (size_t i = 0; i < nr; i++)
        if ((rc = load_spec(s, &s->cfg.reporters[i], BC_KIND_REPORTER, &s->reporters[i], &s->reporter_settings[i])))
            return rc;

    const bc_precision_ops **pops = calloc(np + 1, sizeof *pops);
    const bc_cache_ops **cops = calloc(nc + 1, sizeof *cops);
    if (!pops || !cops) {
        free(pops), free(cops);
        return print_error("out of memory", NULL), EXIT_USAGE;
    }
    for (size_t i = 0; i < np; i++) pops[i] = &s->precisions[i]->precision;
    for (size_t i = 0; i < nc; i++) cops[i] = &s->caches[i]->cache;
    bc_matrix_axes axes = {
        .precisions = s->precision_names, .precision_ops = pops, .n_precisions = np,
        .cache_policies = s->cache_names, .cache_ops = cops, .n_cache_policies = nc,
        .batch_sizes = s->cfg.batch_sizes, .n_batch_sizes = s->cfg.n_batch_sizes,
        .samples_per_prompt = s->cfg.samples_per_prompt, .n_samples_per_prompt = s->cfg.n_samples_per_prompt,
        .prompt_lengths = s->cfg.prompt_lengths, .n_prompt_lengths = s->cfg.n_prompt_lengths,
        .response_lengths = s->cfg.response_lengths, .n_response_lengths = s->cfg.n_response_lengths,
        .sampling = s->cfg.sampling,
    };
    bc_status st = bc_matrix_build(&axes, &s->cases, &s->n_cases, &err);
    free(pops), free(cops);
    if (st != BC_OK) {
        char msg[sizeof err.message + PATH_MAX];
        snprintf(msg, sizeof msg, "%s: %s", s->cfg.path, err.message);
        print_error(msg, NULL);
        return EXIT_USAGE;
    }
    return 0;
}

/* ------------------------------------------------------------- commands */

static volatile sig_atomic_t g_stop;

static void on_signal(int sig) {
    (void)sig;
    g_stop = 1;
}

static void on_runner_error(void *ctx, const char *message) {
    (void)ctx;
    print_error(message, NULL);
}

static void describe_case(const bc_case *c, char *buf, size_t cap) {
    snprintf(buf, cap, "%s %s batch %u x %u samples, prompt %u, response %u", c->precision, c->cache_policy,
             c->batch_size, c->samples_per_prompt, c->prompt_length, c->response_length);
}

/* Prints one line per distinct failure message: "case 3 (shape) failed: msg",
 * or "cases 2, 3, 6 failed: msg" when several cases failed the same way. */
static void print_failures(const bc_run_result *res) {
    for (size_t i = 0; i < res->n_cases; i++) {
        const bc_case_report *cr = &res->cases[i];
        if (cr->status != BC_CASE_FAILED) continue;
        int seen = 0; /* an earlier case already printed this message */
        for (size_t j = 0; j < i && !seen; j++)
            seen = res->cases[j].status == BC_CASE_FAILED && strcmp(res->cases[j].message, cr->message) == 0;
        if (seen) continue;
        char msg[2048];
        size_t used = 0, n_same = 0;
        for (size_t j = i; j < res->n_cases; j++)
            n_same += res->cases[j].status == BC_CASE_FAILED && strcmp(res->cases[j].message, cr->message) == 0;
        if (n_same == 1) {
            char desc[256];
            describe_case(cr->c, desc, sizeof desc);
            snprintf(msg, sizeof msg, "case %u (%s) failed: %s", cr->c->index, desc, cr->message);
        } else {
            used = (size_t)snprintf(msg, sizeof msg, "cases");
            for (size_t j = i; j < res->n_cases && used < 512; j++)
                if (res->cases[j].status == BC_CASE_FAILED && strcmp(res->cases[j].message, cr->message) == 0)
                    used += (size_t)snprintf(msg + used, sizeof msg - used, "%s %u", j == i ? "" : ",",
                                             res->cases[j].c->index);
            snprintf(msg + used, sizeof msg - used, "%s failed: %s", used >= 512 ? ", ..." : "", cr->message);
        }
        print_error(msg, NULL);
    }
}

static int cmd_run(const args *a) {
    session s = {0};
    int rc = session_open(&s, a);
    if (rc) {
        session_free(&s);
        return rc;
    }
    if (s.cfg.n_reporters == 0 && !a->quiet)
        print_error("warning: no reporters configured; results will not be written",
                    "add a reporters list to the config or use --reporter console,json");

    size_t np = 1 + s.cfg.n_precisions + s.cfg.n_cache_policies + s.cfg.n_reporters;
    const bc_plugin **all = calloc(np, sizeof *all);
    bc_runner_reporter *reps = calloc(s.cfg.n_reporters + 1, sizeof *reps);
    char (*wheres)[PATH_MAX + 128] = calloc(s.cfg.n_reporters + 1, sizeof *wheres); /* [0] backend, [1 + i] reporter i */
    bc_run_meta meta = {0};
    bc_error err = {0};
    if (!all || !reps || !wheres) {
        free(all), free(reps), free(wheres), session_free(&s);
        return print_error("out of memory", NULL), EXIT_RUNTIME;
    }
    size_t k = 0;
    all[k++] = s.backend;
    for (size_t i = 0; i < s.cfg.n_precisions; i++) all[k++] = s.precisions[i];
    for (size_t i = 0; i < s.cfg.n_cache_policies; i++) all[k++] = s.caches[i];
    for (size_t i = 0; i < s.cfg.n_reporters; i++) {
        all[k++] = s.reporters[i];
        reps[i].plugin = s.reporters[i];
        reps[i].settings = s.reporter_settings[i];
        bc_config_spec_location(&s.cfg, &s.cfg.reporters[i], wheres[1 + i], sizeof wheres[1 + i]);
        reps[i].where = wheres[1 + i];
    }
    bc_config_spec_location(&s.cfg, &s.cfg.backend, wheres[0], sizeof wheres[0]);
    if (bc_run_meta_init(&meta, all, np, &err) != BC_OK) {
        free(all), free(reps), free(wheres), session_free(&s);
        return print_error(err.message, NULL), EXIT_RUNTIME;
    }
    bc_runner_config rc_cfg = {
        .backend = s.backend,
        .backend_settings = s.backend_settings,
        .backend_where = wheres[0],
        .cases = s.cases,
        .n_cases = s.n_cases,
        .warmup = s.cfg.warmup,
        .iterations = s.cfg.iterations,
        .reporters = reps,
        .n_reporters = s.cfg.n_reporters,
        .stop = &g_stop,
        .on_error = on_runner_error,
    };
    bc_run_meta_fill(&meta, s.cfg.path, s.cfg.sha256, &rc_cfg.run);
    rc_cfg.run.backend_name = s.backend->desc->name;
    rc_cfg.run.backend_settings = s.backend->desc->settings;
    rc_cfg.run.backend_values = s.backend_settings;
    rc_cfg.run.n_backend_settings = s.backend->desc->n_settings;
    rc_cfg.run.warmup = s.cfg.warmup;
    rc_cfg.run.iterations = s.cfg.iterations;
    rc_cfg.run.sampling = s.cfg.sampling;
    rc_cfg.run.precisions = s.precision_names;
    rc_cfg.run.n_precisions = (uint32_t)s.cfg.n_precisions;
    rc_cfg.run.cache_policies = s.cache_names;
    rc_cfg.run.n_cache_policies = (uint32_t)s.cfg.n_cache_policies;

    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND; /* a second signal stops at once */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);

    bc_run_result res = {0};
    int exit_code;
    if (bc_run(&rc_cfg, &res, &err) != BC_OK) {
        print_error(err.message, NULL);
        exit_code = EXIT_RUNTIME;
    } else {
        exit_code = bc_run_exit_status(&res);
        print_failures(&res);
        if (!a->quiet || exit_code)
            fprintf(stderr, "benchctl: %zu case%s: %zu ok, %u failed, %u skipped%s%s\n", res.n_cases,
                    res.n_cases == 1 ? "" : "s", res.n_cases - res.n_failed - res.n_skipped, res.n_failed, res.n_skipped,
                    res.interrupted ? " (interrupted)" : "",
                    res.reporter_failed ? "; a reporter failed (see above), its report is missing" : "");
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    bc_run_result_free(&res);
    bc_run_meta_free(&meta);
    free(all);
    free(reps);
    free(wheres);
    session_free(&s);
    return exit_code;
}

static int cmd_validate(const args *a) {
    session s = {0};
    int rc = session_open(&s, a);
    if (!rc)
        printf("%s: ok: %zu case%s; backend %s, %zu precision%s, %zu cache polic%s, %zu reporter%s\n", s.cfg.path,
               s.n_cases, s.n_cases == 1 ? "" : "s", s.backend->desc->name, s.cfg.n_precisions,
               s.cfg.n_precisions == 1 ? "" : "s", s.cfg.n_cache_policies, s.cfg.n_cache_policies == 1 ? "y" : "ies",
               s.cfg.n_reporters, s.cfg.n_reporters == 1 ? "" : "s");
    session_free(&s);
    return rc;
}

static void print_mib(int64_t bytes) {
    if (bytes < 0) printf(" %10s", "-");
    else printf(" %10.1f", (double)bytes / (1024.0 * 1024.0));
}

static int cmd_plan(const args *a) {
    session s = {0};
    int rc = session_open(&s, a);
    if (rc) {
        session_free(&s);
        return rc;
    }
    size_t *order = calloc(s.n_cases + 1, sizeof *order);
    if (!order) {
        session_free(&s);
        return print_error("out of memory", NULL), EXIT_RUNTIME;
    }
    bc_matrix_execution_order(s.cases, s.n_cases, order);
    void *inst = NULL;
    bc_error err = {0};
    const bc_backend_ops *ops = &s.backend->backend;
    int can_plan = ops->plan_memory != NULL;
    if (can_plan && ops->create(&s.backend->host, s.backend_settings, &inst, &err) != BC_OK) {
        char msg[sizeof err.message + 64];
        snprintf(msg, sizeof msg, "warning: backend '%s': create: %s; memory not shown", s.backend->desc->name,
                 err.message);
        print_error(msg, NULL);
        if (inst) ops->destroy(inst);
        inst = NULL;
        can_plan = 0;
    }
    printf("%zu case%s in execution order (backend %s, %u warmup + %u measured iterations each)\n", s.n_cases,
           s.n_cases == 1 ? "" : "s",
           s.backend->desc->name, s.cfg.warmup, s.cfg.iterations);
    printf("%4s %5s %-10s %-10s %6s %7s %7s %8s %9s %10s %10s %10s\n", "run", "case", "precision", "cache", "batch",
           "samples", "prompt", "response", "eff_batch", "weights_MiB", "kv_MiB", "work_MiB");
    char last_plan_error[sizeof err.message] = ""; /* printed once, not per case */
    for (size_t i = 0; i < s.n_cases; i++) {
        const bc_case *c = &s.cases[order[i]];
        printf("%4zu %5u %-10s %-10s %6u %7u %7u %8u %9llu", i + 1, c->index, c->precision, c->cache_policy,
               c->batch_size, c->samples_per_prompt, c->prompt_length, c->response_length,
               (unsigned long long)bc_case_effective_batch(c));
        bc_memory_stats m = {.struct_size = sizeof m, -1, -1, -1, -1, -1, -1, -1};
        if (can_plan && ops->plan_memory(inst, c, &m, &err) == BC_OK) {
            print_mib(m.weights_bytes);
            print_mib(m.kv_cache_bytes);
            print_mib(m.workspace_bytes);
            printf("\n");
        } else if (can_plan) {
            printf(" %10s %10s %10s\n", "?", "?", "?");
            if (strcmp(err.message, last_plan_error) != 0) {
                char msg[sizeof err.message + 64];
                snprintf(msg, sizeof msg, "warning: case %u: memory unknown: %s", c->index, err.message);
                fflush(stdout);
                print_error(msg, NULL);
                snprintf(last_plan_error, sizeof last_plan_error, "%s", err.message);
            }
        } else {
            printf(" %10s %10s %10s\n", "-", "-", "-");
        }
    }
    if (!can_plan && !ops->plan_memory) printf("(backend %s cannot tell its memory in advance)\n", s.backend->desc->name);
    if (inst) ops->destroy(inst);
    free(order);
    session_free(&s);
    return 0;
}

/* What `benchctl plugins` found, kept so it prints grouped by kind. */
typedef struct listed {
    char *path, *error;   /* owned copies */
    const bc_plugin *p;   /* owned by the loader; NULL when broken */
} listed;

typedef struct listing {
    listed *items; /* owned */
    size_t n;
    int nomem;
} listing;

static void on_plugin_listed(void *ctx, const char *path, const bc_plugin *p, const char *error) {
    listing *ls = ctx;
    listed *items = realloc(ls->items, (ls->n + 1) * sizeof *items);
    if (!items) {
        ls->nomem = 1;
        return;
    }
    ls->items = items;
    listed *it = &items[ls->n];
    it->p = p;
    it->path = strdup(path);
    it->error = error ? strdup(error) : NULL;
    if (!it->path || (error && !it->error)) {
        free(it->path), free(it->error);
        ls->nomem = 1;
        return;
    }
    ls->n++;
}

static void print_listed(const char *path, const bc_plugin *p, const char *error) {
    if (p)
        printf("%-10s %-14s %-8s %s\n%-10s %-14s %-8s   %s\n", bc_kind_name(p->desc->kind), p->desc->name,
               p->desc->version ? p->desc->version : "?", p->desc->description ? p->desc->description : "", "", "",
               "", path);
    else {
        /* the name from the file name: benchctl-NAME.so */
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        int len = (int)strlen(base) - (int)strlen("benchctl-.so");
        printf("%-10s %-14.*s %-8s %s\n", "broken", len > 0 ? len : 0, base + strlen("benchctl-"), "", error);
    }
}

static void format_default(const bc_setting_desc *d, char *buf, size_t cap) {
    switch (d->type) {
    case BC_SETTING_INT: snprintf(buf, cap, "%lld", (long long)d->default_int); break;
    case BC_SETTING_FLOAT: snprintf(buf, cap, "%g", d->default_float); break;
    case BC_SETTING_BOOL: snprintf(buf, cap, "%s", d->default_int ? "true" : "false"); break;
    default: snprintf(buf, cap, "\"%s\"", d->default_string ? d->default_string : ""); break;
    }
}

static void format_allowed(const bc_setting_desc *d, char *buf, size_t cap) {
    buf[0] = '\0';
    if (d->type == BC_SETTING_ENUM && d->choices) {
        size_t used = 0;
        for (const char *const *c = d->choices; *c && used < cap; c++)
            used += (size_t)snprintf(buf + used, cap - used, "%s%s", c == d->choices ? "" : "|", *c);
    } else if (d->type == BC_SETTING_INT && d->has_range) {
        snprintf(buf, cap, "[%lld, %lld]", (long long)d->min, (long long)d->max);
    } else if (d->type == BC_SETTING_FLOAT && d->has_range) {
        snprintf(buf, cap, "[%g, %g]", d->min, d->max);
    } else if (d->type == BC_SETTING_BOOL) {
        snprintf(buf, cap, "true|false");
    } else {
        snprintf(buf, cap, "any");
    }
}

static int cmd_plugins(const args *a) {
    bc_loader l;
    bc_error err = {0};
    if (bc_loader_init(&l, NULL, 0, NULL, 0, &err) != BC_OK) return print_error(err.message, NULL), EXIT_USAGE;
    if (!a->file) {
        printf("%-10s %-14s %-8s %s\n", "KIND", "NAME", "VERSION", "DESCRIPTION / FILE");
        listing ls = {0};
        bc_loader_list(&l, on_plugin_listed, &ls);
        /* backends, precisions, cache policies, reporters, then the broken ones */
        static const int order[] = {BC_KIND_BACKEND, BC_KIND_PRECISION, BC_KIND_CACHE, BC_KIND_REPORTER, -1};
        for (size_t k = 0; k < sizeof order / sizeof *order; k++)
            for (size_t i = 0; i < ls.n; i++)
                if ((ls.items[i].p ? (int)ls.items[i].p->desc->kind : -1) == order[k])
                    print_listed(ls.items[i].path, ls.items[i].p, ls.items[i].error);
        size_t count = ls.n;
        for (size_t i = 0; i < ls.n; i++) free(ls.items[i].path), free(ls.items[i].error);
        free(ls.items);
        if (ls.nomem) print_error("warning: out of memory; the list is incomplete", NULL);
        if (count == 0) {
            printf("(none found; searched:");
            for (size_t i = 0; i < l.n_dirs; i++) printf(" %s", l.dirs[i]);
            printf(")\n");
        }
        bc_loader_free(&l);
        return 0;
    }
    const bc_plugin *p;
    if (bc_loader_load(&l, a->file, 0, NULL, &p, &err) != BC_OK) {
        char hint[sizeof l.hint + 128];
        load_hint(&l, a->file, &err, hint, sizeof hint);
        print_error(err.message, hint);
        bc_loader_free(&l);
        return EXIT_USAGE;
    }
    const bc_plugin_desc *d = p->desc;
    printf("%s %s (%s plugin): %s\n%s\n", d->name, d->version ? d->version : "?", bc_kind_name(d->kind),
           d->description ? d->description : "", p->path);
    if (d->n_settings == 0) {
        printf("no settings\n");
    } else {
        static const char *const types[] = {"", "int", "float", "bool", "string", "enum"};
        int w_name = 7, w_def = 7, w_allowed = 7; /* columns as wide as their widest cell */
        for (uint32_t i = 0; i < d->n_settings; i++) {
            const bc_setting_desc *s = &d->settings[i];
            char def[64], allowed[256];
            format_default(s, def, sizeof def);
            format_allowed(s, allowed, sizeof allowed);
            if ((int)strlen(s->name) > w_name) w_name = (int)strlen(s->name);
            if ((int)strlen(def) > w_def) w_def = (int)strlen(def);
            if ((int)strlen(allowed) > w_allowed) w_allowed = (int)strlen(allowed);
        }
        printf("\n%-*s  %-6s  %-*s  %-*s  %s\n", w_name, "SETTING", "TYPE", w_def, "DEFAULT", w_allowed, "ALLOWED",
               "HELP");
        for (uint32_t i = 0; i < d->n_settings; i++) {
            const bc_setting_desc *s = &d->settings[i];
            char def[64], allowed[256];
            format_default(s, def, sizeof def);
            format_allowed(s, allowed, sizeof allowed);
            printf("%-*s  %-6s  %-*s  %-*s  %s\n", w_name, s->name, types[s->type], w_def, def, w_allowed, allowed,
                   s->help ? s->help : "");
        }
        if (d->kind == BC_KIND_BACKEND)
            printf("\nin bench.cfg: backend = { name = \"%s\"; settings = { %s = ...; }; };\n"
                   "on the command line: --set backend.settings.%s=...\n",
                   d->name, d->settings[0].name, d->settings[0].name);
        else
            printf("\nin bench.cfg, in the %s list: { name = \"%s\"; settings = { %s = ...; }; }\n",
                   d->kind == BC_KIND_PRECISION ? "precisions" : d->kind == BC_KIND_CACHE ? "cache_policies" : "reporters",
                   d->name, d->settings[0].name);
    }
    bc_loader_free(&l);
    return 0;
}

int main(int argc, char **argv) {
    args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc) {
        free(a.sets);
        return rc;
    }
    if (a.verbose) bc_host_set_log_level(a.verbose > 1 ? BC_LOG_DEBUG : BC_LOG_INFO);
    if (a.quiet) bc_host_set_log_level(BC_LOG_ERROR);

    if (a.version && !a.command) {
        printf("benchctl %s (git %s, plugin ABI %d.%d)\n", BENCHCTL_VERSION, BENCHCTL_GIT_COMMIT, BENCHCTL_ABI_MAJOR,
               BENCHCTL_ABI_MINOR);
    } else if (!a.command) {
        if (a.help) {
            fputs(usage_main, stdout);
            rc = 0;
        } else {
            fputs(usage_main, stderr);
            rc = EXIT_USAGE;
        }
    } else if (strcmp(a.command, "version") == 0) {
        printf("benchctl %s (git %s, plugin ABI %d.%d)\n", BENCHCTL_VERSION, BENCHCTL_GIT_COMMIT, BENCHCTL_ABI_MAJOR,
               BENCHCTL_ABI_MINOR);
    } else if (strcmp(a.command, "run") == 0) {
        rc = a.help ? (fputs(usage_run, stdout), 0) : cmd_run(&a);
    } else if (strcmp(a.command, "validate") == 0) {
        rc = a.help ? (fputs(usage_validate, stdout), 0) : cmd_validate(&a);
    } else if (strcmp(a.command, "plan") == 0) {
        rc = a.help ? (fputs(usage_plan, stdout), 0) : cmd_plan(&a);
    } else if (strcmp(a.command, "plugins") == 0) {
        rc = a.help ? (fputs(usage_plugins, stdout), 0) : cmd_plugins(&a);
    } else if (strcmp(a.command, "help") == 0) {
        fputs(usage_main, stdout);
    } else {
        char msg[300];
        snprintf(msg, sizeof msg, "unknown command '%.200s'", a.command);
        print_error(msg, "commands: run, validate, plan, plugins; see benchctl --help");
        rc = EXIT_USAGE;
    }
    free(a.sets);
    return rc;
}
