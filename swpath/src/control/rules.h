/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The NAT's rules and the pools they take ports from: `pool`, `rule add`,
 * `rule del`. Pools are made here (one per `pool`, and one per SNAT `to`
 * address, shared by its rules), published to the workers one by one, and
 * live until exit; rules go into QNS (lock-free readers; what a rule does is
 * packed into its user word, core/rule.h). A change at run time publishes a
 * new run-time snapshot: the NAT-owned ranges follow the pools and DNAT
 * rules.
 */
#ifndef SP_RULES_H
#define SP_RULES_H

#include <stddef.h>

#include "control/cmd.h"
#include "util/buf.h"

int sp_apply_pool(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		  size_t errlen);
int sp_apply_rule_add(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		      size_t errlen);
int sp_apply_rule_del(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		      size_t errlen);

#endif /* SP_RULES_H */
