"""mode="pcsampling" without a GPU: the mode strings are accepted (as triton.profiler spells
them), malformed ones are errors naming the option, and the program runs on (GPU parts:
tests/gpu/test_gpu_pc_sampling.py)."""

import json
import subprocess
import sys

import pytest

import proton


class PCSampling:
    """What triton.profiler's mode.PCSampling(interval=N) stringifies to."""

    def __init__(self, interval=1000):
        self.interval = interval

    def __str__(self):
        return f"pcsampling:interval={self.interval}"


@pytest.mark.parametrize("mode", ["pcsampling", "pcsampling:interval=65536", PCSampling(),
                                  "pcsampling:interval=131072:buffer_mb=8:sleep_ms=10:adapt=0"])
def test_mode_is_accepted_and_the_profile_is_written(tmp_path, mode):
    name = str(tmp_path / "p")
    proton.start(name, mode=mode)
    with proton.scope("work", metrics={"bytes": 8}):
        pass
    proton.finalize()
    with open(name + ".hatchet") as f:
        root = json.load(f)[0]
    assert any(c["frame"]["name"] == "work" for c in root["children"])


@pytest.mark.parametrize("mode,word", [("pcsampling:interval=0", "interval"),
                                       ("pcsampling:interval=fast", "interval"),
                                       ("pcsampling:colour=1", "colour"),
                                       ("pcsampling:interval", "needs a value")])
def test_malformed_mode_is_an_error_naming_the_option(tmp_path, mode, word):
    with pytest.raises(ValueError, match=word):
        proton.start(str(tmp_path / "p"), mode=mode)


def test_cli_mode_pcsampling(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import proton\nwith proton.scope('cli'):\n    pass\nprint('ran')\n")
    r = subprocess.run([sys.executable, "-m", "proton", "--mode", "pcsampling", "-n",
                        str(tmp_path / "cli"), str(script)], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "ran" in r.stdout
    assert (tmp_path / "cli.hatchet").exists()
