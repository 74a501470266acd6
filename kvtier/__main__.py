"""``python -m kvtier``: the same as the ``kvtier`` console script."""

import sys

from kvtier.commands import main

sys.exit(main())
