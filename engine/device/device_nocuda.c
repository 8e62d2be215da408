/* device_nocuda.c: the device table of a build without the CUDA Toolkit:
 * there is no CUDA device, and the plugin refuses device = "cuda" with one
 * line (opt_plugin.c, check_settings). */
#include "device.h"

const eng_device_ops *const opt_device_cuda = NULL;
