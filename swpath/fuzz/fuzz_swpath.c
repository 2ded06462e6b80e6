/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness over the swpath fast path: the input is one Ethernet
 * frame that arrives on the inside or the outside port, pushed through the
 * real sp_process_burst() (parse, bulk flow lookup, miss handling with QNS
 * and port allocation, rewrite with checksum updates, ARP, ICMP errors,
 * hairpinning) of worker 0, with a small fixed configuration.
 *
 * Input: byte 0 chooses the port and the burst (below), the rest is the
 * frame. The same frame is sent `copies` times in one burst so that a miss
 * that opens a session is followed by packets of the same flow that were
 * looked up before the session existed. The worker's clock advances with
 * byte 0 too, so sessions age out and ports are freed and reused.
 */
#include <stdint.h>
#include <string.h>

#include <rte_mbuf.h>

#include "core/lifecycle.h"
#include "dataplane/fastpath.h"
#include "dataplane/fwd.h"
#include "sp_harness.h"

#define MAC_IN "02:00:00:00:00:01"
#define MAC_OUT "02:00:00:00:00:02"

static const char commands[] =
	"interface in0 zone inside port 0 address 10.0.0.1/24 mac " MAC_IN "\n"
	/* a small MTU: frames from the fuzzer go out as fragments too */
	"interface out0 zone outside port 1 address 198.51.100.1/24 mac " MAC_OUT " mtu 576\n"
	"route 0.0.0.0/0 dev out0 via 198.51.100.254\n"
	"neighbor 198.51.100.254 mac 02:00:00:00:00:fe dev out0\n"
	"neighbor 10.0.0.2 mac 02:00:00:00:10:02 dev in0\n"
	"neighbor 10.0.0.3 mac 02:00:00:00:10:03 dev in0\n"
	"pool public ports 1024-65535 addresses 203.0.113.0/30\n"
	"pool tiny ports 40000-40001 addresses 203.0.113.9\n"
	"rule add id 1 type snat prefix 10.0.0.0/25 protocol any pool public\n"
	"rule add id 2 type snat prefix 10.0.0.128/25 protocol udp pool tiny\n"
	"rule add id 4 type dnat prefix 203.0.113.11/32 port 443 protocol tcp to 10.0.0.5/32 to_port 8443\n"
	"rule add id 5 type dnat prefix 203.0.113.32/28 protocol any to 10.0.0.32/28\n"
	"filtering udp endpoint-independent tcp address-dependent icmp address-and-port-dependent\n"
	"limits ports_per_host 64 sessions_per_host 256\n";

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	if (sp_harness_init((*argv)[0], commands, 1, 1024, "256") < 0)
		abort();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_worker *w = sp.workers[0];
	const struct sp_runtime *rt = sp_runtime_get();
	struct rte_mbuf *pkts[4];
	unsigned outside, copies, n = 0;
	uint16_t iface;

	if (size < 1 || size > 1 + RTE_MBUF_DEFAULT_DATAROOM)
		return 0;
	outside = data[0] & 1;
	copies = 1 + ((data[0] >> 1) & 3);
	/* bits 3-7: 0-31 steps of 4 s; 8 s is far beyond a wheel slot */
	w->now += (uint32_t)(data[0] >> 3) * 4000u;
	iface = (uint16_t)outside;      /* in0 is interface 0, out0 is 1 */
	data++;
	size--;
	for (unsigned i = 0; i < copies; i++) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(sp.mbuf_pool);
		char *d;

		if (m == NULL)
			break;
		/* exact length: ASan sees a read past the frame's end */
		d = rte_pktmbuf_append(m, (uint16_t)size);
		if (d == NULL) {
			rte_pktmbuf_free(m);
			break;
		}
		memcpy(d, data, size);
		m->port = sp.ifaces[iface].port;
		*sp_meta(m) = 0;
		pkts[n++] = m;
	}
	if (n > 0)
		sp_process_burst(w, pkts, (uint16_t)n, iface, (int)outside, rt);
	while (rte_ring_sc_dequeue(w->in_ring, (void **)&pkts[0]) == 0)
		rte_pktmbuf_free(pkts[0]);      /* hand-offs: none with 1 worker */
	sp_tx_flush_all(w);
	sp_nat_age(&w->nat, rt, w->now, SP_AGE_BUDGET);
	sp_harness_control();
	return 0;
}
