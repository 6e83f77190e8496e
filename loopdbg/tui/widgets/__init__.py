"""The panels of the loopdbg UI; each shows part of a session's Stop and never computes semantics."""
