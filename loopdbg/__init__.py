"""loopdbg: watch the Loop and TensorIterator operations of a neural-network graph run.

Heavy modules (numpy, lxml, textual) are imported lazily so that ``loopdbg --version`` starts fast.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
