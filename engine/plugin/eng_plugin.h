/* eng_plugin.h: the backend plugin every family shares (eng_settings.c,
 * eng_backend.c, eng_cases.c): the bc_backend_ops, the engine's settings and
 * metric tables (docs/opt.md lists them), parameterised by the family a
 * plugin file names. A family's plugin file
 * (plugins/opt/opt_plugin.c) defines eng_plugin, eng_plugin_presets and
 * eng_plugin_model_help, and its descriptor with ENG_PLUGIN_BACKEND.
 */
#ifndef ENG_PLUGIN_H
#define ENG_PLUGIN_H

#include "benchctl/plugin.h"
#include "device.h"
#include "family.h"

/* What a family's plugin file gives the glue. */
typedef struct eng_plugin_def {
    const eng_family *family;
    /* The family's CUDA device, or NULL: none in this build (the hook NULL:
     * the family has no CUDA device, refused before the first case). */
    const eng_device_ops *(*cuda_device)(void);
} eng_plugin_def;

/* Defined by the family's plugin file (one per plugin). */
extern const eng_plugin_def eng_plugin;
/* The `model` setting's choices, "" first (the family's default preset),
 * NULL-terminated, and its help line. */
extern const char *const eng_plugin_presets[];
extern const char eng_plugin_model_help[];

/* The engine's settings (eng_settings.c) and backend ops (eng_cases.c). */
#define ENG_N_SETTINGS 38
extern const bc_setting_desc eng_settings[ENG_N_SETTINGS];
/* The engine's metrics, the rows read_metrics fills (docs/opt.md lists them). */
#define ENG_N_METRICS 25
extern const bc_metric_desc eng_metrics[ENG_N_METRICS];
extern const bc_backend_ops eng_backend_ops;
bc_status eng_backend_check_settings(const bc_host *host, const bc_settings *settings, bc_error *err);

/* A family's backend plugin: its descriptor (name, version, description)
 * over the engine's settings and hooks, and its entry point. */
#define ENG_PLUGIN_BACKEND(name_, version_, description_)                                          \
    static const bc_plugin_desc eng_plugin_desc = {                                                \
        BC_PLUGIN_DESC_HEADER,                                                                     \
        .kind = BC_KIND_BACKEND,                                                                   \
        .name = (name_),                                                                           \
        .version = (version_),                                                                     \
        .description = (description_),                                                            \
        .settings = eng_settings,                                                                  \
        .n_settings = ENG_N_SETTINGS,                                                              \
        .setting_size = (uint32_t)sizeof(eng_settings[0]),                                         \
        BC_METRICS_TABLE(eng_metrics),                                                             \
        .ops = &eng_backend_ops,                                                                   \
        .check_settings = eng_backend_check_settings,                                              \
    };                                                                                             \
    BC_PLUGIN_DEFINE(eng_plugin_desc)

#endif
