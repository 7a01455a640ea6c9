/* gateway/gw_sub_sol_conf.c: the checks Solana's subscription normalisers
 * share (gw_sub_int.h): a commitment's rank, a base58 string's shape, the
 * config object's commitment. Called by gw_sub_sol.c, gw_sub_sol_logs.c
 * and gw_sub_sol_program.c. */
#include <string.h>

#include "gateway/gw_sub_int.h"

#define B58 "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

const char *const gw_sub_sol_levels[3] = {"processed", "confirmed", "finalized"};

int gw_sub_sol_level(const char *s)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(s, gw_sub_sol_levels[i]) == 0)
            return i;
    return -1;
}

int gw_sub_sol_is_b58(const char *s, size_t min, size_t max)
{
    size_t n = strlen(s);
    return n >= min && n <= max && strspn(s, B58) == n;
}

int gw_sub_sol_commitment(const cJSON *cfg)
{
    const cJSON *c = cJSON_IsObject(cfg) ? cJSON_GetObjectItemCaseSensitive(cfg, "commitment") : NULL;
    if (c == NULL)
        return 2;
    return cJSON_IsString(c) ? gw_sub_sol_level(c->valuestring) : -1;
}
