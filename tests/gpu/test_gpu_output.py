"""What finalize writes: the device map, Hatchet compatibility, dropped-record reports."""

import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import proton  # noqa: E402


def small_profile(out_name):
    x = torch.ones(16, device="cuda")
    proton.start(out_name)
    with proton.scope("work"):
        for _ in range(3):
            x + x
    proton.finalize()


def test_finalize_fills_device_map(out_name, read_profile):
    small_profile(out_name)
    prof = read_profile()

    device = prof.device_map["CUDA"]["0"]
    major, minor = torch.cuda.get_device_capability(0)
    props = torch.cuda.get_device_properties(0)
    assert str(device["arch"]).isdigit() and str(device["arch"]) == f"{major}{minor}", device
    assert device["num_sms"] == props.multi_processor_count > 0, device
    for key in ("clock_rate", "memory_clock_rate", "bus_width"):
        assert device[key] > 0, (key, device)
    (kernel,) = prof.kernels(prof.node("work"))
    assert kernel["metrics"]["device_id"] == "0" and kernel["metrics"]["device_type"] == "CUDA"


def test_device_map_has_the_sm_limits_and_kernels_their_launch_facts(out_name, read_profile):
    small_profile(out_name)
    prof = read_profile()
    device = prof.device_map["CUDA"]["0"]
    props = torch.cuda.get_device_properties(0)
    assert device["max_threads_per_sm"] == props.max_threads_per_multi_processor, device
    assert device["warp_size"] == getattr(props, "warp_size", 32), device
    assert device["max_warps_per_sm"] == device["max_threads_per_sm"] // device["warp_size"]
    for key in ("max_blocks_per_sm", "registers_per_sm", "shared_memory_per_sm"):
        assert device[key] > 0, (key, device)
    (kernel,) = prof.kernels(prof.node("work"))
    m = kernel["metrics"]
    # x + x on 16 elements: one small grid of one block size, a few registers.
    assert m["grid_x"] >= 1 and 16 <= m["block_x"] * m["block_y"] * m["block_z"] <= 1024, m
    assert 0 < m["registers_per_thread"] <= 255 and m["local_bytes_per_thread"] >= 0, m
    for key in ("static_shared_bytes", "dynamic_shared_bytes"):
        assert key in m, m
    assert "launch_config_varies" not in m, m  # three launches of one configuration
    # Properties outside the root's columns: Hatchet and Triton's viewer never sum them.
    assert prof.root["metric_rules"]["registers_per_thread"] == "pty"
    assert "registers_per_thread" not in prof.root_metrics


def test_no_temporary_files_left(out_name, tmp_path):
    small_profile(out_name)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["profile.hatchet"]


def test_llnl_hatchet_reads_the_file(out_name, read_profile):
    ht = pytest.importorskip("hatchet")
    small_profile(out_name)
    prof = read_profile()

    gf = ht.GraphFrame.from_literal([prof.root])  # how Triton's proton-viewer loads a file
    df = gf.dataframe
    assert "time (ns)" in df.columns and "count" in df.columns, df.columns
    kernel_rows = df[df["name"] == prof.kernels(prof.node("work"))[0]["frame"]["name"]]
    assert int(kernel_rows["count"].sum()) == 3, df


DROPS_SCRIPT = """
import sys, torch, proton
launches = int(sys.argv[2])
x = torch.ones(1, device="cuda")
torch.cuda.synchronize()
proton.start(sys.argv[1])
with proton.scope("flood"):
    for _ in range(launches):
        x + x
proton.finalize()
print("DONE")
"""


def test_dropped_records_are_reported(tmp_path, out_name, read_profile, run_script):
    # One buffer of a few records lent at a time: CUPTI must drop records while it waits for
    # the buffer back (every 20 ms at most), so drops happen on purpose here.
    launches = 100_000
    env = dict(os.environ, PROTON_BUFFER_SIZE="4096", PROTON_MAX_BUFFERS="1")
    result = run_script(DROPS_SCRIPT, out_name, launches, env=env)
    assert result.returncode == 0 and "DONE" in result.stdout, result.stderr[-4000:]

    prof = read_profile()
    dropped = int(prof.root_metrics.get("dropped_records", 0))
    counted = prof.count(prof.node("flood")) if prof.has("flood") else 0
    assert dropped > 0, f"no drop reported, {counted} of {launches} counted\n" + prof.render()
    assert counted < launches, prof.render()
    # Records were lost, but never silently. Known gap: with buffers refused this way, CUPTI's
    # count of dropped records (read for its global queue, also after the final flush) has come
    # out short of the kernels missing (H100: 632 of 100,000 unaccounted for).
    if counted + dropped < launches:
        pytest.xfail(f"{launches - counted} kernels missing, only {dropped} dropped records "
                     "reported")
