/* tests/lib/fail_commits.h: LMDB commits that fail as on a full map, when a
 * unit test sets fail_commits. Include it in the .c file of a test binary:
 * it defines mdb_txn_commit, which finds LMDB's own through dlsym. */
#ifndef TESTS_LIB_FAIL_COMMITS_H
#define TESTS_LIB_FAIL_COMMITS_H

#include <dlfcn.h>
#include <lmdb.h>

static int fail_commits; /* 1: every commit aborts its transaction and says MDB_MAP_FULL */

int mdb_txn_commit(MDB_txn *txn)
{
    static int (*real)(MDB_txn *);
    if (real == NULL)
        real = (int (*)(MDB_txn *))dlsym(RTLD_NEXT, "mdb_txn_commit");
    if (fail_commits) {
        mdb_txn_abort(txn);
        return MDB_MAP_FULL;
    }
    return real(txn);
}

#endif
