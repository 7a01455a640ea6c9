/* fp_main.c: command line, listener, TLS context and the epoll loop.
 *
 * Prints "fakeprovider NAME listening on HOST:PORT" once bound (tests wait
 * for that line to learn an ephemeral port); logs go to stderr. SIGTERM and
 * SIGINT end the loop and the process exits 0 after freeing everything, so
 * leak checkers see a clean exit. */
#include "fp.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>

typedef struct fp_cli {
    const char *listen;
    const char *tls_cert;
    const char *tls_key;
} fp_cli_t;

static uint64_t clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void fp_log(const fp_server_t *srv, const char *fmt, ...)
{
    va_list ap;
    if (srv->quiet)
        return;
    fprintf(stderr, "fakeprovider %s: ", srv->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* The timer's head, moved by /_control/chain (never below 0). */
uint64_t fp_server_head(const fp_server_t *srv)
{
    uint64_t timed = srv->block0;
    if (srv->block_time_ms != 0)
        timed += (srv->now_ms - srv->start_ms) / srv->block_time_ms;
    if (srv->head_offset < 0 && (uint64_t)-srv->head_offset > timed)
        return 0;
    return timed + (uint64_t)srv->head_offset;
}

static void usage(void)
{
    fputs("usage: fakeprovider --listen HOST:PORT [--name NAME] [--chain ethereum|solana]\n"
          "         [--chain-id 0x1] [--block N] [--block-time-ms MS]\n"
          "         [--safe-depth N] [--finalized-depth N] [--genesis-hash BASE58]\n"
          "         [--logs-per-block N [--logs-varied 1]] [--logs-limit N --logs-vendor VENDOR]\n"
          "         [--tls-cert FILE --tls-key FILE] [--mode MODE] [--quiet]\n"
          "         [--count N] [--method M] [--retry-after S] [--backoff S] [--delay-ms MS] [--jitter-ms MS]\n"
          "         [--size BYTES] [--code C] [--message TEXT] [--data JSON] [--behind N]\n"
          "         [--logs N]\n", stderr);
    exit(2);
}

static bool parse_u64_text(const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 0);   /* 0x.. or decimal */
    *v = x;
    return *s && *s != '-' && !*end && errno == 0;
}

static bool valid_name(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n < 64 && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                        "0123456789._:-") == n;
}

/* Options of the provider itself; anything else is a mode option.
 * Returns NULL, or why the value was refused. */
static const char *cli_option(fp_server_t *srv, fp_cli_t *cli, const char *key, const char *v)
{
    const char *err = "bad value";
    if (strcmp(key, "listen") == 0)
        cli->listen = v;
    else if (strcmp(key, "tls-cert") == 0)
        cli->tls_cert = v;
    else if (strcmp(key, "tls-key") == 0)
        cli->tls_key = v;
    else if (strcmp(key, "name") == 0)
        return valid_name(v) && (srv->name = v) != NULL ? NULL : "want 1-63 of [A-Za-z0-9._:-]";
    else if (strcmp(key, "chain") == 0)
        return (srv->chain = fp_chain_find(v)) != NULL ? NULL : "want ethereum or solana";
    else if (strcmp(key, "chain-id") == 0)
        return parse_u64_text(v, &srv->chain_id) ? NULL : err;
    else if (strcmp(key, "block") == 0)
        return parse_u64_text(v, &srv->block0) ? NULL : err;
    else if (strcmp(key, "block-time-ms") == 0)
        return parse_u64_text(v, &srv->block_time_ms) ? NULL : err;
    else if (strcmp(key, "safe-depth") == 0)
        return parse_u64_text(v, &srv->safe_depth) && srv->safe_depth != FP_DEPTH_UNSET ? NULL : err;
    else if (strcmp(key, "finalized-depth") == 0)
        return parse_u64_text(v, &srv->finalized_depth) && srv->finalized_depth != FP_DEPTH_UNSET ? NULL : err;
    else if (strcmp(key, "genesis-hash") == 0)
        return valid_name(v) && (srv->genesis_hash = v) != NULL ? NULL : "want a base58 hash";
    else if (strcmp(key, "logs-per-block") == 0)
        return parse_u64_text(v, &srv->logs_per_block) && srv->logs_per_block <= 10000 ? NULL : "want 0..10000";
    else if (strcmp(key, "logs-varied") == 0)
        return (srv->logs_varied = strcmp(v, "1") == 0) || strcmp(v, "0") == 0 ? NULL : "want 0 or 1";
    else if (strcmp(key, "logs-limit") == 0)
        return parse_u64_text(v, &srv->logs_limit) ? NULL : err;
    else if (strcmp(key, "logs-vendor") == 0)
        return (srv->logs_vendor = fp_vendor_find(v)) != NULL ? NULL : fp_vendor_names();
    else if (!fp_mode_set_text(&srv->mode, key, v, &err))
        return err;
    return NULL;
}

static void parse_args(fp_server_t *srv, fp_cli_t *cli, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--quiet") == 0) {
            srv->quiet = true;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0 || strcmp(arg, "--help") == 0)
            usage();
        char key[64];
        const char *eq = strchr(arg + 2, '=');
        size_t kn = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        if (kn >= sizeof key)
            usage();
        memcpy(key, arg + 2, kn);
        key[kn] = '\0';
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        const char *err = v ? cli_option(srv, cli, key, v) : "missing value";
        if (err) {
            fprintf(stderr, "fakeprovider: --%s: %s\n", key, err);
            usage();
        }
    }
    if (!cli->listen || !cli->tls_cert != !cli->tls_key || (srv->logs_limit && !srv->logs_vendor))
        usage();
    /* Ethereum's safe and finalized trail the head by 32 and 64 blocks (one
     * and two epochs), as the fake always answered; Solana's commitments
     * all read the head unless told otherwise, as it always did */
    bool sol = strcmp(srv->chain->name, "solana") == 0;
    if (srv->safe_depth == FP_DEPTH_UNSET)
        srv->safe_depth = sol ? 0 : 32;
    if (srv->finalized_depth == FP_DEPTH_UNSET)
        srv->finalized_depth = sol ? 0 : 64;
}

/* "HOST:PORT" or "[V6]:PORT"; returns a bound, listening socket or -1. */
static int listen_on(const char *spec, char *host, size_t hostlen, int *port)
{
    const char *colon = strrchr(spec, ':');
    if (!colon || (size_t)(colon - spec) >= hostlen)
        return -1;
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = '\0';
    char bare[256];
    snprintf(bare, sizeof bare, "%s", host);
    if (bare[0] == '[' && bare[strlen(bare) - 1] == ']') {
        memmove(bare, bare + 1, strlen(bare));
        bare[strlen(bare) - 1] = '\0';
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV}, *ai;
    if (getaddrinfo(bare[0] ? bare : NULL, colon + 1, &hints, &ai) != 0)
        return -1;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 4096) < 0) {
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                           : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

static SSL_CTX *tls_context(const char *cert, const char *key)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx)
        return NULL;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
    /* the output buffer may be reallocated between a short write and its retry */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1
        || SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1
        || SSL_CTX_check_private_key(ctx) != 1) {
        ERR_print_errors_fp(stderr);
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static int signal_fd(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);   /* OpenSSL writes with write(), not send(MSG_NOSIGNAL) */
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

static void accept_all(fp_server_t *srv)
{
    for (int i = 0; i < 256; i++) {
        int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if ((errno == EMFILE || errno == ENFILE) && srv->spare_fd >= 0) {
                /* out of descriptors: shed this one peer instead of spinning */
                close(srv->spare_fd);
                fd = accept(srv->listen_fd, NULL, NULL);
                if (fd >= 0)
                    close(fd);
                srv->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                fp_log(srv, "out of file descriptors, dropped a connection");
            }
            return;
        }
        bool mute = fp_mode_is_accept_hang(&srv->mode);
        if (mute) {
            srv->stats.faults++;
            fp_mode_consume(srv);
        }
        fp_conn_accept(srv, fd, mute);
    }
}

static void add_fd(fp_server_t *srv, int fd, void *tag)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = tag};
    if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        perror("fakeprovider: epoll_ctl");
        exit(1);
    }
}

static void on_signal(fp_server_t *srv)
{
    struct signalfd_siginfo si;
    if (read(srv->signal_fd, &si, sizeof si) != (ssize_t)sizeof si)
        return;
    fp_log(srv, "exiting on signal %u from pid %u", si.ssi_signo, si.ssi_pid);
    srv->stop = true;
}

static void run(fp_server_t *srv)
{
    struct epoll_event evs[256];
    add_fd(srv, srv->listen_fd, &srv->listen_fd);
    add_fd(srv, srv->signal_fd, &srv->signal_fd);
    while (!srv->stop) {
        srv->now_ms = clock_ms();
        int n = epoll_wait(srv->epfd, evs, 256, fp_timer_timeout(srv));
        srv->now_ms = clock_ms();
        for (int i = 0; i < n; i++) {
            void *tag = evs[i].data.ptr;
            if (tag == &srv->listen_fd)
                accept_all(srv);
            else if (tag == &srv->signal_fd)
                on_signal(srv);
            else
                fp_conn_on_event(tag, evs[i].events);
        }
        fp_timer_run(srv);
    }
}

static void shutdown_server(fp_server_t *srv)
{
    while (srv->conns)
        fp_conn_close(srv->conns, false);
    close(srv->listen_fd);
    close(srv->signal_fd);
    close(srv->epfd);
    if (srv->spare_fd >= 0)
        close(srv->spare_fd);
    SSL_CTX_free(srv->tls);
    fp_mode_dispose(&srv->mode);
    fp_stats_dispose(&srv->stats);
    fp_txstore_dispose(&srv->txs);
    fp_buf_dispose(&srv->body);
    fp_buf_dispose(&srv->idbuf);
    free(srv->batch.calls);
    free(srv->timers);
}

int main(int argc, char **argv)
{
    fp_server_t srv = {.name = "fake", .chain_id = 1, .block0 = 1000000, .block_time_ms = 1000,
                       .safe_depth = FP_DEPTH_UNSET, .finalized_depth = FP_DEPTH_UNSET,
                       .genesis_hash = "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"};
    fp_cli_t cli = {0};
    char host[256];
    int port = 0;
    srv.chain = fp_chain_find("ethereum");
    fp_mode_init(&srv.mode);
    parse_args(&srv, &cli, argc, argv);
    if (!fp_chain_check(fp_chain_find("ethereum")) || !fp_chain_check(fp_chain_find("solana")))
        abort();    /* a method table lost its order: dispatch would miss methods */
    raise_fd_limit();
    if (cli.tls_cert && !(srv.tls = tls_context(cli.tls_cert, cli.tls_key)))
        return 1;
    srv.listen_fd = listen_on(cli.listen, host, sizeof host, &port);
    if (srv.listen_fd < 0) {
        fprintf(stderr, "fakeprovider: cannot listen on %s: %s\n", cli.listen, strerror(errno));
        return 1;
    }
    srv.signal_fd = signal_fd();
    srv.epfd = epoll_create1(EPOLL_CLOEXEC);
    srv.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    srv.start_ms = srv.now_ms = clock_ms();
    srv.start_wall = (int64_t)time(NULL);
    printf("fakeprovider %s listening on %s:%d\n", srv.name, host, port);
    fflush(stdout);
    fp_log(&srv, "%s chain, mode %s%s", srv.chain->name, fp_mode_name(&srv.mode),
           srv.tls ? ", TLS" : "");
    run(&srv);
    shutdown_server(&srv);
    fp_solw_dispose(&srv);
    return 0;
}
