#include "gateway/gw_access.h"

#include <arpa/inet.h>
#include <string.h>

#include "base/sl_buf.h"
#include "base/sl_log.h"

#define MAX_METHODS_LOGGED 8

static void append_client(sl_buf_t *b, h2o_req_t *req)
{
    struct sockaddr_storage ss;
    char host[INET6_ADDRSTRLEN] = "";
    socklen_t len = req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&ss);
    if (len != 0 && ss.ss_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof(host));
    else if (len != 0 && ss.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host, sizeof(host));
    sl_buf_append_str(b, ",\"client\":");
    sl_buf_append_json_str(b, host, strlen(host));
}

static void append_methods(sl_buf_t *b, const gw_rpc_request_t *rpc)
{
    sl_buf_append_str(b, ",\"methods\":[");
    size_t n = rpc->kind == GW_RPC_REJECT ? 0 : rpc->nmembers;
    for (size_t i = 0; i < n && i < MAX_METHODS_LOGGED; i++) {
        const char *name = rpc->members[i].name;
        if (i)
            sl_buf_append_char(b, ',');
        sl_buf_append_json_str(b, name, strlen(name));
    }
    sl_buf_append_char(b, ']');
    sl_buf_printf(b, ",\"calls\":%zu", n);
}

static void append_endpoints(sl_buf_t *b, const pool_call_t *call)
{
    size_t n;
    const pool_attempt_rec_t *log = pool_call_log(call, &n);
    sl_buf_append_str(b, ",\"upstream\":[");
    for (size_t i = 0; i < n; i++) {
        const char *id = pool_call_endpoint_id(call, log[i].endpoint);
        const char *url = pool_call_endpoint_url(call, log[i].endpoint); /* redacted: for operators */
        const char *what = log[i].fail == POOL_FAIL_NONE ? "answered" : pool_fail_name(log[i].fail);
        sl_buf_append_str(b, i ? ",{\"endpoint\":" : "{\"endpoint\":");
        sl_buf_append_json_str(b, id, strlen(id));
        sl_buf_append_str(b, ",\"url\":");
        sl_buf_append_json_str(b, url, strlen(url));
        sl_buf_printf(b, ",\"status\":%u,\"result\":\"%s\",\"us\":%u}", (unsigned)log[i].http_status, what,
                      log[i].latency_us);
    }
    sl_buf_append_char(b, ']');
}

void gw_access_log(h2o_req_t *req, const char *network, const gw_rpc_request_t *rpc, const pool_call_t *call,
                   int status, const char *outcome, uint64_t latency_us, const gw_key_conf_t *key)
{
    static sl_buf_t line; /* per worker process, reused */
    char ts[32];
    sl_buf_reset(&line);
    sl_log_timestamp(ts);
    sl_buf_printf(&line, "{\"ts\":\"%s\",\"type\":\"access\",\"network\":", ts);
    if (network != NULL)
        sl_buf_append_json_str(&line, network, strlen(network));
    else
        sl_buf_append_str(&line, "null");
    append_methods(&line, rpc);
    sl_buf_printf(&line, ",\"status\":%d,\"outcome\":\"%s\",\"attempts\":%u,\"us\":%llu", status, outcome,
                  call ? pool_call_attempts(call) : 0, (unsigned long long)latency_us);
    if (call != NULL)
        append_endpoints(&line, call);
    append_client(&line, req);
    if (key != NULL) {
        sl_buf_append_str(&line, ",\"key\":");
        sl_buf_append_json_str(&line, key->name, strlen(key->name));
    }
    sl_buf_append_char(&line, '}');
    sl_log_access(line.base, line.len);
}
