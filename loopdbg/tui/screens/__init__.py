"""Modal screens: help and the prompts for breakpoints, watches and tensor slices."""
