"""``python -m headlab``: the same as the ``headlab`` command."""

import sys

from headlab.cli import main

sys.exit(main())
