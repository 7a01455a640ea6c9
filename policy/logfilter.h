/* policy/logfilter.h: does one log match an eth_subscribe("logs") /
 * eth_getLogs filter's address and topics, by geth's rules exactly.
 *
 * Used by sub/sub_logshare.c: once a network has many distinct logs
 * filters, one unfiltered eth_getLogs per block serves them all and each
 * filter is applied here, locally; a log must match exactly when the
 * upstream, asked with the filter, would have answered it.
 *
 * geth's rules (eth/filters: the filter's JSON, then filterLogs):
 * - address: none, null or [] matches any; else the log's address is one of them;
 * - topics: a list of positions; a filter with more positions than the log
 *   has topics never matches it (even when the extra positions are null);
 *   position i is null, [] or an array holding a null: any topic there;
 *   else the log's topic i is one of the position's (OR).
 * The filter's values are bytes (policy_logfilter_hex decodes "0x" hex),
 * each set sorted and without duplicates (policy_logfilter_set_sort): a log
 * is matched by binary search, so one of many filters with many addresses
 * costs a few comparisons per log, not one per address.
 * Pure: the caller owns the filter's arrays; no I/O. */
#ifndef POLICY_LOGFILTER_H
#define POLICY_LOGFILTER_H

#include <stddef.h>
#include <stdint.h>

#define POLICY_LOGFILTER_POSITIONS 4 /* a log has at most 4 topics (LOG0..LOG4) */
/* The caps a filter is refused past (-32602), as providers' are (about
 * 1,000 addresses, 4 positions of 100): what one filter may make the
 * worker hold and sort. */
#define POLICY_LOGFILTER_MAX_ADDRESSES 1000
#define POLICY_LOGFILTER_MAX_ALTERNATIVES 100 /* topics ORed at one position */

typedef struct policy_logfilter_pos {
    const uint8_t (*v)[32];       /* the topics ORed at this position */
    size_t n;                     /* 0: any topic (null, [] or an array with a null) */
} policy_logfilter_pos_t;

typedef struct policy_logfilter {
    const uint8_t (*addr)[20];
    size_t naddr;                 /* 0: any address */
    size_t npos;                  /* positions given, at most POLICY_LOGFILTER_POSITIONS */
    policy_logfilter_pos_t pos[POLICY_LOGFILTER_POSITIONS];
} policy_logfilter_t;

/* 1 when the log (its address, its ntopics topics) matches f, whose sets
 * are sorted and unique (else a member may be missed). */
int policy_logfilter_match(const policy_logfilter_t *f, const uint8_t addr[20], const uint8_t (*topics)[32],
                           size_t ntopics);

/* Decodes s[0..len), "0x" and exactly 2*n hex digits (either case), into
 * out[0..n); 1 when well formed, else 0 (out unspecified). */
int policy_logfilter_hex(const char *s, size_t len, uint8_t *out, size_t n);

/* Sorts the n values of size bytes (20, an address, or 32, a topic) at v
 * (memcmp order) and drops duplicates; returns how many are left, at v[0..). */
size_t policy_logfilter_set_sort(void *v, size_t size, size_t n);

#endif
