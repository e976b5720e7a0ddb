"""``python -m codeward`` is the ``codeward`` command."""

import sys

from codeward.cli import main

sys.exit(main())
