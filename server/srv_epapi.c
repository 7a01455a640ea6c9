/* server/srv_epapi.c: the kept endpoint entries read from the state and
 * merged into the config (server/srv_epapi.h). */
#include "server/srv_epapi.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "state/state_epapi.h"

/* The kept entries as config/'s extra endpoints, the one at net/id replaced
 * by json (or dropped when json is NULL, added when none is kept). */
static cfg_extra_ep_t *extras(const state_epapi_rec_t *recs, size_t n, const char *net, const char *id,
                              const char *json, size_t *nout)
{
    cfg_extra_ep_t *e = calloc(n + 1, sizeof(*e));
    size_t k = 0;
    int seen = 0;
    if (e == NULL)
        abort();
    for (size_t i = 0; i < n; i++) {
        int same = net != NULL && strcmp(recs[i].network, net) == 0 && strcmp(recs[i].id, id) == 0;
        seen |= same;
        if ((same && json == NULL) || (!same && recs[i].json[0] == '\0')) /* removed; a tombstone */
            continue;
        e[k++] = (cfg_extra_ep_t){recs[i].network, recs[i].id, same ? json : recs[i].json, 0, NULL};
    }
    if (net != NULL && !seen && json != NULL)
        e[k++] = (cfg_extra_ep_t){net, id, json, 0, NULL};
    *nout = k;
    return e;
}

/* The entries that do not load with the file, each tried alone, are left out
 * of e[0..*n) with a log line (one copied from a host whose file differs must
 * not block this one's reloads); how many. A file that does not load alone
 * fails each try: then every entry goes and the file's errors are the ones told. */
static size_t drop_bad(const char *path, cfg_extra_ep_t *e, size_t *n)
{
    size_t kept = 0, dropped = 0;
    for (size_t i = 0; i < *n; i++) {
        cfg_t *one = NULL;
        cfg_errors_t errs = {0};
        if (cfg_load_extra(path, &e[i], 1, &one, &errs) == SL_OK)
            e[kept++] = e[i];
        else {
            dropped++;
            sl_log_warn("endpoint %s/%s added at run time does not load with %s and is not applied: %s%s%s", e[i].network,
                        e[i].id, path, errs.count && errs.items[0].path ? errs.items[0].path : "",
                        errs.count && errs.items[0].path ? ": " : "", errs.count ? errs.items[0].message : "");
        }
        cfg_destroy(one);
        cfg_errors_dispose(&errs);
    }
    *n = kept;
    return dropped;
}

sl_err_t srv_epapi_load(const char *path, state_t *st, cfg_t **out, cfg_errors_t *errs, uint64_t *gen)
{
    state_epapi_rec_t *recs = NULL;
    size_t n = 0, ne = 0;
    uint64_t g = 0;
    if (st != NULL && state_epapi_list(st, &recs, &n, &g) != SL_OK)
        sl_log_warn("state: could not read the endpoints added at run time; the config file's only");
    cfg_extra_ep_t *e = extras(recs, n, NULL, NULL, NULL, &ne);
    sl_err_t err = cfg_load_extra(path, e, ne, out, errs);
    if (err == SL_ERR_CONFIG && ne > 0 && drop_bad(path, e, &ne) > 0) {
        cfg_errors_dispose(errs);
        err = cfg_load_extra(path, e, ne, out, errs);
    }
    for (size_t i = 0; err == SL_OK && i < ne; i++)
        if (e[i].skipped != NULL)
            sl_log_warn("endpoint %s/%s added at run time is not applied: %s", e[i].network, e[i].id, e[i].skipped);
    if (gen != NULL)
        *gen = g;
    free(e);
    free(recs);
    return err;
}

/* The endpoint key an error path names: "networks.N.endpoints(ID).url" or
 * "networks.N.endpoints[3].url" gives "url". */
static void path_field(const char *path, char *field, size_t cap)
{
    const char *p = strstr(path != NULL ? path : "", ".endpoints");
    const char *dot = p != NULL ? strchr(p + 10, '.') : NULL;
    snprintf(field, cap, "%s", dot != NULL ? dot + 1 : "");
    char *cut = strpbrk(field, ".[");
    if (cut != NULL)
        *cut = '\0';
}

int srv_epapi_check(void *data, state_t *st, const char *net, const char *id, const char *json, char *why, size_t cap,
                    char *field, size_t field_cap, int *conflict)
{
    const cfg_t *running = data;
    state_epapi_rec_t *recs = NULL;
    size_t n = 0, ne = 0;
    cfg_errors_t errs = {0};
    cfg_t *next = NULL;
    *conflict = 0;
    field[0] = '\0';
    if (state_epapi_list(st, &recs, &n, NULL) != SL_OK) {
        snprintf(why, cap, "could not read the state");
        return 1;
    }
    cfg_extra_ep_t *e = extras(recs, n, net, id, json, &ne);
    int rc = 0;
    if (cfg_load_extra(running->file, e, ne, &next, &errs) != SL_OK && errs.count == 0) {
        snprintf(why, cap, "the config file did not load");
        rc = 1;
    } else if (next == NULL) {
        const cfg_error_t *first = &errs.items[0];
        for (size_t i = 0; i < errs.count; i++) /* the entry's own error first */
            if (errs.items[i].path != NULL && strstr(errs.items[i].path, "endpoints(") != NULL) {
                first = &errs.items[i];
                break;
            }
        snprintf(why, cap, "%s%s%s", first->path != NULL ? first->path : "", first->path && first->path[0] ? ": " : "",
                 first->message);
        path_field(first->path, field, field_cap);
        rc = 1;
    }
    for (size_t i = 0; rc == 0 && json != NULL && i < ne; i++)
        if (strcmp(e[i].network, net) == 0 && strcmp(e[i].id, id) == 0 && e[i].skipped != NULL) {
            *conflict = strstr(e[i].skipped, "same id") != NULL;
            snprintf(why, cap, "networks.%s.endpoints(%s): %s", net, id, e[i].skipped);
            snprintf(field, field_cap, "%s", *conflict ? "id" : "network");
            rc = 1;
        }
    cfg_errors_dispose(&errs);
    cfg_destroy(next);
    free(e);
    free(recs);
    return rc;
}

int srv_epapi_notify(void *data)
{
    (void)data;
    union sigval v = {.sival_int = 0};
    return sigqueue(getppid(), SRV_EPAPI_SIGNAL, v);
}

void srv_epapi_changed(void *data)
{
    if (srv_epapi_notify(data) != 0)
        sl_log_warn("could not tell the master that the endpoints changed; it applies them within a second");
}
