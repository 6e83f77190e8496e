"""The app's stylesheet, each CSS source parsed once per process rather than once per app.

Textual parses the CSS an app uses (``app.tcss`` and the ``DEFAULT_CSS`` of every widget class in
it, some forty sources) anew for each ``App``: ~40 ms of opening the app, paid again by each of the
UI tests' apps. The rule sets a source parses to depend only on its text, where it was read from,
its scope and the theme's variables, and Textual already hands the same rule sets out again within
one app; here they are kept for the process, per set of variables (one per theme).
"""

from __future__ import annotations

from typing import ClassVar

from textual.css.stylesheet import Stylesheet


class SharedStylesheet(Stylesheet):
    """A ``Stylesheet`` whose parsed sources are shared by every app of the process."""

    PARSED: ClassVar[dict[tuple, dict]] = {}     # variables -> source -> its rule sets
    THEMES = 8               # sets of variables kept at most

    _variables_seen = None   # the variables ``_parsed`` is for (set_variables replaces them)
    _parsed: dict = {}

    def _parse_rules(self, css: str, read_from, is_default_rules: bool = False,
                     tie_breaker: int = 0, scope: str = ""):
        if self._variables is not self._variables_seen:
            self._variables_seen = self._variables
            key = tuple(sorted(self._variables.items()))
            if key not in self.PARSED and len(self.PARSED) >= self.THEMES:
                self.PARSED.clear()
            self._parsed = self.PARSED.setdefault(key, {})
        source = (css, read_from, is_default_rules, tie_breaker, scope)
        rules = self._parsed.get(source)
        if rules is None:
            rules = super()._parse_rules(css, read_from, is_default_rules, tie_breaker, scope)
            self._parsed[source] = rules
        return rules
