"""BoundTrace: table, area metric (Table 1 of Lou et al. 2017), CSV, plots."""
import math

import numpy as np
import pytest

from sampling.bounds.trace import BoundTrace, bound_area, normalized_areas, plot_traces


def make_trace(times, up, lo, method="dis", meta=None):
    rows = [dict(time_s=t, log_Z_upper=u, log_Z_lower=l, log_Z_hat=(u + l) / 2, n_samples=i,
                 n_nodes=2 * i, n_expansions=3 * i, lower_is_markov=i == 0)
            for i, (t, u, l) in enumerate(zip(times, up, lo))]
    return BoundTrace.from_rows(rows, method=method, meta=meta)


def test_area_of_step_functions_by_hand():
    tr = make_trace([1.0, 2.0, 4.0], [10.0, 8.0, 7.0], [0.0, 4.0, 6.0])
    # gaps 10 on [1,2), 4 on [2,4), 1 on [4,6)
    assert bound_area(tr, t_end=6.0) == pytest.approx(10 + 8 + 2)
    assert tr.area(t_end=4.0) == pytest.approx(18.0)
    # window starting before the first record holds the first gap
    assert bound_area(tr, t_end=6.0, t_start=0.0) == pytest.approx(30.0)
    # window starting in the middle
    assert bound_area(tr, t_end=6.0, t_start=3.0) == pytest.approx(4 + 2)


def test_area_over_log_time_by_hand():
    tr = make_trace([1.0, 2.0, 4.0], [10.0, 8.0, 7.0], [0.0, 4.0, 6.0], meta={"log_Z_floor": -1.0})
    # gaps 10 on [1,2), 4 on [2,4), 1 on [4,8) in ln t
    assert bound_area(tr, t_start=1.0, t_end=8.0, log_time=True) == pytest.approx(
        10 * math.log(2) + 4 * math.log(2) + 1 * math.log(2))
    # before the first record: the first gap (no WMB bound in meta), over [0.5, 1)
    assert tr.area(t_start=0.5, t_end=2.0, log_time=True) == pytest.approx(20 * math.log(2))
    with pytest.raises(ValueError, match="t_start > 0"):
        bound_area(tr, t_start=0.0, t_end=8.0, log_time=True)


def test_area_floor_and_infinite_lower():
    tr = make_trace([0.0, 1.0], [5.0, 5.0], [-math.inf, 3.0])
    assert bound_area(tr, t_end=2.0) == math.inf
    assert bound_area(tr, t_end=2.0, log_Z_floor=1.0) == pytest.approx(4 + 2)
    tr2 = make_trace([0.0, 1.0], [5.0, 5.0], [-math.inf, 3.0], meta={"log_Z_floor": 1.0})
    assert bound_area(tr2, t_end=2.0) == pytest.approx(6.0)


def test_normalized_areas():
    ref = make_trace([0.0], [4.0], [0.0])
    better = make_trace([0.0], [2.0], [1.0])
    out = normalized_areas({"ref": ref, "better": better}, ref, t_end=10.0)
    assert out == {"ref": 1.0, "better": pytest.approx(0.25)}


def test_area_errors():
    tr = make_trace([1.0, 2.0], [3.0, 3.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="t_end"):
        bound_area(tr, t_end=0.5, t_start=1.0)
    empty = BoundTrace.from_rows([dict(time_s=0.0, log_Z_upper=1.0, log_Z_lower=0.0, log_Z_hat=0.5, n_samples=0,
                                       n_nodes=0, n_expansions=0, lower_is_markov=False)], method="x")
    assert len(empty) == 1


def test_frame_final_and_csv_roundtrip(tmp_path):
    tr = make_trace([0.5, 1.5], [3.0, 2.5], [-math.inf, 1.0], meta={"delta": 0.025, "log_Z_floor": -math.inf})
    df = tr.to_frame()
    assert list(df.columns[:6]) == ["time_s", "log_Z_upper", "log_Z_lower", "log_Z_hat", "n_samples", "n_nodes"]
    assert tr.final["log_Z_upper"] == 2.5 and tr.final["method"] == "dis"
    assert tr.final_log_Z_lower == 1.0
    p = tmp_path / "t.csv"
    tr.to_csv(p)
    back = BoundTrace.from_csv(p)
    assert back.method == "dis" and back.meta["delta"] == 0.025
    np.testing.assert_allclose(back.log_Z_upper, tr.log_Z_upper)
    assert back.log_Z_lower[0] == -math.inf
    assert back.lower_is_markov.tolist() == [True, False]
    assert sorted(f.name for f in tmp_path.iterdir()) == ["t.csv", "t.csv.json"]  # no temporary left behind


def test_csv_reads_with_plain_read_csv_and_meta_in_a_sidecar(tmp_path):
    # before: a "# {json}" first line made pd.read_csv(path) fail or misread the header
    import json

    import pandas as pd

    tr = make_trace([0.5, 1.5], [3.0, 2.5], [-math.inf, 1.0],
                    meta={"delta": 0.025, "log_Z_wmb": 3.0, "wmb_ladder": [{"i_bound": 2, "log_Z_upper": math.inf}]})
    p = tmp_path / "t.csv"
    side = tr.to_csv(p)
    df = pd.read_csv(p)
    assert list(df.columns) == list(tr.to_frame().columns)
    np.testing.assert_array_equal(df["log_Z_upper"].to_numpy(), [3.0, 2.5])
    assert df["log_Z_lower"].iloc[0] == -math.inf
    info = json.loads((tmp_path / "t.csv.json").read_text())
    assert side == str(p) + ".json"
    assert info["method"] == "dis" and info["meta"]["delta"] == 0.025
    assert info["meta"]["wmb_ladder"][0]["log_Z_upper"] == "inf"  # nested non-finite floats are JSON-safe
    back = BoundTrace.from_csv(p)
    assert back.meta["log_Z_wmb"] == 3.0 and back.method == "dis"


def test_old_commented_csv_still_reads(tmp_path):
    p = tmp_path / "old.csv"
    p.write_text('# {"method": "wmb-is", "meta": {"delta": 0.1}}\n'
                 "time_s,log_Z_upper,log_Z_lower,log_Z_hat,n_samples,n_nodes,n_expansions,lower_is_markov\n"
                 "0.5,2.0,1.0,1.5,10,0,0,False\n")
    back = BoundTrace.from_csv(p)
    assert back.method == "wmb-is" and back.meta == {"delta": 0.1} and back.log_Z_upper.tolist() == [2.0]


def test_bad_sidecar_is_named(tmp_path):
    tr = make_trace([0.5], [3.0], [1.0])
    p = tmp_path / "t.csv"
    tr.to_csv(p)
    (tmp_path / "t.csv.json").write_text("{nope")
    with pytest.raises(ValueError, match=r"t\.csv\.json: not a readable trace sidecar"):
        BoundTrace.from_csv(p)


def test_dataframe_of_a_trace():
    # before: pd.DataFrame(trace) raised (a dataclass of arrays is not a table)
    import pandas as pd

    tr = make_trace([0.5, 1.5, 2.0], [3.0, 2.5, 2.4], [-math.inf, 1.0, 1.2])
    df = pd.DataFrame(tr)
    expected = tr.to_frame()
    assert list(df.columns) == list(expected.columns)
    pd.testing.assert_frame_equal(df, expected, check_dtype=False)


def test_from_csv_missing_column(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("time_s,log_Z_upper\n0,1\n")
    with pytest.raises(ValueError, match="lacks column"):
        BoundTrace.from_csv(p)


def test_plot_writes_png(tmp_path):
    a = make_trace([0.1, 1.0, 5.0], [3.0, 2.5, 2.2], [0.5, 1.0, 1.8])  # Markov lower bound first
    b = make_trace([0.1, 2.0], [3.0, 2.0], [-math.inf, 1.9], method="wmb-is")
    p = tmp_path / "fig.png"
    fig = plot_traces({"DIS": a, "WMB-IS": b}, p, log_Z=2.0, title="toy")
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    labels = fig.axes[0].get_legend_handles_labels()[1]
    # before: one unlabelled lower-bound line per trace, the legend only named the method
    assert {"DIS: upper bound", "DIS: lower bound", "DIS: lower bound (Markov)", "WMB-IS: upper bound",
            "WMB-IS: lower bound", "ln Z = 2.0000"} <= set(labels)
    assert "WMB-IS: lower bound (Markov)" not in labels  # b's lower bound is never the Markov one
    assert fig.axes[0].get_title() == "toy"
