/* admin/admin.h: the operator's listener (default 127.0.0.1:8546).
 *
 * Routes are one table (admin/admin.c). Every route but /healthz needs
 * "Authorization: Bearer <admin.token>" when a token is configured; the
 * comparison is constant-time. admin/ shows state, it drives no upstream. */
#ifndef ADMIN_H
#define ADMIN_H

#include <h2o.h>

typedef struct admin_conf {
    const char *token;            /* NULL: no authentication (loopback only, enforced by config) */
    /* 1 when this process can serve traffic (not draining, networks usable) */
    int (*ready)(void *data, char *why, size_t why_len);
    void *data;
} admin_conf_t;

typedef struct admin admin_t;

/* Registers the admin routes on hostconf's "/". conf is copied. */
admin_t *admin_register(h2o_hostconf_t *hostconf, const admin_conf_t *conf);

#endif
