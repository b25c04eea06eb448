"""``python -m grue_bench``: the ``grue`` command of this interpreter's package, whatever ``grue``
is first on PATH (tests and scripts run it so, to test the code they import)."""

import sys

from grue_bench.cli import main

if __name__ == "__main__":
    sys.exit(main())
