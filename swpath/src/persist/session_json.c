/* SPDX-License-Identifier: Apache-2.0 */
#include "persist/session_json.h"
#include "util/text.h"

void
sp_json_endpoint(struct sp_buf *b, const char *name, sp_be32_t addr,
		 sp_be16_t port)
{
	char ip[16];

	sp_buf_printf(b, "\"%s\": \"%s:%u\"", name,
		      sp_ip_str(be32toh(addr), ip), be16toh(port));
}

void
sp_json_session(struct sp_buf *b, const struct sp_session *s, unsigned worker)
{
	sp_buf_printf(b, "\"id\": %u, \"worker\": %u, \"protocol\": %u, "
			 "\"origin\": \"%s\", \"rule\": %u, ",
		      s->id, worker, s->proto, sp_origin_name(s->origin),
		      s->rule_id);
	sp_json_endpoint(b, "internal", s->int_addr, s->int_port);
	sp_buf_printf(b, ", ");
	sp_json_endpoint(b, "external", s->ext_addr, s->ext_port);
	sp_buf_printf(b, ", ");
	sp_json_endpoint(b, "remote", s->rem_addr, s->rem_port);
	if (s->proto == IPPROTO_TCP)
		sp_buf_printf(b, ", \"tcp_state\": \"%s\"",
			      sp_tcp_phase_name(sp_session_tcp_phase(s)));
}
