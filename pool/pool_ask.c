/* pool/pool_ask.c: every endpoint's chain identity, asked once and waited
 * for, before any worker exists (pool.h, pool_ask_chain_ids).
 *
 * The master's start (gateway/gw_chainid.c) and `sluice --check --connect`
 * need the answers before going on. The ask runs in a child process of its
 * own, on a short-lived h2o loop with the workers' transport (pool_link.h):
 * a host name is looked up on h2o's resolver threads, which must never
 * exist in the master that forks the workers (a forked worker would inherit
 * a resolver that counts threads it does not have). The child writes one
 * line per answer, "<network> <endpoint> <id>", to a pipe and exits; the
 * parent reads them until the pipe closes or the deadline passes. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/sl_time.h"
#include "pool/pool_link.h"
#include "wire/envelope.h"

static const char eth_ask[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_chainId\",\"params\":[]}";
static const char sol_ask[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"getGenesisHash\"}";

typedef struct ask_one {
    pool_link_t link;
    pool_exchange_t ex;
    const pool_network_conf_t *net;
    size_t inet, iep;
    int fd;
    size_t *pending;
} ask_one_t;

static void on_answer(pool_exchange_t *ex)
{
    ask_one_t *a = ex->data;
    (*a->pending)--;
    const char *body = pool_exchange_bytes(ex);
    size_t len = pool_exchange_len(ex);
    wire_envelope_t env;
    char text[128], id[POLICY_CHAINID_MAX], line[POLICY_CHAINID_MAX + 48];
    if (ex->fail == POOL_FAIL_NONE && ex->head.status >= 200 && ex->head.status < 300 &&
        wire_envelope_scan(body, len, &env) == SL_OK && env.error.len == 0 &&
        wire_json_string(body, env.result, text, sizeof(text)) == SL_OK &&
        policy_chainid_normalize(a->net->chain, text, strlen(text), id) == SL_OK) {
        int n = snprintf(line, sizeof(line), "%zu %zu %s\n", a->inet, a->iep, id);
        if (n > 0 && write(a->fd, line, (size_t)n) != n)
            _exit(3);
    }
    pool_exchange_body_dispose(ex);
}

/* The child: every question at once, answers as they come, until all are
 * in or the deadline passes. Never returns. */
static void ask_child(const pool_network_conf_t *nets, size_t n, const uint8_t *ask, uint32_t timeout_ms, int fd)
{
    h2o_loop_t *loop = h2o_evloop_create();
    h2o_multithread_queue_t *queue = h2o_multithread_create_queue(loop);
    h2o_multithread_receiver_t getaddr;
    h2o_multithread_register_receiver(queue, &getaddr, h2o_hostinfo_getaddr_receiver);
    pool_transport_t t;
    pool_transport_init(&t, loop, &getaddr, 1 << 20, NULL, &pool_transport_sockets);
    size_t pending = 0;
    for (size_t i = 0; i < n; i++) {
        if (!ask[i])
            continue;
        pool_link_timers_t *tm = calloc(1, sizeof(*tm));
        ask_one_t *all = calloc(nets[i].nendpoints, sizeof(*all));
        if (tm == NULL || all == NULL)
            _exit(2);
        pool_link_timers_init(tm, &t, nets[i].name, &nets[i].timeouts);
        int solana = nets[i].chain == POLICY_CHAIN_SOLANA;
        for (size_t e = 0; e < nets[i].nendpoints; e++) {
            ask_one_t *a = &all[e];
            *a = (ask_one_t){.net = &nets[i], .inet = i, .iep = e, .fd = fd, .pending = &pending};
            if (pool_link_init(&a->link, tm, (int)e, &nets[i].endpoints[e]) != SL_OK)
                continue;
            if (pool_exchange_start(&a->ex, &a->link, solana ? sol_ask : eth_ask,
                                    solana ? sizeof(sol_ask) - 1 : sizeof(eth_ask) - 1, 0, on_answer,
                                    a) == POOL_FAIL_NONE)
                pending++;
        }
    }
    uint64_t deadline = sl_now_ms() + timeout_ms;
    for (uint64_t now = sl_now_ms(); pending > 0 && now < deadline; now = sl_now_ms())
        h2o_evloop_run(loop, (int32_t)(deadline - now));
    _exit(0);
}

/* Reads the child's lines until the pipe closes or the deadline passes. */
static void ask_read(int fd, uint64_t deadline, size_t n, pool_ask_id_t *ids)
{
    char buf[8192];
    size_t have = 0;
    for (;;) {
        uint64_t now = sl_now_ms();
        struct pollfd p = {fd, POLLIN, 0};
        if (now >= deadline || poll(&p, 1, (int)(deadline - now)) <= 0)
            break;
        ssize_t r = read(fd, buf + have, sizeof(buf) - 1 - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        have += (size_t)r;
        buf[have] = '\0';
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n')) != NULL) {
            *nl = '\0';
            size_t inet, iep;
            char id[POLICY_CHAINID_MAX];
            if (sscanf(line, "%zu %zu %47s", &inet, &iep, id) == 3 && inet < n && iep < POOL_MAX_ENDPOINTS)
                snprintf(ids[inet * POOL_MAX_ENDPOINTS + iep], sizeof(pool_ask_id_t), "%s", id);
            line = nl + 1;
        }
        have = strlen(line);
        memmove(buf, line, have);
    }
}

sl_err_t pool_ask_chain_ids(const pool_network_conf_t *nets, size_t n, const uint8_t *ask, uint32_t timeout_ms,
                            pool_ask_id_t *ids)
{
    memset(ids, 0, n * POOL_MAX_ENDPOINTS * sizeof(pool_ask_id_t));
    int fds[2];
    if (pipe(fds) != 0)
        return SL_ERR_IO;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return SL_ERR_IO;
    }
    if (pid == 0) {
        close(fds[0]);
        signal(SIGPIPE, SIG_IGN);
        ask_child(nets, n, ask, timeout_ms, fds[1]);
    }
    close(fds[1]);
    ask_read(fds[0], sl_now_ms() + timeout_ms + 1000, n, ids);
    close(fds[0]);
    kill(pid, SIGKILL); /* done or late: either way no longer needed */
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return SL_OK;
}
