"""``python -m codeward`` is the ``codeward`` command."""

import gc
import sys

gc.disable()  # while the command line's modules import: main() turns it on (a server: once it serves)

from codeward.apps.cli import main  # noqa: E402

sys.exit(main())
