# SPDX-License-Identifier: GPL-2.0
"""Run in a guest: one UD QP on DEV with Q_Key QKEY in RTS and no receive WQE
posted; writes its QP number (decimal) to READY, then waits for the file DONE
(HOLD seconds at most) and prints the QP's state as the device reports it and
how many completions its CQ holds. test_hostile_net.py sends it UD SENDs that it
cannot take.

usage: guest_ud_idle.py DEV QKEY READY DONE HOLD
"""
import os
import sys
import time

import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr


def main():
    dev, qkey, ready, done = sys.argv[1], int(sys.argv[2], 0), sys.argv[3], sys.argv[4]
    end = time.time() + int(sys.argv[5])
    ctx = Context(name=dev)
    pd = PD(ctx)
    cq = CQ(ctx, 16)
    init = QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq,
                      cap=QPCap(max_send_wr=1, max_recv_wr=4, max_send_sge=1, max_recv_sge=1))
    qp = QP(pd, init)
    attr = QPAttr(port_num=1)
    attr.qkey = qkey
    qp.to_rts(attr)
    with open(ready + ".tmp", "w") as f:
        f.write("%d\n" % qp.qp_num)
    os.rename(ready + ".tmp", ready)  # whole, or not there
    while not os.path.exists(done) and time.time() < end:
        time.sleep(0.1)
    state = qp.query(e.IBV_QP_STATE)[0].qp_state
    print("qp_state=%s completions=%d" % ("RTS" if state == e.IBV_QPS_RTS else state,
                                          cq.poll(16)[0]))


if __name__ == "__main__":
    main()
