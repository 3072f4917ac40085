#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Print the newest kernel version under /lib/modules that has Debian headers.
for d in /lib/modules/*/build/Makefile; do
	[ -e "$d" ] || continue
	v=${d#/lib/modules/}
	echo "${v%/build/Makefile}"
done | sort -V | tail -n 1
