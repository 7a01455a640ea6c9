/* server/srv_reload.c: load, validate and compare a new configuration; the
 * events that tell the operator how a reload went. */
#include "server/srv_reload.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/sl_buf.h"
#include "base/sl_log.h"
#include "base/sl_time.h"
#include "server/srv_epapi.h"
#include "state/state_apikey.h"

static void record(state_t *st, state_event_kind_t kind, const srv_reload_req_t *req, uint64_t count,
                   uint64_t took_ms, const char *reason)
{
    state_event_t ev;
    state_event_init(&ev, kind, NULL, NULL, sl_wall_ms());
    ev.pid = req->pid; /* the requester's: its admin route waits for this event */
    ev.from = req->tag;
    ev.count = count;
    ev.duration_ms = took_ms;
    snprintf(ev.reason, sizeof(ev.reason), "%s", reason);
    if (state_event_append(st, &ev) != SL_OK)
        sl_log_warn("state: could not record the %s event", state_event_kind_name(kind));
}

void srv_reload_failed(state_t *st, const srv_reload_req_t *req, size_t nerrors, const char *why)
{
    sl_log_error("reload failed: %s; nothing changed, the running workers keep serving", why);
    record(st, STATE_EVENT_CONFIG_RELOAD_FAILED, req, nerrors, 0, why);
}

int srv_reload_key_clash(const cfg_t *cfg, state_t *st, char *why, size_t cap)
{
    state_apikey_rec_t *recs = NULL;
    size_t n = 0;
    if (st == NULL || cfg->nkeys == 0 || state_apikey_list(st, &recs, &n, NULL) != SL_OK)
        return 0;
    int clash = 0;
    for (size_t i = 0; i < cfg->nkeys && !clash; i++)
        for (size_t j = 0; j < n && !clash; j++)
            if (cfg->keys[i].name != NULL && strcmp(cfg->keys[i].name, recs[j].name) == 0) {
                snprintf(why, cap,
                         "keys[%zu]: the name '%s' is an API key's made at run time (%s): rename the config key, "
                         "or revoke the other (DELETE /admin/keys/%s)",
                         i, recs[j].name, cfg->state.path != NULL ? cfg->state.path : "the state", recs[j].name);
                clash = 1;
            }
    free(recs);
    return clash;
}

void srv_reload_done(state_t *st, const srv_reload_req_t *req, const cfg_diff_t *diff, uint64_t took_ms)
{
    static const char *const ops[] = {[CFG_CHANGE_ADDED] = "added",
                                      [CFG_CHANGE_REMOVED] = "removed",
                                      [CFG_CHANGE_CHANGED] = "changed"};
    static const char *const subjects[] = {
        [CFG_CHANGE_NETWORK] = "network", [CFG_CHANGE_ENDPOINT] = "endpoint", [CFG_CHANGE_SETTING] = "setting"};
    for (size_t i = 0; i < diff->n; i++) {
        const cfg_change_t *c = &diff->items[i];
        sl_log_info("reload: %s %s %s%s%s%s", subjects[c->subject], c->name, ops[c->op], c->fields[0] ? " (" : "",
                    c->fields, c->fields[0] ? ")" : "");
    }
    state_event_t probe;
    char summary[sizeof(probe.reason)];
    cfg_diff_summary(diff, summary, sizeof(summary));
    sl_log_info("configuration reloaded in %llu ms: %s", (unsigned long long)took_ms, summary);
    record(st, STATE_EVENT_CONFIG_RELOADED, req, diff->n, took_ms, summary);
}

/* "name.yaml:12: path: message; name.yaml:14: ..." (cut to fit the event). */
static void errors_text(const cfg_errors_t *errs, const char *file, sl_buf_t *out)
{
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    for (size_t i = 0; i < errs->count; i++) {
        const cfg_error_t *e = &errs->items[i];
        if (i > 0)
            sl_buf_append_str(out, "; ");
        sl_buf_append_str(out, base);
        if (e->line > 0)
            sl_buf_printf(out, ":%d", e->line);
        sl_buf_append_str(out, ": ");
        if (e->path != NULL && e->path[0] != '\0')
            sl_buf_printf(out, "%s: ", e->path);
        sl_buf_append_str(out, e->message);
    }
}

cfg_t *srv_reload_load(const cfg_t *running, state_t *st, const srv_reload_req_t *req,
                            cfg_diff_t *diff, uint64_t *epapi_gen)
{
    cfg_errors_t errs = {0};
    cfg_t *next = NULL;
    memset(diff, 0, sizeof(*diff));
    sl_log_info("reload requested (%s): reading %s",
                req->epapi ? "endpoints changed at run time" : req->tag ? "POST /admin/reload" : "SIGHUP", running->file);
    if (srv_epapi_load(running->file, st, &next, &errs, epapi_gen) != SL_OK) {
        /* the same lines `sluice --check` prints */
        for (size_t i = 0; i < errs.count; i++) {
            const cfg_error_t *e = &errs.items[i];
            char line[16] = "";
            if (e->line > 0)
                snprintf(line, sizeof(line), ":%d", e->line);
            sl_log_error("%s%s: %s%s%s", running->file, line, e->path && e->path[0] ? e->path : "",
                         e->path && e->path[0] ? ": " : "", e->message);
        }
        sl_log_error("reload failed: %zu error(s) in %s (above); nothing changed, the running workers keep serving",
                     errs.count, running->file);
        sl_buf_t why = SL_BUF_INIT;
        sl_buf_printf(&why, "%zu error(s): ", errs.count);
        errors_text(&errs, running->file, &why);
        record(st, STATE_EVENT_CONFIG_RELOAD_FAILED, req, errs.count, 0, why.base);
        sl_buf_dispose(&why);
        cfg_errors_dispose(&errs);
        return NULL;
    }
    cfg_errors_dispose(&errs);
    char clash[512];
    if (srv_reload_key_clash(next, st, clash, sizeof(clash))) {
        srv_reload_failed(st, req, 1, clash);
        cfg_destroy(next);
        return NULL;
    }
    cfg_diff(running, next, diff);
    if (diff->restart[0] != '\0') {
        srv_reload_failed(st, req, 1, diff->restart);
        cfg_diff_dispose(diff);
        cfg_destroy(next);
        return NULL;
    }
    return next;
}

int srv_reload_request(uint8_t tag)
{
    union sigval v = {.sival_int = tag};
    return sigqueue(getppid(), SRV_RELOAD_SIGNAL, v);
}
