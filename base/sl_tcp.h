/* base/sl_tcp.h: what the kernel knows about a TCP connection.
 *
 * Separate from the h2o code because <linux/tcp.h> (which has the full
 * struct tcp_info) and glibc's <netinet/tcp.h> cannot share a file. */
#ifndef SL_TCP_H
#define SL_TCP_H

#include <stdint.h>

#include "base/sl_err.h"

/* Bytes of this connection the peer has acknowledged so far (Linux 4.1+
 * tcpi_bytes_acked): it grows while a client reads its answer, and stands
 * still while one does not. Errors: SL_ERR_IO (not a TCP socket, closed). */
SL_MUST_CHECK sl_err_t sl_tcp_bytes_acked(int fd, uint64_t *out);

#endif
