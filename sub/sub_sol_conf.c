/* sub/sub_sol_conf.c: what Solana's subscription sources share
 * (sub_int.h): the normalisers' checks (a commitment's rank, a base58
 * string's shape, the config object's commitment) and the note of the
 * endpoint a poll was answered by. Called by sub_sol.c,
 * sub_sol_logs.c and sub_sol_program.c. */
#include <stdio.h>
#include <string.h>

#include "sub/sub_call.h"
#include "sub/sub_int.h"

#define B58 "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

const char *const sub_sol_levels[3] = {"processed", "confirmed", "finalized"};

int sub_sol_level(const char *s)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(s, sub_sol_levels[i]) == 0)
            return i;
    return -1;
}

int sub_sol_is_b58(const char *s, size_t min, size_t max)
{
    size_t n = strlen(s);
    return n >= min && n <= max && strspn(s, B58) == n;
}

int sub_sol_commitment(const cJSON *cfg)
{
    const cJSON *c = cJSON_IsObject(cfg) ? cJSON_GetObjectItemCaseSensitive(cfg, "commitment") : NULL;
    if (c == NULL)
        return 2;
    return cJSON_IsString(c) ? sub_sol_level(c->valuestring) : -1;
}

void sub_sol_note_endpoint(sub_source_t *src, const sub_call_t *c, char *endpoint, size_t cap)
{
    const char *ep = sub_call_endpoint(c, 0);
    if (ep == NULL || strcmp(ep, endpoint) == 0)
        return;
    /* a move away from an endpoint that failed in this call is a failover; the ranking's moves are not told */
    if (endpoint[0] != '\0' && sub_call_failed_at(c, endpoint))
        sub_source_changed(src->reg, src->net, src->kind->name, endpoint, ep, 0);
    snprintf(endpoint, cap, "%s", ep);
}
