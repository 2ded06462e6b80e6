/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Learn mode's quiet period (learn_quiet.h).
 */
#include "control/learn_quiet.h"

#include "dataplane/sp.h"
#include "util/log.h"

/* The longest lease configured (ms), 0 if none. */
static uint32_t
longest_lease_ms(void)
{
	uint32_t s = 0;

	for (unsigned c = 0; c < SP_LEARN_CLASSES; c++)
		if (sp.class_s[c] > s)
			s = sp.class_s[c];
	return s * 1000u;
}

bool
sp_learn_quiet_begin(uint32_t now)
{
	uint32_t ms = longest_lease_ms();

	sp.learn_quiet = false;
	if (!sp.learn || ms == 0 || sp.state_whole)
		return false;
	sp.learn_quiet = true;
	sp.quiet_until_ms = now + ms;
	sp_log("info", "learn mode: started without every session and port hold of a previous run; no new port handed out for %u s (the longest lease the switch may still hold one under)",
	       ms / 1000u);
	return true;
}

bool
sp_learn_quiet_end(void)
{
	if (!sp.learn_quiet)
		return false;
	sp.learn_quiet = false;
	sp_log("info", "learn mode: the switch's learned tables are new; quiet period over");
	return true;
}

bool
sp_learn_quiet_over(uint32_t now)
{
	if (!sp.learn_quiet || (int32_t)(now - sp.quiet_until_ms) < 0)
		return false;
	sp.learn_quiet = false;
	sp_log("info", "learn mode: quiet period over; ports are handed out");
	return true;
}
