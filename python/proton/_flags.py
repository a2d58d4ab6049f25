"""Process-wide switches of the Python layer."""

# Set by the `proton` command: the script's own start()/finalize() calls are then ignored,
# because the command owns the session.
command_line = False
