/* server/srv_keycli.h: `sluice key list|revoke|new --api`, the admin API's
 * /admin/keys from the command line (issue 33).
 *
 *   sluice key list -c FILE [--admin HOST:PORT]
 *   sluice key revoke NAME -c FILE [--admin HOST:PORT]
 *   sluice key new --api -c FILE --name NAME --tier TIER [--admin HOST:PORT]
 *
 * The admin listener is the config's admin.listen (a wildcard address is
 * asked on loopback) unless --admin names one; the token is the environment's
 * SLUICE_ADMIN_TOKEN, else the config's admin.token. Plain HTTP/1.1, one
 * request, blocking: it runs beside a sluice, never inside one. */
#ifndef SRV_KEYCLI_H
#define SRV_KEYCLI_H

/* argv[0] is the verb ("list", "revoke", "new"); the exit status: 0 done,
 * 1 refused or unreachable (said on stderr), 2 a usage error. */
int srv_keycli_run(int argc, char **argv);

#endif
