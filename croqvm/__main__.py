"""``python -m croqvm`` is the ``croqvm`` command."""
import sys

from .cli import main

sys.exit(main())
