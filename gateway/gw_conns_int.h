/* gateway/gw_conns_int.h: what gw_conns.c and gw_conns_linger.c share: one
 * tracked connection, a listener and the set of them. Not for other files. */
#ifndef GW_CONNS_INT_H
#define GW_CONNS_INT_H

#include "base/sl_log.h"
#include "gateway/gw_conns.h"
#include "gateway/gw_peers.h"

#define MAX_LISTENERS 3
#define ACCEPTS_PER_EVENT 32
#define LOG_EVERY_MS 10000        /* at most one line per kind of trouble per 10 s */
#define SWEEP_MIN_MS 50
#define SWEEP_MAX_MS 1000
/* Lingering close (see gw_conns_linger): the client has this long in all,
 * and this long between two reads, to finish sending; what it sends is
 * read and dropped up to this many bytes. Past a bound the close may be a
 * reset, which is then the client's doing. */
#define LINGER_MAX_MS 10000
#define LINGER_IDLE_MS 2000
#define LINGER_MAX_BYTES (64u * 1024 * 1024)
/* HTTP/2 rapid reset: a connection with this many calls reset before their
 * answer, more than half of its calls, is reset (gw_conns_h2_call_reset). */
#define RAPID_RESETS_MIN 100

typedef struct gw_listener {
    gw_conns_t *owner;
    h2o_socket_t *sock;
    h2o_accept_ctx_t *actx;
    int clients;                  /* 1: the client listener; 0: the admin one */
    int reading;                  /* the loop watches it for new connections */
    int paused_full;              /* at max_connections (none could give way) or admin.max_connections */
    int paused_error;             /* after an accept error, until the timer */
    h2o_timeout_entry_t resume;
} gw_listener_t;

/* One connection, from accept until h2o disposes its socket. */
typedef struct gw_conn {
    h2o_linklist_t link;          /* in gw_conns_t.conns (oldest first) or .admin_conns */
    gw_conns_t *owner;
    h2o_socket_t *sock;
    int admin;                    /* counted against admin.max_connections only */
    int has_peer;
    uint8_t peer[16];             /* gw_identity_group_key of the client's address */
    h2o_timeout_entry_t first_request; /* linked when accepted near max_connections */
    uint64_t acked;               /* the peer's acknowledged bytes at the last look */
    size_t written;               /* h2o's bytes_written then: a new answer is progress too */
    uint64_t since_ms;            /* when acked last moved; 0: not writing then */
    int resetting;                /* closing at our request (reset, eviction): no longer counted as room */
    int linger_fd;                /* a duplicate kept for the lingering close, or -1 */
    int lingering;                /* sock is now our own socket on linger_fd's connection */
    uint64_t linger_since_ms;
    uint64_t linger_bytes;        /* dropped so far */
    h2o_timeout_entry_t linger_idle;
    h2o_linklist_t reqs;          /* gw_conns_req_t being answered: not waiting on its client */
    uint32_t h2_calls, h2_resets; /* HTTP/2 calls run, and of them reset before their answer */
} gw_conn_t;

struct gw_conns {
    h2o_loop_t *loop;
    const cfg_server_conf_t *srv;
    uint32_t admin_max;           /* admin.max_connections */
    gw_stats_t *stats;
    gw_listener_t listeners[MAX_LISTENERS];
    size_t nlisteners;
    h2o_linklist_t conns;
    size_t nconns;
    size_t nclosing;              /* of nconns, those resetting: gone at the next loop turn */
    gw_peers_t *peers;
    h2o_linklist_t admin_conns;
    size_t nadmin;
    int has_admin;                /* an admin listener: spare_fd is kept */
    int spare_fd;                 /* /dev/null, closed to accept an admin connection at EMFILE; -1 */
    h2o_timeout_t first_request_timeout; /* server.first_request_timeout_ms */
    h2o_timeout_t pause_timeout;  /* GW_CONNS_PAUSE_MS */
    h2o_timeout_t sweep_timeout;  /* a quarter of write_timeout_ms, within [50, 1000] */
    h2o_timeout_t linger_timeout; /* LINGER_IDLE_MS */
    h2o_timeout_entry_t sweep;
    sl_log_limit_t log_full, log_error, log_stall, log_evict, log_rapid;
};

/* Forgets k (its socket is gone): counts, the per-address count, the spare
 * descriptor and a paused accept. Frees k. */
void gw_conns_forget(gw_conn_t *k);
/* The tracked connection of sock, or NULL (admin: tracked; upstream: not). */
gw_conn_t *gw_conns_tracked(h2o_socket_t *sock);
/* h2o has closed its descriptor: the connection lives on in k->linger_fd. */
void gw_conns_linger_start(gw_conn_t *k);

#endif
