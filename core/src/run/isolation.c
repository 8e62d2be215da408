/* isolation.c: per-case process isolation (run.isolation = "process",
 * runner.h): a case in a forked child, its events and result sent back over
 * a pipe, its stderr's tail kept, a child that dies a failed case. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host.h"
#include "hostload.h"
#include "runner_internal.h"

volatile sig_atomic_t bc_run_in_case_child;

/* ------------------------------------------------ per-case process isolation
 *
 * With cfg->isolation, each case runs in a forked child (after prepare, so
 * the backend's state is inherited copy-on-write). The child runs the case
 * exactly as run_case does and sends frames to the parent over a pipe:
 *   frame  = uint32 type, uint32 payload length, payload
 *   EVENT  = frame_event: one finished iteration (warmup or measured)
 *   RESULT = the case report (raw struct, same binary), the memory stats
 *            (raw struct), n_iterations x n_fields doubles, the message
 * The parent forwards EVENTs to the reporters and keeps their values, so a
 * child that dies keeps the iterations it finished. The child's stderr goes
 * through a second pipe: passed on to ours, its tail kept for the message. */
enum { FRAME_EVENT = 1, FRAME_RESULT = 2, STDERR_TAIL = 1024, STDERR_LINES = 5 };

typedef struct frame_event {
    int32_t warmup;
    uint32_t iteration;
    double elapsed_ms, rel_ci; /* followed on the wire by the row's n_fields values */
} frame_event;

/* Writes all n bytes; 0 on success. */
static int write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int send_frame(int fd, uint32_t type, const void *a, size_t na, const void *b, size_t nb, const void *c,
                      size_t nc, const void *d, size_t nd) {
    uint32_t head[2] = {type, (uint32_t)(na + nb + nc + nd)};
    return write_all(fd, head, sizeof head) || write_all(fd, a, na) || write_all(fd, b, nb) || write_all(fd, c, nc) ||
           write_all(fd, d, nd);
}

void bc_runner_child_send_event(int fd, int warmup, uint32_t iteration, const double *row, uint32_t n_fields,
                                double elapsed_ms, double rel_ci) {
    frame_event ev = {.warmup = warmup, .iteration = iteration, .elapsed_ms = elapsed_ms, .rel_ci = rel_ci};
    if (send_frame(fd, FRAME_EVENT, &ev, sizeof ev, row, n_fields * sizeof *row, NULL, 0, NULL, 0)) bc_exit_group(1);
}

/* The child's stderr: passed through to ours, the last STDERR_TAIL bytes kept. */
typedef struct stderr_tail {
    char buf[STDERR_TAIL];
    size_t n;
} stderr_tail;

static void tail_add(stderr_tail *t, const char *data, size_t n) {
    if (write_all(STDERR_FILENO, data, n)) { /* ours is gone: keep the tail anyway */
    }
    if (n >= sizeof t->buf) {
        memcpy(t->buf, data + n - sizeof t->buf, sizeof t->buf);
        t->n = sizeof t->buf;
        return;
    }
    if (t->n + n > sizeof t->buf) {
        size_t drop = t->n + n - sizeof t->buf;
        memmove(t->buf, t->buf + drop, t->n - drop);
        t->n -= drop;
    }
    memcpy(t->buf + t->n, data, n);
    t->n += n;
}

/* The last STDERR_LINES non-empty lines of the tail, joined by " | ", into out. */
static void tail_lines(const stderr_tail *t, char *out, size_t cap) {
    out[0] = '\0';
    size_t end = t->n, starts[STDERR_LINES], ends[STDERR_LINES], found = 0;
    while (end > 0 && found < STDERR_LINES) {
        while (end > 0 && (t->buf[end - 1] == '\n' || t->buf[end - 1] == '\r')) end--;
        if (end == 0) break;
        size_t start = end;
        while (start > 0 && t->buf[start - 1] != '\n') start--;
        starts[found] = start, ends[found] = end, found++;
        end = start;
    }
    size_t used = 0;
    for (size_t i = found; i-- > 0 && used + 1 < cap;) {
        int w = snprintf(out + used, cap - used, "%s%.*s", used ? " | " : "", (int)(ends[i] - starts[i]),
                         t->buf + starts[i]);
        if (w < 0) break;
        used += (size_t)w;
        if (used >= cap) used = cap - 1;
    }
    for (char *c = out; *c; c++)
        if ((unsigned char)*c < 0x20) *c = ' '; /* one line */
}

/* Parent: handles one complete frame from the child. Returns 1 for RESULT. */
static int parent_frame(run_state *rs, size_t k, uint32_t type, const unsigned char *p, size_t n,
                        uint32_t *n_measured) {
    bc_run_result *res = rs->res;
    bc_case_report *cr = &res->cases[k];
    const size_t nf = res->n_fields;
    double *values = res->values + k * (size_t)res->rows_per_case * nf;
    if (type == FRAME_EVENT && n == sizeof(frame_event) + nf * sizeof(double)) {
        frame_event ev;
        memcpy(&ev, p, sizeof ev);
        memcpy(rs->row, p + sizeof ev, nf * sizeof(double));
        if (!ev.warmup && ev.iteration < res->rows_per_case) {
            memcpy(values + (size_t)ev.iteration * nf, rs->row, nf * sizeof(double));
            *n_measured = ev.iteration + 1;
        }
        bc_runner_iteration_event(rs, cr->c, ev.warmup, ev.iteration, rs->row, ev.elapsed_ms, ev.rel_ci);
        return 0;
    }
    if (type != FRAME_RESULT || n < sizeof(bc_case_report) + sizeof(bc_memory_stats)) return 0;
    bc_case_report got;
    memcpy(&got, p, sizeof got);
    p += sizeof got, n -= sizeof got;
    memcpy(&res->memory[k], p, sizeof res->memory[k]);
    p += sizeof res->memory[k], n -= sizeof res->memory[k];
    if (got.n_iterations > res->rows_per_case || n < (size_t)got.n_iterations * nf * sizeof(double)) return 0;
    size_t nv = (size_t)got.n_iterations * nf * sizeof(double);
    memcpy(values, p, nv);
    p += nv, n -= nv;
    /* the scalars are the child's; the pointers stay the parent's */
    got.c = cr->c;
    got.values = cr->values;
    got.stats = cr->stats;
    got.memory = &res->memory[k];
    got.message = cr->message;
    got.schedule = NULL; /* the child's, which stayed there */
    *cr = got;
    if (n) bc_runner_set_message(res, k, "%.*s", (int)(n > 4096 ? 4096 : n), (const char *)p);
    return 1;
}

/* A signal's name: "SIGSEGV", or "signal 42". */
static const char *signal_str(int sig, char *buf, size_t n) {
    const char *abbrev = sigabbrev_np(sig);
    if (abbrev) snprintf(buf, n, "SIG%s", abbrev);
    else snprintf(buf, n, "signal %d", sig);
    return buf;
}

/* Runs case k in a forked child (the protocol above); the parent keeps the
 * reporters, forwards interrupts, enforces cfg->case_timeout_s and turns a
 * child that dies into a failed case. */
void bc_runner_run_case_isolated(run_state *rs, size_t k) {
    const bc_runner_config *cfg = rs->cfg;
    bc_run_result *res = rs->res;
    bc_case_report *cr = &res->cases[k];
    int rp[2] = {-1, -1}, ep[2] = {-1, -1};
    bc_hostload load_start, load_end;
    bc_hostload_read(&load_start);
    uint64_t t_case = bc_now_ns();
    if (pipe(rp) != 0 || pipe(ep) != 0) {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            if (rp[i] >= 0) close(rp[i]);
            if (ep[i] >= 0) close(ep[i]);
        }
        cr->status = BC_CASE_FAILED, cr->error_code = BC_ERR_INTERNAL, cr->stop_reason = BC_STOP_FAILED;
        bc_runner_set_message(res, k, "isolation: cannot create a pipe: %s", strerror(e));
        return;
    }
    fflush(NULL); /* the child must not write our buffered output again */
    pid_t parent = getpid();
    /* Signals are held from reading the stop level until the child is in its
     * own process group: the child starts with exactly the level the parent
     * counts as already forwarded, and one that comes meanwhile is forwarded
     * once, not lost (it would be if it came between fork and reading the
     * level) and not also inherited. */
    sigset_t all, old_mask;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old_mask);
    int forwarded = stop_level(cfg);
    pid_t pid = fork();
    if (pid > 0) setpgid(pid, pid); /* also in the child: whichever runs first */
    if (pid != 0) sigprocmask(SIG_SETMASK, &old_mask, NULL);
    if (pid < 0) {
        int e = errno;
        close(rp[0]), close(rp[1]), close(ep[0]), close(ep[1]);
        cr->status = BC_CASE_FAILED, cr->error_code = BC_ERR_INTERNAL, cr->stop_reason = BC_STOP_FAILED;
        bc_runner_set_message(res, k, "isolation: cannot fork: %s", strerror(e));
        return;
    }
    if (pid == 0) { /* the child: run the case, send the result, leave without cleanup */
        close(rp[0]), close(ep[0]);
        bc_run_in_case_child = 1;
        setpgid(0, 0); /* terminal signals reach the parent only; it forwards them */
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) bc_exit_group(1);
        signal(SIGPIPE, SIG_DFL);
        if (dup2(ep[1], STDERR_FILENO) < 0) bc_exit_group(1);
        close(ep[1]);
        rs->child_fd = rp[1];
        bc_runner_run_case(rs, k);
        double *values = res->values + k * (size_t)res->rows_per_case * res->n_fields;
        const char *msg = cr->message ? cr->message : "";
        int bad = send_frame(rp[1], FRAME_RESULT, cr, sizeof *cr, &res->memory[k], sizeof res->memory[k], values,
                             (size_t)cr->n_iterations * res->n_fields * sizeof(double), msg, strlen(msg));
        fflush(NULL);
        bc_exit_group(bad ? 1 : 0);
    }
    close(rp[1]), close(ep[1]);
    fcntl(rp[0], F_SETFL, fcntl(rp[0], F_GETFL) | O_NONBLOCK);
    fcntl(ep[0], F_SETFL, fcntl(ep[0], F_GETFL) | O_NONBLOCK);

    stderr_tail tail = {.n = 0};
    unsigned char *buf = NULL; /* received bytes not yet parsed, owned here */
    size_t used = 0, cap = 0;
    uint32_t n_measured = 0;
    int got_result = 0, timed_out = 0, exited = 0, status = 0;
    int open_r = 1, open_e = 1;
    while (!exited || open_r || open_e) {
        int level = stop_level(cfg);
        /* one per signal we got, alternating SIGTERM and SIGINT: two of the
         * same sent back to back merge into one if the child has not run its
         * handler in between, and a second interrupt would be lost */
        for (; forwarded < level; forwarded++) kill(pid, forwarded % 2 ? SIGINT : SIGTERM);
        int wait_ms = 100;
        if (cfg->case_timeout_s > 0 && !timed_out) {
            double left = cfg->case_timeout_s * 1000.0 - ms_since(t_case);
            if (left <= 0) {
                kill(pid, SIGKILL);
                timed_out = 1;
            } else if (left < wait_ms) {
                wait_ms = (int)left + 1;
            }
        }
        if (!open_r && !open_e && !exited) { /* both pipes closed: the child is ending */
            if (cfg->case_timeout_s <= 0 || timed_out) {
                if (waitpid(pid, &status, 0) == pid) exited = 1;
                continue;
            }
            wait_ms = 1;
        }
        struct pollfd fds[2] = {{.fd = open_r ? rp[0] : -1, .events = POLLIN},
                                {.fd = open_e ? ep[0] : -1, .events = POLLIN}};
        int ready = poll(fds, 2, exited ? 0 : wait_ms);
        if (ready < 0 && errno != EINTR) break;
        int got_any = 0;
        for (int i = 0; i < 2 && ready > 0; i++) {
            if (!fds[i].revents) continue;
            char chunk[16384];
            ssize_t r = read(fds[i].fd, chunk, sizeof chunk);
            if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (r <= 0) {
                if (i == 0) open_r = 0;
                else open_e = 0;
                continue;
            }
            got_any = 1;
            if (i == 1) {
                tail_add(&tail, chunk, (size_t)r);
                continue;
            }
            if (used + (size_t)r > cap) {
                size_t ncap = cap ? cap * 2 : 65536;
                while (ncap < used + (size_t)r) ncap *= 2;
                unsigned char *grown = realloc(buf, ncap);
                if (!grown) {
                    kill(pid, SIGKILL);
                    open_r = 0;
                    continue;
                }
                buf = grown, cap = ncap;
            }
            memcpy(buf + used, chunk, (size_t)r);
            used += (size_t)r;
            size_t at = 0;
            while (used - at >= 8) {
                uint32_t head[2];
                memcpy(head, buf + at, sizeof head);
                if (used - at - 8 < head[1]) break;
                got_result |= parent_frame(rs, k, head[0], buf + at + 8, head[1], &n_measured);
                at += 8 + (size_t)head[1];
            }
            memmove(buf, buf + at, used - at);
            used -= at;
        }
        if (!exited && waitpid(pid, &status, WNOHANG) == pid) exited = 1;
        /* a child gone whose pipes a grandchild still holds: stop once drained */
        if (exited && !got_any) break;
    }
    if (!exited) waitpid(pid, &status, 0);
    close(rp[0]), close(ep[0]);
    free(buf);

    int clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (got_result && clean && !timed_out) {
        bc_run_case_stats(res, k); /* from the values the child sent */
        return;
    }
    /* the child died: the case failed, with what it measured before */
    char why[160], sig[32], lines[STDERR_TAIL + 64];
    if (timed_out)
        snprintf(why, sizeof why, "timed out after run.case_timeout_s = %g s; its process was killed", cfg->case_timeout_s);
    else if (WIFSIGNALED(status))
        snprintf(why, sizeof why, "its process was killed by %s (%s)%s", signal_str(WTERMSIG(status), sig, sizeof sig),
                 strsignal(WTERMSIG(status)),
                 WTERMSIG(status) == SIGKILL ? "; the kernel's out-of-memory killer sends SIGKILL" : "");
    else if (WIFEXITED(status) && !got_result)
        snprintf(why, sizeof why, "its process exited with status %d before sending its results", WEXITSTATUS(status));
    else
        snprintf(why, sizeof why, "its process exited with status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    tail_lines(&tail, lines, sizeof lines);
    cr->status = BC_CASE_FAILED;
    cr->error_code = BC_ERR_INTERNAL;
    cr->stop_reason = BC_STOP_FAILED;
    if (!got_result) cr->n_iterations = n_measured;
    cr->wall_ms = ms_since(t_case);
    bc_hostload_read(&load_end);
    cr->load_avg_start = load_start.load_avg_1m;
    cr->load_avg_end = load_end.load_avg_1m;
    cr->cpu_steal_share = bc_hostload_steal_share(&load_start, &load_end);
    bc_runner_set_message(res, k, "case process: %s%s%s", why, lines[0] ? "; its stderr ended: " : "", lines);
    bc_run_case_stats(res, k);
}

