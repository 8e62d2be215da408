/* llama_plugin.c: the `llama` backend plugin, benchctl's native engine for
 * the Llama family (model_type llama, qwen2, mistral; docs/llama.md): the
 * engine's plugin glue (engine/plugin: its settings and hooks)
 * over the family (llama_model.c), on the CPU. The family has no CUDA device
 * yet: device = "cuda" is refused before the first case.
 */
#include "eng_plugin.h"
#include "llama_model.h"

const eng_plugin_def eng_plugin = {.family = &llama_model_family, .cuda_device = NULL};

/* "" first: the default, "from the checkpoint, else qwen2.5-0.5b". */
const char *const eng_plugin_presets[] = {"", "qwen2.5-0.5b", "qwen2.5-1.5b", "llama-3.2-1b", "smollm2-135m", NULL};
const char eng_plugin_model_help[] =
    "shape preset of synthetic weights (\"\" = qwen2.5-0.5b); leave it out with a checkpoint";

ENG_PLUGIN_BACKEND("llama", "0.1.0",
                   "native Llama-family rollout engine (Llama, Qwen2, Mistral) on the CPU: synthetic or Hugging Face "
                   "weights, fp32/fp16/bf16, int8 weights")
