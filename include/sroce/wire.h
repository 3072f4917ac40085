/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sroce wire format: everything in one include.
 *
 * Header-only parts (static inline): types.h (fixed-width types, byte order),
 * hdr.h (header layouts, encode/decode), psn.h (PSN arithmetic), ack.h
 * (AETH syndromes, RNR timer, ACK timeout), decide.h (transport decisions:
 * PSN classification, opcode order, AETH interpretation). Out-of-line parts
 * live in wire.c, compiled once into each user (C, not C++): the opcode
 * table and its inverse, the RNR timer table, CRC-32/ICRC and the validator.
 *
 *   kernel:  a one-line kernel/<file>.c containing #include "../include/sroce/wire.c"
 *            (or list the object in Kbuild), ccflags-y += -I$(src)/../include
 *   CMake:   the sroce_wire static library (cmake/wire.cmake)
 */
#ifndef SROCE_WIRE_H
#define SROCE_WIRE_H

#include "types.h"
#include "hdr.h"
#include "opcode.h"
#include "psn.h"
#include "ack.h"
#include "icrc.h"
#include "validate.h"
#include "decide.h"

#endif /* SROCE_WIRE_H */
