/* gateway/gw_early.c: h2o's own text answers turned into JSON-RPC errors (gw_early.h). */
#include "gateway/gw_early.h"

#include <stdio.h>
#include <string.h>

#include "base/sl_buf.h"
#include "base/sl_http.h"
#include "gateway/gw_conns.h"
#include "gateway/gw_rpc.h"

typedef struct early_filter {
    h2o_filter_t super;           /* first: h2o calls on_setup_ostream with this pointer */
    const cfg_server_conf_t *srv;
} early_filter_t;

typedef struct early_ostream {
    h2o_ostream_t super;          /* first: h2o calls do_send with this pointer */
    const early_filter_t *filter;
} early_ostream_t;

/* h2o 2.2.5's bodies (lib/http1.c), matched whole: a text h2o words
 * differently passes unchanged rather than being misnamed. */
typedef struct early_answer {
    int status;
    const char *h2o_text;
    const char *message;
    int with_limit;               /* the message ends with server.max_body_bytes */
} early_answer_t;

static const early_answer_t answers[] = {
    {400, "broken content-length header",
     "invalid request framing: Content-Length is not one decimal number (RFC 9112 section 6.3); "
     "the connection is closed", 0},
    {400, "unknown transfer-encoding",
     "invalid request framing: a Transfer-Encoding other than chunked; the connection is closed", 0},
    {400, "broken chunked-encoding", "invalid request framing: broken chunked encoding; the connection is closed", 0},
    {413, "request entity is too large", "request body too large: over server.max_body_bytes", 1},
    {417, "unknown expectation",
     "expectation failed: only Expect: 100-continue is understood; the connection is closed", 0},
};

static int is_early_status(int status)
{
    for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++)
        if (answers[i].status == status)
            return 1;
    return 0;
}

static const early_answer_t *find_answer(int status, h2o_iovec_t text)
{
    for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++)
        if (answers[i].status == status && h2o_memis(text.base, text.len, answers[i].h2o_text,
                                                     strlen(answers[i].h2o_text)))
            return &answers[i];
    return NULL;
}

/* h2o sends its error body in one buffer, with the final state. */
static void early_send(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *bufs, size_t bufcnt, h2o_send_state_t state)
{
    const early_ostream_t *os = (const early_ostream_t *)self;
    const early_answer_t *a = bufcnt == 1 ? find_answer(req->res.status, bufs[0]) : NULL;
    if (a == NULL) {
        h2o_ostream_send_next(self, req, bufs, bufcnt, state);
        return;
    }
    char msg[200];
    if (a->with_limit)
        snprintf(msg, sizeof(msg), "%s (%zu bytes); the connection is closed", a->message,
                 os->filter->srv->max_body_bytes);
    else
        snprintf(msg, sizeof(msg), "%s", a->message);
    sl_buf_t out;
    sl_buf_init(&out);
    wire_rpc_error(&out, "", (wire_span_t){0, 0}, WIRE_RPC_INVALID_REQUEST, msg, NULL);
    h2o_iovec_t json = h2o_strdup(&req->pool, out.base, out.len);
    sl_buf_dispose(&out);
    req->res.content_length = json.len;
    ssize_t i = h2o_find_header(&req->res.headers, H2O_TOKEN_CONTENT_TYPE, -1);
    if (i >= 0)
        req->res.headers.entries[i].value = h2o_iovec_init(H2O_STRLIT("application/json"));
    h2o_ostream_send_next(self, req, &json, 1, state);
}

static void early_setup(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    if (is_early_status(req->res.status)) {
        early_ostream_t *os = (early_ostream_t *)h2o_add_ostream(req, sizeof(*os), slot);
        os->super.do_send = early_send;
        os->filter = (const early_filter_t *)self;
        slot = &os->super.next;
        sl_http_server_header(req); /* h2o's own error answers too */
        if (req->version < 0x200 && !req->http1_is_persistent) /* HTTP/2: the connection serves on */
            gw_conns_linger(req->conn->callbacks->get_socket(req->conn));
    }
    h2o_setup_next_ostream(req, slot);
}

void gw_early_register(h2o_hostconf_t *host, const cfg_server_conf_t *srv)
{
    early_filter_t *f = (early_filter_t *)h2o_create_filter(&host->fallback_path, sizeof(*f));
    f->super.on_setup_ostream = early_setup;
    f->srv = srv;
}
