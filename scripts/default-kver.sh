#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Print the default kernel version sroce builds and tests for: the newest
# kernel under /lib/modules that has headers (with both of Debian 12's kernels
# installed, 6.12). Another one is selected explicitly: make KVER=6.1.0-N-amd64.
#
# With --others [KVER]: the kernels "make test" runs its subset on besides KVER
# (default: the default one), one per series: installed kernels with headers
# and a /boot image, the newest of each major.minor other than KVER's. One per
# line; nothing if there are none.
list() {
	for d in /lib/modules/*/build/Makefile; do
		[ -e "$d" ] || continue
		v=${d#/lib/modules/}
		echo "${v%/build/Makefile}"
	done | sort -V
}
series() {
	echo "$1" | cut -d. -f1,2 | sed 's/[^0-9.].*//'
}
def=$(list | tail -n 1)
if [ "${1:-}" != "--others" ]; then
	echo "$def"
	exit 0
fi
kver=${2:-$def}
list | while read -r v; do
	[ -e "/boot/vmlinuz-$v" ] || continue
	[ "$(series "$v")" = "$(series "$kver")" ] && continue
	echo "$(series "$v") $v"
done | sort -V | awk '{ last[$1] = $2 } END { for (s in last) print last[s] }' | sort -V
