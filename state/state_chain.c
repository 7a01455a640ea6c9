/* state/state_chain.c: the heads served on a network, shared by the
 * workers' chain views (pool/pool_chain.c), its learned identity
 * (server/srv_chainid.c, pool/pool_chainid.c) and the last reorg reported.
 *
 * "chain/<network>" in meta holds the floor of heads served to clients:
 * a worker about to serve eth_blockNumber reads it in a fresh snapshot (one
 * a tick old could let two workers serve heads apart), and raises it in one
 * write transaction when it serves a higher head: at most once per new block
 * and worker, never per request. The read decodes the record only when its
 * bytes changed since the reader's last look (state_chain_get_seen). */
#include <string.h>

#include "state/state_int.h"
#include "state/state_key.h"

sl_err_t state_chain_get(state_t *st, const char *network, state_chain_rec_t *rec)
{
    char key[96];
    memset(rec, 0, sizeof(*rec));
    if (st->rtxn == NULL)
        return SL_ERR_STATE;
    state_key_chain(key, sizeof(key), network);
    return state_rec_get(st, st->rtxn, STATE_DB_META, "chain", key, &state_chain_schema, rec, sizeof(*rec));
}

sl_err_t state_chain_get_seen(state_t *st, const char *network, state_chain_seen_t *seen, state_chain_rec_t *rec)
{
    memset(rec, 0, sizeof(*rec));
    if (st->rtxn == NULL)
        return SL_ERR_STATE;
    if (seen->key[0] == '\0')
        state_key_chain(seen->key, sizeof(seen->key), network);
    MDB_val k = {strlen(seen->key), seen->key}, v;
    int rc = mdb_get(st->rtxn, st->dbi[STATE_DB_META], &k, &v);
    if (rc != MDB_SUCCESS)
        return rc == MDB_NOTFOUND ? SL_ERR_NOT_FOUND : state_lmdb_err("get", rc);
    if (seen->len != 0 && v.mv_size == seen->len && memcmp(v.mv_data, seen->raw, seen->len) == 0) {
        *rec = seen->rec;
        return SL_OK;
    }
    seen->len = 0;
    sl_err_t err = state_record_decode(&state_chain_schema, v.mv_data, v.mv_size, rec);
    if (err != SL_OK) {
        memset(rec, 0, sizeof(*rec));
        state_note_corrupt(st, "chain", seen->key, err);
        return err;
    }
    if (v.mv_size <= sizeof(seen->raw)) {
        memcpy(seen->raw, v.mv_data, v.mv_size);
        seen->len = (uint32_t)v.mv_size;
        seen->rec = *rec;
    }
    return SL_OK;
}

/* One write transaction on the network's record: fn changes it (returns 1)
 * or leaves it (0: nothing written). */
typedef int (*chain_change_fn)(state_chain_rec_t *rec, void *ctx);

static sl_err_t chain_change(state_t *st, const char *network, chain_change_fn fn, void *ctx, state_chain_rec_t *rec)
{
    char key[96];
    MDB_txn *txn;
    state_key_chain(key, sizeof(key), network);
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    sl_err_t err = state_rec_get(st, txn, STATE_DB_META, "chain", key, &state_chain_schema, rec, sizeof(*rec));
    if (err != SL_OK && err != SL_ERR_NOT_FOUND) {
        mdb_txn_abort(txn);
        return err;
    }
    if (!fn(rec, ctx)) {
        mdb_txn_abort(txn);
        return SL_OK;
    }
    return state_txn_finish(st, txn, STATE_DB_META, key, &state_chain_schema, rec, NULL, 0, "put chain");
}

typedef struct raise_ctx {
    const uint64_t *floor;
    uint64_t now_ms;
} raise_ctx_t;

static int raise_cb(state_chain_rec_t *rec, void *arg)
{
    raise_ctx_t *c = arg;
    int rises = 0;
    for (size_t k = 0; k < STATE_CHAIN_KINDS; k++)
        if (c->floor[k] > rec->floor[k]) {
            rec->floor[k] = c->floor[k];
            rises = 1;
        }
    if (rises)
        rec->updated_ms = c->now_ms;
    return rises;
}

sl_err_t state_chain_raise(state_t *st, const char *network, const uint64_t floor[STATE_CHAIN_KINDS],
                           uint64_t now_ms, state_chain_rec_t *merged)
{
    raise_ctx_t c = {floor, now_ms};
    return chain_change(st, network, raise_cb, &c, merged);
}

typedef struct learn_ctx {
    const char *id;
    uint64_t now_ms;
} learn_ctx_t;

static int learn_cb(state_chain_rec_t *rec, void *arg)
{
    learn_ctx_t *c = arg;
    if (rec->identity[0] != '\0' || strlen(c->id) >= sizeof(rec->identity))
        return 0;
    snprintf(rec->identity, sizeof(rec->identity), "%s", c->id);
    rec->identity_at_ms = c->now_ms;
    return 1;
}

sl_err_t state_chain_learn(state_t *st, const char *network, const char *id, uint64_t now_ms,
                           char kept[STATE_CHAIN_ID_MAX])
{
    learn_ctx_t c = {id, now_ms};
    state_chain_rec_t rec;
    sl_err_t err = chain_change(st, network, learn_cb, &c, &rec);
    snprintf(kept, STATE_CHAIN_ID_MAX, "%s", err == SL_OK ? rec.identity : "");
    return err;
}

typedef struct relearn_ctx {
    const char *from, *id;
    uint64_t now_ms;
    int swapped;
} relearn_ctx_t;

static int relearn_cb(state_chain_rec_t *rec, void *arg)
{
    relearn_ctx_t *c = arg;
    if (strcmp(rec->identity, c->from) != 0 || strcmp(c->id, c->from) == 0 || c->id[0] == '\0' ||
        strlen(c->id) >= sizeof(rec->identity))
        return 0;
    snprintf(rec->identity, sizeof(rec->identity), "%s", c->id);
    rec->identity_at_ms = c->now_ms;
    c->swapped = 1;
    return 1;
}

sl_err_t state_chain_relearn(state_t *st, const char *network, const char *from, const char *id, uint64_t now_ms,
                             int *swapped, char kept[STATE_CHAIN_ID_MAX])
{
    relearn_ctx_t c = {from, id, now_ms, 0};
    state_chain_rec_t rec;
    sl_err_t err = chain_change(st, network, relearn_cb, &c, &rec);
    *swapped = err == SL_OK && c.swapped;
    snprintf(kept, STATE_CHAIN_ID_MAX, "%s", err == SL_OK ? rec.identity : "");
    return err;
}

typedef struct reorg_ctx {
    uint64_t tip;
    const char *hash;
    uint32_t depth;
    uint64_t now_ms;
    uint32_t fold_ms;
    state_chain_reorg_claim_t *claim;
} reorg_ctx_t;

static int reorg_cb(state_chain_rec_t *rec, void *arg)
{
    reorg_ctx_t *c = arg;
    if (rec->reorg_tip == c->tip && strcmp(rec->reorg_hash, c->hash) == 0)
        return 0;
    rec->reorg_tip = c->tip;
    snprintf(rec->reorg_hash, sizeof(rec->reorg_hash), "%s", c->hash);
    rec->reorg_depth = c->depth;
    rec->reorgs++;
    rec->reorgs_folded++;
    c->claim->first = 1;
    if (rec->reorg_event_ms == 0 || c->now_ms >= rec->reorg_event_ms + c->fold_ms || c->now_ms < rec->reorg_event_ms) {
        c->claim->report = 1;
        c->claim->folded = rec->reorgs_folded;
        rec->reorgs_folded = 0;
        rec->reorg_event_ms = c->now_ms;
    }
    return 1;
}

sl_err_t state_chain_reorg(state_t *st, const char *network, uint64_t tip_height, const char *tip_hash,
                           uint32_t depth, uint64_t now_ms, uint32_t fold_ms, state_chain_reorg_claim_t *claim)
{
    memset(claim, 0, sizeof(*claim));
    reorg_ctx_t c = {tip_height, tip_hash, depth, now_ms, fold_ms, claim};
    state_chain_rec_t rec;
    sl_err_t err = chain_change(st, network, reorg_cb, &c, &rec);
    if (err != SL_OK)
        memset(claim, 0, sizeof(*claim));
    return err;
}
