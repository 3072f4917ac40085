// SPDX-License-Identifier: GPL-2.0
/*
 * Compiled as C11 (not C++): proves the wire headers are valid C and that
 * their inline functions behave the same there. Called from wire_hdr_test.cpp.
 */
#include <sroce/wire.h>

int sroce_wire_c11_check(void);

int sroce_wire_c11_check(void)
{
	uint8_t b[SROCE_BTH_LEN] = {0};
	struct sroce_bth h = {0};

	h.opcode = SROCE_OP_RC_RDMA_READ_REQUEST;
	h.pkey = 0xffff;
	h.dqpn = 0x123456;
	h.ackreq = true;
	h.psn = 0xfffffe;
	sroce_bth_encode(b, &h);
	if (sroce_bth_psn(b) != 0xfffffe || sroce_bth_dqpn(b) != 0x123456)
		return 1;
	if (sroce_psn_add(sroce_bth_psn(b), 3) != 1 || !sroce_psn_before(0xfffffe, 1))
		return 2;
	if (sroce_opcode_lookup(SROCE_OP_RC_RDMA_READ_REQUEST)->hdr_len != 28)
		return 3;
	if (sroce_crc32("123456789", 9) != 0xcbf43926u)
		return 4;
	if (sroce_rnr_timer_us(0) != 655360)
		return 5;
	return 0;
}
