/* SPDX-License-Identifier: Apache-2.0 */
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>

#include "util/text.h"

int
sp_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

char *
sp_ip_str(uint32_t addr, char *buf)
{
	snprintf(buf, 16, "%u.%u.%u.%u", addr >> 24, (addr >> 16) & 0xff,
		 (addr >> 8) & 0xff, addr & 0xff);
	return buf;
}

char *
sp_mac_str(const uint8_t mac[6], char *buf)
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1],
		 mac[2], mac[3], mac[4], mac[5]);
	return buf;
}

const char *
sp_proto_name(uint8_t proto)
{
	switch (proto) {
	case 0:
		return "any";
	case IPPROTO_ICMP:
		return "icmp";
	case IPPROTO_TCP:
		return "tcp";
	case IPPROTO_UDP:
		return "udp";
	default:
		return "?";
	}
}
