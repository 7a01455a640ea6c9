/* fp_chain.c: what the fake chain looks like beyond its head: block hashes
 * that a reorg on command changes, safe and finalized heights, the getLogs
 * range limits in each vendor's words, the lie mode's wrong answers, and the
 * /_control/chain route that moves the head and reorgs.
 *
 * A block's hash is SHA-256 over (chain id, height) and, for a height a
 * reorg replaced, the number of the fork it belongs to; the height is kept
 * in the last 8 bytes (masked), so a hash maps back to its height and is
 * checked against the chain as it is now: a replaced block's hash is no
 * longer found. Heights no reorg touched keep the hashes they always had. */
#include "fp.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include <openssl/sha.h>

#define BLOCK_MASK 0x5bd1e9955bd1e995ull     /* hides the number in the hash tail */

/* ---- forks and hashes ---- */

/* The fork height n belongs to: the newest reorg that reached down to it
 * (1-based), or 0 for the chain as it started. */
static uint32_t fork_of(const fp_server_t *srv, uint64_t n)
{
    for (size_t i = srv->nforks; i > 0; i--)
        if (n >= srv->forks[i - 1].from)
            return (uint32_t)i;
    return 0;
}

/* Height n's digest on the given fork (0: the chain as it started). */
static void digest_on(const fp_server_t *srv, uint64_t n, uint64_t salt, uint32_t fork, uint8_t out[32])
{
    uint8_t seed[28] = "fp-block";
    uint8_t digest[SHA256_DIGEST_LENGTH];
    uint64_t key = n + salt;
    memcpy(seed + 8, &srv->chain_id, 8);
    memcpy(seed + 16, &key, 8);
    memcpy(seed + 24, &fork, 4);
    SHA256(seed, fork ? sizeof seed : 24, digest); /* fork 0: the values the fake always gave */
    memcpy(out, digest, 24);
    uint64_t tail = key ^ BLOCK_MASK;
    for (int i = 0; i < 8; i++)
        out[24 + i] = (uint8_t)(tail >> (56 - 8 * i));
}

void fp_block_digest(const fp_server_t *srv, uint64_t n, uint64_t salt, uint8_t out[32])
{
    digest_on(srv, n, salt, fork_of(srv, n), out);
}

void fp_block_hash(const fp_server_t *srv, uint64_t n, uint8_t out[32])
{
    fp_block_digest(srv, n, 0, out);
}

void fp_put_block_hash(const fp_server_t *srv, fp_buf_t *out, uint64_t n)
{
    uint8_t h[32];
    fp_block_hash(srv, n, h);
    fp_buf_put_hex(out, h, 32);
}

static bool hex_decode(fp_span_t s, uint8_t *out, size_t n)
{
    if (s.n != 2 + 2 * n || s.p[0] != '0' || (s.p[1] != 'x' && s.p[1] != 'X'))
        return false;
    for (size_t i = 0; i < 2 * n; i++) {
        char c = s.p[2 + i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (v < 0)
            return false;
        out[i / 2] = (uint8_t)(i % 2 ? (out[i / 2] << 4) | v : v);
    }
    return true;
}

bool fp_block_from_hash(const fp_server_t *srv, fp_span_t hex, uint64_t *n)
{
    uint8_t h[32], check[32];
    if (!hex_decode(hex, h, 32))
        return false;
    uint64_t tail = 0;
    for (int i = 0; i < 8; i++)
        tail = (tail << 8) | h[24 + i];
    *n = tail ^ BLOCK_MASK;
    fp_block_hash(srv, *n, check);
    return memcmp(h, check, 32) == 0;
}

/* A block a node still knows by hash: on the chain now, or replaced by a
 * reorg (a node keeps a side branch's blocks, and answers eth_getLogs
 * {blockHash} for them). Its height in *n, its hash in out. */
bool fp_block_known_hash(const fp_server_t *srv, fp_span_t hex, uint64_t *n, uint8_t out[32])
{
    uint8_t check[32];
    if (!hex_decode(hex, out, 32))
        return false;
    uint64_t tail = 0;
    for (int i = 0; i < 8; i++)
        tail = (tail << 8) | out[24 + i];
    *n = tail ^ BLOCK_MASK;
    if (srv->side_forgotten) { /* pruned: only the chain as it is now */
        fp_block_hash(srv, *n, check);
        return memcmp(out, check, 32) == 0;
    }
    for (size_t f = srv->nforks + 1; f > 0; f--) {
        if (f - 1 > 0 && *n < srv->forks[f - 2].from)
            continue; /* that fork did not reach down to n */
        digest_on(srv, *n, 0, (uint32_t)(f - 1), check);
        if (memcmp(out, check, 32) == 0)
            return true;
    }
    return false;
}

/* ---- heights ---- */

uint64_t fp_safe_height(const fp_server_t *srv, uint64_t head)
{
    return head > srv->safe_depth ? head - srv->safe_depth : 0;
}

uint64_t fp_finalized_height(const fp_server_t *srv, uint64_t head)
{
    return head > srv->finalized_depth ? head - srv->finalized_depth : 0;
}

bool fp_block_param(const fp_server_t *srv, fp_span_t v, uint64_t head, uint64_t *n)
{
    if (fp_span_eq(v, "\"earliest\"")) {
        *n = 0;
        return true;
    }
    if (fp_span_eq(v, "\"latest\"") || fp_span_eq(v, "\"pending\"")) {
        *n = head;
        return true;
    }
    if (fp_span_eq(v, "\"safe\"")) {
        *n = fp_safe_height(srv, head);
        return true;
    }
    if (fp_span_eq(v, "\"finalized\"")) {
        *n = fp_finalized_height(srv, head);
        return true;
    }
    return fp_json_u64(v, n);
}

/* ---- eth_getLogs refusals, in each vendor's words ---- */

/* 10000 -> "10,000", as QuickNode writes its limit. */
static void put_thousands(fp_buf_t *out, uint64_t v)
{
    char digits[24];
    int n = snprintf(digits, sizeof digits, "%" PRIu64, v);
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            fp_buf_puts(out, ",");
        fp_buf_put(out, digits + i, 1);
    }
}

/* Sources: tests/policy/test_verdict_flags.c quotes each wording with its
 * own (Alchemy dank_mids #772, Infura INFURA/infura #237, QuickNode
 * eternalsafe/wallet #57, Ankr and publicnode ponder's tests, geth
 * eth/filters/filter.go, Erigon PR #20424, reth PR #8558). */
static void msg_alchemy(fp_buf_t *out, uint64_t from, uint64_t to, uint64_t limit)
{
    (void)to;
    fp_buf_printf(out, "You can make eth_getLogs requests with up to a %" PRIu64 " block range. Based on your "
                       "parameters, this block range should work: [0x%" PRIx64 ", 0x%" PRIx64 "]",
                  limit, from, from + limit - 1);
}

static void msg_infura(fp_buf_t *out, uint64_t from, uint64_t to, uint64_t limit)
{
    fp_buf_printf(out, "range %" PRIu64 " exceeds limit of %" PRIu64, to - from, limit);
}

static void msg_quicknode(fp_buf_t *out, uint64_t from, uint64_t to, uint64_t limit)
{
    (void)from, (void)to;
    fp_buf_puts(out, "eth_getLogs is limited to a ");
    put_thousands(out, limit);
    fp_buf_puts(out, " range");
}

/* The rest name only the limit: a format with one %llu (or none). */
static const fp_vendor_t vendors[] = {
    {"alchemy", 200, -32600, msg_alchemy, NULL},
    {"ankr", 200, -32600, NULL, "block range is too wide"},
    {"erigon", 200, -32602, NULL, "query block range exceeds server limit, narrow your filter: %llu"},
    {"geth", 200, -32602, NULL, "exceed maximum block range %llu"},
    {"infura", 200, -32602, msg_infura, NULL},
    {"publicnode", 200, -32000, NULL, "exceed maximum block range: %llu"},
    {"quicknode", 413, -32614, msg_quicknode, NULL},
    {"reth", 200, -32602, NULL, "query exceeds max block range %llu"},
};

void fp_vendor_message(const fp_vendor_t *v, fp_buf_t *out, uint64_t from, uint64_t to, uint64_t limit)
{
    if (v->message != NULL)
        v->message(out, from, to, limit);
    else
        fp_buf_printf(out, v->limit_format, (unsigned long long)limit);
}

const fp_vendor_t *fp_vendor_find(const char *name)
{
    for (size_t i = 0; i < sizeof vendors / sizeof vendors[0]; i++)
        if (strcmp(vendors[i].name, name) == 0)
            return &vendors[i];
    return NULL;
}

const char *fp_vendor_names(void)
{
    return "alchemy|ankr|erigon|geth|infura|publicnode|quicknode|reth";
}

/* ---- the lie mode ---- */

/* The next digit of the same class: a decimal stays decimal, hex stays hex. */
static char other_digit(char c)
{
    if (c == '9')
        return '0';
    if (c == 'f')
        return 'a';
    if (c == 'F')
        return 'A';
    return (char)(c + 1);
}

static bool is_digit_char(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

void fp_chain_lie(fp_buf_t *out, size_t from)
{
    static const char key[] = "\"result\":";
    char *end = out->data + out->len, *v = NULL;
    for (char *p = out->data + from; v == NULL && p + sizeof key - 1 <= end; p++)
        if (memcmp(p, key, sizeof key - 1) == 0)
            v = p + sizeof key - 1;
    if (v == NULL)
        return; /* an error answer: nothing to lie about */
    if (end - v == 5 && memcmp(v, "\"0x\"}", 5) == 0) {
        /* eth_call's empty "0x": "0x00" is another answer of the same shape */
        out->len -= 2;
        fp_buf_puts(out, "00\"}");
        return;
    }
    for (char *p = end - 2; p >= v; p--) {
        if (is_digit_char(*p) && !(*p == '0' && p + 1 < end && (p[1] == 'x' || p[1] == 'X'))) {
            *p = other_digit(*p);
            return;
        }
    }
}

/* ---- /_control/chain ---- */

static void put_status(const fp_server_t *srv, fp_buf_t *out)
{
    uint64_t head = fp_server_head(srv);
    fp_buf_printf(out, "{\"ok\":true,\"head\":%" PRIu64 ",\"safe\":%" PRIu64 ",\"finalized\":%" PRIu64
                       ",\"forks\":%zu",
                  head, fp_safe_height(srv, head), fp_finalized_height(srv, head), srv->nforks);
    if (strcmp(srv->chain->name, "ethereum") == 0) {
        fp_buf_puts(out, ",\"hash\":");
        fp_put_block_hash(srv, out, head);
    }
    fp_buf_puts(out, "}");
}

static int chain_error(fp_buf_t *out, const char *why)
{
    fp_buf_puts(out, "{\"ok\":false,\"error\":");
    fp_buf_put_json_str(out, why, strlen(why));
    fp_buf_puts(out, "}");
    return 400;
}

/* A whole number in [0, max], or false. */
static bool whole(const cJSON *v, double max, uint64_t *out)
{
    double d = cJSON_GetNumberValue(v);
    if (!cJSON_IsNumber(v) || d != floor(d) || d < 0 || d > max)
        return false;
    *out = (uint64_t)d;
    return true;
}

/* {"head": N} sets the head, {"advance": n} moves it on, {"reorg": d}
 * replaces its last d blocks with a new fork (in this order when combined);
 * {"forget": true|false}: the node forgets the blocks reorgs replaced (or
 * knows them, the default); an empty body reports. */
static int chain_apply(fp_server_t *srv, const cJSON *root, fp_buf_t *out)
{
    const cJSON *head = cJSON_GetObjectItemCaseSensitive(root, "head");
    const cJSON *advance = cJSON_GetObjectItemCaseSensitive(root, "advance");
    const cJSON *reorg = cJSON_GetObjectItemCaseSensitive(root, "reorg");
    const cJSON *forget = cJSON_GetObjectItemCaseSensitive(root, "forget");
    uint64_t v = 0;
    for (const cJSON *it = root->child; it; it = it->next)
        if (it != head && it != advance && it != reorg && it != forget)
            return chain_error(out, "unknown key (head, advance, reorg, forget)");
    if (forget && !cJSON_IsBool(forget))
        return chain_error(out, "forget must be true or false");
    if (forget)
        srv->side_forgotten = cJSON_IsTrue(forget);
    if (head && !whole(head, 9e15, &v))
        return chain_error(out, "head must be a whole number");
    if (head)
        srv->head_offset += (int64_t)v - (int64_t)fp_server_head(srv);
    if (advance && !whole(advance, 1e9, &v))
        return chain_error(out, "advance must be a whole number");
    if (advance)
        srv->head_offset += (int64_t)v;
    if (reorg) {
        uint64_t now = fp_server_head(srv);
        if (!whole(reorg, 1e6, &v) || v == 0 || v > now)
            return chain_error(out, "reorg must be a depth from 1 to the head");
        if (srv->nforks == FP_MAX_FORKS)
            return chain_error(out, "too many reorgs");
        srv->forks[srv->nforks++] = (fp_fork_t){now - v + 1};
        fp_log(srv, "reorg: blocks %" PRIu64 "..%" PRIu64 " replaced (fork %zu)", now - v + 1, now, srv->nforks);
    }
    put_status(srv, out);
    return 200;
}

int fp_chain_route(fp_server_t *srv, const char *body, size_t n, fp_buf_t *out)
{
    fp_span_t v = fp_json_trim(body, n);
    if (v.n == 0) {
        put_status(srv, out);
        return 200;
    }
    cJSON *root = cJSON_ParseWithLength(v.p, v.n);
    int status = cJSON_IsObject(root) ? chain_apply(srv, root, out) : chain_error(out, "body must be a JSON object");
    cJSON_Delete(root);
    return status;
}
