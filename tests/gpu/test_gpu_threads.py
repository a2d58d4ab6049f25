"""Launches from several Python threads: each thread's scopes are its own; a thread with no
scopes of its own attributes its kernels to the main thread's current scopes."""

import threading

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import proton  # noqa: E402

THREADS = 4
LAUNCHES = 50


def test_each_thread_has_its_own_scopes(out_name, read_profile, run_threads):
    x = torch.ones(16, device="cuda")
    torch.cuda.synchronize()
    barrier = threading.Barrier(THREADS)

    def work(i):
        stream = torch.cuda.Stream()  # one stream per thread: launches really overlap
        barrier.wait()
        with torch.cuda.stream(stream), proton.scope(f"thread{i}"):
            for _ in range(LAUNCHES * (i + 1)):
                x + x
        stream.synchronize()

    proton.start(out_name)
    run_threads(work, THREADS)
    proton.finalize()

    prof = read_profile()
    for i in range(THREADS):
        assert prof.count(prof.node(f"thread{i}")) == LAUNCHES * (i + 1), prof.render()
    assert prof.kernels(direct=True) == [], prof.render()


def test_thread_without_scopes_uses_main_threads_scope(out_name, read_profile, run_threads):
    x = torch.ones(16, device="cuda")
    torch.cuda.synchronize()

    def work(_):
        for _ in range(LAUNCHES):
            x * x
        torch.cuda.current_stream().synchronize()

    proton.start(out_name)
    with proton.scope("main"):
        run_threads(work, 2)
    proton.finalize()

    prof = read_profile()
    assert prof.count(prof.node("main")) == 2 * LAUNCHES, prof.render()
    assert prof.kernels(direct=True) == [], prof.render()
