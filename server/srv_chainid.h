/* server/srv_chainid.h: the chain identity of each network that configures
 * none (no chain_id, Solana no genesis_hash), learned at start from the
 * majority of its endpoints (policy/chainid.h) and kept in state, so the
 * workers use it as if configured and a restart with endpoints down still
 * knows it. Called by the master before the workers fork (srv_master.c) and
 * by `sluice --check --connect` (main.c). */
#ifndef SRV_CHAINID_H
#define SRV_CHAINID_H

#include <stdio.h>

#include "config/cfg.h"
#include "state/state.h"

/* Bounds the ask: the endpoints that have not answered by then say nothing. */
#define SRV_CHAINID_ASK_MS 3000

/* Asks every endpoint of the networks that need it and decides. 0: go on
 * (learned and kept in st, or nobody answered: the workers learn it later
 * from probes; an identity st keeps stands, or is re-learned when every
 * endpoint that answers now says another, with a chain_relearned event);
 * -1: refuse, the endpoints disagree with no majority and st keeps none,
 * and why (each endpoint's id and the id it gave, never a URL) is in
 * why[0..cap). report non-NULL (--check --connect): st (NULL: none) is only
 * read, and each decision printed to report. */
int srv_chainid_learn(const cfg_t *cfg, state_t *st, FILE *report, char *why, size_t cap);

#endif
