/* gateway/gw_chainid.c: learning the chain identity of networks that
 * configure none (gw_chainid.h). The ask is pool/'s (pool_ask_chain_ids),
 * the decision policy/'s (policy_chainid_decide); this file says what each
 * decision means at start: a majority is kept in state, a split refuses the
 * start naming each endpoint's answer, silence starts anyway. */
#include "gateway/gw_chainid.h"

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

/* 1 if st keeps an identity for the network (logged). */
static int kept_already(state_t *st, const pool_network_conf_t *c)
{
    if (st == NULL || state_read_begin(st) != SL_OK)
        return 0;
    state_chain_rec_t rec;
    int kept = state_chain_get(st, c->name, &rec) == SL_OK && rec.identity[0] != '\0';
    state_read_end(st);
    if (kept)
        sl_log_info("network %s: chain %s (learned earlier from its endpoints, kept in state)", c->name,
                    rec.identity);
    return kept;
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

int gw_chainid_learn(const gw_config_t *cfg, state_t *st, FILE *report, char *why, size_t cap)
{
    size_t n = cfg->nnetworks, asked = 0;
    uint8_t *ask = calloc(n ? n : 1, 1);
    pool_ask_id_t *ids = calloc((n ? n : 1) * POOL_MAX_ENDPOINTS, sizeof(pool_ask_id_t));
    if (ask == NULL || ids == NULL) {
        free(ask);
        free(ids);
        snprintf(why, cap, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        asked += ask[i] = needs_learning(&cfg->networks[i]) && !kept_already(st, &cfg->networks[i]);
    int rc = 0;
    if (asked > 0 && pool_ask_chain_ids(cfg->networks, n, ask, GW_CHAINID_ASK_MS, ids) != SL_OK) {
        sl_log_warn("could not ask the endpoints their chain id (no process): the chain is learned from the probes");
        asked = 0;
    }
    for (size_t i = 0; i < n && asked > 0 && rc == 0; i++)
        if (ask[i])
            rc = decide(&cfg->networks[i], &ids[i * POOL_MAX_ENDPOINTS], st, report, why, cap);
    free(ask);
    free(ids);
    return rc;
}
