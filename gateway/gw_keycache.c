/* gateway/gw_keycache.c: presented key bytes -> the key they resolved to
 * (gw_keycache.h). */
#include "gateway/gw_keycache.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"

typedef struct slot {
    uint64_t hash;                /* of the bytes (0 with len 0: empty) */
    uint64_t gen;                 /* the run-time keys' generation it was resolved at */
    const cfg_key_conf_t *conf;
    uint8_t len;
    char key[GW_KEYCACHE_KEY_MAX];
} slot_t;

struct gw_keycache {
    slot_t slots[GW_KEYCACHE_SLOTS];
};

/* FNV-1a: a slot's index and a first filter; the bytes are compared in full. */
static uint64_t hash_of(const char *key, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)key[i]) * 0x100000001b3ULL;
    return h;
}

gw_keycache_t *gw_keycache_create(void)
{
    return sl_xcalloc(1, sizeof(gw_keycache_t));
}

void gw_keycache_destroy(gw_keycache_t *c)
{
    if (c != NULL)
        OPENSSL_cleanse(c, sizeof(*c)); /* it holds secrets */
    free(c);
}

const cfg_key_conf_t *gw_keycache_get(const gw_keycache_t *c, const char *key, size_t len, uint64_t gen)
{
    if (c == NULL || len == 0 || len > GW_KEYCACHE_KEY_MAX)
        return NULL;
    uint64_t h = hash_of(key, len);
    const slot_t *s = &c->slots[h & (GW_KEYCACHE_SLOTS - 1)];
    if (s->len != len || s->hash != h || s->gen != gen || CRYPTO_memcmp(s->key, key, len) != 0)
        return NULL;
    return s->conf;
}

void gw_keycache_put(gw_keycache_t *c, const char *key, size_t len, uint64_t gen, const cfg_key_conf_t *conf)
{
    if (c == NULL || conf == NULL || len == 0 || len > GW_KEYCACHE_KEY_MAX)
        return;
    uint64_t h = hash_of(key, len);
    slot_t *s = &c->slots[h & (GW_KEYCACHE_SLOTS - 1)];
    s->hash = h;
    s->gen = gen;
    s->conf = conf;
    s->len = (uint8_t)len;
    memcpy(s->key, key, len);
}
