/* admin/admin_metrics.c: GET /metrics, Prometheus text format 0.0.4.
 *
 * Everything comes from state/: counters are every worker's slots summed,
 * so any worker answers with the whole gateway's numbers. Request counters
 * with a zero value are left out (methods x outcomes would be thousands of
 * series). Label values are network names, endpoint ids and table method
 * names: all validated to [A-Za-z0-9_.-], so they need no escaping. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin_int.h"
#include "base/sl_buf.h"
#include "base/sl_time.h"
#include "policy/breaker.h"
#include "policy/method.h"
#include "state/state_counters.h"
#include "state/state_key.h"
#include "state/state_sum.h"

static void help(sl_buf_t *b, const char *name, const char *type, const char *text)
{
    sl_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

static void requests(admin_t *a, sl_buf_t *b)
{
    help(b, "sluice_requests_total", "counter", "JSON-RPC calls answered, by network, method and outcome.");
    state_counters_rec_t *sum = sl_xmalloc(sizeof(*sum));
    for (size_t i = 0; i < a->conf.nnetworks; i++) {
        const pool_network_conf_t *net = &a->conf.networks[i];
        size_t nmethods;
        const policy_method_t *table = policy_method_table(net->chain, &nmethods);
        uint32_t want = (uint32_t)((nmethods + 1) * STATE_REQ_OUTCOME_COUNT);
        state_counters_sum(a->conf.state, STATE_COUNTERS_REQUESTS, net->name, NULL, a->conf.nworkers, want, sum);
        for (uint32_t k = 0; k < want; k++) {
            if (sum->v[k] == 0)
                continue;
            size_t m = k / STATE_REQ_OUTCOME_COUNT;
            sl_buf_printf(b, "sluice_requests_total{network=\"%s\",method=\"%s\",outcome=\"%s\"} %llu\n", net->name,
                          m < nmethods ? table[m].name : "other",
                          state_req_outcome_name((state_req_outcome_t)(k % STATE_REQ_OUTCOME_COUNT)),
                          (unsigned long long)sum->v[k]);
        }
    }
    free(sum);
}

#define LABELS "network=\"%s\",endpoint=\"%s\""

/* What subscriptions cost upstream, per network and kind (gateway/sub*.c,
 * state_sub_counter_t): bounded per network, not per distinct subscription. */
static void subscription_cost(admin_t *a, sl_buf_t *b)
{
    static const char *const kinds[] = {[STATE_SUB_POLLS_HEADS] = "heads", [STATE_SUB_POLLS_LOGS] = "logs",
                                        [STATE_SUB_POLLS_SLOT] = "slot", [STATE_SUB_POLLS_ACCOUNT] = "account",
                                        [STATE_SUB_POLLS_SIGNATURE] = "signature",
                                        [STATE_SUB_POLLS_SOL_LOGS] = "sol_logs", [STATE_SUB_POLLS_PROGRAM] = "program"};
    state_counters_rec_t *sum = sl_xmalloc(sizeof(*sum));
    sl_buf_t shared = SL_BUF_INIT;
    help(b, "sluice_subscription_upstream_calls_total", "counter",
         "Upstream calls subscription sources made, by network and kind: heads (the head follower's headers), "
         "logs (eth_getLogs: one per block once more than 4 filters share it), slot (getSlot), account "
         "(getMultipleAccounts, up to 100 accounts each), signature (getSignatureStatuses, up to 256 each), "
         "sol_logs (getSignaturesForAddress and getTransaction), program (getProgramAccounts); batch members "
         "counted one by one.");
    for (size_t i = 0; i < a->conf.nnetworks; i++) {
        const char *name = a->conf.networks[i].name;
        state_counters_sum(a->conf.state, STATE_COUNTERS_SUBS, name, NULL, a->conf.nworkers, STATE_SUBS_COUNTERS, sum);
        const uint64_t *cost = &sum->v[STATE_SUBS_COST];
        for (int k = 0; k < STATE_SUB_LOGS_SHARED; k++)
            sl_buf_printf(b, "sluice_subscription_upstream_calls_total{network=\"%s\",kind=\"%s\"} %llu\n", name,
                          kinds[k], (unsigned long long)cost[k]);
        sl_buf_printf(&shared, "sluice_subscription_logs_shared{network=\"%s\"} %llu\n", name,
                      (unsigned long long)cost[STATE_SUB_LOGS_SHARED]);
    }
    help(b, "sluice_subscription_logs_shared", "gauge",
         "Workers in which the network's logs sources share one unfiltered eth_getLogs per block (more than 4 "
         "distinct filters there); 0: each filter fetched on its own.");
    sl_buf_append(b, shared.base, shared.len);
    sl_buf_dispose(&shared);
    free(sum);
}

static void attempts(sl_buf_t *b, const admin_ep_view_t *v, size_t n)
{
    help(b, "sluice_upstream_attempts_total", "counter", "Upstream attempts, by endpoint and outcome.");
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < STATE_OUTCOME_COUNT; k++)
            sl_buf_printf(b, "sluice_upstream_attempts_total{" LABELS ",outcome=\"%s\"} %llu\n", v[i].net->name,
                          v[i].ep->id, state_outcome_name((state_outcome_t)k),
                          (unsigned long long)v[i].stats.outcomes[k]);
    help(b, "sluice_upstream_attempt_duration_seconds", "histogram", "Upstream attempt latency.");
    for (size_t i = 0; i < n; i++) {
        uint64_t cum = 0;
        for (int k = 0; k < STATE_LAT_BUCKETS; k++) {
            cum += v[i].stats.lat_hist[k];
            if (k + 1 < STATE_LAT_BUCKETS)
                sl_buf_printf(b, "sluice_upstream_attempt_duration_seconds_bucket{" LABELS ",le=\"%g\"} %llu\n",
                              v[i].net->name, v[i].ep->id, (double)state_lat_bounds_us[k] / 1e6,
                              (unsigned long long)cum);
            else
                sl_buf_printf(b, "sluice_upstream_attempt_duration_seconds_bucket{" LABELS ",le=\"+Inf\"} %llu\n",
                              v[i].net->name, v[i].ep->id, (unsigned long long)cum);
        }
        sl_buf_printf(b, "sluice_upstream_attempt_duration_seconds_sum{" LABELS "} %.6f\n", v[i].net->name,
                      v[i].ep->id, (double)v[i].stats.lat_sum_us / 1e6);
        sl_buf_printf(b, "sluice_upstream_attempt_duration_seconds_count{" LABELS "} %llu\n", v[i].net->name,
                      v[i].ep->id, (unsigned long long)cum);
    }
    help(b, "sluice_failovers_total", "counter", "Calls that moved on to another endpoint after an attempt here.");
    for (size_t i = 0; i < n; i++)
        sl_buf_printf(b, "sluice_failovers_total{" LABELS "} %llu\n", v[i].net->name, v[i].ep->id,
                      (unsigned long long)v[i].stats.failovers);
    static const struct {
        const char *name, *text;
        size_t offset;
    } counters[] = {
        {"sluice_hedges_sent_total", "Hedges (a read's second attempt, sent when the first was slow) sent here.",
         offsetof(state_stats_rec_t, hedges_sent)},
        {"sluice_hedges_won_total", "Hedges sent here whose answer was the one used.",
         offsetof(state_stats_rec_t, hedges_won)},
        {"sluice_hedges_cancelled_total", "Attempts here cancelled because the other attempt of a hedged read answered first.",
         offsetof(state_stats_rec_t, hedges_cancelled)},
        {"sluice_calls_coalesced_total", "Client calls answered by riding an identical call in flight to this endpoint.",
         offsetof(state_stats_rec_t, coalesced)},
        {"sluice_consensus_disagreements_total", "Answers here to a compared read (consensus:) that the quorum outvoted.",
         offsetof(state_stats_rec_t, consensus_disagreed)},
    };
    for (size_t c = 0; c < sizeof(counters) / sizeof(counters[0]); c++) {
        help(b, counters[c].name, "counter", counters[c].text);
        for (size_t i = 0; i < n; i++) {
            uint64_t val;
            memcpy(&val, (const char *)&v[i].stats + counters[c].offset, sizeof(val));
            sl_buf_printf(b, "%s{" LABELS "} %llu\n", counters[c].name, v[i].net->name, v[i].ep->id,
                          (unsigned long long)val);
        }
    }
}

/* Compared reads per network: each is counted at one endpoint (the answer
 * used, or the first answer of a call without a quorum), so the sums count calls. */
static void consensus(admin_t *a, sl_buf_t *b, const admin_ep_view_t *v, size_t n)
{
    help(b, "sluice_consensus_calls_total", "counter", "Compared reads (consensus:) by network and outcome.");
    for (size_t i = 0; i < a->conf.nnetworks; i++) {
        const pool_network_conf_t *net = &a->conf.networks[i];
        uint64_t agreed = 0, none = 0;
        for (size_t k = 0; k < n; k++)
            if (v[k].net == net) {
                agreed += v[k].stats.consensus_agreed;
                none += v[k].stats.consensus_none;
            }
        sl_buf_printf(b, "sluice_consensus_calls_total{network=\"%s\",outcome=\"agreed\"} %llu\n", net->name,
                      (unsigned long long)agreed);
        sl_buf_printf(b, "sluice_consensus_calls_total{network=\"%s\",outcome=\"no_consensus\"} %llu\n", net->name,
                      (unsigned long long)none);
    }
}

static uint64_t gauge_inflight(const admin_ep_view_t *v) { return v->inflight; }
static uint64_t gauge_max_inflight(const admin_ep_view_t *v)
{
    return v->ep->max_inflight ? v->ep->max_inflight : POOL_DEFAULT_MAX_INFLIGHT;
}
static uint64_t gauge_concurrency_reached(const admin_ep_view_t *v) { return v->concurrency_reached; }
static uint64_t gauge_drained(const admin_ep_view_t *v) { return v->rec.drained; }
static uint64_t gauge_usable(const admin_ep_view_t *v) { return (uint64_t)v->usable; }
static uint64_t gauge_demoted(const admin_ep_view_t *v) { return (uint64_t)v->demoted; }
static uint64_t count_demotions(const admin_ep_view_t *v) { return v->rec.demotions; }
static uint64_t gauge_ws_state(const admin_ep_view_t *v)
{
    if (v->ep->ws_url == NULL || v->rec.ws_state == STATE_WS_NONE)
        return 0;
    return v->rec.ws_renew_ms < sl_shared_ms() ? STATE_WS_DOWN : v->rec.ws_state; /* a claim run out: down */
}
static uint64_t count_ws_heads(const admin_ep_view_t *v) { return v->rec.ws_heads; }
static uint64_t count_ws_unconfirmed(const admin_ep_view_t *v) { return v->rec.ws_unconfirmed; }

static void health(sl_buf_t *b, const admin_ep_view_t *v, size_t n)
{
    help(b, "sluice_breaker_state", "gauge", "1 for the breaker's current state.");
    for (size_t i = 0; i < n; i++)
        for (int s = 0; s < POLICY_BREAKER_STATE_COUNT; s++)
            sl_buf_printf(b, "sluice_breaker_state{" LABELS ",state=\"%s\"} %d\n", v[i].net->name, v[i].ep->id,
                          policy_breaker_state_name((policy_breaker_state_t)s), v[i].rec.breaker == s);
    help(b, "sluice_breaker_transitions_total", "counter", "Times the breaker entered each state.");
    for (size_t i = 0; i < n; i++)
        for (int s = 0; s < POLICY_BREAKER_STATE_COUNT; s++)
            sl_buf_printf(b, "sluice_breaker_transitions_total{" LABELS ",to=\"%s\"} %llu\n", v[i].net->name,
                          v[i].ep->id, policy_breaker_state_name((policy_breaker_state_t)s),
                          (unsigned long long)v[i].rec.transitions[s]);
    static const struct {
        const char *name, *type, *text;
        uint64_t (*value)(const admin_ep_view_t *v);
    } gauges[] = {
        {"sluice_upstream_inflight", "gauge", "Requests in flight to the endpoint, all workers.", gauge_inflight},
        {"sluice_upstream_max_inflight", "gauge", "The endpoint's max_inflight (all workers together).",
         gauge_max_inflight},
        {"sluice_upstream_concurrency_reached", "gauge",
         "Most requests in flight to the endpoint at once, per worker since it started, summed over workers.",
         gauge_concurrency_reached},
        {"sluice_endpoint_drained", "gauge", "1 if the operator drained the endpoint.", gauge_drained},
        {"sluice_endpoint_usable", "gauge", "1 if the plan may send to the endpoint now.", gauge_usable},
        {"sluice_endpoint_demoted", "gauge",
         "1 while the endpoint is demoted: still usable, but tried last (timed out, or lost hedges in a row).",
         gauge_demoted},
        {"sluice_endpoint_demotions_total", "counter", "Times the endpoint was demoted.", count_demotions},
        {"sluice_upstream_ws_state", "gauge",
         "The endpoint's ws_url stream: 0 no ws_url (or not opened yet), 1 connecting, 2 connected, 3 down, "
         "4 refused (its socket is on another chain).",
         gauge_ws_state},
        {"sluice_upstream_ws_heads_total", "counter", "Heads received on the endpoint's ws_url stream.",
         count_ws_heads},
        {"sluice_upstream_ws_heads_unconfirmed_total", "counter",
         "Heads pushed on the endpoint's ws_url stream that an HTTP read of their height did not confirm (dropped).",
         count_ws_unconfirmed},
    };
    for (size_t g = 0; g < sizeof(gauges) / sizeof(gauges[0]); g++) {
        help(b, gauges[g].name, gauges[g].type, gauges[g].text);
        for (size_t i = 0; i < n; i++)
            sl_buf_printf(b, "%s{" LABELS "} %llu\n", gauges[g].name, v[i].net->name, v[i].ep->id,
                          (unsigned long long)gauges[g].value(&v[i]));
    }
}

/* The workers' own limits (STATE_SRV_*, one list per worker slot). Rows of
 * the same metric are adjacent: HELP and TYPE are written once. */
static const struct {
    const char *name, *type, *labels, *text;
    int max;                      /* the highest worker's value, not the sum */
    int ms;                       /* counted in ms, shown in seconds */
} srv_rows[STATE_SRV_COUNT] = {
    [STATE_SRV_CONNECTIONS] = {"sluice_client_connections", "gauge", NULL, "Client connections open."},
    [STATE_SRV_ACCEPTED] = {"sluice_client_connections_accepted_total", "counter", NULL,
                            "Client connections accepted."},
    [STATE_SRV_MAX_CONN_PAUSES] = {"sluice_accept_pauses_total", "counter", "reason=\"max_connections\"",
                                   "Times a worker stopped accepting: at server.max_connections, or after accept "
                                   "failed for want of descriptors or memory (EMFILE)."},
    [STATE_SRV_ACCEPT_ERRORS] = {"sluice_accept_pauses_total", "counter", "reason=\"accept_error\"", NULL},
    [STATE_SRV_WRITE_TIMEOUTS] = {"sluice_client_write_timeouts_total", "counter", NULL,
                                  "Client connections reset for taking no answer bytes for server.write_timeout_ms."},
    [STATE_SRV_BUFFERED_BYTES] = {"sluice_buffered_answer_bytes", "gauge", NULL,
                                  "Answer bytes held in memory (budget: server.max_buffered_bytes per worker)."},
    [STATE_SRV_BUFFERED_PEAK] = {"sluice_buffered_answer_bytes_peak", "gauge", NULL,
                                 "The most answer bytes one worker has held at once.", 1},
    [STATE_SRV_BUFFER_REFUSED] = {"sluice_requests_refused_total", "counter", "reason=\"buffered_bytes\"",
                                  "Requests refused by a worker's own limits: 503 at server.max_buffered_bytes or at a caller's "
                                  "share of it (server.max_buffered_share), "
                                  "431/414 over the header limits."},
    [STATE_SRV_SHARE_REFUSED] = {"sluice_requests_refused_total", "counter", "reason=\"buffered_bytes_share\"", NULL},
    [STATE_SRV_HEAD_REFUSED] = {"sluice_requests_refused_total", "counter", "reason=\"header_too_large\"", NULL},
    [STATE_SRV_STALLED_RESETS] = {"sluice_client_stalled_resets_total", "counter", NULL,
                                  "Client connections reset, before a call was refused for want of answer bytes, "
                                  "because they held answer bytes and had acknowledged none for "
                                  "server.stalled_reset_ms."},
    [STATE_SRV_ACCESS_DROPPED] = {"sluice_access_log_dropped_total", "counter", NULL,
                                  "Access-log lines dropped because stderr took none while the worker's buffer "
                                  "(server.access_log_buffer_bytes) was full."},
    [STATE_SRV_PER_ADDRESS] = {"sluice_client_connections_closed_total", "counter", "reason=\"per_address\"",
                               "Client connections sluice closed itself: at accept, their address already at "
                               "server.max_connections_per_address; waiting on their client (idle, or a request "
                               "unfinished), the oldest, for a new connection at server.max_connections; no "
                               "whole first request within server.first_request_timeout_ms when accepted over "
                               "3/4 of max_connections."},
    [STATE_SRV_EVICTED] = {"sluice_client_connections_closed_total", "counter", "reason=\"evicted_idle\"", NULL},
    [STATE_SRV_FIRST_REQUEST_TIMEOUTS] = {"sluice_client_connections_closed_total", "counter",
                                          "reason=\"first_request_timeout\"", NULL},
    [STATE_SRV_ADMIN_CONNECTIONS] = {"sluice_admin_connections", "gauge", NULL,
                                     "Admin connections open (admin.max_connections per worker)."},
    [STATE_SRV_ADMIN_CONN_PAUSES] = {"sluice_accept_pauses_total", "counter", "reason=\"admin_max_connections\"",
                                     NULL},
    [STATE_SRV_ADMIN_RESERVE] = {"sluice_admin_reserve_accepts_total", "counter", NULL,
                                 "Admin connections accepted on the descriptor kept for them while the worker was "
                                 "out of descriptors (EMFILE)."},
    [STATE_SRV_WS_CONNECTIONS] = {"sluice_websocket_connections", "gauge", NULL, "WebSocket connections open."},
    [STATE_SRV_WS_MESSAGES_IN] = {"sluice_websocket_messages_total", "counter", "direction=\"in\"",
                                  "WebSocket messages: client calls and batches in, answers out."},
    [STATE_SRV_WS_MESSAGES_OUT] = {"sluice_websocket_messages_total", "counter", "direction=\"out\"", NULL},
    [STATE_SRV_WS_SLOW_CLOSES] = {"sluice_websocket_closed_total", "counter", "reason=\"slow_reader\"",
                                  "WebSocket connections sluice closed: 1008 for answers queued past "
                                  "server.ws_max_queued_bytes (a client that does not read), or nothing received, "
                                  "pongs included, for server.ws_idle_timeout_ms."},
    [STATE_SRV_WS_IDLE_CLOSES] = {"sluice_websocket_closed_total", "counter", "reason=\"idle\"", NULL},
    [STATE_SRV_WS_REFUSED] = {"sluice_websocket_refused_total", "counter", NULL,
                              "WebSocket upgrades refused at server.ws_max_connections or "
                              "server.ws_max_connections_per_identity."},
    [STATE_SRV_SUBS_NEWHEADS] = {"sluice_subscriptions", "gauge", "kind=\"newHeads\"",
                                 "Client subscriptions open over WebSocket, by kind."},
    [STATE_SRV_SUBS_LOGS] = {"sluice_subscriptions", "gauge", "kind=\"logs\"", NULL},
    [STATE_SRV_SUBS_SLOT] = {"sluice_subscriptions", "gauge", "kind=\"slot\"", NULL},
    [STATE_SRV_SUBS_ROOT] = {"sluice_subscriptions", "gauge", "kind=\"root\"", NULL},
    [STATE_SRV_SUBS_SIGNATURE] = {"sluice_subscriptions", "gauge", "kind=\"signature\"", NULL},
    [STATE_SRV_SUBS_ACCOUNT] = {"sluice_subscriptions", "gauge", "kind=\"account\"", NULL},
    [STATE_SRV_SUBS_SOL_LOGS] = {"sluice_subscriptions", "gauge", "kind=\"sol_logs\"", NULL},
    [STATE_SRV_SUBS_PROGRAM] = {"sluice_subscriptions", "gauge", "kind=\"program\"", NULL},
    [STATE_SRV_SUBS_PENDING] = {"sluice_subscriptions", "gauge", "kind=\"newPendingTransactions\"", NULL},
    [STATE_SRV_SUB_NOTIFICATIONS] = {"sluice_subscription_notifications_total", "counter", NULL,
                                     "Subscription notifications sent to clients (one per subscriber)."},
    [STATE_SRV_SUB_BACKFILLED] = {"sluice_subscription_heights_total", "counter", "how=\"backfilled\"",
                                  "Heights a newHeads source fetched by number because the head moved by more "
                                  "than one (backfilled), skipped past the backfill bound (128), or sent again "
                                  "because a reorg replaced them."},
    [STATE_SRV_SUB_SKIPPED] = {"sluice_subscription_heights_total", "counter", "how=\"skipped\"", NULL},
    [STATE_SRV_SUB_REORGED] = {"sluice_subscription_heights_total", "counter", "how=\"reorged\"", NULL},
    [STATE_SRV_SUB_LOGS_SENT] = {"sluice_subscription_logs_total", "counter", NULL,
                                 "Logs a logs source notified (those sent again as removed included)."},
    [STATE_SRV_SUB_LOGS_SKIPPED] = {"sluice_subscription_logs_skipped_total", "counter", NULL,
                                    "Logs subscriptions ended with an error naming the first block whose logs "
                                    "they could not deliver (eth_getLogs failing past server.ws_logs_retry_s, "
                                    "more than 256 blocks waiting, 128 heights behind, or a reorg deeper than "
                                    "the blocks kept). One per subscription ended."},
    [STATE_SRV_SUB_REFUSED] = {"sluice_subscriptions_refused_total", "counter", NULL,
                               "Subscribe calls refused at server.ws_max_subscriptions_per_connection, "
                               "server.ws_max_subscriptions_per_identity or server.ws_max_sources_per_identity."},
    [STATE_SRV_SUB_RESUMED] = {"sluice_subscription_resumes_total", "counter", "outcome=\"resumed\"",
                               "Subscriptions held after their socket closed (server.ws_resume): taken over by "
                               "the same caller's same subscribe (resumed), found past "
                               "server.ws_resume_s (expired), more than 128 heights behind so started from the "
                               "head (too_far), or dropped past the bounds of held subscriptions (dropped)."},
    [STATE_SRV_SUB_RESUME_EXPIRED] = {"sluice_subscription_resumes_total", "counter", "outcome=\"expired\"", NULL},
    [STATE_SRV_SUB_RESUME_TOO_FAR] = {"sluice_subscription_resumes_total", "counter", "outcome=\"too_far\"", NULL},
    [STATE_SRV_SUB_RESUME_DROPPED] = {"sluice_subscription_resumes_total", "counter", "outcome=\"dropped\"", NULL},
    [STATE_SRV_SUB_TX_SKIPPED] = {"sluice_subscription_transactions_skipped_total", "counter", NULL,
                                  "Transactions a Solana logsSubscribe source could not tell: more than 1,000 new "
                                  "between two polls (a node's page), or listed but unreadable for 30 polls."},
    [STATE_SRV_SUB_PASS_SOURCES] = {"sluice_subscription_passthrough_sources", "gauge", NULL,
                                    "Passthrough subscription sources (newPendingTransactions, Solana logs and "
                                    "program) running: one per distinct params per worker."},
    [STATE_SRV_SUB_PASS_SOCKETS] = {"sluice_subscription_upstream_sockets", "gauge", NULL,
                                    "Upstream WebSockets (ws_url) holding passthrough subscriptions."},
    [STATE_SRV_SUB_PASS_WAITING] = {"sluice_subscription_passthrough_waiting", "gauge", NULL,
                                    "Passthrough sources with no upstream subscription now (no usable ws "
                                    "endpoint): their clients stay subscribed and resume when one is back."},
    [STATE_SRV_SUB_PASS_RELAYED] = {"sluice_subscription_passthrough_relayed_total", "counter", NULL,
                                    "Upstream notifications relayed by passthrough sources (each goes to every "
                                    "subscriber of its source)."},
    [STATE_SRV_SUB_PASS_FAILOVERS] = {"sluice_subscription_passthrough_failovers_total", "counter", NULL,
                                      "Passthrough sources subscribed again at another endpoint after a loss."},
    [STATE_SRV_SUB_PASS_UNSOURCED_MS] = {"sluice_subscription_passthrough_unsourced_seconds_total", "counter", NULL,
                                         "Seconds passthrough sources spent without an upstream subscription "
                                         "(summed over sources).", .ms = 1},
    [STATE_SRV_REQ_HTTP1] = {"sluice_client_requests_total", "counter", "protocol=\"http1\"",
                             "Client HTTP requests by protocol: HTTP/1.x plain, HTTP/1.x on TLS (server.tls), "
                             "HTTP/2 (on TLS, by ALPN). WebSocket upgrades count as the HTTP/1.1 request they are."},
    [STATE_SRV_REQ_HTTP1_TLS] = {"sluice_client_requests_total", "counter", "protocol=\"http1_tls\"", NULL},
    [STATE_SRV_REQ_H2] = {"sluice_client_requests_total", "counter", "protocol=\"h2\"", NULL},
    [STATE_SRV_RAPID_RESETS] = {"sluice_client_connections_closed_total", "counter", "reason=\"rapid_reset\"", NULL},
    [STATE_SRV_ACCESS_KEY_REQUIRED] = {"sluice_access_refusals_total", "counter", "reason=\"key_required\"",
                                       "Calls refused by the access policy, by data.reason: without a key under "
                                       "access.anonymous: deny (401), outside a key's networks, methods, contracts "
                                       "or origins (403), without the JWT a key asks for (401), past a key's "
                                       "per_address limit or its credits (429). A batch counts each refused "
                                       "member."},
    [STATE_SRV_ACCESS_NETWORK] = {"sluice_access_refusals_total", "counter", "reason=\"network_not_allowed\"", NULL},
    [STATE_SRV_ACCESS_METHOD] = {"sluice_access_refusals_total", "counter", "reason=\"method_not_allowed\"", NULL},
    [STATE_SRV_ACCESS_CONTRACT] = {"sluice_access_refusals_total", "counter", "reason=\"contract_not_allowed\"",
                                   NULL},
    [STATE_SRV_ACCESS_ORIGIN] = {"sluice_access_refusals_total", "counter", "reason=\"origin_not_allowed\"", NULL},
    [STATE_SRV_ACCESS_JWT] = {"sluice_access_refusals_total", "counter", "reason=\"jwt_invalid\"", NULL},
    [STATE_SRV_ACCESS_PER_ADDRESS] = {"sluice_access_refusals_total", "counter", "reason=\"per_address\"", NULL},
    [STATE_SRV_ACCESS_KEY_CREDITS] = {"sluice_access_refusals_total", "counter", "reason=\"key_credits\"", NULL},
};

static void server_limits(admin_t *a, sl_buf_t *b)
{
    uint64_t sum[STATE_SRV_COUNT] = {0};
    state_counters_rec_t *rec = sl_xmalloc(sizeof(*rec));
    for (unsigned slot = 1; slot <= a->conf.nworkers; slot++) {
        char key[STATE_KEY_MAX];
        state_key_server(key, sizeof(key), slot);
        if (state_counters_get(a->conf.state, key, rec) != SL_OK || rec->n != STATE_SRV_COUNT)
            continue;
        for (int k = 0; k < STATE_SRV_COUNT; k++)
            sum[k] = srv_rows[k].max ? (rec->v[k] > sum[k] ? rec->v[k] : sum[k]) : sum[k] + rec->v[k];
    }
    free(rec);
    for (int k = 0; k < STATE_SRV_COUNT; k++) {
        if (srv_rows[k].text != NULL)
            help(b, srv_rows[k].name, srv_rows[k].type, srv_rows[k].text);
        if (srv_rows[k].ms)
            sl_buf_printf(b, "%s %.3f\n", srv_rows[k].name, (double)sum[k] / 1000.0);
        else if (srv_rows[k].labels != NULL)
            sl_buf_printf(b, "%s{%s} %llu\n", srv_rows[k].name, srv_rows[k].labels, (unsigned long long)sum[k]);
        else
            sl_buf_printf(b, "%s %llu\n", srv_rows[k].name, (unsigned long long)sum[k]);
    }
}

/* Shared state's health: workers enforcing locally, and the limit cells. */
static void state_health(admin_t *a, sl_buf_t *b)
{
    uint64_t on[STATE_PART_COUNT] = {0}, decisions[STATE_PART_COUNT] = {0};
    state_counters_rec_t *rec = sl_xmalloc(sizeof(*rec));
    if (state_read_begin(a->conf.state) == SL_OK) {
        for (unsigned slot = 1; slot <= a->conf.nworkers; slot++) {
            char key[STATE_KEY_MAX];
            state_key_degraded(key, sizeof(key), slot);
            if (state_counters_get(a->conf.state, key, rec) != SL_OK || rec->n != STATE_DEGRADED_COUNTERS)
                continue;
            for (int p = 0; p < STATE_PART_COUNT; p++) {
                on[p] += rec->v[2 * p];
                decisions[p] += rec->v[2 * p + 1];
            }
        }
        state_read_end(a->conf.state);
    }
    free(rec);
    help(b, "sluice_state_degraded_workers", "gauge",
         "Workers enforcing client limits or credit budgets, or probing for their host (leases), alone because "
         "shared state failed.");
    for (int p = 0; p < STATE_PART_COUNT; p++)
        sl_buf_printf(b, "sluice_state_degraded_workers{part=\"%s\"} %llu\n", state_part_name((state_part_t)p),
                      (unsigned long long)on[p]);
    help(b, "sluice_state_local_decisions_total", "counter",
         "Calls decided by a worker's own share of a limit or budget (leases: probes sent for this host alone) "
         "while shared state failed.");
    for (int p = 0; p < STATE_PART_COUNT; p++)
        sl_buf_printf(b, "sluice_state_local_decisions_total{part=\"%s\"} %llu\n",
                      state_part_name((state_part_t)p), (unsigned long long)decisions[p]);
    help(b, "sluice_limit_cells", "gauge", "Client-limit cells stored (GCRA, shared by the workers).");
    sl_buf_printf(b, "sluice_limit_cells %zu\n", state_cells_count(a->conf.state));
    help(b, "sluice_limit_cells_max", "gauge", "The most client-limit cells kept (state.max_limit_cells).");
    sl_buf_printf(b, "sluice_limit_cells_max %zu\n", state_cells_max(a->conf.state));
}

int admin_route_metrics(admin_t *a, h2o_req_t *req)
{
    sl_buf_t b = SL_BUF_INIT;
    size_t n;
    admin_ep_view_t *v = admin_view_collect(a, &n);
    if (state_read_begin(a->conf.state) == SL_OK) {
        requests(a, &b);
        subscription_cost(a, &b);
        server_limits(a, &b);
        state_read_end(a->conf.state);
    }
    attempts(&b, v, n);
    consensus(a, &b, v, n);
    health(&b, v, n);
    admin_credits_metrics(a, &b, v, n);
    admin_cluster_metrics(a, &b);
    admin_networks_metrics(a, &b, v, n);
    admin_cache_metrics(a, &b);
    admin_keys_metrics(a, &b);
    admin_subs_metrics(a, &b);
    admin_chain_metrics(a, &b, v, n);
    size_t used, size;
    state_usage(a->conf.state, &used, &size);
    help(&b, "sluice_state_map_used_bytes", "gauge", "Bytes of the LMDB map in use.");
    sl_buf_printf(&b, "sluice_state_map_used_bytes %zu\n", used);
    help(&b, "sluice_state_map_size_bytes", "gauge", "Size of the LMDB map (state.map_size_mb).");
    sl_buf_printf(&b, "sluice_state_map_size_bytes %zu\n", size);
    state_health(a, &b);
    /* a gauge: a sequence number is a position, not a count (promtool wants
     * counters named _total) */
    help(&b, "sluice_events_last_seq", "gauge", "Sequence number of the newest event.");
    sl_buf_printf(&b, "sluice_events_last_seq %llu\n", (unsigned long long)state_events_last_seq(a->conf.state));
    admin_view_free(v, n);
    int rc = admin_send_text(req, 200, "text/plain; version=0.0.4", b.base ? b.base : "", b.len);
    sl_buf_dispose(&b);
    return rc;
}
