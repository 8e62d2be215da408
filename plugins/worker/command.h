/* command.h: the worker's command line and environment, from the worker
 * plugin's `command` and `env` settings: split into words on blanks, '...'
 * and "..." grouping words (no escapes), env's words each KEY=VALUE.
 */
#ifndef WK_COMMAND_H
#define WK_COMMAND_H

#include <stddef.h>

#include "benchctl/plugin.h"
#include "client.h"

/* Words, owned. */
typedef struct wk_words {
    char **v; /* n words and a NULL */
    size_t n;
} wk_words;

/* How to start one worker: its words and the wk_command pointing into them. */
typedef struct wk_launch {
    wk_words argv, env;
    wk_command cmd; /* borrows argv, env and reserved */
} wk_launch;

/* Splits command and env; timeout_s and reserved (NULL-terminated, borrowed
 * until wk_launch_free) go to l->cmd. Errors name the setting. */
bc_status wk_launch_init(wk_launch *l, const char *command, const char *env, double timeout_s,
                         const char *const *reserved, bc_error *err);

void wk_launch_free(wk_launch *l);

#endif
