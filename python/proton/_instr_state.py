"""Whether kernel-side records are emitted now (an instrumentation session is on).

Kept apart from the hook so ``proton.language`` reads one module attribute per record op and
the flag has a single owner: ``proton.hooks.instrumentation`` sets it while an instrumentation
session runs and clears it when the last one ends, so nothing leaks into later sessions.
"""

on = False
