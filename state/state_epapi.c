/* state/state_epapi.c: the endpoints added at run time and their generation
 * (state/state_epapi.h). Rare writes (an operator's request, or its copy from
 * another host), each one write transaction. */
#include "state/state_epapi.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"
#include "state/state_int.h"

#define F(struct_, name_, type_, size_) {#name_, type_, offsetof(struct_, name_), size_, 0}
#define FSTR(name_) F(state_epapi_rec_t, name_, STATE_F_STR, sizeof(((state_epapi_rec_t *)0)->name_))

static const state_field_t epapi_fields[] = {
    FSTR(network),
    FSTR(id),
    FSTR(json),
    F(state_epapi_rec_t, created_ms, STATE_F_U64, 1),
    F(state_epapi_rec_t, updated_ms, STATE_F_U64, 1),
};

const state_schema_t state_epapi_schema = {"epapi", 1, epapi_fields, sizeof(epapi_fields) / sizeof(epapi_fields[0])};

typedef struct epapi_gen_rec {
    uint64_t gen;
} epapi_gen_rec_t;

static const state_field_t gen_fields[] = {
    F(epapi_gen_rec_t, gen, STATE_F_U64, 1),
};

static const state_schema_t gen_schema = {"epapi_gen", 1, gen_fields, 1};

#define GEN_KEY "epapis"
#define APPLIED_KEY "epapis_applied" /* the generation this host's workers run */
#define PREFIX "epapi/"
#define KEY_MAX (sizeof(PREFIX) + STATE_EPAPI_NET_MAX + STATE_EPAPI_ID_MAX)

static int part_ok(const char *s, size_t cap)
{
    size_t len = strnlen(s, cap);
    return len != 0 && len < cap && strchr(s, '/') == NULL;
}

/* "epapi/<net>/<id>" into key; 0 if either part is not one. */
static int make_key(char key[KEY_MAX], const char *net, const char *id)
{
    if (!part_ok(net, STATE_EPAPI_NET_MAX) || !part_ok(id, STATE_EPAPI_ID_MAX))
        return 0;
    snprintf(key, KEY_MAX, PREFIX "%s/%s", net, id);
    return 1;
}

/* Bumps the generation and appends ev inside txn, then ends it. */
static sl_err_t finish(state_t *st, MDB_txn *txn, int rc, state_event_t *ev)
{
    epapi_gen_rec_t g;
    if (rc == MDB_SUCCESS) {
        sl_err_t err = state_rec_get(st, txn, STATE_DB_META, "epapi_gen", GEN_KEY, &gen_schema, &g, sizeof(g));
        if (err == SL_ERR_NOT_FOUND)
            g.gen = 0;
        else if (err != SL_OK)
            rc = MDB_INVALID;
    }
    if (rc == MDB_SUCCESS) {
        g.gen++;
        rc = state_rec_put(st, txn, STATE_DB_META, GEN_KEY, &gen_schema, &g);
    }
    if (rc == MDB_SUCCESS && ev != NULL)
        rc = state_events_put(st, txn, ev, 1);
    rc = state_txn_end(txn, rc);
    return rc == MDB_SUCCESS ? SL_OK : state_lmdb_err("epapi", rc);
}

/* 1 if the record at v is a tombstone (or does not decode: replaced). */
static int is_tombstone(const MDB_val *v)
{
    state_epapi_rec_t *r = sl_xcalloc(1, sizeof(*r));
    int dead = state_record_decode(&state_epapi_schema, v->mv_data, v->mv_size, r) != SL_OK || r->json[0] == '\0';
    free(r);
    return dead;
}

sl_err_t state_epapi_put(state_t *st, const state_epapi_rec_t *rec, int create, state_event_t *ev)
{
    char key[KEY_MAX];
    if (!make_key(key, rec->network, rec->id))
        return SL_ERR_INVALID;
    MDB_txn *txn;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    MDB_val k = {strlen(key), key}, v;
    rc = mdb_get(txn, st->dbi[STATE_DB_META], &k, &v);
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) {
        mdb_txn_abort(txn);
        return state_lmdb_err("get epapi", rc);
    }
    int live = rc == MDB_SUCCESS && v.mv_size > 0 && !is_tombstone(&v);
    if (create >= 0 && live == (create != 0)) {
        mdb_txn_abort(txn);
        return create ? SL_ERR_EXISTS : SL_ERR_NOT_FOUND;
    }
    return finish(st, txn, state_rec_put(st, txn, STATE_DB_META, key, &state_epapi_schema, rec), ev);
}

sl_err_t state_epapi_delete(state_t *st, const char *net, const char *id, uint64_t now_ms, state_event_t *ev)
{
    state_epapi_rec_t *rec = sl_xcalloc(1, sizeof(*rec));
    sl_err_t err = state_epapi_get(st, net, id, rec);
    if (err == SL_OK && rec->json[0] == '\0')
        err = SL_ERR_NOT_FOUND;
    if (err == SL_OK) {
        rec->json[0] = '\0'; /* a tombstone: the cluster learns of the removal by it */
        rec->updated_ms = now_ms > rec->updated_ms ? now_ms : rec->updated_ms + 1;
        err = state_epapi_put(st, rec, -1, ev);
    }
    free(rec);
    return err;
}

sl_err_t state_epapi_get(state_t *st, const char *net, const char *id, state_epapi_rec_t *rec)
{
    char key[KEY_MAX];
    memset(rec, 0, sizeof(*rec));
    if (!make_key(key, net, id))
        return SL_ERR_NOT_FOUND;
    MDB_txn *txn;
    int rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    sl_err_t err = state_rec_get(st, txn, STATE_DB_META, "epapi", key, &state_epapi_schema, rec, sizeof(*rec));
    mdb_txn_abort(txn);
    return err;
}

static uint64_t read_gen(state_t *st, MDB_txn *txn)
{
    epapi_gen_rec_t g;
    if (state_rec_get(st, txn, STATE_DB_META, "epapi_gen", GEN_KEY, &gen_schema, &g, sizeof(g)) != SL_OK)
        return 0;
    return g.gen;
}

sl_err_t state_epapi_applied_set(state_t *st, uint64_t gen)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    epapi_gen_rec_t g = {gen};
    rc = state_txn_end(txn, state_rec_put(st, txn, STATE_DB_META, APPLIED_KEY, &gen_schema, &g));
    return rc == MDB_SUCCESS ? SL_OK : state_lmdb_err("epapi applied", rc);
}

sl_err_t state_epapi_applied(state_t *st, uint64_t *gen)
{
    MDB_txn *txn;
    epapi_gen_rec_t g = {0};
    *gen = 0;
    int rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    sl_err_t err = state_rec_get(st, txn, STATE_DB_META, "epapi_gen", APPLIED_KEY, &gen_schema, &g, sizeof(g));
    mdb_txn_abort(txn);
    if (err == SL_ERR_NOT_FOUND)
        return SL_OK; /* nothing applied yet: 0 */
    *gen = g.gen;
    return err;
}

sl_err_t state_epapi_generation(state_t *st, uint64_t *gen)
{
    return state_meta_generation(st, read_gen, gen);
}

sl_err_t state_epapi_list(state_t *st, state_epapi_rec_t **out, size_t *n, uint64_t *gen)
{
    static const state_meta_list_t kind = {PREFIX, "epapi", &state_epapi_schema, sizeof(state_epapi_rec_t), read_gen};
    void *recs = NULL;
    sl_err_t err = state_meta_list(st, &kind, &recs, n, gen);
    *out = recs;
    return err;
}
