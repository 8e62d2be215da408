/* config.h: bench.cfg (libconfig) parsed into a bc_config, and validated.
 *
 * bc_config_load reads the file, applies the command line's overrides
 * (overrides.h), checks the harness's own schema (keys, types, ranges) and
 * fills bc_config. A plugin's settings group is checked against its table
 * later, once the plugin is loaded (settings.h).
 * Every error names the file, line, setting and what is allowed, e.g.
 *   bench.cfg:12: matrix.batch_sizes: must be a non-empty list of integers >= 1
 * The schema is documented in docs/config.md.
 */
#ifndef BENCHCTL_CONFIG_H
#define BENCHCTL_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"

/* One plugin named in bench.cfg, with its settings group (may be NULL). */
typedef struct bc_plugin_spec {
    char *name;              /* a plugin name, or a path ending in ".so" */
    const void *settings;    /* opaque: the config_setting_t of its settings, or NULL */
    int line;                /* line in the file where it is named (0 if from the CLI or a default) */
    char *where;             /* the setting's path for messages, e.g. "reporters.[1]";
                                "<key> (default)" for a default entry */
    char *label;             /* a backends entry's label (the reports' name of the backend), or NULL:
                                the plugin's name */
} bc_plugin_spec;

/* One backend setting the matrix varies (matrix.backend_settings.NAME):
 * its values in file order, distinct. */
typedef struct bc_setting_axis {
    char *name;         /* the setting's name, owned */
    const void *values; /* opaque: its config_setting_t, a list or one value */
    int line;           /* where it is given (0: the command line) */
    char **texts;       /* n_values, each value as text (strings unquoted: "continuous", 16, true), owned */
    size_t n_values;
} bc_setting_axis;

enum { BC_CFG_DIST_REPLICATE = 0, BC_CFG_DIST_SHARD = 1 };
/* run.refit (docs/config.md): no refit, before every rollout (warmup
 * included), or before the case's first measured rollout. */
enum { BC_CFG_REFIT_OFF = 0, BC_CFG_REFIT_PER_ROLLOUT = 1, BC_CFG_REFIT_PER_CASE = 2 };

/* run.quiet_check: what run does when the machine is not quiet before the
 * first case (run/hostload.h): nothing, a warning (the default), or stop. */
enum { BC_CFG_QUIET_OFF = 0, BC_CFG_QUIET_WARN = 1, BC_CFG_QUIET_REFUSE = 2 };

/* run.isolation when not given: 0 "none" (docs/performance.md says why). */
#define BC_CFG_DEFAULT_ISOLATION 0
/* distributed.timeout_s when bench.cfg gives none (docs/scale.md): longer
 * than any case a shard round waits for. */
#define BC_CFG_DEFAULT_DIST_TIMEOUT_S 1800.0

typedef struct bc_config {
    char *path;          /* file as given */
    char *sha256;        /* hex digest of the resolved config text (after overrides) */

    char **plugin_paths; /* plugin_path list from the file, in order */
    size_t n_plugin_paths;

    bc_plugin_spec backend;  /* the backend, or the first entry of the backends list */
    bc_plugin_spec *more_backends; size_t n_more_backends; /* the backends list's other entries, in order */
    bc_plugin_spec *backends_block; /* the backends list as allocated (its [0] copied to backend), owned */
    bc_plugin_spec *precisions; size_t n_precisions;       /* "precisions" list, names distinct */
    bc_plugin_spec *cache_policies; size_t n_cache_policies; /* default [ "retain" ], names distinct */
    bc_plugin_spec *reporters; size_t n_reporters;          /* default [ "console" ], may repeat */

    /* The matrix, in file order; each list non-empty, values >= 1 and distinct
     * (a single value is a one-element list). */
    uint32_t *batch_sizes; size_t n_batch_sizes;
    uint32_t *samples_per_prompt; size_t n_samples_per_prompt;
    uint32_t *prompt_lengths; size_t n_prompt_lengths; /* [0] when absent: the backend's prompts decide */
    int prompt_lengths_given;                           /* matrix.prompt_lengths is in the config */
    uint32_t *response_lengths; size_t n_response_lengths;
    /* matrix.backend_settings, in file order (none when absent): axes over
     * the backend's own settings, each backend of the run checked against
     * them once it is loaded (context.c). */
    bc_setting_axis *setting_axes; size_t n_setting_axes;

    bc_sampling sampling;        /* defaults 0.0, 1.0, 0, 1234 */
    uint32_t warmup, iterations; /* defaults 1, 5; iterations >= 1 (max_iterations when adaptive) */
    /* The stop rule (docs/config.md, run.*): fixed (adaptive 0,
     * min_iterations == max_iterations == iterations) or adaptive (any of
     * run.min_iterations, max_iterations, target_rel_ci given). */
    int adaptive;
    uint32_t min_iterations, max_iterations;
    double target_rel_ci;        /* NAN: not given */
    double max_seconds_per_case; /* NAN: not given */
    int isolation;               /* run.isolation: 0 "none", 1 "process" (default BC_CFG_DEFAULT_ISOLATION) */
    double case_timeout_s;       /* run.case_timeout_s; NAN: not given (no timeout) */
    int quiet_check;             /* run.quiet_check: BC_CFG_QUIET_* (default warn) */
    int refit;                   /* run.refit: BC_CFG_REFIT_* (default off) */
    /* The score group (docs/config.md): score_given 0 when absent. score's
     * name is score.backend (a backend plugin, or the label of a backends
     * entry; NULL: the run's backend), its settings score.settings (NULL:
     * the named entry's own), where "score"; score_precision's name is
     * score.precision (default "fp32"), where "score.precision". */
    int score_given;
    bc_plugin_spec score;
    bc_plugin_spec score_precision;

    /* distributed (docs/scale.md): the mode, and the comm plugin bench.cfg
     * names (NULL: "auto", the one the launcher implies; owned). */
    int distributed_mode; /* BC_CFG_DIST_REPLICATE (default) or BC_CFG_DIST_SHARD */
    char *distributed_comm;
    double distributed_timeout_s; /* a collective's deadline (BC_CFG_DEFAULT_DIST_TIMEOUT_S when not given) */

    void *cfg; /* opaque: the libconfig config_t, owned */

    /* Settings that came from the command line, for error locations: the
     * setting path each one set (e.g. "run.iterations", "reporters") and the
     * label messages use instead of file:line (e.g. "--set run.iterations",
     * "--reporter"). Owned. */
    char **override_keys;
    char **override_labels;
    size_t n_overrides;
} bc_config;

/* Loads and validates path. overrides are "a.b=value" strings from --set
 * (value parsed as libconfig would: 3, 0.5, "text", true, [1, 2]).
 * reporter_override, if non-NULL, is a comma-separated list of reporter names
 * replacing the file's reporters list (from --reporter); it applies before
 * the overrides, so "reporters.[0].settings.path=..." sets its first one's.
 * On error returns non-OK with err->message set; cfg is left empty. */
bc_status bc_config_load(bc_config *cfg, const char *path, const char *const *overrides, size_t n_overrides,
                         const char *reporter_override, bc_error *err);

/* As bc_config_load, with path's text already read (text_len bytes, by
 * bc_config_read_text, e.g. on a distributed run's rank 0): path names the
 * file in messages and its folder is where @include looks. text NULL: read
 * path. */
bc_status bc_config_load_text(bc_config *cfg, const char *path, const char *text, size_t text_len,
                              const char *const *overrides, size_t n_overrides, const char *reporter_override,
                              bc_error *err);

/* Reads path (and checks the files it @includes) under the limits
 * bc_config_load applies; *text (NUL-terminated, *len bytes) is the
 * caller's to free. */
bc_status bc_config_read_text(const char *path, char **text, size_t *len, bc_error *err);

/* Writes where spec was named, for messages about it (e.g. a plugin that is
 * not found): "bench.cfg:5", "--set backend.name", "--reporter", or just the
 * file's path for a default (e.g. reporters defaulting to console). */
void bc_config_spec_location(const bc_config *cfg, const bc_plugin_spec *spec, char *buf, size_t n);

/* Writes where the setting at path (e.g. "matrix.response_lengths") comes
 * from: "bench.cfg:12", "--set matrix.response_lengths", or the file's path. */
void bc_config_setting_location(const bc_config *cfg, const char *path, char *buf, size_t n);

/* Value j of axis: its config_setting_t (opaque), for checking it against
 * a backend's settings table (settings.h). */
const void *bc_config_axis_value(const bc_setting_axis *axis, size_t j);

/* Frees everything cfg owns. Safe on a zeroed or partly filled cfg. */
void bc_config_free(bc_config *cfg);

#endif
