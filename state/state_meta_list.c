/* state/state_meta_list.c: every record of one kind in the meta database
 * (a key prefix, a schema), read in one transaction with the kind's
 * generation: the run-time API keys and endpoints list themselves so. */
#include <stdlib.h>
#include <string.h>

#include "state/state_int.h"

/* Appends the record at v to *out (grown as needed); 0 when it does not
 * decode (noted), -1 out of memory. */
static int list_add(state_t *st, const state_meta_list_t *l, const MDB_val *k, const MDB_val *v, void **out,
                    size_t *n, size_t *cap)
{
    if (*n == *cap) {
        size_t ncap = *cap != 0 ? *cap * 2 : 8;
        void *p = realloc(*out, ncap * l->size);
        if (p == NULL)
            return -1;
        *out = p;
        *cap = ncap;
    }
    sl_err_t err = state_record_decode(l->schema, v->mv_data, v->mv_size, (char *)*out + *n * l->size);
    if (err != SL_OK) {
        char key[STATE_LMDB_KEY_MAX + 1];
        size_t len = k->mv_size < sizeof(key) - 1 ? k->mv_size : sizeof(key) - 1;
        memcpy(key, k->mv_data, len);
        key[len] = '\0';
        state_note_corrupt(st, l->what, key, err);
        return 0;
    }
    (*n)++;
    return 1;
}

sl_err_t state_meta_list(state_t *st, const state_meta_list_t *l, void **out, size_t *n, uint64_t *gen)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    size_t cap = 0, plen = strlen(l->prefix);
    *out = NULL;
    *n = 0;
    int rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    if (gen != NULL)
        *gen = l->read_gen(st, txn);
    if ((rc = mdb_cursor_open(txn, st->dbi[STATE_DB_META], &cur)) != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        return state_lmdb_err("cursor", rc);
    }
    MDB_val k = {plen, (void *)l->prefix}, v;
    int added = 0;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == MDB_SUCCESS; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < plen || memcmp(k.mv_data, l->prefix, plen) != 0)
            break;
        if ((added = list_add(st, l, &k, &v, out, n, &cap)) < 0)
            break;
    }
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    if (added < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
        return SL_ERR_STATE;
    }
    return rc == MDB_SUCCESS || rc == MDB_NOTFOUND ? SL_OK : state_lmdb_err(l->what, rc);
}

sl_err_t state_meta_generation(state_t *st, uint64_t (*read_gen)(state_t *st, MDB_txn *txn), uint64_t *gen)
{
    MDB_txn *txn;
    *gen = 0;
    int rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    *gen = read_gen(st, txn);
    mdb_txn_abort(txn);
    return SL_OK;
}
