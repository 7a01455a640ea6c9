#include "gateway/gw_master.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/sl_buf.h"
#include "base/sl_log.h"
#include "base/sl_time.h"
#include "gateway/gw_housekeep.h"
#include "gateway/gw_listen.h"
#include "gateway/gw_worker.h"
#include "state/state_cluster.h"

#define MAX_WORKERS 256
#define STARTUP_TIMEOUT_MS 15000
#define RESPAWN_MIN_MS 100
#define RESPAWN_MAX_MS 10000
#define STABLE_AFTER_MS 10000     /* a worker that lived this long resets the backoff */
#define HOUSEKEEP_MS 1000

typedef struct worker_slot {
    pid_t pid;                    /* 0: not running */
    int ready_fd;                 /* read end of the worker's ready pipe, -1 once ready */
    uint64_t started_ms;
    uint64_t respawn_at_ms;       /* 0: no respawn scheduled */
    uint32_t backoff_ms;
    uint32_t restarts;
} worker_slot_t;

typedef struct master {
    const gw_config_t *cfg;
    gw_worker_args_t args;
    int reserve_fds[2];           /* bound, not listening: keeps the ports ours */
    int sigfd;
    worker_slot_t slots[MAX_WORKERS];
    unsigned n;
    int stopping;
    state_t *state;
    gw_housekeep_t *hk;
} master_t;

static pid_t spawn(master_t *m, unsigned i)
{
    pid_t master_pid = getpid();
    int pipefd[2];
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
        close(m->sigfd);
        for (unsigned k = 0; k < m->n; k++)
            if (m->slots[k].ready_fd >= 0)
                close(m->slots[k].ready_fd);
        for (int k = 0; k < 2; k++)
            if (m->reserve_fds[k] >= 0)
                close(m->reserve_fds[k]);
        gw_worker_args_t args = m->args;
        args.index = i + 1;
        args.ready_fd = pipefd[1];
        _exit(gw_worker_main(&args));
    }
    close(pipefd[1]);
    worker_slot_t *s = &m->slots[i];
    s->pid = pid;
    s->ready_fd = pipefd[0];
    s->started_ms = sl_now_ms();
    s->respawn_at_ms = 0;
    return pid;
}

/* Waits until every worker reported ready; 0 on success. */
static int wait_ready(master_t *m)
{
    uint64_t deadline = sl_now_ms() + STARTUP_TIMEOUT_MS;
    for (unsigned i = 0; i < m->n; i++) {
        worker_slot_t *s = &m->slots[i];
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
            close(s->ready_fd);
            s->ready_fd = -1;
        }
    }
    return 0;
}

static void stop_all(master_t *m, int sig)
{
    for (unsigned i = 0; i < m->n; i++)
        if (m->slots[i].pid > 0)
            kill(m->slots[i].pid, sig);
}

static unsigned running(const master_t *m)
{
    unsigned n = 0;
    for (unsigned i = 0; i < m->n; i++)
        n += m->slots[i].pid > 0;
    return n;
}

static void describe_exit(int status, char *out, size_t len)
{
    if (WIFSIGNALED(status))
        snprintf(out, len, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(out, len, "exited with status %d", WEXITSTATUS(status));
}

static void reap(master_t *m)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (unsigned i = 0; i < m->n; i++) {
            worker_slot_t *s = &m->slots[i];
            if (s->pid != pid)
                continue;
            s->pid = 0;
            if (s->ready_fd >= 0) {
                close(s->ready_fd);
                s->ready_fd = -1;
            }
            if (m->stopping)
                break;
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
            sl_log_error("worker %u (pid %d) %s; respawning in %u ms (restart #%u)", i + 1, (int)pid, how,
                         s->backoff_ms, s->restarts);
            if (m->hk != NULL)
                gw_housekeep_worker_restarted(m->hk, i + 1, (int)pid, how);
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
        if (spawn(m, i) > 0)
            sl_log_info("worker %u respawned as pid %d", i + 1, (int)s->pid);
        else
            s->respawn_at_ms = now + RESPAWN_MAX_MS;
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
    if (next == UINT64_MAX || next > now + HOUSEKEEP_MS)
        return HOUSEKEEP_MS; /* the shared state's chores */
    return next <= now ? 0 : (int)(next - now);
}

static void handle_signal(master_t *m, int sig)
{
    if (sig == SIGCHLD) {
        reap(m);
    } else if (sig == SIGTERM || sig == SIGINT) {
        if (!m->stopping)
            sl_log_info("%s: stopping; workers drain their requests (grace %u ms)", strsignal(sig),
                        m->cfg->server.shutdown_grace_ms);
        m->stopping = 1;
        stop_all(m, SIGTERM);
    } else if (sig == SIGHUP) {
        sl_log_warn("SIGHUP: configuration reload is not supported yet; restart sluice to apply changes");
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
        struct pollfd p = {m->sigfd, POLLIN, 0};
        int rc = poll(&p, 1, next_wakeup_ms(m));
        if (rc > 0) {
            struct signalfd_siginfo si;
            while (read(m->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
                handle_signal(m, (int)si.ssi_signo);
        }
        if (!m->stopping)
            respawn_due(m);
        else
            reap(m);
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
    m->reserve_fds[0] = m->reserve_fds[1] = -1;
    for (unsigned i = 0; i < MAX_WORKERS; i++)
        m->slots[i].ready_fd = -1;
    m->n = cfg->server.workers < MAX_WORKERS ? cfg->server.workers : MAX_WORKERS;
    m->args.cfg = cfg;
    m->args.nworkers = m->n;
    if (reserve(cfg->server.listen, &m->args.main_addr, &m->reserve_fds[0]) != 0)
        return -1;
    if (cfg->admin.listen != NULL) {
        if (reserve(cfg->admin.listen, &m->args.admin_addr, &m->reserve_fds[1]) != 0)
            return -1;
        m->args.has_admin = 1;
    }
    state_conf_t sc = {cfg->state.path, cfg->state.map_size_mb, cfg->state.event_max_count,
                       cfg->state.event_max_age_hours * 3600};
    if (state_open(&sc, &m->state) != SL_OK) {
        sl_log_error("cannot open the shared state at %s", cfg->state.path);
        return -1;
    }
    if (cluster_check(m) != 0)
        return -1;
    m->hk = gw_housekeep_create(cfg, m->state, m->n);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
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
        if (spawn(m, i) < 0)
            goto fail;
    if (wait_ready(m) != 0) {
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
    for (int k = 0; k < 2; k++)
        if (m->reserve_fds[k] >= 0)
            close(m->reserve_fds[k]);
    gw_housekeep_destroy(m->hk);
    state_close(m->state);
    free(m);
    return rc;
}
