/* server/srv_master_reload.c: the master's reload path. A reload starts the
 * new workers and returns to the supervise loop, which polls their ready
 * pipes beside its other duties (reaping, respawning, housekeeping): a slow
 * start never stops the master. Once every new worker is ready the old ones
 * drain and the new configuration is installed; if one fails first, the
 * new ones go and the old ones never notice. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "server/srv_master_int.h"
#include "server/srv_epapi.h"
#include "state/state_epapi.h"

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
static void install(master_t *m, cfg_t *next)
{
    srv_housekeep_t *hk = srv_housekeep_create(next, m->state, SLOT_BANKS * m->n);
    srv_housekeep_carry(hk, m->hk);
    srv_housekeep_destroy(m->hk);
    m->hk = hk;
    state_retention_set(m->state, next->state.event_max_count, next->state.event_max_age_hours * 3600);
    sl_log_setup((sl_log_level_t)next->log.level, next->log.json ? SL_LOG_JSON : SL_LOG_TEXT, "master");
    cfg_destroy(m->owned);
    m->owned = next;
    m->cfg = next;
    m->args.cfg = next;
}

/* Ends the reload under way: the new configuration and diff are dropped. */
static void reload_clear(master_t *m)
{
    for (unsigned i = 0; i < m->n; i++)
        m->fresh[i] = (worker_slot_t){.ready_fd = -1};
    cfg_diff_dispose(&m->run.diff);
    cfg_destroy(m->run.next);
    m->run = (reload_run_t){0};
}

/* The new workers did not all come up: they go, the running ones stay. */
void srv_master_reload_abort(master_t *m, const char *why)
{
    for (unsigned i = 0; i < m->n; i++)
        srv_master_retire(m, &m->fresh[i], m->run.next->server.shutdown_grace_ms);
    srv_reload_failed(m->state, &m->run.req, 1, why);
    reload_clear(m);
}

/* Every new worker accepts: the old ones drain, the new config is in. */
static void reload_finish(master_t *m)
{
    /* recorded before the old workers drain: an admin request waiting in one
     * of them finds its answer */
    srv_reload_done(m->state, &m->run.req, &m->run.diff, sl_now_ms() - m->run.start_ms);
    if (state_epapi_applied_set(m->state, m->epapi_gen) != SL_OK) /* the endpoint routes wait for it */
        sl_log_warn("reload: could not record the endpoints' generation applied; their admin requests answer "
                    "\"applying\"");
    sl_log_info("reload: %u new worker(s) accept; the previous ones drain (grace %u ms)", m->n,
                m->cfg->server.shutdown_grace_ms);
    for (unsigned i = 0; i < m->n; i++) {
        srv_master_retire(m, &m->slots[i], m->cfg->server.shutdown_grace_ms);
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
void srv_master_reload_start(master_t *m, srv_reload_req_t req)
{
    if (m->stopping)
        return;
    if (m->run.active) {
        srv_reload_failed(m->state, &req, 1,
                         "a reload is under way (its new workers are starting); try again once it has finished");
        return;
    }
    uint64_t start = sl_now_ms();
    cfg_diff_t diff;
    cfg_t *next = srv_reload_load(m->cfg, m->state, &req, &diff, &m->epapi_gen);
    if (next == NULL)
        return;
    m->run = (reload_run_t){1, next, diff, req, start, start + STARTUP_TIMEOUT_MS};
    if (assign_fresh_slots(m) != 0) {
        srv_reload_failed(m->state, &req, 1,
                         "two earlier reloads are still draining their workers; try again once they have exited "
                         "(within server.shutdown_grace_ms)");
        reload_clear(m);
        return;
    }
    for (unsigned i = 0; i < m->n; i++) {
        if (srv_master_spawn(m, &m->fresh[i], i, next) <= 0) {
            srv_master_reload_abort(m, "a worker could not start with the new configuration (see the log); the running workers "
                            "keep serving");
            return;
        }
    }
}

/* Reads the ready pipes that poll found readable; finishes or fails the
 * reload under way when it can. */
void srv_master_reload_poll(master_t *m, const struct pollfd *p, unsigned np, uint64_t now)
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
                srv_master_close_fd(&s->ready_fd);
            else if (rd == 0 || (errno != EAGAIN && errno != EINTR))
                failed = 1; /* end of file: the worker died during setup */
        }
    }
    unsigned waiting = 0;
    for (unsigned i = 0; i < m->n; i++)
        waiting += m->fresh[i].ready_fd >= 0;
    if (failed || (waiting > 0 && now >= m->run.deadline_ms))
        srv_master_reload_abort(m, "a worker could not start with the new configuration (see the log); the running workers "
                        "keep serving");
    else if (waiting == 0)
        reload_finish(m);
}

void srv_master_epapi_poll(master_t *m)
{
    uint64_t gen;
    if (m->stopping || m->run.active || state_epapi_generation(m->state, &gen) != SL_OK || gen == m->epapi_gen)
        return;
    /* two earlier generations still draining: wait for a bank of counter
     * slots instead of failing (the change would wait for the next one) */
    int full = assign_fresh_slots(m) != 0;
    for (unsigned i = 0; i < m->n; i++)
        m->fresh[i] = (worker_slot_t){.ready_fd = -1};
    if (!full)
        srv_master_reload_start(m, (srv_reload_req_t){(uint32_t)getpid(), 0, 1});
}

void srv_master_epapi_start(master_t *m)
{
    cfg_errors_t errs = {0};
    cfg_t *merged = NULL;
    if (state_epapi_generation(m->state, &m->epapi_gen) != SL_OK || m->epapi_gen == 0)
        return;
    if (srv_epapi_load(m->cfg->file, m->state, &merged, &errs, &m->epapi_gen) != SL_OK) {
        for (size_t i = 0; i < errs.count; i++)
            sl_log_error("endpoints added at run time: %s: %s", errs.items[i].path ? errs.items[i].path : "",
                         errs.items[i].message);
        sl_log_error("the endpoints added at run time are not applied (above); the config file's serve");
        cfg_errors_dispose(&errs);
        return;
    }
    cfg_errors_dispose(&errs);
    cfg_destroy(m->owned);
    m->owned = merged;
    m->cfg = merged;
    m->args.cfg = merged;
}
