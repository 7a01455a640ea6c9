/* state/state_int.h: state/ internal, for the state/ sources and their tests. */
#ifndef STATE_INT_H
#define STATE_INT_H

#include <lmdb.h>
#include <stdio.h>

#include "state/state.h"

enum {
    STATE_DB_META,
    STATE_DB_ENDPOINTS,
    STATE_DB_STATS,
    STATE_DB_EVENTS,
    STATE_DB_PINS,
    STATE_DB_LIMITS,              /* client GCRA cells */
    STATE_DB_LEDGERS,             /* provider credit ledgers */
    STATE_DB_RESUME,              /* held subscriptions' positions (state_resume.h) */
    STATE_DB_COUNT
};

#define STATE_CORRUPT_LOG_MAX 32
#define STATE_LMDB_KEY_MAX 511     /* LMDB's default largest key (keys read back from a database) */

struct state {
    state_conf_t conf;
    char *path;
    MDB_env *env;
    MDB_dbi dbi[STATE_DB_COUNT];
    MDB_txn *rtxn;                /* reused snapshot transaction (reset between uses) */
    uint64_t appends;             /* events this process appended (room check cadence) */
    uint64_t corrupt_logged[STATE_CORRUPT_LOG_MAX]; /* FNV-1a of db and key */
    size_t ncorrupt_logged;
    struct {
        int on;                   /* degraded now */
        int need_start, need_end; /* state_degraded / state_restored not written yet */
        sl_err_t why;
        uint64_t since_ms, ended_ms, retry_ms;
        uint64_t decisions;       /* taken locally, ever */
    } degraded[STATE_PART_COUNT];
    char cell_hand[STATE_LMDB_KEY_MAX];          /* where cell eviction goes on (a key; "" = the first) */
    size_t cell_hand_len;
    struct state_cluster *cluster; /* the worker's Redis link (cluster: section), NULL without */
    char host[STATE_HOST_MAX + 1];  /* cluster: this host's name, given to the events it appends */
};

/* Creates the folder path and its parents (as mkdir -p); SL_ERR_IO if one
 * cannot be made or path is a file. */
sl_err_t state_make_dirs(const char *path);
/* Converts an LMDB return code, logging what failed. */
sl_err_t state_lmdb_err(const char *what, int rc);
void state_note_corrupt(state_t *st, const char *db, const char *key, sl_err_t err);
/* Writes n records of the stats database (a worker's slots) in one write
 * transaction, all or none; encode gives the i-th record's bytes. */
typedef sl_err_t (*state_encode_nth_fn)(const void *recs, size_t i, sl_buf_t *out);
sl_err_t state_stats_put_batch(state_t *st, const char *const *keys, const void *recs, size_t n,
                               state_encode_nth_fn encode, const char *what);
/* Deletes, in one write transaction, every record of db for which live()
 * says 0 (records that do not decode included); *removed gets how many. */
typedef int (*state_live_fn)(const MDB_val *v, uint64_t now);
sl_err_t state_purge(state_t *st, int db, state_live_fn live, uint64_t now, size_t *removed);
/* Appends ev inside txn (assigns ev->seq from meta's counter). */
int state_event_put(state_t *st, MDB_txn *txn, state_event_t *ev);
/* Appends events[0..n) inside txn, stopping at the first that fails; the
 * LMDB code of that one, or MDB_SUCCESS. */
int state_events_put(state_t *st, MDB_txn *txn, state_event_t *events, size_t n);

/* Reads the record at key in db inside txn into rec (zeroed first, and
 * again if it does not decode: noted as corrupt under dbname). SL_OK,
 * SL_ERR_NOT_FOUND, or the LMDB / decoder error. */
/* state_meta_list.c: a kind of record kept in the meta database under a key
 * prefix, listed whole. */
typedef struct state_meta_list {
    const char *prefix;           /* every key of the kind starts so */
    const char *what;             /* for the logs (a record that does not decode, LMDB errors) */
    const state_schema_t *schema;
    size_t size;                  /* of one decoded record */
    uint64_t (*read_gen)(state_t *st, MDB_txn *txn); /* the kind's generation, in the same transaction */
} state_meta_list_t;
/* Every record of the kind, decoded into *out (an array of *n, the
 * caller's to free; a record that does not decode is skipped and noted);
 * *gen, if not NULL, the kind's generation read with them. */
sl_err_t state_meta_list(state_t *st, const state_meta_list_t *l, void **out, size_t *n, uint64_t *gen);
/* A kind's generation alone (read_gen in a read transaction of its own). */
sl_err_t state_meta_generation(state_t *st, uint64_t (*read_gen)(state_t *st, MDB_txn *txn), uint64_t *gen);
sl_err_t state_rec_get(state_t *st, MDB_txn *txn, int db, const char *dbname, const char *key,
                      const state_schema_t *schema, void *rec, size_t recsize);

/* ---- the tail of a write transaction (state_txn.c) ---- */
/* Encodes rec with schema and writes it at key in db, inside txn. The LMDB
 * code; a record that does not encode is MDB_INVALID. */
int state_rec_put(state_t *st, MDB_txn *txn, int db, const char *key, const state_schema_t *schema, const void *rec);
/* Ends txn: commits it if rc (the code of the steps before) is MDB_SUCCESS,
 * else aborts it. Returns rc, or the commit's code. */
int state_txn_end(MDB_txn *txn, int rc);
/* Writes rec at key in db, appends events[0..nevents) and commits txn; on
 * any failure aborts it. A failed step is logged as what ("put endpoint"),
 * "append event" or "commit" (state_lmdb_err); a record that does not encode
 * returns the encoder's error. */
sl_err_t state_txn_finish(state_t *st, MDB_txn *txn, int db, const char *key, const state_schema_t *schema,
                          const void *rec, state_event_t *events, size_t nevents, const char *what);

#endif
