"""The HTML flame graph in headless Chromium: it renders the tree, and a click zooms.

Skipped unless both the proton-viewer binary ($PROTON_VIEWER or PATH) and a Chromium
(chromium, chromium-browser or google-chrome on PATH) are available.
"""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from test_viewer_cli import VIEWER, _is_ours  # the binary under test, and that it is ours

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "viewer"
CHROMIUM = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(b)), None)


pytestmark = pytest.mark.skipif(not CHROMIUM or not _is_ours(VIEWER),
                                reason="needs the C++ proton-viewer and a Chromium")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    out = tmp_path_factory.mktemp("html") / "profile.html"
    r = subprocess.run([VIEWER, "--output-format", "html", "-m", "time/ms", "-o", str(out),
                        str(FIXTURES / "triton_style.json")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


def chromium(*args):
    cmd = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
           "--window-size=1000,400", "--virtual-time-budget=3000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def frames(dom):
    """(name, width in px) of every drawn frame."""
    found = []
    for attrs in re.findall(r'<div class="f[^"]*"([^>]*)>', dom):
        name = re.search(r'data-name="([^"]*)"', attrs).group(1)
        width = float(re.search(r"width: ([0-9.]+)px", attrs).group(1))
        found.append((name, width))
    return dict(found)


def test_tree_is_drawn(page):
    dom = chromium("--dump-dom", page.as_uri()).stdout
    drawn = frames(dom)
    assert {"ROOT", "matmul", "matmul_kernel", "attention", "_attn_fwd"} <= drawn.keys()
    assert "__proton_launch_metadata" not in drawn
    # Widths follow time: matmul_kernel is 4 of the root's 6 ms.
    assert drawn["matmul_kernel"] / drawn["ROOT"] == pytest.approx(4 / 6, rel=0.02)


def test_click_zooms(page):
    dom = chromium("--dump-dom", page.as_uri() + "#click=matmul").stdout
    assert 'data-focus="matmul"' in dom
    drawn = frames(dom)
    assert drawn["matmul_kernel"] == pytest.approx(drawn["ROOT"])  # now full width
    assert "attention" not in drawn  # outside the zoomed subtree


def test_screenshot_shows_the_graph(page, tmp_path):
    Image = pytest.importorskip("PIL.Image")

    def kernel_row(url):
        """Colours at the left and right end of the row where the first kernel bar is drawn."""
        shot = tmp_path / "shot.png"
        chromium(f"--screenshot={shot}", url)
        image = Image.open(shot).convert("RGB")
        width, height = image.size
        for y in range(height):
            r, g, b = image.getpixel((40, y))
            if r > 180 and b < 120 and r - g > 40:  # kernels are drawn in warm hues
                return image.getpixel((40, y)), image.getpixel((width - 40, y))
        pytest.fail("no kernel frame visible in the screenshot")

    left, right = kernel_row(page.as_uri())
    assert left != right, "before zooming, matmul_kernel should not span the whole row"
    left, right = kernel_row(page.as_uri() + "#click=matmul")
    assert left == right, "after clicking matmul, matmul_kernel should span the whole row"


def test_finding_click_zooms_to_its_frame(tmp_path):
    out = tmp_path / "advise.html"
    r = subprocess.run([VIEWER, "--output-format", "html", "-o", str(out),
                        str(FIXTURES / "advise_profile.json")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    dom = chromium("--dump-dom", out.as_uri() + "#finding=1").stdout
    listed = re.findall(r'<a href="#finding=\d+" class="finding"[^>]*>([^<]*)</a>', dom)
    assert [t.split()[1] for t in listed] == ["launch_bound", "roofline", "hint.host_calls",
                                                 "hint.pcsampling"]
    assert "loss &gt; copy_kernel" in listed[1]
    assert 'data-focus="copy_kernel"' in dom  # the roofline finding's frame, zoomed
    assert re.search(r'<div class="f focus sel"[^>]*data-name="copy_kernel"', dom)
