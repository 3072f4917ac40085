# SPDX-License-Identifier: GPL-2.0
"""Run in a guest: two RC QPs on DEV connected to each other (loopback through
GID index GIDX). A posts a SEND that B has no receive WQE for: B answers with
RNR NAKs (its min_rnr_timer 31, 491.52 ms) and A retries without limit. Writes
"A_QPN B_QPN" to DIR/ready while that goes on, waits for DIR/go, posts B's
receive, waits for both completions and prints them with the data check, writes
DIR/completed, and keeps both QPs until DIR/done (HOLD seconds at most) so that
their state can be looked at. test_device.py reads "rdma resource show qp -dd".

usage: guest_rnr_hold.py DEV GIDX DIR HOLD
"""
import os
import sys
import time

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

SIZE = 700


def wait_file(path, end):
    while not os.path.exists(path) and time.time() < end:
        time.sleep(0.05)
    return os.path.exists(path)


def connect(qp, peer_qpn, gid, gidx, rnr_timer):
    a = QPAttr(qp_state=e.IBV_QPS_INIT, port_num=1)
    a.pkey_index = 0
    a.qp_access_flags = e.IBV_ACCESS_LOCAL_WRITE
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
    a = QPAttr(qp_state=e.IBV_QPS_RTR)
    a.path_mtu = e.IBV_MTU_1024
    a.dest_qp_num = peer_qpn
    a.rq_psn = 0
    a.max_dest_rd_atomic = 1
    a.min_rnr_timer = rnr_timer
    a.ah_attr = AHAttr(gr=GlobalRoute(dgid=gid, sgid_index=gidx), is_global=1, port_num=1)
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN |
              e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
    a = QPAttr(qp_state=e.IBV_QPS_RTS)
    a.timeout, a.retry_cnt, a.rnr_retry, a.sq_psn, a.max_rd_atomic = 14, 7, 7, 0, 1
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY |
              e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)


def poll_one(cq, end):
    while time.time() < end:
        n, wcs = cq.poll(1)
        if n:
            return wcs[0]
        time.sleep(0.01)
    return None


def main():
    dev, gidx, d, hold = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    end = time.time() + hold
    ctx = Context(name=dev)
    gid = ctx.query_gid(1, gidx)
    pd = PD(ctx)
    cqa, cqb = CQ(ctx, 4), CQ(ctx, 4)
    cap = QPCap(max_send_wr=2, max_recv_wr=2, max_send_sge=1, max_recv_sge=1)
    qa = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqa, rcq=cqa, cap=cap))
    qb = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqb, rcq=cqb, cap=cap))
    connect(qa, qb.qp_num, gid, gidx, 0)
    connect(qb, qa.qp_num, gid, gidx, 31)
    src = MR(pd, SIZE, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pd, SIZE, e.IBV_ACCESS_LOCAL_WRITE)
    data = bytes((i * 7 + 3) & 0xff for i in range(SIZE))
    src.write(data, SIZE)
    dst.write(b"\0" * SIZE, SIZE)
    qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, num_sge=1,
                        sg=[SGE(src.buf, SIZE, src.lkey)], send_flags=e.IBV_SEND_SIGNALED))
    with open(os.path.join(d, "ready.tmp"), "w") as f:
        f.write("%d %d\n" % (qa.qp_num, qb.qp_num))
    os.rename(os.path.join(d, "ready.tmp"), os.path.join(d, "ready"))
    if not wait_file(os.path.join(d, "go"), end):
        print("no go")
        return
    qb.post_recv(RecvWR(wr_id=2, num_sge=1, sg=[SGE(dst.buf, SIZE, dst.lkey)]))
    stop = time.time() + 10
    ws, wr = poll_one(cqa, stop), poll_one(cqb, stop)
    print("send=%s recv=%s len=%s data=%s" % (
        ws.status if ws else "none", wr.status if wr else "none", wr.byte_len if wr else "-",
        "ok" if dst.read(SIZE, 0) == data else "bad"))
    sys.stdout.flush()
    with open(os.path.join(d, "completed"), "w") as f:
        f.write("1\n")
    wait_file(os.path.join(d, "done"), end)


if __name__ == "__main__":
    main()
