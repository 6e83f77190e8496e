"""The help: every key, and the breakpoint language in a nutshell.

Built as one Rich ``Text`` (not Markdown, whose parsing and layout took ~0.4 s to open).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

KEYS = (
    ("Moving", (
        ("n", "next iteration of the current loop (nested loops run to their end)"),
        ("N", "previous iteration (step back)"),
        ("s", "step: into a nested loop's iterations, else node by node through the next "
              "iteration"),
        ("f", "finish: to the last iteration of the current loop"),
        ("c", "continue to the next breakpoint (or the end)"),
        ("space, ctrl+c", "pause a running continue"),
        ("R", "reverse-continue: back to the previous breakpoint hit"),
        ("g / G", "first / last recorded iteration"),
        (":", "go to an iteration: 17, -1 (the last), outer/inner 3 5"),
        ("t", "timeline: the loop's iterations as a strip (←/→, Home/End, PgUp/PgDn move)"),
        ("p", "plot expressions over the iterations: mean(h); norm(c) (the Plot tab)"),
        ("r", "restart the run (breakpoints and watches are kept)"),
    )),
    ("Looking", (
        ("b", "add a breakpoint (a condition such as i == 7, not cond, isnan(h).any())"),
        ("w", "add a watch (shown at every stop)"),
        ("i", "inspect a value (h, h[0, :4]); starts with the graph's selected node"),
        ("/", "find a node of the body by name or type (/ Enter again: the next match)"),
        ("F3 / shift+F3", "the next / previous match of the last find (k of n in the graph)"),
        ("[ / ]", "previous / next tab of the bottom panel"),
        ("z", "maximise the focused pane (graph, loop, tabs); again to restore"),
        ("tab", "move the focus: graph, pseudo-code, tabs"),
        ("ctrl+p", "command palette: every command by name, and every node"),
        ("?", "this help"),
        ("q", "quit (a running command is stopped)"),
    )),
    ("In the graph", (
        ("arrows", "move the cursor from box to box"),
        ("enter", "the selected node's full value in the Inspector; on a nested loop's box, "
                  "its body"),
        ("+ / -", "open / close a group of a big body in place (enter opens, escape closes "
                  "too)"),
        ("escape", "back from a nested body"),
        ("v", "boxes: fit the pane, wide, compact"),
        ("pgup / pgdn / home / end", "scroll"),
    )),
    ("In the tables and the Inspector", (
        ("t / enter", "enable or disable the selected breakpoint"),
        ("e / d", "edit / delete the selected breakpoint (d deletes a watch too)"),
        ("I", "ignore the next N hits of the selected breakpoint"),
        ("escape", "leave the Inspector's input (keys work again)"),
    )),
)

LANGUAGE = (
    "Names: i (the iteration that just finished, of the loop being checked), cond (the body "
    "condition it produced: false means the loop ends), trip_count, loop, every body Parameter, "
    "Result and node by name, and t[\"any name\"]. A model value named like a built-in (a "
    "Parameter called i) is t[\"i\"]; to stop in one loop only, add the loop's name before a "
    "colon: rows_loop: i == 2. Numbers, comparisons (==, not =), and/or/not, arithmetic, "
    "indexing and slicing, .shape, and any all isnan isinf isfinite abs min max mean sum norm "
    "shape size changed(x) (the reductions also as methods: isnan(h).any())."
)


def help_text() -> Text:
    """The help as one plain Text (for tests and for copying)."""
    t = Text()
    t.append("loopdbg keys\n\n", style="bold underline")
    for title, rows in KEYS:
        t.append(f"{title}\n", style="bold")
        for key, what in rows:
            t.append(f"  {key:<26}", style="bold cyan")
            t.append(f"{what}\n")
        t.append("\n")
    t.append("The breakpoint language\n", style="bold")
    t.append(LANGUAGE + "\n")
    return t


def help_renderable():
    """The help laid out for the screen: keys in a column, what they do wrapped beside them."""
    from rich.console import Group
    from rich.table import Table

    parts: list = [Text("loopdbg keys\n", style="bold underline")]
    for title, rows in KEYS:
        parts.append(Text(title, style="bold"))
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold cyan", no_wrap=True, min_width=28)
        table.add_column()
        for key, what in rows:
            table.add_row("  " + key, what)
        parts += [table, Text("")]
    parts += [Text("The breakpoint language", style="bold"), Text(LANGUAGE)]
    return Group(*parts)


class HelpPanel(VerticalScroll, can_focus=True):
    """Every key, shown in place of the panes (``?``; ``escape``, ``q`` or ``?`` closes it).

    A widget of the main screen, shown and hidden, rather than a modal screen: pushing a screen
    costs Textual a restyle and a repaint of the screen behind (0.1-0.4 s); showing this costs a
    layout of what is already styled."""

    DEFAULT_CSS = """
    HelpPanel { display: none; height: 1fr; border: round $accent; padding: 0 1; }
    """
    BINDINGS = [("escape,q,question_mark", "app.help", "close the help")]

    def compose(self) -> ComposeResult:
        yield Static(help_renderable())
