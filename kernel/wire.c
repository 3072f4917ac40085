// SPDX-License-Identifier: GPL-2.0
/* The wire format library (include/sroce), compiled into the module. */
#include "../include/sroce/wire.c"
