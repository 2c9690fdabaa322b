"""``python -m headlab.cli`` (as ``torchrun -m headlab.cli`` runs it): the same as the ``headlab`` command."""

import sys

from headlab.cli.entry import main

sys.exit(main())
