/* opt_nocuda.c: a build without the CUDA Toolkit has no CUDA device for the
 * OPT family (opt_device_cuda == NULL; the plugin refuses device "cuda"). */
#include "opt_model.h"

const eng_device_ops *const opt_device_cuda = NULL;
