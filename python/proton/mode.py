"""Backend modes (placeholders until the corresponding backends exist)."""
