/* command.c: the worker's command line and environment (command.h). */
#define _GNU_SOURCE
#include "command.h"

#include <stdlib.h>
#include <string.h>

static void words_free(wk_words *w) {
    for (size_t i = 0; i < w->n; i++) free(w->v[i]);
    free(w->v);
    w->v = NULL, w->n = 0;
}

/* Splits s on blanks; '...' and "..." group words (no escapes). */
static bc_status split_words(const char *s, const char *setting, wk_words *out, bc_error *err) {
    memset(out, 0, sizeof *out);
    size_t len = strlen(s);
    out->v = calloc(len / 2 + 2, sizeof *out->v);
    char *buf = malloc(len + 1);
    if (!out->v || !buf) {
        free(buf);
        words_free(out);
        return bc_error_set(err, BC_ERR_NOMEM, "worker: no memory for %s", setting);
    }
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) break;
        size_t k = 0;
        while (*p && *p != ' ' && *p != '\t') {
            if (*p == '\'' || *p == '"') {
                char q = *p++;
                while (*p && *p != q) buf[k++] = *p++;
                if (!*p) {
                    free(buf);
                    words_free(out);
                    return bc_error_set(err, BC_ERR_SETTING, "worker: %s: a %c quote is not closed", setting, q);
                }
                p++;
            } else {
                buf[k++] = *p++;
            }
        }
        buf[k] = '\0';
        if (!(out->v[out->n] = strdup(buf))) {
            free(buf);
            words_free(out);
            return bc_error_set(err, BC_ERR_NOMEM, "worker: no memory for %s", setting);
        }
        out->n++;
    }
    free(buf);
    return BC_OK;
}

void wk_launch_free(wk_launch *l) { words_free(&l->argv), words_free(&l->env); }

bc_status wk_launch_init(wk_launch *l, const char *command, const char *env, double timeout_s,
                         const char *const *reserved, bc_error *err) {
    memset(l, 0, sizeof *l);
    bc_status st = split_words(command, "command", &l->argv, err);
    if (st == BC_OK) st = split_words(env, "env", &l->env, err);
    for (size_t i = 0; st == BC_OK && i < l->env.n; i++) {
        const char *eq = strchr(l->env.v[i], '=');
        if (!eq || eq == l->env.v[i])
            st = bc_error_set(err, BC_ERR_SETTING, "worker: env: \"%s\" is not KEY=VALUE", l->env.v[i]);
    }
    if (st == BC_OK && l->argv.n == 0)
        st = bc_error_set(err, BC_ERR_SETTING, "worker: command is empty");
    if (st != BC_OK) {
        if (err->code == BC_ERR_SETTING && l->argv.n == 0)
            bc_error_hint(err, "set command to the worker's command line, e.g. \"python3 -m benchctl_worker transformers\"");
        wk_launch_free(l);
        return st;
    }
    l->cmd = (wk_command){.argv = l->argv.v, .env = l->env.v, .n_env = l->env.n, .timeout_s = timeout_s,
                          .reserved = reserved};
    return BC_OK;
}
