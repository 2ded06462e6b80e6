# SPDX-License-Identifier: Apache-2.0
# The data path's sources but control/main.c, by layer (docs/swpath.md, "Source
# tour"): the application, the test programs, the benchmark and the fuzz
# target all link these (one list, included by each).
UTIL_SRCS := util/log.c
NAT_CORE_SRCS := core/allocator.c core/hash_index.c core/nat.c core/rss.c
DATAPLANE_SRCS := dataplane/fastpath.c dataplane/frag.c dataplane/icmp_gen.c \
	dataplane/in2out.c dataplane/l2.c dataplane/out2in.c dataplane/peer.c \
	dataplane/vlan.c dataplane/worker.c
PERSIST_SRCS := persist/events.c persist/event_export.c persist/session_store.c \
	persist/session_stream.c
CONTROL_SRCS := control/app.c control/cmd.c control/control.c \
	control/ctl_socket.c control/format.c control/memory.c control/setup.c \
	control/telemetry.c
SP_SRCS := $(UTIL_SRCS) $(NAT_CORE_SRCS) $(DATAPLANE_SRCS) $(PERSIST_SRCS) \
	$(CONTROL_SRCS)
