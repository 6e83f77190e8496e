"""loopdbg's commands in the command palette (ctrl+p): every key's action, findable by name, plus
one entry per node of the shown body ("find node …") and per nested loop ("open body of …").

Names from the model are shown as plain text (``Text``, ``Content``) and the help lines are
escaped: the palette reads both as markup otherwise.
"""

from __future__ import annotations

from functools import partial

from rich.text import Text
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.markup import escape

from loopdbg.text import safe

# (title, help, action and its argument as the app's action string)
COMMANDS = (
    ("next iteration", "n · the next iteration of the current loop", "command('next')"),
    ("step", "s · into a nested loop, else node by node", "command('step_node')"),
    ("continue", "c · to the next breakpoint or the end", "command('continue')"),
    ("finish the loop", "f · to the last iteration of the current loop", "command('finish')"),
    ("back one iteration", "N · the previous iteration", "command('back')"),
    ("reverse-continue", "R · back to the previous breakpoint hit", "command('reverse')"),
    ("first recorded iteration", "g", "command('first')"),
    ("last recorded iteration", "G", "command('last')"),
    ("go to iteration", ": · 17, -1 (the last), outer/inner 3 5", "jump"),
    ("timeline of the loop", "t · its iterations with breakpoint hits, NaN, the end", "timeline"),
    ("plot over the iterations", "p · mean(NAME); norm(NAME) in the Plot tab", "plot"),
    ("restart the run", "r · breakpoints and watches are kept", "command('restart')"),
    ("pause", "space · stop a running continue", "pause"),
    ("add a breakpoint", "b · a condition such as i == 3", "add_breakpoint"),
    ("add a watch", "w · an expression shown at every stop", "add_watch"),
    ("inspect a value", "i · a name or a slice, in the Inspector", "inspect"),
    ("find a node by name", "/ · moves the graph's cursor to it", "find"),
    ("next match of the find", "F3 · shift+F3 the previous", "find_again(1)"),
    ("maximise the focused pane", "z · again to restore", "zoom"),
    ("box size: fit, wide, compact", "v · in the graph", "graph_detail"),
    ("next tab", "] · Back edges, Scan outputs, Inspector, ...", "tab(1)"),
    ("previous tab", "[", "tab(-1)"),
    ("help", "? · every key", "help"),
    ("quit", "q", "quit"),
)


class LoopdbgCommands(Provider):
    """The palette's loopdbg entries (see the module docstring)."""

    def _entries(self):
        app = self.app
        for title, help_text, action in COMMANDS:
            yield title, help_text, partial(app.run_action, action)
        graph = getattr(app, "graph", None)
        session = getattr(app, "session", None)
        spec = getattr(graph, "_spec", None)
        if session is not None:
            for path in session.engine.loops:
                if spec is not None and path.startswith(spec.path + "/") and \
                        "/" not in path[len(spec.path) + 1:]:
                    yield (f"open the body of {safe(path)}", "the nested loop's graph (Esc returns)",
                           partial(app.open_nested, path))
        for name, type_ in (graph.findable() if graph is not None else ()):
            yield (f"find node {safe(name)}", f"{safe(type_)} in the graph",
                   partial(app.find_node, name))

    async def discover(self) -> Hits:
        for title, help_text, callback in self._entries():
            if title.startswith("find node "):
                continue                    # listed when searched for, not on opening
            yield DiscoveryHit(Text(title), callback, text=title, help=escape(help_text))

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self._entries():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, _highlight(matcher, title), callback, text=title,
                          help=escape(help_text))


def _highlight(matcher, title: str) -> Content:
    """``title`` with the matched letters marked, read as plain text (the matcher's own
    ``highlight`` reads it as markup)."""
    content = Content(title)
    _, offsets = matcher.fuzzy_search.match(matcher.query, title)
    for k in offsets:
        if not title[k].isspace():
            content = content.stylize(matcher.match_style, k, k + 1)
    return content
