"""``python -m croqvm`` is the ``croqvm`` command."""
import sys

from .cli import entry

sys.exit(entry())
