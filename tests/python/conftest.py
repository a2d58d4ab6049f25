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
