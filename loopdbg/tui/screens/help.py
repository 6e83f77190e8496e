"""The help screen: every key, and the breakpoint language in a nutshell."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# loopdbg keys

| key | what it does |
|---|---|
| `n` | next iteration of the current loop (nested loops run to their end) |
| `N` | previous iteration (step back) |
| `s` | step: into a nested loop's iterations, else node by node through the next iteration |
| `f` | finish: to the last iteration of the current loop |
| `c` | continue to the next breakpoint (or the end) |
| `space` | pause a running continue |
| `b` | add a breakpoint (a condition such as `i == 7`, `not cond`, `isnan(h).any()`) |
| `w` | add a watch (shown at every stop) |
| `i` | inspect a value (`h`, `h[0, :4]`) |
| `R` | reverse-continue: back to the previous breakpoint hit |
| `g` / `G` | first / last recorded iteration |
| `r` | restart the run |
| `q` | quit |
| `ctrl+p` | command palette |

In the breakpoints tab: `t`/`enter` enables or disables, `e` edits, `d` deletes.

## The breakpoint language
Names: `i` (the iteration that just finished), `cond` (the body condition it produced: false means
the loop ends), `trip_count`, `loop`, every body Parameter, Result and node by name, and
`t["any name"]`. Numbers, comparisons, `and`/`or`/`not`, arithmetic, indexing and slicing, `.shape`,
and `any all isnan isinf isfinite abs min max mean sum norm shape size changed(x)` (the
reductions also as methods: `isnan(h).any()`).

## The graph
Click a nested loop's box to open its body; `Esc` (with the graph focused) comes back. Arrow keys
pan the graph when it has the focus.
"""


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 90%; max-width: 110; height: 90%; border: round $accent;
                                  background: $panel; }
    """
    BINDINGS = [("escape,q,question_mark", "app.pop_screen", "close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Markdown(HELP)
