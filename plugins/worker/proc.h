/* proc.h: one worker child process, seen from benchctl: started with its
 * stdin, stdout and stderr on descriptors of ours, written and read a line at
 * a time with a deadline, its stderr drained all the time into a tail of its
 * last lines, stopped with every process it started, and reaped.
 *
 * The worker runs under a supervisor, a small child of benchctl's (no exec)
 * that is the child subreaper (PR_SET_CHILD_SUBREAPER) of the worker's tree:
 * a descendant that leaves the worker's session or group (setsid) is still
 * the supervisor's. When the worker exits, or benchctl closes its end of
 * the supervisor's socket (or dies), the supervisor kills and reaps every
 * descendant (/proc/thread-self/children, until none is left), sends the
 * worker's wait status on that socket and exits; so the worker's own exit is
 * noticed while benchctl waits for a line, even when a descendant holds its
 * stdout.
 *
 * Nothing the child does can stop benchctl: every wait is a poll with a
 * deadline; its stdin is a socket written with MSG_NOSIGNAL (a dead reader is
 * EPIPE, never SIGPIPE); every descriptor of ours is close-on-exec, the
 * supervisor keeps none but its own and the worker closes every other one
 * before exec; the worker dies with its supervisor (PR_SET_PDEATHSIG);
 * wk_proc_stop always reaps. Errors are BC_ERR_DEVICE with one line saying
 * what the worker did (exited with status 1, was killed by signal 9, sent
 * nothing for 2 s, ...).
 */
#ifndef WK_PROC_H
#define WK_PROC_H

#include <stddef.h>
#include <sys/types.h>

#include "benchctl/plugin.h"

#define WK_MAX_LINE_BYTES ((size_t)64 << 20) /* one protocol line, newline excluded */
#define WK_STDERR_TAIL_BYTES 4096
#define WK_SUPERVISOR_GRACE_S 5.0 /* for the supervisor to kill the tree and exit, then SIGKILL */

typedef struct wk_proc {
    pid_t pid;               /* the supervisor's; 0: not running */
    int sup_fd;              /* the supervisor's socket: the worker's status comes here; closing it stops the tree */
    char sup_buf[sizeof(int)]; /* the status's bytes received so far */
    size_t sup_len;
    int in_fd;               /* writes the child's stdin (a socket), -1 when closed */
    int out_fd, err_fd;      /* read the child's stdout, stderr; -1 when closed */
    char *out_buf;           /* stdout bytes read and not yet returned as lines, owned */
    size_t out_len, out_cap, out_skip; /* out_skip: bytes of the last returned line, dropped on the next read */
    char err_tail[WK_STDERR_TAIL_BYTES]; /* the last stderr bytes, a ring */
    size_t err_total;        /* stderr bytes received in all */
    char err_line[256];      /* the stderr line being received, for the log */
    size_t err_line_len;
    const bc_host *host;     /* logs stderr lines at BC_LOG_DEBUG; may be NULL */
    int exit_status;         /* the worker's waitpid status once it exited, -1 before */
} wk_proc;

/* Starts argv[0] (looked up along PATH) with argv, the environment of
 * benchctl plus env_add ("KEY=VALUE" strings, n_env of them, later ones
 * winning). p must be zeroed or stopped. */
bc_status wk_proc_start(wk_proc *p, const bc_host *host, char *const *argv, char *const *env_add, size_t n_env,
                        bc_error *err);

/* Writes line (len bytes, no newline) and a newline to the child's stdin
 * within timeout_s seconds, draining its stderr meanwhile. */
bc_status wk_proc_write_line(wk_proc *p, const char *line, size_t len, double timeout_s, bc_error *err);

/* Reads the next line of the child's stdout within timeout_s seconds. *line
 * (NUL-terminated, newline removed, *len bytes) is p's and valid until the
 * next call. A line longer than WK_MAX_LINE_BYTES, or stdout closed, fails. */
bc_status wk_proc_read_line(wk_proc *p, double timeout_s, char **line, size_t *len, bc_error *err);

/* The child's last stderr lines (at most max_lines), joined with " | ", in
 * buf; "" when it wrote nothing. */
void wk_proc_stderr_tail(const wk_proc *p, int max_lines, char *buf, size_t n);

/* Closes the child's stdin, waits up to grace_s seconds for it to exit, then
 * has the supervisor kill and reap the worker's whole tree, and reaps the
 * supervisor; frees the buffers. Safe on a zeroed or stopped p. */
void wk_proc_stop(wk_proc *p, double grace_s);

/* 1 while the child has been started and not stopped. */
static inline int wk_proc_running(const wk_proc *p) { return p->pid > 0; }

#endif
