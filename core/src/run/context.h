/* context.h: everything one `benchctl run|validate|plan FILE` works with,
 * built in one place, in this order, each step failing with one line that
 * names the file, line and setting (or the plugin) and a status code:
 *
 *   1. the config: bench.cfg read, --reporter/--set applied, schema checked;
 *   2. the plugins it names: loaded, their settings resolved against their
 *      tables, then each plugin's check_settings (paths exist, settings that
 *      contradict each other) -- for reporters, that their files can be made;
 *      the scorer (score group) and its precision; the hooks the score
 *      stage and run.refit need (score, read_rollout, refit), each missing
 *      one refused naming the plugin;
 *      then the axes over backend settings (matrix.backend_settings):
 *      each value checked against every backend's table, and each
 *      combination through the backend's check_settings;
 *   3. the matrix: every case in requested order, then the cases the
 *      command line selects (--cases, --only: selection.h), each keeping
 *      its matrix index; then the plan (plan.h): the instance each case
 *      runs on, its rebuild group and the execution order, built once for
 *      plan, validate and run;
 *   4. the backend instances, one per backends entry and combination of
 *      setting-axis values: created (light: no weights) and described;
 *   5. every case checked by the backend's check_case (a prompt plus response
 *      longer than the model's positions, a precision it has no kernels for),
 *      and, with a score group, the scorer's check_case of the case in the
 *      score precision;
 *   6. the run report's header (metadata, plugins, backend info, settings).
 * The runner (runner.h) then prepares the backend (loads weights) and runs.
 *
 * Ownership: the context owns the config, the loader (and so every plugin),
 * the resolved settings, the cases, the plan, the backend instances and the metadata;
 * bc_context_free destroys the instance before the loader dlcloses.
 */
#ifndef BENCHCTL_CONTEXT_H
#define BENCHCTL_CONTEXT_H

#include <limits.h>
#include <stddef.h>

#include "benchctl/plugin.h"
#include "config.h"
#include "loader.h"
#include "metadata.h"
#include "plan.h"
#include "runner.h"

/* One plugin named by the config, with its resolved settings. */
typedef struct bc_context_plugin {
    const bc_plugin *plugin;  /* owned by the context's loader */
    bc_setting_value *values; /* plugin->desc->n_settings, owned */
    bc_settings settings;     /* the view plugins get of values */
    char where[PATH_MAX + 64];/* where the config names it: "bench.cfg:5", "--reporter" */
    /* The settings table the values follow: the plugin's own, or, for a
     * plugin with more_settings (since 2.2), its own rows then the ones
     * more_settings returned (all_rows, owned; more_rows are the plugin's,
     * handed back to its free_more_settings by bc_context_free). */
    bc_plugin_desc desc;
    bc_setting_desc *all_rows;
    const bc_setting_desc *more_rows;
    uint32_t n_more_rows;
} bc_context_plugin;

/* What a case's check_case said (plan prints it). */
typedef struct bc_case_check {
    bc_status code; /* BC_OK when the backend can run the case */
    char message[512];
} bc_case_check;

typedef struct bc_context_args {
    const char *file;                /* bench.cfg */
    const char *const *sets;         /* --set key=value */
    size_t n_sets;
    const char *reporters;           /* --reporter a,b, or NULL */
    int allow_infeasible;            /* plan: record case check failures instead of failing */
    const char *cases;               /* --cases 3,5-7, or NULL: every case */
    const char *only;                /* --only precision=bf16, or NULL */
    /* file's text as rank 0 of a distributed run read it (bc_config_read_text),
     * or NULL: read file */
    const char *file_text;
    size_t file_text_len;
    /* A distributed run's local rank (the rank's index on its host), or
     * NULL. Every INT setting a backend marks BC_SETTING_LOCAL_RANK (since
     * 2.4) that bench.cfg does not set becomes the local rank. */
    const int32_t *local_rank;
} bc_context_args;

typedef struct bc_context {
    bc_config cfg;
    bc_loader loader;
    bc_context_plugin backend;
    bc_context_plugin *precisions, *caches, *reporters; /* cfg.n_precisions, ... */
    const char **precision_names, **cache_names;        /* descriptor names, borrowed */
    bc_case *cases;                                     /* the selected cases, requested order, owned */
    size_t n_cases;
    size_t n_matrix_cases;                              /* cases of the whole matrix */
    bc_case_check *checks;                              /* n_cases */
    bc_plan plan;                                       /* the cases' instances, groups and order (plan.h) */
    size_t n_infeasible;
    void *backend_instance;                             /* created by the backend, destroyed in bc_context_free */
    bc_backend_info backend_info;                       /* filled by describe */
    /* The backends list's other entries (cfg.n_more_backends); the other
     * instances (n_instances - 1) and their descriptions, all owned like the
     * first's; and the runner's view of every instance (the first included). */
    bc_context_plugin *more_backends;
    void **more_instances;
    bc_backend_info *more_infos;
    bc_runner_backend *runner_backends;                 /* n_instances, owned */
    /* The axes over backend settings (cfg.setting_axes, docs/config.md):
     * n_combos combinations of their values (1 without axes), the first
     * axis outermost; one backend instance per backends entry and
     * combination, entry-major: instance i is entry i / n_combos with
     * combination i % n_combos (instance 0 is backend_instance above, the
     * others more_instances[i - 1]). combo_texts holds combination s's
     * values at [s * cfg.n_setting_axes], borrowed from cfg; the cases point
     * at them. instance_settings[i] is what instance i was created with;
     * instance_values[i] its values when they differ from the entry's
     * (owned), else NULL. */
    size_t n_combos, n_instances;
    const char **axis_names;  /* cfg.n_setting_axes, owned array of borrowed names */
    const char **combo_texts; /* n_combos x cfg.n_setting_axes, owned array of borrowed texts */
    bc_settings *instance_settings;
    bc_setting_value **instance_values;
    /* The score stage (cfg.score_given; docs/config.md): the scorer's
     * plugin and settings (scorer.plugin NULL without one), its label, its
     * instance (created light and described in step 4, destroyed by
     * bc_context_free) and description, and the runner's view of it; its
     * precision: one of the run's precisions (borrowed) or one loaded for
     * it (score_precision_own). */
    bc_context_plugin scorer;
    const char *scorer_label;
    void *scorer_instance;
    bc_backend_info scorer_info;
    bc_runner_backend scorer_backend;
    bc_context_plugin score_precision_own;
    const char *score_precision_name;
    const bc_precision_ops *score_precision_ops;
    bc_run_meta meta;
    bc_run_report run;                                  /* the header for reporters */
} bc_context;

/* Step 2 for one plugin out->plugin: resolves spec's settings group against
 * its table (defaults, types, ranges, unknown names) into out (desc, values,
 * settings); for a plugin with more_settings (since 2.2), its own rows
 * first, then the rows it returns for them, appended. prefix names the
 * plugin in errors. out's settings are freed by bc_context_free_settings,
 * after the plugin's last instance is gone. */
bc_status bc_context_resolve_settings(const bc_config *cfg, const bc_plugin_spec *spec, bc_context_plugin *out,
                                      const char *prefix, bc_error *err);
void bc_context_free_settings(bc_context_plugin *p);

/* As bc_context_resolve_settings for p, from n_sets "NAME=VALUE" strings
 * (libconfig values) instead of a bench.cfg (`benchctl plugins NAME --set
 * ...`); errors are located at "--set". */
bc_status bc_context_resolve_cli_settings(const bc_plugin *p, const char *const *sets, size_t n_sets,
                                          bc_context_plugin *out, bc_error *err);

/* Prefixes err's message with "prefix: " (keeping code and hint); returns
 * err's code. For the context's files (context.c, context_settings.c). */
bc_status bc_context_prefix_error(bc_error *err, const char *prefix);

/* Builds ctx (steps 1-6 above). On failure returns the code with err's
 * message (and hint) set; ctx must still be freed. */
bc_status bc_context_open(bc_context *ctx, const bc_context_args *args, bc_error *err);

/* Fills rc (and reps[ctx->cfg.n_reporters]) to run ctx's cases. rc borrows
 * from ctx and reps. */
void bc_context_runner_config(const bc_context *ctx, bc_runner_config *rc, bc_runner_reporter *reps);

/* The backend (plugin, instance) that runs case k of ctx's cases (the plan's). */
const bc_runner_backend *bc_context_backend_of(const bc_context *ctx, size_t k);

/* Describes a case in one phrase: "bf16 retain, batch 4 x 2 samples, prompt 32, response 16". */
void bc_context_describe_case(const bc_case *c, char *buf, size_t n);

/* Destroys the backend instance, then frees everything. Safe on a zeroed ctx. */
void bc_context_free(bc_context *ctx);

#endif
