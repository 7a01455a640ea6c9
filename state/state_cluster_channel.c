/* state/state_cluster_channel.c: what the cluster's channel carries, one
 * row per kind of message, and the door every message goes through. */
#include "state/state_cluster_int.h"

/* What the channel carries, by its first letter: a bare letter says "read
 * it again" (told), a letter and a space carry the change itself (message).
 * Anything else is not sluice's: ignored. */
static const struct {
    char letter;
    void (*told)(state_cluster_t *cl);
    void (*message)(state_cluster_t *cl, const char *msg, size_t len);
} channel_kinds[] = {
    {'x', state_cluster_events_told, NULL},  /* a host appended events */
    {'e', state_cluster_epapi_sync, state_cluster_ep_message}, /* run-time endpoints; an endpoint record */
    {'k', state_cluster_keys_told, NULL},    /* run-time API keys changed */
    {'f', NULL, state_cluster_floor_message}, /* a network's floor of heads rose */
    {'p', NULL, state_cluster_job_message},  /* a leased job's result */
    {'r', NULL, state_cluster_job_message},  /* a leased job handed back by a host that stopped */
    {'c', NULL, state_cache_redis_message},  /* a network's response cache purged */
};

void state_cluster_channel_tell(state_cluster_t *cl, const char *msg, size_t len)
{
    for (size_t i = 0; len > 0 && i < sizeof(channel_kinds) / sizeof(channel_kinds[0]); i++) {
        if (msg[0] != channel_kinds[i].letter)
            continue;
        if (len == 1 && channel_kinds[i].told != NULL) {
            channel_kinds[i].told(cl);
            return;
        }
        if (len > 2 && channel_kinds[i].message != NULL) {
            channel_kinds[i].message(cl, msg, len);
            return;
        }
    }
}
