/* tests/state/test_state.c: state/state.h against a real LMDB environment in a
 * fresh temporary folder per test: opening and the schema version, the
 * compare-and-set update and its events, processes racing on one key, the
 * event log (sequence, reading, retention, a full map), corrupt records,
 * stale readers, stats, counters and the network level. */
#include <criterion/criterion.h>
#include <errno.h>
#include <lmdb.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "state/state.h"
#include "state/state_int.h"
#include "tests/lib/temp_dir.h"

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

static char tmpdir[256];
static char dbpath[512];
static state_t *st;

static void setup(void)
{
    temp_dir_make(tmpdir, sizeof(tmpdir), "state");
    snprintf(dbpath, sizeof(dbpath), "%s/var/state", tmpdir);
    st = NULL;
}

static void teardown(void)
{
    state_close(st);
    st = NULL;
    temp_dir_remove(tmpdir);
}

TestSuite(state, .init = setup, .fini = teardown);

static state_conf_t conf_default(void)
{
    return (state_conf_t){.path = dbpath, .map_size_mb = 16, .event_max_count = 100000, .event_max_age_s = 86400};
}

static void open_default(void)
{
    state_conf_t c = conf_default();
    sl_err_t err = state_open(&c, &st);
    cr_assert_eq(err, SL_OK, "state_open: %s", sl_err_name(err));
}

static void reopen(void)
{
    state_close(st);
    st = NULL;
    open_default();
}

static state_event_t make_event(uint64_t ts, state_event_kind_t kind, const char *reason)
{
    state_event_t ev;
    memset(&ev, 0, sizeof(ev));
    ev.ts_ms = ts;
    ev.kind = (uint8_t)kind;
    snprintf(ev.network, sizeof(ev.network), "eth");
    snprintf(ev.endpoint, sizeof(ev.endpoint), "ep1");
    snprintf(ev.reason, sizeof(ev.reason), "%s", reason);
    ev.pid = (uint32_t)getpid();
    return ev;
}

static void append(uint64_t ts, const char *reason)
{
    state_event_t ev = make_event(ts, STATE_EVENT_FAILOVER, reason);
    sl_err_t err = state_event_append(st, &ev);
    cr_assert_eq(err, SL_OK, "append: %s", sl_err_name(err));
}

static size_t event_count(state_t *s)
{
    MDB_txn *txn;
    MDB_stat ms;
    cr_assert_eq(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn), MDB_SUCCESS);
    cr_assert_eq(mdb_stat(txn, s->dbi[STATE_DB_EVENTS], &ms), MDB_SUCCESS);
    mdb_txn_abort(txn);
    return ms.ms_entries;
}

static size_t read_all(uint64_t since, state_event_t *out, size_t max)
{
    size_t n = 99999;
    sl_err_t err = state_events_read(st, since, out, max, &n);
    cr_assert_eq(err, SL_OK, "events_read: %s", sl_err_name(err));
    return n;
}

static void be64(uint64_t v, unsigned char out[8])
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        out[i] = (unsigned char)v;
}

/* ---- opening and the schema version --------------------------------------- */

Test(state, open_creates_folder_and_schema)
{
    struct stat sb;
    cr_assert_neq(stat(dbpath, &sb), 0, "the folder should not exist yet");
    open_default();
    cr_assert_eq(stat(dbpath, &sb), 0);
    cr_expect(S_ISDIR(sb.st_mode));
    char file[600];
    snprintf(file, sizeof(file), "%s/data.mdb", dbpath);
    cr_expect_eq(stat(file, &sb), 0, "no data.mdb");

    MDB_txn *txn;
    MDB_val k = {6, "schema"}, v;
    cr_assert_eq(mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn), MDB_SUCCESS);
    cr_assert_eq(mdb_get(txn, st->dbi[STATE_DB_META], &k, &v), MDB_SUCCESS, "no schema record");
    uint32_t version = 0;
    cr_assert_eq(v.mv_size, sizeof(version));
    memcpy(&version, v.mv_data, sizeof(version));
    mdb_txn_abort(txn);
    cr_expect_eq(version, STATE_SCHEMA_VERSION);
    cr_expect_eq(state_events_last_seq(st), 0);

    size_t used = 0, size = 0;
    state_usage(st, &used, &size);
    cr_expect_eq(size, 16u << 20);
    cr_expect_gt(used, 0);
    cr_expect_leq(used, size);
    cr_expect_eq(state_sync(st), SL_OK);

    /* reopening an existing environment is fine */
    reopen();
}

typedef struct schema_case {
    const char *why;
    unsigned char bytes[8];
    size_t len;
    sl_err_t want;
} schema_case_t;

static const schema_case_t schema_cases[] = {
    {"this version", {1, 0, 0, 0}, 4, SL_OK},
    {"version 2", {2, 0, 0, 0}, 4, SL_ERR_VERSION},
    {"version 0", {0, 0, 0, 0}, 4, SL_ERR_VERSION},
    {"version 2^32-1", {0xff, 0xff, 0xff, 0xff}, 4, SL_ERR_VERSION},
    {"1 as 8 bytes", {1, 0, 0, 0, 0, 0, 0, 0}, 8, SL_ERR_VERSION},
    {"1 as 2 bytes", {1, 0}, 2, SL_ERR_VERSION},
    {"empty", {0}, 0, SL_ERR_VERSION},
};

Test(state, schema_version_checked_on_open)
{
    for (size_t i = 0; i < NELEMS(schema_cases); i++) {
        const schema_case_t *c = &schema_cases[i];
        char path[600];
        snprintf(path, sizeof(path), "%s/schema%zu", tmpdir, i);
        state_conf_t conf = conf_default();
        conf.path = path;
        state_t *s = NULL;
        cr_assert_eq(state_open(&conf, &s), SL_OK);
        cr_assert_eq(state_raw_put(s, "meta", "schema", 6, c->bytes, c->len), SL_OK);
        state_close(s);
        state_t *other = (state_t *)0x1;
        sl_err_t err = state_open(&conf, &other);
        cr_expect_eq(err, c->want, "%s: %s", c->why, sl_err_name(err));
        if (err == SL_OK)
            state_close(other);
        else
            cr_expect_eq(other, (state_t *)0x1, "%s: *out written on failure", c->why);
    }
}

Test(state, open_errors)
{
    /* a folder under a regular file cannot be created */
    char file[600], path[700];
    snprintf(file, sizeof(file), "%s/plain", tmpdir);
    FILE *f = fopen(file, "w");
    cr_assert_not_null(f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/sub", file);
    state_conf_t c = conf_default();
    c.path = path;
    state_t *s = NULL;
    cr_expect_eq(state_open(&c, &s), SL_ERR_IO);
    cr_expect_null(s);
    c.path = "";
    cr_expect_neq(state_open(&c, &s), SL_OK);
    cr_expect_null(s);
}

Test(state, raw_put_unknown_db)
{
    open_default();
    cr_expect_eq(state_raw_put(st, "nope", "k", 1, "v", 1), SL_ERR_INVALID);
    cr_expect_eq(state_raw_put(st, "", "k", 1, "v", 1), SL_ERR_INVALID);
}

/* ---- compare-and-set ------------------------------------------------------------ */

typedef struct cas_ctx {
    int calls;
    int ret;
    int seen_exists;
    state_endpoint_rec_t seen;
    state_endpoint_rec_t write;
    size_t nevents;
    const char *reason;
} cas_ctx_t;

static int cas_fn(void *arg, state_endpoint_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    cas_ctx_t *c = arg;
    c->calls++;
    c->seen = *rec;
    c->seen_exists = exists;
    *rec = c->write;
    for (size_t i = 0; i < c->nevents; i++) {
        events[i] = make_event(1000 + i, STATE_EVENT_BREAKER_OPENED, c->reason);
        events[i].count = i;
    }
    *nevents = c->nevents;
    return c->ret;
}

Test(state, update_returning_zero_writes_nothing)
{
    open_default();
    cas_ctx_t c = {.ret = 0, .nevents = 3, .reason = "nope"};
    c.write.breaker = 1;
    c.write.since_ms = 77;
    int changed = 42;
    cr_assert_eq(state_endpoint_update(st, "eth/a", cas_fn, &c, &changed), SL_OK);
    cr_expect_eq(c.calls, 1);
    cr_expect_eq(changed, 0);
    cr_expect_eq(c.seen_exists, 0);
    state_endpoint_rec_t zero;
    memset(&zero, 0, sizeof(zero));
    cr_expect(memcmp(&c.seen, &zero, sizeof(zero)) == 0, "an absent record is not zeroed");
    cr_expect_eq(state_events_last_seq(st), 0);
    cr_expect_eq(event_count(st), 0);
    cr_assert_eq(state_read_begin(st), SL_OK);
    state_endpoint_rec_t rec;
    cr_expect_eq(state_endpoint_get(st, "eth/a", &rec), SL_ERR_NOT_FOUND);
    state_read_end(st);
}

Test(state, update_writes_record_and_events_together)
{
    open_default();
    cas_ctx_t c = {.ret = 1, .nevents = 2, .reason = "first"};
    c.write.breaker = 1;
    c.write.since_ms = 1234;
    c.write.cooldown_ms = 5000;
    c.write.transitions[1] = 1;
    int changed = 0;
    cr_assert_eq(state_endpoint_update(st, "eth/a", cas_fn, &c, &changed), SL_OK);
    cr_expect_eq(changed, 1);
    cr_expect_eq(c.seen_exists, 0);
    cr_expect_eq(state_events_last_seq(st), 2);

    /* the second call sees what the first wrote */
    c.nevents = STATE_MAX_TXN_EVENTS;
    c.reason = "second";
    c.write.breaker = 2;
    cr_assert_eq(state_endpoint_update(st, "eth/a", cas_fn, &c, &changed), SL_OK);
    cr_expect_eq(c.seen_exists, 1);
    cr_expect_eq(c.seen.breaker, 1);
    cr_expect_eq(c.seen.since_ms, 1234);
    cr_expect_eq(c.seen.cooldown_ms, 5000);
    cr_expect_eq(c.seen.transitions[1], 1);

    state_event_t evs[16];
    size_t n = read_all(0, evs, NELEMS(evs));
    cr_assert_eq(n, 2 + STATE_MAX_TXN_EVENTS);
    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(evs[i].seq, i + 1);
        cr_expect_str_eq(evs[i].reason, i < 2 ? "first" : "second");
        cr_expect_eq(evs[i].count, i < 2 ? i : i - 2);
        cr_expect_eq(evs[i].kind, STATE_EVENT_BREAKER_OPENED);
        cr_expect_str_eq(evs[i].network, "eth");
    }

    cr_assert_eq(state_read_begin(st), SL_OK);
    state_endpoint_rec_t rec;
    cr_assert_eq(state_endpoint_get(st, "eth/a", &rec), SL_OK);
    cr_expect_eq(rec.breaker, 2);
    cr_expect_eq(state_endpoint_get(st, "eth/b", &rec), SL_ERR_NOT_FOUND);
    state_read_end(st);
}

Test(state, get_needs_a_snapshot_and_a_snapshot_is_stable)
{
    open_default();
    state_endpoint_rec_t rec;
    cr_expect_eq(state_endpoint_get(st, "eth/a", &rec), SL_ERR_STATE, "a get without state_read_begin");
    cas_ctx_t c = {.ret = 1};
    c.write.cooldown_ms = 1;
    int changed;
    cr_assert_eq(state_endpoint_update(st, "eth/a", cas_fn, &c, &changed), SL_OK);
    cr_assert_eq(state_read_begin(st), SL_OK);
    c.write.cooldown_ms = 2;
    cr_assert_eq(state_endpoint_update(st, "eth/a", cas_fn, &c, &changed), SL_OK);
    cr_assert_eq(state_endpoint_get(st, "eth/a", &rec), SL_OK);
    cr_expect_eq(rec.cooldown_ms, 1, "the snapshot saw a later write");
    state_read_end(st);
    cr_assert_eq(state_read_begin(st), SL_OK);
    cr_assert_eq(state_endpoint_get(st, "eth/a", &rec), SL_OK);
    cr_expect_eq(rec.cooldown_ms, 2);
    state_read_end(st);
}

Test(state, sequence_never_reused)
{
    state_conf_t conf = conf_default();
    conf.event_max_count = 1000;
    conf.event_max_age_s = 1;
    cr_assert_eq(state_open(&conf, &st), SL_OK);
    uint64_t last = 0;
    for (int i = 0; i < 5; i++) {
        state_event_t ev = make_event(1000, STATE_EVENT_FAILOVER, "x");
        cr_assert_eq(state_event_append(st, &ev), SL_OK);
        cr_expect_gt(ev.seq, last);
        last = ev.seq;
    }
    cr_expect_eq(last, 5);
    size_t removed = 0;
    cr_assert_eq(state_trim_events(st, 1000000, &removed), SL_OK);
    cr_expect_eq(removed, 5);
    cr_expect_eq(event_count(st), 0);
    cr_expect_eq(state_events_last_seq(st), 5);
    state_event_t ev = make_event(1000000, STATE_EVENT_FAILOVER, "after");
    cr_assert_eq(state_event_append(st, &ev), SL_OK);
    cr_expect_eq(ev.seq, 6);
    /* and across a reopen */
    state_close(st);
    st = NULL;
    cr_assert_eq(state_open(&conf, &st), SL_OK);
    cr_assert_eq(state_trim_events(st, 10000000, &removed), SL_OK);
    cr_expect_eq(removed, 1);
    ev = make_event(1000000, STATE_EVENT_FAILOVER, "reopened");
    cr_assert_eq(state_event_append(st, &ev), SL_OK);
    cr_expect_eq(ev.seq, 7);
    /* through the CAS path as well */
    cas_ctx_t c = {.ret = 1, .nevents = 1, .reason = "cas"};
    int changed;
    cr_assert_eq(state_endpoint_update(st, "eth/a", cas_fn, &c, &changed), SL_OK);
    cr_expect_eq(state_events_last_seq(st), 8);
    state_event_t out[4];
    size_t n = read_all(0, out, 4);
    cr_assert_eq(n, 2);
    cr_expect_eq(out[0].seq, 7);
    cr_expect_eq(out[1].seq, 8);
    cr_expect_str_eq(out[1].reason, "cas");
}

/* ---- processes racing ------------------------------------------------------------- */

typedef struct counter_ctx {
    uint64_t expect;
} counter_ctx_t;

static int counter_fn(void *arg, state_endpoint_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    (void)exists;
    (void)events;
    (void)nevents;
    const counter_ctx_t *c = arg;
    if (rec->rate_limited_until_ms != c->expect)
        return 0;
    rec->rate_limited_until_ms = c->expect + 1;
    rec->transitions[0]++;
    return 1;
}

/* Child body: 500 successful read-then-CAS increments. Exit status: 0 on
 * success, 2+ on an error. Never returns. */
static void counter_child(int start_fd, int report_fd)
{
    state_conf_t conf = conf_default();
    state_t *s;
    if (state_open(&conf, &s) != SL_OK)
        _exit(3);
    char go;
    if (read(start_fd, &go, 1) != 0) /* EOF: the parent closed the pipe */
        _exit(2);
    unsigned done = 0, conflicts = 0;
    while (done < 500) {
        state_endpoint_rec_t rec;
        if (state_read_begin(s) != SL_OK)
            _exit(4);
        sl_err_t err = state_endpoint_get(s, "eth/counter", &rec);
        state_read_end(s);
        if (err == SL_ERR_NOT_FOUND)
            rec.rate_limited_until_ms = 0;
        else if (err != SL_OK)
            _exit(5);
        counter_ctx_t c = {rec.rate_limited_until_ms};
        sched_yield(); /* widen the gap between the snapshot and the CAS */
        int changed = 0;
        if (state_endpoint_update(s, "eth/counter", counter_fn, &c, &changed) != SL_OK)
            _exit(6);
        if (changed)
            done++;
        else
            conflicts++;
    }
    state_close(s);
    if (write(report_fd, &conflicts, sizeof(conflicts)) != sizeof(conflicts))
        _exit(7);
    _exit(0);
}

Test(state, two_processes_cas_no_lost_update)
{
    open_default();
    state_close(st); /* children open their own handles; none is shared over fork */
    st = NULL;
    int start[2], report[2];
    cr_assert_eq(pipe(start), 0);
    cr_assert_eq(pipe(report), 0);
    pid_t kids[2];
    for (int i = 0; i < 2; i++) {
        kids[i] = fork();
        cr_assert_geq(kids[i], 0);
        if (kids[i] == 0) {
            close(start[1]);
            close(report[0]);
            counter_child(start[0], report[1]);
        }
    }
    close(start[0]);
    close(report[1]);
    close(start[1]); /* go */
    unsigned conflicts_total = 0;
    for (int i = 0; i < 2; i++) {
        int status;
        cr_assert_eq(waitpid(kids[i], &status, 0), kids[i]);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d: status 0x%x", i, status);
        unsigned conflicts = 0;
        if (read(report[0], &conflicts, sizeof(conflicts)) == sizeof(conflicts))
            conflicts_total += conflicts;
    }
    close(report[0]);
    cr_log_info("CAS conflicts seen by the children: %u", conflicts_total);
    open_default();
    cr_assert_eq(state_read_begin(st), SL_OK);
    state_endpoint_rec_t rec;
    cr_assert_eq(state_endpoint_get(st, "eth/counter", &rec), SL_OK);
    state_read_end(st);
    cr_expect_eq(rec.rate_limited_until_ms, 1000);
    cr_expect_eq(rec.transitions[0], 1000, "successful updates: %llu", (unsigned long long)rec.transitions[0]);
}

static int open_fn(void *arg, state_endpoint_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    (void)arg;
    (void)exists;
    if (rec->breaker != 0 /* CLOSED */)
        return 0;
    rec->breaker = 1; /* OPEN */
    rec->transitions[1]++;
    events[0] = make_event(5000, STATE_EVENT_BREAKER_OPENED, "race");
    events[0].from = 0;
    events[0].to = 1;
    *nevents = 1;
    return 1;
}

/* Exit status: 10 + changed, or an error code below 10. */
static void open_child(int start_fd, const char *key)
{
    state_conf_t conf = conf_default();
    state_t *s;
    if (state_open(&conf, &s) != SL_OK)
        _exit(3);
    char go;
    if (read(start_fd, &go, 1) != 0)
        _exit(2);
    int changed = 0;
    if (state_endpoint_update(s, key, open_fn, NULL, &changed) != SL_OK)
        _exit(4);
    state_close(s);
    _exit(10 + changed);
}

Test(state, racing_transition_appends_one_event)
{
    enum { ROUNDS = 10, KIDS = 3 };
    open_default();
    state_close(st);
    st = NULL;
    for (int round = 0; round < ROUNDS; round++) {
        char key[32];
        snprintf(key, sizeof(key), "eth/race%d", round);
        int start[2];
        cr_assert_eq(pipe(start), 0);
        pid_t kids[KIDS];
        for (int i = 0; i < KIDS; i++) {
            kids[i] = fork();
            cr_assert_geq(kids[i], 0);
            if (kids[i] == 0) {
                close(start[1]);
                open_child(start[0], key);
            }
        }
        close(start[0]);
        close(start[1]); /* every child wakes at once */
        int winners = 0;
        for (int i = 0; i < KIDS; i++) {
            int status;
            cr_assert_eq(waitpid(kids[i], &status, 0), kids[i]);
            cr_assert(WIFEXITED(status) && WEXITSTATUS(status) >= 10, "round %d child %d: status 0x%x", round, i,
                      status);
            winners += WEXITSTATUS(status) - 10;
        }
        cr_expect_eq(winners, 1, "round %d: %d processes saw CLOSED", round, winners);
    }
    open_default();
    state_event_t evs[64];
    size_t n = read_all(0, evs, NELEMS(evs));
    cr_expect_eq(n, ROUNDS, "events: %zu", n);
    cr_assert_eq(state_read_begin(st), SL_OK);
    for (int round = 0; round < ROUNDS; round++) {
        char key[32];
        snprintf(key, sizeof(key), "eth/race%d", round);
        state_endpoint_rec_t rec;
        cr_assert_eq(state_endpoint_get(st, key, &rec), SL_OK);
        cr_expect_eq(rec.breaker, 1);
        cr_expect_eq(rec.transitions[1], 1, "%s opened %llu times", key, (unsigned long long)rec.transitions[1]);
    }
    state_read_end(st);
}

/* ---- reading events -------------------------------------------------------------- */

Test(state, events_read_since_and_limit)
{
    open_default();
    for (int i = 1; i <= 10; i++) {
        char r[16];
        snprintf(r, sizeof(r), "r%d", i);
        append((uint64_t)i * 100, r);
    }
    static const struct {
        uint64_t since;
        size_t max;
        size_t n;
        uint64_t first;
    } cases[] = {
        {0, 100, 10, 1}, {0, 3, 3, 1},  {3, 100, 7, 4},   {3, 2, 2, 4},          {9, 100, 1, 10},
        {10, 100, 0, 0}, {11, 100, 0, 0}, {0, 0, 0, 0},   {UINT64_MAX - 1, 5, 0, 0}, {5, 5, 5, 6},
        {UINT64_MAX, 100, 0, 0}, /* nothing is newer than the largest sequence */
    };
    for (size_t i = 0; i < NELEMS(cases); i++) {
        state_event_t out[16];
        memset(out, 0x5a, sizeof(out));
        size_t n = read_all(cases[i].since, out, cases[i].max);
        cr_expect_eq(n, cases[i].n, "since %llu max %zu: %zu events", (unsigned long long)cases[i].since,
                     cases[i].max, n);
        for (size_t k = 0; k < n && k < cases[i].n; k++) {
            uint64_t seq = cases[i].first + k;
            char r[16];
            snprintf(r, sizeof(r), "r%llu", (unsigned long long)seq);
            cr_expect_eq(out[k].seq, seq);
            cr_expect_eq(out[k].ts_ms, seq * 100);
            cr_expect_str_eq(out[k].reason, r);
        }
        /* nothing written past the count */
        if (n < NELEMS(out))
            cr_expect_eq(((unsigned char *)&out[n])[0], 0x5a, "since %llu: wrote past *n",
                         (unsigned long long)cases[i].since);
    }
}

Test(state, events_read_skips_a_corrupt_event)
{
    open_default();
    for (int i = 0; i < 4; i++)
        append(100, "ok");
    unsigned char key[8];
    be64(3, key);
    cr_assert_eq(state_raw_put(st, "events", key, 8, "\x93garbage", 8), SL_OK);
    state_event_t out[8];
    size_t n = read_all(0, out, NELEMS(out));
    cr_assert_eq(n, 3);
    cr_expect_eq(out[0].seq, 1);
    cr_expect_eq(out[1].seq, 2);
    cr_expect_eq(out[2].seq, 4);
    /* retention treats an undecodable event at the front as old */
    be64(1, key);
    cr_assert_eq(state_raw_put(st, "events", key, 8, "", 0), SL_OK);
    size_t removed = 0;
    cr_assert_eq(state_trim_events(st, 0, &removed), SL_OK);
    cr_expect_eq(removed, 1);
    n = read_all(0, out, NELEMS(out));
    cr_assert_eq(n, 2);
    cr_expect_eq(out[0].seq, 2);
}

/* ---- retention --------------------------------------------------------------------- */

typedef struct trim_case {
    const char *why;
    uint32_t max_count, max_age_s;
    uint64_t ts[8];               /* 0 ends the list */
    uint64_t now_ms;
    size_t removed;
    uint64_t first_left;          /* seq of the oldest survivor (0: none) */
} trim_case_t;

static const trim_case_t trim_cases[] = {
    {"nothing to do", 10, 3600, {1000, 2000, 3000}, 5000, 0, 1},
    {"count: 5 of 7 kept", 5, 3600, {1, 2, 3, 4, 5, 6, 7}, 10, 2, 3},
    {"count: exactly at the limit", 7, 3600, {1, 2, 3, 4, 5, 6, 7}, 10, 0, 1},
    {"count: keep 1", 1, 3600, {1, 2, 3, 4, 5}, 10, 4, 5},
    {"age: older than 2 s go", 100, 2, {1000, 2000, 3000, 4000, 5000}, 5000, 2, 3},
    {"age: exactly at the horizon stays", 100, 2, {2999, 3000, 3001}, 5000, 1, 2},
    {"age: all old", 100, 1, {1, 2, 3}, 100000, 3, 0},
    {"age: clock before the horizon", 100, 3600, {1, 2, 3}, 1000, 0, 1},
    {"count and age together", 4, 2, {1000, 2000, 3000, 4000, 5000, 6000, 7000}, 7000, 4, 5},
    {"count wins over age", 2, 100, {1000, 2000, 3000, 4000}, 5000, 2, 3},
};

Test(state, retention_by_count_and_age)
{
    for (size_t i = 0; i < NELEMS(trim_cases); i++) {
        const trim_case_t *c = &trim_cases[i];
        state_conf_t conf = conf_default();
        conf.event_max_count = c->max_count;
        conf.event_max_age_s = c->max_age_s;
        char path[600];
        snprintf(path, sizeof(path), "%s/trim%zu", tmpdir, i);
        conf.path = path;
        cr_assert_eq(state_open(&conf, &st), SL_OK);
        size_t total = 0;
        for (; total < NELEMS(c->ts) && c->ts[total] != 0; total++)
            append(c->ts[total], c->why);
        size_t removed = 999;
        cr_assert_eq(state_trim_events(st, c->now_ms, &removed), SL_OK);
        cr_expect_eq(removed, c->removed, "%s: removed %zu", c->why, removed);
        cr_expect_eq(event_count(st), total - c->removed, "%s", c->why);
        state_event_t out[8];
        size_t n = read_all(0, out, NELEMS(out));
        if (c->first_left == 0)
            cr_expect_eq(n, 0, "%s", c->why);
        else if (n > 0)
            cr_expect_eq(out[0].seq, c->first_left, "%s: first left %llu", c->why, (unsigned long long)out[0].seq);
        /* trimming again removes nothing more */
        cr_assert_eq(state_trim_events(st, c->now_ms, &removed), SL_OK);
        cr_expect_eq(removed, 0, "%s: second trim removed %zu", c->why, removed);
        state_close(st);
        st = NULL;
    }
}

/* ---- a full map ---------------------------------------------------------------------- */

Test(state, full_map_trims_instead_of_failing, .timeout = 120)
{
    state_conf_t conf = conf_default();
    conf.map_size_mb = 1;
    conf.event_max_count = 100000000;
    cr_assert_eq(state_open(&conf, &st), SL_OK);
    enum { APPENDS = 20000 };
    char reason[160];
    memset(reason, 'r', sizeof(reason) - 1);
    reason[sizeof(reason) - 1] = '\0';
    size_t max_stored = 0, first_trim = 0;
    for (size_t i = 1; i <= APPENDS; i++) {
        state_event_t ev = make_event(i, STATE_EVENT_FAILOVER, reason);
        sl_err_t err = state_event_append(st, &ev);
        cr_assert_eq(err, SL_OK, "append %zu: %s", i, sl_err_name(err));
        cr_assert_eq(ev.seq, i);
        size_t stored = event_count(st);
        if (stored < i && first_trim == 0)
            first_trim = i;
        if (stored > max_stored)
            max_stored = stored;
    }
    cr_log_info("1 MB map: first trim at append %zu; at most %zu events stored", first_trim, max_stored);
    cr_expect_gt(first_trim, 0, "the map never filled: the test proves nothing");
    cr_expect_lt(max_stored, APPENDS / 2);
    cr_expect_eq(state_events_last_seq(st), APPENDS);
    /* the newest survive, in order */
    state_event_t out[4];
    size_t n = read_all(APPENDS - 2, out, NELEMS(out));
    cr_assert_eq(n, 2);
    cr_expect_eq(out[0].seq, APPENDS - 1);
    cr_expect_eq(out[1].seq, APPENDS);
    cr_expect_str_eq(out[1].reason, reason);
    /* and the rest of the state still works */
    cas_ctx_t c = {.ret = 1, .nevents = 1, .reason = "after"};
    int changed = 0;
    cr_expect_eq(state_endpoint_update(st, "eth/a", cas_fn, &c, &changed), SL_OK);
}

/* ---- corrupt records ------------------------------------------------------------------- */

typedef struct garbage_case {
    const char *why;
    const char *bytes;
    size_t len;
    sl_err_t want;
} garbage_case_t;

static const garbage_case_t garbage_cases[] = {
    {"text", "hello, world", 12, SL_ERR_CORRUPT},
    {"empty value", "", 0, SL_ERR_CORRUPT},
    {"huge array header", "\xdd\xff\xff\xff\xff\x01", 6, SL_ERR_CORRUPT},
    /* version (2, the endpoint record's) and breaker decode, then a string where since_ms belongs */
    {"partly valid", "\x9b\x02\x02\xa1x\x00\x00\x00\x00\x00\x00\x00\x93\x00\x00\x00", 16, SL_ERR_CORRUPT},
    {"truncated", "\x9b\x02\x02\x00", 4, SL_ERR_CORRUPT},
    {"another version", "\x9b\x09\x02\x00\x00\x00\x00\x00\x00\x00\x00\x93\x00\x00\x00", 15, SL_ERR_VERSION},
    /* version 1 had 15 fields (no rl_backoff_ms): 10 of them is no version-1 record */
    {"version 1, truncated", "\x9b\x01\x02\x00\x00\x00\x00\x00\x00\x00\x00\x93\x00\x00\x00", 15, SL_ERR_CORRUPT},
};

Test(state, corrupt_endpoint_record)
{
    open_default();
    for (size_t i = 0; i < NELEMS(garbage_cases); i++) {
        const garbage_case_t *g = &garbage_cases[i];
        char key[32];
        snprintf(key, sizeof(key), "eth/bad%zu", i);
        cr_assert_eq(state_raw_put(st, "endpoints", key, strlen(key), g->bytes, g->len), SL_OK);
        cr_assert_eq(state_read_begin(st), SL_OK);
        state_endpoint_rec_t rec, zero;
        memset(&rec, 0xaa, sizeof(rec));
        memset(&zero, 0, sizeof(zero));
        sl_err_t err = state_endpoint_get(st, key, &rec);
        /* twice: the second time is the "already logged" path */
        state_endpoint_rec_t rec2;
        sl_err_t err2 = state_endpoint_get(st, key, &rec2);
        state_read_end(st);
        cr_expect_eq(err, g->want, "%s: %s", g->why, sl_err_name(err));
        cr_expect_eq(err2, g->want, "%s (again): %s", g->why, sl_err_name(err2));
        cr_expect(memcmp(&rec, &zero, sizeof(rec)) == 0, "%s: the record is not zeroed", g->why);

        /* an update treats it as absent and overwrites it */
        cas_ctx_t c = {.ret = 1, .nevents = 1, .reason = "fixed"};
        c.write.breaker = 2;
        c.write.cooldown_ms = 9;
        int changed = 0;
        cr_assert_eq(state_endpoint_update(st, key, cas_fn, &c, &changed), SL_OK);
        cr_expect_eq(changed, 1);
        cr_expect_eq(c.seen_exists, 0, "%s: exists", g->why);
        cr_expect(memcmp(&c.seen, &zero, sizeof(zero)) == 0, "%s: fn saw a non-zero record", g->why);
        cr_assert_eq(state_read_begin(st), SL_OK);
        cr_expect_eq(state_endpoint_get(st, key, &rec), SL_OK, "%s: not overwritten", g->why);
        state_read_end(st);
        cr_expect_eq(rec.breaker, 2);
        cr_expect_eq(rec.cooldown_ms, 9);
    }
    cr_expect_eq(st->ncorrupt_logged, NELEMS(garbage_cases), "each corrupt record logged once");
}

/* A record that decodes but whose breaker value is no state (7): readers
 * see a closed breaker at once; the master's sweep, or any worker's write,
 * stores the repair with one state_error event; other fields survive. */
static void put_breaker_value(const char *key, uint8_t value)
{
    state_endpoint_rec_t rec;
    memset(&rec, 0, sizeof(rec));
    rec.breaker = value;
    rec.since_ms = 111;
    rec.cooldown_ms = 5000;
    rec.drained = 1;
    rec.rate_limited_until_ms = 999;
    rec.transitions[1] = 4;
    sl_buf_t b = SL_BUF_INIT;
    cr_assert_eq(state_record_encode(&state_endpoint_schema, &rec, &b), SL_OK);
    cr_assert_eq(state_raw_put(st, "endpoints", key, strlen(key), b.base, b.len), SL_OK);
    sl_buf_dispose(&b);
}

static void expect_repaired(const char *key, const char *why)
{
    cr_assert_eq(state_read_begin(st), SL_OK);
    state_endpoint_rec_t rec;
    cr_assert_eq(state_endpoint_get(st, key, &rec), SL_OK, "%s", why);
    state_read_end(st);
    cr_expect_eq(rec.breaker, 0, "%s: breaker %u", why, rec.breaker);
    cr_expect_eq(rec.cooldown_ms, 0, "%s", why);
    cr_expect_eq(rec.drained, 1, "%s: the drain is kept", why);
    cr_expect_eq(rec.rate_limited_until_ms, 999, "%s", why);
    cr_expect_eq(rec.transitions[1], 4, "%s", why);
}

Test(state, breaker_value_that_is_no_state_is_repaired)
{
    open_default();
    put_breaker_value("eth/a", 7);
    put_breaker_value("eth/b", 255);
    put_breaker_value("eth/c", 2); /* half-open: a state, left alone */
    expect_repaired("eth/a", "read before any repair");

    /* the sweep writes the repair of every bad record, one event each */
    const char *keys[] = {"eth/a", "eth/b", "eth/c", "eth/absent"};
    size_t repaired = 99;
    cr_assert_eq(state_endpoints_repair(st, keys, NELEMS(keys), &repaired), SL_OK);
    cr_expect_eq(repaired, 2);
    state_event_t evs[8];
    size_t n = read_all(0, evs, NELEMS(evs));
    cr_assert_eq(n, 2);
    cr_expect_eq(evs[0].kind, STATE_EVENT_STATE_ERROR);
    cr_expect_str_eq(evs[0].network, "eth");
    cr_expect_str_eq(evs[0].endpoint, "a");
    cr_expect_eq(evs[0].from, 7);
    cr_expect(strstr(evs[0].reason, "breaker value 7") != NULL, "%s", evs[0].reason);
    cr_expect(evs[0].ts_ms > 0);
    cr_expect_str_eq(evs[1].endpoint, "b");
    cr_expect_eq(evs[1].from, 255);
    expect_repaired("eth/a", "after the sweep");
    expect_repaired("eth/b", "after the sweep");
    cr_assert_eq(state_read_begin(st), SL_OK);
    state_endpoint_rec_t c;
    cr_assert_eq(state_endpoint_get(st, "eth/c", &c), SL_OK);
    state_read_end(st);
    cr_expect_eq(c.breaker, 2);
    cr_expect_eq(c.since_ms, 111);

    /* stored: a second sweep finds nothing */
    cr_assert_eq(state_endpoints_repair(st, keys, NELEMS(keys), &repaired), SL_OK);
    cr_expect_eq(repaired, 0);
    cr_expect_eq(event_count(st), 2);
}

Test(state, breaker_value_that_is_no_state_is_repaired_by_any_write)
{
    open_default();
    /* fn says "no change": the repair is written anyway, fn's scribbles are not */
    put_breaker_value("eth/a", 9);
    cas_ctx_t c = {.ret = 0, .nevents = 2, .reason = "not mine"};
    c.write.breaker = 1;
    int changed = 42;
    cr_assert_eq(state_endpoint_update(st, "eth/a", cas_fn, &c, &changed), SL_OK);
    cr_expect_eq(changed, 0, "fn's own change was not made");
    cr_expect_eq(c.seen_exists, 1);
    cr_expect_eq(c.seen.breaker, 0, "fn sees the repaired record");
    cr_expect_eq(c.seen.drained, 1);
    expect_repaired("eth/a", "written although fn returned 0");
    cr_expect_eq(event_count(st), 1);

    /* fn changes it: its events and the repair's, in one transaction */
    put_breaker_value("eth/b", 3);
    c = (cas_ctx_t){.ret = 1, .nevents = STATE_MAX_TXN_EVENTS, .reason = "mine"};
    c.write.breaker = 1;
    c.write.drained = 1;
    cr_assert_eq(state_endpoint_update(st, "eth/b", cas_fn, &c, &changed), SL_OK);
    cr_expect_eq(changed, 1);
    cr_expect_eq(c.seen.breaker, 0);
    state_event_t evs[16];
    size_t n = read_all(0, evs, NELEMS(evs));
    cr_assert_eq(n, 1 + STATE_MAX_TXN_EVENTS + 1);
    cr_expect_eq(evs[n - 1].kind, STATE_EVENT_STATE_ERROR);
    cr_expect_str_eq(evs[n - 1].endpoint, "b");
    cr_expect_eq(evs[n - 1].from, 3);
    cr_assert_eq(state_read_begin(st), SL_OK);
    state_endpoint_rec_t rec;
    cr_assert_eq(state_endpoint_get(st, "eth/b", &rec), SL_OK);
    state_read_end(st);
    cr_expect_eq(rec.breaker, 1, "fn's write wins");
    const char *keys[] = {"eth/a", "eth/b"};
    size_t repaired = 9;
    cr_assert_eq(state_endpoints_repair(st, keys, NELEMS(keys), &repaired), SL_OK);
    cr_expect_eq(repaired, 0);
}

Test(state, corrupt_stats_and_counters)
{
    open_default();
    cr_assert_eq(state_raw_put(st, "stats", "0/eth/a", 7, "\xc1\xc1", 2), SL_OK);
    cr_assert_eq(state_read_begin(st), SL_OK);
    state_stats_rec_t s, zero;
    memset(&s, 0xaa, sizeof(s));
    memset(&zero, 0, sizeof(zero));
    cr_expect_eq(state_stats_get(st, "0/eth/a", &s), SL_ERR_CORRUPT);
    cr_expect(memcmp(&s, &zero, sizeof(s)) == 0);
    state_counters_rec_t *cn = malloc(sizeof(*cn));
    cn->n = 77;
    cr_expect_eq(state_counters_get(st, "0/eth/a", cn), SL_ERR_CORRUPT);
    cr_expect_eq(cn->n, 0);
    cr_expect_eq(state_counters_get(st, "0/eth/none", cn), SL_ERR_NOT_FOUND);
    state_read_end(st);
    free(cn);
}

/* ---- stale readers --------------------------------------------------------------------- */

Test(state, check_readers_clears_a_killed_reader)
{
    open_default();
    state_close(st);
    st = NULL;
    int ready[2];
    cr_assert_eq(pipe(ready), 0);
    pid_t kid = fork();
    cr_assert_geq(kid, 0);
    if (kid == 0) {
        close(ready[0]);
        alarm(60); /* never outlive a failed parent by long */
        state_conf_t conf = conf_default();
        state_t *s;
        if (state_open(&conf, &s) != SL_OK || state_read_begin(s) != SL_OK)
            _exit(3);
        state_endpoint_rec_t rec;
        if (state_endpoint_get(s, "eth/a", &rec) != SL_ERR_NOT_FOUND)
            _exit(5);
        if (write(ready[1], "r", 1) != 1)
            _exit(4);
        for (;;)
            pause();
    }
    close(ready[1]);
    char r = 0;
    cr_assert_eq(read(ready[0], &r, 1), 1, "the child did not start its reader");
    close(ready[0]);
    open_default();
    int cleared = -1;
    cr_assert_eq(state_check_readers(st, &cleared), SL_OK);
    cr_expect_eq(cleared, 0, "a live reader was cleared");
    cr_assert_eq(kill(kid, SIGKILL), 0);
    int status;
    cr_assert_eq(waitpid(kid, &status, 0), kid);
    cr_assert(WIFSIGNALED(status));
    cr_assert_eq(state_check_readers(st, &cleared), SL_OK);
    cr_expect_geq(cleared, 1, "cleared %d", cleared);
    cr_assert_eq(state_check_readers(st, &cleared), SL_OK);
    cr_expect_eq(cleared, 0);
}

/* ---- stats and counters ------------------------------------------------------------------ */

static void fill_stats(state_stats_rec_t *r, uint64_t base)
{
    memset(r, 0, sizeof(*r));
    r->pid = (uint32_t)(base + 1);
    r->updated_ms = base + 2;
    r->attempts = base + 3;
    for (int i = 0; i < STATE_OUTCOME_COUNT; i++)
        r->outcomes[i] = base * 100 + (uint64_t)i;
    r->failovers = base + 4;
    for (int i = 0; i < STATE_LAT_BUCKETS; i++)
        r->lat_hist[i] = base * 1000 + (uint64_t)i;
    r->lat_sum_us = UINT64_MAX - base;
    r->ewma_us = base + 5;
    r->inflight = (uint32_t)(base + 6);
    r->max_inflight_seen = UINT32_MAX;
}

Test(state, stats_round_trip)
{
    open_default();
    state_stats_rec_t in[3], out;
    const char *keys[3] = {"0/eth/a", "1/eth/a", "0/sol/b"};
    for (int i = 0; i < 3; i++)
        fill_stats(&in[i], (uint64_t)i * 7 + 1);
    cr_assert_eq(state_stats_put(st, keys, in, 3), SL_OK);
    cr_assert_eq(state_read_begin(st), SL_OK);
    for (int i = 0; i < 3; i++) {
        memset(&out, 0xaa, sizeof(out));
        cr_assert_eq(state_stats_get(st, keys[i], &out), SL_OK, "%s", keys[i]);
        cr_expect(memcmp(&in[i], &out, sizeof(out)) == 0, "%s differs", keys[i]);
    }
    cr_expect_eq(state_stats_get(st, "2/eth/a", &out), SL_ERR_NOT_FOUND);
    state_read_end(st);
    /* a later flush replaces the slot */
    fill_stats(&in[0], 99);
    cr_assert_eq(state_stats_put(st, keys, in, 1), SL_OK);
    cr_assert_eq(state_read_begin(st), SL_OK);
    cr_assert_eq(state_stats_get(st, keys[0], &out), SL_OK);
    cr_expect_eq(out.attempts, 102);
    state_read_end(st);
    cr_expect_eq(state_stats_put(st, keys, in, 0), SL_OK);
}

Test(state, counters_round_trip)
{
    open_default();
    state_counters_rec_t *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b)), *out = calloc(1, sizeof(*out));
    a->n = STATE_COUNTERS_MAX;
    for (uint32_t i = 0; i < a->n; i++)
        a->v[i] = (uint64_t)i * i;
    b->n = 0;
    const char *keys[2] = {"c/0/eth", "c/1/eth"};
    const state_counters_rec_t *recs[2] = {a, b};
    cr_assert_eq(state_counters_put(st, keys, recs, 2), SL_OK);
    cr_assert_eq(state_read_begin(st), SL_OK);
    cr_assert_eq(state_counters_get(st, keys[0], out), SL_OK);
    cr_expect_eq(out->n, a->n);
    cr_expect(memcmp(out->v, a->v, sizeof(a->v)) == 0);
    out->n = 5;
    cr_assert_eq(state_counters_get(st, keys[1], out), SL_OK);
    cr_expect_eq(out->n, 0);
    state_read_end(st);

    /* a batch with one bad record writes none of it */
    a->v[0] = 4242;
    b->n = STATE_COUNTERS_MAX + 1;
    cr_expect_eq(state_counters_put(st, keys, recs, 2), SL_ERR_RANGE);
    cr_assert_eq(state_read_begin(st), SL_OK);
    cr_assert_eq(state_counters_get(st, keys[0], out), SL_OK);
    cr_expect_eq(out->v[0], 0, "the good half of a failed batch was written");
    state_read_end(st);
    free(a);
    free(b);
    free(out);
}

/* ---- the network level --------------------------------------------------------------------- */

typedef struct net_ctx {
    int calls;
    int ret;
    size_t n;
    state_endpoint_rec_t recs[4];
    int exists;
    state_network_rec_t level_seen;
    state_network_rec_t level_write;
    size_t nevents;
} net_ctx_t;

static int net_fn(void *arg, const state_endpoint_rec_t *recs, size_t n, state_network_rec_t *level, int exists,
                  state_event_t *events, size_t *nevents)
{
    net_ctx_t *c = arg;
    c->calls++;
    c->n = n;
    for (size_t i = 0; i < n && i < NELEMS(c->recs); i++)
        c->recs[i] = recs[i];
    c->exists = exists;
    c->level_seen = *level;
    *level = c->level_write;
    for (size_t i = 0; i < c->nevents; i++)
        events[i] = make_event(c->level_write.since_ms, STATE_EVENT_NETWORK_DOWN, "level");
    *nevents = c->nevents;
    return c->ret;
}

static void put_endpoint(const char *key, uint8_t breaker, uint8_t drained)
{
    cas_ctx_t c = {.ret = 1};
    c.write.breaker = breaker;
    c.write.drained = drained;
    c.write.since_ms = 31;
    int changed;
    cr_assert_eq(state_endpoint_update(st, key, cas_fn, &c, &changed), SL_OK);
}

Test(state, network_update)
{
    open_default();
    put_endpoint("eth/a", 1, 0);
    put_endpoint("eth/b", 0, 1);
    cr_assert_eq(state_raw_put(st, "endpoints", "eth/c", 5, "junk", 4), SL_OK);
    const char *keys[] = {"eth/a", "eth/b", "eth/missing", "eth/c"};

    /* fn declines: nothing written */
    net_ctx_t c = {.ret = 0, .nevents = 1, .level_write = {0, 500}};
    cr_assert_eq(state_network_update(st, "eth", keys, 4, net_fn, &c), SL_OK);
    cr_expect_eq(c.calls, 1);
    cr_expect_eq(c.n, 4);
    cr_expect_eq(c.recs[0].breaker, 1);
    cr_expect_eq(c.recs[0].since_ms, 31);
    cr_expect_eq(c.recs[1].drained, 1);
    state_endpoint_rec_t zero;
    memset(&zero, 0, sizeof(zero));
    cr_expect(memcmp(&c.recs[2], &zero, sizeof(zero)) == 0, "an absent record is not zeroed");
    cr_expect(memcmp(&c.recs[3], &zero, sizeof(zero)) == 0, "a corrupt record is not zeroed");
    cr_expect_eq(c.exists, 0);
    cr_expect_eq(c.level_seen.level, 0);
    cr_expect_eq(c.level_seen.since_ms, 0);
    cr_expect_eq(state_events_last_seq(st), 0);

    /* fn writes: level and events together */
    c.ret = 1;
    c.nevents = 2;
    c.level_write = (state_network_rec_t){1, 600};
    cr_assert_eq(state_network_update(st, "eth", keys, 4, net_fn, &c), SL_OK);
    cr_expect_eq(c.exists, 0);
    cr_expect_eq(state_events_last_seq(st), 2);
    c.ret = 0;
    cr_assert_eq(state_network_update(st, "eth", keys, 2, net_fn, &c), SL_OK);
    cr_expect_eq(c.exists, 1);
    cr_expect_eq(c.level_seen.level, 1);
    cr_expect_eq(c.level_seen.since_ms, 600);
    cr_expect_eq(c.n, 2);

    /* another network has its own level */
    cr_assert_eq(state_network_update(st, "sol", keys, 0, net_fn, &c), SL_OK);
    cr_expect_eq(c.exists, 0);
    cr_expect_eq(c.n, 0);
}

/* ---- the pressure level and the workers' slots ---------------------------------------------- */

typedef struct pr_ctx {
    int calls;
    int exists;
    int from;                     /* write only if the stored level is this (a CAS) */
    state_pressure_rec_t seen;
    uint8_t to;
} pr_ctx_t;

static int pr_fn(void *arg, state_pressure_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    pr_ctx_t *c = arg;
    c->calls++;
    c->exists = exists;
    c->seen = *rec;
    if (rec->level != c->from)
        return 0;
    rec->level = c->to;
    rec->since_ms = 1000 + c->to;
    rec->changes++;
    events[0] = make_event(rec->since_ms, STATE_EVENT_PRESSURE_CHANGED, "pressure");
    *nevents = 1;
    return 1;
}

Test(state, pressure_update_is_a_cas_with_its_event)
{
    open_default();
    state_pressure_rec_t rec;
    cr_assert_eq(state_read_begin(st), SL_OK);
    cr_expect_eq(state_pressure_get(st, "eth", &rec), SL_ERR_NOT_FOUND);
    cr_expect_eq(rec.level, 0);
    state_read_end(st);
    cr_expect_eq(state_pressure_get(st, "eth", &rec), SL_ERR_STATE, "outside a snapshot");

    pr_ctx_t c = {.from = 0, .to = 2};
    int changed = 0;
    cr_assert_eq(state_pressure_update(st, "eth", pr_fn, &c, &changed), SL_OK);
    cr_expect_eq(changed, 1);
    cr_expect_eq(c.exists, 0);
    /* a second worker that also saw ok: the CAS refuses, no second event */
    cr_assert_eq(state_pressure_update(st, "eth", pr_fn, &c, &changed), SL_OK);
    cr_expect_eq(changed, 0);
    cr_expect_eq(c.exists, 1);
    cr_expect_eq(c.seen.level, 2);
    cr_expect_eq(state_events_last_seq(st), 1);
    cr_assert_eq(state_read_begin(st), SL_OK);
    cr_assert_eq(state_pressure_get(st, "eth", &rec), SL_OK);
    cr_expect_eq(rec.level, 2);
    cr_expect_eq(rec.since_ms, 1002);
    cr_expect_eq(rec.changes, 1);
    cr_expect_eq(state_pressure_get(st, "sol", &rec), SL_ERR_NOT_FOUND);
    state_read_end(st);
    state_event_t evs[4];
    cr_assert_eq(read_all(0, evs, NELEMS(evs)), 1);
    cr_expect_eq(evs[0].kind, STATE_EVENT_PRESSURE_CHANGED);

    /* a corrupt record reads as absent (ok), and is replaced */
    cr_assert_eq(state_raw_put(st, "meta", "pressure/eth", 12, "junk", 4), SL_OK);
    c = (pr_ctx_t){.from = 0, .to = 1};
    cr_assert_eq(state_pressure_update(st, "eth", pr_fn, &c, &changed), SL_OK);
    cr_expect_eq(c.exists, 0);
    cr_expect_eq(changed, 1);
}

Test(state, chain_floor_is_only_ever_raised)
{
    open_default();
    state_chain_rec_t rec, merged;
    cr_assert_eq(state_read_begin(st), SL_OK);
    cr_expect_eq(state_chain_get(st, "eth", &rec), SL_ERR_NOT_FOUND);
    state_read_end(st);
    cr_assert_eq(state_chain_raise(st, "eth", (const uint64_t[]){100, 70, 40}, 5, &merged), SL_OK);
    cr_expect_eq(merged.floor[0], 100);
    /* another worker with an older view: merged by max, nothing lowered */
    cr_assert_eq(state_chain_raise(st, "eth", (const uint64_t[]){99, 71, 0}, 6, &merged), SL_OK);
    cr_expect_eq(merged.floor[0], 100);
    cr_expect_eq(merged.floor[1], 71);
    cr_expect_eq(merged.floor[2], 40);
    cr_assert_eq(state_read_begin(st), SL_OK);
    cr_assert_eq(state_chain_get(st, "eth", &rec), SL_OK);
    cr_expect_eq(rec.floor[0], 100);
    cr_expect_eq(rec.floor[1], 71);
    cr_expect_eq(rec.updated_ms, 6);
    cr_expect_eq(state_chain_get(st, "sol", &rec), SL_ERR_NOT_FOUND);
    state_read_end(st);
    cr_expect_eq(state_events_last_seq(st), 0, "no event");
}

Test(state, chain_identity_learned_once_and_reorg_reported_once)
{
    open_default();
    char kept[STATE_CHAIN_ID_MAX];
    cr_assert_eq(state_chain_learn(st, "eth", "0x1", 5, kept), SL_OK);
    cr_expect_str_eq(kept, "0x1");
    /* a later worker that counted otherwise gets the one kept */
    cr_assert_eq(state_chain_learn(st, "eth", "0x5", 6, kept), SL_OK);
    cr_expect_str_eq(kept, "0x1");
    state_chain_rec_t merged, rec;
    cr_assert_eq(state_chain_raise(st, "eth", (const uint64_t[]){100, 0, 0}, 7, &merged), SL_OK);
    cr_expect_str_eq(merged.identity, "0x1", "a raise keeps the identity");
    state_chain_reorg_claim_t c;
    cr_assert_eq(state_chain_reorg(st, "eth", 100, "0xab", 3, 1000, 60000, &c), SL_OK);
    cr_expect_eq(c.first, 1);
    cr_expect_eq(c.report, 1, "the first reorg is reported");
    cr_expect_eq(c.folded, 1);
    cr_assert_eq(state_chain_reorg(st, "eth", 100, "0xab", 2, 1001, 60000, &c), SL_OK);
    cr_expect_eq(c.first, 0, "another worker seeing the same new tip");
    cr_expect_eq(c.report, 0);
    cr_assert_eq(state_chain_reorg(st, "eth", 100, "0xcd", 1, 1002, 60000, &c), SL_OK);
    cr_expect_eq(c.first, 1, "another reorg of the same height");
    cr_expect_eq(c.report, 0, "counted, but within the minute: folded");
    cr_assert_eq(state_read_begin(st), SL_OK);
    cr_assert_eq(state_chain_get(st, "eth", &rec), SL_OK);
    state_read_end(st);
    cr_expect_eq(rec.reorgs, 2);
    cr_expect_eq(rec.reorg_depth, 1);
    cr_expect_eq(rec.floor[0], 100);
    cr_expect_str_eq(rec.identity, "0x1");
}

/* A thousand reorgs in a minute are counted, and told by one event a minute
 * carrying the count folded into it. */
Test(state, chain_reorg_events_folded_per_minute)
{
    open_default();
    state_chain_reorg_claim_t c;
    char hash[16];
    int reports = 0;
    for (int i = 0; i < 1000; i++) {
        snprintf(hash, sizeof(hash), "0x%d", i);
        cr_assert_eq(state_chain_reorg(st, "eth", 100 + (uint64_t)i, hash, 1, 5000 + (uint64_t)i * 50, 60000, &c),
                     SL_OK);
        cr_expect_eq(c.first, 1);
        reports += c.report;
    }
    cr_expect_eq(reports, 1, "49.95 s of reorgs: the first one's event only");
    cr_assert_eq(state_chain_reorg(st, "eth", 5000, "0xff", 2, 65000, 60000, &c), SL_OK);
    cr_expect_eq(c.report, 1, "a minute after the last event");
    cr_expect_eq(c.folded, 1000, "999 folded since, and this one");
    cr_assert_eq(state_read_begin(st), SL_OK);
    state_chain_rec_t rec;
    cr_assert_eq(state_chain_get(st, "eth", &rec), SL_OK);
    state_read_end(st);
    cr_expect_eq(rec.reorgs, 1001, "every reorg counted");
    cr_expect_eq(rec.reorgs_folded, 0);
}

/* The learned identity is replaced only from the one the caller saw: the
 * first worker swaps it, the others find it swapped. */
Test(state, chain_identity_relearned_once)
{
    open_default();
    char kept[STATE_CHAIN_ID_MAX];
    int swapped = 0;
    cr_assert_eq(state_chain_learn(st, "eth", "0x5", 5, kept), SL_OK);
    cr_assert_eq(state_chain_relearn(st, "eth", "0x5", "0x1", 6, &swapped, kept), SL_OK);
    cr_expect_eq(swapped, 1);
    cr_expect_str_eq(kept, "0x1");
    cr_assert_eq(state_chain_relearn(st, "eth", "0x5", "0x1", 7, &swapped, kept), SL_OK);
    cr_expect_eq(swapped, 0, "a second worker: swapped already");
    cr_expect_str_eq(kept, "0x1");
    cr_assert_eq(state_chain_relearn(st, "eth", "0x1", "", 8, &swapped, kept), SL_OK);
    cr_expect_eq(swapped, 0, "never to nothing");
    cr_expect_str_eq(kept, "0x1");
}

/* The reader that asks at each head served decodes only a changed record,
 * and sees every change. */
Test(state, chain_floor_read_again_only_when_changed)
{
    open_default();
    state_chain_seen_t seen;
    memset(&seen, 0, sizeof(seen));
    state_chain_rec_t rec, merged;
    cr_assert_eq(state_read_begin(st), SL_OK);
    cr_expect_eq(state_chain_get_seen(st, "eth", &seen, &rec), SL_ERR_NOT_FOUND);
    state_read_end(st);
    cr_assert_eq(state_chain_raise(st, "eth", (const uint64_t[]){100, 70, 40}, 5, &merged), SL_OK);
    cr_assert_eq(state_read_begin(st), SL_OK);
    cr_assert_eq(state_chain_get_seen(st, "eth", &seen, &rec), SL_OK);
    cr_expect_eq(rec.floor[0], 100);
    cr_expect_gt(seen.len, 0, "the bytes kept");
    cr_expect_str_eq(seen.key, "chain/eth");
    /* the same bytes: what they decoded to, without decoding */
    seen.rec.floor[2] = 41;
    cr_assert_eq(state_chain_get_seen(st, "eth", &seen, &rec), SL_OK);
    cr_expect_eq(rec.floor[2], 41, "from the kept record");
    state_read_end(st);
    cr_assert_eq(state_chain_raise(st, "eth", (const uint64_t[]){101, 0, 0}, 6, &merged), SL_OK);
    cr_assert_eq(state_read_begin(st), SL_OK);
    cr_assert_eq(state_chain_get_seen(st, "eth", &seen, &rec), SL_OK);
    cr_expect_eq(rec.floor[0], 101, "a change is decoded");
    cr_expect_eq(rec.floor[2], 40);
    cr_expect_eq(rec.updated_ms, 6);
    state_read_end(st);
}

static void put_slot(const char *key, uint64_t updated_ms, uint32_t depth, uint64_t merged)
{
    state_pressure_slot_rec_t *r = calloc(1, sizeof(*r));
    r->updated_ms = updated_ms;
    r->depth = depth;
    r->settle_hist[3] = depth;
    r->tries = 10 * depth;
    r->refusals = depth;
    r->polls_merged = merged;
    r->calls_saved = merged / 2;
    r->ep_calls_milli[1] = 1000 * depth;
    const char *keys[] = {key};
    const state_pressure_slot_rec_t *recs[] = {r};
    cr_assert_eq(state_pressure_slots_put(st, keys, recs, 1), SL_OK);
    free(r);
}

Test(state, pressure_slots_sum_fresh_ones)
{
    open_default();
    put_slot("pr/eth/1", 10000, 3, 4);
    put_slot("pr/eth/2", 9900, 5, 6);
    put_slot("pr/eth/3", 1000, 7, 8);   /* stale: only its growing counters count */
    put_slot("pr/sol/1", 10000, 100, 100);
    cr_assert_eq(state_raw_put(st, "stats", "pr/eth/4", 8, "junk", 4), SL_OK);
    state_pressure_slot_rec_t *sum = calloc(1, sizeof(*sum));
    cr_assert_eq(state_read_begin(st), SL_OK);
    state_pressure_slots_sum(st, "eth", 5, 0, 10050, 2000, sum);
    cr_expect_eq(sum->depth, 8);
    cr_expect_eq(sum->settle_hist[3], 8);
    cr_expect_eq(sum->tries, 80);
    cr_expect_eq(sum->refusals, 8);
    cr_expect_eq(sum->ep_calls_milli[1], 8000);
    cr_expect_eq(sum->polls_merged, 18);
    cr_expect_eq(sum->calls_saved, 9);
    cr_expect_eq(sum->updated_ms, 10000);
    /* the caller's own slot left out (it adds its live counts) */
    state_pressure_slots_sum(st, "eth", 5, 1, 10050, 2000, sum);
    cr_expect_eq(sum->depth, 5);
    cr_expect_eq(sum->polls_merged, 14);
    /* slots past nworkers are not read */
    state_pressure_slots_sum(st, "eth", 1, 0, 10050, 2000, sum);
    cr_expect_eq(sum->depth, 3);
    state_read_end(st);
    free(sum);
}

/* A next_seq that points back at an existing event heals (the newest key
 * wins), so appends go on. */
Test(state, damaged_next_seq_heals)
{
    open_default();
    for (int i = 0; i < 3; i++)
        append(100, "x");
    unsigned char seq1[8];
    be64(1, seq1);
    cr_assert_eq(state_raw_put(st, "meta", "next_seq", 8, seq1, 8), SL_OK);
    state_event_t ev = make_event(200, STATE_EVENT_BREAKER_OPENED, "y");
    cr_assert_eq(state_event_append(st, &ev), SL_OK);
    cr_expect_eq(ev.seq, 4);
    cr_expect_eq(state_events_last_seq(st), 4);
}

/* If an event cannot be appended, neither the record nor the level is written:
 * an exhausted sequence (next_seq at UINT64_MAX) makes the append fail. */
Test(state, update_is_atomic_when_an_event_fails)
{
    open_default();
    for (int i = 0; i < 3; i++)
        append(100, "x");
    unsigned char seqmax[8];
    be64(UINT64_MAX, seqmax);
    cr_assert_eq(state_raw_put(st, "meta", "next_seq", 8, seqmax, 8), SL_OK);

    cas_ctx_t c = {.ret = 1, .nevents = 1, .reason = "lost"};
    c.write.breaker = 1;
    int changed = 7;
    sl_err_t err = state_endpoint_update(st, "eth/a", cas_fn, &c, &changed);
    cr_expect_neq(err, SL_OK);
    cr_expect_eq(changed, 0);
    cr_assert_eq(state_read_begin(st), SL_OK);
    state_endpoint_rec_t rec;
    cr_expect_eq(state_endpoint_get(st, "eth/a", &rec), SL_ERR_NOT_FOUND, "the record was written without its event");
    state_read_end(st);

    const char *keys[] = {"eth/a"};
    net_ctx_t n = {.ret = 1, .nevents = 1, .level_write = {2, 700}};
    cr_expect_neq(state_network_update(st, "eth", keys, 1, net_fn, &n), SL_OK);
    n.ret = 0;
    cr_assert_eq(state_network_update(st, "eth", keys, 1, net_fn, &n), SL_OK);
    cr_expect_eq(n.exists, 0, "the level was written without its event");

    /* a fn returning 1 without events still writes */
    c.nevents = 0;
    cr_assert_eq(state_endpoint_update(st, "eth/a", cas_fn, &c, &changed), SL_OK);
    cr_expect_eq(changed, 1);
}
