/* gateway/gw_jwt.c: a key's JWT, read and verified (gateway/gw_jwt.h). */
#include "gateway/gw_jwt.h"

#include <cjson/cJSON.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/sl_buf.h"
#include "base/sl_log.h"
#include "policy/jwt.h"

#define JWT_MAX 8192              /* a token longer than this is refused */
#define AUD_MAX 16

struct gw_jwt_keys {
    const char **paths;           /* the config's file names, or a run-time key's PEM text (gw_keys.c keeps
                                     every entry for the worker's life) */
    EVP_PKEY **pkeys;             /* NULL: could not be read (logged once) */
    size_t n;
};

/* The key's public key: its file's, or its PEM text's (a key made at run
 * time), read once per worker and kept by that string. */
static EVP_PKEY *public_key(gw_jwt_keys_t **keys, const cfg_jwt_conf_t *jwt)
{
    const char *path = jwt->public_key_pem != NULL ? jwt->public_key_pem : jwt->public_key_file;
    if (*keys == NULL)
        *keys = sl_xcalloc(1, sizeof(**keys));
    gw_jwt_keys_t *k = *keys;
    for (size_t i = 0; i < k->n; i++)
        if (strcmp(k->paths[i], path) == 0)
            return k->pkeys[i];
    EVP_PKEY *p = NULL;
    if (jwt->public_key_pem != NULL) {
        BIO *bio = BIO_new_mem_buf(path, -1);
        p = bio != NULL ? PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL) : NULL;
        BIO_free(bio);
        if (p == NULL)
            sl_log_error("jwt.public_key_pem of a key made at run time: no PEM public key could be read; "
                         "its calls are refused");
    } else {
        FILE *f = fopen(path, "r");
        if (f != NULL) {
            p = PEM_read_PUBKEY(f, NULL, NULL, NULL);
            fclose(f);
        }
        if (p == NULL)
            sl_log_error("jwt.public_key_file '%s': no PEM public key could be read; its key's calls are refused", path);
    }
    k->paths = sl_xrealloc(k->paths, (k->n + 1) * sizeof(*k->paths));
    k->pkeys = sl_xrealloc(k->pkeys, (k->n + 1) * sizeof(*k->pkeys));
    k->paths[k->n] = path;
    k->pkeys[k->n++] = p;
    return p;
}

/* base64url (no padding) of s[0..len) into out (room for len bytes); -1 if not. */
static long b64url(const char *s, size_t len, unsigned char *out)
{
    uint32_t acc = 0;
    int bits = 0;
    long n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        int v = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52
              : c == '-' ? 62 : c == '_' ? 63 : -1;
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[n++] = (unsigned char)(acc >> bits);
        }
    }
    return len % 4 == 1 ? -1 : n;
}

static cJSON *b64_json(const char *s, size_t len)
{
    unsigned char *buf = sl_xmalloc(len + 1);
    long n = b64url(s, len, buf);
    cJSON *j = n > 0 ? cJSON_ParseWithLength((const char *)buf, (size_t)n) : NULL;
    free(buf);
    if (j != NULL && !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        j = NULL;
    }
    return j;
}

/* The signature over signed[0..slen): 1 if good. ES256's is r || s (32 bytes each). */
static int verify(EVP_PKEY *pk, int es256, const char *signed_, size_t slen, const unsigned char *sig, size_t siglen)
{
    unsigned char *der = NULL;
    int derlen = 0, ok = 0;
    if (es256) {
        if (siglen != 64)
            return 0;
        ECDSA_SIG *es = ECDSA_SIG_new();
        BIGNUM *r = BN_bin2bn(sig, 32, NULL), *s = BN_bin2bn(sig + 32, 32, NULL);
        if (es == NULL || r == NULL || s == NULL || ECDSA_SIG_set0(es, r, s) != 1) {
            BN_free(r);
            BN_free(s);
            ECDSA_SIG_free(es);
            return 0;
        }
        derlen = i2d_ECDSA_SIG(es, &der);
        ECDSA_SIG_free(es);
        if (derlen <= 0)
            return 0;
        sig = der;
        siglen = (size_t)derlen;
    }
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (md != NULL && EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, pk) == 1)
        ok = EVP_DigestVerify(md, sig, siglen, (const unsigned char *)signed_, slen) == 1;
    EVP_MD_CTX_free(md);
    OPENSSL_free(der);
    return ok;
}

/* The claims of payload into c (aud's strings point into payload). */
static void claims_of(const cJSON *payload, policy_jwt_claims_t *c, const char **aud)
{
    const cJSON *exp = cJSON_GetObjectItemCaseSensitive(payload, "exp");
    const cJSON *nbf = cJSON_GetObjectItemCaseSensitive(payload, "nbf");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(payload, "aud");
    c->has_exp = cJSON_IsNumber(exp);
    c->exp_s = c->has_exp ? (int64_t)exp->valuedouble : 0;
    c->has_nbf = cJSON_IsNumber(nbf);
    c->nbf_s = c->has_nbf ? (int64_t)nbf->valuedouble : 0;
    c->aud = aud;
    c->naud = 0;
    if (cJSON_IsString(a))
        aud[c->naud++] = a->valuestring;
    for (const cJSON *e = cJSON_IsArray(a) ? a->child : NULL; e != NULL && c->naud < AUD_MAX; e = e->next)
        if (cJSON_IsString(e))
            aud[c->naud++] = e->valuestring;
}

/* The token's parts checked: NULL if good, else what is wrong. */
static const char *check_token(EVP_PKEY *pk, const cfg_key_conf_t *key, const char *t, size_t len)
{
    const char *d1 = memchr(t, '.', len);
    const char *d2 = d1 != NULL ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - t)) : NULL;
    if (d2 == NULL || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - t)) != NULL)
        return "the token is not a JWT (header.payload.signature)";
    cJSON *header = b64_json(t, (size_t)(d1 - t));
    const cJSON *alg = cJSON_GetObjectItemCaseSensitive(header, "alg");
    int es256 = cJSON_IsString(alg) && strcmp(alg->valuestring, "ES256") == 0;
    int rs256 = cJSON_IsString(alg) && strcmp(alg->valuestring, "RS256") == 0;
    cJSON_Delete(header);
    int type = EVP_PKEY_base_id(pk);
    if (!(es256 && type == EVP_PKEY_EC) && !(rs256 && type == EVP_PKEY_RSA))
        return "the token's alg is not the key's (ES256 for an EC key, RS256 for an RSA key)";
    size_t slen = len - (size_t)(d2 + 1 - t);
    unsigned char *sig = sl_xmalloc(slen + 1);
    long n = b64url(d2 + 1, slen, sig);
    int good = n > 0 && verify(pk, es256, t, (size_t)(d2 - t), sig, (size_t)n);
    free(sig);
    if (!good)
        return "bad signature";
    cJSON *payload = b64_json(d1 + 1, (size_t)(d2 - d1 - 1));
    if (payload == NULL)
        return "the token's payload is not a JSON object";
    const char *aud[AUD_MAX];
    policy_jwt_claims_t c;
    claims_of(payload, &c, aud);
    policy_jwt_verdict_t v = policy_jwt_check(&c, key->jwt.audience, (int64_t)time(NULL));
    cJSON_Delete(payload);
    return v == POLICY_JWT_OK ? NULL : policy_jwt_verdict_text(v);
}

int gw_jwt_admit(gw_jwt_keys_t **keys, const cfg_key_conf_t *key, h2o_req_t *req, char *msg, size_t cap)
{
    if (key == NULL || (key->jwt.public_key_file == NULL && key->jwt.public_key_pem == NULL))
        return 1;
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);
    const h2o_iovec_t *v = i >= 0 ? &req->headers.entries[i].value : NULL;
    const char *why = NULL;
    if (v == NULL || v->len <= 7 || strncasecmp(v->base, "Bearer ", 7) != 0)
        why = "missing: this key needs an Authorization: Bearer <JWT> header";
    else if (v->len - 7 > JWT_MAX)
        why = "the token is too long";
    else {
        EVP_PKEY *pk = public_key(keys, &key->jwt);
        why = pk == NULL ? "the key's public key could not be read (see the log)" : check_token(pk, key, v->base + 7, v->len - 7);
    }
    if (why == NULL)
        return 1;
    snprintf(msg, cap, "JWT invalid: %s", why);
    return 0;
}
