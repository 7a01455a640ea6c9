#include "gateway/gw_identity.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <string.h>

int gw_identity_is_key(const char *seg, size_t len)
{
    return len >= 3 && memcmp(seg, GW_KEY_PREFIX, 3) == 0;
}

void gw_identity_hash(const char *key, size_t len, char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)key, len, md);
    for (size_t i = 0; i < SHA256_DIGEST_LENGTH; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[64] = '\0';
}

gw_identity_result_t gw_identity_resolve(const gw_config_t *cfg, const char *key, size_t len,
                                         const gw_key_conf_t **out)
{
    *out = NULL;
    if (key == NULL || len == 0)
        return GW_IDENTITY_ANONYMOUS;
    char hex[65];
    gw_identity_hash(key, len, hex);
    /* compare against every entry, so timing says nothing about which matched */
    const gw_key_conf_t *found = NULL;
    for (size_t i = 0; i < cfg->nkeys; i++)
        if (CRYPTO_memcmp(hex, cfg->keys[i].sha256, 64) == 0)
            found = &cfg->keys[i];
    *out = found;
    return found != NULL ? GW_IDENTITY_KEY : GW_IDENTITY_UNKNOWN_KEY;
}
