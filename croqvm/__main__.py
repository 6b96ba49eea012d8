"""``python -m croqvm`` is the ``croqvm`` command."""
import sys

from .cli.main import entry

sys.exit(entry())
