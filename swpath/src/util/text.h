/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Text every layer writes: the one-line failure of every verb and start-up
 * step, and addresses and protocols as messages, event lines and the
 * command language spell them. Plain C, no DPDK.
 */
#ifndef SP_TEXT_H
#define SP_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Writes a message into err (the `char *err, size_t errlen` convention of
 * every verb and start-up step) and returns -1, so a failure is one line:
 * `return sp_fail(err, errlen, "port %u: ...", port);` */
int sp_fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* "a.b.c.d" of a host-order address into buf (at least 16 bytes). */
char *sp_ip_str(uint32_t addr, char *buf);

/* "xx:xx:xx:xx:xx:xx" (lower case, as the command language writes a MAC)
 * of mac into buf (at least 18 bytes). */
char *sp_mac_str(const uint8_t mac[6], char *buf);

/* An IP protocol's word: tcp, udp, icmp, any (0), or "?". The command
 * language's protocol words (control/cmd_table.c) are these;
 * test_sp_cmd checks that they agree. */
const char *sp_proto_name(uint8_t proto);

#endif /* SP_TEXT_H */
