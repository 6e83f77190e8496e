"""``python -m loopdbg``: the command line.

``-m`` puts the working directory first on ``sys.path``; it is taken off before anything else is
imported, so that a ``json.py`` or a ``numpy/`` in a model folder loopdbg is run in is never
imported (the loopdbg package itself is loaded already, and finds its modules by its own path).
"""

import os
import sys

if sys.path and sys.path[0] in ("", os.curdir, os.getcwd()):
    del sys.path[0]

from loopdbg.cli import main  # noqa: E402

raise SystemExit(main())
