/* state/state_cluster_floor.c: the floor of heads served on a network,
 * shared by the hosts of a cluster (state_cluster.h).
 *
 * Each host keeps the floor in LMDB ("chain/<network>", state_chain.c),
 * which its workers read before they serve a head (pool/pool_chain.c). A
 * worker that raises it there raises it in Redis too, with the floor script
 * (an atomic max per head kind), which publishes the floor to every host's
 * workers when it rose; each raises its host's copy on hearing it. The
 * script's answer, the cluster's floor, comes back the same way: one
 * worker per host (pool/) also runs it every second with its own floor, so
 * a message missed (a reconnect, a host that served alone while Redis was
 * away) is made good within that second, and the floors merge to the
 * highest either way. Nothing here runs per request: a head is shared once
 * per new head and host. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"
#include "base/sl_log.h"
#include "base/sl_time.h"
#include "state/state_cluster_int.h"
#include "state/state_int.h"

typedef struct floor_op {
    state_cluster_t *cl;
    char network[STATE_KEY_MAX];
} floor_op_t;

/* The host's copy raised to floor[] (never lowered: state_chain_raise). */
static void raise_copy(state_cluster_t *cl, const char *network, const uint64_t floor[STATE_CHAIN_KINDS])
{
    state_chain_rec_t merged;
    if (state_chain_raise(cl->st, network, floor, sl_wall_ms(), &merged) != SL_OK)
        sl_log_warn("cluster: cannot keep network %s's floor of heads served", network);
}

static void on_floor(void *data, redisReply *reply)
{
    floor_op_t *op = data;
    state_cluster_t *cl = op->cl;
    if (!cl->destroying && reply != NULL && reply->type == REDIS_REPLY_ERROR)
        state_cluster_link_failed(cl, reply->str);
    else if (!cl->destroying && reply != NULL && reply->type == REDIS_REPLY_ARRAY &&
             reply->elements == STATE_CHAIN_KINDS) {
        uint64_t floor[STATE_CHAIN_KINDS];
        for (size_t k = 0; k < STATE_CHAIN_KINDS; k++) {
            const redisReply *e = reply->element[k];
            floor[k] = e->type == REDIS_REPLY_STRING ? strtoull(e->str, NULL, 10) : 0;
        }
        raise_copy(cl, op->network, floor);
    }
    free(op);
}

int state_cluster_floor_raise(state_cluster_t *cl, const char *network, const uint64_t floor[STATE_CHAIN_KINDS])
{
    if (cl == NULL || !state_cluster_up(cl) || strlen(network) >= STATE_KEY_MAX || strchr(network, ' ') != NULL)
        return -1;
    char key[STATE_CLUSTER_PREFIX_MAX + STATE_KEY_MAX], f[STATE_CHAIN_KINDS][24];
    snprintf(key, sizeof(key), "%sfloor:%s", cl->conf->prefix, network);
    const char *argv[6 + STATE_CHAIN_KINDS] = {"EVALSHA", cl->sha[STATE_SCRIPT_FLOOR], "1", key, cl->channel, network};
    for (size_t k = 0; k < STATE_CHAIN_KINDS; k++) {
        snprintf(f[k], sizeof(f[k]), "%llu", (unsigned long long)floor[k]);
        argv[6 + k] = f[k];
    }
    size_t lens[6 + STATE_CHAIN_KINDS];
    for (size_t i = 0; i < 6 + STATE_CHAIN_KINDS; i++)
        lens[i] = strlen(argv[i]);
    floor_op_t *op = sl_xcalloc(1, sizeof(*op));
    op->cl = cl;
    snprintf(op->network, sizeof(op->network), "%s", network);
    if (state_redis_send(&cl->cmd, on_floor, op, (int)(6 + STATE_CHAIN_KINDS), argv, lens) != 0) {
        free(op);
        return -1;
    }
    return 0;
}

void state_cluster_floor_message(state_cluster_t *cl, const char *msg, size_t len)
{
    /* "f <network> <latest> <safe> <finalized>" */
    char text[STATE_KEY_MAX + 96], network[STATE_KEY_MAX];
    unsigned long long f[STATE_CHAIN_KINDS];
    if (len < 3 || len >= sizeof(text) || msg[0] != 'f' || msg[1] != ' ')
        return;
    memcpy(text, msg, len);
    text[len] = '\0';
    _Static_assert(STATE_CHAIN_KINDS == 3, "the floor message carries three kinds");
    char fmt[48];
    snprintf(fmt, sizeof(fmt), "f %%%zus %%llu %%llu %%llu", (size_t)STATE_KEY_MAX - 1);
    if (sscanf(text, fmt, network, &f[0], &f[1], &f[2]) != 4)
        return;
    uint64_t floor[STATE_CHAIN_KINDS] = {f[0], f[1], f[2]};
    raise_copy(cl, network, floor);
}
