# SPDX-License-Identifier: GPL-2.0
"""Run in a guest: one process creates address handles on DEV until the
device refuses, writes "<count> <errno>" to READY, then holds them for HOLD
seconds (or until killed). test_hardening.py uses it to show that a process
cannot take the AHs kernel consumers (rdma_cm's connection messages) need.

usage: guest_ah_hog.py DEV GID_INDEX READY HOLD
"""
import sys
import time

from pyverbs.addr import AH, AHAttr, GlobalRoute
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError


def main():
    dev, gidx, ready, hold = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    ctx = Context(name=dev)
    pd = PD(ctx)
    attr = AHAttr(gr=GlobalRoute(dgid=ctx.query_gid(1, gidx), sgid_index=gidx),
                  is_global=1, port_num=1)
    ahs, err = [], 0
    try:
        while len(ahs) < 1 << 20:
            ahs.append(AH(pd, attr=attr))
    except PyverbsRDMAError as e:
        err = e.error_code
    with open(ready, "w") as f:
        f.write("%d %d\n" % (len(ahs), err))
    time.sleep(hold)


if __name__ == "__main__":
    main()
