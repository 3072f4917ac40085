# SPDX-License-Identifier: GPL-2.0
"""make bench reads the columns it says it reads (host only, from recorded output lines)."""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "vm"))
import bench  # noqa: E402

# Lines as Debian 12's perftest and sockperf print them.
BW_OUT = """ #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
 65536      1200             0.00               37.11  \t\t   0.000594
"""
LAT_OUT = """ #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    \
t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]
 2       1000          248.59         4711.18      376.72   \t       694.14      \t636.62 \
\t\t3072.91 \t\t4711.18
"""
SOCKPERF_OUT = "sockperf: ---> percentile 99.000 =  600.100\n" \
               "sockperf: ---> percentile 50.000 =  255.478\n"


def test_bandwidth_is_the_average_column():
    m = bench.BW_ROW.search(BW_OUT)
    assert m and float(m.group(bench.BW_AVERAGE)) == 37.11     # not the peak (0.00)


def test_latency_is_t_typical():
    m = bench.LAT_ROW.search(LAT_OUT)
    assert m and float(m.group(bench.T_TYPICAL)) == 376.72     # not t_max (4711.18)


def test_perftest_clock_warning():
    # perftest 4.5's warning when its cycle-counter calibration fits badly: the
    # bench runs such a run again instead of counting a BW average of 0
    out = BW_OUT.replace("37.11", "0.00") + \
        "Device not recognized to implement inline feature. Disabling it\n" \
        "Correlation coefficient r^2: 0.588415 < 0.9\n"
    def result(text, err=""):
        return bench.rigmod.Result("ib_write_bw", 0, text, err)
    assert bench.guestrdma.perftest_clock_failed(result(BW_OUT), result(out))
    assert bench.guestrdma.perftest_clock_failed(result(BW_OUT, err=out))
    assert not bench.guestrdma.perftest_clock_failed(result(BW_OUT), result(LAT_OUT))


def test_sockperf_median():
    assert float(bench.SOCKPERF_P50.search(SOCKPERF_OUT).group(1)) == 255.478


def test_profile_leaves_out_the_idle_loop():
    report = ("    50.00%  [k] pv_native_safe_halt\n"
              "    30.00%  [k] crc32_body\n"
              "    20.00%  [.] sroce_poll_cq\n")
    lines = bench.busy_profile(report)
    assert "idle: 50.0%" in lines[0]
    assert lines[1].split()[:3] == ["60.00%", "kernel", "crc32_body"]
    assert lines[2].split()[:3] == ["40.00%", "user", "sroce_poll_cq"]


def test_medians_ratios_and_failures():
    runs = lambda *v: {"runs": list(v), "cpu_per_gib": []}   # noqa: E731
    results = {"1500": {
        "write_bw_64k": {"sroce": runs(3.0, 1.0, 2.0), "rxe": runs(1.0, 0.5, 2.0)},
        "send_lat": {"sroce": runs(10.0, 12.0, 11.0), "rxe": {"runs": [20.0],
                                                             "cpu_per_gib": [],
                                                             "error": "boom"}},
        "iperf3": {"tcp": runs(4.0, 4.0, 4.0)},
    }}
    # one failed run of three: the median of the other two, marked
    results["1500"]["write_bw_4k"] = {"sroce": dict(runs(1.0, 3.0), failed_runs=["BW 0"])}
    s = bench.summarize(results, 3)["1500"]
    assert s["write_bw_4k"]["kinds"]["sroce"] == {"median": 2.0, "min": 1.0, "max": 3.0,
                                                  "cpu_s_per_gib": None, "failed_runs": 1}
    w = s["write_bw_64k"]
    assert w["kinds"]["sroce"] == {"median": 2.0, "min": 1.0, "max": 3.0,
                                   "cpu_s_per_gib": None}
    assert w["sroce_over_rxe"] == 2.0
    assert w["sroce_over_tcp"] == 0.5
    assert s["send_lat"]["kinds"]["rxe"] == {"error": "boom"}
    assert "sroce_over_rxe" not in s["send_lat"]


# The end of /proc/net/pktgen/eth0 after a run stopped by SIGINT (6.12 guest).
PKTGEN_OUT = """Current:
     pkts-sofar: 435539  errors: 0
     started: 1187436018us  stopped: 1193367696us idle: 9930us
Result: OK: 5931678(c5921748+d9930) usec, 435539 (1082byte,0frags)
  73425pps 635Mb/sec (635566800bps) errors: 0
"""


def test_pktgen_result_and_roce_frame():
    m = bench.PKTGEN_RESULT.search(PKTGEN_OUT)
    assert m and (int(m.group(1)), int(m.group(2)), int(m.group(3))) == (5931678, 435539, 1082)
    # a WRITE middle at RoCE MTU 1024 over IPv4: 14 + 20 + 8 + 12 + 1024 + 4
    assert bench.roce_mtu(1500) == 1024 and bench.roce_mtu(9000) == 4096
    assert bench.ROCE_FRAME_OVERHEAD + bench.roce_mtu(1500) == 1082
    assert bench.roce_mtu(1200) == 1024 and bench.roce_mtu(1100) == 512
    script = bench.pktgen_script(1082, 5, "10.99.0.1", "52:54:00:99:00:01")
    assert "pkt_size 1082" in script and "dst_mac 52:54:00:99:00:01" in script


def test_targets_against_the_link_ceiling():
    def kinds(**k):
        return {"kinds": {n: {"median": v} for n, v in k.items()}}
    summary = {"1500": {"write_bw_64k": dict(kinds(sroce=0.5, rxe=0.25), sroce_over_rxe=2.0,
                                             sroce_over_tcp=0.55),
                        "iperf3": kinds(tcp=0.9), "link_ceiling": kinds(tcp=0.75)}}
    tl = {w: (v, ok, b) for w, v, ok, b in bench.targets(summary, {})}
    v, ok, bound = tl["64 KiB WRITE BW sroce/rxe >= 4 (MTU 1500)"]
    assert (v, ok, bound) == (2.0, False, (1.0, 0.75))
    assert bench.bound_text(bound).endswith("out of reach on this rig")
    v, ok, bound = tl["64 KiB WRITE BW sroce/iperf3 >= 1.5 (MTU 9000)"]
    assert (v, ok, bound) == (None, None, (None, None)) and bench.bound_text(bound) == ""
    _, _, bound = tl["64 KiB WRITE BW sroce/iperf3 >= 1.0 (MTU 1500)"]
    assert bench.bound_text(bound).startswith("needs 0.9 Gb/s, 1.20 of")
    assert bench.bound_text((0.5, 1.0)) == "needs 0.5 Gb/s, 0.50 of the link's ceiling 1"
