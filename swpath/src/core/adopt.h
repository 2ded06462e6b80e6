/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sessions this process did not open: a predecessor's, taken over from the
 * state file (persist/session_store.h), and the switch's, handed back in
 * offload mode; and the offload manager's word on the sessions it holds
 * (docs/offload.md). None of it is on the packet path.
 */
#ifndef SP_ADOPT_H
#define SP_ADOPT_H

#include <stdint.h>

#include "core/table.h"

/*
 * Takes over a session a predecessor process left: rec as it was stored,
 * its times already in this process's clock. Valid only if it still is
 * under this configuration: its rule (SNAT: the internal endpoint's pool
 * holds its external endpoint; DNAT: the rule still sends its external
 * endpoint to its internal one), a port this worker owns and nobody holds,
 * no other session with one of its keys. Re-creates its mapping (with the
 * port claimed, sp_pool_claim), the host's count and the port binding,
 * without mapping events (the mapping did not end). Returns SP_ADOPT_OK with
 * *sidx, or why not. Only before the worker runs (the control thread's).
 */
enum sp_adopt {
	SP_ADOPT_OK = 0,
	SP_ADOPT_INVALID,       /* not a session this version writes */
	SP_ADOPT_NO_RULE,       /* no rule gives it now */
	SP_ADOPT_PORT,          /* its port is not in the pool, or not ours */
	SP_ADOPT_CONFLICT,      /* a key or port another adopted session has */
	SP_ADOPT_FULL,          /* the table is full */
	SP_ADOPT_MAX
};

extern const char *const sp_adopt_reasons[SP_ADOPT_MAX];

enum sp_adopt sp_nat_adopt(struct sp_nat *nat, const struct sp_runtime *rt,
			   const struct sp_session *rec, uint32_t *sidx);

/*
 * Takes over a port hold a predecessor left (learn mode: a session the
 * switch learned, deleted by an operator, lifecycle.c): the external
 * endpoint (proto, ext_addr, ext_port; host order) is handed out to no flow
 * before end (this process's clock). On its mapping when an adopted session
 * keeps one, else on the port in its pool. Returns SP_ADOPT_OK, or
 * SP_ADOPT_PORT when no pool gives this worker the port (nobody here hands
 * it out). Only before the worker runs, after its sessions were adopted.
 */
enum sp_adopt sp_nat_adopt_hold(struct sp_nat *nat, uint8_t proto,
				uint32_t ext_addr, uint16_t ext_port,
				uint32_t end, uint32_t now);

/*
 * The offload manager's word on one session (`session offload|idle|onload
 * ID PROTO INTERNAL REMOTE`): named by its id and found by its
 * inside-to-outside key. `session adopt PROTO INTERNAL EXTERNAL REMOTE
 * ORIGIN [PHASE]`: a session the switch holds that this process does not
 * know, handed back.
 */
enum sp_session_action {
	SP_SESSION_CMD_OFFLOAD = 1, /* the switch holds it: age it by the switch */
	SP_SESSION_CMD_IDLE = 2,    /* the switch reported it idle */
	SP_SESSION_CMD_ONLOAD = 3,  /* the switch no longer holds it */
	SP_SESSION_CMD_ADOPT = 4,   /* take it over (sp_nat_handback) */
};

struct sp_session_cmd {
	uint8_t action;         /* enum sp_session_action */
	uint8_t proto;
	uint16_t int_port;      /* ICMP: the identifier */
	uint16_t rem_port;
	uint16_t ext_port;      /* adopt */
	uint32_t id;            /* not adopt: the process gives it one */
	uint32_t int_addr;      /* host order */
	uint32_t rem_addr;
	uint32_t ext_addr;      /* adopt */
	uint8_t origin;         /* adopt: SP_ORIGIN_* */
	uint8_t tcp_phase;      /* adopt: enum sp_tcp_phase (TCP: opening */
	uint8_t has_phase;      /* unless given) */
	uint8_t pad;
};

/*
 * Applies one of those to this worker's session. A session that is gone,
 * or another one now with the same key, is counted offload_unknown and left
 * alone. `adopt` is sp_nat_handback's.
 */
void sp_nat_session_cmd(struct sp_nat *nat, const struct sp_runtime *rt,
			const struct sp_session_cmd *c, uint32_t now);

/*
 * A session the switch holds and this process does not know, handed back
 * by the offload manager after the instance lost its sessions (it started
 * without its --state file): taken over as sp_nat_adopt takes a
 * predecessor's (its port claimed, never handed out again), with a new id,
 * offloaded, and announced on the stream (`opened`), which tells the
 * manager its id. Refused (counted handback_refused) where sp_nat_adopt
 * would refuse it; the manager then deletes its entries.
 */
void sp_nat_handback(struct sp_nat *nat, const struct sp_runtime *rt,
		     const struct sp_session_cmd *c, uint32_t now);

#endif /* SP_ADOPT_H */
