#include "state/state_record.h"

#include "state/state.h"

#include <msgpack.h>
#include <stddef.h>
#include <string.h>

#define F(struct_, name_, type_, size_) {#name_, type_, offsetof(struct_, name_), size_, 0}
/* a field appended by a later version of its record */
#define F_SINCE(struct_, name_, type_, size_, since_) {#name_, type_, offsetof(struct_, name_), size_, since_}

static const state_field_t endpoint_fields[] = {
    F(state_endpoint_rec_t, breaker, STATE_F_U8, 1),
    F(state_endpoint_rec_t, since_ms, STATE_F_U64, 1),
    F(state_endpoint_rec_t, cooldown_ms, STATE_F_U32, 1),
    F(state_endpoint_rec_t, opened_at_ms, STATE_F_U64, 1),
    F(state_endpoint_rec_t, probe_pid, STATE_F_U32, 1),
    F(state_endpoint_rec_t, probe_at_ms, STATE_F_U64, 1),
    F(state_endpoint_rec_t, drained, STATE_F_U8, 1),
    F(state_endpoint_rec_t, drained_at_ms, STATE_F_U64, 1),
    F(state_endpoint_rec_t, rate_limited_until_ms, STATE_F_U64, 1),
    F(state_endpoint_rec_t, transitions, STATE_F_U64_ARRAY, 3),
    F(state_endpoint_rec_t, head, STATE_F_U64, 1),
    F(state_endpoint_rec_t, head_at_ms, STATE_F_U64, 1),
    F(state_endpoint_rec_t, probe_ewma_us, STATE_F_U32, 1),
    F(state_endpoint_rec_t, probe_failures, STATE_F_U32, 1),
    F(state_endpoint_rec_t, probe_next_ms, STATE_F_U64, 1),
    F_SINCE(state_endpoint_rec_t, rl_backoff_ms, STATE_F_U32, 1, 2),
    F_SINCE(state_endpoint_rec_t, demoted_until_ms, STATE_F_U64, 1, 3),
    F_SINCE(state_endpoint_rec_t, demoted_cause, STATE_F_U8, 1, 3),
    F_SINCE(state_endpoint_rec_t, demotions, STATE_F_U64, 1, 3),
    F_SINCE(state_endpoint_rec_t, rl_since_ms, STATE_F_U64, 1, 4),
    F_SINCE(state_endpoint_rec_t, rl_last_until_ms, STATE_F_U64, 1, 4),
    F_SINCE(state_endpoint_rec_t, rl_marks, STATE_F_U32, 1, 4),
    F_SINCE(state_endpoint_rec_t, safe, STATE_F_U64, 1, 5),
    F_SINCE(state_endpoint_rec_t, finalized, STATE_F_U64, 1, 5),
    F_SINCE(state_endpoint_rec_t, chain_at_ms, STATE_F_U64, 1, 5),
    F_SINCE(state_endpoint_rec_t, chain_next_ms, STATE_F_U64, 1, 5),
    F_SINCE(state_endpoint_rec_t, hash_height, STATE_F_U64, 1, 5),
    F_SINCE(state_endpoint_rec_t, head_hash, STATE_F_STR, sizeof(((state_endpoint_rec_t *)0)->head_hash), 5),
    F_SINCE(state_endpoint_rec_t, head_parent, STATE_F_STR, sizeof(((state_endpoint_rec_t *)0)->head_parent), 5),
    F_SINCE(state_endpoint_rec_t, ws_pid, STATE_F_U32, 1, 6),
    F_SINCE(state_endpoint_rec_t, ws_renew_ms, STATE_F_U64, 1, 6),
    F_SINCE(state_endpoint_rec_t, ws_state, STATE_F_U8, 1, 6),
    F_SINCE(state_endpoint_rec_t, ws_heads, STATE_F_U64, 1, 6),
    F_SINCE(state_endpoint_rec_t, ws_head_at_ms, STATE_F_U64, 1, 6),
    F_SINCE(state_endpoint_rec_t, ws_unconfirmed, STATE_F_U64, 1, 7),
    F_SINCE(state_endpoint_rec_t, lease_holder, STATE_F_STR, sizeof(((state_endpoint_rec_t *)0)->lease_holder), 8),
    F_SINCE(state_endpoint_rec_t, lease_token, STATE_F_U64, 1, 8),
    F_SINCE(state_endpoint_rec_t, lease_until_ms, STATE_F_U64, 1, 8),
    F_SINCE(state_endpoint_rec_t, lease_ask_ms, STATE_F_U64, 1, 8),
    F_SINCE(state_endpoint_rec_t, lease_chain_id, STATE_F_STR, sizeof(((state_endpoint_rec_t *)0)->lease_chain_id), 8),
    F_SINCE(state_endpoint_rec_t, lease_chain_at_ms, STATE_F_U64, 1, 8),
};

/* version 2: rl_backoff_ms (the rate-limit backoff doubles across workers);
 * version 3: the demotion (demoted_until_ms, demoted_cause, demotions);
 * version 4: the rate-limit episode (rl_since_ms, rl_last_until_ms, rl_marks);
 * version 5: the chain probe (safe, finalized, the latest block's hashes);
 * version 6: the upstream WebSocket (holder, state, heads received);
 * version 7: the pushed heads not confirmed (ws_unconfirmed);
 * version 8: the lease of its probes (cluster:) as this host last heard it */
const state_schema_t state_endpoint_schema = {"endpoint", 8, endpoint_fields,
                                              sizeof(endpoint_fields) / sizeof(endpoint_fields[0])};

static const state_field_t cell_fields[] = {
    F(state_cell_rec_t, tat_us, STATE_F_U64, 1),
    F_SINCE(state_cell_rec_t, interval_us, STATE_F_U64, 1, 2),
};

/* version 2: interval_us (eviction by calls owed, state/state_budget.c) */
const state_schema_t state_cell_schema = {"cell", 2, cell_fields, sizeof(cell_fields) / sizeof(cell_fields[0])};

static const state_field_t ledger_fields[] = {
    F(state_ledger_rec_t, window_start_ms, STATE_F_U64, 1),
    F(state_ledger_rec_t, spent, STATE_F_U64, 1),
    F(state_ledger_rec_t, low_reported, STATE_F_U8, 1),
    F(state_ledger_rec_t, exhausted_reported, STATE_F_U8, 1),
};

const state_schema_t state_ledger_schema = {"ledger", 1, ledger_fields,
                                            sizeof(ledger_fields) / sizeof(ledger_fields[0])};

static const state_field_t pin_fields[] = {
    F(state_pin_rec_t, endpoint, STATE_F_STR, sizeof(((state_pin_rec_t *)0)->endpoint)),
    F(state_pin_rec_t, expires_ms, STATE_F_U64, 1),
};

const state_schema_t state_pin_schema = {"pin", 1, pin_fields, sizeof(pin_fields) / sizeof(pin_fields[0])};

static const state_field_t clock_fields[] = {
    F(state_clock_rec_t, boot_id, STATE_F_STR, sizeof(((state_clock_rec_t *)0)->boot_id)),
    F(state_clock_rec_t, offset_us, STATE_F_U64, 1),
    F(state_clock_rec_t, high_us, STATE_F_U64, 1),
};

const state_schema_t state_clock_schema = {"clock", 1, clock_fields, sizeof(clock_fields) / sizeof(clock_fields[0])};

static const state_field_t network_fields[] = {
    F(state_network_rec_t, level, STATE_F_U8, 1),
    F(state_network_rec_t, since_ms, STATE_F_U64, 1),
};

static const state_field_t event_fields[] = {
    F(state_event_t, ts_ms, STATE_F_U64, 1),
    F(state_event_t, kind, STATE_F_U8, 1),
    F(state_event_t, network, STATE_F_STR, sizeof(((state_event_t *)0)->network)),
    F(state_event_t, endpoint, STATE_F_STR, sizeof(((state_event_t *)0)->endpoint)),
    F(state_event_t, from, STATE_F_U8, 1),
    F(state_event_t, to, STATE_F_U8, 1),
    F(state_event_t, reason, STATE_F_STR, sizeof(((state_event_t *)0)->reason)),
    F(state_event_t, duration_ms, STATE_F_U64, 1),
    F(state_event_t, count, STATE_F_U64, 1),
    F(state_event_t, pid, STATE_F_U32, 1),
    F_SINCE(state_event_t, host, STATE_F_STR, sizeof(((state_event_t *)0)->host), 2),
    F_SINCE(state_event_t, origin_seq, STATE_F_U64, 1, 2),
};

/* version 2: host and origin_seq (cluster:: which host saw it, its sequence there) */
const state_schema_t state_event_schema = {"event", 2, event_fields, sizeof(event_fields) / sizeof(event_fields[0])};

static const state_field_t stats_fields[] = {
    F(state_stats_rec_t, pid, STATE_F_U32, 1),
    F(state_stats_rec_t, updated_ms, STATE_F_U64, 1),
    F(state_stats_rec_t, attempts, STATE_F_U64, 1),
    F(state_stats_rec_t, outcomes, STATE_F_U64_ARRAY, STATE_OUTCOME_COUNT),
    F(state_stats_rec_t, failovers, STATE_F_U64, 1),
    F(state_stats_rec_t, lat_hist, STATE_F_U64_ARRAY, STATE_LAT_BUCKETS),
    F(state_stats_rec_t, lat_sum_us, STATE_F_U64, 1),
    F(state_stats_rec_t, ewma_us, STATE_F_U64, 1),
    F(state_stats_rec_t, inflight, STATE_F_U32, 1),
    F(state_stats_rec_t, max_inflight_seen, STATE_F_U32, 1),
    F(state_stats_rec_t, rank, STATE_F_U32, 1),
    F(state_stats_rec_t, score_milli, STATE_F_U64, 1),
    F(state_stats_rec_t, latency_us, STATE_F_U64, 1),
    F(state_stats_rec_t, error_ppm, STATE_F_U32, 1),
    F(state_stats_rec_t, rate_limit_ppm, STATE_F_U32, 1),
    F(state_stats_rec_t, lag_plus1, STATE_F_U64, 1),
    F(state_stats_rec_t, excluded, STATE_F_U8, 1),
    F(state_stats_rec_t, credits_spent, STATE_F_U64, 1),
    F_SINCE(state_stats_rec_t, hedges_sent, STATE_F_U64, 1, 3),
    F_SINCE(state_stats_rec_t, hedges_won, STATE_F_U64, 1, 3),
    F_SINCE(state_stats_rec_t, hedges_cancelled, STATE_F_U64, 1, 3),
    F_SINCE(state_stats_rec_t, coalesced, STATE_F_U64, 1, 3),
    F_SINCE(state_stats_rec_t, consensus_agreed, STATE_F_U64, 1, 4),
    F_SINCE(state_stats_rec_t, consensus_none, STATE_F_U64, 1, 4),
    F_SINCE(state_stats_rec_t, consensus_disagreed, STATE_F_U64, 1, 4),
};

/* version 2: outcomes gained local_error, too_large, id_unanswerable, slow_call;
 * version 3: hedges sent, won, cancelled and coalesced calls;
 * version 4: consensus agreed, none and disagreed */
const state_schema_t state_stats_schema = {"stats", 4, stats_fields, sizeof(stats_fields) / sizeof(stats_fields[0])};

static const state_field_t pressure_fields[] = {
    F(state_pressure_rec_t, level, STATE_F_U8, 1),
    F(state_pressure_rec_t, since_ms, STATE_F_U64, 1),
    F(state_pressure_rec_t, changes, STATE_F_U64, 1),
    F(state_pressure_rec_t, baseline_us, STATE_F_U32, 1),
    F(state_pressure_rec_t, baseline_at_ms, STATE_F_U64, 1),
    F(state_pressure_rec_t, depth, STATE_F_U32, 1),
    F(state_pressure_rec_t, ceiling, STATE_F_U32, 1),
    F(state_pressure_rec_t, settle_p90_us, STATE_F_U32, 1),
    F(state_pressure_rec_t, refusal_ppm, STATE_F_U32, 1),
};

const state_schema_t state_pressure_schema = {"pressure", 1, pressure_fields,
                                              sizeof(pressure_fields) / sizeof(pressure_fields[0])};

static const state_field_t chain_fields[] = {
    F(state_chain_rec_t, floor, STATE_F_U64_ARRAY, STATE_CHAIN_KINDS),
    F(state_chain_rec_t, updated_ms, STATE_F_U64, 1),
    F_SINCE(state_chain_rec_t, identity, STATE_F_STR, sizeof(((state_chain_rec_t *)0)->identity), 2),
    F_SINCE(state_chain_rec_t, identity_at_ms, STATE_F_U64, 1, 2),
    F_SINCE(state_chain_rec_t, reorg_tip, STATE_F_U64, 1, 2),
    F_SINCE(state_chain_rec_t, reorg_hash, STATE_F_STR, sizeof(((state_chain_rec_t *)0)->reorg_hash), 2),
    F_SINCE(state_chain_rec_t, reorg_depth, STATE_F_U32, 1, 2),
    F_SINCE(state_chain_rec_t, reorgs, STATE_F_U64, 1, 2),
    F_SINCE(state_chain_rec_t, reorg_event_ms, STATE_F_U64, 1, 3),
    F_SINCE(state_chain_rec_t, reorgs_folded, STATE_F_U64, 1, 3),
};

/* version 2: the learned identity and the last reorg reported;
 * version 3: the last reorg event's time and the reorgs folded since */
const state_schema_t state_chain_schema = {"chain", 3, chain_fields, sizeof(chain_fields) / sizeof(chain_fields[0])};

static const state_field_t pressure_slot_fields[] = {
    F(state_pressure_slot_rec_t, pid, STATE_F_U32, 1),
    F(state_pressure_slot_rec_t, updated_ms, STATE_F_U64, 1),
    F(state_pressure_slot_rec_t, depth, STATE_F_U32, 1),
    F(state_pressure_slot_rec_t, settle_hist, STATE_F_U64_ARRAY, STATE_SETTLE_BUCKETS),
    F(state_pressure_slot_rec_t, tries, STATE_F_U64, 1),
    F(state_pressure_slot_rec_t, refusals, STATE_F_U64, 1),
    F(state_pressure_slot_rec_t, polls_merged, STATE_F_U64, 1),
    F(state_pressure_slot_rec_t, calls_saved, STATE_F_U64, 1),
    F(state_pressure_slot_rec_t, waits, STATE_F_U64, 1),
    F(state_pressure_slot_rec_t, ep_calls_milli, STATE_F_U64_ARRAY, STATE_PRESSURE_MAX_EP),
    F(state_pressure_slot_rec_t, ep_billed_milli, STATE_F_U64_ARRAY, STATE_PRESSURE_MAX_EP),
    F(state_pressure_slot_rec_t, ep_throughput_milli, STATE_F_U64_ARRAY, STATE_PRESSURE_MAX_EP),
    F_SINCE(state_pressure_slot_rec_t, logs_splits, STATE_F_U64, 1, 2),
    F_SINCE(state_pressure_slot_rec_t, logs_subcalls, STATE_F_U64, 1, 2),
    F_SINCE(state_pressure_slot_rec_t, logs_refused, STATE_F_U64, 1, 2),
};

const state_schema_t state_pressure_slot_schema = {"pressure_slot", 2, pressure_slot_fields,
                                                   sizeof(pressure_slot_fields) / sizeof(pressure_slot_fields[0])};

const state_schema_t state_network_schema = {"network", 1, network_fields,
                                             sizeof(network_fields) / sizeof(network_fields[0])};

const uint64_t state_lat_bounds_us[STATE_LAT_BUCKETS] = {
    100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, UINT64_MAX,
};

static const char *const event_names[STATE_EVENT_KIND_COUNT] = {
#define STATE_EVENT_NAME_(name, str) [STATE_EVENT_##name] = str,
    STATE_EVENT_KINDS(STATE_EVENT_NAME_)
#undef STATE_EVENT_NAME_
};

static const char *const outcome_names[STATE_OUTCOME_COUNT] = {
#define STATE_OUTCOME_NAME_(name, str) [STATE_OUTCOME_##name] = str,
    STATE_OUTCOMES(STATE_OUTCOME_NAME_)
#undef STATE_OUTCOME_NAME_
};

static const char *const req_outcome_names[STATE_REQ_OUTCOME_COUNT] = {
#define STATE_REQ_NAME_(name, str) [STATE_REQ_##name] = str,
    STATE_REQ_OUTCOMES(STATE_REQ_NAME_)
#undef STATE_REQ_NAME_
};

const char *state_req_outcome_name(state_req_outcome_t o)
{
    return (unsigned)o < STATE_REQ_OUTCOME_COUNT ? req_outcome_names[o] : "unknown";
}

static const struct {
    const char *name;
    int gauge;
} srv_counters[STATE_SRV_COUNT] = {
#define STATE_SRV_ROW_(name, str, gauge) [STATE_SRV_##name] = {str, gauge},
    STATE_SRV_COUNTERS(STATE_SRV_ROW_)
#undef STATE_SRV_ROW_
};

const char *state_srv_counter_name(state_srv_counter_t c)
{
    return (unsigned)c < STATE_SRV_COUNT ? srv_counters[c].name : "unknown";
}

int state_srv_counter_is_gauge(state_srv_counter_t c)
{
    return (unsigned)c < STATE_SRV_COUNT && srv_counters[c].gauge;
}

const char *state_event_kind_name(state_event_kind_t k)
{
    return (unsigned)k < STATE_EVENT_KIND_COUNT ? event_names[k] : "unknown";
}

const char *state_outcome_name(state_outcome_t o)
{
    return (unsigned)o < STATE_OUTCOME_COUNT ? outcome_names[o] : "unknown";
}

static int buf_write(void *data, const char *p, size_t n)
{
    sl_buf_append(data, p, n);
    return 0;
}

static uint64_t get_uint(const void *rec, const state_field_t *f, size_t i)
{
    const char *p = (const char *)rec + f->offset;
    switch (f->type) {
    case STATE_F_U8: return *(const uint8_t *)p;
    case STATE_F_U32: return *(const uint32_t *)p;
    case STATE_F_U64: return *(const uint64_t *)p;
    case STATE_F_U64_ARRAY: return ((const uint64_t *)p)[i];
    case STATE_F_STR: break;
    }
    return 0;
}

sl_err_t state_record_encode(const state_schema_t *schema, const void *rec, sl_buf_t *out)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, buf_write);
    msgpack_pack_array(&pk, schema->nfields + 1);
    msgpack_pack_uint32(&pk, schema->version);
    for (size_t i = 0; i < schema->nfields; i++) {
        const state_field_t *f = &schema->fields[i];
        if (f->type == STATE_F_STR) {
            const char *s = (const char *)rec + f->offset;
            msgpack_pack_str_with_body(&pk, s, strnlen(s, f->size - 1));
        } else if (f->type == STATE_F_U64_ARRAY) {
            msgpack_pack_array(&pk, f->size);
            for (size_t k = 0; k < f->size; k++)
                msgpack_pack_uint64(&pk, get_uint(rec, f, k));
        } else {
            msgpack_pack_uint64(&pk, get_uint(rec, f, 0));
        }
    }
    return SL_OK;
}

static sl_err_t put_uint(void *rec, const state_field_t *f, size_t i, const msgpack_object *o)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return SL_ERR_CORRUPT;
    uint64_t v = o->via.u64;
    char *p = (char *)rec + f->offset;
    switch (f->type) {
    case STATE_F_U8:
        if (v > UINT8_MAX)
            return SL_ERR_CORRUPT;
        *(uint8_t *)p = (uint8_t)v;
        return SL_OK;
    case STATE_F_U32:
        if (v > UINT32_MAX)
            return SL_ERR_CORRUPT;
        *(uint32_t *)p = (uint32_t)v;
        return SL_OK;
    case STATE_F_U64:
        *(uint64_t *)p = v;
        return SL_OK;
    case STATE_F_U64_ARRAY:
        ((uint64_t *)p)[i] = v;
        return SL_OK;
    case STATE_F_STR:
        break;
    }
    return SL_ERR_CORRUPT;
}

static sl_err_t decode_field(void *rec, const state_field_t *f, const msgpack_object *o, int older)
{
    if (f->type == STATE_F_STR) {
        /* msgpack-c gives a NULL pointer for an empty string: never pass it on */
        if (o->type != MSGPACK_OBJECT_STR || o->via.str.size >= f->size ||
            (o->via.str.size != 0 && memchr(o->via.str.ptr, '\0', o->via.str.size) != NULL))
            return SL_ERR_CORRUPT;
        char *p = (char *)rec + f->offset;
        if (o->via.str.size != 0)
            memcpy(p, o->via.str.ptr, o->via.str.size);
        p[o->via.str.size] = '\0';
        return SL_OK;
    }
    if (f->type == STATE_F_U64_ARRAY) {
        /* an older version's array may be shorter: new elements go last */
        if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size > f->size || (!older && o->via.array.size != f->size))
            return SL_ERR_CORRUPT;
        memset((char *)rec + f->offset, 0, f->size * sizeof(uint64_t));
        for (size_t k = 0; k < o->via.array.size; k++)
            if (put_uint(rec, f, k, &o->via.array.ptr[k]) != SL_OK)
                return SL_ERR_CORRUPT;
        return SL_OK;
    }
    return put_uint(rec, f, 0, o);
}

static size_t field_bytes(const state_field_t *f)
{
    switch (f->type) {
    case STATE_F_U8:
        return 1;
    case STATE_F_U32:
        return 4;
    case STATE_F_U64:
        return 8;
    case STATE_F_STR:
        return f->size;
    case STATE_F_U64_ARRAY:
        return f->size * sizeof(uint64_t);
    }
    return 0;
}

static sl_err_t decode_object(const state_schema_t *schema, const msgpack_object *root, void *rec)
{
    if (root->type != MSGPACK_OBJECT_ARRAY || root->via.array.size < 1)
        return SL_ERR_CORRUPT;
    const msgpack_object *items = root->via.array.ptr;
    if (items[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return SL_ERR_CORRUPT;
    /* A record of an older version reads with what it has: versions only
     * append fields (and elements of arrays), which read as zero. A newer
     * version is not ours to guess at. */
    uint64_t version = items[0].via.u64;
    if (version == 0 || version > schema->version)
        return SL_ERR_VERSION;
    int older = version < schema->version;
    size_t nfields = root->via.array.size - 1, had = 0;
    for (size_t i = 0; i < schema->nfields; i++)
        had += schema->fields[i].since <= version;
    if (nfields != had)
        return SL_ERR_CORRUPT; /* exactly the fields of the version it says it is */
    for (size_t i = 0, item = 1; i < schema->nfields; i++) {
        const state_field_t *f = &schema->fields[i];
        if (f->since > version) {
            memset((char *)rec + f->offset, 0, field_bytes(f));
            continue;
        }
        sl_err_t err = decode_field(rec, f, &items[item++], older);
        if (err != SL_OK)
            return err;
    }
    return SL_OK;
}

/* msgpack-c allocates a container's element array from its declared count
 * before reading the elements, so a corrupt count of 2^32 asks malloc for
 * ~100 GB. This pre-scan walks the bytes and refuses any count larger than
 * the bytes left (every element takes at least one), deep nesting, and types
 * a record never holds (floats, maps, binary, extensions). */
#define PRESCAN_MAX_DEPTH 4

static int be_len(const unsigned char *p, size_t n)
{
    size_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return (int)(v > INT32_MAX ? -1 : (long)v);
}

static sl_err_t prescan(const unsigned char *p, size_t len)
{
    size_t pending[PRESCAN_MAX_DEPTH + 1]; /* elements still expected per open array */
    int depth = 0;
    size_t i = 0;
    pending[0] = 1;
    while (i < len) {
        while (depth > 0 && pending[depth] == 0)
            depth--;
        if (pending[depth] == 0)
            return SL_ERR_CORRUPT; /* bytes after the record */
        pending[depth]--;
        unsigned char c = p[i++];
        long count = -1, skip = 0;
        if (c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3)
            continue; /* fixint, nil, bool */
        if ((c & 0xf0) == 0x90)
            count = c & 0x0f;
        else if ((c & 0xe0) == 0xa0)
            skip = c & 0x1f;
        else if (c >= 0xcc && c <= 0xcf)
            skip = 1L << (c - 0xcc);
        else if (c >= 0xd0 && c <= 0xd3)
            skip = 1L << (c - 0xd0);
        else if (c >= 0xd9 && c <= 0xdb) {
            size_t n = (size_t)1 << (c - 0xd9);
            if (len - i < n || (skip = be_len(p + i, n)) < 0)
                return SL_ERR_CORRUPT;
            i += n;
        } else if (c == 0xdc || c == 0xdd) {
            size_t n = c == 0xdc ? 2 : 4;
            if (len - i < n || (count = be_len(p + i, n)) < 0)
                return SL_ERR_CORRUPT;
            i += n;
        } else {
            return SL_ERR_CORRUPT;
        }
        if (skip > 0) {
            if ((size_t)skip > len - i)
                return SL_ERR_CORRUPT;
            i += (size_t)skip;
        }
        if (count >= 0) {
            if ((size_t)count > len - i || depth == PRESCAN_MAX_DEPTH)
                return SL_ERR_CORRUPT;
            pending[++depth] = (size_t)count;
        }
    }
    while (depth > 0 && pending[depth] == 0)
        depth--;
    return depth == 0 && pending[0] == 0 ? SL_OK : SL_ERR_CORRUPT;
}

sl_err_t state_record_decode(const state_schema_t *schema, const void *buf, size_t len, void *rec)
{
    if (len == 0 || prescan(buf, len) != SL_OK)
        return SL_ERR_CORRUPT;
    msgpack_unpacked u;
    size_t off = 0;
    msgpack_unpacked_init(&u);
    sl_err_t err = SL_ERR_CORRUPT;
    if (msgpack_unpack_next(&u, buf, len, &off) == MSGPACK_UNPACK_SUCCESS && off == len)
        err = decode_object(schema, &u.data, rec);
    msgpack_unpacked_destroy(&u);
    return err;
}

sl_err_t state_counters_encode(const state_counters_rec_t *rec, sl_buf_t *out)
{
    if (rec->n > STATE_COUNTERS_MAX)
        return SL_ERR_RANGE;
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, buf_write);
    msgpack_pack_array(&pk, 3);
    msgpack_pack_uint32(&pk, 1);
    msgpack_pack_uint32(&pk, rec->n);
    msgpack_pack_array(&pk, rec->n);
    for (uint32_t i = 0; i < rec->n; i++)
        msgpack_pack_uint64(&pk, rec->v[i]);
    return SL_OK;
}

static sl_err_t counters_object(const msgpack_object *root, state_counters_rec_t *rec)
{
    if (root->type != MSGPACK_OBJECT_ARRAY || root->via.array.size != 3)
        return SL_ERR_CORRUPT;
    const msgpack_object *it = root->via.array.ptr;
    if (it[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return SL_ERR_CORRUPT;
    if (it[0].via.u64 != 1)
        return SL_ERR_VERSION;
    if (it[1].type != MSGPACK_OBJECT_POSITIVE_INTEGER || it[1].via.u64 > STATE_COUNTERS_MAX ||
        it[2].type != MSGPACK_OBJECT_ARRAY || it[2].via.array.size != it[1].via.u64)
        return SL_ERR_CORRUPT;
    rec->n = (uint32_t)it[1].via.u64;
    for (uint32_t i = 0; i < rec->n; i++) {
        const msgpack_object *o = &it[2].via.array.ptr[i];
        if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
            return SL_ERR_CORRUPT;
        rec->v[i] = o->via.u64;
    }
    return SL_OK;
}

sl_err_t state_counters_decode(const void *buf, size_t len, state_counters_rec_t *rec)
{
    if (len == 0 || prescan(buf, len) != SL_OK)
        return SL_ERR_CORRUPT;
    msgpack_unpacked u;
    size_t off = 0;
    msgpack_unpacked_init(&u);
    sl_err_t err = SL_ERR_CORRUPT;
    if (msgpack_unpack_next(&u, buf, len, &off) == MSGPACK_UNPACK_SUCCESS && off == len)
        err = counters_object(&u.data, rec);
    msgpack_unpacked_destroy(&u);
    return err;
}
