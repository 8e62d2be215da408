/* benchctl/plugin.h: the one public header a benchctl plugin includes.
 *
 * A plugin is a shared object that exports one symbol, BENCHCTL_PLUGIN_ENTRY
 * ("benchctl_plugin_entry"), of type bc_plugin_entry_fn. It returns a pointer
 * to a static bc_plugin_desc that lives as long as the library is loaded.
 *
 * Five kinds of plugin:
 *   backend    runs a rollout (expand prompts, generate, post-process)
 *   precision  describes a number format (element size, conversions, tolerance)
 *   cache      an inference-cache policy (retain or release between rollouts)
 *   reporter   writes results (json, csv, console, jsonl, ...)
 *   comm       (since 2.2) joins the processes of a distributed run (mpi)
 *
 * ------------------------------------------------------------------------
 * Compatibility policy (ABI 2.x)
 *
 * The host checks, before any plugin function other than the entry runs:
 * magic == BENCHCTL_PLUGIN_MAGIC, abi_major == the host's, and the descriptor
 * at least BC_PLUGIN_DESC_MIN_SIZE bytes (the 2.0 descriptor). abi_minor may
 * be older or newer than the host's, in both directions:
 *
 *   - Every struct that crosses this header starts with `struct_size` and
 *     ends with BC_ABI_TAIL(); a reader reads a field only when the writer's
 *     struct_size covers it (BC_HAS). The writer is whoever fills the struct:
 *     the plugin for descriptors, ops tables and tables it returns; the host
 *     for everything it passes in, including structs a plugin fills in
 *     (bc_generation_stats, bc_memory_stats, bc_backend_info): there the
 *     plugin writes only fields the host's struct_size covers (BC_SET).
 *   - Every array that crosses this header carries its element size next to
 *     its count (settings tables, setting values, case reports, plugin refs)
 *     and is walked with BC_AT(type, base, elem_size, i), never with the
 *     reader's sizeof, so a larger element from a newer writer is stepped
 *     over whole and a smaller one from an older writer is never over-read.
 *   - Statistics and per-iteration fields are tables of names plus flat
 *     arrays of doubles; a reporter looks them up by name, so new fields and
 *     new statistics need no reporter change. (since 2.4) Every field has a
 *     bc_metric_desc (unit, which way is better, scope, help) in the run
 *     report, and a backend declares measurements of its own as rows of a
 *     metric table (bc_plugin_desc.metrics), filled through read_metrics:
 *     a new measurement is one row in its backend, no header change.
 *   - An optional hook the plugin's table is too short to hold reads as NULL
 *     ("not provided"); a plugin checks BC_HAS(host, bc_host, service) before
 *     calling a host service added after the host it runs in.
 *
 * Each minor is one layout: every struct, table and enum of 2.N is what
 * the header released as 2.N says, and a later change is the next minor.
 * tests/abi builds plugins against the previous minor's header as released
 * (tests/abi/abi_2_<N-1>.h) and runs them in this host.
 *
 * A minor (2.N) may: append fields to the end of a struct, append hooks to
 * the end of an ops table or the host table, append status codes, setting
 * types, axis bits, per-iteration fields and statistics, and add new types
 * (enums, structs passed to a new hook). Each addition is marked
 * "(since 2.N)" and must have a meaning for readers that ignore it. A
 * minor's first appended field must begin at or past the previous
 * version's sizeof (an 8-byte field after an 8-byte-aligned end does; a
 * smaller one would land in the old tail padding, where BC_HAS would take
 * padding for the field): bc_case_report's 2.1 fields start with a double
 * for that reason.
 * A major (3.0) is needed to remove or reorder anything, change a field's
 * type or meaning, make an optional hook required, or change bc_error,
 * whose size is fixed for all of 2.x. tests/abi builds a host and a plugin
 * of every kind with appended fields (BC_ABI_TAIL) and runs each against
 * the other side built from this header, in both directions.
 * ------------------------------------------------------------------------
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
 *   - Arrays a backend hands back (bc_generation_stats.decode_step_ms) are
 *     owned by the backend and valid until its next hook call.
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
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BENCHCTL_PLUGIN_MAGIC 0x42435450u /* "BCTP" */
#define BENCHCTL_ABI_MAJOR 2
#ifndef BENCHCTL_ABI_MINOR
#define BENCHCTL_ABI_MINOR 6
#endif
#define BENCHCTL_PLUGIN_ENTRY "benchctl_plugin_entry"

#if defined(_WIN32)
#define BC_EXPORT __declspec(dllexport)
#else
#define BC_EXPORT __attribute__((visibility("default")))
#endif

#if defined(__GNUC__)
#define BC_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define BC_PRINTF(fmt_index, first_arg)
#endif

/* Ends every growable struct. Empty in every real build; tests/abi defines
 * it to append fields, standing in for a future minor. */
#ifndef BC_ABI_TAIL
#define BC_ABI_TAIL(type)
#endif

/* ------------------------------------------------- sizes, growth, arrays */

/* Bytes of type up to and including field. */
#define BC_SIZE_THROUGH(type, field) (offsetof(type, field) + sizeof(((const type *)0)->field))

/* 1 when the struct at ptr (which starts with struct_size) holds field. */
#define BC_HAS(ptr, type, field) ((size_t)(ptr)->struct_size >= BC_SIZE_THROUGH(type, field))

/* 1 when an array element of elem_size bytes holds field. */
#define BC_ELEM_HAS(elem_size, type, field) ((size_t)(elem_size) >= BC_SIZE_THROUGH(type, field))

/* Element i of an array whose elements are elem_size bytes apart. */
#define BC_AT(type, base, elem_size, i) \
    ((const type *)(const void *)((const char *)(base) + (size_t)(i) * (size_t)(elem_size)))

/* Writes ptr->field = value when the reader's struct (ptr->struct_size)
 * holds field; otherwise does nothing. For structs a plugin fills in. */
#define BC_SET(ptr, type, field, value)                           \
    do {                                                          \
        if (BC_HAS(ptr, type, field)) (ptr)->field = (value);     \
    } while (0)

/* ---------------------------------------------------------------- status */

/* What happened. Callers decide on the code, never on a message's words. */
typedef enum bc_status {
    BC_OK = 0,
    BC_ERR_INVALID = 1,     /* bad argument, or a request that makes no sense */
    BC_ERR_UNSUPPORTED = 2, /* valid, but this plugin cannot do it (e.g. a precision) */
    BC_ERR_NOMEM = 3,       /* host or device out of memory */
    BC_ERR_IO = 4,          /* a file could not be read or written */
    BC_ERR_FORMAT = 5,      /* a file's contents are malformed */
    BC_ERR_DEVICE = 6,      /* accelerator missing or failed */
    BC_ERR_INTERNAL = 7,    /* a bug: an invariant did not hold */
    BC_ERR_NOT_FOUND = 8,   /* a file, directory, plugin or name does not exist */
    BC_ERR_ABI = 9,         /* plugin and host do not speak the same ABI */
    BC_ERR_SETTING = 10,    /* a setting's value is wrong or contradicts another */
    BC_ERR_WRONG_KIND = 11, /* a plugin of another kind than the one wanted */
    BC_ERR_INFEASIBLE = 12, /* a case this backend cannot run (too long, too large) */
    BC_ERR_INTERRUPTED = 13 /* stopped by a signal */
} bc_status;

/* "ok", "invalid", "unsupported", ..., "unknown" for a code from a newer minor. */
static inline const char *bc_status_name(bc_status code) {
    static const char *const names[] = {"ok",        "invalid", "unsupported", "out of memory", "i/o",
                                        "format",    "device",  "internal",    "not found",     "abi",
                                        "setting",   "wrong kind", "infeasible", "interrupted"};
    return (unsigned)code < sizeof names / sizeof names[0] ? names[code] : "unknown";
}

/* Filled by whoever fails: a code, one line of message (no trailing newline)
 * and, optionally, one line saying what to do about it. Its layout is fixed
 * for all of ABI 2.x. */
typedef struct bc_error {
    bc_status code;
    char message[512];
    char hint[256]; /* "" when there is none */
} bc_error;

/* Sets err's code and message (if err is non-NULL), clears its hint and
 * returns code, so callers can write
 *   return bc_error_set(err, BC_ERR_SETTING, "top_k %d < 0", k); */
static inline bc_status bc_error_set(bc_error *err, bc_status code, const char *fmt, ...) BC_PRINTF(3, 4);
static inline bc_status bc_error_set(bc_error *err, bc_status code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->hint[0] = '\0';
    }
    return code;
}

/* Sets err's hint (after bc_error_set) and returns err's code. */
static inline bc_status bc_error_hint(bc_error *err, const char *fmt, ...) BC_PRINTF(2, 3);
static inline bc_status bc_error_hint(bc_error *err, const char *fmt, ...) {
    if (!err) return BC_OK;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->hint, sizeof err->hint, fmt, ap);
    va_end(ap);
    return err->code;
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

/* One row of a plugin's settings table (an array with setting_size in the
 * descriptor). bench.cfg may give only settings the plugin declares; the
 * host validates type and range before anything runs and fills in defaults. */
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
    /* (since 2.4) bc_setting_flag bits; 0 from an older plugin (read with
     * BC_ELEM_HAS(setting_size, bc_setting_desc, flags)). */
    uint32_t flags;
    BC_ABI_TAIL(bc_setting_desc)
} bc_setting_desc;

/* (since 2.4) What the host does with a setting beyond validating it
 * (bc_setting_desc.flags). */
typedef enum bc_setting_flag {
    /* INT: in a distributed run the host sets it to the rank's local rank
     * (its index among the ranks on its host) unless bench.cfg gives it: a
     * device index, so each rank of a host takes its own accelerator. */
    BC_SETTING_LOCAL_RANK = 1u << 0,
    /* Two runs whose values differ measure different work (e.g. rows that
     * stop at end-of-sequence against rows forced to the full length):
     * `benchctl compare` refuses them, as it does another model. */
    BC_SETTING_WORKLOAD = 1u << 1
} bc_setting_flag;

/* ---------------------------------------------------- metrics (since 2.4)
 *
 * A metric is one measured figure with its meaning: the run report's
 * per-iteration fields (the host's own and every backend's declared ones)
 * each have one, and reporters, `benchctl report`, `compare` and --metric
 * read unit and direction from it, never from the name. */

/* Which way a change is an improvement. */
typedef enum bc_metric_better {
    BC_BETTER_NEITHER = 0, /* informational (a count, a shape): compare shows a change, never judges it */
    BC_BETTER_HIGHER = 1,  /* throughput, occupancy, bytes saved */
    BC_BETTER_LOWER = 2    /* latency, overhead, waste */
} bc_metric_better;

/* When a metric is measured. */
typedef enum bc_metric_scope {
    /* once per rollout: read after each iteration's post_process (warmup
     * iterations included, not recorded); statistics over the measured ones */
    BC_METRIC_PER_ITERATION = 0,
    /* once per case: read after its measured iterations; the report holds it
     * as the last measured iteration's value (null in the others), so its
     * statistics have n = 1 */
    BC_METRIC_PER_CASE = 1
} bc_metric_scope;

/* One row of a metric table (an array with its element size next to its
 * count). name is the report's field name: [a-z0-9_], at most 63 bytes, not
 * a name of the host's with another unit, direction or scope. */
typedef struct bc_metric_desc {
    const char *name;        /* e.g. "kv_bytes_saved" */
    const char *unit;        /* "ms", "tokens", "tokens/s", "bytes", "rows", "1" (a ratio), ... */
    bc_metric_better better;
    bc_metric_scope scope;
    const char *help;        /* one line */
    BC_ABI_TAIL(bc_metric_desc)
} bc_metric_desc;

/* "neither", "higher", "lower"; "unknown" for a value from a newer minor. */
static inline const char *bc_metric_better_name(bc_metric_better b) {
    static const char *const names[] = {"neither", "higher", "lower"};
    return (unsigned)b < sizeof names / sizeof names[0] ? names[b] : "unknown";
}

/* "iteration", "case"; "unknown" for a value from a newer minor. */
static inline const char *bc_metric_scope_name(bc_metric_scope s) {
    static const char *const names[] = {"iteration", "case"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown";
}

/* The resolved value of one setting. */
typedef struct bc_setting_value {
    int64_t i;     /* INT, BOOL */
    double f;      /* FLOAT */
    const char *s; /* STRING, ENUM */
    BC_ABI_TAIL(bc_setting_value)
} bc_setting_value;

/* A plugin's resolved settings: one value per row of its settings table, in
 * table order. Owned by the host; lives until the instance is destroyed. */
typedef struct bc_settings {
    uint32_t struct_size;
    uint32_t count;      /* rows of the plugin's table */
    uint32_t value_size; /* bytes between values[i] and values[i + 1] */
    const bc_setting_value *values;
    BC_ABI_TAIL(bc_settings)
} bc_settings;

/* Value i (a row index of the plugin's own table). */
static inline const bc_setting_value *bc_setting_at(const bc_settings *s, uint32_t i) {
    return BC_AT(bc_setting_value, s->values, s->value_size, i);
}

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
    void (*log)(const struct bc_host *host, bc_log_level level, const char *fmt, ...) BC_PRINTF(3, 4);
    /* Monotonic clock, nanoseconds. */
    uint64_t (*now_ns)(void);
    /* Atomic, optionally gzip'ed output files (see bc_output). Every
     * output_open is followed by exactly one output_commit or output_abort,
     * which frees the handle. */
    bc_output *(*output_open)(const struct bc_host *host, const char *path, bc_error *err);
    bc_status (*output_write)(bc_output *out, const void *data, size_t len, bc_error *err);
    bc_status (*output_printf)(bc_output *out, bc_error *err, const char *fmt, ...) BC_PRINTF(3, 4);
    bc_status (*output_commit)(bc_output *out, bc_error *err);
    void (*output_abort)(bc_output *out);
    /* Checks that output_open(path) can succeed later (the directory exists
     * and is writable; "-" always can), creating and removing nothing the
     * user would see. For a reporter's check_settings. */
    bc_status (*output_check)(const struct bc_host *host, const char *path, bc_error *err);
    /* 1 when standard error is a terminal (reporters use it for progress). */
    int stderr_is_tty;
    void *host_private; /* the host's own; plugins do not touch it */
    /* (since 2.1) The most detailed level log shows: BC_LOG_ERROR with -q,
     * BC_LOG_WARN by default, BC_LOG_INFO with -v, BC_LOG_DEBUG with -vv. A
     * reporter writes progress to stderr only at BC_LOG_WARN or above. */
    bc_log_level log_level;
    BC_ABI_TAIL(bc_host)
} bc_host;

/* -------------------------------------------------------------- precision */

/* What a precision plugin tells a backend: the format's name, size,
 * conversions and the tolerance its results are held to. */
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
    BC_ABI_TAIL(bc_precision_ops)
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
    BC_ABI_TAIL(bc_cache_ops)
} bc_cache_ops;

/* ------------------------------------------------------------------- case */

typedef struct bc_sampling {
    uint32_t struct_size;
    double temperature; /* 0 = greedy */
    double top_p;       /* (0, 1]; 1 = off */
    int64_t top_k;      /* 0 = off */
    uint64_t seed;
    BC_ABI_TAIL(bc_sampling)
} bc_sampling;

/* The axes of the matrix, as bits (bc_backend_ops.rebuild_axes). */
typedef enum bc_axis {
    BC_AXIS_PRECISION = 1 << 0,
    BC_AXIS_CACHE_POLICY = 1 << 1,
    BC_AXIS_BATCH_SIZE = 1 << 2,
    BC_AXIS_SAMPLES_PER_PROMPT = 1 << 3,
    BC_AXIS_PROMPT_LENGTH = 1 << 4,
    BC_AXIS_RESPONSE_LENGTH = 1 << 5,
    BC_AXIS_NONE = 1 << 30 /* "no axis is costly to switch" (0 means "not said") */
} bc_axis;

/* One point of the matrix, as the backend sees it. */
struct bc_case {
    uint32_t struct_size;
    uint32_t index; /* position in the requested order, 0-based */
    uint32_t batch_size;
    uint32_t samples_per_prompt;
    uint32_t prompt_length;   /* tokens; 0 = the backend's prompts decide (a prompts file) */
    uint32_t response_length; /* tokens requested */
    const char *precision;    /* precision plugin name, e.g. "bf16" */
    const bc_precision_ops *precision_ops;
    const char *cache_policy; /* cache plugin name, e.g. "retain" */
    int32_t release_cache;    /* what the policy said for this case */
    const bc_sampling *sampling;
    /* (since 2.2) The backend that runs the case, as the reports name it:
     * bench.cfg's backend, or one entry of its backends list (the
     * outermost axis of the matrix), by its label (default: the plugin's
     * name). NULL from a host before 2.2. */
    const char *backend;
    /* (since 2.3) The backend settings the matrix varies
     * (bench.cfg's matrix.backend_settings), in the config's order: the
     * names, and this case's values as text ("continuous", "16", "true",
     * strings unquoted); the backend runs with these values. n_settings 0
     * and NULL arrays when the matrix varies none, or from a host before
     * 2.3. */
    const char *const *setting_names;
    const char *const *setting_values;
    uint32_t n_settings;
    BC_ABI_TAIL(bc_case)
};

/* Effective batch: rows generated at once. */
static inline uint64_t bc_case_effective_batch(const bc_case *c) {
    return (uint64_t)c->batch_size * c->samples_per_prompt;
}

/* ---------------------------------------------------------------- backend */

/* What a backend measures inside generate(). Its layout is frozen at 2.3:
 * a measurement added from 2.4 on is a row of the backend's metric table
 * (bc_plugin_desc.metrics, read_metrics), not a field here. The host keeps
 * reading every field below and reports each under its 2.3 name, with the
 * host's descriptor. The host sets every field to "unknown"
 * (BC_NOT_MEASURED for doubles, -1 for integers, NULL/0 for the step array)
 * before the call and never invents one the backend left. */
typedef struct bc_generation_stats {
    uint32_t struct_size;
    double prefill_forward_ms;
    double decode_forward_ms;
    int64_t num_decode_forwards;
    int64_t num_generated_tokens;     /* required: tokens produced, all rows */
    int64_t returned_response_length; /* tokens per row actually returned */
    /* From the start of generate to the first token of every row (prefill
     * plus the first sampling), milliseconds. */
    double first_token_ms;
    /* Wall time of each decode step (one forward plus sampling), owned by the
     * backend, valid until its next hook call. */
    const double *decode_step_ms;
    uint32_t n_decode_steps;
    int64_t num_prefill_tokens; /* token slots the prefill processed: rows x prompt width */
    int64_t num_decode_tokens;  /* tokens the decode steps produced, all rows */
    /* The prompts as they ran: the padded width, and the shortest and longest
     * real prompt (they differ with a prompts file). */
    int64_t prompt_width_tokens, prompt_min_tokens, prompt_max_tokens;
    /* (since 2.2) For a backend that drives an engine outside benchctl (the
     * worker backend's child process): the engine's own times of this
     * rollout's three stages, as the engine measured them, ms. The host's
     * stage times around the hooks also hold the transport; the reports
     * show engine_total_ms (their sum) and protocol_overhead_ms (total_ms
     * minus it). The host sets them to BC_NOT_MEASURED; an in-process
     * backend leaves them so. */
    double engine_prompt_expansion_ms, engine_generation_ms, engine_post_processing_ms;
    /* (since 2.2) The generated token ids of this rollout, for the token
     * agreement between backends (greedy float32 cases): token_rows rows
     * (all rows, batch x samples) of token_cols ids, row r at
     * tokens + r * token_stride, prompts left out. Owned by the backend,
     * valid until its next hook call; NULL (the host's default) when not
     * kept. */
    const int32_t *tokens;
    int64_t token_rows, token_cols, token_stride;
    /* ---- (since 2.2) response lengths and continuous batching; the host
     * sets them unknown (-1, NaN) before generate ---- */
    /* Response token slots the batch held: a static batch rows x returned
     * length (finished rows still run), continuous batching the rows (token
     * 0) plus the rows of every decode step. Against num_generated_tokens
     * (the useful tokens) it gives the padding waste. */
    int64_t padded_token_slots;
    /* The rows' response lengths, tokens. */
    double response_length_min, response_length_p50, response_length_p95, response_length_max;
    /* DeepSpeed's continuous profile: prefill forwards run (1 for a static
     * batch), the scheduler's and the cache management's ms, the mean rows
     * a decode step generated for, the rows decoding at once (-1: static). */
    int64_t num_prefill_forwards;
    double scheduler_overhead_ms, cache_management_overhead_ms;
    double active_batch_size;
    int64_t continuous_batch_size;
    /* active_batch_size over the rows that could decode (the capacity, or
     * every row of a static batch). */
    double occupancy;
    /* The KV cache: pages held at the peak (-1: not paged), bytes held at the
     * peak, the share of the peak's page slots holding no token (NaN: not
     * paged), and the bytes a contiguous cache of the same case would take
     * beyond the peak (0: contiguous). */
    int64_t kv_pages_peak, kv_bytes_peak;
    double kv_fragmentation;
    int64_t kv_bytes_saved;
    /* (since 2.2) A LoRA actor's adapter, fused into the weights before
     * this rollout's generation and unfused after it (the OPT engine's
     * lora_adapter or lora_rank): the two times, ms, inside generate. The
     * host sets them to BC_NOT_MEASURED; a backend without an adapter
     * leaves them so (the reports' null). */
    double lora_fuse_ms, lora_unfuse_ms;
    /* (since 2.2) The prompts as they ran, with prompt_min_tokens and
     * prompt_max_tokens: the median real prompt of the batch (the lower
     * middle one), and the pad slots, batch x prompt_width_tokens minus the
     * real prompt tokens (0 when every prompt has the case's length). The
     * host sets them to -1 (unknown). */
    int64_t prompt_p50_tokens, prompt_pad_tokens;
    /* (since 2.3) The schedule of this rollout: step_active_rows
     * [n_decode_steps], the rows decode step k = 1.. generated for at
     * [k - 1]; and for schedule_rows rows (batch x samples, row order)
     * row_first_token_ms, the ms from the start of generate to the row's
     * token 0, and row_done_step, the decode steps run when the row
     * finished (0: at its token 0). Owned by the backend, valid until its
     * next hook call; NULL and -1 (the host's default) when not kept. */
    const int32_t *step_active_rows;
    int64_t schedule_rows;
    const double *row_first_token_ms;
    const int32_t *row_done_step;
    BC_ABI_TAIL(bc_generation_stats)
} bc_generation_stats;

/* Memory the backend accounts for, in bytes. -1 = unknown. */
typedef struct bc_memory_stats {
    uint32_t struct_size;
    int64_t weights_bytes;
    int64_t kv_cache_bytes;
    int64_t workspace_bytes;
    int64_t host_peak_bytes;    /* high-water mark of the backend's host allocator */
    int64_t device_peak_bytes;  /* high-water mark on the accelerator, -1 if none */
    int64_t device_free_bytes;  /* cudaMemGetInfo-style free, -1 if none */
    int64_t device_total_bytes; /* -1 if none */
    int64_t resident_bytes;     /* what the backend holds right now (device if any, else host) */
    BC_ABI_TAIL(bc_memory_stats)
} bc_memory_stats;

/* Describes the backend for the run report. Strings are static or owned by
 * the backend instance. The host sets every field to "unknown" (NULL, -1)
 * before describe. */
typedef struct bc_backend_info {
    uint32_t struct_size;
    const char *model;       /* e.g. "facebook/opt-125m (synthetic)" or the checkpoint path */
    const char *device;      /* e.g. "cpu", "cuda:0" */
    const char *device_name; /* the accelerator's name; NULL on a CPU */
    const char *driver;      /* driver version, NULL if none */
    /* The model's shape. */
    const char *model_family; /* e.g. "opt" */
    int64_t n_parameters;
    int64_t n_layers, hidden_size, n_heads, ffn_size, vocab_size, max_positions;
    /* How the CPU runs it (NULL / -1 when the work is on an accelerator). */
    const char *cpu_kernels; /* e.g. "avx512-bf16", "avx2", "portable" */
    int64_t cpu_threads;
    BC_ABI_TAIL(bc_backend_info)
} bc_backend_info;

/* (since 2.6) How a row of a rollout stopped. */
typedef enum bc_row_stop {
    BC_ROW_STOP_UNKNOWN = 0,
    BC_ROW_STOP_EOS = 1,    /* it produced the end-of-sequence token (kept as its last token) */
    BC_ROW_STOP_LENGTH = 2  /* it reached the case's response length without one (clipped) */
} bc_row_stop;

/* (since 2.6) The tokens of one rollout, row by row (batch x samples, row
 * order): what a scoring model scores, and what the RL-named fields
 * (response_length/mean, response_length/clip_ratio, ...) are counted from.
 *
 * Row r's prompt, as it ran and without padding, is prompt_lengths[r] ids
 * at prompt_tokens + r * prompt_stride; its response is
 * response_lengths[r] ids at response_tokens + r * response_stride. A
 * backend fills it in read_rollout (host-sized, BC_SET; the arrays owned by
 * the backend until its next hook call); the host passes one, every field
 * set, to a scorer's score hook.
 *
 * response_logprobs, same layout as response_tokens, is the rollout
 * engine's natural-log probability of each response token under the
 * model's own distribution: log_softmax of the logits at temperature 1,
 * before any temperature, top-k or top-p, whatever the sampling (so an
 * engine and a scorer of the same weights agree, and greedy rows have
 * one). NULL when the engine kept none. */
typedef struct bc_rollout_tokens {
    uint32_t struct_size;
    int64_t rows;
    const int32_t *prompt_tokens;
    const int64_t *prompt_lengths;
    int64_t prompt_stride;
    const int32_t *response_tokens;
    const int64_t *response_lengths;
    int64_t response_stride;
    const int32_t *row_stop; /* rows bc_row_stop values; NULL: unknown */
    const float *response_logprobs;
    BC_ABI_TAIL(bc_rollout_tokens)
} bc_rollout_tokens;

/* (since 2.6) What one refit moved (bc_backend_ops.refit). Host-sized,
 * every field -1 / NULL when the host calls; written with BC_SET. */
typedef struct bc_refit_stats {
    uint32_t struct_size;
    /* Bytes of the new weights read from their source (host memory, or the
     * checkpoint's files): what the host divides by refit_ms for
     * refit_gb_per_s. */
    int64_t source_bytes;
    /* Bytes written into the engine's weights (after conversion, quantising
     * or packing). */
    int64_t engine_bytes;
    const char *source; /* "host" or "checkpoint" (or the backend's word); owned by the backend */
    BC_ABI_TAIL(bc_refit_stats)
} bc_refit_stats;

/* A backend's hooks. Stage hooks (expand_prompts, generate, post_process)
 * return only when the work is complete, synchronizing any device, so the
 * host's wall-clock timing of each is exact.
 *
 * Life of an instance:
 *   create -> describe -> [check_case per case] -> prepare ->
 *     per case: begin_case -> iterations -> end_case -> ... -> destroy
 * validate and plan call create, describe, check_case (and plan_memory)
 * only: those must stay light (no weights loaded). */
typedef struct bc_backend_ops {
    uint32_t struct_size;
    /* Required. Creates an instance from its resolved settings. Light: reads
     * what describing the model needs (a checkpoint's config.json), loads no
     * weights. A setting that cannot work fails here (BC_ERR_SETTING,
     * BC_ERR_NOT_FOUND), naming the setting. */
    bc_status (*create)(const bc_host *host, const bc_settings *settings, void **out_instance, bc_error *err);
    /* Required. Frees everything create and later hooks allocated. */
    void (*destroy)(void *instance);
    /* Required. Fills info (host-sized; write with BC_SET); strings owned by the instance. */
    bc_status (*describe)(void *instance, bc_backend_info *info, bc_error *err);
    /* Optional. Can this case run, without loading anything heavy? E.g. a
     * prompt plus response longer than the model's positions
     * (BC_ERR_INFEASIBLE), a precision without kernels (BC_ERR_UNSUPPORTED).
     * The host calls it for every case before the first runs. */
    bc_status (*check_case)(void *instance, const bc_case *c, bc_error *err);
    /* Optional. Heavy setup (loading a checkpoint), once, before the first
     * case of a run. A failure here means the backend could not start. */
    bc_status (*prepare)(void *instance, bc_error *err);
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
    /* Optional. Reads memory accounting (host-sized; write with BC_SET). */
    bc_status (*read_memory)(void *instance, bc_memory_stats *out, bc_error *err);
    /* Required. Ends the case started by begin_case (also after a failure). */
    void (*end_case)(void *instance);
    /* The axes (bc_axis bits) whose change between two cases makes
     * begin_case rebuild costly state (weights in another precision). The
     * host runs cases grouped by them. 0 (not said) = BC_AXIS_PRECISION;
     * BC_AXIS_NONE = nothing is costly to switch. */
    uint32_t rebuild_axes;
    /* (since 2.4) Optional. Metric rows the instance can name only once it
     * exists (the worker backend's engine declares its own), after the
     * descriptor's table: *n_rows rows, *row_size bytes apart, owned by the
     * instance until destroy. Called once, after describe. */
    bc_status (*more_metrics)(void *instance, const bc_metric_desc **rows, uint32_t *n_rows, uint32_t *row_size,
                              bc_error *err);
    /* (since 2.4) Required with a metric table (the descriptor's or
     * more_metrics'). The values of the backend's metrics of one scope:
     * values[n_values] in table order (the descriptor's rows, then
     * more_metrics'), each BC_NOT_MEASURED when the host calls; the backend
     * writes the rows of that scope it measured and leaves the others.
     * BC_METRIC_PER_ITERATION: after every iteration's post_process and the
     * cache policy's release (the rollout just run); BC_METRIC_PER_CASE: once, after the case's last
     * measured iteration. A value must be finite; an error or an infinite
     * value fails the case ("read_metrics: ..."). */
    bc_status (*read_metrics)(void *instance, bc_metric_scope scope, double *values, uint32_t n_values,
                              bc_error *err);
    /* (since 2.6) Optional. The tokens of the rollout just run (called
     * after post_process; see bc_rollout_tokens), for the score stage and
     * the RL-named fields. A backend without it has neither. */
    bc_status (*read_rollout)(void *instance, bc_rollout_tokens *out, bc_error *err);
    /* (since 2.6) Optional; the hook that makes a backend a scorer (the
     * teacher of on-policy distillation, the reference or old policy of
     * PPO and GRPO). One forward pass over each row's prompt + response of
     * in (host-owned, every array set); writes logprobs[r *
     * in->response_stride + t], the natural-log probability (temperature 1)
     * of response token t of row r given everything before it, for t <
     * in->response_lengths[r]. The host calls it between begin_case and
     * end_case of the scorer's own case (the rollout case's shape with the
     * score block's precision) and times it (score_ms). */
    bc_status (*score)(void *instance, const bc_rollout_tokens *in, float *logprobs, bc_error *err);
    /* (since 2.6) Optional. Loads a new set of the model's weights into the
     * engine, as an RL trainer hands its updated weights to inference:
     * from the source the backend's settings name (host memory or a
     * checkpoint), with whatever conversion, quantising or packing the
     * engine's kernels need, so that the next rollout runs on them. Called
     * between rollouts of a case (run.refit): before each rollout
     * (per_rollout, the warmup's included) or before the case's first
     * measured one (per_case), after begin_case; host-timed (refit_ms). */
    bc_status (*refit)(void *instance, bc_refit_stats *out, bc_error *err);
    BC_ABI_TAIL(bc_backend_ops)
} bc_backend_ops;

/* --------------------------------------------------------------- reports */

/* Per-iteration fields and their statistics are tables: bc_run_report names
 * the n_fields fields (e.g. "total_ms", "tokens_per_second") and the n_stats
 * statistics (e.g. "n", "mean", "p50", "p95", "p99", "cv"); see
 * docs/reporters.md for each one's definition. Look them up by name with
 * bc_run_field_index and bc_run_stat_index; a name an older host lacks
 * gives -1. */

typedef enum bc_case_status {
    BC_CASE_OK = 0,
    BC_CASE_FAILED = 1, /* a hook returned an error; message says which */
    BC_CASE_SKIPPED = 2 /* not run (e.g. run interrupted) */
} bc_case_status;

/* (since 2.1) Why a case's measured iterations stopped (bc_case_report
 * stop_reason). The rules are the host's (docs/config.md, run.*). */
typedef enum bc_stop_reason {
    BC_STOP_NONE = 0,           /* the case never reached its measured iterations (not started) */
    BC_STOP_FIXED = 1,          /* ran the fixed count, run.iterations */
    BC_STOP_STABLE = 2,         /* the median's confidence interval met run.target_rel_ci */
    BC_STOP_MAX_ITERATIONS = 3, /* reached run.max_iterations without meeting the target */
    BC_STOP_MAX_SECONDS = 4,    /* the case's wall time crossed run.max_seconds_per_case */
    BC_STOP_INTERRUPTED = 5,    /* a signal stopped it */
    BC_STOP_FAILED = 6          /* a hook failed */
} bc_stop_reason;

/* "none", "fixed", "stable", "max_iterations", "max_seconds", "interrupted",
 * "failed"; "unknown" for a reason from a newer minor. */
static inline const char *bc_stop_reason_name(bc_stop_reason r) {
    static const char *const names[] = {"none",        "fixed",       "stable", "max_iterations",
                                        "max_seconds", "interrupted", "failed"};
    return (unsigned)r < sizeof names / sizeof names[0] ? names[r] : "unknown";
}

/* ---------------------------------------------- distributed runs (since 2.2)
 *
 * A run launched by mpirun (docs/scale.md) runs on world_size ranks, joined
 * by a comm plugin. Modes:
 *   replicate  every rank runs every case at once on its own prompts (the
 *              sampling seed plus the rank); each iteration starts after a
 *              barrier and is timed by each rank alone; results are gathered
 *              on rank 0 after the case. Durations only.
 *   shard      the cases are spread over the ranks; each case ran on one.
 */

/* One rank of a distributed run (bc_distributed.ranks, rank_info_size apart). */
typedef struct bc_rank_info {
    int32_t rank, local_rank; /* local_rank: the rank's index on its host */
    const char *host;         /* the host name the rank ran on */
    const char *device;       /* the backend's device there, e.g. "cpu", "cuda:1"; NULL unknown */
    BC_ABI_TAIL(bc_rank_info)
} bc_rank_info;

typedef struct bc_distributed {
    uint32_t struct_size;
    const char *comm;    /* the comm plugin's name, e.g. "mpi" */
    const char *mode;    /* "replicate" or "shard" */
    uint32_t world_size; /* ranks */
    uint32_t rank_info_size;
    const bc_rank_info *ranks; /* world_size, rank order; walk with bc_dist_rank */
    BC_ABI_TAIL(bc_distributed)
} bc_distributed;

/* Rank i of d. */
static inline const bc_rank_info *bc_dist_rank(const struct bc_distributed *d, uint32_t i) {
    return BC_AT(bc_rank_info, d->ranks, d->rank_info_size, i);
}

/* One case of a distributed run. Times are each rank's mean total_ms over
 * its measured iterations (the rank's time); docs/scale.md defines every
 * figure. NAN (-1 for integers) where not applicable or not measured. */
typedef struct bc_case_distributed {
    uint32_t struct_size;
    uint32_t n_ranks;  /* ranks that ran the case: world_size (replicate) or 1 (shard) */
    int32_t rank;      /* shard: the rank that ran it; replicate: -1 */
    const char *host;  /* shard: that rank's host; replicate: NULL */
    /* replicate: sum over iterations of every rank's tokens / sum over
     * iterations of the slowest rank's total_ms (the step's throughput) */
    double step_tokens_per_second;
    double ideal_tokens_per_second; /* sum over ranks of each rank's tokens / its own time */
    double straggler_efficiency;    /* mean rank time / max rank time (1 = no straggler) */
    double straggler_tax_ms;        /* max rank time - median rank time */
    double rank_time_min_ms, rank_time_mean_ms, rank_time_max_ms, rank_time_std_ms; /* over ranks */
    int32_t slowest_rank;           /* rank with the max time; -1 unknown */
    const char *slowest_host;
    double peak_memory_max_mib, peak_memory_sum_mib; /* over ranks of peak_memory_mib */
    int32_t full_length;            /* 1: every rank returned response_length tokens per row
                                       (lengths forced), 0: some stopped early, -1 unknown */
    /* Per rank, n_ranks each, rank order: the rank's time, tokens/s
     * (its tokens / its time) and peak memory. */
    const double *rank_time_ms, *rank_tokens_per_second, *rank_peak_memory_mib;
    BC_ABI_TAIL(bc_case_distributed)
} bc_case_distributed;

/* (since 2.3) One case's schedule, as its last measured rollout's
 * bc_generation_stats gave it (step_active_rows, row_first_token_ms,
 * row_done_step). Owned by the host. */
typedef struct bc_case_schedule {
    uint32_t struct_size;
    uint32_t n_steps;                 /* decode steps */
    const int32_t *step_active_rows;  /* [n_steps]: rows decode step k = 1.. generated for, at [k - 1] */
    int64_t n_rows;                   /* rows, batch x samples */
    const double *row_first_token_ms; /* [n_rows]: ms from the start of generate to the row's token 0 */
    const int32_t *row_done_step;     /* [n_rows]: decode steps run when the row finished */
    BC_ABI_TAIL(bc_case_schedule)
} bc_case_schedule;

typedef struct bc_case_report {
    uint32_t struct_size;
    const bc_case *c;
    bc_case_status status;
    bc_status error_code;  /* BC_OK unless failed or skipped */
    const char *message;   /* "" when ok */
    uint32_t n_iterations; /* measured iterations completed */
    const double *values;  /* n_iterations x n_fields, row-major; NAN = null */
    const double *stats;   /* n_fields x n_stats, row-major; NAN = null */
    int64_t returned_response_length; /* -1 if unknown */
    int64_t prompt_width_tokens, prompt_min_tokens, prompt_max_tokens; /* as they ran; -1 unknown */
    double peak_memory_mib;      /* device peak on a device, else backend host peak; NAN if unknown */
    const bc_memory_stats *memory; /* read after the measured iterations */
    /* What the backend holds between rollouts, after the cache policy ran
     * (read after the last measured iteration's release or retain). */
    int64_t held_between_rollouts_bytes; /* -1 if unknown */
    int64_t peak_rss_bytes;              /* process peak RSS over the measured iterations, -1 unknown */
    int64_t device_free_before_bytes, device_free_after_bytes; /* -1 if none */
    double wall_ms;   /* case wall time including warmup */
    int32_t rebuilt;  /* 1 when this case switched a costly axis (rebuild_axes) */
    /* (since 2.1) Half the width of the 95% confidence interval of the
     * median of total_ms, divided by that median, over the measured
     * iterations (the figure run.target_rel_ci is compared with); NAN when
     * fewer than 6 iterations were measured. */
    double total_ms_rel_ci;
    /* (since 2.1) The host's 1-minute load average when the case began and
     * when it ended, and the share of all CPU time the hypervisor stole
     * while it ran (0..1); NAN where the system does not say. */
    double load_avg_start, load_avg_end;
    double cpu_steal_share;
    /* (since 2.1) Why the measured iterations stopped. */
    bc_stop_reason stop_reason;
    /* ---- (since 2.2, distributed runs) ----
     * What the ranks of a distributed run did in this case (see
     * bc_case_distributed); NULL in a single-process run. */
    const struct bc_case_distributed *distributed;
    /* ---- end of the distributed block ---- */
    /* (since 2.2) A run with a backends list, greedy float32 cases: the
     * share (0..1) of this case's generated tokens (its last measured
     * rollout's) equal to those of the same case on the first backend that
     * ran it with tokens; NAN when not checked (that first backend's own
     * case, sampling, another dtype, a backend that keeps no tokens). */
    double token_agreement;
    /* (since 2.2) The median real prompt and the pad slots, as the last
     * measured rollout's bc_generation_stats gave them; -1 unknown. */
    int64_t prompt_p50_tokens, prompt_pad_tokens;
    /* (since 2.3) The last measured rollout's schedule; NULL when the
     * backend kept none (or the case ran in another process or rank). */
    const bc_case_schedule *schedule;
    /* (since 2.5) 1 when the case was taken from the journal of the run
     * being resumed (run --resume): measured then, under that run's load;
     * 0 when it ran in this run. */
    int32_t resumed;
    BC_ABI_TAIL(bc_case_report)
} bc_case_report;

typedef struct bc_plugin_ref {
    const char *kind, *name, *version, *path;
    uint16_t abi_major, abi_minor; /* what the plugin was built against */
    BC_ABI_TAIL(bc_plugin_ref)
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
    const char *backend_name; /* plugin name */
    const bc_backend_info *backend;
    uint32_t warmup, iterations;
    const bc_sampling *sampling;
    const char *const *precisions; /* as requested */
    uint32_t n_precisions;
    const char *const *cache_policies;
    uint32_t n_cache_policies;
    const bc_plugin_ref *plugins; /* every plugin of the run, each once */
    uint32_t n_plugins, plugin_ref_size;
    uint32_t n_fields;
    const char *const *field_names; /* n_fields, e.g. "total_ms" */
    uint32_t n_stats;
    const char *const *stat_names; /* n_stats, e.g. "mean" */
    /* The backend's settings table (setting_size apart) and resolved values,
     * so reports can say how the backend ran. */
    const bc_setting_desc *backend_settings;
    uint32_t n_backend_settings, backend_setting_size;
    const bc_settings *backend_values;
    uint32_t n_cases, case_report_size;
    /* requested order; in case_finished only the finished ones */
    const bc_case_report *cases;
    /* (since 2.1) The rule that stops a case's measured iterations (see
     * docs/config.md). A fixed count has min_iterations == max_iterations
     * == iterations; iterations is max_iterations either way. */
    uint32_t min_iterations, max_iterations;
    double target_rel_ci;        /* stop once total_ms_rel_ci <= it; NAN: no such rule */
    double max_seconds_per_case; /* stop after the iteration that crosses it; NAN: none */
    /* (since 2.1) The cases of the whole matrix; n_cases is fewer when the
     * command line selected some (each case keeps its matrix index), and
     * the selection as given: the --cases and --only texts, NULL when not
     * given. */
    uint32_t n_matrix_cases;
    const char *selected_cases, *selected_only;
    /* ---- (since 2.2, distributed runs) ----
     * The ranks of a distributed run (bc_distributed); NULL in a
     * single-process run. Only rank 0 opens reporters. */
    const struct bc_distributed *distributed;
    /* ---- end of the distributed block ---- */
    /* (since 2.4) What every field is: n_fields rows, field_desc_size bytes
     * apart, in field_names' order (field_descs[i].name is field_names[i]);
     * the host's fields first, then each backend's declared metrics. Read
     * with bc_run_field_desc. */
    const bc_metric_desc *field_descs;
    uint32_t field_desc_size;
    /* (since 2.4) Fields [0, n_host_fields) are the host's own; the rest
     * are the backends' declared metrics. */
    uint32_t n_host_fields;
    /* (since 2.5) The CPU's topology from sysfs: logical CPUs, physical
     * cores, packages, the most SMT siblings per core (0: unknown), and a
     * note when it may hide sharing (a virtual machine), NULL when none.
     * Read after BC_HAS(run, bc_run_report, cpu_topology_note). */
    uint32_t cpu_logical, cpu_cores, cpu_packages, cpu_threads_per_core;
    const char *cpu_topology_note;
    /* (since 2.5) The quiet-machine check before the first case
     * (run.quiet_check): NULL when it did not run (off, a distributed run, a
     * replayed report that had none), "quiet" when it found nothing, else
     * what it found ("load average 9.50 on 2 CPUs; ..."). Read after
     * BC_HAS(run, bc_run_report, quiet_check). */
    const char *quiet_check;
    /* (since 2.6) The score stage (bench.cfg's score block): the scoring
     * backend's label, its description and its precision; NULL when the
     * run scores nothing. */
    const char *scorer_name;
    const bc_backend_info *scorer;
    const char *scorer_precision;
    /* (since 2.6) run.refit ("off", "per_rollout", "per_case"), and the
     * host's memcpy bandwidth measured before the first case when refit is
     * on (the bound refit_gb_per_s is set against), GB/s; NAN when not
     * measured. */
    const char *refit;
    double memcpy_gb_per_s;
    BC_ABI_TAIL(bc_run_report)
} bc_run_report;

/* Case report i of run. */
static inline const bc_case_report *bc_run_case(const bc_run_report *run, uint32_t i) {
    return BC_AT(bc_case_report, run->cases, run->case_report_size, i);
}

/* Plugin reference i of run. */
static inline const bc_plugin_ref *bc_run_plugin(const bc_run_report *run, uint32_t i) {
    return BC_AT(bc_plugin_ref, run->plugins, run->plugin_ref_size, i);
}

/* Backend setting i of run (a row of the backend's table). */
static inline const bc_setting_desc *bc_run_backend_setting(const bc_run_report *run, uint32_t i) {
    return BC_AT(bc_setting_desc, run->backend_settings, run->backend_setting_size, i);
}

static inline int bc_find_name_(const char *const *names, uint32_t n, const char *name) {
    for (uint32_t i = 0; names && i < n; i++)
        if (names[i] && strcmp(names[i], name) == 0) return (int)i;
    return -1;
}

/* Index of the per-iteration field called name, -1 if the host has none. */
static inline int bc_run_field_index(const bc_run_report *run, const char *name) {
    return bc_find_name_(run->field_names, run->n_fields, name);
}

/* (since 2.4) The descriptor of field i, NULL from a host before 2.4 (or
 * i out of range). */
static inline const bc_metric_desc *bc_run_field_desc(const bc_run_report *run, uint32_t i) {
    if (!BC_HAS(run, bc_run_report, field_desc_size) || !run->field_descs || i >= run->n_fields) return NULL;
    return BC_AT(bc_metric_desc, run->field_descs, run->field_desc_size, i);
}

/* Index of the statistic called name, -1 if the host has none. */
static inline int bc_run_stat_index(const bc_run_report *run, const char *name) {
    return bc_find_name_(run->stat_names, run->n_stats, name);
}

/* Statistic stat of field over cr's measured iterations; NAN when either
 * index is -1 or nothing was measured. */
static inline double bc_case_stat(const bc_run_report *run, const bc_case_report *cr, int field, int stat) {
    if (field < 0 || stat < 0 || !cr->stats || (uint32_t)field >= run->n_fields || (uint32_t)stat >= run->n_stats)
        return NAN;
    return cr->stats[(size_t)field * run->n_stats + (size_t)stat];
}

/* (since 2.1) One iteration of a case finished (bc_reporter_ops
 * iteration_finished): for progress displays. Host-owned, valid during the
 * call; read fields past 2.1's with BC_HAS(ev, bc_iteration_event, ...). */
typedef struct bc_iteration_event {
    uint32_t struct_size;
    const bc_case *c;
    uint32_t position, n_cases; /* the case is position (0-based) of n_cases in execution order */
    int32_t warmup;             /* 1: a warmup iteration (not recorded); 0: a measured one */
    uint32_t iteration;         /* 0-based, counted separately for warmup and measured iterations */
    /* Warmup: both the warmup count. Measured: the fewest and the most
     * iterations the stop rule may run (equal for a fixed count). */
    uint32_t n_min, n_max;
    const double *values;       /* run->n_fields values of this iteration; NAN = not measured */
    double case_elapsed_ms;     /* since the case began (begin_case included) */
    /* The stop rule's figure after this measured iteration: the case's
     * total_ms_rel_ci so far (NAN when not yet computable or for warmup). */
    double rel_ci;
    double eta_s;               /* the host's estimate of the run's time left; NAN when it has none */
    BC_ABI_TAIL(bc_iteration_event)
} bc_iteration_event;

/* A reporter's hooks. */
typedef struct bc_reporter_ops {
    uint32_t struct_size;
    /* Required. Called once before the first case. run->cases is empty. */
    bc_status (*open)(const bc_host *host, const bc_settings *settings, const bc_run_report *run,
                      void **out_instance, bc_error *err);
    /* Optional. A case is about to run: index i of n in execution order,
     * with the host's estimate of the run's time left (NAN until it has one). */
    void (*case_started)(void *instance, const bc_case *c, uint32_t i, uint32_t n, double eta_s);
    /* Optional. A case finished (ok or failed). For journals. */
    bc_status (*case_finished)(void *instance, const bc_run_report *run, const bc_case_report *cr, bc_error *err);
    /* Required. All cases are done; run->cases holds every case in the
     * requested order. Writes the final output. */
    bc_status (*close)(void *instance, const bc_run_report *run, bc_error *err);
    /* Required. Frees the instance (also when close was not called). */
    void (*destroy)(void *instance);
    /* Optional (since 2.1). One iteration finished, warmup ones included
     * (ev->warmup): for progress. run is as in case_finished (the finished
     * cases so far). Must be quick: it runs between timed iterations. A
     * failure is reported by the host, which stops calling it. */
    bc_status (*iteration_finished)(void *instance, const bc_run_report *run, const bc_iteration_event *ev,
                                    bc_error *err);
    BC_ABI_TAIL(bc_reporter_ops)
} bc_reporter_ops;

/* ------------------------------------------------------ comm (since 2.2)
 *
 * A comm plugin joins the processes of a distributed run (the mpi plugin,
 * linked against libmpi, so the core never is). The host loads it when the
 * process was launched by an MPI launcher (docs/scale.md) and calls its
 * collectives only between timed stages. Every collective is called by
 * every rank in the same order. */

typedef struct bc_comm_info {
    uint32_t struct_size;
    int32_t rank, world_size;
    int32_t local_rank; /* index among the ranks on this host */
    BC_ABI_TAIL(bc_comm_info)
} bc_comm_info;

typedef struct bc_comm_ops {
    uint32_t struct_size;
    /* Required. Joins the job (MPI_Init) and fills info (host-sized; BC_SET). */
    bc_status (*open)(const bc_host *host, const bc_settings *settings, void **out_instance, bc_comm_info *info,
                      bc_error *err);
    /* Required. Leaves the job (MPI_Finalize) and frees the instance. */
    void (*close)(void *instance);
    /* Required. Returns once every rank has called it. */
    bc_status (*barrier)(void *instance, bc_error *err);
    /* Required. Copies n_bytes at buf on rank 0 into buf on every rank. */
    bc_status (*broadcast)(void *instance, void *buf, size_t n_bytes, bc_error *err);
    /* Required. Every rank sends n_bytes and receives every rank's, in rank
     * order, into recv (world_size x n_bytes). */
    bc_status (*allgather)(void *instance, const void *send, size_t n_bytes, void *recv, bc_error *err);
    /* Required. Ends every process of the job with status (MPI_Abort). */
    void (*abort)(void *instance, int status);
    BC_ABI_TAIL(bc_comm_ops)
} bc_comm_ops;

/* ------------------------------------------------------------- descriptor */

typedef enum bc_plugin_kind {
    BC_KIND_BACKEND = 1,
    BC_KIND_PRECISION = 2,
    BC_KIND_CACHE = 3,
    BC_KIND_REPORTER = 4,
    BC_KIND_COMM = 5 /* (since 2.2) */
} bc_plugin_kind;

typedef struct bc_plugin_desc {
    uint32_t magic;       /* BENCHCTL_PLUGIN_MAGIC */
    uint16_t abi_major;   /* BENCHCTL_ABI_MAJOR */
    uint16_t abi_minor;   /* BENCHCTL_ABI_MINOR */
    uint32_t struct_size; /* sizeof(bc_plugin_desc) */
    bc_plugin_kind kind;
    const char *name;        /* what bench.cfg uses, e.g. "opt" */
    const char *version;     /* the plugin's own version, e.g. "0.1.0" */
    const char *description; /* one line */
    const bc_setting_desc *settings; /* n_settings rows, setting_size bytes apart */
    uint32_t n_settings;
    uint32_t setting_size; /* sizeof(bc_setting_desc); BC_SETTINGS_TABLE fills it */
    /* Points at a bc_backend_ops, bc_precision_ops, bc_cache_ops,
     * bc_reporter_ops or (since 2.2) bc_comm_ops, according to kind. */
    const void *ops;
    /* Optional, any kind. Checks resolved settings beyond type and range
     * (a path that must exist, two settings that contradict each other),
     * quickly and without side effects; validate and run call it before
     * anything else of the plugin. */
    bc_status (*check_settings)(const bc_host *host, const bc_settings *settings, bc_error *err);
    /* (since 2.2) Optional, any kind: settings only the plugin can name once
     * it looks (the worker backend starts its engine, which declares its
     * own). Called with the values of the table above resolved from
     * bench.cfg (whose settings group may also hold names that table
     * lacks), before check_settings. Returns *n_rows more rows, *row_size
     * bytes apart, that the host appends to the table: bench.cfg's group is
     * then validated against both like any table, `benchctl plugins NAME`
     * prints both, and the plugin's instance and check_settings get
     * n_settings + *n_rows values, its own table's first. The rows and their
     * strings are the plugin's until the host hands them to
     * free_more_settings (required with more_settings), after the last
     * instance is destroyed. */
    bc_status (*more_settings)(const bc_host *host, const bc_settings *settings, const bc_setting_desc **rows,
                               uint32_t *n_rows, uint32_t *row_size, bc_error *err);
    void (*free_more_settings)(const bc_setting_desc *rows, uint32_t n_rows);
    /* (since 2.4) Backends: the metrics it measures beyond the host's own
     * fields, n_metrics rows metric_size bytes apart (BC_METRICS_TABLE
     * fills them); static. The values come through the ops table's
     * read_metrics. */
    const bc_metric_desc *metrics;
    uint32_t n_metrics;
    uint32_t metric_size;
    BC_ABI_TAIL(bc_plugin_desc)
} bc_plugin_desc;

/* The smallest descriptor a 2.x host accepts: the 2.0 one. */
#define BC_PLUGIN_DESC_MIN_SIZE BC_SIZE_THROUGH(bc_plugin_desc, check_settings)

typedef const bc_plugin_desc *(*bc_plugin_entry_fn)(void);

/* Fills the version fields of a descriptor:
 *   static const bc_plugin_desc desc = { BC_PLUGIN_DESC_HEADER, BC_KIND_..., ... }; */
#define BC_PLUGIN_DESC_HEADER BENCHCTL_PLUGIN_MAGIC, BENCHCTL_ABI_MAJOR, BENCHCTL_ABI_MINOR, sizeof(bc_plugin_desc)

/* Fills settings, n_settings and setting_size from a static array, inside a
 * descriptor's initializer:
 *   static const bc_plugin_desc desc = { BC_PLUGIN_DESC_HEADER, ..., BC_SETTINGS_TABLE(my_settings), ... }; */
#define BC_SETTINGS_TABLE(table) \
    .settings = (table), .n_settings = (uint32_t)(sizeof(table) / sizeof((table)[0])), \
    .setting_size = (uint32_t)sizeof((table)[0])

/* (since 2.4) Fills metrics, n_metrics and metric_size from a static array,
 * inside a descriptor's initializer, like BC_SETTINGS_TABLE. */
#define BC_METRICS_TABLE(table) \
    .metrics = (table), .n_metrics = (uint32_t)(sizeof(table) / sizeof((table)[0])), \
    .metric_size = (uint32_t)sizeof((table)[0])

/* Defines the entry symbol returning desc. */
#define BC_PLUGIN_DEFINE(desc)                                                       \
    BC_EXPORT const bc_plugin_desc *benchctl_plugin_entry(void);                     \
    BC_EXPORT const bc_plugin_desc *benchctl_plugin_entry(void) { return &(desc); }

#ifdef __cplusplus
}
#endif
#endif /* BENCHCTL_PLUGIN_H */
