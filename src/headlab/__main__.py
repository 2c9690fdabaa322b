"""``python -m headlab``: the same as the ``headlab`` command."""

import sys

from .cli import main

sys.exit(main())
