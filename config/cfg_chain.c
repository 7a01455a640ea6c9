/* config/cfg_chain.c: a network's chain view keys.
 *
 *   chain_id: 8453 | "0x2105"          Ethereum; else learned from the endpoints' majority
 *   genesis_hash: "5eykt4Us..."        Solana, the same rule
 *   max_lag_blocks: 2                  Ethereum: `latest` reads only this close to the head
 *   max_lag_slots: 10                  Solana's
 *   max_logs_split: 20                 eth_getLogs sub-calls at most
 *   chain_probe_ms: 30000              safe, finalized and the head's hashes, this often (0: never)
 *   ws_stall_ms: 60000                 an endpoint's ws_url stream with no head this long is reopened
 *                                      (Solana: 5000)
 *   max_head_lead: 128                 a head further ahead of every other is not trusted
 *                                      (blocks; Solana: slots, 500; 0: off)
 *   consensus: { methods: [eth_getTransactionCount], quorum: 2, of: 3 }
 *   endpoints[].max_logs_blocks: 1000  blocks per eth_getLogs (default: the cost profile's)
 *
 * What each means is policy/'s (chainview.h, chainid.h, logsplit.h,
 * consensus.h); here they are read and checked. A key of the other chain is
 * an error, not ignored: a max_lag_slots on an Ethereum network would
 * otherwise silently keep the default the operator meant to change. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg_int.h"
#include "policy/chainid.h"
#include "policy/chainview.h"
#include "policy/logsplit.h"

#define NFIELDS(t) (sizeof(t) / sizeof((t)[0]))

/* the view's masks and the consensus votes cover every endpoint a network may have */
_Static_assert(POOL_MAX_ENDPOINTS <= POLICY_CHAINVIEW_MAX_ENDPOINTS, "a chain view mask is too small");
_Static_assert(POOL_MAX_ENDPOINTS <= POLICY_CONSENSUS_MAX, "consensus cannot ask every endpoint");

/* Ethereum: two blocks (24 s) is what clients polling every few seconds see
 * between well-synced providers. Solana: a slot is ~400 ms and providers'
 * slots differ by a few through propagation alone (getSlot at the default
 * finalized commitment more, as nodes' votes land at different times):
 * 10 slots (~4 s) keeps an endpoint whose picture is seconds old out of
 * `latest` reads without excluding healthy providers a few slots apart, as 2
 * slots (0.8 s) would. Both stay well under ranking.max_lag (8 blocks, 150
 * slots), which excludes an endpoint from every call. */
#define CFG_DEFAULT_MAX_LAG_BLOCKS 2
#define CFG_DEFAULT_MAX_LAG_SLOTS 10
/* The figure: 20 sub-calls bound what one eth_getLogs may cost
 * (20 x Infura's 255 credits) while a 10,000-block range fits at 500-block caps. */
#define CFG_DEFAULT_MAX_LOGS_SPLIT 20
/* Ethereum's safe and finalized move once an epoch (6.4 min). The chain
 * probe is three eth_getBlockByNumber: at 30 s it costs 2 CU/s on Alchemy
 * (60 CU) against the head probe's 5 (eth_blockNumber, 10 CU every 2 s),
 * 8 credits/s on Infura against 40 (docs/guide/chain.md, "The chain probe"). */
#define CFG_DEFAULT_CHAIN_PROBE_MS 30000
/* max_logs_blocks not given: the cost profile decides, once it is known */
#define CFG_LOGS_BLOCKS_UNSET UINT32_MAX
/* A lying or forked endpoint's head, however far ahead, must not become the
 * network's (policy_chainview_implausible). Honest providers are within
 * ranking.max_lag of each other (8 blocks, 150 slots); one further behind
 * is stalled, and with two endpoints only the rule cannot tell a stalled
 * partner from a liar: the lead is wide enough that a stall of that size is
 * rare (128 blocks: 25 min of Ethereum, 4 min of Base; 500 slots: 3 min). */
#define CFG_DEFAULT_MAX_HEAD_LEAD_BLOCKS 128
#define CFG_DEFAULT_MAX_HEAD_LEAD_SLOTS 500
#define CFG_HEAD_LEAD_UNSET UINT32_MAX

void cfg_net_chain_defaults(pool_network_conf_t *net)
{
    net->max_lag_blocks = CFG_DEFAULT_MAX_LAG_BLOCKS;
    net->max_lag_slots = CFG_DEFAULT_MAX_LAG_SLOTS;
    net->max_logs_split = CFG_DEFAULT_MAX_LOGS_SPLIT;
    net->chain_probe_ms = CFG_DEFAULT_CHAIN_PROBE_MS;
    net->max_head_lead = CFG_HEAD_LEAD_UNSET; /* its unit is the chain's: set once the chain is known */
}

void cfg_ep_chain_defaults(pool_endpoint_conf_t *ep)
{
    ep->max_logs_blocks = CFG_LOGS_BLOCKS_UNSET;
}

/* ---- chain identity ---- */

/* The text of chain_id: or genesis_hash: when it is an identity of chain
 * (heap, the caller's), else NULL with the error reported. */
static char *identity(cfg_loader_t *c, yaml_node_t *n, policy_chain_t chain, const char *want,
                      char norm[POLICY_CHAINID_MAX])
{
    char *s = NULL;
    if (cfg_str(c, n, &s) != SL_OK)
        return NULL;
    if (policy_chainid_normalize(chain, s, strlen(s), norm) == SL_OK)
        return s;
    cfg_loader_error(c, cfg_line(n), "%s, got '%s'", want, s);
    free(s);
    return NULL;
}

void cfg_net_chain_id(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    pool_network_conf_t *net = target;
    char norm[POLICY_CHAINID_MAX];
    char *s = identity(c, n, POLICY_CHAIN_ETHEREUM, "chain_id must be a number (8453) or a hex string (\"0x2105\")",
                       norm);
    if (s == NULL)
        return;
    net->has_chain_id = 1;
    net->chain_id = strtoull(norm + 2, NULL, 16);
    free(s);
}

void cfg_net_genesis_hash(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    pool_network_conf_t *net = target;
    char norm[POLICY_CHAINID_MAX];
    char *s = identity(c, n, POLICY_CHAIN_SOLANA,
                       "genesis_hash must be the base58 text of a 32-byte hash (as getGenesisHash answers)", norm);
    if (s == NULL)
        return;
    free(net->genesis_hash);
    net->genesis_hash = s;
}

/* ---- consensus ---- */

static const char *method_name_check(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 128 || s[strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")] != '\0')
        return "a method name is letters, digits, _ . -";
    return NULL;
}

static void consensus_methods(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    policy_consensus_conf_t *cc = target;
    char **v = NULL;
    size_t nv = 0;
    if (cfg_str_list(c, n, method_name_check, &v, &nv) != SL_OK)
        return;
    cfg_strv_free(cc->methods, cc->nmethods);
    cc->methods = v;
    cc->nmethods = nv;
}

#define CC(field) offsetof(policy_consensus_conf_t, field)
static const cfg_field_t consensus_fields[] = {
    {"methods", CFG_FN, .fn = consensus_methods, .required = 1},
    {"quorum", CFG_U32, CC(quorum), 1, POOL_MAX_ENDPOINTS},
    {"of", CFG_U32, CC(of), 2, POOL_MAX_ENDPOINTS},
};
#undef CC

/* quorum and of stay 0 when left out: cfg_net_chain_check fills them
 * once the endpoints are counted. */
void cfg_net_consensus(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_map_decode(c, n, consensus_fields, NFIELDS(consensus_fields), &((pool_network_conf_t *)target)->consensus);
}

/* Each method: known on this chain (its table or the network's methods:),
 * a read, and retry-safe: the call goes to several endpoints at once. */
static void consensus_check_methods(cfg_loader_t *c, yaml_node_t *list, const pool_network_conf_t *net)
{
    const policy_consensus_conf_t *cc = &net->consensus;
    yaml_node_item_t *items;
    size_t ni = cfg_items(c, list, &items);
    for (size_t i = 0; i < cc->nmethods && i < ni; i++) {
        const char *name = cc->methods[i];
        const policy_method_t *m =
            policy_method_lookup_in(net->method_overrides, net->nmethod_overrides, net->chain, name, strlen(name));
        int line = cfg_line(cfg_node(c, items[i]));
        size_t mark = cfg_push_index(c, i);
        if (m->name[0] == '\0')
            cfg_loader_error(c, line, "'%s' is no method sluice knows on %s (declare it under methods: to compare it)",
                         name, policy_chain_name(net->chain));
        else if (m->cls != POLICY_CLASS_READ && m->cls != POLICY_CLASS_SIMULATE && m->cls != POLICY_CLASS_CONFIRM)
            cfg_loader_error(c, line, "'%s' is a %s: only reads are compared (the call goes to several endpoints)", name,
                         policy_method_class_name(m->cls));
        else if (!m->retry_safe)
            cfg_loader_error(c, line, "'%s' is not retry-safe (it answers per node): it cannot be compared across "
                                  "endpoints", name);
        for (size_t k = 0; k < i; k++)
            if (strcmp(cc->methods[k], name) == 0)
                cfg_loader_error(c, line, "'%s' is listed twice", name);
        cfg_pop(c, mark);
    }
}

static void consensus_check(cfg_loader_t *c, yaml_node_t *n, pool_network_conf_t *net)
{
    policy_consensus_conf_t *cc = &net->consensus;
    yaml_node_t *node = cfg_get(c, n, "consensus");
    if (node == NULL || cc->methods == NULL)
        return; /* left out, or already reported */
    size_t mark = cfg_push(c, "consensus");
    yaml_node_t *list = cfg_get(c, node, "methods");
    size_t mm = cfg_push(c, "methods");
    if (cc->nmethods == 0)
        cfg_loader_error(c, cfg_line(list), "no methods: name the methods to compare, or leave consensus out");
    consensus_check_methods(c, list, net);
    cfg_pop(c, mm);
    uint32_t endpoints = (uint32_t)net->nendpoints;
    if (cc->of == 0)
        cc->of = endpoints < 3 ? endpoints : 3;
    if (cc->quorum == 0)
        cc->quorum = cc->of / 2 + 1;
    yaml_node_t *of = cfg_get(c, node, "of"), *quorum = cfg_get(c, node, "quorum");
    if (endpoints < 2)
        cfg_loader_error(c, cfg_line(node), "consensus needs at least 2 endpoints (this network has %u)", endpoints);
    else if (cc->of > endpoints)
        cfg_loader_error(c, cfg_line(of != NULL ? of : node),
                     "consensus.of (%u) must be at most the network's endpoints (%u)", cc->of, endpoints);
    else if (cc->quorum > cc->of)
        cfg_loader_error(c, cfg_line(quorum != NULL ? quorum : node),
                     "consensus.quorum (%u) must be at most consensus.of (%u)", cc->quorum, cc->of);
    cfg_pop(c, mark);
}

/* ---- what depends on the chain ---- */

static const struct {
    const char *key;
    policy_chain_t chain;         /* the one chain it is for */
    const char *instead;          /* what the other chain says */
} chain_keys[] = {
    {"chain_id", POLICY_CHAIN_ETHEREUM, "a solana network names genesis_hash"},
    {"max_lag_blocks", POLICY_CHAIN_ETHEREUM, "use max_lag_slots"},
    {"max_logs_split", POLICY_CHAIN_ETHEREUM, "Solana has no eth_getLogs"},
    {"genesis_hash", POLICY_CHAIN_SOLANA, "an ethereum network names chain_id"},
    {"max_lag_slots", POLICY_CHAIN_SOLANA, "use max_lag_blocks"},
};

static void wrong_chain_keys(cfg_loader_t *c, yaml_node_t *n, const pool_network_conf_t *net)
{
    for (size_t i = 0; i < NFIELDS(chain_keys); i++) {
        yaml_node_t *v = cfg_get(c, n, chain_keys[i].key);
        if (v == NULL || chain_keys[i].chain == net->chain)
            continue;
        size_t mark = cfg_push(c, chain_keys[i].key);
        cfg_loader_error(c, cfg_line(v), "%s is for %s networks (this one is %s): %s", chain_keys[i].key,
                     policy_chain_name(chain_keys[i].chain), policy_chain_name(net->chain), chain_keys[i].instead);
        cfg_pop(c, mark);
    }
}

/* An endpoint's max_logs_blocks: refused on Solana, else its cost profile's
 * when left out. */
static void endpoint_logs_blocks(cfg_loader_t *c, yaml_node_t *n, pool_network_conf_t *net)
{
    yaml_node_t *list = cfg_get(c, n, "endpoints");
    yaml_node_item_t *items = NULL;
    size_t ni = list != NULL && list->type == YAML_SEQUENCE_NODE ? cfg_items(c, list, &items) : 0;
    for (size_t i = 0; i < net->nendpoints; i++) {
        pool_endpoint_conf_t *ep = &net->endpoints[i];
        int given = ep->max_logs_blocks != CFG_LOGS_BLOCKS_UNSET;
        if (given && net->chain != POLICY_CHAIN_ETHEREUM && i < ni) {
            yaml_node_t *v = cfg_get(c, cfg_node(c, items[i]), "max_logs_blocks");
            size_t mark = cfg_push(c, "endpoints");
            cfg_push_index(c, i);
            cfg_push(c, "max_logs_blocks");
            cfg_loader_error(c, cfg_line(v != NULL ? v : list), "max_logs_blocks is for ethereum networks (this one "
                                                               "is %s): Solana has no eth_getLogs",
                         policy_chain_name(net->chain));
            cfg_pop(c, mark);
        }
        if (!given || net->chain != POLICY_CHAIN_ETHEREUM)
            ep->max_logs_blocks =
                net->chain == POLICY_CHAIN_ETHEREUM ? policy_logsplit_default_blocks(ep->cost_profile) : 0;
    }
}

void cfg_net_chain_check(cfg_loader_t *c, yaml_node_t *n, pool_network_conf_t *net)
{
    if (n == NULL || n->type != YAML_MAPPING_NODE)
        return; /* already reported by the mapping decoder */
    if (net->max_head_lead == CFG_HEAD_LEAD_UNSET)
        net->max_head_lead = net->chain == POLICY_CHAIN_SOLANA ? CFG_DEFAULT_MAX_HEAD_LEAD_SLOTS
                                                               : CFG_DEFAULT_MAX_HEAD_LEAD_BLOCKS;
    wrong_chain_keys(c, n, net);
    endpoint_logs_blocks(c, n, net);
    consensus_check(c, n, net);
}

void cfg_net_chain_dispose(pool_network_conf_t *net)
{
    free(net->genesis_hash);
    net->genesis_hash = NULL;
    cfg_strv_free(net->consensus.methods, net->consensus.nmethods);
    net->consensus.methods = NULL;
    net->consensus.nmethods = 0;
}
