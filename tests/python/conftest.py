import json
import pytest

import proton


@pytest.fixture
def out(tmp_path):
    """Output name for a session, and a reader for the file it writes."""

    class Out:
        name = str(tmp_path / "profile")
        path = name + ".hatchet"

        def read(self):
            with open(self.path) as f:
                return json.load(f)

    yield Out()
    # Leave no session behind for the next test.
    proton.finalize()


def pytest_configure(config):
    # Tests that need Triton installed (helper "durable" registers it in pyproject too).
    config.addinivalue_line("markers", "triton: needs Triton installed (3.6 or newer)")
