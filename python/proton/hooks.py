"""Launch hooks (``hook="triton"``); see issue 4."""
