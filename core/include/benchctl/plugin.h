/* benchctl/plugin.h: the one public header a benchctl plugin includes.
 *
 * A plugin is a shared object that exports one symbol, BENCHCTL_PLUGIN_ENTRY
 * ("benchctl_plugin_entry"), of type bc_plugin_entry_fn. It returns a pointer
 * to a static bc_plugin_desc that lives as long as the library is loaded.
 *
 * Four kinds of plugin:
 *   backend    runs a rollout (expand prompts, generate, post-process)
 *   precision  describes a number format (element size, conversions, tolerance)
 *   cache      an inference-cache policy (retain or release between rollouts)
 *   reporter   writes results (json, csv, console, jsonl, ...)
 *
 * Versioning (checked by the host before any plugin function other than the
 * entry is called):
 *   - magic must be BENCHCTL_PLUGIN_MAGIC;
 *   - abi_major must equal the host's; a mismatch is refused with one line
 *     naming both versions;
 *   - abi_minor may be newer than the host's: the host reads only the fields it
 *     knows. Every struct that crosses this header starts with struct_size, or
 *     sits inside one that does, and only grows at its end. Each field added
 *     after 1.0 is marked "(since 1.N)"; the host checks struct_size before
 *     reading it, and a plugin checks host->struct_size before calling a
 *     service added later.
 *
 * Ownership (who allocates, who frees):
 *   - Descriptors, settings tables and ops tables are static in the plugin.
 *   - The host owns the library handle; it calls dlclose only after every
 *     object a plugin created has been destroyed.
 *   - An object a plugin creates (void *instance from create/open) is freed by
 *     the plugin's matching destroy hook, which the host always calls, once,
 *     even after an error.
 *   - Everything the host passes in (settings values, cases, reports, the host
 *     table) is owned by the host and valid only during the call, except the
 *     host table and the settings values, which live until destroy.
 *   - bc_error is caller-allocated; the plugin fills it with bc_error_set().
 *
 * Rules for plugins: never call exit() or abort() on bad input, never write to
 * stdout, and report problems through a bc_status plus bc_error. Use
 * host->log for diagnostics (it writes to stderr, with the plugin's name).
 */
#ifndef BENCHCTL_PLUGIN_H
#define BENCHCTL_PLUGIN_H

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BENCHCTL_PLUGIN_MAGIC 0x42435450u /* "BCTP" */
#define BENCHCTL_ABI_MAJOR 1
#define BENCHCTL_ABI_MINOR 1
#define BENCHCTL_PLUGIN_ENTRY "benchctl_plugin_entry"

#if defined(_WIN32)
#define BC_EXPORT __declspec(dllexport)
#else
#define BC_EXPORT __attribute__((visibility("default")))
#endif

/* ---------------------------------------------------------------- status */

typedef enum bc_status {
    BC_OK = 0,
    BC_ERR_INVALID = 1,     /* bad argument or setting */
    BC_ERR_UNSUPPORTED = 2, /* valid, but this plugin cannot do it */
    BC_ERR_NOMEM = 3,       /* host or device out of memory */
    BC_ERR_IO = 4,          /* file could not be read or written */
    BC_ERR_FORMAT = 5,      /* a file's contents are malformed */
    BC_ERR_DEVICE = 6,      /* accelerator missing or failed */
    BC_ERR_INTERNAL = 7     /* a bug: an invariant did not hold */
} bc_status;

/* Filled by whoever fails; message is one line, no trailing newline. */
typedef struct bc_error {
    bc_status code;
    char message[512];
} bc_error;

/* Sets err (if non-NULL) and returns code, so callers can write
 *   return bc_error_set(err, BC_ERR_INVALID, "top_k %d < 0", k); */
static inline bc_status bc_error_set(bc_error *err, bc_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static inline bc_status bc_error_set(bc_error *err, bc_status code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* A double that was not measured. Reporters write it as null. */
#define BC_NOT_MEASURED (NAN)
#define bc_is_measured(x) (!isnan(x))

/* --------------------------------------------------------------- settings */

typedef enum bc_setting_type {
    BC_SETTING_INT = 1,    /* int64; range [min, max] when has_range */
    BC_SETTING_FLOAT = 2,  /* double; range [min, max] when has_range */
    BC_SETTING_BOOL = 3,   /* default in default_int (0 or 1) */
    BC_SETTING_STRING = 4, /* free text, e.g. a path; "" allowed */
    BC_SETTING_ENUM = 5    /* one of choices[] (NULL-terminated) */
} bc_setting_type;

/* One row of a plugin's settings table. bench.cfg may give only settings the
 * plugin declares; the host validates type and range before anything runs and
 * fills in defaults. */
typedef struct bc_setting_desc {
    const char *name;
    bc_setting_type type;
    int64_t default_int;        /* INT and BOOL */
    double default_float;       /* FLOAT */
    const char *default_string; /* STRING and ENUM */
    int has_range;              /* INT and FLOAT: 1 if min/max apply */
    double min, max;            /* inclusive */
    const char *const *choices; /* ENUM: NULL-terminated list */
    const char *help;           /* one line */
} bc_setting_desc;

/* The resolved value of one setting; the host passes an array of these in the
 * same order as the plugin's settings table. Strings are owned by the host and
 * live until the instance is destroyed. */
typedef struct bc_setting_value {
    int64_t i;     /* INT, BOOL */
    double f;      /* FLOAT */
    const char *s; /* STRING, ENUM */
} bc_setting_value;

/* ----------------------------------------------------------- host services */

typedef enum bc_log_level { BC_LOG_ERROR = 0, BC_LOG_WARN = 1, BC_LOG_INFO = 2, BC_LOG_DEBUG = 3 } bc_log_level;

/* An output file opened through the host: written to a temporary file next to
 * path and renamed into place by output_commit, gzip-compressed when the path
 * ends in ".gz". "-" means standard output (not atomic, never compressed). */
typedef struct bc_output bc_output;

/* What the host offers a plugin. Plugins never link against benchctl. */
typedef struct bc_host {
    uint32_t struct_size;
    uint16_t abi_major, abi_minor;
    const char *benchctl_version;
    /* Logs one line to stderr, prefixed with the plugin's name. */
    void (*log)(const struct bc_host *host, bc_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 3, 4)))
#endif
        ;
    /* Monotonic clock, nanoseconds. */
    uint64_t (*now_ns)(void);
    /* Atomic, optionally gzip'ed output files (see bc_output). Every
     * output_open is followed by exactly one output_commit or output_abort,
     * which frees the handle. */
    bc_output *(*output_open)(const struct bc_host *host, const char *path, bc_error *err);
    bc_status (*output_write)(bc_output *out, const void *data, size_t len, bc_error *err);
    bc_status (*output_printf)(bc_output *out, bc_error *err, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 3, 4)))
#endif
        ;
    bc_status (*output_commit)(bc_output *out, bc_error *err);
    void (*output_abort)(bc_output *out);
    /* 1 when standard error is a terminal (reporters use it for progress). */
    int stderr_is_tty;
    void *host_private; /* the host's own; plugins do not touch it */
} bc_host;

/* -------------------------------------------------------------- precision */

/* What a precision plugin tells a backend. The backend owns the kernels for
 * each precision it supports and refuses the others by name. */
typedef struct bc_precision_ops {
    uint32_t struct_size;
    const char *dtype;     /* the name reports use: "float32", "float16", "bfloat16" */
    uint32_t element_size; /* bytes per stored element */
    /* Converts n values. Required. */
    void (*to_f32)(const void *src, float *dst, size_t n);
    void (*from_f32)(const float *src, void *dst, size_t n);
    /* Relative tolerance of a logit compared with an fp32 reference,
     * |a - b| <= rel_tolerance * max(1, max|ref|). */
    double rel_tolerance;
} bc_precision_ops;

/* ------------------------------------------------------------ cache policy */

typedef struct bc_case bc_case;

/* An inference-cache policy decides whether a backend keeps its KV cache and
 * workspace between rollouts (retain) or frees them after each rollout and
 * takes them back before the next (release). The host times the backend's
 * cache_release and cache_acquire hooks and reports them as cache_release_ms
 * and cache_acquire_ms. */
typedef struct bc_cache_ops {
    uint32_t struct_size;
    /* 1 if the backend should release its cache after every rollout. Required. */
    int (*release_after_rollout)(const bc_case *c);
} bc_cache_ops;

/* ------------------------------------------------------------------- case */

typedef struct bc_sampling {
    double temperature; /* 0 = greedy */
    double top_p;       /* (0, 1]; 1 = off */
    int64_t top_k;      /* 0 = off */
    uint64_t seed;
} bc_sampling;

/* One point of the matrix, as the backend sees it. */
struct bc_case {
    uint32_t struct_size;
    uint32_t index; /* position in the requested order, 0-based */
    uint32_t batch_size;
    uint32_t samples_per_prompt;
    uint32_t prompt_length;   /* tokens */
    uint32_t response_length; /* tokens requested */
    const char *precision;    /* precision plugin name, e.g. "bf16" */
    const bc_precision_ops *precision_ops;
    const char *cache_policy; /* cache plugin name, e.g. "retain" */
    int release_cache;        /* what the policy said for this case */
    bc_sampling sampling;
};

/* Effective batch: rows generated at once. */
static inline uint64_t bc_case_effective_batch(const bc_case *c) {
    return (uint64_t)c->batch_size * c->samples_per_prompt;
}

/* ---------------------------------------------------------------- backend */

/* What a backend measures inside generate(). Fields it cannot measure stay
 * BC_NOT_MEASURED (doubles) or -1 (integers); the host never invents them. */
typedef struct bc_generation_stats {
    uint32_t struct_size;
    double prefill_forward_ms;
    double decode_forward_ms;
    int64_t num_decode_forwards;
    int64_t num_generated_tokens;     /* required: tokens produced, all rows */
    int64_t returned_response_length; /* tokens per row actually returned */
} bc_generation_stats;

/* Memory the backend accounts for, in bytes. -1 = unknown. */
typedef struct bc_memory_stats {
    uint32_t struct_size;
    int64_t weights_bytes;
    int64_t kv_cache_bytes;
    int64_t workspace_bytes;
    int64_t host_peak_bytes;     /* high-water mark of the backend's host allocator */
    int64_t device_peak_bytes;   /* high-water mark on the accelerator, -1 if none */
    int64_t device_free_bytes;   /* cudaMemGetInfo-style free, -1 if none */
    int64_t device_total_bytes;  /* -1 if none */
} bc_memory_stats;

/* Describes the backend for the run report. Strings are static or owned by
 * the backend instance. */
typedef struct bc_backend_info {
    uint32_t struct_size;
    const char *model;  /* e.g. "facebook/opt-125m (synthetic)" */
    const char *device; /* e.g. "cpu", "cuda:0" */
    const char *device_name; /* e.g. the GPU's name; NULL on CPU */
    const char *driver;      /* driver version, NULL if none */
} bc_backend_info;

/* A backend's hooks. Stage hooks (expand_prompts, generate, post_process)
 * return only when the work is complete, synchronizing any device, so the
 * host's wall-clock timing of each is exact. */
typedef struct bc_backend_ops {
    uint32_t struct_size;
    /* Required. Creates an instance from its resolved settings. */
    bc_status (*create)(const bc_host *host, const bc_setting_value *settings, void **out_instance, bc_error *err);
    /* Required. Frees everything create and later hooks allocated. */
    void (*destroy)(void *instance);
    /* Required. Fills info; strings owned by the instance. */
    bc_status (*describe)(void *instance, bc_backend_info *info, bc_error *err);
    /* Optional. Memory the case will need, before it runs (for `benchctl plan`). */
    bc_status (*plan_memory)(void *instance, const bc_case *c, bc_memory_stats *out, bc_error *err);
    /* Required. Prepares a case: checks precision and shape, sizes buffers.
     * Returns BC_ERR_UNSUPPORTED for a precision it has no kernels for. */
    bc_status (*begin_case)(void *instance, const bc_case *c, bc_error *err);
    /* Required. The three stages of one rollout. */
    bc_status (*expand_prompts)(void *instance, bc_error *err);
    bc_status (*generate)(void *instance, bc_generation_stats *out, bc_error *err);
    bc_status (*post_process)(void *instance, bc_error *err);
    /* Optional. Cache policy hooks: free the KV cache and workspace, and take
     * them back. Without them, a release policy is a no-op for this backend. */
    bc_status (*cache_release)(void *instance, bc_error *err);
    bc_status (*cache_acquire)(void *instance, bc_error *err);
    /* Optional. Resets the high-water marks (called after warmup). */
    void (*reset_peak_memory)(void *instance);
    /* Optional. Reads memory accounting. */
    bc_status (*read_memory)(void *instance, bc_memory_stats *out, bc_error *err);
    /* Required. Ends the case started by begin_case (also after a failure). */
    void (*end_case)(void *instance);
} bc_backend_ops;

/* --------------------------------------------------------------- reports */

/* Per-iteration fields, in this order. Reporters get n_fields and names in
 * bc_run_report so a reporter built against an older minor still works. */
typedef enum bc_field {
    BC_FIELD_PROMPT_EXPANSION_MS = 0,
    BC_FIELD_GENERATION_MS,
    BC_FIELD_POST_PROCESSING_MS,
    BC_FIELD_TOTAL_MS,
    BC_FIELD_TOKENS_PER_SECOND,
    BC_FIELD_NUM_GENERATED_TOKENS,
    BC_FIELD_PREFILL_FORWARD_MS,
    BC_FIELD_DECODE_FORWARD_MS,
    BC_FIELD_GENERATION_OVERHEAD_MS,
    BC_FIELD_NUM_DECODE_FORWARDS,
    BC_FIELD_CACHE_ACQUIRE_MS,
    BC_FIELD_CACHE_RELEASE_MS,
    BC_FIELD_COUNT_V1_0
} bc_field;

/* Summary of one field over the measured iterations. All NAN when n == 0
 * (no iteration measured it). p50: interpolated median. p95: nearest rank,
 * sorted[max(0, ceil(0.95 n) - 1)]. stddev: population (divides by n). */
typedef struct bc_stats {
    uint32_t n;
    double mean, p50, p95, min, max, stddev;
} bc_stats;

typedef enum bc_case_status {
    BC_CASE_OK = 0,
    BC_CASE_FAILED = 1,  /* a hook returned an error; message says which */
    BC_CASE_SKIPPED = 2  /* not run (e.g. run interrupted) */
} bc_case_status;

typedef struct bc_case_report {
    uint32_t struct_size;
    const bc_case *c;
    bc_case_status status;
    const char *message;       /* "" when ok */
    uint32_t n_iterations;     /* measured iterations completed */
    const double *values;      /* n_iterations x n_fields, row-major; NAN = null */
    const bc_stats *stats;     /* n_fields */
    int64_t returned_response_length; /* -1 if unknown */
    double peak_memory_mb;     /* device peak on a device, else backend host peak; NAN if unknown */
    bc_memory_stats memory;    /* after the measured iterations */
    int64_t peak_rss_bytes;    /* process peak RSS over the measured iterations, -1 unknown */
    int64_t device_free_before_bytes, device_free_after_bytes; /* -1 if none */
    double wall_ms;            /* case wall time including warmup */
} bc_case_report;

typedef struct bc_plugin_ref {
    const char *kind, *name, *version, *path;
} bc_plugin_ref;

typedef struct bc_run_report {
    uint32_t struct_size;
    uint32_t schema_version; /* of the JSON output, see docs/reporters.md */
    const char *benchctl_version;
    const char *git_commit;
    const char *config_path;
    const char *config_sha256;
    const char *start_time_utc; /* ISO 8601 */
    const char *cpu_model;
    const char *hostname;
    bc_backend_info backend;
    const char *backend_name; /* plugin name */
    uint32_t warmup, iterations;
    bc_sampling sampling;
    const char *const *precisions; uint32_t n_precisions;    /* as requested */
    const char *const *cache_policies; uint32_t n_cache_policies;
    const bc_plugin_ref *plugins; uint32_t n_plugins;
    uint32_t n_fields;
    const char *const *field_names; /* n_fields, e.g. "total_ms" */
    uint32_t n_cases;
    const bc_case_report *cases; /* requested order; only finished ones in case_finished */
    /* (since 1.1) The backend's settings table and their resolved values
     * (defaults filled in), so reports can say how the backend ran, e.g.
     * shared_prefill. Read only when bc_run_report_has(run, backend_values). */
    const bc_setting_desc *backend_settings;
    const bc_setting_value *backend_values;
    uint32_t n_backend_settings;
} bc_run_report;

/* 1 when a run report from the host is large enough to hold field f (a
 * field added after 1.0; the host may be older than the plugin). */
#define bc_run_report_has(run, f) \
    ((run)->struct_size >= offsetof(bc_run_report, f) + sizeof((run)->f))

/* A reporter's hooks. */
typedef struct bc_reporter_ops {
    uint32_t struct_size;
    /* Required. Called once before the first case. run->cases is empty. */
    bc_status (*open)(const bc_host *host, const bc_setting_value *settings, const bc_run_report *run,
                      void **out_instance, bc_error *err);
    /* Optional. A case is about to run: index i of n in execution order. */
    void (*case_started)(void *instance, const bc_case *c, uint32_t i, uint32_t n, double eta_s);
    /* Optional. A case finished (ok or failed). For journals. */
    bc_status (*case_finished)(void *instance, const bc_run_report *run, const bc_case_report *cr, bc_error *err);
    /* Required. All cases are done; run->cases holds every case in the
     * requested order. Writes the final output. */
    bc_status (*close)(void *instance, const bc_run_report *run, bc_error *err);
    /* Required. Frees the instance (also when close was not called). */
    void (*destroy)(void *instance);
} bc_reporter_ops;

/* ------------------------------------------------------------- descriptor */

typedef enum bc_plugin_kind {
    BC_KIND_BACKEND = 1,
    BC_KIND_PRECISION = 2,
    BC_KIND_CACHE = 3,
    BC_KIND_REPORTER = 4
} bc_plugin_kind;

typedef struct bc_plugin_desc {
    uint32_t magic;      /* BENCHCTL_PLUGIN_MAGIC */
    uint16_t abi_major;  /* BENCHCTL_ABI_MAJOR */
    uint16_t abi_minor;  /* BENCHCTL_ABI_MINOR */
    uint32_t struct_size; /* sizeof(bc_plugin_desc) */
    bc_plugin_kind kind;
    const char *name;        /* what bench.cfg uses, e.g. "opt" */
    const char *version;     /* the plugin's own version, e.g. "0.1.0" */
    const char *description; /* one line */
    const bc_setting_desc *settings;
    uint32_t n_settings;
    /* Points at a bc_backend_ops, bc_precision_ops, bc_cache_ops or
     * bc_reporter_ops, according to kind. */
    const void *ops;
} bc_plugin_desc;

typedef const bc_plugin_desc *(*bc_plugin_entry_fn)(void);

/* Fills the version fields of a descriptor:
 *   static const bc_plugin_desc desc = { BC_PLUGIN_DESC_HEADER, BC_KIND_..., ... }; */
#define BC_PLUGIN_DESC_HEADER BENCHCTL_PLUGIN_MAGIC, BENCHCTL_ABI_MAJOR, BENCHCTL_ABI_MINOR, sizeof(bc_plugin_desc)

/* Defines the entry symbol returning desc. */
#define BC_PLUGIN_DEFINE(desc)                                                       \
    BC_EXPORT const bc_plugin_desc *benchctl_plugin_entry(void);                     \
    BC_EXPORT const bc_plugin_desc *benchctl_plugin_entry(void) { return &(desc); }

#ifdef __cplusplus
}
#endif
#endif /* BENCHCTL_PLUGIN_H */
