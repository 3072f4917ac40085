# SPDX-License-Identifier: GPL-2.0
"""test_congestion's flow rates come from exact samples of a guest sampler that
a busy guest may run seconds late (host only, from made-up samples)."""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "vm"))
import bottleneck as bn  # noqa: E402


def samples(rows):
    """Sampler blocks from [(t, {qpn: bytes})], as "rdma resource show qp -dd" prints QPs."""
    return [(t, "\n".join("link sroce0/1 lqpn %d type RC state RTS drv_tx_bytes %d" % (q, b)
                          for q, b in qps.items())) for t, qps in rows]


def test_window_between_exact_samples_after_settling():
    # Both flows start between t=1 and t=2; samples come late now and then;
    # flow 6's QP is gone at 16.0.
    rows = [(0.0, {}), (1.0, {5: 100}), (2.0, {5: 200, 6: 50}), (3.0, {5: 300, 6: 150}),
            (9.5, {5: 950, 6: 800}), (13.0, {5: 1200, 6: 1050}), (15.0, {5: 1400, 6: 1100}),
            (16.0, {5: 1500}), (17.0, {})]
    flows = bn.series(samples(rows))
    assert [f["qpn"] for f in flows] == [5, 6]
    # From settle s after the first sample with both (2.0) to the last with both.
    assert bn.both_active(flows, settle=4) == (9.5, 15.0)
    # The rates between them are exact at sample times.
    assert [bn.bytes_between(f, 9.5, 15.0) for f in flows] == [450, 300]
    assert bn.both_active(flows, settle=0) == (2.0, 15.0)
    # Settling to 9.5 would leave less than 6 s.
    assert bn.both_active(flows, settle=4, shortest=6) == (2.0, 15.0)


def test_window_with_samples_9_s_apart():
    """What a starved guest gives: three samples in 22 s flows."""
    rows = [(0.0, {}), (9.0, {5: 3000, 6: 2000}), (18.0, {5: 35000, 6: 33000}),
            (27.0, {})]
    flows = bn.series(samples(rows))
    assert bn.both_active(flows, settle=4) == (9.0, 18.0)


def test_no_window_when_the_flows_never_overlap():
    rows = [(0.0, {5: 10}), (5.0, {5: 500}), (10.0, {6: 10}), (15.0, {6: 500})]
    assert bn.both_active(bn.series(samples(rows)), settle=4) is None
    rows = [(0.0, {5: 10, 6: 10}), (2.0, {5: 20, 6: 20}), (9.0, {})]
    assert bn.both_active(bn.series(samples(rows)), settle=4) is None
