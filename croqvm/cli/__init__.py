"""The ``croqvm`` command: its commands, option values, result summaries, the progress
line and the cache of compiled modules."""
