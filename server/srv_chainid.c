/* server/srv_chainid.c: learning the chain identity of networks that
 * configure none (srv_chainid.h). The ask is pool/'s (pool_ask_chain_ids),
 * the decision policy/'s (policy_chainid_decide); this file says what each
 * decision means at start: a majority is kept in state, a split refuses the
 * start naming each endpoint's answer, silence starts anyway; a kept chain
 * that every endpoint answering now contradicts is re-learned. */
#include "server/srv_chainid.h"

#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"
#include "base/sl_log.h"
#include "base/sl_time.h"
#include "policy/chainid.h"
#include "pool/pool.h"

/* No identity configured, and probes on: with probes off (probe_interval_ms
 * 0) the identity is never checked, so there is nothing to learn it for. */
static int needs_learning(const pool_network_conf_t *c)
{
    if (c->ranking.probe_interval_ms == 0)
        return 0;
    return c->chain == POLICY_CHAIN_SOLANA ? c->genesis_hash == NULL : !c->has_chain_id;
}

/* The identity st keeps for the network into kept ("" none). */
static void kept_of(state_t *st, const pool_network_conf_t *c, char kept[STATE_CHAIN_ID_MAX])
{
    kept[0] = '\0';
    if (st == NULL || state_read_begin(st) != SL_OK)
        return;
    state_chain_rec_t rec;
    if (state_chain_get(st, c->name, &rec) == SL_OK)
        snprintf(kept, STATE_CHAIN_ID_MAX, "%s", rec.identity);
    state_read_end(st);
}

/* "a gave 0x1, b gave 0x5, c did not answer" */
static void answers(const pool_network_conf_t *c, const pool_ask_id_t *ids, sl_buf_t *b)
{
    for (size_t e = 0; e < c->nendpoints && e < POOL_MAX_ENDPOINTS; e++) {
        if (e > 0)
            sl_buf_append_str(b, ", ");
        if (ids[e][0] != '\0')
            sl_buf_printf(b, "%s gave %s", c->endpoints[e].id, ids[e]);
        else
            sl_buf_printf(b, "%s did not answer", c->endpoints[e].id);
    }
}

/* Decides one network from its endpoints' answers: 0 go on, -1 refuse. */
static int decide(const pool_network_conf_t *c, const pool_ask_id_t *ids, state_t *st, FILE *report, char *why,
                  size_t cap)
{
    const char *each[POOL_MAX_ENDPOINTS];
    size_t n = c->nendpoints < POOL_MAX_ENDPOINTS ? c->nendpoints : POOL_MAX_ENDPOINTS, votes = 0;
    for (size_t e = 0; e < n; e++)
        each[e] = ids[e][0] != '\0' ? ids[e] : NULL;
    const char *want;
    uint64_t wrong;
    policy_chainid_decision_t d = policy_chainid_decide(NULL, each, n, &want, &wrong);
    sl_buf_t b = {0};
    answers(c, ids, &b);
    const char *said = b.base != NULL ? b.base : "";
    int rc = 0;
    if (d == POLICY_CHAINID_SPLIT) {
        snprintf(why, cap, "network %s: its endpoints disagree on the chain and no %s is configured (%s): "
                 "no chain has a majority; set %s to the right one, or fix the endpoints",
                 c->name, c->chain == POLICY_CHAIN_SOLANA ? "genesis_hash" : "chain_id", said,
                 c->chain == POLICY_CHAIN_SOLANA ? "genesis_hash:" : "chain_id:");
        rc = -1;
    } else if (d == POLICY_CHAINID_WAIT) {
        if (report != NULL)
            fprintf(report, "network %s: no endpoint answered its chain id (%s)\n", c->name, said);
        sl_log_warn("network %s: no endpoint answered its chain id: starting; the chain is learned from the probes",
                    c->name);
    } else {
        for (size_t e = 0; e < n; e++)
            votes += each[e] != NULL && strcmp(each[e], want) == 0;
        if (report != NULL)
            fprintf(report, "network %s: chain %s, by %zu of %zu endpoints (%s)\n", c->name, want, votes, n, said);
        char kept[STATE_CHAIN_ID_MAX] = "";
        if (st != NULL && 2 * votes <= n)
            sl_log_warn("network %s: chain %s by %zu of %zu endpoints only: not kept; learned from the probes",
                        c->name, want, votes, n);
        else if (st != NULL && state_chain_learn(st, c->name, want, sl_shared_ms(), kept) != SL_OK)
            sl_log_warn("network %s: could not keep the chain learned in state", c->name);
        else if (st != NULL)
            sl_log_info("network %s: chain %s learned from its endpoints (%s)", c->name, kept, said);
    }
    sl_buf_dispose(&b);
    return rc;
}

/* A network that keeps an identity: it stands, unless every endpoint that
 * answers now says another (policy_chainid_heal): then it is re-learned,
 * with a chain_relearned event (st written only when report is NULL: the
 * master's start; --check --connect says what the start will do). */
static void decide_kept(const pool_network_conf_t *c, const pool_ask_id_t *ids, const char *kept, state_t *st,
                        FILE *report)
{
    const char *each[POOL_MAX_ENDPOINTS];
    size_t n = c->nendpoints < POOL_MAX_ENDPOINTS ? c->nendpoints : POOL_MAX_ENDPOINTS;
    for (size_t e = 0; e < n; e++)
        each[e] = ids[e][0] != '\0' ? ids[e] : NULL;
    const char *to = policy_chainid_heal(kept, each, n);
    if (to == NULL) {
        if (report != NULL)
            fprintf(report, "network %s: chain %s (learned earlier from its endpoints, kept in state)\n", c->name, kept);
        sl_log_info("network %s: chain %s (learned earlier from its endpoints, kept in state)", c->name, kept);
        return;
    }
    sl_buf_t b = {0};
    answers(c, ids, &b);
    const char *said = b.base != NULL ? b.base : "";
    if (report != NULL) {
        fprintf(report, "network %s: chain %s was learned earlier and is kept in state, but every endpoint that "
                        "answers now says %s (%s): it is re-learned at start\n", c->name, kept, to, said);
        sl_buf_dispose(&b);
        return;
    }
    char now[STATE_CHAIN_ID_MAX] = "";
    int swapped = 0;
    if (state_chain_relearn(st, c->name, kept, to, sl_shared_ms(), &swapped, now) != SL_OK) {
        sl_log_warn("network %s: could not keep the chain re-learned in state", c->name);
    } else if (swapped) {
        state_event_t ev;
        state_event_init(&ev, STATE_EVENT_CHAIN_RELEARNED, c->name, "", sl_shared_ms());
        snprintf(ev.reason, sizeof(ev.reason), "chain %s learned earlier; every endpoint that answers now says %s (%s): "
                 "re-learned", kept, now, said);
        sl_log_warn("network %s: %s", c->name, ev.reason);
        if (state_event_append(st, &ev) != SL_OK)
            sl_log_warn("network %s: could not record chain_relearned", c->name);
    }
    sl_buf_dispose(&b);
}

int srv_chainid_learn(const cfg_t *cfg, state_t *st, FILE *report, char *why, size_t cap)
{
    size_t n = cfg->nnetworks, asked = 0;
    uint8_t *ask = calloc(n ? n : 1, 1);
    pool_ask_id_t *ids = calloc((n ? n : 1) * POOL_MAX_ENDPOINTS, sizeof(pool_ask_id_t));
    char (*kept)[STATE_CHAIN_ID_MAX] = calloc(n ? n : 1, sizeof(*kept));
    if (ask == NULL || ids == NULL || kept == NULL) {
        free(ask);
        free(ids);
        free(kept);
        snprintf(why, cap, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        kept_of(st, &cfg->networks[i], kept[i]); /* asked too: a kept chain the endpoints all left heals */
        asked += ask[i] = (uint8_t)needs_learning(&cfg->networks[i]);
    }
    int rc = 0;
    if (asked > 0 && pool_ask_chain_ids(cfg->networks, n, ask, SRV_CHAINID_ASK_MS, ids) != SL_OK) {
        sl_log_warn("could not ask the endpoints their chain id (no process): the chain is learned from the probes");
        asked = 0;
    }
    for (size_t i = 0; i < n && asked > 0 && rc == 0; i++) {
        if (!ask[i])
            continue;
        if (kept[i][0] != '\0')
            decide_kept(&cfg->networks[i], &ids[i * POOL_MAX_ENDPOINTS], kept[i], st, report);
        else
            rc = decide(&cfg->networks[i], &ids[i * POOL_MAX_ENDPOINTS], report != NULL ? NULL : st, report, why, cap);
    }
    free(ask);
    free(ids);
    free(kept);
    return rc;
}
