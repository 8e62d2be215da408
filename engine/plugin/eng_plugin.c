/* eng_plugin.c: the backend plugin every model family shares (eng_plugin.h):
 * the bc_backend_ops and the engine's settings table, on the CPU or
 * (device = "cuda") the family's CUDA device. ABI glue only: the family
 * (family.h) gives the shape, the weights and the forward; the device is
 * picked once at create (device.h: device_cpu.c, the family's cuda/); the
 * rollout and its one generate loop are in engine/rollout.
 *
 * Lifetime of what it owns:
 *   check_settings  (no instance) the files the settings name exist, and the
 *                settings agree with each other; also run by create
 *   create       settings, the shape (a preset's, or the checkpoint's
 *                config.json), the prompts file's prompts; no weights
 *   check_case   nothing: can the case run (precision, positions, memory)?
 *   prepare      checks every tensor of the checkpoint; opens the device
 *   begin_case   weights (built again only when the case's precision changes,
 *                hence rebuild_axes = precision), the rollout's prompts and
 *                buffers, and on the device the model and the case's cache
 *                (KV cache + workspace)
 *   cache_release / cache_acquire   free and take back the cache
 *   end_case     frees the rollout and its cache; weights stay for the next case
 *   destroy      everything
 * Memory accounting is exact: every byte this plugin allocates for the model,
 * the prompts, the cache and the rollout is counted (see docs/opt.md,
 * "Memory"); the plan of a case is one function, footprint(). Structs the host passes in to be filled are written with
 * BC_SET, only as far as the host's struct reaches.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "benchctl/plugin.h"
#include "eng_plugin.h"
#include "fileio.h"
#include "device.h"
#include "lora.h"
#include "precision.h"
#include "prompt_set.h"
#include "text_prompts.h"

/* The plugin's family name, for messages ("opt: ..."). */
#define NAME (eng_plugin.family->name)

/* Puts the family's name before a message the engine's libraries wrote
 * (they name no plugin): "llama: kernels = ...". Returns err's code. */
static bc_status with_family_name(bc_error *err) {
    if (!err) return BC_ERR_INTERNAL;
    char msg[sizeof err->message + 64];
    snprintf(msg, sizeof msg, "%s: %s", NAME, err->message);
    size_t n = strlen(msg);
    if (n >= sizeof err->message) n = sizeof err->message - 1; /* cut as bc_error_set would */
    memcpy(err->message, msg, n);
    err->message[n] = '\0';
    return err->code;
}

enum { S_MODEL, S_CHECKPOINT, S_WEIGHTS_SEED, S_THREADS, S_DEVICE, S_STOP_AT_EOS, S_SHARED_PREFILL, S_PROMPTS_FILE,
       S_SAVE_TOKENS, S_DEVICE_INDEX, S_CUDA_GRAPHS, S_MEMORY_CHECK, S_SAMPLE_STREAM, S_KERNELS,
       /* text prompts (text_prompts.h) */
       S_PROMPTS_TEXT, S_PROMPTS_FORMAT, S_PROMPTS_FIELD, S_PROMPTS_FIT, S_PROMPTS_BUCKET_WIDTH,
       /* LoRA actor (lora.h) */
       S_LORA_ADAPTER, S_LORA_RANK, S_LORA_ALPHA, S_LORA_TARGETS, S_LORA_UNFUSE, S_LORA_MODE,
       /* response lengths, continuous batching, paged KV (rollout.h) */
       S_RESPONSE_LENGTHS, S_LENGTH_MIN_RATIO, S_LENGTH_MEAN, S_LENGTH_SIGMA, S_LENGTHS_FILE, S_BATCHING,
       S_BATCH_CAPACITY, S_SAVE_SCHEDULE, S_KV_LAYOUT, S_KV_PAGE_TOKENS, S_COUNT };

/* memory_check: what a case whose planned memory exceeds what there is gets. */
enum { MEMCHECK_REFUSE, MEMCHECK_WARN, MEMCHECK_OFF };


static const char *const device_choices[] = {"cpu", "cuda", NULL};
static const char *const memory_check_choices[] = {"refuse", "warn", "off", NULL};
static const char *const sample_stream_choices[] = {"fixed", "per_iteration", NULL};
/* the CPU kernel families (kernels.h), "auto" = the best this CPU runs */
static const char *const kernels_choices[] = {"auto", "avx512_bf16", "avx512", "avx2", "portable", NULL};
static const char *const prompts_format_choices[] = {"auto", "jsonl", "lines", NULL};
static const char *const prompts_fit_choices[] = {"ragged", "bucket", "truncate_pad", NULL};
static const char *const lora_unfuse_choices[] = {"subtract", "restore", NULL};
static const char *const lora_mode_choices[] = {"fuse", "unfused", NULL};
/* in eng_length_kind's order */
static const char *const response_lengths_choices[] = {"fixed", "uniform", "lognormal", "empirical", NULL};
static const char *const batching_choices[] = {"static", "continuous", NULL};
static const char *const kv_layout_choices[] = {"contiguous", "paged", NULL};

_Static_assert(S_COUNT == ENG_N_SETTINGS, "eng_plugin.h counts the settings");

const bc_setting_desc eng_settings[S_COUNT] = {
    [S_MODEL] = {.name = "model", .type = BC_SETTING_ENUM, .default_string = "", .choices = eng_plugin_presets,
                 .help = eng_plugin_model_help},
    [S_CHECKPOINT] = {.name = "checkpoint", .type = BC_SETTING_STRING, .default_string = "",
                      .help = "Hugging Face checkpoint directory (config.json + weights); \"\" = synthetic weights"},
    [S_WEIGHTS_SEED] = {.name = "weights_seed", .type = BC_SETTING_INT, .default_int = 0, .has_range = 1, .min = 0,
                        .max = 9007199254740992.0, .help = "seed of the synthetic weights"},
    [S_THREADS] = {.name = "threads", .type = BC_SETTING_INT, .default_int = 0, .has_range = 1, .min = 0, .max = 1024,
                   .help = "worker threads (0 = all online cores)"},
    [S_DEVICE] = {.name = "device", .type = BC_SETTING_ENUM, .default_string = "cpu", .choices = device_choices,
                  .help = "where the model runs"},
    [S_STOP_AT_EOS] = {.name = "stop_at_eos", .type = BC_SETTING_BOOL, .default_int = 0,
                       .flags = BC_SETTING_WORKLOAD, /* rows stopping at EOS measure other work */
                       .help = "stop a row at EOS (else exactly response_length tokens, EOS suppressed)"},
    [S_SHARED_PREFILL] = {.name = "shared_prefill", .type = BC_SETTING_BOOL, .default_int = 0,
                          .help = "prefill each prompt once and share its KV cache with its samples"},
    [S_PROMPTS_FILE] = {.name = "prompts_file", .type = BC_SETTING_STRING, .default_string = "",
                        .help = "prompts, one line of space-separated token ids each (\"\" = synthetic); they set "
                                "the prompt length"},
    [S_SAVE_TOKENS] = {.name = "save_tokens", .type = BC_SETTING_STRING, .default_string = "",
                       .help = "write each rollout's generated ids here, one line per row ({case} = case index)"},
    /* CUDA path (docs/cuda.md) */
    [S_DEVICE_INDEX] = {.name = "device_index", .type = BC_SETTING_INT, .default_int = 0, .has_range = 1, .min = 0,
                        .max = 1024, .flags = BC_SETTING_LOCAL_RANK, /* each rank of a host its own GPU */
                        .help = "CUDA device index (device = \"cuda\")"},
    [S_CUDA_GRAPHS] = {.name = "cuda_graphs", .type = BC_SETTING_BOOL, .default_int = 1,
                       .help = "capture the decode step in a CUDA graph per batch and replay it (device = \"cuda\")"},
    [S_MEMORY_CHECK] = {.name = "memory_check", .type = BC_SETTING_ENUM, .default_string = "refuse",
                        .choices = memory_check_choices,
                        .help = "a case planned to need more memory than is available: refuse it, warn, or off"},
    [S_SAMPLE_STREAM] = {.name = "sample_stream", .type = BC_SETTING_ENUM, .default_string = "fixed",
                         .choices = sample_stream_choices,
                         .help = "sampled runs: \"fixed\" = every iteration draws the same stream (the seed's); "
                                 "\"per_iteration\" = iteration i of a case draws its own (still reproducible)"},
    [S_KERNELS] = {.name = "kernels", .type = BC_SETTING_ENUM, .default_string = "auto", .choices = kernels_choices,
                   .help = "CPU kernel family (auto = the best this CPU runs); one the CPU cannot run is refused"},
    /* text prompts (text_prompts.h, docs/opt.md) */
    [S_PROMPTS_TEXT] = {.name = "prompts_text", .type = BC_SETTING_STRING, .default_string = "",
                        .help = "text prompts (JSON lines or plain lines), tokenized with the checkpoint's tokenizer, "
                                "BOS first (\"\" = none)"},
    [S_PROMPTS_FORMAT] = {.name = "prompts_format", .type = BC_SETTING_ENUM, .default_string = "auto",
                          .choices = prompts_format_choices,
                          .help = "prompts_text's format: auto (.jsonl/.json = JSON lines, else plain lines)"},
    [S_PROMPTS_FIELD] = {.name = "prompts_field", .type = BC_SETTING_STRING, .default_string = "text",
                         .help = "the JSON field holding each prompt of prompts_text"},
    [S_PROMPTS_FIT] = {.name = "prompts_fit", .type = BC_SETTING_ENUM, .default_string = "ragged",
                       .choices = prompts_fit_choices,
                       .help = "prompts_text per case: ragged (left-padded to the longest), bucket (only prompts "
                               "fitting the prompt length), truncate_pad (cut or left-pad to it)"},
    [S_PROMPTS_BUCKET_WIDTH] = {.name = "prompts_bucket_width", .type = BC_SETTING_INT, .default_int = 16,
                                .has_range = 1, .min = 1, .max = 1 << 20,
                                .help = "prompts_fit = bucket: a prompt of n tokens fits length L when L - width < n "
                                        "<= L"},
    /* LoRA actor (lora.h, docs/opt.md): fused before each generate, unfused after */
    [S_LORA_ADAPTER] = {.name = "lora_adapter", .type = BC_SETTING_STRING, .default_string = "",
                        .help = "a PEFT LoRA adapter directory (adapter_config.json + adapter_model.safetensors), "
                                "fused into the weights before each generate and unfused after (\"\" = none)"},
    [S_LORA_RANK] = {.name = "lora_rank", .type = BC_SETTING_INT, .default_int = 0, .has_range = 1, .min = 0,
                     .max = 65536, .help = "rank of a synthetic LoRA adapter (0 = none; not with lora_adapter)"},
    [S_LORA_ALPHA] = {.name = "lora_alpha", .type = BC_SETTING_FLOAT, .default_float = 16.0, .has_range = 1,
                      .min = 1e-6, .max = 1e6, .help = "the synthetic adapter's alpha (scale = alpha / rank)"},
    [S_LORA_TARGETS] = {.name = "lora_targets", .type = BC_SETTING_STRING, .default_string = "q_proj,v_proj",
                        .help = "the synthetic adapter's modules of a layer, comma-separated, or all (opt: q_proj, "
                                "k_proj, v_proj, out_proj, fc1, fc2; llama: q_proj, k_proj, v_proj, o_proj, "
                                "gate_proj, up_proj, down_proj)"},
    [S_LORA_UNFUSE] = {.name = "lora_unfuse", .type = BC_SETTING_ENUM, .default_string = "subtract",
                       .choices = lora_unfuse_choices,
                       .help = "subtract the adapter again (the hybrid engine's way; drifts by rounding) or restore a "
                               "copy of the base weights (bit for bit; holds the targets' memory)"},
    [S_LORA_MODE] = {.name = "lora_mode", .type = BC_SETTING_ENUM, .default_string = "fuse",
                     .choices = lora_mode_choices,
                     .help = "fuse the adapter into the weights around each generate (the hybrid engine), or apply "
                             "it unfused in every forward, y += s B (A x) (CPU only)"},
    /* response lengths and continuous batching (docs/opt.md) */
    [S_RESPONSE_LENGTHS] = {.name = "response_lengths", .type = BC_SETTING_ENUM, .default_string = "fixed",
                            .choices = response_lengths_choices,
                            .help = "each row's response length, drawn from the seed: \"fixed\" = the case's; else "
                                    "EOS is forced at the drawn length (at most the case's)"},
    [S_LENGTH_MIN_RATIO] = {.name = "response_length_min_ratio", .type = BC_SETTING_FLOAT, .default_float = 0.5,
                            .has_range = 1, .min = 1e-9, .max = 1.0,
                            .help = "uniform: lengths in [ratio x response_length, response_length]"},
    [S_LENGTH_MEAN] = {.name = "response_length_mean", .type = BC_SETTING_FLOAT, .default_float = 128.0,
                       .has_range = 1, .min = 1.0, .max = 1e9, .help = "lognormal: the mean length in tokens"},
    [S_LENGTH_SIGMA] = {.name = "response_length_sigma", .type = BC_SETTING_FLOAT, .default_float = 0.6,
                        .has_range = 1, .min = 0.0, .max = 10.0,
                        .help = "lognormal: the spread, the standard deviation of the log length"},
    [S_LENGTHS_FILE] = {.name = "response_lengths_file", .type = BC_SETTING_STRING, .default_string = "",
                        .help = "empirical: a file of lengths (integers >= 1), each row takes one at random"},
    [S_BATCHING] = {.name = "batching", .type = BC_SETTING_ENUM, .default_string = "static",
                    .choices = batching_choices,
                    .help = "\"static\": all rows decode until the last finishes; \"continuous\": finished rows "
                            "leave, waiting rows join (device = \"cpu\")"},
    [S_BATCH_CAPACITY] = {.name = "batch_capacity", .type = BC_SETTING_INT, .default_int = 0, .has_range = 1,
                          .min = 0, .max = 16777216,
                          .help = "continuous: rows decoding at once, the others wait (0 = all rows)"},
    [S_SAVE_SCHEDULE] = {.name = "save_schedule", .type = BC_SETTING_STRING, .default_string = "",
                         .help = "write each rollout's schedule here: active rows per decode step, each row's "
                                 "length, time to first token and completion step ({case} = case index)"},
    [S_KV_LAYOUT] = {.name = "kv_layout", .type = BC_SETTING_ENUM, .default_string = "contiguous",
                     .choices = kv_layout_choices,
                     .help = "\"paged\": KV memory taken a page at a time as rows grow and returned as they "
                             "finish (continuous) or after the rollout (static); device = \"cpu\""},
    [S_KV_PAGE_TOKENS] = {.name = "kv_page_tokens", .type = BC_SETTING_INT, .default_int = 0, .has_range = 1,
                          .min = 0, .max = 65536,
                          .help = "paged: tokens per page (0 = the smallest a system page allows)"},
};

/* ---------------------------------------------------------------- metrics */

/* What generate measures beyond the host's own fields (docs/plugins.md,
 * "Metrics"), read after each iteration by read_metrics in this order. Each
 * row is one of the host's 2.3 fields of that name (core/src/run/fields.c),
 * with its unit, direction and scope: the run refuses a row that differs. */
enum { M_PADDED_TOKEN_SLOTS, M_RESPONSE_LENGTH_MIN, M_RESPONSE_LENGTH_P50, M_RESPONSE_LENGTH_P95,
       M_RESPONSE_LENGTH_MAX, M_NUM_PREFILL_FORWARDS, M_SCHEDULER_OVERHEAD_MS, M_CACHE_MANAGEMENT_OVERHEAD_MS,
       M_ACTIVE_BATCH_SIZE, M_CONTINUOUS_BATCH_SIZE, M_OCCUPANCY, M_KV_PAGES_PEAK, M_KV_BYTES_PEAK,
       M_KV_FRAGMENTATION, M_KV_BYTES_SAVED, M_LORA_FUSE_MS, M_LORA_UNFUSE_MS, M_COUNT };

_Static_assert(M_COUNT == ENG_N_METRICS, "eng_plugin.h counts the metrics");

#define METRIC(id, n, u, b, h) \
    [id] = {.name = n, .unit = u, .better = BC_BETTER_##b, .scope = BC_METRIC_PER_ITERATION, .help = h}

const bc_metric_desc eng_metrics[M_COUNT] = {
    METRIC(M_PADDED_TOKEN_SLOTS, "padded_token_slots", "tokens", NEITHER,
           "response token slots the batch held (static: rows x returned length)"),
    METRIC(M_RESPONSE_LENGTH_MIN, "response_length_min", "tokens", NEITHER, "shortest drawn response length"),
    METRIC(M_RESPONSE_LENGTH_P50, "response_length_p50", "tokens", NEITHER, "median drawn response length"),
    METRIC(M_RESPONSE_LENGTH_P95, "response_length_p95", "tokens", NEITHER,
           "95th percentile drawn response length"),
    METRIC(M_RESPONSE_LENGTH_MAX, "response_length_max", "tokens", NEITHER, "longest drawn response length"),
    METRIC(M_NUM_PREFILL_FORWARDS, "num_prefill_forwards", "forwards", NEITHER,
           "prefill forwards run (1 for a static batch)"),
    METRIC(M_SCHEDULER_OVERHEAD_MS, "scheduler_overhead_ms", "ms", LOWER,
           "continuous batching: choosing rows that retire and join, gathering a step's inputs"),
    METRIC(M_CACHE_MANAGEMENT_OVERHEAD_MS, "cache_management_overhead_ms", "ms", LOWER,
           "continuous batching: handing cache rows to joining rows"),
    METRIC(M_ACTIVE_BATCH_SIZE, "active_batch_size", "rows", HIGHER, "mean rows a decode step generated for"),
    METRIC(M_CONTINUOUS_BATCH_SIZE, "continuous_batch_size", "rows", NEITHER,
           "continuous batching: rows decoding at once (batch_capacity, or all rows)"),
    METRIC(M_OCCUPANCY, "occupancy", "1", HIGHER, "active_batch_size over the rows that could decode"),
    METRIC(M_KV_PAGES_PEAK, "kv_pages_peak", "pages", LOWER, "kv_layout = \"paged\": KV pages held at the peak"),
    METRIC(M_KV_BYTES_PEAK, "kv_bytes_peak", "bytes", LOWER, "KV cache bytes held at the peak"),
    METRIC(M_KV_FRAGMENTATION, "kv_fragmentation", "1", LOWER,
           "kv_layout = \"paged\": share of the peak's page slots holding no token"),
    METRIC(M_KV_BYTES_SAVED, "kv_bytes_saved", "bytes", HIGHER,
           "a contiguous cache's bytes minus the paged peak (0 contiguous)"),
    METRIC(M_LORA_FUSE_MS, "lora_fuse_ms", "ms", LOWER, "fusing the LoRA adapter into the weights before generate"),
    METRIC(M_LORA_UNFUSE_MS, "lora_unfuse_ms", "ms", LOWER, "unfusing it after generate"),
};

#undef METRIC

typedef struct eng_backend {
    const eng_family *fam; /* static: the plugin's family (eng_plugin) */
    const bc_host *host;
    const char *checkpoint, *prompts_file, *save_tokens; /* host-owned settings, "" when unset */
    const char *preset;    /* the synthetic weights' preset; NULL with a checkpoint */
    uint64_t weights_seed;
    int threads, stop_at_eos, shared_prefill, per_iteration_stream;
    int memory_check;      /* MEMCHECK_* */
    int kernels_isa;       /* the kernels setting: -1 = auto, else the eng_isa forced */
    eng_length_dist lengths; /* values owned (response_lengths_file) */
    int continuous, capacity, kv_paged, page_tokens;
    const char *save_schedule; /* host-owned, "" when unset */
    void *hp;              /* owned, fam->hparams_size bytes: the preset's shape, or the checkpoint's config.json */
    int have_prompts;
    eng_prompts prompts;   /* owned: the prompts file, read once in create */
    eng_text_prompts *text; /* owned: prompts_text, tokenized in create; NULL without */
    eng_lora *lora;        /* owned: the LoRA adapter, made in create; NULL without */
    int lora_unfused;      /* lora_mode = "unfused": lora applied in the forward, never fused */
    int have_weights;
    eng_weights *w;        /* owned, fam->weights_size bytes; built when have_weights, rebuilt when the precision
                              changes */
    eng_weights *desc;     /* owned, fam->weights_size bytes: the header a plan reads (footprint_of) */
    const eng_device_ops *dev; /* where the model runs, picked at create */
    void *dev_ctx;         /* owned: the device, the model on it, the case's cache */
    int have_rollout;
    eng_rollout ro;        /* owned; one per case */
    int64_t prompt_p50_tokens, prompt_pad_tokens; /* of ro's prompts (summarize_prompts); -1 unknown */
    double metrics[M_COUNT]; /* eng_metrics' values of the last generate (read_metrics); NaN unmeasured */
    uint32_t case_index;   /* of the current case (save_tokens) */
    uint64_t n_generates;  /* generates in the current case (sample_stream) */
    int64_t peak_bytes;    /* high-water mark of current_bytes() */
    char model_desc[600];
} eng_backend;

/* Every metric unmeasured (before a case's first generate, after a failed one). */
static void clear_metrics(eng_backend *s) {
    for (int i = 0; i < M_COUNT; i++) s->metrics[i] = BC_NOT_MEASURED;
}

/* --------------------------------------------------------------- settings */

static const char *setting_str(const bc_settings *v, int i) {
    const char *s = bc_setting_at(v, (uint32_t)i)->s;
    return s ? s : "";
}

static int64_t setting_int(const bc_settings *v, int i) { return bc_setting_at(v, (uint32_t)i)->i; }

/* The shape: the first member of the family's hparams (family.h). */
static const eng_shape *shape_of(const eng_backend *s) { return (const eng_shape *)s->hp; }

/* prompts_file names a file this process can read. */
static bc_status check_prompts_file(const char *path, bc_error *err) {
    struct stat sb;
    if (stat(path, &sb) != 0) {
        const int e = errno;
        bc_error_set(err, e == ENOENT || e == ENOTDIR ? BC_ERR_NOT_FOUND : BC_ERR_IO, "prompts_file %s: %s", path,
                     strerror(e));
        return bc_error_hint(err, "prompts_file names a text file: one prompt per line, as token ids");
    }
    if (S_ISDIR(sb.st_mode)) return bc_error_set(err, BC_ERR_IO, "prompts_file %s: a directory, not a file", path);
    if (!S_ISREG(sb.st_mode)) /* /dev/zero, a FIFO: never opened (fileio.h) */
        return bc_error_set(err, BC_ERR_IO, "prompts_file %s: must be a regular file", path);
    if ((uint64_t)sb.st_size > ENG_PROMPTS_MAX_BYTES)
        return bc_error_set(err, BC_ERR_FORMAT, "prompts_file %s: %lld bytes is over the limit of %llu bytes", path,
                            (long long)sb.st_size, (unsigned long long)ENG_PROMPTS_MAX_BYTES);
    if (access(path, R_OK) != 0)
        return bc_error_set(err, BC_ERR_IO, "prompts_file %s: cannot be read: %s", path, strerror(errno));
    return BC_OK;
}

/* What can be told of the settings without a model: the files they name
 * exist and they do not contradict each other. Quick and without side
 * effects; the descriptor's check_settings hook and create both run it. */
static bc_status check_settings(const bc_settings *v, bc_error *err) {
    if (!v || v->count < S_COUNT)
        return bc_error_set(err, BC_ERR_INTERNAL, "%s: %u setting values for a table of %d rows", NAME, v ? v->count : 0,
                            S_COUNT);
    const char *model = setting_str(v, S_MODEL), *checkpoint = setting_str(v, S_CHECKPOINT);
    const char *prompts_file = setting_str(v, S_PROMPTS_FILE);
    if (strcmp(setting_str(v, S_DEVICE), "cuda") == 0 && !eng_plugin.cuda_device)
        return bc_error_set(err, BC_ERR_UNSUPPORTED,
                            "device = \"cuda\": the %s family has no CUDA device yet; use device = \"cpu\"", NAME);
    if (strcmp(setting_str(v, S_DEVICE), "cuda") == 0 && !eng_plugin.cuda_device()) {
        bc_error_set(err, BC_ERR_DEVICE, "no CUDA device: this build of the %s plugin has no CUDA path (device = \"cuda\")",
                     NAME);
        return bc_error_hint(err, "set device = \"cpu\", or rebuild benchctl where CMake finds the CUDA Toolkit");
    }
    if (model[0] && checkpoint[0]) {
        bc_error_set(err, BC_ERR_SETTING,
                     "model and checkpoint both set: the checkpoint's config.json gives the shape; remove model");
        return bc_error_hint(err, "model (\"%s\") picks the shape of synthetic weights only", model);
    }
    const char *lengths = setting_str(v, S_RESPONSE_LENGTHS), *lengths_file = setting_str(v, S_LENGTHS_FILE);
    if ((strcmp(lengths, "empirical") == 0) != (lengths_file[0] != 0))
        return bc_error_set(err, BC_ERR_SETTING,
                            "response_lengths = \"%s\" with response_lengths_file \"%s\": the file goes with "
                            "\"empirical\" and only with it",
                            lengths, lengths_file);
    if (strcmp(setting_str(v, S_DEVICE), "cuda") == 0 &&
        (strcmp(lengths, "fixed") != 0 || strcmp(setting_str(v, S_BATCHING), "static") != 0 ||
         strcmp(setting_str(v, S_KV_LAYOUT), "contiguous") != 0))
        return bc_error_set(err, BC_ERR_SETTING,
                            "device = \"cuda\" runs response_lengths = \"fixed\" with batching = \"static\" and "
                            "kv_layout = \"contiguous\" only; drawn lengths, continuous batching and the paged KV "
                            "layout run on device = \"cpu\"");
    int isa;
    bc_status st = eng_kernels_choose(setting_str(v, S_KERNELS), eng_isa_detect(), &isa, err);
    if (st != BC_OK) return with_family_name(err);
    if (isa >= 0 && strcmp(setting_str(v, S_DEVICE), "cpu") != 0)
        return bc_error_set(err, BC_ERR_SETTING, "%s: kernels = \"%s\" picks CPU kernels, but device = \"%s\"", NAME,
                            setting_str(v, S_KERNELS), setting_str(v, S_DEVICE));
    if (checkpoint[0] && (st = eng_plugin.family->check_files(checkpoint, err)) != BC_OK) return st;
    if (prompts_file[0] && (st = check_prompts_file(prompts_file, err)) != BC_OK) return st;
    const char *prompts_text = setting_str(v, S_PROMPTS_TEXT);
    if (prompts_text[0] && prompts_file[0])
        return bc_error_set(err, BC_ERR_SETTING, "prompts_text and prompts_file both set: choose one");
    if (prompts_text[0] && !checkpoint[0]) {
        bc_error_set(err, BC_ERR_SETTING, "prompts_text needs a checkpoint: its tokenizer turns the text into ids");
        return bc_error_hint(err, "synthetic weights have no tokenizer; prompts_file takes token ids");
    }
    unsigned targets;
    if (setting_str(v, S_LORA_ADAPTER)[0] && setting_int(v, S_LORA_RANK) > 0)
        return bc_error_set(err, BC_ERR_SETTING, "lora_adapter and lora_rank both set: an adapter has its own rank");
    if ((setting_str(v, S_LORA_ADAPTER)[0] || setting_int(v, S_LORA_RANK) > 0) && eng_plugin.family->lora_n_modules < 1)
        return bc_error_set(err, BC_ERR_UNSUPPORTED, "lora: the %s family takes no LoRA adapter", NAME);
    if (setting_int(v, S_LORA_RANK) > 0 &&
        (st = eng_lora_targets_parse(eng_plugin.family, setting_str(v, S_LORA_TARGETS), &targets, err)))
        return st;
    if ((setting_str(v, S_LORA_ADAPTER)[0] || setting_int(v, S_LORA_RANK) > 0) && !strcmp(setting_str(v, S_DEVICE), "cuda"))
        return bc_error_set(err, BC_ERR_UNSUPPORTED,
                            "lora: the CUDA path neither fuses nor applies unfused LoRA adapters; use device = \"cpu\"");
    return BC_OK;
}

bc_status eng_backend_check_settings(const bc_host *host, const bc_settings *settings, bc_error *err) {
    bc_status st = check_settings(settings, err);
    /* save_tokens is an output like a report's: the host refuses a path that
     * is not a regular file, a folder, or one another output also names */
    const int outputs[] = {S_SAVE_TOKENS, S_SAVE_SCHEDULE};
    for (int i = 0; i < 2 && st == BC_OK; i++) {
        const char *save = setting_str(settings, outputs[i]);
        if (err && save[0] && BC_HAS(host, bc_host, output_check) && host->output_check &&
            (st = host->output_check(host, save, err)) != BC_OK) {
            char msg[sizeof err->message];
            snprintf(msg, sizeof msg, "%s", err->message);
            snprintf(err->message, sizeof err->message, "%s: %s: %.*s", NAME, eng_settings[outputs[i]].name,
                     (int)sizeof msg - 60, msg);
        }
    }
    return st;
}

/* ------------------------------------------------------------- accounting */

/* The memory of a case, in parts: what the host holds besides the cache,
 * and the cache on the device that holds it. */
typedef struct footprint {
    int64_t weights;     /* the host weights' arena */
    int64_t layer_table; /* the host weights' per-layer table */
    int64_t prompts;     /* the prompts file's prompts */
    int64_t buffers;     /* the rollout's host buffers (prompts, sequences, masks, generators, timings) */
    eng_device_plan dev; /* the case's cache (and device weights) on the device */
} footprint;

static int64_t size_bytes(size_t n) { return n > (size_t)INT64_MAX ? -1 : (int64_t)n; }

/* The one footprint formula: a case of ro's dimensions on shape hp in dt
 * (plan_memory, check_case, begin_case's admission and the memory reports
 * all come from here). */
static footprint footprint_of(const eng_backend *s, const void *hp, eng_dtype dt, const eng_rollout *ro) {
    footprint f;
    f.weights = size_bytes(eng_weights_bytes(s->fam, hp, dt));
    f.layer_table = (int64_t)((const eng_shape *)hp)->n_layers * (int64_t)s->fam->layer_size;
    f.prompts = s->text ? eng_text_prompts_bytes(s->text) : 0;
    if (s->have_prompts) {
        f.prompts = (int64_t)s->prompts.n_lines * (int64_t)sizeof(eng_prompt);
        for (int i = 0; i < s->prompts.n_lines; i++)
            f.prompts += (int64_t)s->prompts.lines[i].n * (int64_t)sizeof(int32_t);
    }
    f.buffers = 0;
    f.dev = (eng_device_plan){.weights = -1, .device_peak = -1};
    if (ro) { /* the shape the plan reads: a weights header without arena */
        eng_weights *desc = s->desc;
        eng_weights_describe(desc, s->fam, hp, dt);
        f.buffers = size_bytes(eng_rollout_plan(ro, &desc->shape, &desc->ws, dt, s->threads).buffers);
        s->dev->plan(s->dev_ctx, desc, ro, &f.dev);
    }
    return f;
}

/* Every host byte allocated now: weights (arena + layer table), prompts,
 * rollout buffers, the cache where the device keeps it on the host. */
static int64_t current_bytes(const eng_backend *s) {
    const footprint f = footprint_of(s, s->hp, s->have_weights ? s->w->dtype : ENG_F32, s->have_rollout ? &s->ro : NULL);
    int64_t n = f.prompts + (s->have_rollout ? f.buffers : 0);
    if (s->have_weights) n += (int64_t)s->w->arena_bytes + f.layer_table;
    return n + s->dev->host_bytes(s->dev_ctx, s->have_rollout ? &s->ro : NULL);
}

static void account(eng_backend *s) {
    int64_t n = current_bytes(s);
    if (n > s->peak_bytes) s->peak_bytes = n;
}

/* Copies m into the host's out, field by field, as far as out reaches. */
static void put_memory_stats(bc_memory_stats *out, const bc_memory_stats *m) {
    BC_SET(out, bc_memory_stats, weights_bytes, m->weights_bytes);
    BC_SET(out, bc_memory_stats, kv_cache_bytes, m->kv_cache_bytes);
    BC_SET(out, bc_memory_stats, workspace_bytes, m->workspace_bytes);
    BC_SET(out, bc_memory_stats, host_peak_bytes, m->host_peak_bytes);
    BC_SET(out, bc_memory_stats, device_peak_bytes, m->device_peak_bytes);
    BC_SET(out, bc_memory_stats, device_free_bytes, m->device_free_bytes);
    BC_SET(out, bc_memory_stats, device_total_bytes, m->device_total_bytes);
    BC_SET(out, bc_memory_stats, resident_bytes, m->resident_bytes);
}

/* -------------------------------------------------------------- lifecycle */

static void end_rollout(eng_backend *s) {
    if (s->have_rollout) {
        s->dev->end_case(s->dev_ctx, &s->ro);
        eng_rollout_free(&s->ro);
    }
    s->have_rollout = 0;
}

static void backend_destroy(void *inst) {
    eng_backend *s = inst;
    if (!s) return;
    if (s->dev_ctx) {
        end_rollout(s);
        s->dev->destroy(s->dev_ctx);
    }
    if (s->have_weights) eng_weights_free(s->w);
    free(s->w);
    free(s->desc);
    free(s->hp);
    if (s->have_prompts) eng_prompts_free(&s->prompts);
    eng_text_prompts_free(s->text);
    free(s->text);
    eng_lora_free(s->lora);
    free(s->lora);
    free((void *)s->lengths.values);
    free(s);
}

static bc_status backend_create(const bc_host *host, const bc_settings *v, void **out, bc_error *err) {
    bc_status st = check_settings(v, err);
    if (st != BC_OK) return st;
    eng_backend *s = calloc(1, sizeof *s);
    if (!s) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", NAME);
    s->fam = eng_plugin.family;
    clear_metrics(s);
    s->hp = calloc(1, s->fam->hparams_size);
    s->w = calloc(1, s->fam->weights_size);
    s->desc = calloc(1, s->fam->weights_size);
    if (!s->hp || !s->w || !s->desc) {
        free(s->hp);
        free(s->w);
        free(s->desc);
        free(s);
        return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", NAME);
    }
    s->host = host;
    s->checkpoint = setting_str(v, S_CHECKPOINT);
    s->prompts_file = setting_str(v, S_PROMPTS_FILE);
    s->save_tokens = setting_str(v, S_SAVE_TOKENS);
    s->weights_seed = (uint64_t)setting_int(v, S_WEIGHTS_SEED);
    s->threads = setting_int(v, S_THREADS) > 0 ? (int)setting_int(v, S_THREADS) : eng_online_cores();
    s->stop_at_eos = setting_int(v, S_STOP_AT_EOS) != 0;
    s->shared_prefill = setting_int(v, S_SHARED_PREFILL) != 0;
    s->per_iteration_stream = strcmp(setting_str(v, S_SAMPLE_STREAM), "per_iteration") == 0;
    for (int k = 0; response_lengths_choices[k]; k++)
        if (strcmp(setting_str(v, S_RESPONSE_LENGTHS), response_lengths_choices[k]) == 0) s->lengths.kind = k;
    s->lengths.min_ratio = bc_setting_at(v, S_LENGTH_MIN_RATIO)->f;
    s->lengths.mean = bc_setting_at(v, S_LENGTH_MEAN)->f;
    s->lengths.sigma = bc_setting_at(v, S_LENGTH_SIGMA)->f;
    s->continuous = strcmp(setting_str(v, S_BATCHING), "continuous") == 0;
    s->capacity = (int)setting_int(v, S_BATCH_CAPACITY);
    s->kv_paged = strcmp(setting_str(v, S_KV_LAYOUT), "paged") == 0;
    s->page_tokens = (int)setting_int(v, S_KV_PAGE_TOKENS);
    s->save_schedule = setting_str(v, S_SAVE_SCHEDULE);
    const char *mc = setting_str(v, S_MEMORY_CHECK);
    eng_kernels_choose(setting_str(v, S_KERNELS), eng_isa_detect(), &s->kernels_isa, err); /* checked above */
    s->memory_check = strcmp(mc, "off") == 0 ? MEMCHECK_OFF : strcmp(mc, "warn") == 0 ? MEMCHECK_WARN : MEMCHECK_REFUSE;
    /* the device (check_settings refused "cuda" in a build without it); a
     * CUDA device is opened now for describe, and without one prepare fails
     * with "no CUDA device: ..." (the backend cannot start) */
    s->dev = strcmp(setting_str(v, S_DEVICE), "cuda") == 0 ? eng_plugin.cuda_device() : &eng_device_cpu;
    const eng_device_config cfg = {.threads = s->threads,
                                   .isa = s->kernels_isa,
                                   .index = (int)setting_int(v, S_DEVICE_INDEX),
                                   .graphs = setting_int(v, S_CUDA_GRAPHS) != 0};
    if ((st = s->dev->create(&cfg, &s->dev_ctx, err)) != BC_OK) {
        s->dev_ctx = NULL;
        backend_destroy(s);
        return st;
    }
    if (s->checkpoint[0]) {
        /* the shape is the checkpoint's config.json; its weights load later */
        st = s->fam->config(s->checkpoint, s->hp, err);
        snprintf(s->model_desc, sizeof s->model_desc, "%s", s->checkpoint);
    } else {
        const char *model = setting_str(v, S_MODEL);
        s->preset = model[0] ? model : s->fam->default_preset;
        st = s->fam->preset(s->preset, s->hp, err);
        char name[128];
        snprintf(name, sizeof name, s->fam->preset_fmt, s->preset);
        snprintf(s->model_desc, sizeof s->model_desc, "%s (synthetic weights, seed %llu)", name,
                 (unsigned long long)s->weights_seed);
    }
    if (st == BC_OK && s->prompts_file[0]) {
        st = eng_prompts_read(&s->prompts, s->prompts_file, shape_of(s)->vocab_size, err);
        s->have_prompts = st == BC_OK;
    }
    if (st == BC_OK && s->lengths.kind == ENG_LENGTHS_EMPIRICAL) {
        int32_t *values = NULL;
        st = eng_lengths_read(setting_str(v, S_LENGTHS_FILE), &values, &s->lengths.n_values, err);
        s->lengths.values = values;
    }
    if (st == BC_OK && setting_str(v, S_PROMPTS_TEXT)[0]) {
        if (!(s->text = calloc(1, sizeof *s->text))) st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", NAME);
        else
            st = eng_text_prompts_read(s->text, setting_str(v, S_PROMPTS_TEXT), setting_str(v, S_PROMPTS_FORMAT),
                                       setting_str(v, S_PROMPTS_FIELD), s->checkpoint, shape_of(s)->bos_token_id,
                                       shape_of(s)->vocab_size, eng_prompt_fit_from_name(setting_str(v, S_PROMPTS_FIT)),
                                       (int)setting_int(v, S_PROMPTS_BUCKET_WIDTH), err);
    }
    if (st == BC_OK && (setting_str(v, S_LORA_ADAPTER)[0] || setting_int(v, S_LORA_RANK) > 0)) {
        unsigned targets = 0;
        if (!(s->lora = calloc(1, sizeof *s->lora))) st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", NAME);
        else if (setting_str(v, S_LORA_ADAPTER)[0])
            st = eng_lora_load_peft(s->lora, eng_plugin.family, setting_str(v, S_LORA_ADAPTER), shape_of(s), err);
        else if ((st = eng_lora_targets_parse(eng_plugin.family, setting_str(v, S_LORA_TARGETS), &targets, err)) == BC_OK)
            st = eng_lora_synthetic(s->lora, eng_plugin.family, shape_of(s), (int)setting_int(v, S_LORA_RANK),
                                    bc_setting_at(v, S_LORA_ALPHA)->f, targets, s->weights_seed, err);
        if (st == BC_OK) {
            s->lora->restore = !strcmp(setting_str(v, S_LORA_UNFUSE), "restore");
            s->lora_unfused = !strcmp(setting_str(v, S_LORA_MODE), "unfused");
            st = eng_lora_set_threads(s->lora, s->threads, err);
        }
    }
    if (st != BC_OK) {
        backend_destroy(s);
        return st;
    }
    s->peak_bytes = current_bytes(s);
    *out = s;
    return BC_OK;
}

static bc_status backend_describe(void *inst, bc_backend_info *info, bc_error *err) {
    (void)err;
    eng_backend *s = inst;
    const eng_shape *hp = shape_of(s);
    eng_device_info d;
    s->dev->describe(s->dev_ctx, &d);
    BC_SET(info, bc_backend_info, model, s->model_desc);
    BC_SET(info, bc_backend_info, device, d.device);
    BC_SET(info, bc_backend_info, device_name, d.device_name);
    BC_SET(info, bc_backend_info, driver, d.driver);
    BC_SET(info, bc_backend_info, model_family, s->fam->name);
    BC_SET(info, bc_backend_info, n_parameters, eng_weights_n_parameters(s->fam, s->hp));
    BC_SET(info, bc_backend_info, n_layers, hp->n_layers);
    BC_SET(info, bc_backend_info, hidden_size, hp->hidden_size);
    BC_SET(info, bc_backend_info, n_heads, hp->n_heads);
    BC_SET(info, bc_backend_info, ffn_size, hp->ffn_size);
    BC_SET(info, bc_backend_info, vocab_size, hp->vocab_size);
    BC_SET(info, bc_backend_info, max_positions, hp->max_positions);
    BC_SET(info, bc_backend_info, cpu_kernels, d.cpu_kernels);
    BC_SET(info, bc_backend_info, cpu_threads, d.cpu_threads);
    return BC_OK;
}

/* ------------------------------------------------------------------ cases */

/* The case's precision as a dtype this backend has kernels for: the layout
 * its precision plugin's conversions produce (precision.h); int8 has CPU
 * kernels only and takes no LoRA adapter. */
static bc_status case_dtype(const eng_backend *s, const bc_case *c, eng_dtype *dt, bc_error *err) {
    bc_status st = eng_precision_dtype(c->precision, c->precision_ops, dt, err);
    if (st != BC_OK) return with_family_name(err);
    if (st == BC_OK && *dt == ENG_I8 && s->dev != &eng_device_cpu)
        return bc_error_set(err, BC_ERR_UNSUPPORTED,
                            "%s: precision %s (int8) has CPU kernels only; device = \"cuda\" runs float32, float16 "
                            "and bfloat16", NAME,
                            c->precision ? c->precision : "?");
    if (st == BC_OK && *dt == ENG_I8 && s->lora)
        return bc_error_set(err, BC_ERR_UNSUPPORTED,
                            "%s: precision %s (int8): a LoRA adapter is not fused into int8 weights (one scale per "
                            "row); use fp32, fp16 or bf16 with lora_adapter / lora_rank", NAME,
                            c->precision ? c->precision : "?");
    return st;
}

/* The rollout a case asks for. */
static bc_status rollout_params(const eng_backend *s, const bc_case *c, eng_rollout_params *p, bc_error *err) {
    if (!c->sampling) return bc_error_set(err, BC_ERR_INVALID, "%s: case %u has no sampling parameters", NAME, c->index);
    if (c->batch_size > INT_MAX || c->samples_per_prompt > INT_MAX || c->prompt_length > INT_MAX ||
        c->response_length > INT_MAX)
        return bc_error_set(err, BC_ERR_INFEASIBLE, "%s: case %u: batch %u x %u samples, prompt %u, response %u: too large", NAME,
                            c->index, c->batch_size, c->samples_per_prompt, c->prompt_length, c->response_length);
    const bc_sampling *sp = c->sampling;
    *p = (eng_rollout_params){.batch_size = (int)c->batch_size,
                              .samples_per_prompt = (int)c->samples_per_prompt,
                              .prompt_length = (int)c->prompt_length,
                              .response_length = (int)c->response_length,
                              .sampling = {sp->temperature, sp->top_p, sp->top_k, sp->seed},
                              .stop_at_eos = s->stop_at_eos,
                              .shared_prefill = s->shared_prefill,
                              .per_iteration_stream = s->per_iteration_stream,
                              .prompts = s->have_prompts ? &s->prompts : NULL,
                              .lengths = s->lengths,
                              .continuous = s->continuous,
                              .capacity = s->capacity,
                              .kv_paged = s->kv_paged,
                              .page_tokens = s->page_tokens};
    if (s->text) /* fitted to this case (the view lives in s->text until the next fit) */
        return eng_text_prompts_fit(s->text, p->prompt_length, p->batch_size, &p->prompts, &p->prompt_length, err);
    return BC_OK;
}

/* a + b, or -1 once either is -1 or the sum leaves int64 */
static int64_t add_bytes(int64_t a, int64_t b) {
    int64_t r;
    return a < 0 || b < 0 || __builtin_add_overflow(a, b, &r) ? -1 : r;
}

/* The memory case c will take, without allocating it (all fields). Every sum
 * is checked: a plan that leaves 64 bits is refused, not wrapped. */
static bc_status plan_case(const eng_backend *s, const bc_case *c, bc_memory_stats *out, bc_error *err) {
    eng_dtype dt = ENG_F32;
    eng_rollout_params p;
    eng_rollout ro;
    bc_status st = case_dtype(s, c, &dt, err);
    if (st == BC_OK) st = rollout_params(s, c, &p, err);
    if (st == BC_OK) st = eng_rollout_dims(&ro, shape_of(s), &p, err);
    if (st == BC_OK && s->fam->check_positions) st = s->fam->check_positions(s->hp, ro.Stot, err);
    if (st != BC_OK) return st;
    const eng_shape *hp = shape_of(s);
    const footprint f = footprint_of(s, s->hp, dt, &ro);
    const int64_t host_fixed = add_bytes(add_bytes(add_bytes(f.weights, f.layer_table), f.prompts), f.buffers);
    const int on_host = f.dev.device_peak < 0; /* the cache is on the host */
    const int64_t peak = on_host ? add_bytes(add_bytes(host_fixed, f.dev.kv_cache), f.dev.workspace) : host_fixed;
    if (f.weights <= 0 || peak < 0)
        return bc_error_set(err, BC_ERR_INFEASIBLE,
                            "the case's memory does not fit in 64 bits (%d layers x %d rows x %d positions x "
                            "hidden_size %d of KV cache)",
                            hp->n_layers, ro.R, ro.Stot, hp->hidden_size);
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->weights_bytes = f.dev.weights >= 0 ? f.dev.weights : f.weights;
    out->kv_cache_bytes = f.dev.kv_cache;
    out->workspace_bytes = f.dev.workspace;
    out->host_peak_bytes = peak;
    out->device_peak_bytes = f.dev.device_peak;
    out->resident_bytes = on_host ? peak : f.dev.device_peak;
    out->device_free_bytes = out->device_total_bytes = -1;
    return BC_OK;
}

static double gib(int64_t bytes) { return (double)bytes / (1024.0 * 1024.0 * 1024.0); }

/* Memory admission: the plan against what the device says there is (the
 * host: MemAvailable plus what this backend already holds, which is reused
 * or freed before the case allocates; a GPU: its memory). memory_check
 * decides what an excess is: an error, a warning, nothing. */
static bc_status admit_memory(const eng_backend *s, const bc_memory_stats *plan, bc_error *err) {
    if (s->memory_check == MEMCHECK_OFF) return BC_OK;
    const int on_device = plan->device_peak_bytes >= 0;
    const int64_t need = on_device ? plan->device_peak_bytes : plan->host_peak_bytes;
    char there[200] = "";
    const int64_t have = s->dev->capacity(s->dev_ctx, current_bytes(s), there, sizeof there);
    if (have <= 0 || need <= have) return BC_OK;
    const char *what = on_device ? "device memory" : "memory";
    if (s->memory_check == MEMCHECK_WARN) {
        if (s->host && s->host->log)
            s->host->log(s->host, BC_LOG_WARN, "case needs %.1f GiB of %s; %s (memory_check = \"warn\": running it anyway)",
                         gib(need), what, there);
        return BC_OK;
    }
    bc_error_set(err, BC_ERR_INFEASIBLE, "needs %.1f GiB of %s (weights %.1f GiB, KV cache %.1f GiB, workspace %.1f GiB); %s",
                 gib(need), what, gib(plan->weights_bytes), gib(plan->kv_cache_bytes), gib(plan->workspace_bytes), there);
    return bc_error_hint(err, "backend setting memory_check = \"warn\" (or \"off\") runs such a case anyway");
}

/* Can case c run? Precision, prompt length, positions and memory, from the
 * shape alone: loads nothing. */
static bc_status backend_check_case(void *inst, const bc_case *c, bc_error *err) {
    eng_backend *s = inst;
    bc_memory_stats plan;
    bc_status st = plan_case(s, c, &plan, err);
    if (st != BC_OK) return st;
    return admit_memory(s, &plan, err);
}

static bc_status backend_plan_memory(void *inst, const bc_case *c, bc_memory_stats *out, bc_error *err) {
    bc_memory_stats plan;
    bc_status st = plan_case(inst, c, &plan, err);
    if (st == BC_OK) put_memory_stats(out, &plan);
    return st;
}

/* Heavy checks, once before the first case: the device and the
 * checkpoint's tensors (so a broken file stops the run before it starts). */
static bc_status backend_prepare(void *inst, bc_error *err) {
    eng_backend *s = inst;
    bc_status st = s->dev->open(s->dev_ctx, err);
    if (st == BC_OK && s->checkpoint[0]) st = eng_weights_validate(s->fam, s->checkpoint, err);
    return st;
}

static bc_status build_weights(eng_backend *s, eng_dtype dt, bc_error *err) {
    if (s->have_weights && s->w->dtype == dt) return BC_OK;
    end_rollout(s);
    if (s->have_weights) eng_weights_free(s->w);
    s->have_weights = 0;
    bc_status st = s->checkpoint[0] ? eng_weights_load(s->w, s->fam, s->checkpoint, dt, err)
                                    : eng_weights_synthetic(s->w, s->fam, s->hp, dt, s->weights_seed, err);
    if (st != BC_OK) {
        eng_weights_free(s->w);
        return st;
    }
    s->have_weights = 1;
    memcpy(s->hp, (const char *)s->w + s->fam->hparams_offset, s->fam->hparams_size);
    account(s);
    return BC_OK;
}

/* The case's prompts as they will run, from the rollout's prompt mask
 * [Bp, Tp] (whatever their source): the median real prompt
 * (bpe_length_summary_of's) and the pad slots, Bp x Tp minus the real
 * tokens. The median stays -1 without memory for the lengths. */
static void summarize_prompts(eng_backend *s) {
    const eng_rollout *ro = &s->ro;
    int *len = malloc((size_t)ro->Bp * sizeof *len);
    int64_t real = 0;
    for (int b = 0; b < ro->Bp; b++) {
        const uint8_t *mk = ro->prompt_mask + (size_t)b * ro->Tp;
        int n = 0;
        for (int t = 0; t < ro->Tp; t++) n += mk[t];
        if (len) len[b] = n;
        real += n;
    }
    s->prompt_p50_tokens = len ? bpe_length_summary_of(len, ro->Bp).p50 : -1;
    s->prompt_pad_tokens = (int64_t)ro->Bp * ro->Tp - real;
    free(len);
}

static bc_status backend_begin_case(void *inst, const bc_case *c, bc_error *err) {
    eng_backend *s = inst;
    eng_dtype dt = ENG_F32;
    eng_rollout_params p;
    bc_memory_stats plan;
    bc_status st = case_dtype(s, c, &dt, err);
    if (st == BC_OK) st = rollout_params(s, c, &p, err);
    /* admission again, with the memory there is now: a failed case, not an OOM kill */
    if (st == BC_OK) st = plan_case(s, c, &plan, err);
    if (st == BC_OK) st = admit_memory(s, &plan, err);
    if (st != BC_OK) return st;
    if (s->text && s->host && s->host->log) {
        const eng_text_batch *b = &s->text->batch;
        s->host->log(s->host, BC_LOG_INFO,
                     "case %u: prompts_text: %d prompts fit; this batch: %d..%d tokens (p50 %d), padded to %d, "
                     "%lld of %lld slots padding, %d truncated",
                     c->index, b->set_size, b->min, b->max, b->p50, b->width, (long long)b->pad_tokens,
                     (long long)b->slots, b->truncated);
    }
    end_rollout(s);
    s->case_index = c->index;
    s->n_generates = 0;
    clear_metrics(s);
    if ((st = s->dev->open(s->dev_ctx, err)) != BC_OK) return st; /* before building weights */
    if ((st = build_weights(s, dt, err)) != BC_OK) return st;
    s->w->lora_unfused = s->lora_unfused ? s->lora : NULL; /* the CPU forward applies it (the family's) */
    if ((st = eng_rollout_init(&s->ro, &s->w->shape, &p, err)) != BC_OK) return st;
    s->have_rollout = 1;
    summarize_prompts(s);
    st = s->dev->begin_case(s->dev_ctx, s->w, &s->ro, err);
    account(s);
    return st;
}

static bc_status backend_expand_prompts(void *inst, bc_error *err) {
    eng_backend *s = inst;
    if (!s->have_rollout) return bc_error_set(err, BC_ERR_INTERNAL, "%s: expand_prompts outside a case", NAME);
    return eng_rollout_expand(&s->ro, err);
}

/* The last rollout's results into the host's out, as far as out reaches. */
static void put_generation_stats(bc_generation_stats *out, const eng_rollout *ro) {
    BC_SET(out, bc_generation_stats, prefill_forward_ms, ro->prefill_ms);
    BC_SET(out, bc_generation_stats, decode_forward_ms, ro->decode_ms);
    BC_SET(out, bc_generation_stats, num_decode_forwards, ro->n_decode_forwards);
    BC_SET(out, bc_generation_stats, num_generated_tokens, ro->n_generated);
    BC_SET(out, bc_generation_stats, returned_response_length, ro->returned_len);
    BC_SET(out, bc_generation_stats, first_token_ms, ro->first_token_ms);
    BC_SET(out, bc_generation_stats, decode_step_ms, ro->step_ms); /* owned by the rollout, freed by end_case */
    BC_SET(out, bc_generation_stats, n_decode_steps, (uint32_t)ro->n_steps);
    BC_SET(out, bc_generation_stats, num_prefill_tokens, ro->n_prefill_tokens);
    BC_SET(out, bc_generation_stats, num_decode_tokens, ro->n_decode_tokens);
    BC_SET(out, bc_generation_stats, prompt_width_tokens, ro->Tp);
    BC_SET(out, bc_generation_stats, prompt_min_tokens, ro->prompt_min);
    BC_SET(out, bc_generation_stats, prompt_max_tokens, ro->prompt_max);
    BC_SET(out, bc_generation_stats, tokens, ro->seq + ro->response_start); /* the rollout's, until end_case */
    BC_SET(out, bc_generation_stats, token_rows, (int64_t)ro->R);
    BC_SET(out, bc_generation_stats, token_cols, (int64_t)ro->returned_len);
    BC_SET(out, bc_generation_stats, token_stride, (int64_t)ro->Stot);
    /* the schedule (the rollout's arrays, until end_case) */
    _Static_assert(sizeof(int) == sizeof(int32_t), "the rollout's int arrays are the ABI's int32_t");
    BC_SET(out, bc_generation_stats, step_active_rows, (const int32_t *)ro->step_active);
    BC_SET(out, bc_generation_stats, schedule_rows, (int64_t)ro->R);
    BC_SET(out, bc_generation_stats, row_first_token_ms, ro->row_first_ms);
    BC_SET(out, bc_generation_stats, row_done_step, (const int32_t *)ro->row_done_step);
}

/* A count as a metric value: NaN when unknown (< 0), as the host reads
 * its 2.3 fields. */
static double count_metric(int64_t n) { return n >= 0 ? (double)n : BC_NOT_MEASURED; }

/* The last rollout's eng_metrics values into s->metrics (read_metrics
 * hands them to the host). */
static void take_metrics(eng_backend *s) {
    const eng_rollout *ro = &s->ro;
    double *m = s->metrics;
    clear_metrics(s);
    m[M_PADDED_TOKEN_SLOTS] = count_metric(ro->n_padded_slots);
    m[M_RESPONSE_LENGTH_MIN] = ro->lengths_drawn.min;
    m[M_RESPONSE_LENGTH_P50] = ro->lengths_drawn.p50;
    m[M_RESPONSE_LENGTH_P95] = ro->lengths_drawn.p95;
    m[M_RESPONSE_LENGTH_MAX] = ro->lengths_drawn.max;
    m[M_NUM_PREFILL_FORWARDS] = count_metric(ro->n_prefill_forwards);
    m[M_SCHEDULER_OVERHEAD_MS] = ro->scheduler_ms;
    m[M_CACHE_MANAGEMENT_OVERHEAD_MS] = ro->cache_mgmt_ms;
    int64_t active = 0;
    for (int i = 0; i < ro->n_steps; i++) active += ro->step_active[i];
    const double mean_active = ro->n_steps > 0 ? (double)active / ro->n_steps : BC_NOT_MEASURED;
    m[M_ACTIVE_BATCH_SIZE] = mean_active;
    m[M_CONTINUOUS_BATCH_SIZE] = ro->Cap ? (double)ro->Cap : BC_NOT_MEASURED;
    m[M_OCCUPANCY] = mean_active / (ro->Cap ? ro->Cap : ro->R);
    m[M_KV_PAGES_PEAK] = count_metric(ro->kv_pages_peak);
    m[M_KV_BYTES_PEAK] = count_metric(ro->kv_bytes_peak);
    m[M_KV_FRAGMENTATION] = ro->kv_fragmentation;
    /* may be negative (a paged peak above the contiguous cache); INT64_MIN = unknown */
    m[M_KV_BYTES_SAVED] = ro->kv_bytes_saved != INT64_MIN ? (double)ro->kv_bytes_saved : BC_NOT_MEASURED;
    if (s->lora && !s->lora_unfused) {
        m[M_LORA_FUSE_MS] = s->lora->fuse_ms;
        m[M_LORA_UNFUSE_MS] = s->lora->unfuse_ms;
    }
}

/* The device's generate stage, as eng_lora_around runs it. */
static bc_status device_generate(void *inst, bc_error *err) {
    eng_backend *s = inst;
    return s->dev->generate(s->dev_ctx, &s->ro, err);
}

static bc_status backend_generate(void *inst, bc_generation_stats *out, bc_error *err) {
    eng_backend *s = inst;
    if (!s->have_rollout) return bc_error_set(err, BC_ERR_INTERNAL, "%s: generate outside a case", NAME);
    s->ro.iteration = s->n_generates++;
    clear_metrics(s);
    bc_status st = s->lora && !s->lora_unfused /* as the hybrid engine: fuse, generate, unfuse (also after a failed
                                                  generate); unfused, the forward applies it */
                       ? eng_lora_around(s->lora, s->w, device_generate, s, s->host, err)
                       : s->dev->generate(s->dev_ctx, &s->ro, err);
    account(s);
    if (st != BC_OK) return st;
    put_generation_stats(out, &s->ro);
    BC_SET(out, bc_generation_stats, prompt_p50_tokens, s->prompt_p50_tokens);
    BC_SET(out, bc_generation_stats, prompt_pad_tokens, s->prompt_pad_tokens);
    take_metrics(s);
    return BC_OK;
}

/* The per-iteration metrics (eng_metrics' order) of the last generate; no
 * per-case ones. */
static bc_status backend_read_metrics(void *inst, bc_metric_scope scope, double *values, uint32_t n_values,
                                      bc_error *err) {
    (void)err;
    const eng_backend *s = inst;
    if (scope != BC_METRIC_PER_ITERATION) return BC_OK;
    for (uint32_t i = 0; i < n_values && i < M_COUNT; i++) values[i] = s->metrics[i];
    return BC_OK;
}

/* An output setting's path with "{case}" replaced by the case index. */
static void case_path(const char *setting, uint32_t case_index, char *path, size_t size) {
    const char *mark = strstr(setting, "{case}");
    if (mark) snprintf(path, size, "%.*s%u%s", (int)(mark - setting), setting, case_index, mark + 6);
    else snprintf(path, size, "%s", setting);
}

/* Writes the generated ids of every row, one line each, to save_tokens
 * ("{case}" in the path becomes the case index). */
static bc_status save_tokens(eng_backend *s, bc_error *err) {
    char path[4096];
    case_path(s->save_tokens, s->case_index, path, sizeof path);
    bc_output *o = s->host->output_open(s->host, path, err);
    if (!o) return err && err->code ? err->code : BC_ERR_IO;
    const eng_rollout *ro = &s->ro;
    bc_status st = BC_OK;
    for (int r = 0; r < ro->R && st == BC_OK; r++) {
        const int32_t *resp = ro->seq + (size_t)r * ro->Stot + ro->response_start;
        for (int k = 0; k < ro->returned_len && st == BC_OK; k++)
            st = s->host->output_printf(o, err, k ? " %d" : "%d", (int)resp[k]);
        if (st == BC_OK) st = s->host->output_printf(o, err, "\n");
    }
    if (st != BC_OK) {
        s->host->output_abort(o);
        return st;
    }
    return s->host->output_commit(o, err);
}

/* Writes the last rollout's schedule to save_schedule ("{case}" as in
 * save_tokens): a line "steps" with the rows each decode step generated
 * for, then one line per row: "row R length N first_token_ms T done_step K"
 * (its drawn length, the ms from the start of generate to its token 0, the
 * decode steps run when it finished). */
static bc_status save_schedule(eng_backend *s, bc_error *err) {
    char path[4096];
    case_path(s->save_schedule, s->case_index, path, sizeof path);
    bc_output *o = s->host->output_open(s->host, path, err);
    if (!o) return err && err->code ? err->code : BC_ERR_IO;
    const eng_rollout *ro = &s->ro;
    bc_status st = s->host->output_printf(o, err, "steps");
    for (int k = 0; k < ro->n_steps && st == BC_OK; k++) st = s->host->output_printf(o, err, " %d", ro->step_active[k]);
    if (st == BC_OK) st = s->host->output_printf(o, err, "\n");
    for (int r = 0; r < ro->R && st == BC_OK; r++)
        st = s->host->output_printf(o, err, "row %d length %d first_token_ms %.3f done_step %d\n", r, ro->row_len[r],
                                    ro->row_first_ms[r], ro->row_done_step[r]);
    if (st != BC_OK) {
        s->host->output_abort(o);
        return st;
    }
    return s->host->output_commit(o, err);
}

static bc_status backend_post_process(void *inst, bc_error *err) {
    eng_backend *s = inst;
    if (!s->have_rollout) return bc_error_set(err, BC_ERR_INTERNAL, "%s: post_process outside a case", NAME);
    bc_status st = eng_rollout_post_process(&s->ro, err);
    if (st == BC_OK && s->save_tokens[0]) st = save_tokens(s, err);
    if (st == BC_OK && s->save_schedule[0]) st = save_schedule(s, err);
    return st;
}

static bc_status backend_cache_release(void *inst, bc_error *err) {
    (void)err;
    eng_backend *s = inst;
    if (s->have_rollout) s->dev->cache_release(s->dev_ctx, &s->ro);
    return BC_OK;
}

static bc_status backend_cache_acquire(void *inst, bc_error *err) {
    eng_backend *s = inst;
    if (!s->have_rollout) return bc_error_set(err, BC_ERR_INTERNAL, "%s: cache_acquire outside a case", NAME);
    bc_status st = s->dev->cache_acquire(s->dev_ctx, &s->ro, err);
    account(s);
    return st;
}

static void backend_reset_peak_memory(void *inst) {
    eng_backend *s = inst;
    s->peak_bytes = current_bytes(s);
    s->dev->reset_peak(s->dev_ctx);
}

static bc_status backend_read_memory(void *inst, bc_memory_stats *out, bc_error *err) {
    eng_backend *s = inst;
    account(s);
    eng_device_memory dm;
    bc_status st = s->dev->read_memory(s->dev_ctx, s->have_rollout ? &s->ro : NULL, &dm, err);
    bc_memory_stats m = {.struct_size = sizeof m};
    m.weights_bytes = dm.weights >= 0 ? dm.weights : s->have_weights ? (int64_t)s->w->arena_bytes : 0;
    m.kv_cache_bytes = dm.kv_cache;
    m.workspace_bytes = dm.workspace;
    m.host_peak_bytes = s->peak_bytes;
    m.device_peak_bytes = dm.device_peak;
    m.device_free_bytes = dm.device_free;
    m.device_total_bytes = dm.device_total;
    /* after a release: without the cache */
    m.resident_bytes = dm.device_resident >= 0 ? dm.device_resident : current_bytes(s);
    put_memory_stats(out, &m);
    return st;
}

static void backend_end_case(void *inst) {
    eng_backend *s = inst;
    end_rollout(s);
}

const bc_backend_ops eng_backend_ops = {
    .struct_size = sizeof(bc_backend_ops),
    .create = backend_create,
    .destroy = backend_destroy,
    .describe = backend_describe,
    .check_case = backend_check_case,
    .prepare = backend_prepare,
    .plan_memory = backend_plan_memory,
    .begin_case = backend_begin_case,
    .expand_prompts = backend_expand_prompts,
    .generate = backend_generate,
    .post_process = backend_post_process,
    .cache_release = backend_cache_release,
    .cache_acquire = backend_cache_acquire,
    .reset_peak_memory = backend_reset_peak_memory,
    .read_memory = backend_read_memory,
    .end_case = backend_end_case,
    /* begin_case converts the weights when the precision changes; nothing
     * else is costly to switch */
    .rebuild_axes = BC_AXIS_PRECISION,
    .read_metrics = backend_read_metrics, /* eng_metrics (the descriptor's table) */
};

