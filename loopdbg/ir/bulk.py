"""Building a model's many small objects at once, with Python's cyclic garbage collector paused.

Reading a 50,000-layer model makes millions of objects (elements, ports, layers, edges), and so
does planning it; none of them is cyclic garbage. Left running, the collector starts a full pass
over every live object of the process each time enough of them have been made, so reading gets
slower the more the process already holds (a debugging session, a benchmark): quadratic in the
end. ``paused()`` turns it off for the duration and back on (if it was on) afterwards; what was
made meanwhile is collected as usual later.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def paused():
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
