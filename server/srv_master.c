#include "server/srv_master.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "server/srv_chainid.h"
#include "server/srv_epapi.h"
#include "gateway/gw_conns.h"
#include "server/srv_housekeep.h"
#include "server/srv_listen.h"
#include "server/srv_master_int.h"
#include "server/srv_reload.h"
#include "server/srv_worker.h"
#include "state/state_cache.h"
#include "state/state_cluster.h"
#include "state/state_epapi.h"
#include "state/state_key.h"


void srv_master_close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static int open_listeners(master_t *m, unsigned i)
{
    srv_listen_addr_t addr = m->args.main_addr;
    if (m->listen_fds[0][i] < 0 && (m->listen_fds[0][i] = srv_listen_bind(&addr, LISTEN_BACKLOG)) < 0)
        return -1;
    addr = m->args.admin_addr;
    if (m->args.has_admin && m->listen_fds[1][i] < 0 &&
        (m->listen_fds[1][i] = srv_listen_bind(&addr, LISTEN_BACKLOG)) < 0)
        return -1;
    addr = m->args.ws_addr;
    if (m->args.has_ws && m->listen_fds[2][i] < 0 && (m->listen_fds[2][i] = srv_listen_bind(&addr, LISTEN_BACKLOG)) < 0)
        return -1;
    return 0;
}

static void close_listeners(master_t *m)
{
    for (unsigned i = 0; i < MAX_WORKERS; i++) {
        srv_master_close_fd(&m->listen_fds[0][i]);
        srv_master_close_fd(&m->listen_fds[1][i]);
        srv_master_close_fd(&m->listen_fds[2][i]);
    }
    for (int k = 0; k < 3; k++)
        srv_master_close_fd(&m->reserve_fds[k]);
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
        for (int j = 0; j < 3; j++)
            if (k != i && m->listen_fds[j][k] >= 0)
                close(m->listen_fds[j][k]);
    }
    for (int k = 0; k < 3; k++)
        if (m->reserve_fds[k] >= 0)
            close(m->reserve_fds[k]);
}

/* Starts worker index i (0-based) with cfg into s. */
pid_t srv_master_spawn(master_t *m, worker_slot_t *s, unsigned i, const cfg_t *cfg)
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
        srv_worker_args_t args = m->args;
        args.cfg = cfg;
        args.index = i + 1;
        args.slot = s->stats_slot;
        args.main_fd = m->listen_fds[0][i];
        args.admin_fd = m->listen_fds[1][i];
        args.ws_fd = m->listen_fds[2][i];
        args.ready_fd = pipefd[1];
        _exit(srv_worker_main(&args));
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
            srv_master_close_fd(&s->ready_fd);
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
void srv_master_retire(master_t *m, worker_slot_t *s, uint32_t grace_ms)
{
    srv_master_close_fd(&s->ready_fd);
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
    srv_master_close_fd(&s->ready_fd);
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
        srv_master_close_fd(&m->listen_fds[0][i]);
        srv_master_close_fd(&m->listen_fds[1][i]);
    }
    sl_log_error("worker %u (pid %d) %s; respawning in %u ms (restart #%u)", i + 1, (int)pid, how, s->backoff_ms,
                 s->restarts);
    if (m->hk != NULL)
        srv_housekeep_worker_restarted(m->hk, i + 1, (int)pid, how);
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
        if (srv_master_spawn(m, s, i, m->cfg) > 0)
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
            srv_master_reload_abort(m, "sluice is stopping");
        close_listeners(m); /* new connections are refused once the workers let go too */
        stop_all(m, SIGTERM);
    } else if (sig == SIGHUP) {
        srv_master_reload_start(m, (srv_reload_req_t){(uint32_t)getpid(), 0, 0});
    } else if (sig == SRV_RELOAD_SIGNAL && si->ssi_code == SI_QUEUE) {
        uint8_t tag = (uint8_t)si->ssi_int;
        srv_master_reload_start(m, (srv_reload_req_t){si->ssi_pid, tag ? tag : 1, 0});
    } /* SRV_EPAPI_SIGNAL only wakes the loop: srv_master_epapi_poll looks */
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
        srv_master_reload_poll(m, p + 1, np - 1, sl_now_ms());
        srv_master_epapi_poll(m);
        if (!m->stopping) {
            respawn_due(m);
            kill_overdue(m);
        } else {
            reap(m);
        }
        if (m->hk != NULL)
            srv_housekeep_tick(m->hk, sl_now_ms());
    }
}

static int reserve(const char *listen, srv_listen_addr_t *addr, int *fd)
{
    if (srv_listen_resolve(listen, addr) != SL_OK)
        return -1;
    *fd = srv_listen_reserve(addr);
    return *fd < 0 ? -1 : 0;
}

/* The second listener, for WebSocket clients (the main one upgrades too):
 * server.ws_listen, which must bind like any listener; unset, the main
 * port + 1 when it is free (geth's 8545/8546 and Solana's port + 1), else
 * a log line and the main port only; off, none. */
static int reserve_ws(master_t *m)
{
    const cfg_server_conf_t *srv = &m->cfg->server;
    if (srv->ws_listen_off)
        return 0;
    if (srv->ws_listen != NULL) {
        if (reserve(srv->ws_listen, &m->args.ws_addr, &m->reserve_fds[2]) != 0)
            return -1;
        m->args.has_ws = 1;
        return 0;
    }
    if (srv_listen_next_port(&m->args.main_addr, &m->args.ws_addr) != 0) {
        sl_log_info("WebSocket: served on the main port only (its port + 1 does not exist); set server.ws_listen "
                    "for a second listener");
        return 0;
    }
    if ((m->reserve_fds[2] = srv_listen_try_reserve(&m->args.ws_addr)) < 0) {
        sl_log_warn("WebSocket: %s (server.listen's port + 1, the default of server.ws_listen) cannot be bound (%s): "
                    "WebSocket is served on the main port %s only; set server.ws_listen to choose another port, "
                    "or off", m->args.ws_addr.text, strerror(errno), m->args.main_addr.text);
        return 0;
    }
    m->args.has_ws = 1;
    return 0;
}

/* A cache whose data file does not open (broken, or another LMDB build's)
 * holds nothing sluice cannot ask again: it is moved aside (one copy kept,
 * for a post-mortem) so an empty cache can be made. 1 if it was. */
static int cache_move_aside(const char *path)
{
    char from[PATH_MAX], to[PATH_MAX];
    if (snprintf(from, sizeof(from), "%s/data.mdb", path) >= (int)sizeof(from) ||
        snprintf(to, sizeof(to), "%s/data.mdb.broken", path) >= (int)sizeof(to) || access(from, F_OK) != 0)
        return 0;
    if (rename(from, to) != 0) {
        sl_log_warn("cache: cannot move %s aside: %s", from, strerror(errno));
        return 0;
    }
    sl_log_warn("cache: %s did not open: moved aside to %s; an empty cache is made", from, to);
    return 1;
}

/* The response cache opens (its folder made) before the workers do, so a
 * problem is said once; a cache that still cannot open leaves sluice
 * running without it (answers go upstream), as docs/operate/cluster.md says. */
static void cache_check(const cfg_t *cfg)
{
    state_cache_t *c = NULL;
    const state_cache_conf_t conf = {cfg->cache.path, cfg->cache.max_mb};
    if (!cfg->cache.enabled)
        return;
    if (state_cache_open(&conf, &c) != SL_OK &&
        (!cache_move_aside(cfg->cache.path) || state_cache_open(&conf, &c) != SL_OK)) {
        sl_log_warn("cache: cannot open %s: sluice runs without its response cache", cfg->cache.path);
        return;
    }
    state_cache_close(c);
}

static int master_init(master_t *m, const cfg_t *cfg)
{
    memset(m, 0, sizeof(*m));
    m->cfg = cfg;
    m->sigfd = -1;
    m->reserve_fds[0] = m->reserve_fds[1] = m->reserve_fds[2] = -1;
    for (unsigned i = 0; i < MAX_WORKERS; i++) {
        m->slots[i].ready_fd = m->fresh[i].ready_fd = -1;
        m->slots[i].stats_slot = i + 1;
        m->listen_fds[0][i] = m->listen_fds[1][i] = m->listen_fds[2][i] = -1;
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
    if (reserve_ws(m) != 0)
        return -1;
    state_conf_t sc = {cfg->state.path, cfg->state.map_size_mb, cfg->state.event_max_count,
                       cfg->state.event_max_age_hours * 3600, cfg->state.max_limit_cells};
    if (state_open(&sc, &m->state) != SL_OK) {
        sl_log_error("cannot open the shared state at %s", cfg->state.path);
        return -1;
    }
    if (srv_master_cluster_check(m) != 0)
        return -1;
    srv_master_epapi_start(m);
    if (state_epapi_applied_set(m->state, m->epapi_gen) != SL_OK)
        sl_log_warn("could not record the endpoints' generation applied");
    cfg = m->cfg;
    char why[2048];
    if (srv_reload_key_clash(cfg, m->state, why, sizeof(why))) {
        sl_log_error("%s", why);
        return -1;
    }
    if (srv_chainid_learn(cfg, m->state, NULL, why, sizeof(why)) != 0) {
        sl_log_error("%s", why);
        return -1;
    }
    cache_check(cfg);
    m->hk = srv_housekeep_create(cfg, m->state, SLOT_BANKS * m->n);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SRV_RELOAD_SIGNAL);
    sigaddset(&set, SRV_EPAPI_SIGNAL);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    m->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    return m->sigfd < 0 ? -1 : 0;
}

int srv_master_run(const cfg_t *cfg)
{
    master_t *m = sl_xcalloc(1, sizeof(*m));
    int rc = 1;
    if (master_init(m, cfg) != 0)
        goto cleanup;
    for (unsigned i = 0; i < m->n; i++)
        if (srv_master_spawn(m, &m->slots[i], i, m->cfg) < 0)
            goto fail;
    if (wait_ready(m->slots, m->n) != 0) {
        sl_log_error("a worker failed to start (see above)");
        goto fail;
    }
    int tls = m->cfg->server.tls.cert_file != NULL;
    sl_log_info("sluice %s listening on %s%s with %u worker(s)%s; WebSocket %s%s; admin API %s%s", SLUICE_VERSION,
                tls ? "https://" : "http://", m->args.main_addr.text, m->n,
                !tls ? "" : m->cfg->server.tls.http2 ? " (TLS, HTTP/2 by ALPN)" : " (TLS)",
                m->args.has_ws ? (tls ? "also on wss://" : "also on ws://") : "on the main port only",
                m->args.has_ws ? m->args.ws_addr.text : "", m->args.has_admin ? "on http://" : "off",
                m->args.has_admin ? m->args.admin_addr.text : "");
    supervise(m);
    srv_master_cluster_leave(m);
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
    srv_housekeep_destroy(m->hk);
    state_close(m->state);
    cfg_destroy(m->owned);
    free(m);
    return rc;
}
