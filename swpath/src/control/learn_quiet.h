/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Learn mode's quiet period (docs/swpath.md, "Learn mode"). The switch's
 * learned entries are fixed leases it does not give back (core/learn.h):
 * after a restart it may still translate with ports the previous run
 * handed out, for up to the longest lease. An instance that took every
 * session of its predecessor over (--state, nothing discarded) holds those
 * ports itself and is not quiet; any other instance in learn mode hands out
 * no port for the longest configured lease after its start: a new flow that
 * needs one is refused and counted learn_quiet_refused, rather than given a
 * port the switch may still translate for another flow (RFC 4787 REQ-3,
 * RFC 6888: no two flows on one external endpoint). Sessions that need no
 * new port (a mapping's further sessions, DNAT) open as ever.
 *
 * The control thread turns it on and off and publishes the runtime
 * snapshot each time (core/runtime.h, learn_quiet): the workers compare no
 * clock, so it cannot come back when their 32-bit clock wraps.
 */
#ifndef SP_LEARN_QUIET_H
#define SP_LEARN_QUIET_H

#include <stdbool.h>
#include <stdint.h>

/* At start (now: sp_now_ms), after --state was read: whether the quiet
 * period begins (learn mode, some lease configured, and not every session
 * of a predecessor taken over: sp.state_whole). */
bool sp_learn_quiet_begin(uint32_t now);

/* Each control round: whether the quiet period has just ended at now (the
 * caller then publishes the runtime snapshot). */
bool sp_learn_quiet_over(uint32_t now);

/* The switch holds no lease of ours (`offload fresh`: its learner tables
 * are new): whether a quiet period was on and is now over. */
bool sp_learn_quiet_end(void);

#endif /* SP_LEARN_QUIET_H */
