/* tests/policy/test_attempt.c: policy/attempt.h: what one finished attempt
 * means. One table of attempts (every transport failure class, answers of
 * each verdict, refusals with and without Retry-After, batches, request
 * shapes held and settled), each with every action it must give; bodies are
 * real JSON, scanned as pool/pool_answer.c scans them. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "policy/attempt.h"

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_ITEMS 4

static const policy_method_t m_read = {"eth_getBalance", POLICY_CLASS_READ, POLICY_PRIO_NORMAL, 1, 1, 0};
static const policy_method_t m_heavy = {"eth_getLogs", POLICY_CLASS_READ, POLICY_PRIO_LOW, 1, 0, 0};
static const policy_method_t m_write = {"eth_sendRawTransaction", POLICY_CLASS_WRITE, POLICY_PRIO_HIGH, 0, 0, 0};

/* carried items */
#define READ {.method = &m_read, .cheap = 1, .pending = 1}
#define HEAVY {.method = &m_heavy, .pending = 1}
#define BEHIND_READ {.method = &m_read, .cheap = 1, .pending = 1, .null_behind = 1}
#define LOOKUP {.method = &m_read, .cheap = 1, .pending = 1, .null_next = 1}
#define OFF_RANGE {.method = &m_heavy, .pending = 1, .off_range = 1}
#define WRITE {.method = &m_write, .pending = 1}
#define WRITE_TX {.method = &m_write, .pending = 1, .has_txid = 1}
#define ITEMS(...)                                                                                    \
    .items = (const policy_item_facts_t[]){__VA_ARGS__},                                              \
    .nitems = sizeof((policy_item_facts_t[]){__VA_ARGS__}) / sizeof(policy_item_facts_t)

/* how the exchange ended */
#define A POLICY_FAIL_F_AMBIG
#define T POLICY_FAIL_F_TIMEOUT
#define L POLICY_FAIL_F_LOCAL
#define FAILED(o, fl) .failed = 1, .fail_outcome = POLICY_OUTCOME_##o, .fail_flags = (fl)

/* bodies */
#define OBJ(members) "{\"jsonrpc\":\"2.0\",\"id\":1," members "}"
#define RESULT OBJ("\"result\":\"0x1\"")
#define ERROR(code, msg) OBJ("\"error\":{\"code\":" #code ",\"message\":\"" msg "\"}")
#define AT_NULL(code, msg) "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":" #code ",\"message\":\"" msg "\"}}"

/* wanted actions */
#define OUT(o) .outcome = POLICY_OUTCOME_##o
#define END(e) .end = POLICY_END_##e
#define REC(o, fo) .record = POLICY_RECORD_NOW, .record_outcome = POLICY_OUTCOME_##o, .failover = (fo)
#define HOLD(o, s) .record = POLICY_RECORD_HOLD, .record_outcome = POLICY_OUTCOME_##o, .failover = 1, .shape = POLICY_SHAPE_##s
#define DEMOTE(c) .demote = POLICY_DEMOTE_##c
#define I_NEXT(fl) {.what = POLICY_ITEM_NEXT, .count = POLICY_COUNT_FAILURE, .seen = (fl)}
#define I_AMBIG(fl) {.what = POLICY_ITEM_FAIL_AMBIGUOUS, .count = POLICY_COUNT_FAILURE, .seen = (fl)}
#define I_LOCAL(w) {.what = POLICY_ITEM_##w, .count = POLICY_COUNT_LOCAL}
#define I_ANSWER(v) {.what = POLICY_ITEM_ANSWER, .object = 1, .verdict = POLICY_VERDICT_##v}
#define I_KEPT(w, v) {.what = POLICY_ITEM_##w, .count = POLICY_COUNT_FAILURE, .object = 1, .fallback = 1, .verdict = POLICY_VERDICT_##v}
#define I_REFUSED(ms) {.what = POLICY_ITEM_NEXT, .count = POLICY_COUNT_RATE_LIMITED, .refused = 1, .retry_ms = (ms)}

typedef struct attempt_case {
    const char *name;
    policy_attempt_facts_t f;
    const char *body;                 /* one object: scanned into f.obj (f.obj.id as given) */
    const char *members[MAX_ITEMS];   /* a batch's array: item i's member, NULL if missing */
    policy_attempt_actions_t want;    /* items aside */
    policy_item_action_t items[MAX_ITEMS];
} attempt_case_t;

static const attempt_case_t cases[] = {
    /* ---- transport failures, one per class ---- */
    {"DNS, refused or TLS: nothing sent, another endpoint", {FAILED(CONNECT, 0), ITEMS(READ)},
     .want = {OUT(CONNECT), REC(CONNECT, 1)}, .items = {I_NEXT(0)}},
    {"a write that could not connect is not ambiguous", {FAILED(CONNECT, 0), ITEMS(WRITE)},
     .want = {OUT(CONNECT), REC(CONNECT, 1)}, .items = {I_NEXT(0)}},
    {"connect timeout of a cheap read: demoted, no request shape", {FAILED(TIMEOUT, T), ITEMS(READ)},
     .want = {OUT(TIMEOUT), REC(TIMEOUT, 1), DEMOTE(TIMEOUT)}, .items = {I_NEXT(T)}},
    {"connect timeout of a heavy call: not demoted", {FAILED(TIMEOUT, T), ITEMS(HEAVY)},
     .want = {OUT(TIMEOUT), REC(TIMEOUT, 1)}, .items = {I_NEXT(T)}},
    {"reset of a cheap read: demoted", {FAILED(RESET, A), .sent = 1, ITEMS(READ)},
     .want = {OUT(RESET), REC(RESET, 1), DEMOTE(RESET)}, .items = {I_NEXT(A)}},
    {"reset of a sent write: ambiguous, the call stops", {FAILED(RESET, A), .sent = 1, ITEMS(WRITE)},
     .want = {OUT(RESET), REC(RESET, 0)}, .items = {I_AMBIG(A)}},
    {"reset of a sent write with resend_writes: re-sent", {FAILED(RESET, A), .sent = 1, .resend_writes = 1, ITEMS(WRITE)},
     .want = {OUT(RESET), REC(RESET, 1)}, .items = {I_NEXT(A)}},
    {"first-byte timeout of a heavy call: held as slow_call", {FAILED(TIMEOUT, A | T), .sent = 1, ITEMS(HEAVY)},
     .want = {OUT(TIMEOUT), END(TIMEOUT), HOLD(TIMEOUT, SLOW_CALL)}, .items = {I_NEXT(A | T)}},
    {"attempt timeout of a cheap read: the endpoint's, demoted", {FAILED(TIMEOUT, A | T), .sent = 1, ITEMS(READ)},
     .want = {OUT(TIMEOUT), END(TIMEOUT), REC(TIMEOUT, 1), DEMOTE(TIMEOUT)}, .items = {I_NEXT(A | T)}},
    {"heavy timeout with nowhere to go: recorded now", {FAILED(TIMEOUT, A | T), .sent = 1, ITEMS(WRITE)},
     .want = {OUT(TIMEOUT), END(TIMEOUT), REC(TIMEOUT, 0)}, .items = {I_AMBIG(A | T)}},
    {"malformed HTTP", {FAILED(MALFORMED, A), .sent = 1, ITEMS(READ)},
     .want = {OUT(MALFORMED), REC(MALFORMED, 1)}, .items = {I_NEXT(A)}},
    {"answer over the size cap: held as too_large", {FAILED(MALFORMED, A), .sent = 1, .fail_too_large = 1, ITEMS(READ)},
     .want = {OUT(MALFORMED), END(TOO_LARGE), HOLD(MALFORMED, TOO_LARGE)}, .items = {I_NEXT(A)}},
    {"local failure before sending: counted apart, says nothing", {FAILED(LOCAL, L), ITEMS(READ)},
     .want = {OUT(LOCAL), END(NEUTRAL), REC(LOCAL, 1)}, .items = {I_LOCAL(NEXT)}},
    {"local failure after sending a write: ambiguous", {FAILED(LOCAL, L), .sent = 1, ITEMS(WRITE)},
     .want = {OUT(LOCAL), END(NEUTRAL), REC(LOCAL, 0)}, .items = {I_LOCAL(FAIL_AMBIGUOUS)}},
    {"reset of a sent write in a broadcast: pending for the other endpoints' answers, seen ambiguous",
     {FAILED(RESET, A), .sent = 1, .broadcast = 1, ITEMS(WRITE)},
     .want = {OUT(RESET), REC(RESET, 1)}, .items = {I_NEXT(A)}},
    {"local failure after sending a write in a broadcast: counted as a failure, seen ambiguous",
     {FAILED(LOCAL, L), .sent = 1, .broadcast = 1, ITEMS(WRITE)},
     .want = {OUT(LOCAL), END(NEUTRAL), REC(LOCAL, 1)}, .items = {I_NEXT(A)}},
    {"a write in a broadcast that could not connect: not ambiguous", {FAILED(CONNECT, 0), .broadcast = 1, ITEMS(WRITE)},
     .want = {OUT(CONNECT), REC(CONNECT, 1)}, .items = {I_NEXT(0)}},
    /* ---- the keep-alive race ---- */
    {"kept-alive connection closed before a byte: the same endpoint again, nothing counts",
     {FAILED(RESET, A), .sent = 1, .reused = 1, .batch = 1, ITEMS(READ, HEAVY)}, .want = {.retry_same = 1}},
    {"... once per call", {FAILED(RESET, A), .sent = 1, .reused = 1, .stale_retry_used = 1, ITEMS(READ)},
     .want = {OUT(RESET), REC(RESET, 1), DEMOTE(RESET)}, .items = {I_NEXT(A)}},
    {"... never for a write", {FAILED(RESET, A), .sent = 1, .reused = 1, .batch = 1, ITEMS(READ, WRITE)},
     .want = {OUT(RESET), REC(RESET, 1)}, .items = {I_NEXT(A), I_AMBIG(A)}},
    {"... nor once the answer had begun", {FAILED(RESET, A), .sent = 1, .reused = 1, .got_bytes = 1, ITEMS(READ)},
     .want = {OUT(RESET), REC(RESET, 1), DEMOTE(RESET)}, .items = {I_NEXT(A)}},
    /* ---- 2xx answers ---- */
    {"success", {.status = 200, ITEMS(READ)}, RESULT, .want = {REC(OK, 0)}, .items = {I_ANSWER(SUCCESS)}},
    {"success, other items still pending: the call moves on", {.status = 200, .pending_elsewhere = 1, ITEMS(READ)},
     RESULT, .want = {REC(OK, 1)}, .items = {I_ANSWER(SUCCESS)}},
    {"an accepted write is pinned", {.status = 200, ITEMS(WRITE)}, RESULT, .want = {REC(OK, 0)},
     .items = {{.what = POLICY_ITEM_ANSWER, .object = 1, .pin = 1}}},
    {"deterministic error: answered", {.status = 200, ITEMS(HEAVY)}, ERROR(3, "execution reverted"),
     .want = {OUT(DETERMINISTIC), REC(DETERMINISTIC, 0)}, .items = {I_ANSWER(DETERMINISTIC)}},
    {"transient error of a read: the next endpoint", {.status = 200, ITEMS(READ)}, ERROR(-32603, "internal error"),
     .want = {OUT(HTTP_ERROR), REC(HTTP_ERROR, 1)}, .items = {I_NEXT(0)}},
    {"transient error of a write: ambiguous", {.status = 200, ITEMS(WRITE)}, ERROR(-32603, "internal error"),
     .want = {OUT(HTTP_ERROR), REC(HTTP_ERROR, 0)}, .items = {I_AMBIG(0)}},
    {"a heavy call the provider gave up on for time: held as slow_call", {.status = 200, ITEMS(HEAVY)},
     ERROR(-32002, "request timed out"), .want = {OUT(HTTP_ERROR), END(GAVE_UP), HOLD(HTTP_ERROR, SLOW_CALL)},
     .items = {I_NEXT(0)}},
    {"a cheap read given up on: the endpoint's", {.status = 200, ITEMS(READ)}, ERROR(-32002, "request timed out"),
     .want = {OUT(HTTP_ERROR), END(GAVE_UP), REC(HTTP_ERROR, 1)}, .items = {I_NEXT(0)}},
    {"unsupported: no retry here, its answer kept as a fallback", {.status = 200, ITEMS(WRITE)},
     ERROR(-32601, "the method does not exist"), .want = {OUT(UNSUPPORTED), REC(UNSUPPORTED, 1), .no_retry = 1},
     .items = {I_KEPT(NEXT, UNSUPPORTED)}},
    {"missing data of a read: kept as a fallback", {.status = 200, ITEMS(READ)}, ERROR(-32000, "header not found"),
     .want = {OUT(MISSING_DATA), REC(MISSING_DATA, 1)}, .items = {I_KEPT(NEXT, MISSING_DATA)}},
    {"an endpoint behind the block (BEHIND: geth's range past its head): the next one, kept as a fallback",
     {.status = 200, ITEMS(HEAVY)}, ERROR(-32602, "block range extends beyond current head block"),
     .want = {OUT(MISSING_DATA), REC(MISSING_DATA, 1)}, .items = {I_KEPT(NEXT, MISSING_DATA)}},
    {"null for a block another endpoint has: this one is behind, the next one", {.status = 200, ITEMS(BEHIND_READ)},
     OBJ("\"result\":null"), .want = {OUT(MISSING_DATA), REC(MISSING_DATA, 1)}, .items = {I_KEPT(NEXT, MISSING_DATA)}},
    {"null for a block nobody is known to have: the answer", {.status = 200, ITEMS(READ)}, OBJ("\"result\":null"),
     .want = {REC(OK, 0)}, .items = {I_ANSWER(SUCCESS)}},
    {"null of a not_null lookup: kept, the next endpoint, this one not in later rounds", {.status = 200, ITEMS(LOOKUP)},
     OBJ("\"result\":null"), .want = {OUT(MISSING_DATA), REC(MISSING_DATA, 1), .no_retry = 1},
     .items = {I_KEPT(NEXT, MISSING_DATA)}},
    {"a value of a not_null lookup is the answer", {.status = 200, ITEMS(LOOKUP)}, RESULT, .want = {REC(OK, 0)},
     .items = {I_ANSWER(SUCCESS)}},
    {"an error of a not_null lookup is judged as any", {.status = 200, ITEMS(LOOKUP)}, ERROR(3, "execution reverted"),
     .want = {OUT(DETERMINISTIC), REC(DETERMINISTIC, 0)}, .items = {I_ANSWER(DETERMINISTIC)}},
    {"a value for a block from a lagging endpoint is still the answer", {.status = 200, ITEMS(BEHIND_READ)}, RESULT,
     .want = {REC(OK, 0)}, .items = {I_ANSWER(SUCCESS)}},
    {"logs outside the range asked for (an endpoint ignoring it): a failed attempt, never the answer",
     {.status = 200, ITEMS(OFF_RANGE)}, OBJ("\"result\":[]"), .want = {OUT(HTTP_ERROR), REC(HTTP_ERROR, 1)},
     .items = {I_NEXT(0)}},
    {"missing data of a write: ambiguous", {.status = 200, ITEMS(WRITE)}, ERROR(-32000, "header not found"),
     .want = {OUT(MISSING_DATA), REC(MISSING_DATA, 0)}, .items = {I_KEPT(FAIL_AMBIGUOUS, MISSING_DATA)}},
    {"already known: answered with the transaction id", {.status = 200, ITEMS(WRITE_TX)},
     ERROR(-32000, "already known"), .want = {REC(OK, 0)}, .items = {{.what = POLICY_ITEM_TXID}}},
    {"already known, no id readable: the node's answer", {.status = 200, ITEMS(WRITE)}, ERROR(-32000, "already known"),
     .want = {REC(OK, 0)}, .items = {I_ANSWER(DETERMINISTIC)}},
    {"nonce too low: checked by hash here", {.status = 200, ITEMS(WRITE_TX)}, ERROR(-32000, "nonce too low"),
     .want = {OUT(DETERMINISTIC), REC(DETERMINISTIC, 1)},
     .items = {{.what = POLICY_ITEM_VERIFY, .object = 1, .verdict = POLICY_VERDICT_DETERMINISTIC}}},
    {"nonce too low, no id readable: the node's answer", {.status = 200, ITEMS(WRITE)}, ERROR(-32000, "nonce too low"),
     .want = {OUT(DETERMINISTIC), REC(DETERMINISTIC, 0)}, .items = {I_ANSWER(DETERMINISTIC)}},
    {"2xx that is no JSON-RPC: malformed, which a write may have reached", {.status = 200, ITEMS(WRITE)},
     .want = {OUT(MALFORMED), REC(MALFORMED, 0)}, .items = {I_AMBIG(A)}},
    {"2xx at another id: malformed", {.status = 200, .obj.id = POLICY_ID_OTHER, ITEMS(READ)}, RESULT,
     .want = {OUT(MALFORMED), REC(MALFORMED, 1)}, .items = {I_NEXT(A)}},
    {"a parse error at id null: held as id_unanswerable", {.status = 200, .obj.id = POLICY_ID_NULL, ITEMS(READ)},
     AT_NULL(-32700, "Parse error"), .want = {OUT(MALFORMED), END(UNREAD), HOLD(MALFORMED, ID_UNANSWERABLE)},
     .items = {I_NEXT(A)}},
    {"another error at id null: the endpoint's", {.status = 200, .obj.id = POLICY_ID_NULL, ITEMS(READ)},
     AT_NULL(-32603, "no backend available"), .want = {OUT(MALFORMED), REC(MALFORMED, 1)}, .items = {I_NEXT(A)}},
    {"an answer for an item the other attempt settled", {.status = 200, ITEMS({.method = &m_read, .cheap = 1})},
     RESULT, .want = {REC(OK, 0)}},
    /* ---- other statuses ---- */
    {"401: transient, not ambiguous for a write", {.status = 401, ITEMS(WRITE)},
     .want = {OUT(HTTP_ERROR), REC(HTTP_ERROR, 1)}, .items = {I_NEXT(0)}},
    {"401 with a JSON-RPC error at id null: refused before processing, not ambiguous for a write",
     {.status = 401, .obj.id = POLICY_ID_NULL, ITEMS(WRITE)}, AT_NULL(-32600, "Must be authenticated!"),
     .want = {OUT(HTTP_ERROR), REC(HTTP_ERROR, 1)}, .items = {I_NEXT(0)}},
    {"403 at another id: the status decides", {.status = 403, .obj.id = POLICY_ID_OTHER, ITEMS(READ)},
     AT_NULL(-32000, "forbidden"), .want = {OUT(HTTP_ERROR), REC(HTTP_ERROR, 1)}, .items = {I_NEXT(0)}},
    {"405: unsupported here", {.status = 405, ITEMS(READ)},
     .want = {OUT(UNSUPPORTED), REC(UNSUPPORTED, 1), .no_retry = 1}, .items = {I_NEXT(0)}},
    {"429 without Retry-After: sluice's own backoff", {.status = 429, .batch = 1, ITEMS(READ, WRITE)},
     .want = {OUT(RATE_LIMITED), END(NEUTRAL), REC(RATE_LIMITED, 1), .rate_limit = 1},
     .items = {I_REFUSED(0), I_REFUSED(0)}},
    {"429 with Retry-After", {.status = 429, .retry_after_ms = 2000, ITEMS(READ)},
     .want = {OUT(RATE_LIMITED), END(NEUTRAL), REC(RATE_LIMITED, 1), .rate_limit = 1, .rate_limit_ms = 2000},
     .items = {I_REFUSED(2000)}},
    {"429 whose body says backoff_seconds: the body's hint", {.status = 429, .retry_after_ms = 2000, ITEMS(READ)},
     OBJ("\"error\":{\"code\":-32005,\"message\":\"project ID request rate exceeded\",\"data\":{\"backoff_seconds\":30.0}}"),
     .want = {OUT(RATE_LIMITED), END(NEUTRAL), REC(RATE_LIMITED, 1), .rate_limit = 1, .rate_limit_ms = 30000},
     .items = {I_REFUSED(30000)}},
    {"429 for the sender's own limit (OP-Stack): answered", {.status = 429, ITEMS(READ)},
     ERROR(-32017, "sender is over rate limit"), .want = {OUT(DETERMINISTIC), REC(DETERMINISTIC, 0)},
     .items = {I_ANSWER(DETERMINISTIC)}},
    {"... for a whole batch: the status decides", {.status = 429, .batch = 1, ITEMS(READ, READ)},
     ERROR(-32017, "sender is over rate limit"),
     .want = {OUT(RATE_LIMITED), END(NEUTRAL), REC(RATE_LIMITED, 1), .rate_limit = 1},
     .items = {I_REFUSED(0), I_REFUSED(0)}},
    {"503 without JSON: transient, a write ambiguous", {.status = 503, ITEMS(WRITE)},
     .want = {OUT(HTTP_ERROR), REC(HTTP_ERROR, 0)}, .items = {I_AMBIG(0)}},
    {"504 of a heavy call: given up for time, held", {.status = 504, ITEMS(HEAVY)},
     .want = {OUT(HTTP_ERROR), END(GAVE_UP), HOLD(HTTP_ERROR, SLOW_CALL)}, .items = {I_NEXT(0)}},
    {"500 saying already known: the broadcast succeeded", {.status = 500, ITEMS(WRITE_TX)},
     ERROR(-32000, "already known"), .want = {REC(OK, 0)}, .items = {{.what = POLICY_ITEM_TXID}}},
    {"500 with another error: transient", {.status = 500, ITEMS(READ)}, ERROR(-32000, "something broke"),
     .want = {OUT(HTTP_ERROR), REC(HTTP_ERROR, 1)}, .items = {I_NEXT(0)}},
    /* ---- batches ---- */
    {"batch: each member its own verdict, a missing one fails alone",
     {.status = 200, .batch = 1, .body = POLICY_BODY_ARRAY, ITEMS(READ, HEAVY, READ, READ)},
     .members = {RESULT, ERROR(3, "execution reverted"), ERROR(-32603, "internal error"), NULL},
     .want = {OUT(MALFORMED), REC(MALFORMED, 1)},
     .items = {I_ANSWER(SUCCESS), I_ANSWER(DETERMINISTIC), I_NEXT(0), I_NEXT(0)}},
    {"batch: a rate-limited member", {.status = 200, .batch = 1, .body = POLICY_BODY_ARRAY, .retry_after_ms = 1000,
                                       ITEMS(READ, READ)},
     .members = {RESULT, ERROR(-32012, "credits limited to 6000/sec")},
     .want = {OUT(RATE_LIMITED), END(NEUTRAL), REC(RATE_LIMITED, 1), .rate_limit = 1, .rate_limit_ms = 1000},
     .items = {I_ANSWER(SUCCESS), I_REFUSED(1000)}},
    {"batch: a member the other attempt settled is left alone",
     {.status = 200, .batch = 1, .body = POLICY_BODY_ARRAY, ITEMS({.method = &m_read, .cheap = 1}, READ)},
     .members = {RESULT, RESULT}, .want = {REC(OK, 0)}, .items = {{0}, I_ANSWER(SUCCESS)}},
    {"batch refused as a whole: unsupported here", {.status = 200, .batch = 1, ITEMS(READ, READ)},
     ERROR(-32000, "batch too big"), .want = {OUT(UNSUPPORTED), REC(UNSUPPORTED, 1), .no_retry = 1},
     .items = {I_NEXT(0), I_NEXT(0)}},
    {"batch answered by one result: malformed", {.status = 200, .batch = 1, ITEMS(READ, READ)}, RESULT,
     .want = {OUT(MALFORMED), REC(MALFORMED, 1)}, .items = {I_NEXT(A), I_NEXT(A)}},
    {"batch answered by no JSON: malformed", {.status = 200, .batch = 1, ITEMS(READ)},
     .want = {OUT(MALFORMED), REC(MALFORMED, 1)}, .items = {I_NEXT(A)}},
    /* ---- request shapes held from an earlier endpoint ---- */
    {"held slow call, a heavy timeout again: the request's doing, nobody penalised",
     {FAILED(TIMEOUT, A | T), .sent = 1, .held = POLICY_SHAPE_SLOW_CALL, ITEMS(HEAVY)},
     .want = {OUT(TIMEOUT), END(TIMEOUT), REC(SLOW_CALL, 0), .held = POLICY_HELD_REQUEST, .shape = POLICY_SHAPE_SLOW_CALL},
     .items = {{.what = POLICY_ITEM_FAIL_SHAPED, .count = POLICY_COUNT_FAILURE, .seen = A | T}}},
    {"... an item holding an earlier answer gets it",
     {FAILED(TIMEOUT, A | T), .sent = 1, .held = POLICY_SHAPE_SLOW_CALL,
      ITEMS({.method = &m_heavy, .pending = 1, .has_fallback = 1})},
     .want = {OUT(TIMEOUT), END(TIMEOUT), REC(SLOW_CALL, 0), .held = POLICY_HELD_REQUEST, .shape = POLICY_SHAPE_SLOW_CALL},
     .items = {{.what = POLICY_ITEM_FALLBACK, .count = POLICY_COUNT_FAILURE, .seen = A | T}}},
    {"... a nonce-too-low write its own answer",
     {.status = 200, .batch = 1, .body = POLICY_BODY_ARRAY, .held = POLICY_SHAPE_SLOW_CALL, ITEMS(HEAVY, WRITE_TX)},
     .members = {ERROR(-32002, "request timed out"), ERROR(-32000, "nonce too low")},
     .want = {OUT(HTTP_ERROR), END(GAVE_UP), REC(SLOW_CALL, 0), .held = POLICY_HELD_REQUEST,
              .shape = POLICY_SHAPE_SLOW_CALL},
     .items = {{.what = POLICY_ITEM_FAIL_SHAPED, .count = POLICY_COUNT_FAILURE},
               {.what = POLICY_ITEM_FALLBACK, .object = 1, .fallback = 1, .verdict = POLICY_VERDICT_DETERMINISTIC}}},
    {"held at this same endpoint: proves nothing, released as nobody's; this one held",
     {FAILED(TIMEOUT, A | T), .sent = 1, .held = POLICY_SHAPE_SLOW_CALL, .held_here = 1, ITEMS(HEAVY)},
     .want = {OUT(TIMEOUT), END(TIMEOUT), HOLD(TIMEOUT, SLOW_CALL), .held = POLICY_HELD_UNSETTLED},
     .items = {I_NEXT(A | T)}},
    {"held too large, the next answers: the held one was its endpoint's",
     {.status = 200, .held = POLICY_SHAPE_TOO_LARGE, ITEMS(READ)}, RESULT,
     .want = {REC(OK, 0), .held = POLICY_HELD_ENDPOINT}, .items = {I_ANSWER(SUCCESS)}},
    {"held slow call, the next rate-limited: still held",
     {.status = 429, .held = POLICY_SHAPE_SLOW_CALL, ITEMS(HEAVY)},
     .want = {OUT(RATE_LIMITED), END(NEUTRAL), REC(RATE_LIMITED, 1), .rate_limit = 1}, .items = {I_REFUSED(0)}},
    {"held slow call, the next local: still held", {FAILED(LOCAL, L), .held = POLICY_SHAPE_SLOW_CALL, ITEMS(HEAVY)},
     .want = {OUT(LOCAL), END(NEUTRAL), REC(LOCAL, 1)}, .items = {I_LOCAL(NEXT)}},
    {"held slow call, the next too large: the held one counts, this one held",
     {FAILED(MALFORMED, A), .sent = 1, .fail_too_large = 1, .held = POLICY_SHAPE_SLOW_CALL, ITEMS(HEAVY)},
     .want = {OUT(MALFORMED), END(TOO_LARGE), HOLD(MALFORMED, TOO_LARGE), .held = POLICY_HELD_ENDPOINT},
     .items = {I_NEXT(A)}},
    {"held id_unanswerable, id null again: the request's doing",
     {.status = 200, .obj.id = POLICY_ID_NULL, .held = POLICY_SHAPE_ID_UNANSWERABLE, ITEMS(READ)},
     AT_NULL(-32600, "Invalid request"),
     .want = {OUT(MALFORMED), END(UNREAD), REC(ID_UNANSWERABLE, 0), .held = POLICY_HELD_REQUEST,
              .shape = POLICY_SHAPE_ID_UNANSWERABLE},
     .items = {{.what = POLICY_ITEM_FAIL_SHAPED, .count = POLICY_COUNT_FAILURE, .seen = A}}},
};

/* The object in json, as pool/pool_answer.c describes one. */
static void scan_object(const char *json, policy_object_t *o)
{
    wire_envelope_t env;
    cr_assert_eq(wire_envelope_scan(json, strlen(json), &env), SL_OK, "%s", json);
    o->buf = json;
    o->envelope_ok = (env.result.len != 0) != (env.error.len != 0);
    o->null_result = env.error.len == 0 && env.result.len != 0 && wire_json_kind(json, env.result) == WIRE_JSON_NULL;
    o->error = POLICY_ERROR_NONE;
    if (env.error.len != 0)
        o->error = wire_envelope_error(json, env.error, &o->err) == SL_OK ? POLICY_ERROR_DECODED
                                                                          : POLICY_ERROR_UNDECODABLE;
}

static void decide(const attempt_case_t *c, policy_attempt_actions_t *a, policy_item_facts_t *items)
{
    policy_attempt_facts_t f = c->f;
    cr_assert(f.nitems <= MAX_ITEMS, "%s", c->name);
    memcpy(items, f.items, f.nitems * sizeof(*items));
    if (c->body != NULL) {
        f.body = POLICY_BODY_OBJECT;
        scan_object(c->body, &f.obj);
    }
    for (size_t i = 0; i < f.nitems; i++)
        if (c->members[i] != NULL) {
            items[i].member = 1;
            scan_object(c->members[i], &items[i].obj);
        }
    f.items = items;
    policy_attempt_decide(&f, a);
}

Test(attempt, every_case)
{
    for (size_t k = 0; k < NELEMS(cases); k++) {
        const attempt_case_t *c = &cases[k];
        const policy_attempt_actions_t *w = &c->want;
        policy_item_facts_t facts[MAX_ITEMS];
        policy_item_action_t got[MAX_ITEMS];
        policy_attempt_actions_t a = {.items = got};
        decide(c, &a, facts);
        cr_expect_eq(a.retry_same, w->retry_same, "%s: retry_same", c->name);
        cr_expect_str_eq(policy_outcome_name(a.outcome), policy_outcome_name(w->outcome), "%s: outcome", c->name);
        cr_expect_eq(a.end, w->end, "%s: end %d", c->name, a.end);
        cr_expect_eq(a.record, w->record, "%s: record %d", c->name, a.record);
        cr_expect_str_eq(policy_outcome_name(a.record_outcome), policy_outcome_name(w->record_outcome),
                         "%s: record_outcome", c->name);
        cr_expect_eq(a.failover, w->failover, "%s: failover", c->name);
        cr_expect_eq(a.held, w->held, "%s: held %d", c->name, a.held);
        cr_expect_eq(a.shape, w->shape, "%s: shape %s", c->name, policy_shape_name(a.shape));
        cr_expect_eq(a.rate_limit, w->rate_limit, "%s: rate_limit", c->name);
        cr_expect_eq(a.rate_limit_ms, w->rate_limit_ms, "%s: rate_limit_ms %u", c->name, a.rate_limit_ms);
        cr_expect_eq(a.demote, w->demote, "%s: demote %s", c->name, policy_demote_cause_name(a.demote));
        cr_expect_eq(a.no_retry, w->no_retry, "%s: no_retry", c->name);
        for (size_t i = 0; i < c->f.nitems; i++) {
            const policy_item_action_t *x = &got[i], *y = &c->items[i];
            cr_expect_eq(x->what, y->what, "%s: item %zu does %d", c->name, i, x->what);
            cr_expect_eq(x->count, y->count, "%s: item %zu counts %d", c->name, i, x->count);
            cr_expect_eq(x->seen, y->seen, "%s: item %zu seen %d", c->name, i, x->seen);
            cr_expect_eq(x->object, y->object, "%s: item %zu object", c->name, i);
            cr_expect_eq(x->fallback, y->fallback, "%s: item %zu fallback", c->name, i);
            cr_expect_eq(x->refused, y->refused, "%s: item %zu refused", c->name, i);
            cr_expect_eq(x->pin, y->pin, "%s: item %zu pin", c->name, i);
            cr_expect_eq(x->verdict, y->verdict, "%s: item %zu verdict %s", c->name, i, policy_verdict_name(x->verdict));
            cr_expect_eq(x->retry_ms, y->retry_ms, "%s: item %zu retry_ms %u", c->name, i, x->retry_ms);
        }
    }
}

/* Whatever the attempt: a settled item is never touched, a pending one is
 * always acted on (unless nothing counts), and the record matches. */
Test(attempt, invariants)
{
    for (size_t k = 0; k < NELEMS(cases); k++) {
        const attempt_case_t *c = &cases[k];
        policy_item_facts_t facts[MAX_ITEMS];
        policy_item_action_t got[MAX_ITEMS];
        policy_attempt_actions_t a = {.items = got};
        decide(c, &a, facts);
        for (size_t i = 0; i < c->f.nitems; i++) {
            int acted = got[i].what != POLICY_ITEM_UNTOUCHED;
            cr_expect_eq(acted, c->f.items[i].pending && !a.retry_same, "%s: item %zu", c->name, i);
            if (!acted)
                cr_expect_eq(got[i].count, POLICY_COUNT_NONE, "%s: item %zu counted", c->name, i);
        }
        cr_expect_eq(a.record == POLICY_RECORD_NONE, a.retry_same != 0, "%s: a record unless retried", c->name);
        if (a.record == POLICY_RECORD_HOLD)
            cr_expect(a.failover && a.shape != POLICY_SHAPE_NONE && a.held != POLICY_HELD_REQUEST, "%s", c->name);
        if (a.held == POLICY_HELD_REQUEST)
            cr_expect(c->f.held != POLICY_SHAPE_NONE && !c->f.held_here && a.failover == 0, "%s", c->name);
    }
}

Test(attempt, outcome_names_cover_every_outcome_and_are_distinct)
{
    for (int i = 0; i < POLICY_OUTCOME_COUNT; i++) {
        const char *n = policy_outcome_name((policy_outcome_t)i);
        cr_assert(n != NULL && strcmp(n, "unknown") != 0, "outcome %d", i);
        for (int j = 0; j < i; j++)
            cr_expect_neq(strcmp(n, policy_outcome_name((policy_outcome_t)j)), 0, "%s twice", n);
    }
    cr_expect_str_eq(policy_outcome_name(POLICY_OUTCOME_COUNT), "unknown");
}

static int one_of(policy_outcome_t o, const policy_outcome_t *set, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == o)
            return 1;
    return 0;
}

/* policy/breaker.h: failures are the endpoint's own; a 429 is a refusal;
 * sluice's own resources and a request's shape are no evidence at all;
 * every other answer was served. */
Test(attempt, evidence_of_every_outcome)
{
    static const policy_outcome_t failures[] = {POLICY_OUTCOME_TIMEOUT, POLICY_OUTCOME_CONNECT, POLICY_OUTCOME_RESET,
                                                POLICY_OUTCOME_HTTP_ERROR, POLICY_OUTCOME_MALFORMED};
    static const policy_outcome_t shapes[] = {POLICY_OUTCOME_TOO_LARGE, POLICY_OUTCOME_ID_UNANSWERABLE,
                                              POLICY_OUTCOME_SLOW_CALL};
    for (int i = 0; i < POLICY_OUTCOME_COUNT; i++) {
        policy_outcome_t o = (policy_outcome_t)i;
        policy_evidence_t want = one_of(o, failures, NELEMS(failures)) ? POLICY_EVIDENCE_FAILED
                                 : one_of(o, shapes, NELEMS(shapes))   ? POLICY_EVIDENCE_NONE
                                 : o == POLICY_OUTCOME_LOCAL           ? POLICY_EVIDENCE_UNSENT
                                 : o == POLICY_OUTCOME_RATE_LIMITED    ? POLICY_EVIDENCE_REFUSED
                                                                       : POLICY_EVIDENCE_SERVED;
        cr_expect_eq(policy_outcome_evidence(o), want, "%s", policy_outcome_name(o));
    }
    cr_expect_eq(policy_outcome_evidence(POLICY_OUTCOME_COUNT), POLICY_EVIDENCE_FAILED);
}

/* The request shapes the held cases above settle are all of them. */
Test(attempt, every_shape_is_held_somewhere)
{
    int held[POLICY_SHAPE_COUNT] = {0};
    for (size_t k = 0; k < NELEMS(cases); k++) {
        policy_item_facts_t facts[MAX_ITEMS];
        policy_item_action_t got[MAX_ITEMS];
        policy_attempt_actions_t a = {.items = got};
        decide(&cases[k], &a, facts);
        if (a.record == POLICY_RECORD_HOLD)
            held[a.shape] = 1;
    }
    for (int s = POLICY_SHAPE_TOO_LARGE; s < POLICY_SHAPE_COUNT; s++)
        cr_expect(held[s], "no case holds %s", policy_shape_name((policy_shape_t)s));
}
