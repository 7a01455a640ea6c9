/* policy/chainview.h: one network's picture of its chain, as plain data.
 *
 * Each endpoint's heads (latest, safe, finalized: Solana's processed,
 * confirmed, finalized), the heads already served to clients (the floor
 * eth_blockNumber and getSlot never go below), and a ring of recent
 * height -> hash that shows a reorg. Fed by probes and by answers already
 * flowing, never by an extra call per request (docs/architecture.md, "The
 * chain view"). The struct has no pointers and a fixed size, so state/ can
 * keep it in one LMDB record (and Redis with cluster:) for every worker; the
 * functions here decide, the caller stores.
 *
 * Which endpoints count is the caller's to say, as a bit mask over endpoint
 * indexes (bit i: endpoint i): `usable` (breaker closed, not drained, on
 * the right chain) for routing, `among` (on the right chain, usable or not)
 * for facts about the chain itself. Pure: no clocks (now_ms is passed in),
 * no allocation, no I/O. */
#ifndef POLICY_CHAINVIEW_H
#define POLICY_CHAINVIEW_H

#include <stddef.h>
#include <stdint.h>

#include "base/sl_err.h"
#include "policy/blockref.h"

#define POLICY_CHAINVIEW_MAX_ENDPOINTS 64 /* a mask is a uint64_t; pool/ allows as many */
/* Heights kept for reorg detection: 64 blocks is two Ethereum epochs (past
 * them a block is finalized and cannot change), 25 s of Solana slots. */
#define POLICY_CHAINVIEW_RING 64

typedef enum policy_head_kind {
    POLICY_HEAD_LATEST,           /* Ethereum latest; Solana processed */
    POLICY_HEAD_SAFE,             /* Ethereum safe; Solana confirmed */
    POLICY_HEAD_FINALIZED,        /* finalized on both */
    POLICY_HEAD_KIND_COUNT
} policy_head_kind_t;

typedef struct policy_chainview_ep {
    uint64_t head[POLICY_HEAD_KIND_COUNT];    /* height last observed; 0 = never */
    uint64_t seen_ms[POLICY_HEAD_KIND_COUNT]; /* when (caller's clock) */
    uint8_t hash[32];             /* hash of the block at head[LATEST], if has_hash */
    uint8_t has_hash;
} policy_chainview_ep_t;

typedef struct policy_chainview_slot {
    uint64_t height;
    uint8_t hash[32];
    uint8_t used;
    uint8_t linked;               /* vouched for: on the run linked parent to child up to the tip
                                     (a slot below a fork of unknown depth, or below heights that
                                     went by unseen, is kept to tell a reorg's depth, not given out) */
} policy_chainview_slot_t;

typedef struct policy_chainview {
    uint32_t nendpoints;
    policy_chainview_ep_t ep[POLICY_CHAINVIEW_MAX_ENDPOINTS];
    uint64_t floor[POLICY_HEAD_KIND_COUNT]; /* highest head served to a client, per kind */
    uint64_t ring_top;            /* highest height in the ring (0: empty) */
    policy_chainview_slot_t ring[POLICY_CHAINVIEW_RING]; /* at height % POLICY_CHAINVIEW_RING */
} policy_chainview_t;

/* One piece of evidence about an endpoint. */
typedef struct policy_chainview_obs {
    policy_head_kind_t kind;
    uint64_t height;
    uint8_t is_head;              /* 1: the endpoint's head is this (a probe, its eth_blockNumber);
                                     0: it has at least this block (a block in an answer) */
    const uint8_t *hash;          /* LATEST only: the block's hash (32 bytes), or NULL */
    const uint8_t *parent;        /* LATEST only: its parentHash, or NULL */
} policy_chainview_obs_t;

typedef struct policy_chainview_change {
    uint32_t reorg_depth;         /* > 0: heights the ring held were replaced, this many */
    uint64_t reorg_height;        /* ... the lowest of them */
    uint8_t forked;               /* the endpoint, behind the tip, holds another hash than the ring:
                                     it is on a branch the tip left (the ring is not changed) */
    uint8_t head_moved;           /* the endpoint's head of this kind changed */
} policy_chainview_change_t;

/* An empty view of nendpoints (at most POLICY_CHAINVIEW_MAX_ENDPOINTS). */
void policy_chainview_init(policy_chainview_t *v, uint32_t nendpoints);

/* Records obs about endpoint ep (out of range: ignored, *out zeroed).
 * is_head sets the head (it may go down: a load-balanced provider's nodes
 * differ, a node resyncs); evidence only raises it. An endpoint whose head
 * is at or above the ring's top speaks for the chain: a hash of its at a
 * height the ring holds that differs from the ring's, or a parent that is
 * not the ring's hash one height below, is a reorg of ring_top - h + 1
 * heights, and its hashes replace the ring's. The depth is what the ring can
 * tell: the tip's parent shows one height; a deeper fork shows as a further,
 * deeper reorg when older heights are read from an endpoint at the tip. An
 * endpoint behind the tip whose hash differs is only marked `forked` (a
 * lagging node on a branch the tip left must not flip the ring back). */
void policy_chainview_observe(policy_chainview_t *v, uint32_t ep, const policy_chainview_obs_t *obs, uint64_t now_ms,
                              policy_chainview_change_t *out);

/* The highest head of this kind among the endpoints in mask; 0 if none known. */
uint64_t policy_chainview_head(const policy_chainview_t *v, policy_head_kind_t kind, uint64_t mask);

/* The head to answer eth_blockNumber (getSlot at a commitment) with, given
 * the value the endpoint that took the call answered (0: none, or one the
 * caller does not trust): the higher of it and the usable endpoints' head,
 * which becomes the floor. Whoever answered (a first attempt, a hedge, a
 * failover), the client never gets less than the floor while the usable
 * endpoints' head is within `hold` of it: the floor is served then (the
 * endpoint that set it may have died or been hedged away; a block or two is
 * a moment away for the others, and the floor may come from another worker
 * or host). Only when every usable endpoint is further below than hold is
 * the value answered as it is (a head no usable endpoint comes near would
 * send the client to a block nobody serves): *regressed is set and the
 * floor stays. The caller keeps unconfirmed heads out of `usable` and out of
 * `answered` (policy_chainview_unconfirmed), so a lie never sets the floor. */
uint64_t policy_chainview_serve_head(policy_chainview_t *v, policy_head_kind_t kind, uint64_t answered,
                                     uint64_t usable, uint64_t hold, int *regressed);

/* The head of this kind the endpoints of mask agree on: with two or more
 * reporting one, the second-highest (a height another endpoint has reached:
 * one endpoint's word is not the chain's); with one, its own; 0 if none.
 * An endpoint's safe or finalized counts at most as high as its own latest
 * head (a finalized above the node's own head is no fact). What safe and
 * finalized mean for the network (tags, the response cache's keep rule). */
uint64_t policy_chainview_agreed(const policy_chainview_t *v, policy_head_kind_t kind, uint64_t mask);

/* The network's finalized height (Solana: the finalized slot) for what is
 * kept as final: policy_chainview_agreed's, and at least margin below the
 * agreed latest head, so that a single endpoint reporting finalized = head
 * (a dev node, a misconfigured one, a liar) never makes the tip final. */
uint64_t policy_chainview_final(const policy_chainview_t *v, uint64_t mask, uint64_t margin);

/* 1 if at least two endpoints of mask report a finalized height at or above
 * n: a height final on more than one endpoint's word (what may go to a
 * tier other hosts read). */
int policy_chainview_final_confirmed(const policy_chainview_t *v, uint64_t mask, uint64_t n);

/* A lead nobody confirms. The endpoint of mask whose head of this kind is
 * more than max_lag ahead of every other endpoint of mask that reported one,
 * when at least three report (two can each be the one that is wrong: a
 * laggard and a liar look alike; then only max_head_lead tells,
 * policy_chainview_implausible): its bit, and *lead (may be NULL) by how
 * much it leads the next. Its head is not the network's, it takes no
 * `latest` read nor a write while another endpoint is there, and its
 * answers set no floor. */
uint64_t policy_chainview_unconfirmed(const policy_chainview_t *v, policy_head_kind_t kind, uint64_t max_lag,
                                      uint64_t mask, uint64_t *lead);

/* A head nobody confirms. The endpoint of mask whose head of this kind is
 * more than max_lead ahead of every other endpoint of mask that reported
 * one (a node on a fork or another chain, a broken one, a liar): its bit,
 * and *lead (may be NULL) by how much it leads the next. It is trusted again
 * once another endpoint comes within max_lead of it (confirms it). With
 * fewer than two endpoints of mask known there is nothing to compare: 0,
 * the single endpoint is believed. Two endpoints far ahead together confirm
 * each other. The caller leaves the bit out of the masks it routes and
 * serves heads with (policy_chainview_head, serve_head, latest_ok). */
uint64_t policy_chainview_implausible(const policy_chainview_t *v, policy_head_kind_t kind, uint64_t max_lead,
                                      uint64_t mask, uint64_t *lead);

/* 1 if ep may take a `latest` read (or one naming no block): its head of
 * this kind is within max_lag of the usable endpoints' head, or unknown (no
 * evidence is no reason to leave it out). */
int policy_chainview_latest_ok(const policy_chainview_t *v, uint32_t ep, policy_head_kind_t kind, uint32_t max_lag,
                               uint64_t usable);

typedef enum policy_chainview_has {
    POLICY_HAS_UNKNOWN,           /* no head observed */
    POLICY_HAS_YES,               /* its head reached n */
    POLICY_HAS_NO,                /* its last head is below n */
} policy_chainview_has_t;

/* Whether ep has block (or slot) n, by its latest head. */
policy_chainview_has_t policy_chainview_has_block(const policy_chainview_t *v, uint32_t ep, uint64_t n);

/* 1 if a call naming block n may go to ep: ep is not known to be below n, or
 * no usable endpoint is known to have n (then every one is worth a try). */
int policy_chainview_block_ok(const policy_chainview_t *v, uint32_t ep, uint64_t n, uint64_t usable);

/* 1 if a null result (or "header not found") for block n from ep means ep is
 * behind, so the answer is transient: an endpoint in `among` has n (the block
 * exists). 0: nobody has seen n, and null is the truth. */
int policy_chainview_null_is_behind(const policy_chainview_t *v, uint32_t ep, uint64_t n, uint64_t among);

/* The number a tag stands for now, among the usable endpoints: latest and
 * pending the head, safe and finalized their heads, earliest 0.
 * SL_ERR_NOT_FOUND if no usable endpoint has reported that head yet. */
SL_MUST_CHECK sl_err_t policy_chainview_resolve(const policy_chainview_t *v, policy_block_tag_t tag, uint64_t usable,
                                                uint64_t *n);

/* What the ring holds at height n, vouched for or not (what a new hash is
 * compared with to tell a reorg and its depth), or NULL. */
const uint8_t *policy_chainview_held_at(const policy_chainview_t *v, uint64_t n);

/* The hash the ring vouches for at height n (on the linked run up to the
 * tip), or NULL: what a reader may key by (the response cache). */
const uint8_t *policy_chainview_hash_at(const policy_chainview_t *v, uint64_t n);

/* The head kind a Solana commitment reads (DEFAULT is finalized, as the node's). */
policy_head_kind_t policy_chainview_kind_of(policy_commitment_t c);

#endif
