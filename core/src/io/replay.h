/* replay.h: a finished run (runfile.h) turned back into what reporters take:
 * a bc_run_report with its cases and case reports, so any reporter can
 * render a saved run (`benchctl report RUN.json`) exactly as it would have
 * rendered it live. Cases come out in requested order (by index), whatever
 * the file's order (a journal's is the finish order). What the file does not
 * hold is "unknown" (NULL, -1, NaN), never invented.
 *
 * Ownership: the replay owns its arrays; strings are borrowed from the
 * runfile, which must outlive the replay.
 */
#ifndef BENCHCTL_REPLAY_H
#define BENCHCTL_REPLAY_H

#include <stddef.h>

#include "benchctl/plugin.h"
#include "runfile.h"

typedef struct bc_replay {
    bc_case *cases;             /* n_cases, requested order */
    bc_case_report *reports;    /* n_cases, each pointing at cases[k] */
    bc_memory_stats *memory;    /* n_cases */
    bc_precision_ops *dtypes;   /* one per case (only dtype set) */
    bc_backend_info backend;
    bc_backend_info scorer; /* the score stage's scorer, when the file names one */
    bc_setting_desc *setting_descs; /* the backend settings as strings */
    bc_setting_value *setting_values;
    bc_settings settings;
    bc_plugin_ref *plugins;         /* the runfile's */
    bc_sampling sampling;
    const char **precisions, **cache_policies; /* distinct, in first-seen order */
    const char **field_names;                   /* the runfile's */
    size_t n_cases;
    bc_distributed distributed; /* a distributed run's block; ranks borrowed from the runfile */
    bc_run_report run;
} bc_replay;

/* Builds rp from rf. */
bc_status bc_replay_build(const bc_runfile *rf, bc_replay *rp, bc_error *err);

void bc_replay_free(bc_replay *rp);

/* Renders the run saved at run_path through the reporters named in
 * reporters ("html,json"; each found on the plugin search path or by the
 * path of its .so), each with its default settings; output, when not NULL,
 * becomes the "path" setting of the one reporter named (refused with more
 * than one, or for a reporter without a path setting). Each reporter's
 * check_settings, open and close run as in a live run. On failure err names
 * the file or the reporter. */
bc_status bc_replay_render(const char *run_path, const char *reporters, const char *output, bc_error *err);

#endif
