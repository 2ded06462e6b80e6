# SPDX-License-Identifier: Apache-2.0
# The data path's sources but main.c: the application, the test programs, the
# benchmark and the fuzz target all link these (one list, included by each).
CORE_SRCS := app.c allocator.c cmd.c control.c ctl_socket.c events.c \
	event_export.c fastpath.c format.c frag.c hash_index.c icmp_gen.c in2out.c l2.c nat.c \
	log.c memory.c out2in.c peer.c rss.c session_store.c session_stream.c setup.c telemetry.c vlan.c worker.c
