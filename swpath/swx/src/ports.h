/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The switch's ports: P4 port N of the program is the pipeline's port N
 * (PNA's PortId_t is the SWX port index), so the I/O spec lists input ports
 * 0 to the highest and output ports 0 to SWX_MAX_PORTS - 1, every number the
 * program can send to, in order. Port 0 is the CPU port (p4src's PNA target.p4):
 * two rings per pipeline between it and the P4Runtime server's packet I/O.
 * Every other port is a DPDK ethdev (af_packet, af_xdp, pcap, ring, null:
 * whatever the EAL's --vdev made), one RX and one TX queue per pipeline
 * thread; a port number no device has is a sink that drops and an empty
 * ring that never delivers (also up to a power of 2 of input ports, which
 * the pipeline wants).
 */
#ifndef SWX_PORTS_H
#define SWX_PORTS_H

#include <stddef.h>
#include <stdint.h>

#define SWX_CPU_PORT 0
#define SWX_MAX_PORTS 64

struct rte_mempool;
struct rte_ring;

struct swx_port {
	uint32_t number;	/* the P4 port */
	char device[64];	/* the ethdev's name */
	uint16_t port_id;	/* the ethdev */
};

struct swx_ports {
	struct swx_port ports[SWX_MAX_PORTS];
	unsigned n_ports;
	unsigned n_queues;	/* = pipeline threads */
	struct rte_mempool *pool;
	/* per pipeline: what the pipeline sends to the CPU port (its socket,
	 * the server's socket), and what the server sends in through it */
	int to_cpu[8][2];
	struct rte_ring *from_cpu[8];
	struct rte_ring *none[8];	/* stands for a port number no device has */
};

/* "N=DEVICE": adds P4 port N on the ethdev named DEVICE. 0, or -1 with a line. */
int swx_ports_parse(struct swx_ports *ports, const char *arg, char *err, size_t errlen);

/* Configures and starts the ethdevs with n_queues queues each, the mbuf pool
 * and the CPU rings. 0, or -1 with a line. */
int swx_ports_start(struct swx_ports *ports, unsigned n_queues, unsigned pool_size,
		    char *err, size_t errlen);
void swx_ports_stop(struct swx_ports *ports);

/* Pipeline `queue`'s I/O spec (caller frees). */
char *swx_ports_iospec(const struct swx_ports *ports, unsigned queue);

#endif /* SWX_PORTS_H */
