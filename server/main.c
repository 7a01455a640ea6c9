/* sluice: one JSON-RPC URL for many providers.
 *
 *   sluice -c sluice.yaml            run the gateway (foreground, logs on stderr)
 *   sluice --check -c sluice.yaml    validate the config; every error with its line
 *   sluice --check --connect -c F    ... and connect to the cluster's Redis, ask
 *                                    the endpoints their chain (srv_chainid.h) and
 *                                    try every ws_url (pool_askws.c)
 *   sluice key new [--tier T] [--name N]   print a new client key and its config entry
 *   sluice key list|revoke|new --api ...   the admin API's keys (srv_keycli.h)
 *   sluice --version */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "base/sl_log.h"
#include "server/srv_timeofday.h"
#include "state/state_cluster.h"
#include "server/srv_chainid.h"
#include "config/cfg.h"
#include "gateway/gw_identity.h"
#include "gateway/gw_tls.h"
#include "server/srv_keycli.h"
#include "server/srv_master.h"
#include "server/srv_reload.h"
#include "pool/pool.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: sluice -c FILE          run the gateway\n"
                 "       sluice --check -c FILE  validate a configuration\n"
                 "       sluice --check --connect -c FILE\n"
                 "                               ... and test the connection to the cluster's Redis\n"
                 "                               ask the endpoints which chain they are on, and\n"
                 "                               open every ws_url and ask it the same over WebSocket\n"
                 "       sluice key new [--tier TIER] [--name NAME]\n"
                 "                               print a new client key and its config entry\n"
                 "       sluice key list -c FILE [--admin HOST:PORT]\n"
                 "       sluice key revoke NAME -c FILE [--admin HOST:PORT]\n"
                 "       sluice key new --api -c FILE --name NAME --tier TIER [--admin HOST:PORT]\n"
                 "                               the keys of a running sluice, through its admin API\n"
                 "                               (token: SLUICE_ADMIN_TOKEN, else admin.token)\n"
                 "       sluice --version\n"
                 "\n"
                 "the manual is docs/ in the source tree: every configuration key in\n"
                 "docs/reference/config.md, errors, metrics and events beside it\n");
}

static int key_new(int argc, char **argv)
{
    const char *tier = "default", *name = "my-team";
    for (int i = 0; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--tier") == 0)
            tier = argv[i + 1];
        else if (strcmp(argv[i], "--name") == 0)
            name = argv[i + 1];
        else {
            usage(stderr);
            return 2;
        }
    }
    unsigned char raw[24];
    if (RAND_bytes(raw, sizeof(raw)) != 1) {
        fprintf(stderr, "sluice: no randomness available\n");
        return 1;
    }
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    char key[3 + sizeof(raw) + 1] = "sl_";
    for (size_t i = 0; i < sizeof(raw); i++)
        key[3 + i] = alphabet[raw[i] % (sizeof(alphabet) - 1)];
    key[3 + sizeof(raw)] = '\0';
    char hex[65];
    gw_identity_hash(key, strlen(key), hex);
    printf("key:    %s\n", key);
    printf("config: keys: [ { sha256: \"%s\", tier: %s, name: \"%s\" } ]\n", hex, tier, name);
    printf("use:    POST http://HOST:PORT/{network}/%s   (or header X-API-Key)\n", key);
    return 0;
}

static int load(const char *path, cfg_t **cfg)
{
    cfg_errors_t errs = {0};
    sl_err_t err = cfg_load(path, cfg, &errs);
    if (err != SL_OK) {
        cfg_errors_print(&errs, path, stderr);
        fprintf(stderr, "sluice: %s: %zu error(s)\n", path, errs.count);
        cfg_errors_dispose(&errs);
        return -1;
    }
    cfg_errors_dispose(&errs);
    return 0;
}

#define CONNECT_TIMEOUT_MS 2000

/* --check: what the response cache keeps, and what cache.unfinalized: head
 * costs upstream (docs/guide/cache.md). */
static void print_cache(const cfg_t *cfg)
{
    const cfg_cache_conf_t *c = &cfg->cache;
    if (!c->enabled) {
        printf("cache: off\n");
        return;
    }
    policy_cacheadmit_conf_t admit = cfg_cache_admit_conf(c);
    printf("cache: %u MB, answers up to %llu KiB (over 64 KiB on their second ask), a caller's insertions %u%% of it "
           "a minute; %s\n",
           c->max_mb, (unsigned long long)(admit.max_entry >> 10), c->caller_share_pct,
           c->unfinalized ? "unfinalized: head: above finalized, keyed by the head's hash; worker 1 of each host reads "
                            "each new head's block (one eth_getBlockByNumber per block per host), and nothing is "
                            "served from it while the head is above the last block read"
                          : "final answers only (at or below finalized, as two endpoints report it)");
}

/* --check --connect: the endpoints of networks with no chain_id agree on
 * one, or on another than the one the state folder keeps (opened only when
 * it is there already; the chain is read, never re-learned here). */
static int check_chain(const cfg_t *cfg, const char *path)
{
    char why[2048];
    state_t *st = NULL;
    state_conf_t sc = {cfg->state.path, cfg->state.map_size_mb, cfg->state.event_max_count,
                       cfg->state.event_max_age_hours * 3600, cfg->state.max_limit_cells};
    if (cfg->state.path != NULL && access(cfg->state.path, F_OK) == 0 && state_open(&sc, &st) != SL_OK)
        st = NULL;
    int rc = srv_chainid_learn(cfg, st, stdout, why, sizeof(why));
    if (st != NULL)
        state_close(st);
    if (rc != 0) {
        fprintf(stderr, "sluice: %s: %s\n", path, why);
        return 1;
    }
    return 0;
}

/* The network's configured chain identity in normal form (chain_id, Solana
 * genesis_hash), or NULL when none is configured. */
static const char *configured_chain(const pool_network_conf_t *c, char out[POLICY_CHAINID_MAX])
{
    if (c->chain == POLICY_CHAIN_ETHEREUM && c->has_chain_id) {
        snprintf(out, POLICY_CHAINID_MAX, "0x%" PRIx64, c->chain_id);
        return out;
    }
    return c->chain == POLICY_CHAIN_SOLANA ? c->genesis_hash : NULL;
}

/* --check: no config key has the name of an API key made at run time (the
 * state folder is opened only when it is there already). */
static int check_key_names(const cfg_t *cfg, const char *path)
{
    char why[512];
    state_t *st = NULL;
    state_conf_t sc = {cfg->state.path, cfg->state.map_size_mb, cfg->state.event_max_count,
                       cfg->state.event_max_age_hours * 3600, cfg->state.max_limit_cells};
    if (cfg->state.path != NULL && access(cfg->state.path, F_OK) == 0 && state_open(&sc, &st) != SL_OK)
        st = NULL;
    int clash = srv_reload_key_clash(cfg, st, why, sizeof(why));
    if (st != NULL)
        state_close(st);
    if (clash)
        fprintf(stderr, "sluice: %s: %s\n", path, why);
    return clash;
}

/* --check --connect: every ws_url opens (connect, TLS, the Upgrade, its
 * Sec-WebSocket-Accept) and answers one chain id call over the socket; a
 * failure names the network, the endpoint and the step, never the URL. */
static int check_ws(const cfg_t *cfg, const char *path)
{
    size_t n = cfg->nnetworks;
    pool_askws_t *out = calloc((n ? n : 1) * POOL_MAX_ENDPOINTS, sizeof(*out));
    if (out == NULL || pool_ask_ws(cfg->networks, n, CONNECT_TIMEOUT_MS, out) != SL_OK) {
        fprintf(stderr, "sluice: %s: could not try the ws_urls (no process)\n", path);
        free(out);
        return 1;
    }
    int rc = 0;
    char want_buf[POLICY_CHAINID_MAX];
    for (size_t i = 0; i < n; i++)
        for (size_t e = 0; e < cfg->networks[i].nendpoints && e < POOL_MAX_ENDPOINTS; e++) {
            const pool_askws_t *x = &out[i * POOL_MAX_ENDPOINTS + e];
            const char *net = cfg->networks[i].name, *id = cfg->networks[i].endpoints[e].id;
            const char *want = configured_chain(&cfg->networks[i], want_buf);
            if (!x->tried)
                continue;
            if (x->ok && (want == NULL || strcmp(want, x->text) == 0))
                printf("network %s: endpoint %s: ws_url answers over WebSocket (chain %s)\n", net, id, x->text);
            else if (x->ok)
                fprintf(stderr, "sluice: %s: network %s: endpoint %s: ws_url is on chain %s, not the configured %s\n",
                        path, net, id, x->text, want);
            else
                fprintf(stderr, "sluice: %s: network %s: endpoint %s: ws_url: %s\n", path, net, id, x->text);
            rc |= !x->ok || (want != NULL && strcmp(want, x->text) != 0);
        }
    free(out);
    return rc;
}

/* --check --connect: 0 if the cluster's Redis answers as it should, the
 * endpoints agree on their chain and every ws_url answers over WebSocket. */
static int check_connect(const cfg_t *cfg, const char *path)
{
    if (check_chain(cfg, path) != 0 || check_ws(cfg, path) != 0)
        return 1;
    if (!cfg->has_cluster) {
        printf("%s: no cluster: section, nothing to connect to\n", path);
        return 0;
    }
    char why[400];
    sl_err_t err = state_cluster_probe(&cfg->cluster, CONNECT_TIMEOUT_MS, why, sizeof(why));
    if (err != SL_OK) {
        fprintf(stderr, "sluice: %s: cluster.redis %s: %s\n", path, cfg->cluster.url_shown, why);
        return 1;
    }
    printf("%s: cluster.redis %s answers: %s\n", path, cfg->cluster.url_shown, why);
    if (cfg->cache.enabled && cfg->cache.redis) {
        err = state_cluster_probe_memory(&cfg->cluster, CONNECT_TIMEOUT_MS, why, sizeof(why));
        if (err == SL_OK)
            printf("%s: cache.redis: %s\n", path, why);
        else /* a warning: the cache works, its bound is the operator's to set */
            fprintf(stderr, "sluice: %s: warning: cache.redis: %s\n", path, why);
    }
    return 0;
}

int main(int argc, char **argv)
{
    (void)srv_timeofday_shared(); /* h2o's timers in shared time, immune to wall-clock steps */
    cfg_set_tls_check(gw_tls_check); /* --check, start and reload load server.tls's pair */
    if (argc >= 3 && strcmp(argv[1], "key") == 0) {
        int api = strcmp(argv[2], "new") != 0;
        for (int i = 3; i < argc; i++)
            api |= strcmp(argv[i], "--api") == 0;
        return api ? srv_keycli_run(argc - 2, argv + 2) : key_new(argc - 3, argv + 3);
    }
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'}, {"check", no_argument, NULL, 'k'},
        {"version", no_argument, NULL, 'v'},      {"help", no_argument, NULL, 'h'},
        {"connect", no_argument, NULL, 'C'},
        {NULL, 0, NULL, 0},
    };
    const char *path = NULL;
    int check = 0, connect = 0, opt;
    while ((opt = getopt_long(argc, argv, "c:hv", opts, NULL)) != -1) {
        switch (opt) {
        case 'c': path = optarg; break;
        case 'k': check = 1; break;
        case 'C': connect = 1; break;
        case 'v': printf("sluice %s\n", SLUICE_VERSION); return 0;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (path == NULL || optind != argc || (connect && !check)) {
        usage(stderr);
        return 2;
    }
    cfg_t *cfg = NULL;
    if (load(path, &cfg) != 0)
        return 1;
    if (check && check_key_names(cfg, path)) {
        cfg_destroy(cfg);
        return 1;
    }
    if (check) {
        printf("%s: configuration OK (%zu network(s))\n", path, cfg->nnetworks);
        const cfg_server_conf_t *srv = &cfg->server;
        int tls = srv->tls.cert_file != NULL;
        printf("listeners: %s%s; WebSocket on it and %s%s; admin %s%s\n", tls ? "https://" : "http://", srv->listen,
               srv->ws_listen_off ? "no second listener (ws_listen: off)"
               : srv->ws_listen != NULL ? (tls ? "wss://" : "ws://")
                                         : "its port + 1 when free",
               srv->ws_listen_off || srv->ws_listen == NULL ? "" : srv->ws_listen,
               cfg->admin.listen != NULL ? "http://" : "off", cfg->admin.listen != NULL ? cfg->admin.listen : "");
        if (tls)
            printf("tls: %s (certificate sha256 %s), HTTP/2 by ALPN %s\n", srv->tls.cert_file, srv->tls.fingerprint,
                   srv->tls.http2 ? "on" : "off");
        print_cache(cfg);
        int rc = connect ? check_connect(cfg, path) : 0;
        cfg_destroy(cfg);
        return rc;
    }
    sl_log_setup((sl_log_level_t)cfg->log.level, cfg->log.json ? SL_LOG_JSON : SL_LOG_TEXT, "master");
    int rc = srv_master_run(cfg);
    cfg_destroy(cfg);
    return rc;
}
