/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "ports.h"

#define SWX_RX_DESC 1024
#define SWX_TX_DESC 1024
#define SWX_CPU_RING 4096
/* Bursts between the pipeline and its ports (the I/O spec's bsz). */
#define SWX_BURST 32

static int
fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

int
swx_ports_parse(struct swx_ports *ports, const char *arg, char *err, size_t errlen)
{
	const char *eq = strchr(arg, '=');
	char *end;
	unsigned long n;

	if (eq == NULL || eq == arg || eq[1] == '\0')
		return fail(err, errlen, "--port %s: expected N=DEVICE (a P4 port and an ethdev's name)",
			    arg);
	n = strtoul(arg, &end, 10);
	if (end != eq || n == SWX_CPU_PORT || n >= SWX_MAX_PORTS)
		return fail(err, errlen, "--port %s: the port is 1..%d (0 is the CPU port)", arg,
			    SWX_MAX_PORTS - 1);
	for (unsigned i = 0; i < ports->n_ports; i++)
		if (ports->ports[i].number == n)
			return fail(err, errlen, "--port %s: port %lu given twice", arg, n);
	if (ports->n_ports == SWX_MAX_PORTS)
		return fail(err, errlen, "--port %s: too many ports", arg);
	if (strlen(eq + 1) >= sizeof(ports->ports[0].device))
		return fail(err, errlen, "--port %s: device name too long", arg);
	ports->ports[ports->n_ports].number = (uint32_t)n;
	snprintf(ports->ports[ports->n_ports].device, sizeof(ports->ports[0].device), "%s",
		 eq + 1);
	ports->n_ports++;
	return 0;
}

static int
start_ethdev(struct swx_ports *ports, struct swx_port *p, char *err, size_t errlen)
{
	struct rte_eth_conf conf = { 0 };
	struct rte_eth_dev_info info;
	uint16_t nq = (uint16_t)ports->n_queues;
	int status;

	if (rte_eth_dev_get_port_by_name(p->device, &p->port_id) != 0)
		return fail(err, errlen, "port %u: no ethdev %s (give it with the EAL's --vdev)",
			    p->number, p->device);
	if (rte_eth_dev_info_get(p->port_id, &info) != 0)
		return fail(err, errlen, "port %u: %s: no device info", p->number, p->device);
	if (info.max_rx_queues < nq || info.max_tx_queues < nq)
		return fail(err, errlen,
			    "port %u: %s has %u RX / %u TX queues, %u pipeline threads need as many "
			    "(af_packet: qpairs=%u)",
			    p->number, p->device, info.max_rx_queues, info.max_tx_queues, nq, nq);
	status = rte_eth_dev_configure(p->port_id, nq, nq, &conf);
	for (uint16_t q = 0; status == 0 && q < nq; q++) {
		status = rte_eth_rx_queue_setup(p->port_id, q, SWX_RX_DESC,
						rte_eth_dev_socket_id(p->port_id), NULL, ports->pool);
		if (status == 0)
			status = rte_eth_tx_queue_setup(p->port_id, q, SWX_TX_DESC,
							rte_eth_dev_socket_id(p->port_id), NULL);
	}
	if (status == 0)
		status = rte_eth_dev_start(p->port_id);
	if (status != 0)
		return fail(err, errlen, "port %u: %s does not start: %s", p->number, p->device,
			    rte_strerror(-status));
	/* A NAT's ports take every frame: the switch routes by its own MACs. */
	rte_eth_promiscuous_enable(p->port_id);
	return 0;
}

/* A datagram pair: [0] the pipeline's end (non-blocking, as its fd port
 * wants), [1] the server's. Buffers for a burst of punts. */
static int
cpu_socket(int fds[2])
{
	int size = 4 << 20;

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, fds) < 0)
		return -1;
	setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	setsockopt(fds[1], SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	return fcntl(fds[0], F_SETFL, O_NONBLOCK);
}

int
swx_ports_start(struct swx_ports *ports, unsigned n_queues, unsigned pool_size, char *err,
		size_t errlen)
{
	if (n_queues == 0 || n_queues > 8)
		return fail(err, errlen, "pipeline threads: 1..8");
	ports->n_queues = n_queues;
	ports->pool = rte_pktmbuf_pool_create("swx_pool", pool_size, 256, 0,
					      RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	if (ports->pool == NULL)
		return fail(err, errlen, "no memory for %u packet buffers: give the EAL more (-m)",
			    pool_size);
	for (unsigned q = 0; q < n_queues; q++) {
		char name[32];

		if (cpu_socket(ports->to_cpu[q]) < 0)
			return fail(err, errlen, "the CPU port's socket: %s", strerror(errno));
		snprintf(name, sizeof(name), "swx_from_cpu_%u", q);
		ports->from_cpu[q] = rte_ring_create(name, SWX_CPU_RING, rte_socket_id(),
						     RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "swx_none_%u", q);
		ports->none[q] = rte_ring_create(name, 64, rte_socket_id(),
						 RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (ports->from_cpu[q] == NULL || ports->none[q] == NULL)
			return fail(err, errlen, "no memory for the CPU port's rings");
	}
	for (unsigned i = 0; i < ports->n_ports; i++)
		if (start_ethdev(ports, &ports->ports[i], err, errlen) < 0)
			return -1;
	return 0;
}

void
swx_ports_stop(struct swx_ports *ports)
{
	for (unsigned i = 0; i < ports->n_ports; i++) {
		rte_eth_dev_stop(ports->ports[i].port_id);
		rte_eth_dev_close(ports->ports[i].port_id);
	}
	for (unsigned q = 0; q < ports->n_queues; q++) {
		close(ports->to_cpu[q][0]);
		close(ports->to_cpu[q][1]);
	}
}

static const struct swx_port *
port_numbered(const struct swx_ports *ports, uint32_t n)
{
	for (unsigned i = 0; i < ports->n_ports; i++)
		if (ports->ports[i].number == n)
			return &ports->ports[i];
	return NULL;
}

char *
swx_ports_iospec(const struct swx_ports *ports, unsigned queue)
{
	uint32_t highest = SWX_CPU_PORT;
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	if (f == NULL)
		return NULL;
	for (unsigned i = 0; i < ports->n_ports; i++)
		if (ports->ports[i].number > highest)
			highest = ports->ports[i].number;
	/* the CPU port: bursts of one, so a packet-in is never held back */
	fprintf(f, "port in 0 ring swx_from_cpu_%u bsz 1\n", queue);
	/* input ports up to a power of 2: the pipeline polls them in turn
	 * with a mask (rte_swx_pipeline.c checks the count is one) */
	for (uint32_t n = 1; n < rte_align32pow2(highest + 1); n++) {
		const struct swx_port *p = port_numbered(ports, n);

		if (p != NULL)
			fprintf(f, "port in %u ethdev %s rxq %u bsz %d\n", n, p->device, queue,
				SWX_BURST);
		else /* a number no device has: an empty ring, never delivers */
			fprintf(f, "port in %u ring swx_none_%u bsz 1\n", n, queue);
	}
	fprintf(f, "port out 0 fd %d bsz 1\n", ports->to_cpu[queue][0]);
	/* every port number the program can send to (pna/pipeline.p4's
	 * SEND_TO_PORT: 0 to SWX_MAX_PORTS - 1, higher ones dropped): SWX's
	 * tx indexes its output ports by the number unchecked, so a route or
	 * packet-out to a number past the last port listed made the pipeline
	 * thread call through whatever memory followed, and the switch died */
	for (uint32_t n = 1; n < SWX_MAX_PORTS; n++) {
		const struct swx_port *p = port_numbered(ports, n);

		if (p != NULL)
			fprintf(f, "port out %u ethdev %s txq %u bsz %d\n", n, p->device, queue,
				SWX_BURST);
		else
			fprintf(f, "port out %u sink file none\n", n);
	}
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
