"""``python -m proton ...``: the same as the ``proton`` command."""

import sys

from .cli import main

sys.exit(main())
