/* sub/sub_eth_filter.c: a logs subscription's filter: the client's address
 * and topics checked and normalised into the subscription's key (addresses
 * and topics lowercased, sorted, deduplicated: the same filter written in
 * another order is the same subscription), and that key read back as bytes
 * for the shared per-block fetch (policy/logfilter.h). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "sub/sub_eth_filter.h"
#include "sub/sub_int.h"

static int lower_hex(cJSON *v, size_t want_len)
{
    if (!cJSON_IsString(v) || strlen(v->valuestring) != want_len || strncmp(v->valuestring, "0x", 2) != 0)
        return 0;
    for (char *p = v->valuestring + 2; *p; p++) {
        if (!isxdigit((unsigned char)*p))
            return 0;
        *p = (char)tolower((unsigned char)*p);
    }
    return 1;
}

const char sub_eth_logs_too_many_addresses[] = "invalid params: a logs filter has at most 1000 addresses";
const char sub_eth_logs_too_many_topics[] = "invalid params: a logs filter has at most 100 topics at a position";

static int by_text(const void *a, const void *b)
{
    return strcmp((*(cJSON *const *)a)->valuestring, (*(cJSON *const *)b)->valuestring);
}

/* An array of lowercased hex strings sorted and without duplicates, so
 * that filters with the same members are one source (and its sets are
 * ready for policy/logfilter's binary search). One holding a null ("any")
 * is left as it is. */
static void sort_unique(cJSON *arr)
{
    size_t n = (size_t)cJSON_GetArraySize(arr), k = 0;
    cJSON *x;
    cJSON_ArrayForEach(x, arr) if (!cJSON_IsString(x)) return;
    if (n < 2)
        return;
    cJSON **v = sl_xmalloc(n * sizeof(*v));
    while (cJSON_GetArraySize(arr) > 0)
        v[k++] = cJSON_DetachItemFromArray(arr, 0);
    qsort(v, n, sizeof(*v), by_text);
    const cJSON *kept = NULL; /* the last one put back (a repeat of it is freed) */
    for (size_t i = 0; i < n; i++) {
        if (kept != NULL && strcmp(v[i]->valuestring, kept->valuestring) == 0) {
            cJSON_Delete(v[i]);
        } else {
            cJSON_AddItemToArray(arr, v[i]);
            kept = v[i];
        }
    }
    free(v);
}

/* address: one or an array of at most POLICY_LOGFILTER_MAX_ADDRESSES
 * 20-byte hex; topics: at most 4 of null, a 32-byte hex or an array of at
 * most POLICY_LOGFILTER_MAX_ALTERNATIVES. Lowercased, sorted and without
 * duplicates, in place. */
static const char *check_filter(cJSON *address, cJSON *topics)
{
    if (address != NULL && !cJSON_IsNull(address)) {
        if (cJSON_IsArray(address)) {
            cJSON *a;
            if (cJSON_GetArraySize(address) > POLICY_LOGFILTER_MAX_ADDRESSES)
                return sub_eth_logs_too_many_addresses;
            cJSON_ArrayForEach(a, address) if (!lower_hex(a, 42)) return "invalid params: address must be 20-byte hex";
            sort_unique(address);
        } else if (!lower_hex(address, 42)) {
            return "invalid params: address must be 20-byte hex or an array of them";
        }
    }
    if (topics == NULL || cJSON_IsNull(topics))
        return NULL;
    if (!cJSON_IsArray(topics) || cJSON_GetArraySize(topics) > POLICY_LOGFILTER_POSITIONS)
        return "invalid params: topics must be an array of at most 4 positions";
    cJSON *t, *o;
    cJSON_ArrayForEach(t, topics)
    {
        if (cJSON_IsNull(t))
            continue;
        if (cJSON_IsArray(t)) {
            if (cJSON_GetArraySize(t) > POLICY_LOGFILTER_MAX_ALTERNATIVES)
                return sub_eth_logs_too_many_topics;
            cJSON_ArrayForEach(o, t) if (!cJSON_IsNull(o) && !lower_hex(o, 66)) return "invalid params: a topic must be 32-byte hex";
            sort_unique(t);
        } else if (!lower_hex(t, 66)) {
            return "invalid params: a topic must be 32-byte hex, null or an array of them";
        }
    }
    return NULL;
}

const char *sub_eth_logs_params(const cJSON *params, sl_buf_t *key)
{
    const cJSON *f = cJSON_GetArrayItem(params, 1);
    if (cJSON_GetArraySize(params) > 2 || (f != NULL && !cJSON_IsObject(f) && !cJSON_IsNull(f)))
        return "invalid params: logs takes one filter object {address, topics}";
    cJSON *address = cJSON_IsObject(f) ? cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(f, "address"), 1) : NULL;
    cJSON *topics = cJSON_IsObject(f) ? cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(f, "topics"), 1) : NULL;
    const char *bad = check_filter(address, topics);
    if (bad == NULL) {
        if (address != NULL && !cJSON_IsNull(address)) {
            char *s = cJSON_PrintUnformatted(address);
            sl_buf_printf(key, ",\"address\":%s", s);
            free(s);
        }
        if (topics != NULL && !cJSON_IsNull(topics)) {
            char *s = cJSON_PrintUnformatted(topics);
            sl_buf_printf(key, ",\"topics\":%s", s);
            free(s);
        }
    }
    cJSON_Delete(address);
    cJSON_Delete(topics);
    return bad;
}

/* The hex strings of v (one or an array; an array holding a null, or
 * none at all, is "any": n 0) as bytes of size each. */
static void *hex_set(const cJSON *v, size_t size, size_t *n)
{
    const cJSON *x;
    *n = 0;
    if (cJSON_IsString(v)) {
        uint8_t *out = sl_xmalloc(size);
        *n = policy_logfilter_hex(v->valuestring, strlen(v->valuestring), out, size);
        return out;
    }
    cJSON_ArrayForEach(x, v) if (!cJSON_IsString(x)) return NULL; /* a null in an OR: any */
    uint8_t *out = sl_xcalloc((size_t)cJSON_GetArraySize(v) + 1, size);
    cJSON_ArrayForEach(x, v) if (policy_logfilter_hex(x->valuestring, strlen(x->valuestring), out + *n * size, size))
        (*n)++;
    *n = policy_logfilter_set_sort(out, size, *n); /* the key's order is text's: sorted here for the bytes' */
    return out;
}

/* The normalised filter (the key: ,"address":…,"topics":…, checked) as bytes. */
void sub_eth_filter_bytes(policy_logfilter_t *f, const char *key)
{
    memset(f, 0, sizeof(*f));
    sl_buf_t b;
    sl_buf_init(&b);
    sl_buf_append_char(&b, '{');
    sl_buf_append_str(&b, key[0] == ',' ? key + 1 : key);
    sl_buf_append_char(&b, '}');
    cJSON *o = cJSON_ParseWithLength(b.base, b.len), *t;
    sl_buf_dispose(&b);
    f->addr = hex_set(cJSON_GetObjectItemCaseSensitive(o, "address"), 20, &f->naddr);
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(o, "topics"))
    {
        if (f->npos == POLICY_LOGFILTER_POSITIONS)
            break;
        policy_logfilter_pos_t *p = &f->pos[f->npos++];
        p->v = cJSON_IsNull(t) ? NULL : hex_set(t, 32, &p->n);
    }
    cJSON_Delete(o);
}
