"""Several sessions at once, deactivate/activate, and flushing on deactivate."""

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import proton  # noqa: E402


@pytest.fixture
def x():
    x = torch.ones(16, device="cuda")
    torch.cuda.synchronize()
    return x


def launch(x, scope, n):
    with proton.scope(scope):
        for _ in range(n):
            x + x


def scope_count(prof, scope):
    """Kernels under a top-level scope; 0 where the scope never made it into the profile."""
    return prof.count(prof.node(scope)) if prof.has(scope) else 0


def test_two_sessions_at_once(tmp_path, read_profile, x):
    first, second = str(tmp_path / "first"), str(tmp_path / "second")
    s1 = proton.start(first)
    s2 = proton.start(second)
    assert s1 != s2
    launch(x, "both", 7)
    proton.deactivate(s1)
    launch(x, "only_second", 5)
    proton.finalize()  # every session

    p1, p2 = read_profile(first), read_profile(second)
    assert scope_count(p1, "both") == 7, p1.render()
    assert scope_count(p2, "both") == 7, p2.render()
    assert scope_count(p1, "only_second") == 0, p1.render()
    assert scope_count(p2, "only_second") == 5, p2.render()


def test_finalize_one_session_keeps_the_other(tmp_path, read_profile, x):
    first, second = str(tmp_path / "first"), str(tmp_path / "second")
    s1 = proton.start(first)
    s2 = proton.start(second)
    launch(x, "both", 3)
    proton.finalize(s1)
    launch(x, "after", 4)
    proton.finalize(s2)

    p1, p2 = read_profile(first), read_profile(second)
    assert (scope_count(p1, "both"), scope_count(p1, "after")) == (3, 0), p1.render()
    assert (scope_count(p2, "both"), scope_count(p2, "after")) == (3, 4), p2.render()


def test_deactivate_activate(out_name, read_profile, x):
    session = proton.start(out_name)
    launch(x, "a", 6)
    proton.deactivate(session)
    launch(x, "b", 9)  # not profiled
    proton.activate(session)
    launch(x, "c", 2)
    proton.finalize()

    prof = read_profile()
    assert scope_count(prof, "a") == 6, prof.render()
    assert scope_count(prof, "b") == 0, prof.render()
    assert scope_count(prof, "c") == 2, prof.render()
    assert prof.count() == 8


def test_deactivate_with_flushing(out_name, read_profile, to_profile, x):
    session = proton.start(out_name)
    launch(x, "before", 25)
    proton.deactivate(session, flushing=True)
    get = getattr(getattr(proton, "data", None), "get", None)
    if get is not None:
        # Flushed: the records are in the session's data without waiting for finalize.
        flushed = to_profile(get(session))
        assert scope_count(flushed, "before") == 25, flushed.render()
    proton.activate(session)
    launch(x, "after", 5)
    proton.finalize()

    prof = read_profile()
    assert scope_count(prof, "before") == 25, prof.render()
    assert scope_count(prof, "after") == 5, prof.render()
