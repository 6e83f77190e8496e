"""loopdbg: watch the Loop and TensorIterator operations of a neural-network graph run.

Heavy modules (numpy, lxml, textual) are imported lazily so that ``loopdbg --version`` starts fast.
What is imported here is light: ``machine`` takes its first look at the CPUs (BLAS's threads are
chosen from what other processes do between it and a run's start: ``loopdbg.ops.threads``).
"""

from loopdbg import machine  # noqa: F401 - the first look at the CPUs, as the process starts

__version__ = "0.1.0"

__all__ = ["__version__"]
