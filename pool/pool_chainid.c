/* pool/pool_chainid.c: which chain each endpoint is on (pool_net.h).
 *
 * The network's identity is configured (chain_id, genesis_hash) or learned
 * from the endpoints' majority: by the master at start
 * (server/srv_chainid.c), kept in the network's chain record in state and
 * read here; or, when no endpoint answered then, here, once more than half
 * of the endpoints agree (state_chain_learn keeps the first one learned, so
 * every worker ends on the same). An endpoint on another chain (a testnet
 * key, a moved path) would answer clients with another chain's data, and
 * its higher head would become the one every other endpoint is measured by.
 * A learned chain heals when every endpoint that answers now says another
 * (chainid_heal). Each worker asks on its own exchange, beside the health probe, so no
 * shared record is needed for the exclusion; worker 1 alone records the
 * event, so a change is one event. With cluster:, only the host holding the
 * endpoint's lease asks (pool_lease.c); the answers it hears are kept in the
 * endpoint's record and published, and every worker of the other hosts
 * judges each one as if it had asked. */
#include <inttypes.h>
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_net.h"

static const char eth_id_probe[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_chainId\",\"params\":[]}";
static const char sol_id_probe[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"getGenesisHash\"}";

void pool_chainid_init(pool_network_t *net)
{
    const pool_network_conf_t *c = net->conf;
    char text[POLICY_CHAINID_MAX + 2];
    net->chain_want[0] = '\0';
    if (c->chain == POLICY_CHAIN_ETHEREUM && c->has_chain_id)
        snprintf(text, sizeof(text), "0x%" PRIx64, c->chain_id);
    else if (c->chain == POLICY_CHAIN_SOLANA && c->genesis_hash != NULL)
        snprintf(text, sizeof(text), "%s", c->genesis_hash);
    else {
        net->chain_learn = 1;
        state_t *st = net->pool->state;
        state_chain_rec_t rec;
        if (st != NULL && state_read_begin(st) == SL_OK) {
            if (state_chain_get(st, c->name, &rec) == SL_OK)
                snprintf(net->chain_want, sizeof(net->chain_want), "%s", rec.identity);
            state_read_end(st);
        }
        return;
    }
    if (policy_chainid_normalize(c->chain, text, strlen(text), net->chain_want) != SL_OK)
        net->chain_want[0] = '\0'; /* cfg checked it: cannot happen */
}

/* ep reported id (normal form): excluded or back, with its event once per change. */
static void chainid_note(pool_endpoint_t *ep, const char *id)
{
    pool_network_t *net = ep->net;
    uint8_t wrong = strcmp(id, net->chain_want) != 0;
    snprintf(ep->chain_id, sizeof(ep->chain_id), "%s", id);
    if (wrong == ep->wrong_chain)
        return;
    ep->wrong_chain = wrong;
    char why[160];
    if (wrong)
        policy_chainid_excluded(why, sizeof(why), id, net->chain_want);
    else
        snprintf(why, sizeof(why), "on the right chain again: %s", id);
    sl_log_warn("endpoint %s/%s: %s", net->conf->name, ep->conf->id, why);
    if (net->pool->state == NULL || net->pool->slot != 1)
        return;
    state_event_t ev;
    state_event_init(&ev, STATE_EVENT_ENDPOINT_WRONG_CHAIN, net->conf->name, ep->conf->id, sl_shared_ms());
    ev.to = wrong;
    snprintf(ev.reason, sizeof(ev.reason), "%s", why);
    if (state_event_append(net->pool->state, &ev) != SL_OK)
        sl_log_warn("endpoint %s/%s: could not record endpoint_wrong_chain", net->conf->name, ep->conf->id);
}

/* Every endpoint that answered is judged by the network's chain again. */
static void rejudge(pool_network_t *net)
{
    for (size_t i = 0; i < net->nendpoints && i < POOL_MAX_ENDPOINTS; i++)
        if (net->endpoints[i].chain_id[0] != '\0') {
            char id[POLICY_CHAINID_MAX];
            snprintf(id, sizeof(id), "%s", net->endpoints[i].chain_id);
            chainid_note(&net->endpoints[i], id);
        }
}

/* Not learned yet: once more than half of the endpoints agree, the
 * identity is theirs (kept in state: the first worker's stands), and every
 * endpoint that answered is judged by it. */
static void chainid_learn(pool_network_t *net)
{
    const char *ids[POOL_MAX_ENDPOINTS] = {0}; /* filled below (gcc cannot tell once inlined) */
    size_t n = net->nendpoints < POOL_MAX_ENDPOINTS ? net->nendpoints : POOL_MAX_ENDPOINTS, votes = 0;
    for (size_t i = 0; i < n; i++)
        ids[i] = net->endpoints[i].chain_id[0] != '\0' ? net->endpoints[i].chain_id : NULL;
    const char *want;
    uint64_t wrong;
    if (policy_chainid_decide(NULL, ids, n, &want, &wrong) != POLICY_CHAINID_AGREED)
        return;
    for (size_t i = 0; i < n; i++)
        votes += ids[i] != NULL && strcmp(ids[i], want) == 0;
    char kept[STATE_CHAIN_ID_MAX] = "";
    if (2 * votes <= n || net->pool->state == NULL ||
        state_chain_learn(net->pool->state, net->conf->name, want, sl_shared_ms(), kept) != SL_OK || kept[0] == '\0')
        return;
    snprintf(net->chain_want, sizeof(net->chain_want), "%s", kept);
    sl_log_info("network %s: chain %s learned from its endpoints (%zu of %zu agree)", net->conf->name, kept, votes, n);
    rejudge(net);
}

/* A learned chain that every endpoint answering now contradicts heals
 * (policy_chainid_heal: the URLs were fixed after a first start learned
 * the wrong chain's majority): re-learned in state, the first worker to
 * swap it recording chain_relearned, every other taking the one kept, and
 * every endpoint judged again. A configured chain never heals. */
static void chainid_heal(pool_network_t *net)
{
    const char *ids[POOL_MAX_ENDPOINTS];
    size_t n = net->nendpoints < POOL_MAX_ENDPOINTS ? net->nendpoints : POOL_MAX_ENDPOINTS, answered = 0;
    if (!net->chain_learn || net->pool->state == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        ids[i] = net->endpoints[i].chain_id[0] != '\0' ? net->endpoints[i].chain_id : NULL;
        answered += ids[i] != NULL;
    }
    const char *to = policy_chainid_heal(net->chain_want, ids, n);
    char from[POLICY_CHAINID_MAX], kept[STATE_CHAIN_ID_MAX] = "";
    int swapped = 0;
    snprintf(from, sizeof(from), "%s", net->chain_want);
    if (to == NULL || state_chain_relearn(net->pool->state, net->conf->name, from, to, sl_shared_ms(), &swapped, kept) !=
                          SL_OK || kept[0] == '\0')
        return;
    snprintf(net->chain_want, sizeof(net->chain_want), "%s", kept);
    if (swapped) {
        state_event_t ev;
        state_event_init(&ev, STATE_EVENT_CHAIN_RELEARNED, net->conf->name, "", sl_shared_ms());
        snprintf(ev.reason, sizeof(ev.reason), "chain %s learned earlier; every endpoint that answers now says %s "
                 "(%zu of %zu endpoints, from the probes): re-learned", from, kept, answered, n);
        sl_log_warn("network %s: %s", net->conf->name, ev.reason);
        if (state_event_append(net->pool->state, &ev) != SL_OK)
            sl_log_warn("network %s: could not record chain_relearned", net->conf->name);
    }
    rejudge(net);
}

/* ep answered id (normal form): judged, or the chain learned from it. */
static void chainid_answered(pool_endpoint_t *ep, const char *id)
{
    if (ep->net->chain_want[0] != '\0') {
        chainid_note(ep, id);
        if (ep->wrong_chain)
            chainid_heal(ep->net);
    } else {
        snprintf(ep->chain_id, sizeof(ep->chain_id), "%s", id);
        chainid_learn(ep->net);
    }
}

static void on_id_probe_done(pool_exchange_t *ex)
{
    pool_endpoint_t *ep = ex->data;
    ep->id_probing = 0;
    const char *body = pool_exchange_bytes(ex);
    size_t len = pool_exchange_len(ex);
    wire_envelope_t env;
    char text[128], id[POLICY_CHAINID_MAX];
    if (ex->fail == POOL_FAIL_NONE && ex->head.status >= 200 && ex->head.status < 300 &&
        wire_envelope_scan(body, len, &env) == SL_OK && env.error.len == 0 &&
        wire_json_string(body, env.result, text, sizeof(text)) == SL_OK &&
        policy_chainid_normalize(ep->net->conf->chain, text, strlen(text), id) == SL_OK) {
        chainid_answered(ep, id);
        pool_lease_chain_heard(ep, id, sl_shared_ms()); /* cluster: the other hosts judge it too */
    }
    /* no answer says nothing of its chain: asked again at the next turn */
    pool_exchange_body_dispose(ex);
}

void pool_chainid_tick(pool_endpoint_t *ep, uint64_t now_ms)
{
    pool_network_t *net = ep->net;
    uint32_t every = net->conf->ranking.probe_interval_ms;
    const state_endpoint_rec_t *r = &ep->health.shared;
    int learning = net->chain_want[0] == '\0';
    if ((learning && !net->chain_learn) || every == 0)
        return;
    if (!pool_lease_does_job(ep, now_ms)) {
        /* cluster: the host holding the endpoint's lease asks; its answer is judged here as our own */
        if (r->lease_chain_at_ms != 0 && r->lease_chain_at_ms != ep->id_fed_at && r->lease_chain_id[0] != '\0') {
            ep->id_fed_at = r->lease_chain_at_ms;
            char id[POLICY_CHAINID_MAX];
            snprintf(id, sizeof(id), "%s", r->lease_chain_id);
            chainid_answered(ep, id);
        }
        return;
    }
    if (ep->id_probing || now_ms < ep->id_next_ms)
        return;
    /* as the health probe: not while its breaker is open, drained or
     * rate-limited (a question would spend the quota it waits for) */
    if (r->breaker != POLICY_BREAKER_CLOSED || r->drained || now_ms < r->rate_limited_until_ms)
        return;
    /* a wrong one is asked every probe interval: it comes back as soon as it
     * is right; so is one that never answered while the chain is still to be
     * learned, once its health probe answers (an endpoint that is down or
     * refusing is not asked each interval by every worker) */
    int unknown = learning && ep->chain_id[0] == '\0';
    if (unknown && (r->probe_failures != 0 || r->head_at_ms == 0 || now_ms > r->head_at_ms + 2 * (uint64_t)every))
        return;
    int soon = ep->wrong_chain || unknown;
    ep->id_next_ms = now_ms + (uint64_t)every * (soon ? 1 : POOL_CHAINID_EVERY);
    int solana = net->conf->chain == POLICY_CHAIN_SOLANA;
    const char *req = solana ? sol_id_probe : eth_id_probe;
    size_t len = solana ? sizeof(sol_id_probe) - 1 : sizeof(eth_id_probe) - 1;
    if (net->pool->t.ops->start(&ep->id_probe, &ep->link, req, len, 0, on_id_probe_done, ep) == POOL_FAIL_NONE)
        ep->id_probing = 1;
}

void pool_chainid_dispose(pool_endpoint_t *ep)
{
    if (ep->id_probing)
        ep->net->pool->t.ops->cancel(&ep->id_probe);
    ep->id_probing = 0;
}
