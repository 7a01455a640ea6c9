/* gateway/gw_conns_linger.c: the lingering close (gw_conns_linger). A
 * connection sluice refuses and closes keeps a duplicate of its descriptor:
 * once h2o has closed its own, the answer already queued goes out, then a
 * FIN, and what the client still sends is read and dropped until it closes
 * or a bound is reached (LINGER_MAX_MS in all, LINGER_IDLE_MS between two
 * reads, LINGER_MAX_BYTES), so a client that writes its whole body first
 * still reads the answer instead of a reset. */
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/sl_time.h"
#include "gateway/gw_conns_int.h"

static void linger_end(gw_conn_t *k)
{
    if (h2o_timeout_is_linked(&k->linger_idle))
        h2o_timeout_unlink(&k->linger_idle);
    h2o_socket_close(k->sock);
    gw_conns_forget(k);
}

static void on_linger_idle(h2o_timeout_entry_t *entry)
{
    linger_end(H2O_STRUCT_FROM_MEMBER(gw_conn_t, linger_idle, entry));
}

/* Drops what the client still sends; its end of the stream (or an error,
 * or a bound) ends the linger. */
static void on_linger_read(h2o_socket_t *sock, const char *err)
{
    gw_conn_t *k = sock->data;
    if (err == NULL) {
        k->linger_bytes += sock->input->size;
        h2o_buffer_consume(&sock->input, sock->input->size);
    }
    if (err != NULL || k->linger_bytes > LINGER_MAX_BYTES || sl_now_ms() - k->linger_since_ms > LINGER_MAX_MS) {
        linger_end(k);
        return;
    }
    h2o_timeout_unlink(&k->linger_idle);
    h2o_timeout_link(k->owner->loop, &k->owner->linger_timeout, &k->linger_idle);
}

/* h2o has closed its descriptor; the connection lives on in linger_fd.
 * Its answer is queued already: the FIN goes after it, then the reads. */
void gw_conns_linger_start(gw_conn_t *k)
{
    gw_conns_t *c = k->owner;
    shutdown(k->linger_fd, SHUT_WR);
    k->sock = h2o_evloop_socket_create(c->loop, k->linger_fd, 0);
    k->sock->data = k;
    k->linger_fd = -1;
    k->lingering = 1;
    k->linger_since_ms = sl_now_ms();
    k->linger_idle.cb = on_linger_idle;
    h2o_timeout_link(c->loop, &c->linger_timeout, &k->linger_idle);
    h2o_socket_read_start(k->sock, on_linger_read);
}

void gw_conns_linger(h2o_socket_t *sock)
{
    gw_conn_t *k = gw_conns_tracked(sock);
    if (k == NULL)
        return; /* not a connection this module tracks */
    if (k->admin || k->linger_fd >= 0 || k->resetting)
        return;
    k->linger_fd = fcntl(h2o_socket_get_fd(sock), F_DUPFD_CLOEXEC, 0); /* -1: an ordinary close */
}
