/* sub/sub_resume.c: a subscription outlives its socket (sub_int.h). When
 * a socket closes, each of its subscriptions whose kind has a position
 * (newHeads, logs) is held in state/ (LMDB: every worker of the host sees
 * it, a reload keeps it) under the caller's identity, network, kind and
 * normalised params, for server.ws_resume_s. The same caller's same
 * subscribe within that time, on any worker, takes it over (read and
 * deleted in one transaction: once) and its source goes on from the
 * position: the heights after it backfilled, then the live stream. */
#include "sub/sub_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/sl_hash.h"
#include "base/sl_log.h"
#include "base/sl_parse.h"
#include "base/sl_time.h"
#include "policy/resume.h"
#include "state/state_resume.h"

#define LOG_EVERY_MS 10000

static sl_log_limit_t log_limit; /* one worker, one loop */

/* Whether the caller's subscriptions are held: with an API key (keyed), or anyone's (all). */
static int eligible(const sub_client_t *c, const sub_kind_t *k)
{
    if (sub_state(c->reg) == NULL || k->position == NULL)
        return 0;
    return policy_resume_holds((policy_resume_mode_t)sub_limits(c->reg)->resume, strncmp(c->ident, "key:", 4) == 0);
}

static int key_of(const sub_client_t *c, const sub_kind_t *k, const char *params, char *out, size_t cap)
{
    return state_resume_key(out, cap, c->ident, c->net->conf->name, k->name, sl_fnv1a_str(SL_FNV1A_OFFSET, params)) != 0;
}

static void hex32(const uint8_t *b, char out[67])
{
    out[0] = '0';
    out[1] = 'x';
    for (size_t i = 0; i < 32; i++)
        snprintf(out + 2 + 2 * i, 3, "%02x", b[i]);
}

static int unhex32(const char *s, uint8_t *out)
{
    if (strlen(s) != 66 || s[0] != '0' || s[1] != 'x')
        return 0;
    for (size_t i = 0; i < 32; i++) {
        int hi = sl_hex_digit(s[2 + 2 * i]), lo = sl_hex_digit(s[3 + 2 * i]);
        if (hi < 0 || lo < 0)
            return 0;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 1;
}

static void note(const sub_client_t *c, const char *what, const char *kind, uint64_t height)
{
    uint64_t held;
    char tail[SL_LOG_HELD_MAX];
    if (sl_log_limit_pass(&log_limit, sl_now_ms(), LOG_EVERY_MS, &held))
        sl_log_info("network %s: a %s subscription held at block %" PRIu64 " %s%s", c->net->conf->name, kind,
                    height, what, sl_log_held_text(held, tail));
}

_Static_assert(SUB_RESUME_BELOW == STATE_RESUME_BELOW, "the record keeps every hash below the position");

/* 32 bytes as 4 big-endian words, and back. */
static void to_words(const uint8_t *b, uint64_t *w)
{
    for (size_t i = 0; i < 4; i++) {
        w[i] = 0;
        for (size_t j = 0; j < 8; j++)
            w[i] = w[i] << 8 | b[8 * i + j];
    }
}

static void from_words(const uint64_t *w, uint8_t *b)
{
    for (size_t i = 0; i < 4; i++)
        for (size_t j = 0; j < 8; j++)
            b[8 * i + j] = (uint8_t)(w[i] >> (56 - 8 * j));
}

void sub_resume_hold(const sub_client_t *c, const sub_source_t *src)
{
    state_resume_rec_t rec;
    sub_resume_pos_t pos;
    char key[STATE_RESUME_KEY_MAX];
    memset(&rec, 0, sizeof(rec));
    if (src->pass || !eligible(c, src->kind) || !src->kind->position(src, &pos) || pos.height == 0 ||
        !key_of(c, src->kind, src->key, key, sizeof(key)))
        return;
    rec.height = pos.height;
    hex32(pos.hash, rec.hash);
    for (size_t i = 0; i < SUB_RESUME_BELOW; i++)
        to_words(pos.below[i], &rec.below[4 * i]);
    rec.held_ms = sl_shared_ms();
    rec.expires_ms = rec.held_ms + (uint64_t)sub_limits(c->reg)->resume_s * 1000;
    size_t dropped = 0;
    if (state_resume_hold(sub_state(c->reg), key, c->ident, &rec, rec.held_ms, &dropped) != SL_OK) {
        sl_log_warn("state: could not hold a %s subscription for its caller's return", src->kind->name);
        return;
    }
    sub_count_net(c->reg, c->net->index, STATE_SRV_SUB_RESUME_DROPPED, (int64_t)dropped);
}

int sub_resume_take(const sub_client_t *c, const sub_kind_t *k, const char *params, sub_resume_pos_t *pos)
{
    state_resume_rec_t rec;
    char key[STATE_RESUME_KEY_MAX];
    int found = 0;
    memset(pos, 0, sizeof(*pos));
    if (!eligible(c, k) || !key_of(c, k, params, key, sizeof(key)))
        return 0;
    if (state_resume_take(sub_state(c->reg), key, &rec, &found) != SL_OK)
        return 0;
    int hash_ok = found && unhex32(rec.hash, pos->hash);
    switch (policy_resume_judge(hash_ok, rec.expires_ms, rec.height, sl_shared_ms(),
                                pool_network_head(c->net->pool_net), SUB_RESUME_MAX_BEHIND)) {
    case POLICY_RESUME_NONE:
        return 0;
    case POLICY_RESUME_EXPIRED:
        sub_count_net(c->reg, c->net->index, STATE_SRV_SUB_RESUME_EXPIRED, 1);
        note(c, "expired (server.ws_resume_s): it starts from the head, the blocks between are not told", k->name,
             rec.height);
        return 0;
    case POLICY_RESUME_TOO_FAR:
        sub_count_net(c->reg, c->net->index, STATE_SRV_SUB_RESUME_TOO_FAR, 1);
        note(c, "is more than 128 heights behind the head: it starts from the head, the blocks between are not told",
             k->name, rec.height);
        return 0;
    case POLICY_RESUME_RESUMED:
        break;
    }
    pos->height = rec.height;
    for (size_t i = 0; i < SUB_RESUME_BELOW; i++)
        from_words(&rec.below[4 * i], pos->below[i]);
    sub_count_net(c->reg, c->net->index, STATE_SRV_SUB_RESUMED, 1);
    return 1;
}
