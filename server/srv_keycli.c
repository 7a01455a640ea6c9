/* server/srv_keycli.c: the admin API's keys from the command line
 * (srv_keycli.h). */
#include "server/srv_keycli.h"

#include <cjson/cJSON.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/sl_buf.h"
#include "config/cfg.h"

#define CLI_TIMEOUT_S 5

typedef struct cli {
    char host[256], port[16];
    const char *token;
} cli_t;

static int usage(void)
{
    fprintf(stderr, "usage: sluice key list -c FILE [--admin HOST:PORT]\n"
                    "       sluice key revoke NAME -c FILE [--admin HOST:PORT]\n"
                    "       sluice key new --api -c FILE --name NAME --tier TIER [--admin HOST:PORT]\n"
                    "the admin token: SLUICE_ADMIN_TOKEN, else the config's admin.token\n");
    return 2;
}

/* "host:port", "[v6]:port" or "http://..." into c; a wildcard is loopback. */
static int parse_listen(cli_t *c, const char *s)
{
    if (strncmp(s, "http://", 7) == 0)
        s += 7;
    const char *colon = strrchr(s, ':');
    if (colon == NULL || colon == s || strlen(colon + 1) == 0 || strlen(colon + 1) >= sizeof(c->port))
        return -1;
    size_t hl = (size_t)(colon - s);
    if (s[0] == '[' && hl >= 2 && s[hl - 1] == ']') {
        s++;
        hl -= 2;
    }
    if (hl >= sizeof(c->host))
        return -1;
    snprintf(c->host, sizeof(c->host), "%.*s", (int)hl, s);
    snprintf(c->port, sizeof(c->port), "%s", colon + 1);
    size_t pl = strcspn(c->port, "/");
    c->port[pl] = '\0';
    if (strcmp(c->host, "0.0.0.0") == 0 || c->host[0] == '\0')
        snprintf(c->host, sizeof(c->host), "127.0.0.1");
    else if (strcmp(c->host, "::") == 0)
        snprintf(c->host, sizeof(c->host), "::1");
    return 0;
}

/* One request; *status and the body (malloc'd, NUL-terminated) on success. */
static int request(const cli_t *c, const char *method, const char *path, const char *body, int *status, char **out)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(c->host, c->port, &hints, &res) != 0 || res == NULL) {
        fprintf(stderr, "sluice: cannot resolve the admin listener %s:%s\n", c->host, c->port);
        return -1;
    }
    int fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
    struct timeval tv = {CLI_TIMEOUT_S, 0};
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    }
    if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
        fprintf(stderr, "sluice: cannot reach the admin listener %s:%s (is sluice running? admin.listen)\n", c->host,
                c->port);
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    sl_buf_t req = SL_BUF_INIT;
    sl_buf_printf(&req, "%s %s HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n", method, path, c->host, c->port);
    if (c->token != NULL)
        sl_buf_printf(&req, "Authorization: Bearer %s\r\n", c->token);
    sl_buf_printf(&req, "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s", body ? strlen(body) : 0,
                  body ? body : "");
    int ok = write(fd, req.base, req.len) == (ssize_t)req.len;
    sl_buf_dispose(&req);
    sl_buf_t in = SL_BUF_INIT;
    char chunk[4096];
    ssize_t n;
    while (ok && (n = read(fd, chunk, sizeof(chunk))) > 0)
        sl_buf_append(&in, chunk, (size_t)n);
    close(fd);
    sl_buf_append(&in, "", 1);
    const char *head_end = ok ? strstr(in.base, "\r\n\r\n") : NULL;
    if (head_end == NULL || sscanf(in.base, "HTTP/1.%*d %d", status) != 1) {
        fprintf(stderr, "sluice: no answer from the admin listener %s:%s\n", c->host, c->port);
        sl_buf_dispose(&in);
        return -1;
    }
    *out = strdup(head_end + 4);
    sl_buf_dispose(&in);
    return 0;
}

/* The answer's error, said on stderr: 1. */
static int refused(int status, const char *body)
{
    cJSON *j = cJSON_Parse(body);
    const cJSON *e = j != NULL ? cJSON_GetObjectItem(j, "error") : NULL;
    fprintf(stderr, "sluice: the admin API answered %d: %s\n", status,
            cJSON_IsString(e) ? e->valuestring : status == 401 ? "the admin token is missing or wrong" : body);
    cJSON_Delete(j);
    return 1;
}

static void strs(sl_buf_t *b, const char *label, const cJSON *arr)
{
    const cJSON *x;
    int first = 1;
    cJSON_ArrayForEach(x, arr) {
        if (cJSON_IsString(x))
            sl_buf_printf(b, "%s%s%s", first ? (b->len ? " " : "") : ",", first ? label : "", x->valuestring);
        first = 0;
    }
}

/* Prints one page's keys, a line each. */
static void print_keys(const cJSON *keys)
{
    const cJSON *k;
    cJSON_ArrayForEach(k, keys) {
        sl_buf_t sc = SL_BUF_INIT;
        const cJSON *m = cJSON_GetObjectItem(k, "methods");
        strs(&sc, "networks=", cJSON_GetObjectItem(k, "networks"));
        strs(&sc, "allow=", cJSON_GetObjectItem(m, "allow"));
        strs(&sc, "deny=", cJSON_GetObjectItem(m, "deny"));
        strs(&sc, "contracts=", cJSON_GetObjectItem(k, "contracts"));
        strs(&sc, "origins=", cJSON_GetObjectItem(k, "origins"));
        printf("%-24s %-7s %-12s %10.0f %9.0f %13.0f  %s\n", cJSON_GetStringValue(cJSON_GetObjectItem(k, "name")),
               cJSON_GetStringValue(cJSON_GetObjectItem(k, "source")),
               cJSON_GetStringValue(cJSON_GetObjectItem(k, "tier")), cJSON_GetNumberValue(cJSON_GetObjectItem(k, "calls")),
               cJSON_GetNumberValue(cJSON_GetObjectItem(k, "refusals")),
               cJSON_GetNumberValue(cJSON_GetObjectItem(k, "credits_spent")), sc.len ? sc.base : "everything");
        sl_buf_dispose(&sc);
    }
}

/* Every page of GET /admin/keys, following "next". */
static int list_keys(const cli_t *c)
{
    char path[128] = "/admin/keys";
    for (int first = 1;; first = 0) {
        int status;
        char *body;
        if (request(c, "GET", path, NULL, &status, &body) != 0)
            return 1;
        if (status != 200) {
            int rc = refused(status, body);
            free(body);
            return rc;
        }
        cJSON *j = cJSON_Parse(body);
        free(body);
        if (first)
            printf("%-24s %-7s %-12s %10s %9s %13s  %s\n", "NAME", "SOURCE", "TIER", "CALLS", "REFUSALS",
                   "CREDITS_SPENT", "SCOPES");
        print_keys(j != NULL ? cJSON_GetObjectItem(j, "keys") : NULL);
        const char *next = j != NULL ? cJSON_GetStringValue(cJSON_GetObjectItem(j, "next")) : NULL;
        int more = next != NULL && next[0] != '\0' &&
                   (size_t)snprintf(path, sizeof(path), "/admin/keys?after=%s", next) < sizeof(path);
        cJSON_Delete(j);
        if (!more)
            return 0;
    }
}

static int revoke_key(const cli_t *c, const char *name)
{
    char path[320];
    if (strchr(name, '/') != NULL || strchr(name, ' ') != NULL ||
        (size_t)snprintf(path, sizeof(path), "/admin/keys/%s", name) >= sizeof(path))
        return usage();
    int status;
    char *body;
    if (request(c, "DELETE", path, NULL, &status, &body) != 0)
        return 1;
    int rc = status == 200 || status == 204 ? 0 : refused(status, body);
    if (rc == 0)
        printf("revoked: %s (its next call is 401, its WebSockets close)\n", name);
    free(body);
    return rc;
}

static int make_key(const cli_t *c, const char *name, const char *tier)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "tier", tier);
    char *req = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    int status;
    char *body;
    int rc = request(c, "POST", "/admin/keys", req, &status, &body) != 0 ? 1 : 0;
    free(req);
    if (rc != 0)
        return rc;
    cJSON *j = status == 201 ? cJSON_Parse(body) : NULL;
    const char *key = cJSON_GetStringValue(cJSON_GetObjectItem(j, "key"));
    if (key == NULL)
        rc = refused(status, body);
    else {
        printf("name:   %s\n", name);
        printf("key:    %s   (shown this once; only its SHA-256 is kept)\n", key);
        printf("use:    POST http://HOST:PORT/{network}/%s   (or header X-API-Key)\n", key);
    }
    cJSON_Delete(j);
    free(body);
    return rc;
}

int srv_keycli_run(int argc, char **argv)
{
    const char *verb = argc > 0 ? argv[0] : "", *path = NULL, *admin = NULL, *name = NULL, *tier = NULL;
    int api = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--api") == 0)
            api = 1;
        else if ((strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0) && v != NULL)
            path = argv[++i];
        else if (strcmp(a, "--admin") == 0 && v != NULL)
            admin = argv[++i];
        else if (strcmp(a, "--name") == 0 && v != NULL)
            name = argv[++i];
        else if (strcmp(a, "--tier") == 0 && v != NULL)
            tier = argv[++i];
        else if (a[0] != '-' && name == NULL && strcmp(verb, "revoke") == 0)
            name = a;
        else
            return usage();
    }
    int known = strcmp(verb, "list") == 0 || strcmp(verb, "revoke") == 0 || (strcmp(verb, "new") == 0 && api);
    if (!known || path == NULL || (strcmp(verb, "list") != 0 && name == NULL) ||
        (strcmp(verb, "new") == 0 && tier == NULL))
        return usage();
    cfg_t *cfg = NULL;
    cfg_errors_t errs = {0};
    if (cfg_load(path, &cfg, &errs) != SL_OK) {
        cfg_errors_print(&errs, path, stderr);
        cfg_errors_dispose(&errs);
        return 1;
    }
    cfg_errors_dispose(&errs);
    cli_t c = {.token = getenv("SLUICE_ADMIN_TOKEN")};
    if (c.token == NULL || c.token[0] == '\0')
        c.token = cfg->admin.token;
    const char *listen = admin != NULL ? admin : cfg->admin.listen;
    int rc;
    if (listen == NULL || strcmp(listen, "off") == 0 || parse_listen(&c, listen) != 0) {
        fprintf(stderr, "sluice: %s: no admin listener to ask (admin.listen, or --admin HOST:PORT)\n", path);
        rc = 1;
    } else if (strcmp(verb, "list") == 0)
        rc = list_keys(&c);
    else if (strcmp(verb, "revoke") == 0)
        rc = revoke_key(&c, name);
    else
        rc = make_key(&c, name, tier);
    cfg_destroy(cfg);
    return rc;
}
