/* sub/sub_sol_match.c: a programSubscribe's filters (dataSize,
 * memcmp) applied here to the accounts of a getProgramAccounts answer, so
 * one poll of a program serves every filter on it (sub_sol_program.c).
 * Account data is decoded from base64 or base58 (the encodings whose polls
 * are shared); jsonParsed and base64+zstd are not decoded here. Pure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"
#include "sub/sub_int.h"

#define B58_DATA_MAX 4096         /* base58 is quadratic to decode; a node gives it only for 128 bytes */

static const char B58[] = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

static int b58_decode(const char *s, size_t n, uint8_t *out, size_t cap, size_t *len)
{
    size_t zeros = 0, size = 0;
    if (n > B58_DATA_MAX)
        return 0;
    while (zeros < n && s[zeros] == '1')
        zeros++;
    uint8_t *tmp = sl_xcalloc(n + 1, 1); /* little-endian digits, at most n bytes */
    for (size_t i = zeros; i < n; i++) {
        const char *p = s[i] != '\0' ? strchr(B58, s[i]) : NULL;
        if (p == NULL) {
            free(tmp);
            return 0;
        }
        unsigned carry = (unsigned)(p - B58);
        for (size_t j = 0; j < size || carry != 0; j++) {
            if (j == size)
                size++;
            carry += (unsigned)tmp[j] * 58u;
            tmp[j] = (uint8_t)carry;
            carry >>= 8;
        }
    }
    int ok = zeros + size <= cap;
    if (ok) {
        memset(out, 0, zeros);
        for (size_t j = 0; j < size; j++)
            out[zeros + j] = tmp[size - 1 - j];
        *len = zeros + size;
    }
    free(tmp);
    return ok;
}

static int b64_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

static int b64_decode(const char *s, size_t n, uint8_t *out, size_t cap, size_t *len)
{
    size_t o = 0;
    unsigned acc = 0, bits = 0;
    while (n > 0 && s[n - 1] == '=')
        n--;
    for (size_t i = 0; i < n; i++) {
        int v = b64_value(s[i]);
        if (v < 0)
            return 0;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o == cap)
                return 0;
            out[o++] = (uint8_t)(acc >> bits);
        }
    }
    *len = o;
    return 1;
}

int sub_sol_filters_parse(const char *json, sub_sol_filter_t *out, size_t cap, size_t *n)
{
    *n = 0;
    if (json == NULL || json[0] == '\0')
        return 1;
    cJSON *fs = cJSON_Parse(json);
    int ok = cJSON_IsArray(fs) && (size_t)cJSON_GetArraySize(fs) <= cap;
    for (const cJSON *f = ok ? fs->child : NULL; f != NULL && ok; f = f->next) {
        sub_sol_filter_t *o = &out[(*n)++];
        const cJSON *ds = cJSON_GetObjectItemCaseSensitive(f, "dataSize");
        const cJSON *mc = cJSON_GetObjectItemCaseSensitive(f, "memcmp");
        const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(mc, "bytes");
        const cJSON *enc = cJSON_GetObjectItemCaseSensitive(mc, "encoding");
        char *text = cJSON_PrintUnformatted(f);
        snprintf(o->text, sizeof(o->text), "%s", text);
        free(text);
        o->data_size = cJSON_IsNumber(ds);
        o->n = (uint64_t)(o->data_size ? ds->valuedouble : cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(mc, "offset")));
        o->len = 0;
        if (!o->data_size)
            ok = cJSON_IsString(bytes) &&
                 (cJSON_IsString(enc) ? b64_decode(bytes->valuestring, strlen(bytes->valuestring), o->bytes,
                                                   sizeof(o->bytes), &o->len)
                                      : b58_decode(bytes->valuestring, strlen(bytes->valuestring), o->bytes,
                                                   sizeof(o->bytes), &o->len));
    }
    cJSON_Delete(fs);
    return ok;
}

int sub_sol_filters_match(const sub_sol_filter_t *f, size_t n, const uint8_t *data, size_t len)
{
    for (size_t i = 0; i < n; i++) {
        if (f[i].data_size ? f[i].n != len
                           : f[i].n > len || len - f[i].n < f[i].len || memcmp(data + f[i].n, f[i].bytes, f[i].len) != 0)
            return 0;
    }
    return 1;
}

int sub_sol_account_data(const cJSON *acc, uint8_t **data, size_t *len)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(acc, "data");
    const cJSON *s = cJSON_IsArray(d) ? cJSON_GetArrayItem(d, 0) : d;
    const cJSON *e = cJSON_IsArray(d) ? cJSON_GetArrayItem(d, 1) : NULL;
    int b64 = cJSON_IsString(e) && strcmp(e->valuestring, "base64") == 0;
    *data = NULL;
    *len = 0;
    if (!cJSON_IsString(s) || (e != NULL && !b64 && !(cJSON_IsString(e) && strcmp(e->valuestring, "base58") == 0)))
        return 0;
    size_t n = strlen(s->valuestring);
    size_t cap = b64 ? n / 4 * 3 + 3 : n + 1;
    *data = sl_xmalloc(cap);
    if (b64 ? b64_decode(s->valuestring, n, *data, cap, len) : b58_decode(s->valuestring, n, *data, cap, len))
        return 1;
    free(*data);
    *data = NULL;
    return 0;
}
