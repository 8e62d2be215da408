/* eng_backend.h: what the plugin glue's files share (engine/plugin, not
 * installed): the settings' and metrics' indices into eng_settings and
 * eng_metrics (eng_settings.c), the backend instance (eng_backend.c makes
 * and destroys it, eng_cases.c runs the cases on it), and the helpers the
 * files call across.
 */
#ifndef ENG_BACKEND_H
#define ENG_BACKEND_H

#include <stdint.h>

#include "benchctl/plugin.h"
#include "device.h"
#include "eng_plugin.h"
#include "lora.h"
#include "text_prompts.h"

/* The plugin's family name, for messages ("opt: ..."). */
#define NAME (eng_plugin.family->name)

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

enum { M_PADDED_TOKEN_SLOTS, M_RESPONSE_LENGTH_MIN, M_RESPONSE_LENGTH_P50, M_RESPONSE_LENGTH_P95,
       M_RESPONSE_LENGTH_MAX, M_NUM_PREFILL_FORWARDS, M_SCHEDULER_OVERHEAD_MS, M_CACHE_MANAGEMENT_OVERHEAD_MS,
       M_ACTIVE_BATCH_SIZE, M_CONTINUOUS_BATCH_SIZE, M_OCCUPANCY, M_KV_PAGES_PEAK, M_KV_BYTES_PEAK,
       M_KV_FRAGMENTATION, M_KV_BYTES_SAVED, M_LORA_FUSE_MS, M_LORA_UNFUSE_MS, M_COUNT };

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
    eng_weights *desc;     /* owned, fam->weights_size bytes: the header a plan reads (eng_backend_footprint) */
    const eng_device_ops *dev; /* where the model runs, picked at create */
    void *dev_ctx;         /* owned: the device, the model on it, the case's cache */
    int have_rollout;
    eng_rollout ro;        /* owned; one per case */
    int64_t prompt_p50_tokens, prompt_pad_tokens; /* of ro's prompts (summarize_prompts); -1 unknown */
    double metrics[M_COUNT]; /* eng_metrics' values of the last generate (read_metrics); NaN unmeasured */
    uint32_t case_index;   /* of the current case (save_tokens) */
    uint64_t n_generates;  /* generates in the current case (sample_stream) */
    int64_t peak_bytes;    /* high-water mark of eng_backend_current_bytes() */
    eng_rollout_tokens tokens; /* owned: the last read_rollout's arrays (score.h), until end_case */
    const bc_rollout_tokens *score_in; /* the score hook's arguments while eng_lora_around runs it */
    float *score_out;
    char model_desc[600];
} eng_backend;

/* Every metric unmeasured (before a case's first generate, after a failed one). */
static inline void clear_metrics(eng_backend *s) {
    for (int i = 0; i < M_COUNT; i++) s->metrics[i] = BC_NOT_MEASURED;
}
/* Setting i of v: a string ("" when unset), an integer. */
static inline const char *setting_str(const bc_settings *v, int i) {
    const char *s = bc_setting_at(v, (uint32_t)i)->s;
    return s ? s : "";
}
static inline int64_t setting_int(const bc_settings *v, int i) { return bc_setting_at(v, (uint32_t)i)->i; }
/* The shape: the first member of the family's hparams (family.h). */
static inline const eng_shape *shape_of(const eng_backend *s) { return (const eng_shape *)s->hp; }

/* ---- eng_settings.c ---- */
/* Puts the family's name before a message the engine's libraries wrote
 * (they name no plugin): "llama: kernels = ...". Returns err's code. */
bc_status eng_backend_with_family_name(bc_error *err);
/* The settings agree with each other and the files they name exist. */
bc_status eng_settings_check(const bc_settings *v, bc_error *err);
/* response_lengths' choices, in eng_length_kind's order. */
extern const char *const eng_response_lengths_choices[];

/* ---- eng_backend.c ---- */
/* The memory of a case, in parts: what the host holds besides the cache,
 * and the cache on the device that holds it. */
typedef struct footprint {
    int64_t weights;     /* the host weights' arena */
    int64_t layer_table; /* the host weights' per-layer table */
    int64_t prompts;     /* the prompts file's prompts */
    int64_t buffers;     /* the rollout's host buffers (prompts, sequences, masks, generators, timings) */
    eng_device_plan dev; /* the case's cache (and device weights) on the device */
} footprint;
/* The one footprint formula: a case of ro's dimensions on shape hp in dt
 * (plan_memory, check_case, begin_case's admission and the memory reports
 * all come from here). */
footprint eng_backend_footprint(const eng_backend *s, const void *hp, eng_dtype dt, const eng_rollout *ro);
/* The bytes held now, and the peak updated from them. */
int64_t eng_backend_current_bytes(const eng_backend *s);
void eng_backend_account(eng_backend *s);
/* m into the host's out, as far as its struct reaches. */
void eng_backend_put_memory(bc_memory_stats *out, const bc_memory_stats *m);
/* The case's rollout ended and freed (none: nothing). */
void eng_backend_end_rollout(eng_backend *s);
/* create, destroy, describe (the ops table is eng_cases.c's). */
bc_status eng_backend_create(const bc_host *host, const bc_settings *v, void **out, bc_error *err);
void eng_backend_destroy(void *inst);
bc_status eng_backend_describe(void *inst, bc_backend_info *info, bc_error *err);

#endif
