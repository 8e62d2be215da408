/* runfile.h: a run read back from what a run wrote, for the commands that
 * work on finished runs (compare, report, run --resume).
 *
 * Three formats, told apart by their contents, not their names:
 *   - benchctl's JSON report (schema 1 or 2; a .gz file is read through zlib);
 *   - benchctl's jsonl journal (a "run" record, "case" records as cases
 *     finished, an "end" record if the run ended; a torn last line, as
 *     SIGKILL can leave, is skipped with a warning in bc_runfile.warning);
 *   - a JSON document with only the seed's keys, as DeepSpeed's OPSD
 *     rollout benchmark writes (no "fields" list: the fields are the keys of
 *     each profile, in the order of the first profile).
 * Every value is kept as it was written: a null stays NaN, a missing number
 * -1 (counts, bytes) or NaN (times). Nothing is recomputed except what the
 * file does not hold (a case's statistics are computed from its profiles).
 *
 * Ownership: bc_runfile owns everything it points at; bc_runfile_free frees
 * it all.
 */
#ifndef BENCHCTL_RUNFILE_H
#define BENCHCTL_RUNFILE_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"
#include "schedule.h"

typedef enum bc_runfile_format {
    BC_RUNFILE_JSON = 1,     /* benchctl's JSON report */
    BC_RUNFILE_JOURNAL = 2,  /* benchctl's jsonl journal */
    BC_RUNFILE_SEED_JSON = 3 /* seed keys only (DeepSpeed's OPSD rollout benchmark) */
} bc_runfile_format;

/* A backend setting as the run recorded it. */
typedef struct bc_runfile_pair {
    char *name;
    char *value;          /* as text: 3, true, "x" -> x (strings unquoted), null -> "null" */
    bc_setting_type type; /* BC_SETTING_INT, _FLOAT, _BOOL or _STRING, from the JSON value's type */
    int64_t i;            /* INT, BOOL */
    double f;             /* FLOAT (and INT, as a double) */
    int workload;         /* named in the report's "workload_settings" (BC_SETTING_WORKLOAD) */
} bc_runfile_pair;

/* A plugin the run used. */
typedef struct bc_runfile_plugin {
    char *kind, *name, *version, *path;
    int abi_major, abi_minor; /* -1 unknown */
} bc_runfile_plugin;

/* One case as the file holds it. */
typedef struct bc_runfile_case {
    uint32_t index; /* position in the requested order */
    char *precision;    /* plugin name ("bf16"); the seed's dtype when that is all there is */
    char *dtype;        /* "bfloat16", or NULL */
    char *cache_policy; /* plugin name, or "release"/"retain" from release_inference_cache, or NULL */
    int release_cache;  /* release_inference_cache (the case's, else the run's): 1, 0, or -1 unknown */
    uint32_t batch_size, samples_per_prompt, prompt_length, response_length;
    bc_case_status status; /* BC_CASE_OK when the file says nothing */
    bc_status error_code;  /* from the file's error_code name; BC_OK when it has none */
    char *message;         /* "" when none */
    char *backend;         /* the backend that ran it (2.2 reports' "backend"), NULL when the file does not say */
    /* The backend settings the matrix varied (2.3 reports' "backend_settings"
     * of the case): n_settings names and values as text, owned; 0 when none. */
    char **setting_names, **setting_values;
    size_t n_settings;
    uint32_t n_iterations; /* profiles */
    double *values;        /* n_iterations x run.n_fields, row-major; NAN = null */
    double *stats;         /* run.n_fields x BC_N_STATS (stats.h), computed from values */
    int64_t returned_response_length, prompt_width_tokens, prompt_min_tokens, prompt_max_tokens; /* -1 unknown */
    int64_t prompt_p50_tokens, prompt_pad_tokens;                                              /* -1 unknown */
    double peak_memory_mib, held_between_rollouts_mib; /* NAN unknown */
    double wall_ms;                                    /* NAN unknown */
    /* extended.memory, bytes, -1 unknown */
    int64_t weights_bytes, kv_cache_bytes, workspace_bytes, host_peak_bytes, device_peak_bytes, device_total_bytes;
    int64_t resident_bytes, peak_rss_bytes, device_free_before_bytes, device_free_after_bytes;
    int rebuilt;                                       /* 0 when unknown */
    int resumed;                                       /* "resumed": true (taken from a journal) */
    /* Why its iterations stopped, its relative CI and the machine's load
     * (ABI 2.1 keys: stop_reason, extended.total_ms_rel_ci, extended.host_load);
     * BC_STOP_NONE and NAN when the file does not say. */
    bc_stop_reason stop_reason;
    double total_ms_rel_ci, load_avg_start, load_avg_end, cpu_steal_share;
    double token_agreement; /* extended.token_agreement (2.2 reports), NAN when absent */
    bc_schedule_store schedule; /* extended.schedule (2.2 reports); schedule.pub.struct_size 0 when absent */
    /* The case's identity across runs: its axis values, its number format
     * (the dtype, so a benchctl "bf16" case matches a DeepSpeed "bfloat16"
     * one) and whether the cache was released, e.g.
     * "batch_size=4 samples_per_prompt=2 prompt_length=128 response_length=32 dtype=bfloat16 cache=retain",
     * then " NAME=VALUE" for each backend setting the matrix varied
     * (bc_runfile_key_settings). Two runs' cases match when their keys are
     * equal; the backend's other settings are not part of it (compare lists
     * the ones that differ). */
    char *key;
    /* A distributed run's case block (docs/scale.md): dist.struct_size 0
     * when the file has none; its strings and per-rank arrays (3 x
     * dist.n_ranks doubles in dist_arrays) are owned here. */
    bc_case_distributed dist;
    char *dist_host, *dist_slowest_host;
    double *dist_arrays;
} bc_runfile_case;

typedef struct bc_runfile {
    char *path;
    bc_runfile_format format;
    int schema_version;                  /* 0 for the seed format */
    /* The environment, NULL / -1 when the file does not say. */
    char *model, *device, *gpu, *driver, *backend, *benchctl_version, *git_commit, *config_sha256, *start_time;
    char *cpu_model, *cpu_kernels, *hostname, *config_path, *model_family;
    int64_t cpu_threads;
    /* environment.cpu's topology: 0 / NULL when the file does not say */
    int64_t cpu_logical, cpu_cores, cpu_packages, cpu_threads_per_core;
    char *cpu_topology_note;
    char *quiet_check; /* environment.quiet_check, NULL: none */
    /* the score stage's scorer ("scorer"; scorer_backend NULL: none) and
     * run.refit ("refit"), environment.memcpy_gb_per_s (NAN: none) */
    char *scorer_backend, *scorer_precision, *scorer_model, *scorer_device, *scorer_family;
    int64_t scorer_parameters, scorer_vocab_size;
    char *refit;
    double memcpy_gb_per_s;
    int64_t n_parameters, n_layers, hidden_size, n_heads, ffn_size, vocab_size, max_positions;
    uint32_t warmup, iterations;
    int has_sampling;                    /* the file has a "sampling" object */
    double temperature, top_p;
    int64_t top_k, seed;
    bc_runfile_plugin *plugins;          /* n_plugins */
    size_t n_plugins;
    bc_runfile_pair *backend_settings;   /* as written, in order */
    size_t n_backend_settings;
    char **field_names;                  /* n_fields */
    uint32_t n_fields;
    /* n_fields: what each field is, from the file's "metrics" (a 2.4 host's
     * reports) or, for a field it lacks, this host's descriptor of that name
     * (fields.h), else unit "" and better neither. name points at
     * field_names[f]; unit and help are owned. */
    bc_metric_desc *field_descs;
    bc_runfile_case *cases;              /* in the file's order (requested order for JSON, finish order for a journal) */
    size_t n_cases;
    size_t cases_cap;                    /* cases allocated (the reader's) */
    int complete;                        /* JSON: 1; journal: 1 when it has its "end" record */
    char warning[256];                   /* e.g. a torn last journal line that was skipped; "" if none */
    int64_t world_size;                  /* top-level "world_size" (processes that ran the work); -1 when absent (compare) */
    /* The top-level "distributed" block (docs/scale.md); has_distributed 0
     * when absent. ranks (n_ranks) and the strings are owned. */
    int has_distributed;
    char *dist_mode, *dist_comm;
    uint32_t dist_world_size;
    bc_rank_info *ranks;
    size_t n_ranks;
    /* "stopping": the rule that stopped each case's iterations (has_stopping 0
     * when absent: a fixed count of iterations), and "selection": the cases the
     * command line chose (selected_* NULL and has_selection 0 when absent). */
    int has_stopping, has_selection;
    uint32_t min_iterations, max_iterations, n_matrix_cases;
    double target_rel_ci, max_seconds_per_case; /* NAN: none */
    char *selected_cases, *selected_only;
} bc_runfile;

/* Reads path (format decided by its contents). On failure returns a code
 * with err's message naming the file (and the line, for a journal), and out
 * is left empty. */
bc_status bc_runfile_read(const char *path, bc_runfile *out, bc_error *err);

/* The key (see bc_runfile_case.key) of a case with these axes; cache is
 * "release" or "retain". malloc'ed, owned by the caller; NULL without memory. */
char *bc_runfile_key(uint32_t batch_size, uint32_t samples_per_prompt, uint32_t prompt_length,
                     uint32_t response_length, const char *dtype, const char *cache);

/* key followed by " NAME=VALUE" for each of the n backend settings the
 * matrix varied (names[i], values[i]). Frees key; NULL without memory. */
char *bc_runfile_key_settings(char *key, const char *const *names, const char *const *values, size_t n);

/* key followed by " backend=NAME": the key of a case of a run with a
 * backends list, where the same axes run once per backend (a file whose
 * cases name more than one backend keys them so). Frees key; NULL without
 * memory. */
char *bc_runfile_key_backend(char *key, const char *backend);

/* The values rf's cases take on axis, in the order they first appear: axis
 * is "backend" (the backend each case names) or a backend setting the
 * matrix varied. *out is a malloc'ed array (owned by the caller) of strings
 * rf owns. Returns the count; 0 (and NULL) when no case has one or without
 * memory. */
size_t bc_runfile_axis_values(const bc_runfile *rf, const char *axis, const char ***out);

/* Keeps only the cases of rf whose axis (as above) is value (compare --by
 * AXIS): their keys lose their " AXIS=VALUE", so they match the cases of
 * another value of the same file, and rf's path becomes "PATH [value]" (for
 * a setting "PATH [AXIS=value]") for the output. */
bc_status bc_runfile_keep_axis(bc_runfile *rf, const char *axis, const char *value, bc_error *err);

/* Index of the field called name, -1 if the file has none. */
int bc_runfile_field(const bc_runfile *rf, const char *name);

/* The case whose key is key, or NULL. */
const bc_runfile_case *bc_runfile_find(const bc_runfile *rf, const char *key);

/* The backend setting called name, or NULL. */
const char *bc_runfile_setting(const bc_runfile *rf, const char *name);

void bc_runfile_free(bc_runfile *rf);

#endif
