#include "state/state_key.h"

#include <stdio.h>

static size_t fit(int n)
{
    return n < 0 ? 0 : (size_t)n;
}

size_t state_key_endpoint(char *out, size_t cap, const char *network, const char *endpoint)
{
    return fit(snprintf(out, cap, "%s/%s", network, endpoint));
}

size_t state_key_stats(char *out, size_t cap, const char *network, const char *endpoint, unsigned slot)
{
    return fit(snprintf(out, cap, "%s/%s/%u", network, endpoint, slot));
}

size_t state_key_per_method(char *out, size_t cap, const char *network, const char *endpoint, unsigned slot)
{
    return fit(snprintf(out, cap, "pm/%s/%s/%u", network, endpoint, slot));
}

size_t state_key_requests(char *out, size_t cap, const char *network, unsigned slot)
{
    return fit(snprintf(out, cap, "req/%s/%u", network, slot));
}

size_t state_key_cache(char *out, size_t cap, const char *network, unsigned slot)
{
    return fit(snprintf(out, cap, "cache/%s/%u", network, slot));
}

size_t state_key_subs(char *out, size_t cap, const char *network, unsigned slot)
{
    return fit(snprintf(out, cap, "subs/%s/%u", network, slot));
}

size_t state_key_ledger(char *out, size_t cap, const char *network, const char *endpoint, const char *window)
{
    return fit(snprintf(out, cap, "%s/%s/%s", network, endpoint, window));
}

size_t state_key_cell(char *out, size_t cap, const char *identity, const char *bucket, const char *window)
{
    return fit(snprintf(out, cap, "%s/%s/%s", identity, bucket, window));
}

size_t state_key_pin(char *out, size_t cap, const char *network, const char *txid)
{
    return fit(snprintf(out, cap, "%s/%s", network, txid));
}

size_t state_key_level(char *out, size_t cap, const char *network)
{
    return fit(snprintf(out, cap, "level/%s", network));
}

size_t state_key_degraded(char *out, size_t cap, unsigned slot)
{
    return fit(snprintf(out, cap, "deg/%u", slot));
}

size_t state_key_pressure(char *out, size_t cap, const char *network)
{
    return fit(snprintf(out, cap, "pressure/%s", network));
}

size_t state_key_chain(char *out, size_t cap, const char *network)
{
    return fit(snprintf(out, cap, "chain/%s", network));
}

size_t state_key_pressure_slot(char *out, size_t cap, const char *network, unsigned slot)
{
    return fit(snprintf(out, cap, "pr/%s/%u", network, slot));
}

size_t state_key_server(char *out, size_t cap, unsigned slot)
{
    return fit(snprintf(out, cap, "srv/%u", slot));
}

size_t state_key_keys_uncounted(char *out, size_t cap, unsigned slot)
{
    return fit(snprintf(out, cap, "keyover/%u", slot));
}

size_t state_key_keystats(char *out, size_t cap, const char *name, unsigned slot)
{
    return fit(snprintf(out, cap, "key/%s/%u", name, slot));
}

size_t state_key_apikey(char *out, size_t cap, const char *name)
{
    return fit(snprintf(out, cap, "apikey/%s", name));
}
