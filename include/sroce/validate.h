/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The RoCE v2 packet validator: a pure function over a byte buffer. It never
 * allocates, never writes to the packet and reads nothing outside
 * [buf, buf + len) (with SROCE_PARSE_HDRS_ONLY, nothing past the BTH); no
 * length field in the packet is used before it has
 * been checked against len. Each rejection has its own code so the kernel
 * can count drops by reason (sroce_wire_err_name() gives a stable name).
 *
 * Entry points:
 *   sroce_parse_ip()   buf starts at the IPv4 or IPv6 header; checks IP, UDP,
 *                      BTH, headers, pad and (unless SROCE_PARSE_NO_ICRC) ICRC.
 *   sroce_parse_bth()  buf starts at the BTH and ends after the ICRC (the
 *                      UDP payload); checks everything from the BTH on except
 *                      the ICRC, which needs the IP header: the caller
 *                      computes it with sroce_icrc_begin()/update() then.
 *
 * Offsets in struct sroce_pkt are relative to buf.
 */
#ifndef SROCE_VALIDATE_H
#define SROCE_VALIDATE_H

#include "types.h"
#include "opcode.h"

SROCE_EXTERN_C_BEGIN

enum sroce_wire_err {
	SROCE_WIRE_OK = 0,
	SROCE_WIRE_E_TRUNC_IP,		/* shorter than the fixed IP header */
	SROCE_WIRE_E_IP_VERSION,	/* neither 4 nor 6 */
	SROCE_WIRE_E_IP_HDR_LEN,	/* IPv4 IHL < 5 */
	SROCE_WIRE_E_IP_OPTIONS,	/* IPv4 options: not RoCE v2 (ICRC undefined) */
	SROCE_WIRE_E_IP_LEN,		/* IP total/payload length disagrees with the buffer */
	SROCE_WIRE_E_IP_FRAG,		/* IPv4 fragment */
	SROCE_WIRE_E_IP_PROTO,		/* not UDP (IPv6: extension headers included) */
	SROCE_WIRE_E_TRUNC_UDP,		/* no room for the UDP header */
	SROCE_WIRE_E_UDP_LEN,		/* UDP length field disagrees with the IP payload
					 * (see SROCE_PARSE_UDP_TRIMMED) */
	SROCE_WIRE_E_UDP_PORT,		/* destination port is not 4791 */
	SROCE_WIRE_E_TRUNC_BTH,		/* no room for BTH + ICRC */
	SROCE_WIRE_E_TVER,		/* BTH transport version != 0 */
	SROCE_WIRE_E_OPCODE_UNKNOWN,	/* reserved opcode */
	SROCE_WIRE_E_OPCODE_UNSUPPORTED,/* RD, FLUSH, vendor */
	SROCE_WIRE_E_TRUNC_HDRS,	/* no room for the extension headers + ICRC */
	SROCE_WIRE_E_PAYLOAD,		/* payload on an opcode that carries none */
	SROCE_WIRE_E_PAD,		/* pad count inconsistent with the payload */
	SROCE_WIRE_E_ALIGN,		/* transport packet not a multiple of 4 bytes */
	SROCE_WIRE_E_ICRC,		/* ICRC mismatch */
	SROCE_WIRE_E_NR
};

#define SROCE_PARSE_NO_ICRC	0x1	/* skip the ICRC check (caller does it in its copy pass) */
/*
 * buf is a datagram as the UDP layer delivers it, already trimmed to its UDP
 * length when that was shorter than the IP payload (the kernel's receive
 * path). An IP length beyond the end of buf whose UDP length ends exactly
 * there is then reported as SROCE_WIRE_E_UDP_LEN, the error it was before
 * the trim, rather than SROCE_WIRE_E_IP_LEN. sroce_parse_ip() only.
 */
#define SROCE_PARSE_UDP_TRIMMED	0x2
/*
 * Only the headers are at buf: the datagram is len bytes long, but its
 * payload, pad and ICRC may lie elsewhere (the kernel's page fragments). The
 * validator then reads nothing but the IP, UDP and BTH headers, all within
 * the first SROCE_PARSE_HDRS_LEN bytes (fewer if len is shorter), checks
 * every length as usual, and leaves the ICRC to the caller (pkt->icrc is 0).
 * The extension headers it locates are not read: the caller makes them
 * available (up to pkt->payload_off) before it uses them.
 */
#define SROCE_PARSE_HDRS_ONLY	0x4
#define SROCE_PARSE_HDRS_LEN	(SROCE_IPV6_HLEN + SROCE_UDP_HLEN + SROCE_BTH_LEN)

struct sroce_pkt {
	const struct sroce_opcode_info *info;
	uint8_t ip_version;	/* 4, 6, or 0 from sroce_parse_bth() */
	uint8_t opcode;
	uint8_t pad;		/* BTH pad count */
	uint16_t src_port;	/* UDP source port (0 from sroce_parse_bth()) */
	uint32_t udp_off;	/* UDP header (sroce_parse_ip() only) */
	uint32_t bth_off;
	/* offset of each header present (info->hdrs), 0 if absent */
	uint32_t hdr_off[SROCE_HDR_NR];
	uint32_t payload_off;
	uint32_t payload_len;	/* without pad */
	uint32_t icrc_off;
	uint32_t end;		/* icrc_off + 4: bytes of buf that belong to the packet */
	uint32_t icrc;		/* ICRC as found in the packet */
};

enum sroce_wire_err sroce_parse_ip(const uint8_t *buf, size_t len, unsigned int flags,
				   struct sroce_pkt *pkt);
enum sroce_wire_err sroce_parse_bth(const uint8_t *buf, size_t len, unsigned int flags,
				    struct sroce_pkt *pkt);

/* Stable short name of an error code ("ok", "icrc", "trunc_ip", ...). */
const char *sroce_wire_err_name(enum sroce_wire_err err);

SROCE_EXTERN_C_END

#endif /* SROCE_VALIDATE_H */
