#include "gateway/gw_master.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/sl_buf.h"
#include "base/sl_log.h"
#include "base/sl_time.h"
#include "gateway/gw_conns.h"
#include "gateway/gw_housekeep.h"
#include "gateway/gw_listen.h"
#include "gateway/gw_reload.h"
#include "gateway/gw_worker.h"
#include "state/state_cluster.h"

#define MAX_WORKERS 256
#define LISTEN_BACKLOG 1024
#define STARTUP_TIMEOUT_MS 15000
#define RESPAWN_MIN_MS 100
#define RESPAWN_MAX_MS 10000
#define STABLE_AFTER_MS 10000     /* a worker that lived this long resets the backoff */
#define REOPEN_AFTER_MS 1000      /* a worker crash-looping this slowly gives its sockets up meanwhile */
#define HOUSEKEEP_MS 1000
/* counter slots 1..SLOT_BANKS x workers: the running workers and up to two
 * generations that a reload is still draining; each process writes its own */
#define SLOT_BANKS 3
#define MAX_RETIRING ((SLOT_BANKS - 1) * MAX_WORKERS)

typedef struct worker_slot {
    pid_t pid;                    /* 0: not running */
    int ready_fd;                 /* read end of the worker's ready pipe, -1 once ready */
    unsigned stats_slot;          /* its counters' slot in the shared state (1-based) */
    uint64_t started_ms;
    uint64_t respawn_at_ms;       /* 0: no respawn scheduled */
    uint32_t backoff_ms;
    uint32_t restarts;
} worker_slot_t;

/* A worker of an earlier configuration, draining after a reload. */
typedef struct retiring {
    pid_t pid;
    unsigned stats_slot;
    uint64_t kill_at_ms;          /* SIGKILL if still running: its grace period + 2 s */
} retiring_t;

/* A reload whose new workers are coming up: the supervise loop watches
 * their ready pipes among its other duties, so the master goes on reaping,
 * respawning and housekeeping while they start. */
typedef struct reload_run {
    int active;
    gw_config_t *next;            /* the new configuration (owned until installed) */
    gw_config_diff_t diff;
    gw_reload_req_t req;
    uint64_t start_ms;
    uint64_t deadline_ms;         /* not all ready by then: the reload fails */
} reload_run_t;

typedef struct master {
    const gw_config_t *cfg;       /* the running configuration */
    gw_config_t *owned;           /* cfg once a reload loaded it (the master frees it) */
    gw_worker_args_t args;
    int reserve_fds[2];           /* bound, not listening: keeps the ports ours */
    /* listening sockets, one per worker index (main, admin): the master keeps
     * them, so a worker that restarts or is replaced by a reload takes over
     * the same socket and no queued connection is lost */
    int listen_fds[2][MAX_WORKERS];
    int sigfd;
    worker_slot_t slots[MAX_WORKERS];
    worker_slot_t fresh[MAX_WORKERS]; /* a reload's new workers, until all of them accept */
    reload_run_t run;             /* the reload under way, if any */
    retiring_t retiring[MAX_RETIRING];
    size_t nretiring;
    unsigned n;
    int stopping;
    state_t *state;
    gw_housekeep_t *hk;
} master_t;

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static int open_listeners(master_t *m, unsigned i)
{
    gw_listen_addr_t addr = m->args.main_addr;
    if (m->listen_fds[0][i] < 0 && (m->listen_fds[0][i] = gw_listen_bind(&addr, LISTEN_BACKLOG)) < 0)
        return -1;
    addr = m->args.admin_addr;
    if (m->args.has_admin && m->listen_fds[1][i] < 0 &&
        (m->listen_fds[1][i] = gw_listen_bind(&addr, LISTEN_BACKLOG)) < 0)
        return -1;
    return 0;
}

static void close_listeners(master_t *m)
{
    for (unsigned i = 0; i < MAX_WORKERS; i++) {
        close_fd(&m->listen_fds[0][i]);
        close_fd(&m->listen_fds[1][i]);
    }
    close_fd(&m->reserve_fds[0]);
    close_fd(&m->reserve_fds[1]);
}

/* In the child: every descriptor but its own sockets goes. */
static void close_inherited(master_t *m, unsigned i)
{
    close(m->sigfd);
    for (unsigned k = 0; k < MAX_WORKERS; k++) {
        if (m->slots[k].ready_fd >= 0)
            close(m->slots[k].ready_fd);
        if (m->fresh[k].ready_fd >= 0)
            close(m->fresh[k].ready_fd);
        for (int j = 0; j < 2; j++)
            if (k != i && m->listen_fds[j][k] >= 0)
                close(m->listen_fds[j][k]);
    }
    for (int k = 0; k < 2; k++)
        if (m->reserve_fds[k] >= 0)
            close(m->reserve_fds[k]);
}

/* Starts worker index i (0-based) with cfg into s. */
static pid_t spawn(master_t *m, worker_slot_t *s, unsigned i, const gw_config_t *cfg)
{
    pid_t master_pid = getpid();
    int pipefd[2];
    if (open_listeners(m, i) != 0)
        return -1;
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        sl_log_error("pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        sl_log_error("fork: %s", strerror(errno));
        close(pipefd[0]);
        close(pipefd[1]);
        return -1;
    }
    if (pid == 0) {
        /* a master killed with SIGKILL cannot stop its workers: the kernel
         * tells them instead, so none is left holding the port */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != master_pid)
            _exit(1);
        close(pipefd[0]);
        close_inherited(m, i);
        gw_worker_args_t args = m->args;
        args.cfg = cfg;
        args.index = i + 1;
        args.slot = s->stats_slot;
        args.main_fd = m->listen_fds[0][i];
        args.admin_fd = m->listen_fds[1][i];
        args.ready_fd = pipefd[1];
        _exit(gw_worker_main(&args));
    }
    close(pipefd[1]);
    s->pid = pid;
    s->ready_fd = pipefd[0];
    s->started_ms = sl_now_ms();
    s->respawn_at_ms = 0;
    return pid;
}

/* Waits until every worker of set[0..n) reported ready; 0 on success. */
static int wait_ready(worker_slot_t *set, unsigned n)
{
    uint64_t deadline = sl_now_ms() + STARTUP_TIMEOUT_MS;
    for (unsigned i = 0; i < n; i++) {
        worker_slot_t *s = &set[i];
        while (s->ready_fd >= 0) {
            uint64_t now = sl_now_ms();
            if (now >= deadline)
                return -1;
            struct pollfd p = {s->ready_fd, POLLIN, 0};
            int rc = poll(&p, 1, (int)(deadline - now));
            if (rc < 0 && errno == EINTR)
                continue;
            char c;
            if (rc <= 0 || read(s->ready_fd, &c, 1) != 1)
                return -1; /* EOF: the worker died during setup */
            close_fd(&s->ready_fd);
        }
    }
    return 0;
}

static void stop_all(master_t *m, int sig)
{
    for (unsigned i = 0; i < m->n; i++) {
        if (m->slots[i].pid > 0)
            kill(m->slots[i].pid, sig);
        if (m->fresh[i].pid > 0)
            kill(m->fresh[i].pid, sig);
    }
    for (size_t i = 0; i < m->nretiring; i++)
        kill(m->retiring[i].pid, sig);
}

static unsigned running(const master_t *m)
{
    unsigned n = (unsigned)m->nretiring;
    for (unsigned i = 0; i < m->n; i++)
        n += (m->slots[i].pid > 0) + (m->fresh[i].pid > 0);
    return n;
}

static void describe_exit(int status, char *out, size_t len)
{
    if (WIFSIGNALED(status))
        snprintf(out, len, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(out, len, "exited with status %d", WEXITSTATUS(status));
}

/* Moves a running worker to the draining list and tells it to drain. */
static void retire(master_t *m, worker_slot_t *s, uint32_t grace_ms)
{
    close_fd(&s->ready_fd);
    if (s->pid > 0 && m->nretiring < MAX_RETIRING) {
        m->retiring[m->nretiring++] = (retiring_t){s->pid, s->stats_slot, sl_now_ms() + grace_ms + 2000};
        kill(s->pid, SIGTERM);
    } else if (s->pid > 0) {
        kill(s->pid, SIGKILL); /* cannot happen: a reload needs a free bank of slots */
    }
    s->pid = 0;
}

static int reap_retiring(master_t *m, pid_t pid, int status)
{
    for (size_t k = 0; k < m->nretiring; k++) {
        if (m->retiring[k].pid != pid)
            continue;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            char how[96];
            describe_exit(status, how, sizeof(how));
            sl_log_warn("worker pid %d of the previous configuration %s", (int)pid, how);
        } else {
            sl_log_debug("worker pid %d of the previous configuration finished draining", (int)pid);
        }
        m->retiring[k] = m->retiring[--m->nretiring];
        return 1;
    }
    return 0;
}

static void reap_current(master_t *m, unsigned i, int status)
{
    worker_slot_t *s = &m->slots[i];
    pid_t pid = s->pid;
    s->pid = 0;
    close_fd(&s->ready_fd);
    if (m->stopping)
        return;
    char how[96];
    describe_exit(status, how, sizeof(how));
    uint64_t now = sl_now_ms();
    if (now - s->started_ms >= STABLE_AFTER_MS)
        s->backoff_ms = 0;
    s->backoff_ms = s->backoff_ms ? s->backoff_ms * 2 : RESPAWN_MIN_MS;
    if (s->backoff_ms > RESPAWN_MAX_MS)
        s->backoff_ms = RESPAWN_MAX_MS;
    s->respawn_at_ms = now + s->backoff_ms;
    s->restarts++;
    /* connections queued on its sockets wait for the respawn; a worker that
     * keeps crashing gives them up, so the kernel sends them to the others */
    if (s->backoff_ms >= REOPEN_AFTER_MS) {
        close_fd(&m->listen_fds[0][i]);
        close_fd(&m->listen_fds[1][i]);
    }
    sl_log_error("worker %u (pid %d) %s; respawning in %u ms (restart #%u)", i + 1, (int)pid, how, s->backoff_ms,
                 s->restarts);
    if (m->hk != NULL)
        gw_housekeep_worker_restarted(m->hk, i + 1, (int)pid, how);
}

static void reap(master_t *m)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (reap_retiring(m, pid, status))
            continue;
        for (unsigned i = 0; i < m->n; i++) {
            if (m->slots[i].pid == pid)
                reap_current(m, i, status);
            if (m->fresh[i].pid == pid) {
                /* a reload's worker died before it was ready: its pipe's
                 * end of file fails the reload (reload_poll) */
                char how[96];
                describe_exit(status, how, sizeof(how));
                sl_log_error("reload: new worker %u (pid %d) %s", i + 1, (int)pid, how);
                m->fresh[i].pid = 0;
            }
        }
    }
}

static void respawn_due(master_t *m)
{
    uint64_t now = sl_now_ms();
    for (unsigned i = 0; i < m->n; i++) {
        worker_slot_t *s = &m->slots[i];
        if (s->pid != 0 || s->respawn_at_ms == 0 || now < s->respawn_at_ms)
            continue;
        if (spawn(m, s, i, m->cfg) > 0)
            sl_log_info("worker %u respawned as pid %d", i + 1, (int)s->pid);
        else
            s->respawn_at_ms = now + RESPAWN_MAX_MS;
    }
}

/* Retiring workers past their grace period are killed. */
static void kill_overdue(master_t *m)
{
    uint64_t now = sl_now_ms();
    for (size_t k = 0; k < m->nretiring; k++) {
        retiring_t *r = &m->retiring[k];
        if (r->kill_at_ms == 0 || now < r->kill_at_ms)
            continue;
        sl_log_error("worker pid %d of the previous configuration still running after its grace period: killing it",
                     (int)r->pid);
        kill(r->pid, SIGKILL);
        r->kill_at_ms = 0;
    }
}

static int next_wakeup_ms(const master_t *m)
{
    uint64_t now = sl_now_ms(), next = UINT64_MAX;
    for (unsigned i = 0; i < m->n; i++)
        if (m->slots[i].pid == 0 && m->slots[i].respawn_at_ms != 0 && m->slots[i].respawn_at_ms < next)
            next = m->slots[i].respawn_at_ms;
    if (m->stopping)
        return 100;
    if (m->run.active && m->run.deadline_ms < next)
        next = m->run.deadline_ms;
    if (next == UINT64_MAX || next > now + HOUSEKEEP_MS)
        return HOUSEKEEP_MS; /* the shared state's chores */
    return next <= now ? 0 : (int)(next - now);
}

/* Gives the new generation counter slots no living process writes; -1 if
 * every bank is taken (two earlier reloads are still draining). */
static int assign_fresh_slots(master_t *m)
{
    unsigned nslots = SLOT_BANKS * m->n;
    unsigned char *used = sl_xcalloc(nslots + 1, 1);
    for (unsigned i = 0; i < m->n; i++)
        used[m->slots[i].stats_slot] = 1;
    for (size_t k = 0; k < m->nretiring; k++)
        used[m->retiring[k].stats_slot] = 1;
    unsigned next = 1;
    for (unsigned i = 0; i < m->n; i++) {
        while (next <= nslots && used[next])
            next++;
        if (next > nslots) {
            free(used);
            return -1;
        }
        m->fresh[i] = (worker_slot_t){.ready_fd = -1, .stats_slot = next++};
    }
    free(used);
    return 0;
}

/* Puts next in place of the running configuration. */
static void install(master_t *m, gw_config_t *next)
{
    gw_housekeep_t *hk = gw_housekeep_create(next, m->state, SLOT_BANKS * m->n);
    gw_housekeep_carry(hk, m->hk);
    gw_housekeep_destroy(m->hk);
    m->hk = hk;
    state_retention_set(m->state, next->state.event_max_count, next->state.event_max_age_hours * 3600);
    sl_log_setup((sl_log_level_t)next->log.level, next->log.json ? SL_LOG_JSON : SL_LOG_TEXT, "master");
    gw_config_destroy(m->owned);
    m->owned = next;
    m->cfg = next;
    m->args.cfg = next;
}

/* Ends the reload under way: the new configuration and diff are dropped. */
static void reload_clear(master_t *m)
{
    for (unsigned i = 0; i < m->n; i++)
        m->fresh[i] = (worker_slot_t){.ready_fd = -1};
    gw_config_diff_dispose(&m->run.diff);
    gw_config_destroy(m->run.next);
    m->run = (reload_run_t){0};
}

/* The new workers did not all come up: they go, the running ones stay. */
static void reload_abort(master_t *m, const char *why)
{
    for (unsigned i = 0; i < m->n; i++)
        retire(m, &m->fresh[i], m->run.next->server.shutdown_grace_ms);
    gw_reload_failed(m->state, &m->run.req, 1, why);
    reload_clear(m);
}

/* Every new worker accepts: the old ones drain, the new config is in. */
static void reload_finish(master_t *m)
{
    /* recorded before the old workers drain: an admin request waiting in one
     * of them finds its answer */
    gw_reload_done(m->state, &m->run.req, &m->run.diff, sl_now_ms() - m->run.start_ms);
    sl_log_info("reload: %u new worker(s) accept; the previous ones drain (grace %u ms)", m->n,
                m->cfg->server.shutdown_grace_ms);
    for (unsigned i = 0; i < m->n; i++) {
        retire(m, &m->slots[i], m->cfg->server.shutdown_grace_ms);
        m->slots[i] = m->fresh[i];
        m->fresh[i] = (worker_slot_t){.ready_fd = -1};
    }
    install(m, m->run.next);
    m->run.next = NULL;
    reload_clear(m);
}

/* The one reload path (SIGHUP, POST /admin/reload). The new workers start
 * and accept on the same sockets before the old ones are told to drain; if
 * anything fails first, the old workers never notice. This only starts
 * them: reload_poll, in the supervise loop, waits for them to be ready. */
static void reload(master_t *m, gw_reload_req_t req)
{
    if (m->stopping)
        return;
    if (m->run.active) {
        gw_reload_failed(m->state, &req, 1,
                         "a reload is under way (its new workers are starting); try again once it has finished");
        return;
    }
    uint64_t start = sl_now_ms();
    gw_config_diff_t diff;
    gw_config_t *next = gw_reload_load(m->cfg, m->state, &req, &diff);
    if (next == NULL)
        return;
    m->run = (reload_run_t){1, next, diff, req, start, start + STARTUP_TIMEOUT_MS};
    if (assign_fresh_slots(m) != 0) {
        gw_reload_failed(m->state, &req, 1,
                         "two earlier reloads are still draining their workers; try again once they have exited "
                         "(within server.shutdown_grace_ms)");
        reload_clear(m);
        return;
    }
    for (unsigned i = 0; i < m->n; i++) {
        if (spawn(m, &m->fresh[i], i, next) <= 0) {
            reload_abort(m, "a worker could not start with the new configuration (see the log); the running workers "
                            "keep serving");
            return;
        }
    }
}

/* Reads the ready pipes that poll found readable; finishes or fails the
 * reload under way when it can. */
static void reload_poll(master_t *m, const struct pollfd *p, unsigned np, uint64_t now)
{
    if (!m->run.active)
        return;
    int failed = 0;
    for (unsigned k = 0; k < np; k++) {
        if (p[k].revents == 0)
            continue;
        for (unsigned i = 0; i < m->n; i++) {
            worker_slot_t *s = &m->fresh[i];
            if (s->ready_fd != p[k].fd)
                continue;
            char c;
            ssize_t rd = read(s->ready_fd, &c, 1);
            if (rd == 1)
                close_fd(&s->ready_fd);
            else if (rd == 0 || (errno != EAGAIN && errno != EINTR))
                failed = 1; /* end of file: the worker died during setup */
        }
    }
    unsigned waiting = 0;
    for (unsigned i = 0; i < m->n; i++)
        waiting += m->fresh[i].ready_fd >= 0;
    if (failed || (waiting > 0 && now >= m->run.deadline_ms))
        reload_abort(m, "a worker could not start with the new configuration (see the log); the running workers "
                        "keep serving");
    else if (waiting == 0)
        reload_finish(m);
}

static void handle_signal(master_t *m, const struct signalfd_siginfo *si)
{
    int sig = (int)si->ssi_signo;
    if (sig == SIGCHLD) {
        reap(m);
    } else if (sig == SIGTERM || sig == SIGINT) {
        if (!m->stopping)
            sl_log_info("%s: stopping; workers drain their requests (grace %u ms)", strsignal(sig),
                        m->cfg->server.shutdown_grace_ms);
        m->stopping = 1;
        if (m->run.active)
            reload_abort(m, "sluice is stopping");
        close_listeners(m); /* new connections are refused once the workers let go too */
        stop_all(m, SIGTERM);
    } else if (sig == SIGHUP) {
        reload(m, (gw_reload_req_t){(uint32_t)getpid(), 0});
    } else if (sig == GW_RELOAD_SIGNAL && si->ssi_code == SI_QUEUE) {
        uint8_t tag = (uint8_t)si->ssi_int;
        reload(m, (gw_reload_req_t){si->ssi_pid, tag ? tag : 1});
    }
}

/* The supervision loop; returns when stopped and every worker is gone. */
static void supervise(master_t *m)
{
    uint64_t kill_at = 0;
    while (!m->stopping || running(m) > 0) {
        if (m->stopping && kill_at == 0)
            kill_at = sl_now_ms() + m->cfg->server.shutdown_grace_ms + 2000;
        if (kill_at != 0 && sl_now_ms() >= kill_at) {
            sl_log_error("workers still running after the grace period: killing them");
            stop_all(m, SIGKILL);
            kill_at = UINT64_MAX;
        }
        /* the signals, and the ready pipes of a reload's new workers */
        struct pollfd p[1 + MAX_WORKERS];
        unsigned np = 1;
        p[0] = (struct pollfd){m->sigfd, POLLIN, 0};
        for (unsigned i = 0; m->run.active && i < m->n; i++)
            if (m->fresh[i].ready_fd >= 0)
                p[np++] = (struct pollfd){m->fresh[i].ready_fd, POLLIN, 0};
        int rc = poll(p, np, next_wakeup_ms(m));
        if (rc > 0 && p[0].revents != 0) {
            struct signalfd_siginfo si;
            while (read(m->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
                handle_signal(m, &si);
        }
        reload_poll(m, p + 1, np - 1, sl_now_ms());
        if (!m->stopping) {
            respawn_due(m);
            kill_overdue(m);
        } else {
            reap(m);
        }
        if (m->hk != NULL)
            gw_housekeep_tick(m->hk, sl_now_ms());
    }
}

static int reserve(const char *listen, gw_listen_addr_t *addr, int *fd)
{
    if (gw_listen_resolve(listen, addr) != SL_OK)
        return -1;
    *fd = gw_listen_reserve(addr);
    return *fd < 0 ? -1 : 0;
}

#define CLUSTER_PROBE_MS 2000

/* With cluster:, one look at Redis before the workers start: a wrong
 * password or a port that is not Redis stops the start; Redis not answering
 * does not (the workers start degraded and connect when it comes). */
static int cluster_check(master_t *m)
{
    const gw_config_t *cfg = m->cfg;
    if (!cfg->has_cluster)
        return 0;
    char why[400];
    sl_err_t err = state_cluster_probe(&cfg->cluster, CLUSTER_PROBE_MS, why, sizeof(why));
    if (err == SL_ERR_IO) {
        sl_log_error("cluster: Redis at %s does not answer (%s): starting DEGRADED; each host enforces limits, "
                     "budgets and breakers on its own until Redis answers", cfg->cluster.url_shown, why);
    } else if (err != SL_OK) {
        sl_log_error("cluster: Redis at %s: %s", cfg->cluster.url_shown, why);
        return -1;
    } else {
        sl_log_info("cluster: host %s, Redis at %s (%s), prefix %s", cfg->cluster.host, cfg->cluster.url_shown, why,
                    cfg->cluster.prefix);
    }
    state_set_host(m->state, cfg->cluster.host);
    if (state_cluster_mode_reset(m->state, sl_wall_ms()) != SL_OK)
        sl_log_warn("cluster: cannot record the host's mode in the shared state");
    return 0;
}

static int master_init(master_t *m, const gw_config_t *cfg)
{
    memset(m, 0, sizeof(*m));
    m->cfg = cfg;
    m->sigfd = -1;
    m->reserve_fds[0] = m->reserve_fds[1] = -1;
    for (unsigned i = 0; i < MAX_WORKERS; i++) {
        m->slots[i].ready_fd = m->fresh[i].ready_fd = -1;
        m->slots[i].stats_slot = i + 1;
        m->listen_fds[0][i] = m->listen_fds[1][i] = -1;
    }
    m->n = cfg->server.workers < MAX_WORKERS ? cfg->server.workers : MAX_WORKERS;
    m->args.cfg = cfg;
    m->args.nworkers = m->n;
    gw_conns_raise_open_files(cfg->server.max_connections);
    m->args.nslots = SLOT_BANKS * m->n;
    if (reserve(cfg->server.listen, &m->args.main_addr, &m->reserve_fds[0]) != 0)
        return -1;
    if (cfg->admin.listen != NULL) {
        if (reserve(cfg->admin.listen, &m->args.admin_addr, &m->reserve_fds[1]) != 0)
            return -1;
        m->args.has_admin = 1;
    }
    state_conf_t sc = {cfg->state.path, cfg->state.map_size_mb, cfg->state.event_max_count,
                       cfg->state.event_max_age_hours * 3600, cfg->state.max_limit_cells};
    if (state_open(&sc, &m->state) != SL_OK) {
        sl_log_error("cannot open the shared state at %s", cfg->state.path);
        return -1;
    }
    if (cluster_check(m) != 0)
        return -1;
    m->hk = gw_housekeep_create(cfg, m->state, SLOT_BANKS * m->n);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, GW_RELOAD_SIGNAL);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    m->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    return m->sigfd < 0 ? -1 : 0;
}

int gw_master_run(const gw_config_t *cfg)
{
    master_t *m = sl_xcalloc(1, sizeof(*m));
    int rc = 1;
    if (master_init(m, cfg) != 0)
        goto cleanup;
    for (unsigned i = 0; i < m->n; i++)
        if (spawn(m, &m->slots[i], i, m->cfg) < 0)
            goto fail;
    if (wait_ready(m->slots, m->n) != 0) {
        sl_log_error("a worker failed to start (see above)");
        goto fail;
    }
    sl_log_info("sluice %s listening on http://%s with %u worker(s); admin API %s%s", SLUICE_VERSION,
                m->args.main_addr.text, m->n, m->args.has_admin ? "on http://" : "off",
                m->args.has_admin ? m->args.admin_addr.text : "");
    supervise(m);
    sl_log_info("stopped");
    rc = 0;
    goto cleanup;
fail:
    m->stopping = 1;
    stop_all(m, SIGTERM);
    supervise(m);
cleanup:
    close_listeners(m);
    if (m->sigfd >= 0)
        close(m->sigfd);
    gw_housekeep_destroy(m->hk);
    state_close(m->state);
    gw_config_destroy(m->owned);
    free(m);
    return rc;
}
