/* policy/access.c: a key's scope against a request and its calls (access.h). */
#include "policy/access.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "policy/method.h"
#include "wire/envelope.h"
#include "wire/json_scan.h"
#include "wire/rawtx.h"
#include "wire/txid.h"

static const char *const reason_names[POLICY_ACCESS_REASON_COUNT] = {
    [POLICY_ACCESS_OK] = "ok",
    [POLICY_ACCESS_KEY_REQUIRED] = "key_required",
    [POLICY_ACCESS_NETWORK] = "network_not_allowed",
    [POLICY_ACCESS_METHOD] = "method_not_allowed",
    [POLICY_ACCESS_CONTRACT] = "contract_not_allowed",
    [POLICY_ACCESS_ORIGIN] = "origin_not_allowed",
};

/* How a method names the contract it runs, for a contracts scope. */
typedef enum recipient_kind {
    RECIPIENT_CALL_OBJECT,        /* params[0] is a call object: its "to" */
    RECIPIENT_RAW_TX,             /* params[0] is a signed transaction in hex: its to */
    RECIPIENT_UNCHECKED,          /* runs calls this does not read: refused under a contracts scope */
} recipient_kind_t;

typedef struct recipient_row {
    const char *method;
    recipient_kind_t kind;
} recipient_row_t;

static const recipient_row_t recipient_rows[] = { /* sorted (a binary search); each row is tested */
    {"debug_traceCall", RECIPIENT_CALL_OBJECT},
    {"eth_call", RECIPIENT_CALL_OBJECT},
    {"eth_callMany", RECIPIENT_UNCHECKED},
    {"eth_createAccessList", RECIPIENT_CALL_OBJECT},
    {"eth_estimateGas", RECIPIENT_CALL_OBJECT},
    {"eth_sendRawTransaction", RECIPIENT_RAW_TX},
    {"eth_simulateV1", RECIPIENT_UNCHECKED},
    {"trace_call", RECIPIENT_CALL_OBJECT},
    {"trace_callMany", RECIPIENT_UNCHECKED},
};

const char *policy_access_reason_name(policy_access_reason_t r)
{
    return (unsigned)r < POLICY_ACCESS_REASON_COUNT ? reason_names[r] : "unknown";
}

int policy_access_scoped(const policy_access_scope_t *s)
{
    return s != NULL && (s->nnetworks | s->nallow | s->ndeny | s->ncontracts | s->norigins) != 0;
}

/* A hex digit's value + 1 (0: not one): an address is read on every call a
 * contracts scope checks, 40 digits at a table lookup each. */
static const uint8_t hex_plus1[256] = {
    ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
    ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

int policy_access_parse_address(const char *s, size_t len, uint8_t out[20])
{
    if (len != 42 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
        return 0;
    const unsigned char *d = (const unsigned char *)s + 2;
    unsigned bad = 0;
    for (size_t i = 0; i < 20; i++) {
        unsigned hi = hex_plus1[d[2 * i]], lo = hex_plus1[d[2 * i + 1]];
        bad |= (hi == 0) | (lo == 0);
        out[i] = (uint8_t)((hi - 1) << 4 | (lo - 1));
    }
    return !bad;
}

static void address_text(const uint8_t a[20], char out[43])
{
    wire_hex_text(a, 20, out);
}

int policy_access_origin_listed(const policy_access_scope_t *s, const char *origin, size_t len)
{
    for (size_t i = 0; s != NULL && i < s->norigins; i++)
        if (strlen(s->origins[i]) == len && memcmp(s->origins[i], origin, len) == 0)
            return 1;
    return 0;
}

policy_access_reason_t policy_access_request(const policy_access_scope_t *s, const char *network,
                                             const char *origin, size_t origin_len, char *msg, size_t cap)
{
    if (s == NULL)
        return POLICY_ACCESS_OK;
    if (s->nnetworks != 0) {
        size_t i = 0;
        while (i < s->nnetworks && strcmp(s->networks[i], network) != 0)
            i++;
        if (i == s->nnetworks) {
            snprintf(msg, cap, "network not allowed: this key may not call network '%s'", network);
            return POLICY_ACCESS_NETWORK;
        }
    }
    if (s->norigins != 0 && origin != NULL && !policy_access_origin_listed(s, origin, origin_len)) {
        int n = origin_len > 200 ? 200 : (int)origin_len;
        for (int i = 0; i < n; i++)
            if ((unsigned char)origin[i] < 0x20 || (unsigned char)origin[i] > 0x7e)
                n = 0; /* not an origin a browser sends: not echoed */
        snprintf(msg, cap, "origin not allowed: this key may not be used from Origin '%.*s'", n, origin);
        return POLICY_ACCESS_ORIGIN;
    }
    return POLICY_ACCESS_OK;
}

static const recipient_row_t *recipient_of(const char *method, size_t mlen)
{
    size_t lo = 0, hi = sizeof(recipient_rows) / sizeof(recipient_rows[0]);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const char *m = recipient_rows[mid].method;
        size_t n = strlen(m);
        int c = memcmp(m, method, n < mlen ? n : mlen);
        if (c == 0)
            c = n < mlen ? -1 : n > mlen ? 1 : 0;
        if (c == 0)
            return &recipient_rows[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

typedef struct to_member {
    wire_span_t value;
    int count;                    /* members a node would read as "to" */
    int escaped;                  /* a key written with escapes: it might be one */
    int parsed;                   /* value's address already read (plain_call_object) */
} to_member_t;

/* Go's encoding/json (geth) matches keys without regard to case and takes
 * the last duplicate: every key spelled "to" in any case is counted, so a
 * second one cannot hide behind the first. */
static sl_err_t find_to(const char *buf, wire_span_t key, wire_span_t value, void *arg)
{
    to_member_t *t = arg;
    if (wire_json_key_escaped(buf, key))
        t->escaped = 1;
    else if (key.len == 4 && strncasecmp(buf + key.off, "\"to\"", 4) == 0) {
        t->count++;
        t->value = value;
    }
    return SL_OK;
}

typedef enum recipient {
    RECIPIENT_FOUND,
    RECIPIENT_NONE,               /* a creation */
    RECIPIENT_UNREADABLE,
} recipient_t;

/* The members of the object the scan s is at the start of, each through
 * find_to into *t: one walk, the object not scanned first as an element
 * and then again as an object. */
static sl_err_t scan_call_object(wire_scan_t *s, to_member_t *t)
{
    const char *buf = (const char *)s->base;
    sl_err_t err = wire_scan_open(s, '{');
    int first = 1, more = 0;
    while (err == SL_OK && (err = wire_scan_next(s, &first, &more)) == SL_OK && more) {
        wire_span_t key, value;
        if ((err = wire_scan_key(s, &key)) != SL_OK || (err = wire_scan_colon(s)) != SL_OK ||
            (err = wire_scan_value(s, &value)) != SL_OK)
            break;
        err = find_to(buf, key, value, t);
    }
    return err;
}

/* A byte a plain string holds as itself: printable ASCII but '"' and '\\'
 * (a string of only these is valid JSON and unescaped). */
static inline int plain_byte(unsigned char c)
{
    return (unsigned)(c - 0x20) < 0x5fu && c != '"' && c != '\\';
}

static size_t skip_space(const char *p, size_t i, size_t n)
{
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
        i++;
    return i;
}

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* 1 if any of the 8 bytes in x is not plain: below 0x20, '"', '\\', 0x7f
 * or above (exact as a yes/no: the borrows only run past a byte found). */
static inline int chunk_stops(uint64_t x)
{
    uint64_t q = x ^ (ONES * '"'), b = x ^ (ONES * '\\'), d = x ^ (ONES * 0x7f);
    return (((x - ONES * 0x20) & ~x) | ((q - ONES) & ~q) | ((b - ONES) & ~b) | ((d - ONES) & ~d) | x) & HIGHS ? 1
                                                                                                            : 0;
}

/* The plain string at p[i] ('"' expected): its end past the closing quote,
 * or 0 if it is not one (an escape, a control or non-ASCII byte). Eight
 * bytes at a time: a call's data can be long. */
static size_t plain_string(const char *p, size_t i, size_t n)
{
    if (i >= n || p[i] != '"')
        return 0;
    for (i++; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, p + i, 8);
        if (chunk_stops(x))
            break;
    }
    for (; i < n && plain_byte((unsigned char)p[i]); i++)
        ;
    return i < n && p[i] == '"' ? i + 1 : 0;
}

/* The common call object, read without the general scanner: "[", "{",
 * members whose keys and values are all plain strings, then "}". Anything
 * else (a nested value, a number, null, an escape, non-ASCII) answers 0 and
 * the general scan decides, so both agree on what is valid and what "to"
 * is. On 1, *t holds what find_to would have found, and with t->parsed its
 * address is in to[] (the common case: "to" read once, at a known length). */
static int plain_call_object(const char *p, size_t n, to_member_t *t, uint8_t to[20])
{
    size_t i = skip_space(p, 0, n);
    if (i >= n || p[i] != '[')
        return 0;
    i = skip_space(p, i + 1, n);
    if (i >= n || p[i] != '{')
        return 0;
    i = skip_space(p, i + 1, n);
    if (i < n && p[i] == '}')
        return 1;
    for (;;) {
        size_t k = i, v, e;
        if ((e = plain_string(p, k, n)) == 0)
            return 0;
        i = skip_space(p, e, n);
        if (i >= n || p[i] != ':')
            return 0;
        int is_to = e - k == 4 && (p[k + 1] | 0x20) == 't' && (p[k + 2] | 0x20) == 'o', parsed = 0;
        v = skip_space(p, i + 1, n);
        if (is_to && v + 43 < n && p[v] == '"' && p[v + 43] == '"' && policy_access_parse_address(p + v + 1, 42, to)) {
            i = v + 44; /* hex digits only: a plain string, read once */
            parsed = 1;
        } else if ((i = plain_string(p, v, n)) == 0) {
            return 0;
        }
        if (is_to) {
            t->count++;
            t->parsed = parsed;
            t->value = (wire_span_t){.off = (uint32_t)v, .len = (uint32_t)(i - v)};
        }
        i = skip_space(p, i, n);
        if (i < n && p[i] == '}')
            return 1;
        if (i >= n || p[i] != ',')
            return 0;
        i = skip_space(p, i + 1, n);
    }
}

/* Only params[0] is read, the array scanned no further: a node reads the
 * recipient there whatever follows, and the gateway's envelope scan has
 * validated the whole (policy_access_call's callers pass a scanned span). */
static recipient_t read_recipient(recipient_kind_t kind, const char *params, size_t plen, uint8_t to[20])
{
    wire_scan_t sc;
    int first = 1, more = 0;
    if (kind == RECIPIENT_UNCHECKED || plen == 0 || plen > UINT32_MAX)
        return RECIPIENT_UNREADABLE;
    if (kind == RECIPIENT_CALL_OBJECT) {
        to_member_t t = {0};
        if (plain_call_object(params, plen, &t, to) && t.count == 1 && t.parsed)
            return RECIPIENT_FOUND;
    }
    wire_scan_init(&sc, params, 0, plen);
    if (wire_scan_open(&sc, '[') != SL_OK || wire_scan_next(&sc, &first, &more) != SL_OK || !more)
        return RECIPIENT_UNREADABLE;
    if (kind == RECIPIENT_RAW_TX) {
        wire_span_t item;
        if (wire_scan_value(&sc, &item) != SL_OK || wire_json_kind(params, item) != WIRE_JSON_STRING)
            return RECIPIENT_UNREADABLE;
        const char *text = params + item.off + 1;
        size_t len = item.len - 2;
        if (memchr(text, '\\', len) != NULL)
            return RECIPIENT_UNREADABLE;
        wire_rawtx_to_t r = wire_rawtx_to_hex(text, len, to);
        return r == WIRE_RAWTX_HAS_TO ? RECIPIENT_FOUND : r == WIRE_RAWTX_CREATION ? RECIPIENT_NONE
                                                                                   : RECIPIENT_UNREADABLE;
    }
    to_member_t t = {0};
    if (scan_call_object(&sc, &t) != SL_OK || t.escaped || t.count > 1)
        return RECIPIENT_UNREADABLE;
    if (t.count == 0 || wire_json_kind(params, t.value) == WIRE_JSON_NULL)
        return RECIPIENT_NONE;
    if (wire_json_kind(params, t.value) != WIRE_JSON_STRING)
        return RECIPIENT_UNREADABLE;
    return policy_access_parse_address(params + t.value.off + 1, t.value.len - 2, to) ? RECIPIENT_FOUND
                                                                                      : RECIPIENT_UNREADABLE;
}

static policy_access_reason_t check_contract(const policy_access_scope_t *s, const recipient_row_t *row,
                                             const char *params, size_t plen, char *msg, size_t cap)
{
    uint8_t to[20];
    char text[43];
    switch (read_recipient(row->kind, params, plen, to)) {
    case RECIPIENT_FOUND:
        for (size_t i = 0; i < s->ncontracts; i++)
            if (memcmp(s->contracts[i], to, 20) == 0)
                return POLICY_ACCESS_OK;
        address_text(to, text);
        snprintf(msg, cap, "contract not allowed: this key may not call %s (%s)", text, row->method);
        return POLICY_ACCESS_CONTRACT;
    case RECIPIENT_NONE:
        snprintf(msg, cap, "contract not allowed: this key may only call its listed contracts, and this %s has "
                           "no recipient (a contract creation)", row->method);
        return POLICY_ACCESS_CONTRACT;
    case RECIPIENT_UNREADABLE:
        snprintf(msg, cap, "contract not allowed: the recipient of this %s could not be read, and this key may "
                           "only call its listed contracts", row->method);
        return POLICY_ACCESS_CONTRACT;
    }
    return POLICY_ACCESS_CONTRACT;
}

policy_access_reason_t policy_access_call(const policy_access_scope_t *s, const char *method, size_t mlen,
                                          const char *params, size_t plen, char *msg, size_t cap)
{
    if (s == NULL)
        return POLICY_ACCESS_OK;
    if ((s->nallow != 0 && !policy_method_match((const char *const *)s->allow, s->nallow, method, mlen)) ||
        (s->ndeny != 0 && policy_method_match((const char *const *)s->deny, s->ndeny, method, mlen))) {
        int n = mlen > 128 ? 128 : (int)mlen;
        snprintf(msg, cap, "method not allowed: this key may not call %.*s", n, method);
        return POLICY_ACCESS_METHOD;
    }
    const recipient_row_t *row = s->ncontracts != 0 ? recipient_of(method, mlen) : NULL;
    return row != NULL ? check_contract(s, row, params, plen, msg, cap) : POLICY_ACCESS_OK;
}

policy_access_reason_t policy_access_check(const policy_access_scope_t *s, const char *network, const char *method,
                                           size_t mlen, const char *params, size_t plen, const char *origin,
                                           size_t origin_len, char *msg, size_t cap)
{
    policy_access_reason_t r = policy_access_request(s, network, origin, origin_len, msg, cap);
    return r != POLICY_ACCESS_OK ? r : policy_access_call(s, method, mlen, params, plen, msg, cap);
}

const char *policy_access_glob_problem(const char *s)
{
    const char *star = strchr(s, '*');
    if (s[0] == '\0')
        return "a method pattern must not be empty";
    if (star != NULL && star[1] != '\0')
        return "a method pattern takes '*' only at its end (eth_*, debug_*, *)";
    return NULL;
}

const char *policy_access_origin_problem(const char *s)
{
    const char *host = strstr(s, "://");
    if (host == NULL || host == s || host[3] == '\0' || strpbrk(s, " \t\r\n,*") != NULL ||
        strchr(host + 3, '/') != NULL)
        return "an origin is a scheme and host as a browser sends it, like https://app.example (no path, no *)";
    return NULL;
}
