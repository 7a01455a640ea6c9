/* state/state_cluster_probe.c: one blocking look at the Redis server, for
 * --check --connect and the master's start.
 *
 * The answer sorts what went wrong into what the operator must fix (a wrong
 * password, a port that is not Redis, a database that does not exist, a
 * Redis too old for streams) and what sluice rides out (nothing answers:
 * the hosts start degraded and connect when Redis comes). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

#include "base/sl_buf.h"
#include "base/sl_secret.h"
#include "state/state_cluster.h"

static sl_err_t say(char *why, size_t len, sl_err_t err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* why[] never carries a secret, whatever the server said */
static sl_err_t say(char *why, size_t len, sl_err_t err, const char *fmt, ...)
{
    char raw[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    sl_buf_t b = SL_BUF_INIT;
    sl_secret_scrub(&b, raw, strlen(raw));
    snprintf(why, len, "%.*s", (int)b.len, b.base ? b.base : "");
    sl_buf_dispose(&b);
    return err;
}

/* A failed command: the context's error (I/O, protocol) or the reply's. */
static sl_err_t command_failed(redisContext *c, const char *what, char *why, size_t len)
{
    if (c->err == REDIS_ERR_PROTOCOL)
        return say(why, len, SL_ERR_PARSE, "the server at this address does not speak Redis (%s)", c->errstr);
    if (c->err == REDIS_ERR_EOF)
        return say(why, len, SL_ERR_PARSE, "the server closed the connection after %s: not a Redis server?", what);
    return say(why, len, SL_ERR_IO, "no answer to %s: %s", what, c->errstr[0] ? c->errstr : "timed out");
}

static int is_auth_error(const char *msg)
{
    return strncasecmp(msg, "WRONGPASS", 9) == 0 || strncasecmp(msg, "NOAUTH", 6) == 0 ||
           strncasecmp(msg, "ERR invalid password", 20) == 0 || strstr(msg, "AUTH") != NULL;
}

/* Sends one command; 0 with *out set (caller frees), or the error. */
static sl_err_t run(redisContext *c, const char *what, redisReply **out, char *why, size_t len, int argc,
                    const char **argv)
{
    *out = redisCommandArgv(c, argc, argv, NULL);
    if (*out == NULL)
        return command_failed(c, what, why, len);
    return SL_OK;
}

static sl_err_t check_auth(redisContext *c, const state_cluster_conf_t *conf, char *why, size_t len)
{
    if (conf->password == NULL)
        return SL_OK;
    const char *argv[3] = {"AUTH", conf->user ? conf->user : conf->password, conf->password};
    redisReply *r;
    sl_err_t err = run(c, "AUTH", &r, why, len, conf->user ? 3 : 2, argv);
    if (err != SL_OK)
        return err;
    if (r->type == REDIS_REPLY_ERROR)
        err = say(why, len, SL_ERR_DENIED, "Redis refused the password (%s)", r->str);
    freeReplyObject(r);
    return err;
}

/* The first words: PING and an empty line. Redis answers the PING (+PONG,
 * or -NOAUTH when it wants a password) and ignores the empty line; an HTTP
 * server takes the two as a malformed request and answers 400, which is
 * not Redis' protocol. */
static sl_err_t check_speaks_redis(redisContext *c, char *why, size_t len)
{
    static const char hello[] = "*1\r\n$4\r\nPING\r\n\r\n";
    redisReply *r = NULL;
    if (redisAppendFormattedCommand(c, hello, sizeof(hello) - 1) != REDIS_OK ||
        redisGetReply(c, (void **)&r) != REDIS_OK || r == NULL)
        return command_failed(c, "PING", why, len);
    sl_err_t err = SL_OK;
    if (r->type == REDIS_REPLY_ERROR && strncasecmp(r->str, "NOAUTH", 6) != 0 && strncasecmp(r->str, "ERR", 3) != 0)
        err = say(why, len, SL_ERR_PARSE, "unexpected answer to PING: %s", r->str);
    freeReplyObject(r);
    return err;
}

static sl_err_t check_ping_select(redisContext *c, const state_cluster_conf_t *conf, char *why, size_t len)
{
    redisReply *r;
    const char *ping[1] = {"PING"};
    sl_err_t err = run(c, "PING", &r, why, len, 1, ping);
    if (err != SL_OK)
        return err;
    if (r->type == REDIS_REPLY_ERROR && is_auth_error(r->str))
        err = say(why, len, SL_ERR_DENIED, "Redis wants a password (%s): give it in the URL, redis://:PASSWORD@host:port",
                  r->str);
    else if (r->type == REDIS_REPLY_ERROR || (r->type != REDIS_REPLY_STATUS && r->type != REDIS_REPLY_STRING))
        err = say(why, len, SL_ERR_PARSE, "unexpected answer to PING%s%s", r->type == REDIS_REPLY_ERROR ? ": " : "",
                  r->type == REDIS_REPLY_ERROR ? r->str : "");
    freeReplyObject(r);
    if (err != SL_OK)
        return err;
    char db[16];
    snprintf(db, sizeof(db), "%u", conf->db);
    const char *select[2] = {"SELECT", db};
    if ((err = run(c, "SELECT", &r, why, len, 2, select)) != SL_OK)
        return err;
    if (r->type == REDIS_REPLY_ERROR)
        err = say(why, len, SL_ERR_INVALID, "Redis refused database %u (%s)", conf->db, r->str);
    freeReplyObject(r);
    return err;
}

/* Streams (XADD) need Redis 5. INFO may be renamed away: then nothing is said. */
static sl_err_t check_version(redisContext *c, char *version, size_t vlen, char *why, size_t len)
{
    redisReply *r;
    const char *info[2] = {"INFO", "server"};
    sl_err_t err = run(c, "INFO", &r, why, len, 2, info);
    if (err != SL_OK)
        return err;
    snprintf(version, vlen, "unknown");
    if (r->type == REDIS_REPLY_STRING) {
        const char *v = strstr(r->str, "redis_version:");
        if (v != NULL) {
            v += 14;
            size_t n = strcspn(v, "\r\n");
            snprintf(version, vlen, "%.*s", (int)(n < 32 ? n : 32), v);
            if (atoi(version) < 5)
                err = say(why, len, SL_ERR_VERSION, "Redis %s is too old: sluice needs 5.0 or later (streams)", version);
        }
    }
    freeReplyObject(r);
    return err;
}

sl_err_t state_cluster_probe(const state_cluster_conf_t *conf, uint32_t timeout_ms, char *why, size_t why_len)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout(conf->redis_host, conf->redis_port, tv);
    if (c == NULL)
        return say(why, why_len, SL_ERR_IO, "cannot connect: out of memory");
    if (c->err) {
        sl_err_t err = say(why, why_len, SL_ERR_IO, "cannot connect to %s:%u: %s", conf->redis_host,
                           (unsigned)conf->redis_port, c->errstr);
        redisFree(c);
        return err;
    }
    redisSetTimeout(c, tv);
    char version[40] = "";
    sl_err_t err = check_speaks_redis(c, why, why_len);
    if (err == SL_OK)
        err = check_auth(c, conf, why, why_len);
    if (err == SL_OK)
        err = check_ping_select(c, conf, why, why_len);
    if (err == SL_OK)
        err = check_version(c, version, sizeof(version), why, why_len);
    if (err == SL_OK)
        say(why, why_len, SL_OK, "Redis %s, database %u", version, conf->db);
    redisFree(c);
    return err;
}

/* A connection to the cluster's Redis, authenticated, with timeout_ms for
 * every command; NULL (and *err, why said) when it cannot be had. */
static redisContext *connect_authed(const state_cluster_conf_t *conf, uint32_t timeout_ms, char *why, size_t why_len,
                                    sl_err_t *err)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout(conf->redis_host, conf->redis_port, tv);
    if (c == NULL || c->err) {
        *err = say(why, why_len, SL_ERR_IO, "cannot connect: %s", c ? c->errstr : "out of memory");
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    if ((*err = check_auth(c, conf, why, why_len)) != SL_OK) {
        redisFree(c);
        return NULL;
    }
    return c;
}

sl_err_t state_cluster_leave(const state_cluster_conf_t *conf, uint32_t timeout_ms, char *why, size_t why_len)
{
    sl_err_t err;
    redisContext *c = connect_authed(conf, timeout_ms, why, why_len, &err);
    if (c == NULL)
        return err;
    char key[STATE_CLUSTER_PREFIX_MAX + 8];
    snprintf(key, sizeof(key), "%shosts", conf->prefix);
    const char *argv[3] = {"ZREM", key, conf->host};
    redisReply *r;
    if ((err = run(c, "ZREM", &r, why, why_len, 3, argv)) == SL_OK) {
        if (r->type == REDIS_REPLY_ERROR)
            err = say(why, why_len, SL_ERR_IO, "%s", r->str);
        freeReplyObject(r);
    }
    redisFree(c);
    return err;
}

/* Deletes KEYS[1] (a lease) if it names ARGV[1] (this host) and tells the
 * others on KEYS[2] (the channel) that ARGV[2] (the job) is free. */
static const char release_script[] =
    "local v = redis.call('GET', KEYS[1]) "
    "if v and string.sub(v, 1, string.len(ARGV[1]) + 1) == ARGV[1] .. ' ' then "
    "redis.call('DEL', KEYS[1]) redis.call('PUBLISH', KEYS[2], 'r ' .. ARGV[2] .. ' ' .. ARGV[1]) return 1 end "
    "return 0";

sl_err_t state_cluster_leases_release(const state_cluster_conf_t *conf, const char *const *jobs, size_t njobs,
                                      uint32_t timeout_ms, size_t *released, char *why, size_t why_len)
{
    sl_err_t err;
    *released = 0;
    redisContext *c = connect_authed(conf, timeout_ms, why, why_len, &err);
    if (c == NULL)
        return err;
    char key[STATE_CLUSTER_PREFIX_MAX + STATE_KEY_MAX + 8], ch[STATE_CLUSTER_PREFIX_MAX + 4];
    snprintf(ch, sizeof(ch), "%sch", conf->prefix);
    for (size_t i = 0; i < njobs && err == SL_OK; i++) {
        snprintf(key, sizeof(key), "%slease:%s", conf->prefix, jobs[i]);
        const char *argv[7] = {"EVAL", release_script, "2", key, ch, conf->host, jobs[i]};
        redisReply *r;
        if ((err = run(c, "EVAL", &r, why, why_len, 7, argv)) != SL_OK)
            break;
        if (r->type == REDIS_REPLY_ERROR)
            err = say(why, why_len, SL_ERR_IO, "%s", r->str);
        else if (r->type == REDIS_REPLY_INTEGER && r->integer == 1)
            (*released)++;
        freeReplyObject(r);
    }
    redisFree(c);
    return err;
}

/* The value of field in an INFO answer ("field:value\r\n"), into out. */
static int info_field(const char *info, const char *field, char *out, size_t cap)
{
    size_t flen = strlen(field);
    for (const char *p = info; (p = strstr(p, field)) != NULL; p += flen) {
        if ((p != info && p[-1] != '\n') || p[flen] != ':')
            continue;
        size_t n = strcspn(p + flen + 1, "\r\n");
        snprintf(out, cap, "%.*s", (int)(n < cap - 1 ? n : cap - 1), p + flen + 1);
        return 1;
    }
    return 0;
}

sl_err_t state_cluster_probe_memory(const state_cluster_conf_t *conf, uint32_t timeout_ms, char *why, size_t why_len)
{
    sl_err_t err;
    redisContext *c = connect_authed(conf, timeout_ms, why, why_len, &err);
    if (c == NULL)
        return err;
    redisReply *r = NULL;
    const char *info[2] = {"INFO", "memory"};
    if ((err = run(c, "INFO", &r, why, why_len, 2, info)) == SL_OK) {
        char max[32] = "", policy[32] = "";
        if (r->type != REDIS_REPLY_STRING || !info_field(r->str, "maxmemory", max, sizeof(max)) ||
            !info_field(r->str, "maxmemory_policy", policy, sizeof(policy)))
            err = say(why, why_len, SL_ERR_PARSE, "INFO memory does not say maxmemory and maxmemory_policy");
        else if (strtoull(max, NULL, 10) == 0)
            err = say(why, why_len, SL_ERR_INVALID, "Redis has no maxmemory (policy %s): the response cache's entries "
                      "can fill its memory; set maxmemory and maxmemory-policy volatile-lru", policy);
        else if (strncmp(policy, "volatile-", 9) != 0)
            err = say(why, why_len, SL_ERR_INVALID, "maxmemory-policy is %s: %s; set volatile-lru", policy,
                      strncmp(policy, "allkeys-", 8) == 0 ? "Redis may evict the cluster's own records"
                                                          : "a full Redis refuses every write, the cluster's too");
        else
            say(why, why_len, SL_OK, "maxmemory %s bytes, %s: only keys with an expiry are evicted", max, policy);
    }
    if (r != NULL)
        freeReplyObject(r);
    redisFree(c);
    return err;
}
