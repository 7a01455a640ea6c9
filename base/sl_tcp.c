#include "base/sl_tcp.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>

sl_err_t sl_tcp_bytes_acked(int fd, uint64_t *out)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof(ti.tcpi_bytes_acked))
        return SL_ERR_IO;
    *out = ti.tcpi_bytes_acked;
    return SL_OK;
}
