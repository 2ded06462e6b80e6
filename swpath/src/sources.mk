# SPDX-License-Identifier: Apache-2.0
# The data path's sources but control/main.c, by layer (docs/swpath.md,
# "Source tour"): the application, the test programs, the benchmark and the
# fuzz target all link these (one list, included by each).
UTIL_SRCS := util/buf.c util/log.c util/text.c
NAT_CORE_SRCS := core/adopt.c core/allocator.c core/counters.c \
	core/hash_index.c core/lifecycle.c core/mapping.c core/nat.c \
	core/table.c
DATAPLANE_SRCS := dataplane/dispatch.c dataplane/fastpath.c dataplane/frag.c \
	dataplane/icmp_gen.c dataplane/in2out.c dataplane/ip_fragment.c \
	dataplane/l2.c \
	dataplane/out2in.c dataplane/peer.c dataplane/sp.c dataplane/vlan.c \
	dataplane/worker.c
PERSIST_SRCS := persist/event_export.c persist/events.c \
	persist/session_json.c persist/session_store.c \
	persist/session_stream.c persist/sink.c
CONTROL_SRCS := control/cmd_check.c control/cmd_file.c control/cmd_format.c \
	control/cmd_parse.c \
	control/cmd_table.c control/control.c control/ctl_socket.c \
	control/eal.c control/format.c control/learn_quiet.c control/memory.c control/peers.c \
	control/routes.c control/routing.c control/rules.c control/publish.c \
	control/setup.c \
	control/telemetry.c
SP_SRCS := $(UTIL_SRCS) $(NAT_CORE_SRCS) $(DATAPLANE_SRCS) $(PERSIST_SRCS) \
	$(CONTROL_SRCS)
