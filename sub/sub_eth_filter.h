/* sub/sub_eth_filter.h: a logs subscription's filter, read back as bytes
 * (sub_eth_logs_params, in sub_int.h, writes it as the subscription's key). */
#ifndef SUB_ETH_FILTER_H
#define SUB_ETH_FILTER_H

#include "policy/logfilter.h"

/* The normalised filter (a logs key: ,"address":…,"topics":…, checked by
 * sub_eth_logs_params) as bytes, for the shared per-block fetch. */
void sub_eth_filter_bytes(policy_logfilter_t *f, const char *key);

#endif
