/* state/state_clock.c: the anchor of shared time (base/sl_time.h) in meta.
 *
 * Durations in LMDB records are measured in shared time, CLOCK_MONOTONIC
 * plus an offset. CLOCK_MONOTONIC is the same in every process of one boot,
 * so the offset is kept with the boot id it belongs to: a process of the
 * same boot takes it (never a smaller one than its own: the offset only
 * grows), a process of another boot (or the first ever) starts shared time
 * at max(wall clock, the latest shared time recorded), so that the cells,
 * windows and timers written before the reboot are not further ahead of
 * it than when they were written. The master records the latest shared
 * time every second (state_clock_note). */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "state/state_int.h"

static const MDB_val clock_key = {5, "clock"};

/* The kernel's id of this boot ("" if it cannot be read: every open is then
 * a new boot, which only costs the step protection across sluice restarts). */
static void boot_id(char out[40])
{
    out[0] = '\0';
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, 39);
    close(fd);
    n = n < 0 ? 0 : n;
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
        n--;
    out[n] = '\0';
}

static int write_clock(state_t *st, MDB_txn *txn, const state_clock_rec_t *rec)
{
    sl_buf_t buf = SL_BUF_INIT;
    int rc = MDB_INVALID;
    if (state_record_encode(&state_clock_schema, rec, &buf) == SL_OK) {
        MDB_val v = {buf.len, buf.base};
        rc = mdb_put(txn, st->dbi[STATE_DB_META], (MDB_val *)&clock_key, &v, 0);
    }
    sl_buf_dispose(&buf);
    return rc;
}

/* Reads the stored anchor; 0 if there is none (or it does not decode). */
static int read_clock(state_t *st, MDB_txn *txn, state_clock_rec_t *rec)
{
    MDB_val v;
    memset(rec, 0, sizeof(*rec));
    if (mdb_get(txn, st->dbi[STATE_DB_META], (MDB_val *)&clock_key, &v) != MDB_SUCCESS)
        return 0;
    if (state_record_decode(&state_clock_schema, v.mv_data, v.mv_size, rec) != SL_OK) {
        memset(rec, 0, sizeof(*rec));
        return 0;
    }
    return 1;
}

sl_err_t state_clock_anchor(state_t *st)
{
    MDB_txn *txn;
    state_clock_rec_t rec, now;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    memset(&now, 0, sizeof(now));
    boot_id(now.boot_id);
    uint64_t wall = sl_wall_us(), mono = sl_now_us();
    int have = read_clock(st, txn, &rec);
    if (have && now.boot_id[0] != '\0' && strcmp(rec.boot_id, now.boot_id) == 0) {
        now.offset_us = rec.offset_us > sl_shared_offset_us ? rec.offset_us : sl_shared_offset_us;
    } else {
        uint64_t start = have && rec.high_us > wall ? rec.high_us : wall;
        if (have && rec.high_us > wall)
            sl_log_warn("state: the wall clock is %llu s behind the shared time recorded before this boot; "
                        "shared time goes on from there", (unsigned long long)((rec.high_us - wall) / 1000000));
        now.offset_us = start > mono ? start - mono : 0;
    }
    /* the wall clock ahead of the anchor (a forward step) is followed */
    if (mono + now.offset_us < wall)
        now.offset_us = wall - mono;
    sl_shared_offset_us = now.offset_us;
    now.high_us = mono + now.offset_us;
    if (have && rec.high_us > now.high_us && strcmp(rec.boot_id, now.boot_id) == 0)
        now.high_us = rec.high_us;
    if ((rc = write_clock(st, txn, &now)) != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        return state_lmdb_err("clock", rc);
    }
    return state_lmdb_err("commit", mdb_txn_commit(txn));
}

sl_err_t state_clock_note(state_t *st)
{
    MDB_txn *txn;
    state_clock_rec_t rec;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    uint64_t shared = sl_shared_us();
    if (!read_clock(st, txn, &rec))
        boot_id(rec.boot_id);
    if (sl_shared_offset_us > rec.offset_us)
        rec.offset_us = sl_shared_offset_us; /* followed a forward step: later processes take it too */
    if (shared > rec.high_us)
        rec.high_us = shared;
    if ((rc = write_clock(st, txn, &rec)) != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        return state_lmdb_err("clock", rc);
    }
    return state_lmdb_err("commit", mdb_txn_commit(txn));
}
