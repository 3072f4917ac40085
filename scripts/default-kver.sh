#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Print the default kernel version sroce builds and tests for: the newest
# Debian 6.1 kernel under /lib/modules that has headers (Debian 12's default
# kernel, linux-image-amd64, and the project's primary target), else the
# newest kernel that has headers. Other kernels, e.g. Debian 12's 6.12
# (linux-image-6.12-amd64), are selected explicitly: make KVER=6.12.x+deb12-amd64.
list() {
	for d in /lib/modules/*/build/Makefile; do
		[ -e "$d" ] || continue
		v=${d#/lib/modules/}
		echo "${v%/build/Makefile}"
	done | sort -V
}
v=$(list | grep '^6\.1\.' | tail -n 1)
[ -n "$v" ] || v=$(list | tail -n 1)
echo "$v"
