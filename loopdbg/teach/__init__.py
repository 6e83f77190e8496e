"""Teaching: pseudo-code of loops, loop modes, explanations (no UI here)."""
