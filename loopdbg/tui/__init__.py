"""The Textual UI. Only this package imports textual (and rich)."""
