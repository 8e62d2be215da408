/* client.h: the host side of the worker protocol (docs/plugins.md, "Worker
 * protocol"): starts a worker, reads and checks its hello, sends requests
 * and reads their replies, one at a time, each within timeout_s.
 *
 * Error codes: a worker that misbehaves (exits, hangs, writes garbage, speaks
 * another protocol version) fails with BC_ERR_DEVICE and the client stops it
 * (wk_client_running() is 0 after); an error reply keeps it running and fails
 * with its code (setting -> BC_ERR_SETTING, unsupported -> BC_ERR_UNSUPPORTED,
 * infeasible -> BC_ERR_INFEASIBLE, out_of_memory -> BC_ERR_NOMEM, anything
 * else -> BC_ERR_INTERNAL). Every message starts with "worker ENGINE: OP:"
 * and a failed worker's message ends with its last stderr lines.
 */
#ifndef WK_CLIENT_H
#define WK_CLIENT_H

#include <jansson.h>
#include <stdint.h>

#include "benchctl/plugin.h"
#include "proc.h"

#define WK_PROTOCOL_VERSION 1

/* The most metrics and settings a hello may declare. */
enum { WK_MAX_METRICS = 64, WK_MAX_SETTINGS = 4096 };

/* One metric a worker's hello declares (its profile's extra keys): the
 * row the host gets (per iteration) and the inclusive range every value
 * must be in. The row's strings are owned (wk_metric_rows_free). */
typedef struct wk_metric {
    bc_metric_desc desc;
    double min, max;
} wk_metric;

/* What a worker said in its hello. The settings and metrics rows and every
 * string they point to are owned by the hello (wk_hello_free). */
typedef struct wk_hello {
    char *engine, *engine_version, *device;
    bc_setting_desc *settings; /* n_settings rows */
    uint32_t n_settings;
    wk_metric *metrics;        /* n_metrics rows, at most WK_MAX_METRICS; none when the hello has no "metrics" */
    uint32_t n_metrics;
} wk_hello;

void wk_hello_free(wk_hello *h);

/* Frees n metric rows made from a hello and their strings. */
void wk_metric_rows_free(wk_metric *rows, uint32_t n);

/* Frees n rows made from a hello and every string they point to. */
void wk_setting_rows_free(bc_setting_desc *rows, uint32_t n);

/* How to start a worker: the command split into words, the environment
 * additions, the timeout of the hello and of every request. All borrowed. */
typedef struct wk_command {
    char *const *argv; /* NULL-terminated */
    char *const *env;  /* n_env "KEY=VALUE" strings */
    size_t n_env;
    double timeout_s;
    const char *const *reserved; /* NULL-terminated names a worker setting may not take */
} wk_command;

typedef struct wk_client {
    wk_proc proc;
    wk_command cmd;
    const bc_host *host;
    uint64_t next_id;
    char engine[64]; /* from the hello, for messages; "" before it */
} wk_client;

/* Starts the worker and reads its hello into *hello (owned by the caller,
 * zeroed first). On failure the worker is stopped. */
bc_status wk_client_start(wk_client *c, const bc_host *host, const wk_command *cmd, wk_hello *hello, bc_error *err);

/* Sends {"op":op,"id":N, ...fields of args} (args may be NULL; borrowed)
 * and waits for its reply. On success *reply (when not NULL) is the reply
 * object, owned by the caller (json_decref). *round_trip_ms (when not NULL)
 * is the time from writing the request to reading the whole reply. */
bc_status wk_client_call(wk_client *c, const char *op, json_t *args, json_t **reply, double *round_trip_ms,
                         bc_error *err);

/* Asks the worker to shut down (a short wait for its reply and its exit),
 * then stops it whatever it did. Safe when not running. */
void wk_client_shutdown(wk_client *c);

/* Stops the worker at once (after a failure). Safe when not running. */
void wk_client_kill(wk_client *c);

static inline int wk_client_running(const wk_client *c) { return wk_proc_running(&c->proc); }

#endif
