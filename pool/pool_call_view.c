/* pool/pool_call_view.c: what the gateway reads of a call for its answer
 * and the access log (attempts, the attempt log, endpoint ids and redacted
 * URLs, hedges, whether it was coalesced). Reads only. */
#include "pool/pool_call_int.h"

uint64_t pool_call_credits(const pool_call_t *call)
{
    return call->credits;
}

int pool_call_coalesced(const pool_call_t *call)
{
    return call->coalesce.answered;
}

uint32_t pool_call_hedges(const pool_call_t *call)
{
    uint32_t n = 0;
    for (size_t i = 0; i < call->nlog; i++)
        n += (call->log[i].flags & POOL_ATTEMPT_HEDGE) != 0;
    return n;
}

size_t pool_call_held(const pool_call_t *call)
{
    /* an exchange's charge is 0 once it is disposed or kept (then in call->charged) */
    return call->charged + call->ex.charged + pool_call_rows_bytes(call);
}

uint32_t pool_call_attempts(const pool_call_t *call)
{
    return call->attempts;
}

const pool_attempt_rec_t *pool_call_log(const pool_call_t *call, size_t *n)
{
    *n = call->nlog;
    return call->log;
}

const char *pool_call_endpoint_id(const pool_call_t *call, int endpoint)
{
    if (endpoint < 0 || (size_t)endpoint >= call->net->nendpoints)
        return "";
    return call->net->endpoints[endpoint].conf->id;
}

size_t pool_call_max_response_bytes(const pool_call_t *call)
{
    return call->net->pool->t.max_response_bytes;
}

const char *pool_call_endpoint_url(const pool_call_t *call, int endpoint)
{
    if (endpoint < 0 || (size_t)endpoint >= call->net->nendpoints)
        return "";
    return call->net->endpoints[endpoint].conf->url_redacted;
}
