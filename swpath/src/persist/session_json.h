/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A session in JSON, as the controller's status socket lists it and the
 * session stream announces it: one form for both, so one reader
 * (quicknat.controller.status, quicknat/offload/stream.py) takes both.
 */
#ifndef SP_SESSION_JSON_H
#define SP_SESSION_JSON_H

#include <stdint.h>

#include "core/session.h"
#include "util/buf.h"

/* "name": "a.b.c.d:port" (network order in). */
void sp_json_endpoint(struct sp_buf *b, const char *name, sp_be32_t addr,
		      sp_be16_t port);

/* The fields every session object has: "id", "worker", "protocol",
 * "origin", "rule", the three endpoints and, for TCP, "tcp_state"; no
 * braces (the caller adds its own fields around them). */
void sp_json_session(struct sp_buf *b, const struct sp_session *s,
		     unsigned worker);

#endif /* SP_SESSION_JSON_H */
