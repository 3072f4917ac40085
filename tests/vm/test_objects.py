# SPDX-License-Identifier: GPL-2.0
"""Memory regions and completion queues: sroce-objects-test in a guest, cleanup
by the kernel when a process exits without destroying its objects, and a
process scribbling over its CQ ring or its send and receive rings."""
import json

import pytest

from guestrdma import TOOLS, client_server, configure, gid_index, unload_all_rdma_links, wait_for


@pytest.fixture
def g0(rig):
    g = rig[0]
    configure(g)
    yield g
    unload_all_rdma_links(g)


def res_counts(g, dev="sroce0"):
    """Per-type object counts of `rdma res show` for dev (pd, cq, mr, ctx...)."""
    for entry in json.loads(g.check("rdma -j res show") or "[]"):
        if entry.get("ifname") == dev:
            return {k: v for k, v in entry.items() if isinstance(v, int) and k != "ifindex"}
    raise AssertionError("no rdma res entry for %s" % dev)


def test_objects_tool_passes(g0):
    r = g0.run("%s/sroce-objects-test sroce0" % TOOLS, timeout=300)
    assert r.ok, r
    assert "RESULT: PASS" in r.out, r
    assert "mr_64MiB: ok" in r.out, r
    assert "cq_size_65536: ok" in r.out, r


def test_objects_are_counted_and_released(g0):
    """A process holding a PD, 10 MRs and 5 CQs shows them in `rdma res`; when it
    exits without destroying anything, the kernel cleans up."""
    before = res_counts(g0)
    g0.run("rm -f /tmp/leak-go /tmp/leak.out")
    p = g0.spawn("%s/sroce-objects-test sroce0 leak /tmp/leak-go > /tmp/leak.out" % TOOLS)
    try:
        wait_for(lambda: "LEAKING" in g0.run("cat /tmp/leak.out").out, timeout=60,
                 what="the leaking process to hold its objects")
        held = res_counts(g0)
        grew = {k: held.get(k, 0) - before.get(k, 0) for k in ("pd", "mr", "cq")}
        assert grew == {"pd": 1, "mr": 10, "cq": 5}, (before, held)
    finally:
        g0.run("touch /tmp/leak-go")
        r = p.wait(120)
    assert r.ok, r
    assert "LEAKING 15 objects" in g0.run("cat /tmp/leak.out").out
    assert res_counts(g0) == before


def test_scribbled_cq_ring_hurts_only_the_process(g0):
    before = res_counts(g0)
    r = g0.run("%s/sroce-objects-test sroce0 scribble" % TOOLS, timeout=120)
    assert r.ok, r
    assert "SCRIBBLED" in r.out, r
    assert "destroy: 0" in r.out, r
    assert res_counts(g0) == before
    # the device is unharmed: the full object test still passes
    r = g0.run("%s/sroce-objects-test sroce0" % TOOLS, timeout=300)
    assert "RESULT: PASS" in r.out, r
    assert g0.run("rdma link del sroce0").ok


def qp_numbers(g, dev="sroce0"):
    """The QP numbers `rdma res show qp` lists for dev."""
    out = g.check("rdma -j res show qp") or "[]"
    return sorted(e.get("lqpn") for e in json.loads(out) if e.get("ifname") == dev)


def test_scribbled_wq_rings_hurt_only_the_process(g0, rig):
    """sroce-objects-test wq-scribble breaks its own SQ, RQ and SRQ rings (producers
    far from the consumer, garbage WQEs, random bytes while another thread posts) on
    loopback RC and UD QPs: only its QPs may fail, nothing may hang, no QP may stay
    behind, and the device still carries traffic between the guests afterwards.
    Every part runs even when an earlier one failed; the test fails at the end."""
    g1 = rig[1]
    peer = configure(g1)
    problems = []
    try:
        qps_before = qp_numbers(g0)
        gidx = gid_index(g0, "sroce0")
        r = g0.run("timeout -s KILL 90 %s/sroce-objects-test sroce0 wq-scribble %d"
                   % (TOOLS, gidx), timeout=120)
        print(r.out)
        problems += [line for line in r.out.splitlines() if ": FAIL" in line]
        if not (r.ok and "RESULT: PASS" in r.out):
            problems.append("wq-scribble: rc=%d timeout=%s err=%r" % (r.rc, r.timeout, r.err))
        for name in ("sq_producer_ahead", "sq_wqe_opcode_ffffffff", "sq_wqe_num_sge_ffff",
                     "sq_wqe_inline_len_7fffffff", "sq_wqe_bad_lkey", "ud_wqe_bad_ah_num",
                     "rq_producer_ahead", "rq_wqe_bad_lkey", "srq_producer_ahead",
                     "srq_wqe_bad_lkey", "concurrent_sq_scribble", "wq_teardown",
                     # sroce-abi.h: a broken ring puts the QP in ERR *with* IB_EVENT_QP_FATAL
                     "sq_producer_ahead_fatal_event", "rq_producer_ahead_fatal_event",
                     "srq_producer_ahead_fatal_event", "ud_rq_producer_ahead_fatal_event"):
            if "%s: ok" % name not in r.out:
                problems.append("no '%s: ok'" % name)
        left = qp_numbers(g0)
        if left != qps_before:
            problems.append("QPs left over after the tool exited: %s (before: %s)"
                            % (left, qps_before))

        # the device still carries traffic between the guests
        def cmd(gid, host=""):
            return "ibv_rc_pingpong -d sroce0 -i 1 -g %d -c -n 10 %s" % (gid, host)
        s, c = client_server(g0, cmd(gidx), g1, cmd(peer.gid["ipv4"], g0.ip4), timeout=60)
        for who, x in (("server", s), ("client", c)):
            if not x.ok or "10 iters in" not in x.out or "invalid data" in x.out + x.err:
                problems.append("ibv_rc_pingpong %s after wq-scribble: %r" % (who, x))
        print("pingpong: server %r\nclient %r" % (s.out, c.out))
    finally:
        unload_all_rdma_links(g1)
    assert not problems, "\n".join(problems)


BREADTH_CHECKS = (
    "resize_cq_below_unpolled_refused", "resize_cq_grow_and_shrink",
    "resize_cq_keeps_unpolled_completions", "resize_cq_while_another_thread_polls",
    "rereg_translation", "rereg_translation_write_lands_in_new_range",
    "rereg_translation_old_range_untouched", "rereg_old_range_refused", "rereg_access",
    "rereg_access_write_refused", "rereg_pd", "rereg_pd_other_pd_refused", "rereg_pd_back",
    "rereg_pd_back_write", "rereg_unmapped_range_fails", "rereg_failed_region_still_works",
    "rereg_lkey_send_from_new_range", "parent_domain_alloc", "parent_domain_on_parent_refused",
    "parent_domain_keeps_pd", "cq_on_plain_pd_as_parent_refused", "parent_domain_traffic",
    "parent_domain_dealloc", "qp_reset_drops_its_unpolled_completions",
    "qp_destroy_drops_its_unpolled_completions",
    "rejected_modify_keeps_the_address",
    "leniency_setup", "qp_access_flags_undefined_bit_refused",
    "qp_access_flags_relaxed_ordering_accepted", "path_mig_state_migrated_accepted",
    "srq_limit_at_create_ignored",
    "sqd_rc_drains_and_resumes", "sqd_uc_drains_and_resumes", "sqd_notify_only_when_asked",
    "sqd_bad_wqe_waits_for_rts",
    "comm_est_rc_once_in_rtr", "comm_est_uc_once_in_rtr",
    "resp_write_bad_rkey_access_err_event", "resp_misaligned_atomic_req_err_event",
    "resp_send_too_long_no_event", "no_responder_resources_read_refused",
    "no_responder_resources_atomic_refused", "sqd_sqd_new_retry_cnt_counts",
    "read_of_more_than_2p22_packets_refused",
    "read_of_1gib_at_mtu_1024_reaches_the_responder",
    "srq_resize_advertised", "srq_resize_below_posted_refused",
    "srq_resize_below_armed_limit_refused", "atomic_write_lands",
    "atomic_write_misaligned_refused", "atomic_write_needs_remote_write",
    "atomic_write_not_through_post_send", "srq_resize_keeps_posted_wqes",
    "mw_alloc", "mw_alloc_type3_refused", "mw_region_itself_not_remote", "mw_type1_bind",
    "mw_type1_write_lands", "mw_type1_region_outside_untouched",
    "mw_type1_outside_window_refused", "mw_type1_crossing_end_refused",
    "mw_type1_old_rkey_refused", "mw_dereg_region_with_window_busy", "mw_type1_rebind",
    "mw_type1_read_only_write_refused", "mw_type1_unbind", "mw_type1_unbound_refused",
    "mw_type1_unbound_old_key_refused", "mw_type1_not_through_post_send",
    "mw_type2_bind_and_write_on_bound_qp", "mw_type2_other_qp_refused",
    "mw_type2_alloc_rkey_refused", "mw_type2_local_invalidate", "mw_type2_remote_invalidate",
    "mw_type2_bind_bound_refused", "mw_local_inv_failing_behind_a_write_fails",
    "mw_type2_dealloc_bound", "mw_bind_region_without_mw_bind",
    "mw_bind_remote_write_needs_local_write", "mw_bind_beyond_region",
    "mw_bind_region_of_other_pd", "mw_teardown", "mcast_advertised", "mcast_gids",
    "mcast_ipv4_attach", "mcast_ipv4_delivered_to_every_attached_qp",
    "mcast_ipv4_detached_qp_gets_nothing", "mcast_ipv4_detach_twice_refused",
    "mcast_ipv4_group_left", "mcast_ipv6_attach", "mcast_ipv6_delivered_to_every_attached_qp",
    "mcast_ipv6_detached_qp_gets_nothing", "mcast_ipv6_detach_twice_refused",
    "mcast_ipv6_group_left", "mcast_attach_rules", "import_device", "import_pd_and_mr",
    "import_unknown_mr_refused", "import_write_through_imported_objects", "import_close",
    "import_original_still_works", "odp_reg_mr", "odp_write_faults_pages_in",
    "odp_read_from_region", "odp_read_into_region", "odp_send_and_receive",
    "odp_atomic_fetch_add", "odp_invalidation_follows_new_mapping",
    "odp_write_to_unmapped_range_fails", "odp_prefetch_reg_mr", "odp_prefetch_maps_pages", "odp_prefetch_no_fault",
    "odp_advise_refused_outside_odp", "odp_dereg", "odp_first_touch_reads_ahead", "odp_implicit_reg",
    "odp_implicit_write_anywhere", "odp_prefetch_unmapped_leaves_nothing", "odp_implicit_dereg", "odp_rereg_translation",
    "odp_rereg_dereg", "odp_dereg_stops_a_prefetch", "odp_prefetch_hole_fails_at_once",
    "odp_prefetch_sync_budget", "xrc_srq_numbers", "xrc_send_to_two_srqs", "xrc_rdma_and_atomics",
    "xrc_no_queues_where_none", "xrc_shared_domain_open_qp", "xrc_wr_set_xrc_srqn",
    "xrc_key_of_other_pd_refused", "xrc_unknown_srq_refused", "xrc_srq_of_other_domain_refused",
    "xrc_destroyed_srq_refused", "comm_est_xrc_target_in_rtr", "xrc_target_last_wqe_once",
    "xrc_teardown",
    "cq_overrun_send_qp_fatal", "cq_overrun_recv_qp_fatal", "breadth_teardown")


def test_verbs_breadth(g0):
    """sroce-objects-test breadth: resize_cq keeps unpolled completions (and refuses
    to shrink below them), a CQ resized 40 times while another thread polls it loses
    and reorders nothing; rereg_mr moves a region, changes its access and PD under
    the same keys (each checked by RDMA WRITEs that land or are refused), a failing
    rereg leaves the region working; a modify_qp the QP's state refuses (a new
    address in RTS) changes nothing query_qp reports; an RC and a UC QP moved to SQD
    while WRITEs are under way finish what they started, report SQ_DRAINED once, start
    nothing more, and carry out the rest back in RTS; a READ of more than 2^22 packets
    (1 GiB + 256 bytes at path MTU 256) fails with LOC_LEN_ERR; a parent domain carries
    QPs, an SRQ, CQs and an MR;
    memory windows of type 1 and 2B grant remote writes on part of a region, within their
    range, rights and QP, until they are unbound, invalidated (locally or by a
    SEND_WITH_INV) or deallocated, and a bind that breaks a rule fails (a LOCAL_INV
    that fails behind a WRITE not yet acknowledged completes in error, with the QP then
    in ERR, not as a success once the WRITE is acknowledged); a UD multicast
    message (IPv4 and IPv6 group) reaches every attached QP on the host and no other,
    until each detaches; a context imported from the command FD, with the PD and MR
    imported by handle, carries an RDMA WRITE; on-demand paging regions over untouched
    memory take WRITEs, READs (both ways), SENDs and atomics (pages faulted in, counted),
    follow a new mapping at the same address after an invalidation, refuse an unmapped
    range, prefetch with advise_mr (then no access waits; a prefetch of memory that cannot be
    mapped fails and leaves no table entries behind), and an implicit region writes
    anywhere; a completion that does not fit its CQ raises CQ_ERR and sends the QP to
    ERR with QP_FATAL (a lost receive completion NAKs the message: REM_OP_ERR at the
    sender). Every message is checked byte by byte."""
    r = g0.run("timeout -s KILL 150 %s/sroce-objects-test sroce0 breadth" % TOOLS,
               timeout=180)
    print(r.out)
    assert r.ok and "RESULT: PASS" in r.out, r
    missing = [c for c in BREADTH_CHECKS if "%s: ok" % c not in r.out]
    assert not missing, missing
    assert "2000 messages" in r.out, r.out
