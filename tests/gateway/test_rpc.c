/* tests/gateway/test_rpc.c: gateway/gw_rpc.h, table-driven.
 *
 * Each row is a client body and everything gw_rpc_parse must make of it: the
 * kind, the reject code and message, and per member its status, id bytes,
 * notification flag, method name and error. For a handful of rows the row
 * also holds the exact answer the gateway sends for the members it answers
 * itself, built here with wire_rpc_error as gateway/gw_reply.c builds it, and
 * checked against gw_reply_build too when no member goes upstream. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"
#include "gateway/gw_reply.h"
#include "gateway/gw_rpc.h"
#include "wire/envelope.h"
#include "policy/access.h"
#include "policy/method.h"

/* ---- an arena allocator, so every row frees what it parsed ------------- */

typedef struct arena {
    void *blocks[64];
    size_t n;
    size_t calls;
} arena_t;

static void *arena_alloc(void *ctx, size_t size)
{
    arena_t *a = ctx;
    cr_assert_lt(a->n, sizeof a->blocks / sizeof a->blocks[0], "arena: too many allocations");
    a->calls++;
    /* poison, so a field the parser forgets to set is not silently zero */
    void *p = malloc(size ? size : 1);
    memset(p, 0xa5, size);
    return a->blocks[a->n++] = p;
}

static void arena_free(arena_t *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->blocks[i]);
    a->n = 0;
}

/* ---- messages, as the JSON-RPC answers carry them ---------------------- */

#define R_JSON "parse error: the body is not valid JSON"
#define R_TRUNC "parse error: the body ends before the JSON does"
#define R_DEEP "parse error: JSON nested too deeply"
#define R_TOP "invalid request: expected a JSON object or an array of them"
#define R_EMPTY "invalid request: empty batch"

#define E_OBJ "invalid request: a batch member must be a JSON object"
#define E_DUP "invalid request: a member name is repeated or ambiguous (a name twice, even escaped, or in another case)"
#define E_ID "invalid request: \"id\" must be a string, a number or null"
#define E_VER "invalid request: \"jsonrpc\" must be \"2.0\""
#define E_METH "invalid request: \"method\" must be a string"
#define E_LONG "invalid request: \"method\" is too long"
#define E_EMPTY "invalid request: \"method\" must be a non-empty name"
#define E_PARAMS "invalid request: \"params\" must be an array or an object"
#define E_RPC "method names that begin with \"rpc.\" are reserved"
#define E_BLOCK "this method is not allowed by the gateway"
#define E_WS "subscriptions need a WebSocket connection; this gateway serves JSON-RPC over HTTP"

/* 127 and 128 bytes of method name */
#define A16 "aaaaaaaaaaaaaaaa"
#define A127 A16 A16 A16 A16 A16 A16 A16 "aaaaaaaaaaaaaaa"
#define A128 A127 "a"
/* 64 two-byte characters written as escapes: 128 bytes once decoded */
#define E8 "\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9"
#define E64 E8 E8 E8 E8 E8 E8 E8 E8
/* nesting beyond WIRE_JSON_MAX_DEPTH */
#define O16 "[[[[[[[[[[[[[[[["
#define C16 "]]]]]]]]]]]]]]]]"
#define DEEP_OPEN O16 O16 O16 O16 O16 O16 O16 O16
#define DEEP_CLOSE C16 C16 C16 C16 C16 C16 C16 C16

/* a raw NUL inside the method string */
#define NUL_BODY "{\"jsonrpc\":\"2.0\",\"method\":\"a\0b\",\"id\":1}"

/* A request object with jsonrpc "2.0", method m and the members that follow. */
#define REQ(m, rest) "{\"jsonrpc\":\"2.0\",\"method\":\"" m "\"" rest "}"

/* ---- the table --------------------------------------------------------- */

typedef struct want_member {
    gw_member_status_t status;
    const char *id;       /* id bytes; NULL: none */
    uint8_t notification;
    const char *name;     /* decoded method name ("" if none) */
    const char *error;    /* exact message for INVALID / BLOCKED; NULL for FORWARD */
} want_member_t;

#define FWD(id_, name_) {GW_MEMBER_FORWARD, id_, 0, name_, NULL}
#define NOTE(name_) {GW_MEMBER_FORWARD, NULL, 1, name_, NULL}
#define INV(id_, name_, err_) {GW_MEMBER_INVALID, id_, 0, name_, err_}
#define BLK(id_, name_, err_) {GW_MEMBER_BLOCKED, id_, 0, name_, err_}
#define BLKN(name_, err_) {GW_MEMBER_BLOCKED, NULL, 1, name_, err_}

enum { BL_DEFAULT, BL_CUSTOM, BL_NONE };

typedef struct rpc_case {
    const char *in;
    size_t len;               /* 0: strlen(in) */
    policy_chain_t chain;
    uint32_t max_batch;       /* 0: 100 */
    int blocked;              /* BL_DEFAULT: the chain's default list */
    gw_rpc_kind_t kind;
    int code;                 /* REJECT */
    const char *reject_msg;   /* REJECT */
    size_t n;
    want_member_t m[8];
    const char *answer;       /* what the gateway answers by itself; "" = nothing (204); NULL: not checked */
} rpc_case_t;

#define SOL .chain = POLICY_CHAIN_SOLANA
#define SINGLE(in_, mem, ...) {in_, .kind = GW_RPC_SINGLE, .n = 1, .m = {mem}, __VA_ARGS__}
#define BATCH(in_, n_, ...) {in_, .kind = GW_RPC_BATCH, .n = n_, __VA_ARGS__}
#define REJECT(in_, code_, msg_, ...) {in_, .kind = GW_RPC_REJECT, .code = code_, .reject_msg = msg_, __VA_ARGS__}

static const char *const custom_blocked[] = {"eth_getLogs", "trace_*", "x*", "eth_subscribe"};

static const rpc_case_t rpc_cases[] = {
    /* ---- parse errors: one -32700 answers the body ---- */
    REJECT("{\"jsonrpc\":\"2.0\",\"method\":\"foobar,\"params\":\"bar\",\"baz]", -32700, R_JSON,
           .answer = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
                     "\"message\":\"parse error: the body is not valid JSON\"}}"),
    REJECT(REQ("eth_chainId", ",\"id\":1") " x", -32700, R_JSON),
    REJECT(REQ("eth_chainId", ",\"id\":1") REQ("eth_chainId", ",\"id\":2"), -32700, R_JSON),
    REJECT("{\"jsonrpc\":\"2.0\",\"method\":\"eth_chainId\",\"id\":1", -32700, R_TRUNC,
           .answer = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
                     "\"message\":\"parse error: the body ends before the JSON does\"}}"),
    REJECT("", -32700, R_TRUNC),
    REJECT(" \r\n\t", -32700, R_TRUNC),
    REJECT("[" REQ("eth_chainId", ",\"id\":1") ",", -32700, R_TRUNC),
    REJECT(REQ("eth_\\x", ",\"id\":1"), -32700, R_JSON),
    REJECT(REQ("eth_\\ud800", ",\"id\":1"), -32700, R_JSON),
    REJECT(REQ("eth_\xff", ",\"id\":1"), -32700, R_JSON),
    REJECT(REQ("eth_call", ",\"params\":[\"\xc0\xaf\"],\"id\":1"), -32700, R_JSON),
    REJECT(REQ("eth_call", ",\"params\":[\"\xed\xa0\x80\"],\"id\":1"), -32700, R_JSON),
    {NUL_BODY, sizeof NUL_BODY - 1, .kind = GW_RPC_REJECT, .code = -32700, .reject_msg = R_JSON},
    REJECT("{'jsonrpc':'2.0','method':'eth_chainId','id':1}", -32700, R_JSON),
    REJECT(REQ("eth_chainId", ",\"id\":01"), -32700, R_JSON),
    REJECT(REQ("eth_chainId", ",\"id\":1,"), -32700, R_JSON),
    REJECT("\xef\xbb\xbf" REQ("eth_chainId", ",\"id\":1"), -32700, R_JSON),
    REJECT(REQ("eth_call", ",\"params\":" DEEP_OPEN DEEP_CLOSE ",\"id\":1"), -32700, R_DEEP,
           .answer = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
                     "\"message\":\"parse error: JSON nested too deeply\"}}"),

    /* ---- valid JSON that is no request: one -32600 ---- */
    REJECT("1", -32600, R_TOP,
           .answer = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
                     "\"message\":\"invalid request: expected a JSON object or an array of them\"}}"),
    REJECT("\"x\"", -32600, R_TOP),
    REJECT("null", -32600, R_TOP),
    REJECT(" true ", -32600, R_TOP),
    REJECT("[]", -32600, R_EMPTY,
           .answer = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
                     "\"message\":\"invalid request: empty batch\"}}"),
    REJECT(" [ \r\n ] ", -32600, R_EMPTY),
    REJECT("[" REQ("eth_chainId", ",\"id\":1") "," REQ("eth_chainId", ",\"id\":2") ","
           REQ("eth_chainId", ",\"id\":3") "]", -32600,
           "invalid request: a batch may hold at most 2 calls (server.max_batch)", .max_batch = 2,
           .answer = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":"
                     "\"invalid request: a batch may hold at most 2 calls (server.max_batch)\"}}"),
    REJECT("[1,2]", -32600, "invalid request: a batch may hold at most 1 calls (server.max_batch)", .max_batch = 1),

    /* ---- single requests that go upstream ---- */
    SINGLE(REQ("eth_blockNumber", ",\"params\":[],\"id\":1"), FWD("1", "eth_blockNumber")),
    SINGLE("{\"id\":\"abc\",\"params\":{},\"method\":\"getBalance\",\"jsonrpc\":\"2.0\"}",
           FWD("\"abc\"", "getBalance"), SOL),
    SINGLE(REQ("eth_chainId", ",\"id\":123456789012345678901234567890"),
           FWD("123456789012345678901234567890", "eth_chainId")),
    SINGLE(REQ("eth_chainId", ",\"id\":-5"), FWD("-5", "eth_chainId")),
    SINGLE(REQ("eth_chainId", ",\"id\":1.5"), FWD("1.5", "eth_chainId")),
    SINGLE(REQ("eth_chainId", ",\"id\":-0.0E-0"), FWD("-0.0E-0", "eth_chainId")),
    SINGLE(REQ("eth_chainId", ",\"id\":1e+400"), FWD("1e+400", "eth_chainId")),
    SINGLE(REQ("eth_chainId", ",\"id\":null"), FWD("null", "eth_chainId")),
    SINGLE(REQ("eth_chainId", ",\"id\":\"\""), FWD("\"\"", "eth_chainId")),
    SINGLE(REQ("eth_chainId", ",\"id\":\"a\\\"b\\u00e9\\n\""), FWD("\"a\\\"b\\u00e9\\n\"", "eth_chainId")),
    SINGLE(REQ("eth_chainId", ",\"id\":1,\"extra\":{\"x\":[true]}"), FWD("1", "eth_chainId")),
    SINGLE(REQ("eth_chainId", ",\"x\":1,\"x\":2,\"id\":1"), FWD("1", "eth_chainId")),
    SINGLE(REQ("web3_clientVersion", ""), NOTE("web3_clientVersion")),
    SINGLE(REQ("eth_call", ",\"params\":[{\"id\":5,\"method\":\"admin_peers\",\"jsonrpc\":\"1.0\"}]"),
           NOTE("eth_call")),
    SINGLE("{\"params\":{\"id\":1,\"method\":\"admin_peers\"},\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"m\"}",
           FWD("2", "m")),
    SINGLE(" \r\n\t{\n \"jsonrpc\" :\t\"2.0\" ,\r\n \"method\" : \"eth_chainId\" , \"params\" : [ ] , "
           "\"id\" : 7 \n}\n\t", FWD("7", "eth_chainId")),
    SINGLE(REQ("eth_\\u0063hainId", ",\"id\":1"), FWD("1", "eth_chainId")),
    SINGLE(REQ("eth_ch\xc3\xa9", ",\"id\":1"), FWD("1", "eth_ch\xc3\xa9")),
    SINGLE(REQ(A127, ",\"id\":1"), FWD("1", A127)),
    SINGLE(REQ("rpc", ",\"id\":1"), FWD("1", "rpc")),
    SINGLE(REQ("rpcx.y", ",\"id\":1"), FWD("1", "rpcx.y")),
    SINGLE(REQ("eth_signer", ",\"id\":1"), FWD("1", "eth_signer")),      /* eth_sign is exact */
    SINGLE(REQ("debug", ",\"id\":1"), FWD("1", "debug")),                /* debug_* needs the _ */
    SINGLE(REQ("Admin_peers", ",\"id\":1"), FWD("1", "Admin_peers")),    /* names are case-sensitive */
    SINGLE(REQ("admin_peers", ",\"id\":1"), FWD("1", "admin_peers"), SOL), /* not Solana's list */
    SINGLE(REQ("eth_subscribe", ",\"id\":1"), FWD("1", "eth_subscribe"), SOL),

    /* ---- single requests answered here ---- */
    SINGLE("{\"jsonrpc\":\"1.0\",\"method\":\"eth_chainId\",\"id\":1}", INV("1", "", E_VER),
           .answer = "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32600,"
                     "\"message\":\"invalid request: \\\"jsonrpc\\\" must be \\\"2.0\\\"\"}}"),
    SINGLE("{\"jsonrpc\":2.0,\"method\":\"eth_chainId\",\"id\":1}", INV("1", "", E_VER)),
    SINGLE("{\"jsonrpc\":\"2.0 \",\"method\":\"eth_chainId\",\"id\":1}", INV("1", "", E_VER)),
    SINGLE("{\"method\":\"eth_chainId\",\"id\":\"q\"}", INV("\"q\"", "", E_VER)),
    SINGLE("{\"jsonrpc\":\"2.0\",\"id\":1}", INV("1", "", E_METH)),
    SINGLE("{\"jsonrpc\":\"2.0\",\"method\":1,\"params\":\"bar\"}", INV(NULL, "", E_METH),
           .answer = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
                     "\"message\":\"invalid request: \\\"method\\\" must be a string\"}}"),
    SINGLE("{\"jsonrpc\":\"2.0\",\"method\":null,\"id\":1}", INV("1", "", E_METH)),
    SINGLE("{\"jsonrpc\":\"2.0\",\"method\":[\"eth_chainId\"],\"id\":1}", INV("1", "", E_METH)),
    SINGLE(REQ("", ",\"id\":1"), INV("1", "", E_EMPTY)),
    SINGLE(REQ("eth_\\u0000call", ",\"id\":1"), INV("1", "", E_EMPTY)),
    SINGLE(REQ("\\u0000", ",\"id\":1"), INV("1", "", E_EMPTY)),
    SINGLE(REQ(A128, ",\"id\":1"), INV("1", "", E_LONG)),
    SINGLE(REQ(E64, ",\"id\":1"), INV("1", "", E_LONG)),
    SINGLE(REQ("eth_call", ",\"params\":1,\"id\":1"), INV("1", "eth_call", E_PARAMS),
           .answer = "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32600,"
                     "\"message\":\"invalid request: \\\"params\\\" must be an array or an object\"}}"),
    SINGLE(REQ("eth_call", ",\"params\":\"bar\",\"id\":1"), INV("1", "eth_call", E_PARAMS)),
    SINGLE(REQ("eth_call", ",\"params\":null,\"id\":1"), INV("1", "eth_call", E_PARAMS)),
    SINGLE(REQ("eth_call", ",\"params\":true"), INV(NULL, "eth_call", E_PARAMS)), /* invalid: no notification */
    SINGLE(REQ("eth_chainId", ",\"id\":{\"a\":1}"), INV(NULL, "", E_ID),
           .answer = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
                     "\"message\":\"invalid request: \\\"id\\\" must be a string, a number or null\"}}"),
    SINGLE(REQ("eth_chainId", ",\"id\":true"), INV(NULL, "", E_ID)),
    SINGLE(REQ("eth_chainId", ",\"id\":false"), INV(NULL, "", E_ID)),
    SINGLE(REQ("eth_chainId", ",\"id\":[1]"), INV(NULL, "", E_ID)),
    SINGLE("{\"jsonrpc\":\"1.0\",\"method\":\"eth_chainId\",\"id\":[1]}", INV(NULL, "", E_ID)),
    SINGLE(REQ("eth_chainId", ",\"id\":1,\"id\":2"), INV(NULL, "", E_DUP)),
    SINGLE(REQ("eth_chainId", ",\"method\":\"eth_chainId\",\"id\":1"), INV(NULL, "", E_DUP)),
    SINGLE(REQ("eth_chainId", ",\"jsonrpc\":\"2.0\",\"id\":1"), INV(NULL, "", E_DUP)),
    SINGLE(REQ("eth_call", ",\"params\":[],\"params\":{},\"id\":1"), INV(NULL, "", E_DUP)),
    SINGLE("{}", INV(NULL, "", E_VER)),
    SINGLE(REQ("rpc.discover", ",\"id\":1"), BLK("1", "rpc.discover", E_RPC),
           .answer = "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":"
                     "\"rpc.discover: method names that begin with \\\"rpc.\\\" are reserved\"}}"),
    SINGLE(REQ("rpc\\u002ediscover", ",\"id\":1"), BLK("1", "rpc.discover", E_RPC)),
    SINGLE(REQ("rpc.", ",\"id\":1"), BLK("1", "rpc.", E_RPC), SOL),
    SINGLE(REQ("admin_peers", ",\"id\":\"x\""), BLK("\"x\"", "admin_peers", E_BLOCK),
           .answer = "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"error\":{\"code\":-32601,\"message\":"
                     "\"admin_peers: this method is not allowed by the gateway\"}}"),
    SINGLE(REQ("admin\\u005fpeers", ",\"id\":1"), BLK("1", "admin_peers", E_BLOCK)),
    SINGLE(REQ("debug_traceTransaction", ",\"params\":[\"0x1\"],\"id\":2"),
           BLK("2", "debug_traceTransaction", E_BLOCK)),
    SINGLE(REQ("miner_start", ",\"id\":3"), BLK("3", "miner_start", E_BLOCK)),
    SINGLE(REQ("personal_unlockAccount", ",\"id\":4"), BLK("4", "personal_unlockAccount", E_BLOCK)),
    SINGLE(REQ("eth_sendTransaction", ",\"id\":5"), BLK("5", "eth_sendTransaction", E_BLOCK)),
    SINGLE(REQ("eth_sign", ",\"id\":6"), BLK("6", "eth_sign", E_BLOCK)),
    SINGLE(REQ("eth_signTransaction", ",\"id\":7"), BLK("7", "eth_signTransaction", E_BLOCK)),
    SINGLE(REQ("eth_signTypedData_v4", ",\"id\":8"), BLK("8", "eth_signTypedData_v4", E_BLOCK)),
    SINGLE(REQ("admin_peers", ""), BLKN("admin_peers", E_BLOCK), .answer = ""),
    SINGLE(REQ("registerNode", ",\"id\":1"), BLK("1", "registerNode", E_BLOCK), SOL),
    SINGLE(REQ("deregisterNode", ",\"id\":1"), BLK("1", "deregisterNode", E_BLOCK), SOL),
    SINGLE(REQ("signVote", ",\"id\":1"), BLK("1", "signVote", E_BLOCK), SOL),
    SINGLE(REQ("eth_subscribe", ",\"params\":[\"newHeads\"],\"id\":1"), BLK("1", "eth_subscribe", E_WS),
           .answer = "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":\"eth_subscribe: "
                     "subscriptions need a WebSocket connection; this gateway serves JSON-RPC over HTTP\"}}"),
    SINGLE(REQ("eth_unsubscribe", ",\"params\":[\"0x1\"],\"id\":1"), BLK("1", "eth_unsubscribe", E_WS)),
    SINGLE(REQ("\\u0065th_subscribe", ",\"id\":1"), BLK("1", "eth_subscribe", E_WS)),
    SINGLE(REQ("accountSubscribe", ",\"id\":1"), BLK("1", "accountSubscribe", E_WS), SOL),
    SINGLE(REQ("slotsUpdatesUnsubscribe", ",\"id\":1"), BLK("1", "slotsUpdatesUnsubscribe", E_WS), SOL),

    /* ---- a custom blocked list: exact names and prefixes, replacing the default ---- */
    SINGLE(REQ("eth_getLogs", ",\"id\":1"), BLK("1", "eth_getLogs", E_BLOCK), .blocked = BL_CUSTOM),
    SINGLE(REQ("eth_getLogsX", ",\"id\":1"), FWD("1", "eth_getLogsX"), .blocked = BL_CUSTOM),
    SINGLE(REQ("eth_getLog", ",\"id\":1"), FWD("1", "eth_getLog"), .blocked = BL_CUSTOM),
    SINGLE(REQ("trace_block", ",\"id\":1"), BLK("1", "trace_block", E_BLOCK), .blocked = BL_CUSTOM),
    SINGLE(REQ("trace_", ",\"id\":1"), BLK("1", "trace_", E_BLOCK), .blocked = BL_CUSTOM),
    SINGLE(REQ("trace", ",\"id\":1"), FWD("1", "trace"), .blocked = BL_CUSTOM),
    SINGLE(REQ("admin_peers", ",\"id\":1"), FWD("1", "admin_peers"), .blocked = BL_CUSTOM),
    SINGLE(REQ("eth_subscribe", ",\"id\":1"), BLK("1", "eth_subscribe", E_BLOCK), .blocked = BL_CUSTOM),
    SINGLE(REQ("rpc.x", ",\"id\":1"), BLK("1", "rpc.x", E_RPC), .blocked = BL_CUSTOM),
    SINGLE(REQ("x\\n\\\"y\\u0001", ",\"id\":9"), BLK("9", "x\n\"y\x01", E_BLOCK), .blocked = BL_CUSTOM,
           .answer = "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32601,\"message\":"
                     "\"x\\n\\\"y\\u0001: this method is not allowed by the gateway\"}}"),
    SINGLE(REQ("admin_peers", ",\"id\":1"), FWD("1", "admin_peers"), .blocked = BL_NONE),

    /* ---- batches ---- */
    BATCH("[1]", 1, .m = {INV(NULL, "", E_OBJ)},
          .answer = "[{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
                    "\"message\":\"invalid request: a batch member must be a JSON object\"}}]"),
    BATCH("[1,2,3]", 3, .m = {INV(NULL, "", E_OBJ), INV(NULL, "", E_OBJ), INV(NULL, "", E_OBJ)}),
    BATCH("[null,\"x\",[],[" REQ("eth_chainId", ",\"id\":1") "]]", 4,
          .m = {INV(NULL, "", E_OBJ), INV(NULL, "", E_OBJ), INV(NULL, "", E_OBJ), INV(NULL, "", E_OBJ)}),
    BATCH("[{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1,2,4],\"id\":\"1\"},"
          "{\"jsonrpc\":\"2.0\",\"method\":\"notify_hello\",\"params\":[7]},"
          "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[42,23],\"id\":\"2\"},"
          "{\"foo\":\"boo\"},"
          "{\"jsonrpc\":\"2.0\",\"method\":\"foo.get\",\"params\":{\"name\":\"myself\"},\"id\":\"5\"},"
          "{\"jsonrpc\":\"2.0\",\"method\":\"get_data\",\"id\":\"9\"}]", 6,
          .m = {FWD("\"1\"", "sum"), NOTE("notify_hello"), FWD("\"2\"", "subtract"), INV(NULL, "", E_VER),
                FWD("\"5\"", "foo.get"), FWD("\"9\"", "get_data")}),
    BATCH("[" REQ("eth_chainId", ",\"id\":1") "," REQ("eth_chainId", ",\"id\":2") "]", 2,
          .m = {FWD("1", "eth_chainId"), FWD("2", "eth_chainId")}, .max_batch = 2),
    BATCH("[" REQ("eth_chainId", ",\"id\":1") "]", 1, .m = {FWD("1", "eth_chainId")}, .max_batch = 1),
    BATCH(" [\n " REQ("eth_blockNumber", ",\"id\":1") " ,\r\n\t" REQ("net_version", "") "\n ] ", 2,
          .m = {FWD("1", "eth_blockNumber"), NOTE("net_version")}),
    BATCH("[" REQ("notify_sum", ",\"params\":[1,2,4]") "," REQ("notify_hello", ",\"params\":[7]") "]", 2,
          .m = {NOTE("notify_sum"), NOTE("notify_hello")}),
    BATCH("[" REQ("admin_peers", "") "," REQ("eth_subscribe", "") "," REQ("rpc.x", "") "]", 3,
          .m = {BLKN("admin_peers", E_BLOCK), BLKN("eth_subscribe", E_WS), BLKN("rpc.x", E_RPC)}, .answer = ""),
    BATCH("[" REQ("admin_peers", ",\"id\":1") ",{\"jsonrpc\":\"2.0\",\"method\":1},"
          REQ("eth_chainId", ",\"params\":1") "," REQ("miner_stop", "") ",{\"jsonrpc\":\"2.0\",\"method\":\"x\","
          "\"id\":true},7," REQ("eth_chainId", ",\"id\":\"a\",\"id\":\"b\"") "]", 7,
          .m = {BLK("1", "admin_peers", E_BLOCK), INV(NULL, "", E_METH), INV(NULL, "eth_chainId", E_PARAMS),
                BLKN("miner_stop", E_BLOCK), INV(NULL, "", E_ID), INV(NULL, "", E_OBJ), INV(NULL, "", E_DUP)},
          .answer = "["
                    "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":"
                    "\"admin_peers: this method is not allowed by the gateway\"}},"
                    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":"
                    "\"invalid request: \\\"method\\\" must be a string\"}},"
                    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":"
                    "\"invalid request: \\\"params\\\" must be an array or an object\"}},"
                    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":"
                    "\"invalid request: \\\"id\\\" must be a string, a number or null\"}},"
                    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":"
                    "\"invalid request: a batch member must be a JSON object\"}},"
                    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":"
                    "\"invalid request: a member name is repeated or ambiguous (a name twice, even escaped, or in another case)\"}}"
                    "]"),
    BATCH("[" REQ("eth_getTransactionReceipt", ",\"params\":[\"0xab\"],\"id\":\"r\"") ","
          REQ("eth_subscribe", ",\"id\":2") "," REQ("eth_sendRawTransaction", ",\"params\":[\"0x1\"],\"id\":3") "]", 3,
          .m = {FWD("\"r\"", "eth_getTransactionReceipt"), BLK("2", "eth_subscribe", E_WS),
                FWD("3", "eth_sendRawTransaction")},
          .answer = "[{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32601,\"message\":\"eth_subscribe: "
                    "subscriptions need a WebSocket connection; this gateway serves JSON-RPC over HTTP\"}}]"),
    BATCH("[" REQ("getSlot", ",\"id\":1") "," REQ("signVote", ",\"id\":2") "," REQ("slotSubscribe", ",\"id\":3") "]",
          3, .m = {FWD("1", "getSlot"), BLK("2", "signVote", E_BLOCK), BLK("3", "slotSubscribe", E_WS)}, SOL),
    BATCH("[{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"id\":1},\"x\":[{\"id\":2}]},"
          "{\"params\":[{\"id\":3}],\"id\":4,\"jsonrpc\":\"2.0\",\"method\":\"m\"}]", 2,
          .m = {NOTE("m"), FWD("4", "m")}),
};

/* ---- checks ------------------------------------------------------------ */

static const char *span_str(const char *buf, wire_span_t s)
{
    static char out[4][4096];
    static unsigned next;
    char *o = out[next++ % 4];
    snprintf(o, sizeof out[0], "%.*s", (int)s.len, buf + s.off);
    return o;
}

static gw_rpc_limits_t limits_of(const rpc_case_t *c)
{
    gw_rpc_limits_t lim = {c->max_batch ? c->max_batch : 100, c->chain, NULL, 0};
    if (c->blocked == BL_DEFAULT) {
        lim.blocked = policy_method_default_blocked(c->chain);
        while (lim.blocked[lim.nblocked] != NULL)
            lim.nblocked++;
    } else if (c->blocked == BL_CUSTOM) {
        lim.blocked = custom_blocked;
        lim.nblocked = sizeof custom_blocked / sizeof custom_blocked[0];
    }
    return lim;
}

/* What the gateway answers by itself, built as gateway/gw_reply.c builds it. */
static void local_answer(sl_buf_t *out, const char *body, const gw_rpc_request_t *rpc)
{
    if (rpc->kind == GW_RPC_REJECT) {
        wire_rpc_error(out, body, (wire_span_t){0, 0}, rpc->reject_code, rpc->reject_msg, NULL);
        return;
    }
    size_t written = 0;
    for (size_t i = 0; i < rpc->nmembers; i++) {
        const gw_member_t *m = &rpc->members[i];
        if (m->status == GW_MEMBER_FORWARD || m->notification)
            continue;
        if (rpc->kind == GW_RPC_BATCH)
            sl_buf_append_str(out, written ? "," : "[");
        written++;
        if (m->status == GW_MEMBER_INVALID) {
            wire_rpc_error(out, body, m->id, WIRE_RPC_INVALID_REQUEST, m->error, NULL);
        } else {
            char msg[WIRE_RPC_METHOD_MAX + 160];
            snprintf(msg, sizeof msg, "%s: %s", m->name, m->error);
            wire_rpc_error(out, body, m->id, WIRE_RPC_METHOD_NOT_FOUND, msg, NULL);
        }
    }
    if (rpc->kind == GW_RPC_BATCH && written)
        sl_buf_append_char(out, ']');
}

/* The span lies in the body and is exactly one JSON value, trimmed. */
static void expect_value_span(const char *row, const char *what, const char *body, size_t len, wire_span_t s)
{
    cr_assert_gt(s.len, 0, "%s: %s is empty", row, what);
    cr_assert(s.off <= len && s.len <= len - s.off, "%s: %s [%u,+%u) outside the body of %zu bytes", row, what,
              s.off, s.len, len);
    wire_json_kind_t kind;
    wire_span_t v;
    cr_expect_eq(wire_json_validate(body + s.off, s.len, &kind, &v), SL_OK, "%s: %s '%s' is not one value", row,
                 what, span_str(body, s));
    cr_expect(v.off == 0 && v.len == s.len, "%s: %s '%s' is not trimmed", row, what, span_str(body, s));
}

static void check_member(const char *row, size_t i, const rpc_case_t *c, const char *body, size_t len,
                         const gw_member_t *m)
{
    const want_member_t *w = &c->m[i];
    char r[160];
    snprintf(r, sizeof r, "%s member %zu", row, i);
    cr_expect_eq(m->status, w->status, "%s: status %d, want %d (error '%s')", r, m->status, w->status,
                 m->error ? m->error : "");
    expect_value_span(r, "raw", body, len, m->raw);
    if (w->id) {
        cr_expect_str_eq(span_str(body, m->id), w->id, "%s: id", r);
        cr_expect(m->id.off > m->raw.off && m->id.off + m->id.len < m->raw.off + m->raw.len,
                  "%s: id outside the member", r);
    } else {
        cr_expect_eq(m->id.len, 0, "%s: id should be none, is '%s'", r, span_str(body, m->id));
    }
    cr_expect_eq(m->notification, w->notification, "%s: notification", r);
    cr_expect_str_eq(m->name, w->name, "%s: name", r);
    if (w->error)
        cr_expect(m->error && strcmp(m->error, w->error) == 0, "%s: error '%s', want '%s'", r,
                  m->error ? m->error : "(null)", w->error);
    else
        cr_expect_null(m->error, "%s: error '%s' on a forwarded member", r, m->error);
    if (m->status != GW_MEMBER_INVALID) {
        const policy_method_t *want = policy_method_lookup(c->chain, m->name, strlen(m->name));
        cr_expect_eq(m->method, want, "%s: method row", r);
    }
}

static void check_answer(const char *row, const rpc_case_t *c, const char *body, const gw_rpc_request_t *rpc)
{
    sl_buf_t out = SL_BUF_INIT;
    local_answer(&out, body, rpc);
    cr_expect_str_eq(out.len ? out.base : "", c->answer, "%s: answer", row);
    sl_buf_dispose(&out);

    /* with nothing to forward, gw_reply_build must send exactly that */
    for (size_t i = 0; i < rpc->nmembers; i++)
        if (rpc->members[i].status == GW_MEMBER_FORWARD)
            return;
    gw_reply_t reply;
    gw_reply_build(&reply, body, rpc, NULL, NULL, 0, NULL);
    if (c->answer[0] == '\0') {
        cr_expect_eq(reply.status, 204, "%s: reply status %d, want 204", row, reply.status);
    } else {
        cr_expect_eq(reply.status, 200, "%s: reply status", row);
        cr_expect(reply.len == strlen(c->answer) && memcmp(reply.body, c->answer, reply.len) == 0,
                  "%s: gw_reply_build sent '%.*s'", row, (int)reply.len, reply.body);
    }
    gw_reply_dispose(&reply);
}

static void run_case(size_t idx, const rpc_case_t *c)
{
    size_t len = c->len ? c->len : strlen(c->in);
    char row[96];
    snprintf(row, sizeof row, "row %zu '%.50s'", idx, c->in);
    /* a private copy with no terminator after it, so ASan sees any over-read */
    char *body = malloc(len ? len : 1);
    memcpy(body, c->in, len);
    gw_rpc_limits_t lim = limits_of(c);
    arena_t arena = {0};
    gw_rpc_request_t rpc;
    gw_rpc_parse(body, len, &lim, arena_alloc, &arena, &rpc);

    cr_expect_eq(rpc.kind, c->kind, "%s: kind %d, want %d (reject '%s')", row, rpc.kind, c->kind, rpc.reject_msg);
    if (rpc.kind == c->kind && c->kind == GW_RPC_REJECT) {
        cr_expect_eq(rpc.reject_code, c->code, "%s: reject code", row);
        cr_expect_str_eq(rpc.reject_msg, c->reject_msg, "%s: reject message", row);
        cr_expect_eq(rpc.nmembers, 0, "%s: members on a reject", row);
    } else if (rpc.kind == c->kind) {
        cr_expect_eq(rpc.nmembers, c->n, "%s: %zu members, want %zu", row, rpc.nmembers, c->n);
        for (size_t i = 0; i < rpc.nmembers && i < c->n; i++)
            check_member(row, i, c, body, len, &rpc.members[i]);
        if (c->kind == GW_RPC_SINGLE && rpc.nmembers == 1) {
            wire_json_kind_t k;
            wire_span_t v;
            cr_assert_eq(wire_json_validate(body, len, &k, &v), SL_OK);
            cr_expect(rpc.members[0].raw.off == v.off && rpc.members[0].raw.len == v.len,
                      "%s: a single's raw is the whole body, trimmed", row);
        }
        for (size_t i = 1; i < rpc.nmembers; i++)
            cr_expect_gt(rpc.members[i].raw.off, rpc.members[i - 1].raw.off + rpc.members[i - 1].raw.len,
                         "%s: members %zu and %zu overlap", row, i - 1, i);
    }
    if (c->answer)
        check_answer(row, c, body, &rpc);
    arena_free(&arena);
    free(body);
}

Test(rpc, table)
{
    size_t n = sizeof rpc_cases / sizeof rpc_cases[0];
    cr_assert_geq(n, 40);
    size_t answers = 0;
    for (size_t i = 0; i < n; i++) {
        run_case(i, &rpc_cases[i]);
        answers += rpc_cases[i].answer != NULL;
    }
    cr_assert_geq(answers, 10);
}

/* The JSON-RPC 2.0 specification's own "invalid JSON" example, spaces and
 * all, answered with exactly the text the gateway promises. */
Test(rpc, parse_error_answer_is_exact)
{
    const char *body = "{\"jsonrpc\": \"2.0\", \"method\": \"foobar, \"params\": \"bar\", \"baz]";
    gw_rpc_limits_t lim = {100, POLICY_CHAIN_ETHEREUM, NULL, 0};
    arena_t arena = {0};
    gw_rpc_request_t rpc;
    gw_rpc_parse(body, strlen(body), &lim, arena_alloc, &arena, &rpc);
    sl_buf_t out = SL_BUF_INIT;
    local_answer(&out, body, &rpc);
    cr_expect_str_eq(out.base, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
                               "\"message\":\"parse error: the body is not valid JSON\"}}");
    sl_buf_dispose(&out);
    arena_free(&arena);
}

/* Member spans are the member's exact bytes, and the id span lies inside. */
Test(rpc, raw_spans_are_member_bytes)
{
    static const struct {
        const char *body;
        const char *raw[4];
        const char *id[4];
    } cases[] = {
        {"[ {\"jsonrpc\":\"2.0\",\"method\":\"a\",\"id\":1} ,\n\t{ \"id\" : \"x\" , \"method\":\"b\",\"jsonrpc\":\"2.0\" }"
         "  ,7 ,[ ]]",
         {"{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"id\":1}", "{ \"id\" : \"x\" , \"method\":\"b\",\"jsonrpc\":\"2.0\" }",
          "7", "[ ]"},
         {"1", "\"x\"", NULL, NULL}},
        {"[{\"id\":[1],\"jsonrpc\":\"2.0\",\"method\":\"a\"},{\"id\":123456789012345678901234567890.5e-3,"
         "\"jsonrpc\":\"2.0\",\"method\":\"a\"}]",
         {"{\"id\":[1],\"jsonrpc\":\"2.0\",\"method\":\"a\"}",
          "{\"id\":123456789012345678901234567890.5e-3,\"jsonrpc\":\"2.0\",\"method\":\"a\"}"},
         {NULL, "123456789012345678901234567890.5e-3"}},
        {"\n{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"id\":null}\n",
         {"{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"id\":null}"},
         {"null"}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *body = cases[c].body;
        gw_rpc_limits_t lim = {100, POLICY_CHAIN_ETHEREUM, NULL, 0};
        arena_t arena = {0};
        gw_rpc_request_t rpc;
        gw_rpc_parse(body, strlen(body), &lim, arena_alloc, &arena, &rpc);
        cr_assert_neq(rpc.kind, GW_RPC_REJECT, "case %zu: %s", c, rpc.reject_msg);
        size_t want = 0;
        while (want < 4 && cases[c].raw[want])
            want++;
        cr_assert_eq(rpc.nmembers, want, "case %zu", c);
        for (size_t i = 0; i < want; i++) {
            cr_expect_str_eq(span_str(body, rpc.members[i].raw), cases[c].raw[i], "case %zu member %zu raw", c, i);
            if (cases[c].id[i])
                cr_expect_str_eq(span_str(body, rpc.members[i].id), cases[c].id[i], "case %zu member %zu id", c, i);
            else
                cr_expect_eq(rpc.members[i].id.len, 0, "case %zu member %zu id", c, i);
        }
        arena_free(&arena);
    }
}

/* The members array comes from the caller's allocator, one slot per member. */
Test(rpc, allocates_through_the_callback)
{
    const char *body = "[" REQ("a", ",\"id\":1") "," REQ("b", ",\"id\":2") "," REQ("c", ",\"id\":3") "]";
    gw_rpc_limits_t lim = {3, POLICY_CHAIN_ETHEREUM, NULL, 0};
    arena_t arena = {0};
    gw_rpc_request_t rpc;
    gw_rpc_parse(body, strlen(body), &lim, arena_alloc, &arena, &rpc);
    cr_assert_eq(rpc.kind, GW_RPC_BATCH);
    cr_assert_eq(rpc.nmembers, 3);
    int found = 0;
    for (size_t i = 0; i < arena.n; i++)
        found |= arena.blocks[i] == (void *)rpc.members;
    cr_expect(found, "members not from the allocator");
    cr_expect_str_eq(rpc.members[2].name, "c");
    arena_free(&arena);

    /* a reject allocates nothing it hands back */
    gw_rpc_parse("nope", 4, &lim, arena_alloc, &arena, &rpc);
    cr_expect_eq(rpc.kind, GW_RPC_REJECT);
    cr_expect_null(rpc.members);
    arena_free(&arena);
}

/* ---- wire_rpc_error ------------------------------------------------------ */

Test(rpc, error_object)
{
    static const struct {
        const char *body;
        wire_span_t id;
        int code;
        const char *msg;
        const char *data;
        const char *want;
    } cases[] = {
        {"", {0, 0}, -32700, "parse error", NULL,
         "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"parse error\"}}"},
        {"{\"id\":42}", {6, 2}, -32601, "m: nope", NULL,
         "{\"jsonrpc\":\"2.0\",\"id\":42,\"error\":{\"code\":-32601,\"message\":\"m: nope\"}}"},
        {"{\"id\":\"a\\\"b\"}", {6, 6}, -32600, "x", NULL,
         "{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\",\"error\":{\"code\":-32600,\"message\":\"x\"}}"},
        {"{\"id\":123456789012345678901234567890}", {6, 30}, -32005, "limit", "{\"scope\":\"client\"}",
         "{\"jsonrpc\":\"2.0\",\"id\":123456789012345678901234567890,\"error\":{\"code\":-32005,"
         "\"message\":\"limit\",\"data\":{\"scope\":\"client\"}}}"},
        {"", {0, 0}, 0, "quote \" backslash \\ newline \n tab \t ctl \x01 bad \xff", "null",
         "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":0,\"message\":"
         "\"quote \\\" backslash \\\\ newline \\n tab \\t ctl \\u0001 bad \\ufffd\",\"data\":null}}"},
        {"{\"id\":null}", {6, 4}, 2147483647, "", NULL,
         "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":2147483647,\"message\":\"\"}}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_buf_t out = SL_BUF_INIT;
        sl_buf_append_str(&out, "prefix:");
        wire_rpc_error(&out, cases[i].body, cases[i].id, cases[i].code, cases[i].msg, cases[i].data);
        cr_expect_str_eq(out.base + 7, cases[i].want, "case %zu", i);
        cr_expect_eq(memcmp(out.base, "prefix:", 7), 0, "case %zu: appends", i);
        wire_json_kind_t k;
        wire_span_t v;
        cr_expect_eq(wire_json_validate(out.base + 7, out.len - 7, &k, &v), SL_OK, "case %zu: valid JSON", i);
        sl_buf_dispose(&out);
    }
}

/* ---- gw_rpc_splice_id -------------------------------------------------- */

Test(rpc, splice_id)
{
    static const struct {
        const char *answer;
        const char *body;      /* client body */
        const char *client_id; /* bytes of the client id inside body; NULL: absent */
        const char *want;
    } cases[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":\"0x1\"}", "{\"id\":\"abc\"}", "\"abc\"",
         "{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"result\":\"0x1\"}"},
        {"{\"jsonrpc\":\"2.0\",\"id\":\"7\",\"result\":[]}", "{\"id\":123456789012345678901234567890}",
         "123456789012345678901234567890",
         "{\"jsonrpc\":\"2.0\",\"id\":123456789012345678901234567890,\"result\":[]}"},
        {"{\"result\":{\"id\":1},\"id\":1}", "{\"id\":2}", "2", "{\"result\":{\"id\":1},\"id\":2}"},
        {"{\"id\":1.0e0,\"jsonrpc\":\"2.0\",\"result\":null}", "[{\"id\":1}]", "1",
         "{\"id\":1,\"jsonrpc\":\"2.0\",\"result\":null}"},
        {"{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":-32000,\"message\":\"x\"}}", "{}", NULL,
         "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,\"message\":\"x\"}}"},
        {" {\"jsonrpc\":\"2.0\", \"id\" : \"long-upstream-id\" ,\"result\":1} ", "{\"id\":-0.5}", "-0.5",
         " {\"jsonrpc\":\"2.0\", \"id\" : -0.5 ,\"result\":1} "},
        {"{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":1}", "{\"id\":\"\\u00e9\"}", "\"\\u00e9\"",
         "{\"jsonrpc\":\"2.0\",\"id\":\"\\u00e9\",\"result\":1}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *a = cases[i].answer, *body = cases[i].body;
        wire_envelope_t env;
        cr_assert_eq(wire_envelope_scan(a, strlen(a), &env), SL_OK, "case %zu", i);
        wire_span_t id = {0, 0};
        if (cases[i].client_id) {
            const char *p = strstr(body, cases[i].client_id);
            cr_assert_not_null(p);
            id = (wire_span_t){(uint32_t)(p - body), (uint32_t)strlen(cases[i].client_id)};
        }
        sl_buf_t out = SL_BUF_INIT;
        gw_rpc_splice_id(&out, a, strlen(a), env.id, body, id);
        cr_expect_str_eq(out.base, cases[i].want, "case %zu", i);
        cr_expect_eq(out.len, strlen(cases[i].want), "case %zu: length", i);
        sl_buf_dispose(&out);
    }
}

/* ---- members an upstream would read differently ------------------------ */

/* RFC 8259 compares member names after unescaping, and so do the upstreams'
 * parsers (Go's encoding/json in geth and erigon, System.Text.Json in
 * Nethermind; for a repeated name the last one wins). A second "method"
 * written with an escape must not slip past the repeated-member check: the
 * gateway would judge eth_chainId while the node runs admin_peers. */
Test(rpc, escaped_repeated_keys_are_not_forwarded)
{
    static const char *const bodies[] = {
        "{\"jsonrpc\":\"2.0\",\"method\":\"eth_chainId\",\"\\u006dethod\":\"admin_peers\",\"id\":1}",
        "{\"jsonrpc\":\"2.0\",\"\\u006dethod\":\"debug_traceTransaction\",\"method\":\"eth_chainId\",\"id\":1}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"eth_blockNumber\",\"me\\u0074hod\":\"eth_sendTransaction\",\"id\":1}",
        "[{\"jsonrpc\":\"2.0\",\"method\":\"eth_chainId\",\"id\":1,\"\\u0069d\":2}]",
    };
    rpc_case_t eth = {.chain = POLICY_CHAIN_ETHEREUM, .blocked = BL_DEFAULT};
    gw_rpc_limits_t lim = limits_of(&eth);
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        arena_t arena = {0};
        gw_rpc_request_t rpc;
        gw_rpc_parse(bodies[i], strlen(bodies[i]), &lim, arena_alloc, &arena, &rpc);
        cr_assert_neq(rpc.kind, GW_RPC_REJECT, "body %zu", i);
        cr_expect_neq(rpc.members[0].status, GW_MEMBER_FORWARD,
                      "body %zu '%s' is forwarded as '%s' although it repeats a key", i, bodies[i],
                      rpc.members[0].name);
        arena_free(&arena);
    }
}

/* A request whose "id" is written with an escape has an id all the same: it
 * is no notification, and must not be answered with silence. */
Test(rpc, escaped_id_key_is_not_a_notification)
{
    const char *body = "{\"jsonrpc\":\"2.0\",\"method\":\"eth_chainId\",\"\\u0069d\":7}";
    gw_rpc_limits_t lim = {100, POLICY_CHAIN_ETHEREUM, NULL, 0};
    arena_t arena = {0};
    gw_rpc_request_t rpc;
    gw_rpc_parse(body, strlen(body), &lim, arena_alloc, &arena, &rpc);
    cr_assert_eq(rpc.kind, GW_RPC_SINGLE);
    cr_expect_not(rpc.members[0].notification, "'%s' is taken for a notification (status %d)", body,
                  rpc.members[0].status);
    arena_free(&arena);
}

/* "\\u0000" in the raw method bytes is an escaped backslash followed by
 * "u0000": a six-character name with no NUL in it. */
Test(rpc, escaped_backslash_is_not_a_nul)
{
    const char *body = "{\"jsonrpc\":\"2.0\",\"method\":\"a\\\\u0000\",\"id\":1}";
    gw_rpc_limits_t lim = {100, POLICY_CHAIN_ETHEREUM, NULL, 0};
    arena_t arena = {0};
    gw_rpc_request_t rpc;
    gw_rpc_parse(body, strlen(body), &lim, arena_alloc, &arena, &rpc);
    cr_assert_eq(rpc.kind, GW_RPC_SINGLE);
    cr_expect_eq(rpc.members[0].status, GW_MEMBER_FORWARD, "error '%s'",
                 rpc.members[0].error ? rpc.members[0].error : "");
    cr_expect_str_eq(rpc.members[0].name, "a\\u0000");
    arena_free(&arena);
}

/* issue 33: a member outside its key's scope (gateway/gw_scope.c marks it)
 * is answered -32600 with data.reason; a single call so refused is 403, a
 * batch 200 with the other members' answers beside it. */
static void reply_denied(const char *body, size_t deny, int want_status, const char *want)
{
    arena_t a = {0};
    gw_rpc_limits_t lim = {.max_batch = 100, .chain = POLICY_CHAIN_ETHEREUM};
    gw_rpc_request_t rpc;
    gw_rpc_parse(body, strlen(body), &lim, arena_alloc, &a, &rpc);
    gw_member_t *m = &rpc.members[deny];
    m->status = GW_MEMBER_DENIED;
    m->denied = POLICY_ACCESS_METHOD;
    m->error = "method not allowed: this key may not call net_peerCount";
    for (size_t i = 0; i < rpc.nmembers; i++)
        if (rpc.members[i].status == GW_MEMBER_FORWARD) /* answered here (invalid): no upstream needed */
            rpc.members[i].status = GW_MEMBER_INVALID, rpc.members[i].error = "x";
    gw_reply_t r;
    gw_reply_build(&r, body, &rpc, NULL, NULL, 0, NULL);
    cr_assert_eq(r.status, want_status);
    cr_assert(r.len > 0 && memmem(r.body, r.len, want, strlen(want)) != NULL, "%.*s", (int)r.len, r.body);
    if (rpc.kind == GW_RPC_SINGLE)
        cr_assert_str_eq(r.outcome, "denied");
    gw_reply_dispose(&r);
    arena_free(&a);
}

Test(rpc, denied_members)
{
    reply_denied("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"net_peerCount\"}", 0, 403,
                 "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32600,\"message\":\"method not allowed: this key "
                 "may not call net_peerCount\",\"data\":{\"reason\":\"method_not_allowed\"}}}");
    reply_denied("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_chainId\"},"
                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"net_peerCount\"}]",
                 1, 200, "\"id\":2,\"error\":{\"code\":-32600");
}
