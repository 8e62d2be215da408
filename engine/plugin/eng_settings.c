/* eng_settings.c: the engine's settings table every family's backend
 * plugin shares (eng_plugin.h; docs/opt.md lists them), its metrics table,
 * and the checks of a set of settings before anything is made
 * (check_settings, also run by create).
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
#include "eng_backend.h"
#include "fileio.h"
#include "precision.h"
#include "prompt_set.h"

/* Puts the family's name before a message the engine's libraries wrote
 * (they name no plugin): "llama: kernels = ...". Returns err's code. */
bc_status eng_backend_with_family_name(bc_error *err) {
    if (!err) return BC_ERR_INTERNAL;
    char msg[sizeof err->message + 64];
    snprintf(msg, sizeof msg, "%s: %s", NAME, err->message);
    size_t n = strlen(msg);
    if (n >= sizeof err->message) n = sizeof err->message - 1; /* cut as bc_error_set would */
    memcpy(err->message, msg, n);
    err->message[n] = '\0';
    return err->code;
}

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
const char *const eng_response_lengths_choices[] = {"fixed", "uniform", "lognormal", "empirical", NULL};
static const char *const batching_choices[] = {"static", "continuous", NULL};
static const char *const kv_layout_choices[] = {"contiguous", "paged", NULL};
static const char *const refit_source_choices[] = {"off", "host", "checkpoint", NULL};

_Static_assert(S_COUNT == ENG_N_SETTINGS, "eng_plugin.h counts the settings");

const bc_setting_desc eng_settings[S_COUNT] = {
    [S_MODEL] = {.name = "model", .type = BC_SETTING_ENUM, .default_string = "", .choices = eng_plugin_presets,
                 .help = eng_plugin_model_help},
    [S_CHECKPOINT] = {.name = "checkpoint", .type = BC_SETTING_STRING, .default_string = "",
                      .help = "Hugging Face checkpoint directory (config.json + weights); \"\" = synthetic weights"},
    [S_WEIGHTS_SEED] = {.name = "weights_seed", .type = BC_SETTING_INT, .default_int = 0, .has_range = 1, .min = 0,
                        .max = 9007199254740992.0, .help = "seed of the synthetic weights"},
    [S_THREADS] = {.name = "threads", .type = BC_SETTING_INT, .default_int = -1, .has_range = 1, .min = -1,
                   .max = 1024, .help = "worker threads (-1 = every online CPU; 0 = per phase the fastest of 1, one "
                                        "per core and every CPU, measured as each case begins)"},
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
                            .choices = eng_response_lengths_choices,
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
    /* refit (docs/engine.md, "Refit") */
    [S_REFIT_SOURCE] = {.name = "refit_source", .type = BC_SETTING_ENUM, .default_string = "off",
                        .choices = refit_source_choices,
                        .help = "where refit takes new weights from: \"host\" (a copy in host memory made at "
                                "prepare, as a trainer hands them over), \"checkpoint\" (the files, read again at "
                                "each refit); \"off\": refit refused"},
    [S_REFIT_CHECKPOINT] = {.name = "refit_checkpoint", .type = BC_SETTING_STRING, .default_string = "",
                            .help = "refit's new weights: a checkpoint directory of the model's shape (\"\" = the "
                                    "engine's own checkpoint)"},
    [S_REFIT_SEED] = {.name = "refit_seed", .type = BC_SETTING_INT, .default_int = -1, .has_range = 1, .min = -1,
                      .max = 9007199254740992.0,
                      .help = "synthetic weights without refit_checkpoint: the seed of refit's new weights (-1 = "
                              "weights_seed + 1)"},
};

/* ---------------------------------------------------------------- metrics */

/* What generate measures beyond the host's own fields (docs/plugins.md,
 * "Metrics"), read after each iteration by read_metrics in this order. Each
 * row is one of the host's 2.3 fields of that name (core/src/run/fields.c),
 * with its unit, direction and scope: the run refuses a row that differs. */
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
    /* the engine's own (no host field): threads = 0 (docs/engine.md, "Threads") */
    METRIC(M_THREADS_PREFILL, "threads_prefill", "threads", NEITHER,
           "CPU threads the prefill ran on (threads = 0: the probe's choice)"),
    METRIC(M_THREADS_DECODE, "threads_decode", "threads", NEITHER,
           "CPU threads the decode steps ran on (threads = 0: the probe's choice)"),
    METRIC(M_THREADS_PROBE_PREFILL_1_MS, "threads_probe_prefill_1_ms", "ms", LOWER,
           "threads = 0: layer 0's matrices at the prefill's rows (at most 256), 1 thread"),
    METRIC(M_THREADS_PROBE_PREFILL_CORES_MS, "threads_probe_prefill_cores_ms", "ms", LOWER,
           "the same, one thread per physical core (null without SMT siblings)"),
    METRIC(M_THREADS_PROBE_PREFILL_ALL_MS, "threads_probe_prefill_all_ms", "ms", LOWER,
           "the same, every online CPU"),
    METRIC(M_THREADS_PROBE_DECODE_1_MS, "threads_probe_decode_1_ms", "ms", LOWER,
           "threads = 0: the first 4 layers' matrices at the decode rows, 1 thread"),
    METRIC(M_THREADS_PROBE_DECODE_CORES_MS, "threads_probe_decode_cores_ms", "ms", LOWER,
           "the same, one thread per physical core (null without SMT siblings)"),
    METRIC(M_THREADS_PROBE_DECODE_ALL_MS, "threads_probe_decode_all_ms", "ms", LOWER,
           "the same, every online CPU"),
};

#undef METRIC

/* --------------------------------------------------------------- settings */

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
 * effects; the descriptor's eng_settings_check hook and create both run it. */
bc_status eng_settings_check(const bc_settings *v, bc_error *err) {
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
    if (st != BC_OK) return eng_backend_with_family_name(err);
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
    const char *refit_source = setting_str(v, S_REFIT_SOURCE), *refit_ckpt = setting_str(v, S_REFIT_CHECKPOINT);
    if (strcmp(refit_source, "off") != 0 && strcmp(setting_str(v, S_DEVICE), "cpu") != 0)
        return bc_error_set(err, BC_ERR_UNSUPPORTED,
                            "refit_source = \"%s\": refit runs on device = \"cpu\" only (the CUDA device's copy of "
                            "the weights is not refitted)", refit_source);
    if (!strcmp(refit_source, "checkpoint") && !refit_ckpt[0] && !checkpoint[0])
        return bc_error_set(err, BC_ERR_SETTING,
                            "refit_source = \"checkpoint\" with synthetic weights: set refit_checkpoint (a checkpoint "
                            "directory of the preset's shape), or refit_source = \"host\"");
    if (refit_ckpt[0] && (st = eng_plugin.family->check_files(refit_ckpt, err)) != BC_OK) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err->message);
        snprintf(err->message, sizeof err->message, "refit_checkpoint: %.*s", (int)sizeof msg - 20, msg);
        return st;
    }
    if (refit_ckpt[0] && setting_int(v, S_REFIT_SEED) >= 0)
        return bc_error_set(err, BC_ERR_SETTING, "refit_checkpoint and refit_seed both set: the checkpoint holds the "
                            "new weights; remove refit_seed");
    if ((setting_str(v, S_LORA_ADAPTER)[0] || setting_int(v, S_LORA_RANK) > 0) && !strcmp(setting_str(v, S_DEVICE), "cuda"))
        return bc_error_set(err, BC_ERR_UNSUPPORTED,
                            "lora: the CUDA path neither fuses nor applies unfused LoRA adapters; use device = \"cpu\"");
    return BC_OK;
}

bc_status eng_backend_check_settings(const bc_host *host, const bc_settings *settings, bc_error *err) {
    bc_status st = eng_settings_check(settings, err);
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
