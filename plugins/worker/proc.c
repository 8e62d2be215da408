/* proc.c: a worker child process with deadlines on every wait (proc.h). */
#define _GNU_SOURCE
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Milliseconds left before deadline (a now_s() value), for poll; >= 0. */
static int ms_left(double deadline) {
    double left = (deadline - now_s()) * 1e3;
    return left <= 0 ? 0 : left > 1e9 ? 1000000000 : (int)left + 1;
}

static void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

static void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

/* --------------------------------------------------------------- stderr */

static void stderr_append(wk_proc *p, const char *buf, size_t n) {
    for (size_t i = 0; i < n; i++) {
        p->err_tail[p->err_total++ % WK_STDERR_TAIL_BYTES] = buf[i];
        if (buf[i] == '\n' || p->err_line_len + 1 >= sizeof p->err_line) {
            p->err_line[p->err_line_len] = '\0';
            if (p->host && p->host->log) p->host->log(p->host, BC_LOG_DEBUG, "worker stderr: %s", p->err_line);
            p->err_line_len = 0;
            if (buf[i] == '\n') continue;
        }
        p->err_line[p->err_line_len++] = buf[i];
    }
}

/* Reads what the child's stderr holds now; closes it at its end. */
static void drain_stderr(wk_proc *p) {
    char buf[4096];
    while (p->err_fd >= 0) {
        ssize_t n = read(p->err_fd, buf, sizeof buf);
        if (n > 0) stderr_append(p, buf, (size_t)n);
        else if (n < 0 && errno == EINTR) continue;
        else {
            if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) close_fd(&p->err_fd);
            break;
        }
    }
}

void wk_proc_stderr_tail(const wk_proc *p, int max_lines, char *buf, size_t n) {
    if (n == 0) return;
    buf[0] = '\0';
    size_t have = p->err_total < WK_STDERR_TAIL_BYTES ? p->err_total : WK_STDERR_TAIL_BYTES;
    char tail[WK_STDERR_TAIL_BYTES + 1];
    for (size_t i = 0; i < have; i++) tail[i] = p->err_tail[(p->err_total - have + i) % WK_STDERR_TAIL_BYTES];
    while (have > 0 && (tail[have - 1] == '\n' || tail[have - 1] == '\r')) have--;
    tail[have] = '\0';
    /* the start of the last max_lines lines */
    size_t start = have;
    int lines = 0;
    while (start > 0 && lines < max_lines) {
        start--;
        if (tail[start] == '\n' && ++lines == max_lines) {
            start++;
            break;
        }
    }
    size_t k = 0;
    for (size_t i = start; i < have && k + 4 < n; i++) {
        if (tail[i] == '\n') {
            if (k + 4 >= n) break;
            memcpy(buf + k, " | ", 3), k += 3;
        } else if (tail[i] != '\r') {
            buf[k++] = (unsigned char)tail[i] < 0x20 ? ' ' : tail[i];
        }
    }
    buf[k] = '\0';
}

/* ---------------------------------------------------------------- start */

/* 1 when env entry e ("KEY=...") sets the same key as one of add. */
static int overridden(const char *e, char *const *add, size_t n_add) {
    const char *eq = strchr(e, '=');
    size_t klen = eq ? (size_t)(eq - e) : strlen(e);
    for (size_t i = 0; i < n_add; i++)
        if (strncmp(add[i], e, klen) == 0 && add[i][klen] == '=') return 1;
    return 0;
}

bc_status wk_proc_start(wk_proc *p, const bc_host *host, char *const *argv, char *const *env_add, size_t n_env,
                        bc_error *err) {
    memset(p, 0, sizeof *p);
    p->in_fd = p->out_fd = p->err_fd = -1;
    p->exit_status = -1;
    p->host = host;
    size_t n_environ = 0;
    while (environ && environ[n_environ]) n_environ++;
    char **envp = calloc(n_environ + n_env + 1, sizeof *envp); /* borrows every string */
    if (!envp) return bc_error_set(err, BC_ERR_NOMEM, "no memory for the worker's environment");
    size_t k = 0;
    for (size_t i = 0; i < n_environ; i++)
        if (!overridden(environ[i], env_add, n_env)) envp[k++] = environ[i];
    for (size_t i = 0; i < n_env; i++) envp[k++] = env_add[i];

    int sv[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 || pipe2(out, O_CLOEXEC) != 0 ||
        pipe2(errp, O_CLOEXEC) != 0) {
        int e = errno;
        close_fd(&sv[0]), close_fd(&sv[1]), close_fd(&out[0]), close_fd(&out[1]), close_fd(&errp[0]);
        close_fd(&errp[1]);
        free(envp);
        return bc_error_set(err, BC_ERR_IO, "cannot make the worker's pipes: %s", strerror(e));
    }
    /* a relative command ("tools/peers-worker") is found from the working
     * folder: the exec error says which, composed here (not in the child) */
    char where[4096 + 96] = "", cwd[4096];
    if (strchr(argv[0], '/') && argv[0][0] != '/' && getcwd(cwd, sizeof cwd))
        snprintf(where, sizeof where, " (a relative command, looked up from the working folder %s)", cwd);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        /* the child: only async-signal-safe calls until exec */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);
        if (dup2(sv[1], 0) < 0 || dup2(out[1], 1) < 0 || dup2(errp[1], 2) < 0) _exit(127);
        long max_fd = sysconf(_SC_OPEN_MAX);
        if (max_fd < 0 || max_fd > 65536) max_fd = 65536;
        for (int fd = 3; fd < max_fd; fd++) close(fd);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        execvpe(argv[0], argv, envp);
        static const char msg[] = "benchctl: cannot run the worker command: ";
        const char *why = strerror(errno);
        if (write(2, msg, sizeof msg - 1) < 0 || write(2, argv[0], strlen(argv[0])) < 0 || write(2, ": ", 2) < 0 ||
            write(2, why, strlen(why)) < 0 || write(2, where, strlen(where)) < 0 || write(2, "\n", 1) < 0)
            _exit(127);
        _exit(127);
    }
    int fork_errno = errno;
    free(envp);
    close_fd(&sv[1]), close_fd(&out[1]), close_fd(&errp[1]);
    if (pid < 0) {
        close_fd(&sv[0]), close_fd(&out[0]), close_fd(&errp[0]);
        return bc_error_set(err, BC_ERR_IO, "cannot start the worker: fork: %s", strerror(fork_errno));
    }
    setpgid(pid, pid); /* also here, so the group exists before our first kill */
    p->pid = pid;
    p->in_fd = sv[0], p->out_fd = out[0], p->err_fd = errp[0];
    set_nonblocking(p->in_fd), set_nonblocking(p->out_fd), set_nonblocking(p->err_fd);
    return BC_OK;
}

/* ------------------------------------------------------------ exit, stop */

/* Waits up to grace_s for the child to exit, without reaping it. 1 when it
 * has; its status goes to p->exit_status in waitpid's encoding. */
static int wait_exit(wk_proc *p, double grace_s) {
    double deadline = now_s() + grace_s;
    for (;;) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == p->pid) {
            p->exit_status = si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8 : (si.si_status & 0x7f);
            return 1;
        }
        if (now_s() >= deadline) return 0;
        drain_stderr(p);
        struct pollfd pf = {.fd = p->err_fd, .events = POLLIN};
        poll(&pf, p->err_fd >= 0 ? 1 : 0, 10);
    }
}

/* What the child's exit status says, as a phrase. */
static void exit_phrase(int status, char *buf, size_t n) {
    if (WIFEXITED(status)) snprintf(buf, n, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, n, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else snprintf(buf, n, "stopped");
}

void wk_proc_stop(wk_proc *p, double grace_s) {
    if (p->pid > 0) {
        close_fd(&p->in_fd);
        wait_exit(p, grace_s);
        kill(-p->pid, SIGKILL); /* the group, stragglers included; the leader is not reaped yet */
        kill(p->pid, SIGKILL);
        int status;
        while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR) {
        }
        p->pid = 0;
    }
    close_fd(&p->in_fd), close_fd(&p->out_fd), close_fd(&p->err_fd);
    free(p->out_buf);
    p->out_buf = NULL;
    p->out_len = p->out_cap = p->out_skip = 0;
}

/* The error for a child whose stdout closed: how it ended, when it did
 * within a second. */
static bc_status closed_error(wk_proc *p, bc_error *err) {
    if (wait_exit(p, 1.0)) {
        drain_stderr(p);
        char how[96];
        exit_phrase(p->exit_status, how, sizeof how);
        return bc_error_set(err, BC_ERR_DEVICE, "the worker %s", how);
    }
    return bc_error_set(err, BC_ERR_DEVICE, "the worker closed its stdout");
}

/* ---------------------------------------------------------- write, read */

static bc_status send_all(wk_proc *p, const char *data, size_t len, double deadline, double timeout_s,
                          bc_error *err) {
    size_t off = 0;
    while (off < len) {
        if (p->in_fd < 0) return closed_error(p, err);
        ssize_t n = send(p->in_fd, data + off, len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            close_fd(&p->in_fd);
            return closed_error(p, err); /* EPIPE, ECONNRESET: the child is gone or closed its stdin */
        }
        struct pollfd pf[2] = {{.fd = p->in_fd, .events = POLLOUT}, {.fd = p->err_fd, .events = POLLIN}};
        int r = poll(pf, 2, ms_left(deadline));
        if (r == 0)
            return bc_error_set(err, BC_ERR_DEVICE, "the worker read nothing of a request for %.3g s (timeout_s)",
                                timeout_s);
        if (pf[1].revents) drain_stderr(p);
    }
    return BC_OK;
}

bc_status wk_proc_write_line(wk_proc *p, const char *line, size_t len, double timeout_s, bc_error *err) {
    if (p->pid <= 0) return bc_error_set(err, BC_ERR_INTERNAL, "the worker is not running");
    double deadline = now_s() + timeout_s;
    bc_status st = send_all(p, line, len, deadline, timeout_s, err);
    return st != BC_OK ? st : send_all(p, "\n", 1, deadline, timeout_s, err);
}

/* Reads what stdout holds now into out_buf; 0 at its end (closes it). */
static bc_status read_stdout(wk_proc *p, bc_error *err) {
    for (;;) {
        if (p->out_cap - p->out_len < 65536) {
            size_t cap = p->out_cap ? p->out_cap * 2 : 262144;
            char *nb = realloc(p->out_buf, cap + 1);
            if (!nb) return bc_error_set(err, BC_ERR_NOMEM, "no memory for a worker's line of %zu bytes", p->out_len);
            p->out_buf = nb, p->out_cap = cap;
        }
        ssize_t n = read(p->out_fd, p->out_buf + p->out_len, p->out_cap - p->out_len);
        if (n > 0) {
            p->out_len += (size_t)n;
            if (p->out_len > WK_MAX_LINE_BYTES + 1) return BC_OK; /* the caller refuses the long line */
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) close_fd(&p->out_fd);
        return BC_OK;
    }
}

bc_status wk_proc_read_line(wk_proc *p, double timeout_s, char **line, size_t *len, bc_error *err) {
    if (p->pid <= 0) return bc_error_set(err, BC_ERR_INTERNAL, "the worker is not running");
    if (p->out_skip) {
        memmove(p->out_buf, p->out_buf + p->out_skip, p->out_len - p->out_skip);
        p->out_len -= p->out_skip;
        p->out_skip = 0;
    }
    double deadline = now_s() + timeout_s;
    size_t scanned = 0;
    for (;;) {
        char *nl = p->out_len > scanned ? memchr(p->out_buf + scanned, '\n', p->out_len - scanned) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - p->out_buf);
            p->out_skip = n + 1;
            if (n > WK_MAX_LINE_BYTES)
                return bc_error_set(err, BC_ERR_DEVICE, "the worker wrote a line longer than 64 MiB on stdout");
            if (n > 0 && p->out_buf[n - 1] == '\r') n--;
            p->out_buf[n] = '\0';
            *line = p->out_buf, *len = n;
            drain_stderr(p);
            return BC_OK;
        }
        scanned = p->out_len;
        if (p->out_len > WK_MAX_LINE_BYTES)
            return bc_error_set(err, BC_ERR_DEVICE, "the worker wrote a line longer than 64 MiB on stdout");
        if (p->out_fd < 0) return closed_error(p, err);
        struct pollfd pf[2] = {{.fd = p->out_fd, .events = POLLIN}, {.fd = p->err_fd, .events = POLLIN}};
        int r = poll(pf, 2, ms_left(deadline));
        if (r < 0 && errno == EINTR) continue;
        if (r == 0)
            return bc_error_set(err, BC_ERR_DEVICE, "the worker sent nothing for %.3g s (timeout_s)", timeout_s);
        if (pf[1].revents) drain_stderr(p);
        if (pf[0].revents) {
            bc_status st = read_stdout(p, err);
            if (st != BC_OK) return st;
        }
    }
}
