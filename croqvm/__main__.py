"""``python -m croqvm`` is the ``croqvm`` command."""
import sys

from .cli.launch import entry

sys.exit(entry())
