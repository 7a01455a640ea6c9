#include "wire/rpc_error.h"

#include <string.h>

void wire_rpc_error(sl_buf_t *out, const char *body, wire_span_t id, int code, const char *message,
                    const char *data_json)
{
    sl_buf_append_str(out, "{\"jsonrpc\":\"2.0\",\"id\":");
    if (id.len != 0)
        sl_buf_append(out, body + id.off, id.len);
    else
        sl_buf_append_str(out, "null");
    sl_buf_printf(out, ",\"error\":{\"code\":%d,\"message\":", code);
    sl_buf_append_json_str(out, message, strlen(message));
    if (data_json != NULL) {
        sl_buf_append_str(out, ",\"data\":");
        sl_buf_append_str(out, data_json);
    }
    sl_buf_append_str(out, "}}");
}
