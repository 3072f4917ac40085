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
