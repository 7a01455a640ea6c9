/* state/state_apikey.c: the keys made at run time and their generation
 * (state/state_apikey.h). Rare writes (an operator's request), each one
 * write transaction; the workers' reads are one snapshot per generation. */
#include "state/state_apikey.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state/state_cluster_int.h"
#include "state/state_int.h"
#include "state/state_key.h"

#define F(struct_, name_, type_, size_) {#name_, type_, offsetof(struct_, name_), size_, 0}
#define FSTR(name_) F(state_apikey_rec_t, name_, STATE_F_STR, sizeof(((state_apikey_rec_t *)0)->name_))

static const state_field_t apikey_fields[] = {
    FSTR(name),
    FSTR(tier),
    FSTR(sha256),
    FSTR(networks),
    FSTR(allow),
    FSTR(deny),
    FSTR(contracts),
    FSTR(origins),
    F(state_apikey_rec_t, created_ms, STATE_F_U64, 1),
    F(state_apikey_rec_t, updated_ms, STATE_F_U64, 1),
    {"per_address_second", STATE_F_U32, offsetof(state_apikey_rec_t, per_address[0]), 1, 2},
    {"per_address_minute", STATE_F_U32, offsetof(state_apikey_rec_t, per_address[1]), 1, 2},
    {"per_address_day", STATE_F_U32, offsetof(state_apikey_rec_t, per_address[2]), 1, 2},
    {"credits_day", STATE_F_U32, offsetof(state_apikey_rec_t, credits[0]), 1, 3},
    {"credits_month", STATE_F_U32, offsetof(state_apikey_rec_t, credits[1]), 1, 3},
    {"jwt_pem", STATE_F_STR, offsetof(state_apikey_rec_t, jwt_pem), sizeof(((state_apikey_rec_t *)0)->jwt_pem), 3},
    {"jwt_audience", STATE_F_STR, offsetof(state_apikey_rec_t, jwt_audience),
     sizeof(((state_apikey_rec_t *)0)->jwt_audience), 3},
};

const state_schema_t state_apikey_schema = {"apikey", 3, apikey_fields, sizeof(apikey_fields) / sizeof(apikey_fields[0])};

typedef struct apikey_gen_rec {
    uint64_t gen;
} apikey_gen_rec_t;

static const state_field_t gen_fields[] = {
    F(apikey_gen_rec_t, gen, STATE_F_U64, 1),
};

static const state_schema_t gen_schema = {"apikey_gen", 1, gen_fields, 1};

#define GEN_KEY "apikeys"
#define PREFIX "apikey/"
#define GONE_PREFIX "apikeygone/" /* a revoked key's tombstone: when (shared ms), for the cluster's merge */

typedef struct apikey_gone_rec {
    uint64_t at_ms;
} apikey_gone_rec_t;

static const state_field_t gone_fields[] = {
    F(apikey_gone_rec_t, at_ms, STATE_F_U64, 1),
};

static const state_schema_t gone_schema = {"apikey_gone", 1, gone_fields, 1};

static int name_ok(const char *name)
{
    size_t len = strnlen(name, STATE_APIKEY_NAME_MAX);
    return len != 0 && len < STATE_APIKEY_NAME_MAX && strchr(name, '/') == NULL;
}

/* Bumps the generation and appends ev inside txn, then ends it. */
static sl_err_t finish(state_t *st, MDB_txn *txn, int rc, state_event_t *ev)
{
    apikey_gen_rec_t g;
    if (rc == MDB_SUCCESS) {
        sl_err_t err = state_rec_get(st, txn, STATE_DB_META, "apikey_gen", GEN_KEY, &gen_schema, &g, sizeof(g));
        if (err != SL_OK && err != SL_ERR_NOT_FOUND)
            rc = MDB_INVALID;
    }
    if (rc == MDB_SUCCESS) {
        g.gen++;
        rc = state_rec_put(st, txn, STATE_DB_META, GEN_KEY, &gen_schema, &g);
    }
    if (rc == MDB_SUCCESS && ev != NULL)
        rc = state_events_put(st, txn, ev, 1);
    rc = state_txn_end(txn, rc);
    return rc == MDB_SUCCESS ? SL_OK : state_lmdb_err("apikey", rc);
}

/* mode: 1 create, 0 change, -1 either (a record heard from the cluster). */
static sl_err_t put(state_t *st, const state_apikey_rec_t *rec, int mode, state_event_t *ev)
{
    char key[STATE_APIKEY_NAME_MAX + sizeof(PREFIX)];
    if (!name_ok(rec->name))
        return SL_ERR_INVALID;
    state_key_apikey(key, sizeof(key), rec->name);
    MDB_txn *txn;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    MDB_val k = {strlen(key), key}, v;
    rc = mdb_get(txn, st->dbi[STATE_DB_META], &k, &v);
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) {
        mdb_txn_abort(txn);
        return state_lmdb_err("get apikey", rc);
    }
    if (mode >= 0 && (rc == MDB_SUCCESS) == (mode != 0)) {
        mdb_txn_abort(txn);
        return mode ? SL_ERR_EXISTS : SL_ERR_NOT_FOUND;
    }
    return finish(st, txn, state_rec_put(st, txn, STATE_DB_META, key, &state_apikey_schema, rec), ev);
}

sl_err_t state_apikey_put(state_t *st, const state_apikey_rec_t *rec, int create, state_event_t *ev)
{
    sl_err_t err = put(st, rec, create != 0, ev);
    if (err == SL_OK)
        state_cluster_keys_put(state_cluster_of(st), rec);
    return err;
}

sl_err_t state_apikey_apply(state_t *st, const state_apikey_rec_t *rec)
{
    return put(st, rec, -1, NULL);
}

static void gone_key(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, GONE_PREFIX "%s", name);
}

/* Removes name and leaves its tombstone (at_ms); a missing key is
 * SL_ERR_NOT_FOUND and nothing is written. */
static sl_err_t drop(state_t *st, const char *name, uint64_t at_ms, state_event_t *ev)
{
    char key[STATE_APIKEY_NAME_MAX + sizeof(PREFIX)], gk[STATE_APIKEY_NAME_MAX + sizeof(GONE_PREFIX)];
    if (!name_ok(name))
        return SL_ERR_NOT_FOUND;
    state_key_apikey(key, sizeof(key), name);
    gone_key(gk, sizeof(gk), name);
    MDB_txn *txn;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    MDB_val k = {strlen(key), key};
    rc = mdb_del(txn, st->dbi[STATE_DB_META], &k, NULL);
    if (rc == MDB_NOTFOUND) {
        mdb_txn_abort(txn);
        return SL_ERR_NOT_FOUND;
    }
    apikey_gone_rec_t g = {at_ms};
    if (rc == MDB_SUCCESS)
        rc = state_rec_put(st, txn, STATE_DB_META, gk, &gone_schema, &g);
    return finish(st, txn, rc, ev);
}

sl_err_t state_apikey_delete(state_t *st, const char *name, uint64_t now_ms, state_event_t *ev)
{
    sl_err_t err = drop(st, name, now_ms, ev);
    if (err == SL_OK)
        state_cluster_keys_delete(state_cluster_of(st), name, now_ms);
    return err;
}

sl_err_t state_apikey_forget(state_t *st, const char *name, uint64_t at_ms)
{
    return drop(st, name, at_ms, NULL);
}

uint64_t state_apikey_gone_ms(state_t *st, const char *name)
{
    char gk[STATE_APIKEY_NAME_MAX + sizeof(GONE_PREFIX)];
    apikey_gone_rec_t g = {0};
    MDB_txn *txn;
    if (!name_ok(name) || mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn) != MDB_SUCCESS)
        return 0;
    gone_key(gk, sizeof(gk), name);
    if (state_rec_get(st, txn, STATE_DB_META, "apikey_gone", gk, &gone_schema, &g, sizeof(g)) != SL_OK)
        g.at_ms = 0;
    mdb_txn_abort(txn);
    return g.at_ms;
}

sl_err_t state_apikey_get(state_t *st, const char *name, state_apikey_rec_t *rec)
{
    char key[STATE_APIKEY_NAME_MAX + sizeof(PREFIX)];
    memset(rec, 0, sizeof(*rec));
    if (!name_ok(name))
        return SL_ERR_NOT_FOUND;
    state_key_apikey(key, sizeof(key), name);
    MDB_txn *txn;
    int rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    sl_err_t err = state_rec_get(st, txn, STATE_DB_META, "apikey", key, &state_apikey_schema, rec, sizeof(*rec));
    mdb_txn_abort(txn);
    return err;
}

static uint64_t read_gen(state_t *st, MDB_txn *txn)
{
    apikey_gen_rec_t g;
    if (state_rec_get(st, txn, STATE_DB_META, "apikey_gen", GEN_KEY, &gen_schema, &g, sizeof(g)) != SL_OK)
        return 0;
    return g.gen;
}

sl_err_t state_apikey_generation(state_t *st, uint64_t *gen)
{
    return state_meta_generation(st, read_gen, gen);
}

sl_err_t state_apikey_list(state_t *st, state_apikey_rec_t **out, size_t *n, uint64_t *gen)
{
    static const state_meta_list_t kind = {PREFIX, "apikey", &state_apikey_schema, sizeof(state_apikey_rec_t), read_gen};
    void *recs = NULL;
    sl_err_t err = state_meta_list(st, &kind, &recs, n, gen);
    *out = recs;
    return err;
}
