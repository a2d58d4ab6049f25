"""bench/interleave.py without a GPU: a fake workload whose regions cost more under one fake
variant; the cycle loop, the same-cycle pairing and the report must show that variant's extra
work and no other's."""

import pathlib
import sys

import pytest

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import interleave  # noqa: E402  (bench/ is not a package)
import variants  # noqa: E402

EXTRA = {"on": False}


def busy(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


class FakeWorkload:
    name = "fake"
    kernels = 100

    def setup(self):
        pass

    def after_start(self):
        pass

    def region(self):
        busy(20000 if EXTRA["on"] else 2000)


class Heavy(variants.Variant):
    name = "heavy"

    def start(self, out_dir):
        EXTRA["on"] = True

    def stop(self):
        EXTRA["on"] = False


class Light(variants.Variant):
    name = "floor"  # stands in for the floor: the reference of the last column


@pytest.fixture
def fake_variants(monkeypatch):
    monkeypatch.setitem(variants.ALL, "heavy", Heavy)
    monkeypatch.setitem(variants.ALL, "floor", Light)
    # No CUPTI census here: it would try to start the real floor.
    monkeypatch.setattr(interleave, "census", lambda w, sync: None)


def test_the_variant_that_adds_work_is_the_one_reported(fake_variants):
    args = interleave.parse_args(["--cycles", "5", "--repeats", "2"])
    res = interleave.run_workload(FakeWorkload, ["none", "floor", "heavy"], args, lambda: None)
    wall = res["meters"]["wall"]
    assert set(wall) == {"none", "floor", "heavy"}
    assert all(row["slots"] == 5 for row in wall.values())
    lo, mid, hi = wall["heavy"]["ratio_vs_none"]
    assert lo <= mid <= hi and mid > 3  # ten times the work, give or take the loop's overhead
    assert wall["heavy"]["per_launch_vs_floor"][1] > 0
    assert 0.5 < wall["floor"]["ratio_vs_none"][1] < 2
    assert "ratio_vs_floor" not in wall["floor"] and "ratio_vs_none" not in wall["none"]
    # Every meter read is summarised; counters only where the host has them.
    assert {"wall", "cpu"} <= set(res["meters"]) and len(res["slots"]["wall"]) == 5
    meta = {"gpu": "Fake GPU", "date": "2026-11-21", "torch": "-", "triton": "-",
            "commit": "abc", "cycles": 5, "repeats": 2, "cpu": "any", "seconds": 1,
            "counters": res["counters"]}
    table = interleave.markdown(meta, {"fake": res})
    assert "| fake (wall) | heavy |" in table and "| fake (cpu) | floor |" in table
    assert "µs" in table


def test_counts_are_summarised_per_launch():
    slots = [{"none": 1000.0, "floor": 1500.0}, {"none": 1100.0, "floor": 1500.0}]
    rows = interleave.summarize(slots, ["none", "floor"], 10, "instructions")
    assert rows["none"]["region"] == pytest.approx(105.0)  # median count / launches
    assert rows["floor"]["per_launch_vs_none"][1] == pytest.approx(45.0)


def test_median_interval_narrows_with_more_pairs():
    import random

    rng = random.Random(1)
    few = [rng.gauss(0.1, 0.5) for _ in range(30)]
    many = [rng.gauss(0.1, 0.5) for _ in range(600)]
    lo_few, _, hi_few = interleave.median_ci(few)
    lo, mid, hi = interleave.median_ci(many)
    assert lo <= mid <= hi and hi - lo < (hi_few - lo_few) / 2
    assert lo < 0.1 < hi  # covers the true median here
    assert interleave.median_ci([1.0, 2.0]) == interleave.quartiles([1.0, 2.0])


def test_launches_option_times_regions_of_that_length(fake_variants):
    calls = []

    class Chosen(FakeWorkload):
        def region_n(self, n):
            calls.append(n)

    args = interleave.parse_args(["--cycles", "2", "--repeats", "1", "--launches", "7"])
    res = interleave.run_workload(Chosen, ["none", "heavy"], args, lambda: None)
    assert res["kernels"] == 7 and calls and set(calls) == {7}


def test_what_a_variant_notes_of_itself_reaches_the_table(fake_variants, monkeypatch):
    class Noting(Heavy):
        name = "noting"

        def notes(self):
            return {"enter_ns": 123.4, "enter_calls": 7}

    monkeypatch.setitem(variants.ALL, "noting", Noting)
    args = interleave.parse_args(["--cycles", "2", "--repeats", "1"])
    res = interleave.run_workload(FakeWorkload, ["none", "noting"], args, lambda: None)
    assert res["notes"] == {"noting": {"enter_ns": 123.4, "enter_calls": 7}}
    meta = {"gpu": "Fake GPU", "date": "2026-11-21", "torch": "-", "triton": "-",
            "commit": "abc", "cycles": 2, "repeats": 1, "cpu": "any", "seconds": 1}
    assert "fake, noting: enter_ns 123.4, enter_calls 7" in interleave.markdown(meta, {"fake": res})
