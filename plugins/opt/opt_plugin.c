/* opt_plugin.c: the `opt` backend plugin, benchctl's native OPT rollout
 * engine: the engine's plugin glue (engine/plugin: its settings and hooks)
 * over the OPT family (opt_family.c), on the CPU or OPT's CUDA
 * device (cuda/). OPT has no settings of its own beyond the presets the
 * `model` setting takes.
 */
#include "eng_plugin.h"
#include "opt_model.h"

static const eng_device_ops *opt_cuda_device(void) { return opt_device_cuda; }

const eng_plugin_def eng_plugin = {.family = &opt_family, .cuda_device = opt_cuda_device};

/* "" first: the default, "from the checkpoint, else 125m". */
const char *const eng_plugin_presets[] = {"", "125m", "350m", "1.3b", "2.7b", "6.7b", "13b", "30b", "66b", NULL};
const char eng_plugin_model_help[] = "shape preset of synthetic weights (\"\" = 125m); leave it out with a checkpoint";

ENG_PLUGIN_BACKEND("opt", "0.2.0",
                   "native OPT rollout engine on the CPU or a CUDA GPU: synthetic or Hugging Face weights, "
                   "fp32/fp16/bf16, int8 weights on the CPU")
