"""The app's prompts: breakpoints, watches, go-to, the inspector and the node search (a mixin of
``LoopdbgApp``, kept apart so that the app holds the layout and the commands).

Every error is shown in the prompt where it was typed; nothing typed is read as markup.
"""

from __future__ import annotations

from dataclasses import replace

from loopdbg.debug.breakpoints import EventLookup
from loopdbg.debug.complete import expression_words, loop_words, name_word, plain_words
from loopdbg.debug.jump import HINT, parse_target
from loopdbg.errors import LoopdbgError
from loopdbg.tui.messages import (DeleteBreakpoint, DeleteWatch, EditBreakpoint,
                                  IgnoreBreakpoint, ToggleBreakpoint)
from loopdbg.tui.screens.prompt import PromptBar
from loopdbg.tui.widgets.inspector import Inspector


def _check_expr(add):
    def check(text: str) -> str | None:
        try:
            add(text)
        except LoopdbgError as exc:
            return str(exc)
        return None
    return check


class PromptActions:
    """Actions b, w, i, / and the breakpoint table's messages (mixed into the app; the handlers
    go by their names, ``on_toggle_breakpoint``, since ``@on`` is not seen in a mixin)."""

    def ask(self, title, hint, check, done, value: str = "", words=None,
            to_graph: bool = False) -> None:
        """Ask for one line in the prompt bar (``loopdbg.tui.screens.prompt``); Tab completes
        from ``words`` (the expression words of the current loop when not given).
        ``to_graph``: the focus goes to the graph afterwards, not back where it was (a prompt
        whose answer shows a tab: a widget of another tab taking the focus back, the Timeline
        after `t`, would bring its own tab in front again)."""
        if words is None:
            words = self.expression_words()
        self.query_one(PromptBar).ask(title, hint, check, done, value, words,
                                      return_to=self.graph if to_graph else None)

    def _scope_names(self) -> set[str]:
        """The model names of the current loop (of every loop before one has run)."""
        known = self.session.breakpoints.known_names
        e = self.last_stop.event or (self.last_stop.node.event if self.last_stop.node else None)
        if e is not None and e.path in known:
            return set(known[e.path])
        return set().union(*known.values()) if known else set()

    def example(self) -> str:
        """A value of the current loop to show in the prompts' hints (``h`` is not in every
        model): its first body Parameter as an expression spells it."""
        e = self.last_stop.event or (self.last_stop.node.event if self.last_stop.node else None)
        first = self.view.first_loop
        spec = e.spec if e is not None else (first[0] if first else None)
        names = list(spec.param_names) if spec is not None else []
        return name_word(names[0]).text if names else "x"

    def expression_words(self) -> list:
        return expression_words(self._scope_names(), self.session.engine.loops)

    def action_add_breakpoint(self) -> None:
        scope = self.last_stop.event.path if self.last_stop.event else None

        def add(text):
            bp = self.session.breakpoints.add(text)
            self._shadow_note(bp.condition)

        def done(result):
            if result:
                self.show_again()
                self.log_line(f"breakpoint added: {result}")
        x = self.example()
        outer = next((p for p in self.session.engine.loops if "/" not in p), None) \
            if len(self.session.engine.loops) > 1 else None
        hint = f"i == 7   ·   not cond   ·   isnan({x}).any()" + (
            f"   ·   {outer}: i == 2" if outer else "")
        title = "Break after an iteration where … " + (f"(current loop: {scope})" if scope else "")
        self.ask(title, hint, _check_expr(add), done)

    def _shadow_note(self, expr) -> None:
        """Say when a built-in name hides a model value of the same name (``i`` vs t["i"])."""
        for name, loops in self.session.breakpoints.shadowed(expr).items():
            self.notify(f"'{name}' is the built-in (the iteration of the loop being checked); "
                        f"the model's own {name} (loop {', '.join(loops)}) is t[\"{name}\"]",
                        severity="warning", markup=False, timeout=8)

    def action_add_watch(self) -> None:
        def add(text):
            w = self.session.breakpoints.watch(text)
            self._shadow_note(w.expression)

        def done(result):
            if result:
                stop = self.last_stop
                if stop.event is not None:
                    stop = replace(stop, watches=tuple(
                        self.session.breakpoints.evaluate_watches(EventLookup(stop.event))))
                self.show_again(stop)
        x = self.example()
        self.ask("Watch the expression …", f"{x}.shape   ·   norm({x})   ·   changed({x})",
                 _check_expr(add), done)

    def action_inspect(self) -> None:
        def done(result):
            if result:
                self.show_value(result)
        start = self.graph.selected_expression or ""
        x = self.example()
        self.ask("Inspect …", f"{x}   ·   {x}[0, :4]   ·   t[\"name with spaces\"]",
                 lambda text: None, done, value=start, to_graph=True)

    def show_value(self, text: str) -> None:
        """Show ``text`` (a name or an expression) in the Inspector tab."""
        self.select_tab(Inspector.TAB_ID, then=lambda: self.panel_of(Inspector).inspect(text))

    def action_jump(self) -> None:
        """`:` go to an iteration (``loopdbg.debug.jump``): checked as typed, run in the engine
        thread (a target ahead runs the engine; space pauses it)."""
        def check(text: str) -> str | None:
            try:
                parse_target(text, list(self.session.engine.loops), self.session.current)
            except LoopdbgError as exc:
                return str(exc)
            return None

        def done(result):
            if result:
                self.action_command("jump", result)
        self.ask("Go to iteration …", HINT, check, done,
                 words=loop_words(self.session.engine.loops))

    def action_plot(self) -> None:
        """`p`: expressions to plot over the iterations (several: separated by ';')."""
        from loopdbg.tui.widgets.plot import PlotPanel

        panel = self.panel_of(PlotPanel)
        scope = self.last_stop.event.path if self.last_stop.event else None

        def check(text: str) -> str | None:
            texts = [t.strip() for t in text.split(";") if t.strip()]
            if not texts:
                return f"type an expression, e.g. mean({self.example()})"
            try:
                for t in texts:
                    self.session.breakpoints.compile(t, scope)
            except LoopdbgError as exc:
                return str(exc)
            return None

        def done(result):
            if result:                  # the panel shows the last stop, then the plot
                texts = [t.strip() for t in result.split(";") if t.strip()]
                self.select_tab(PlotPanel.TAB_ID, then=lambda: panel.set_expressions(texts))
        x = self.example()
        self.ask("Plot over the iterations …", f"mean({x})   ·   norm({x}); {x}[0]", check, done,
                 value="; ".join(panel.expressions), to_graph=True)

    def action_find(self) -> None:
        def check(text: str) -> str | None:
            if self.graph.find(text) is None:
                return f"no node of this body is named like {text!r}"
            return None

        def done(result):
            if result:
                self._last_find = result
                self.graph.focus()
        self.ask("Find a node by name or type (again: the next match; F3, shift+F3) …",
                 "cell   ·   Add   ·   h_next", check, done,
                 value=getattr(self, "_last_find", ""), words=plain_words(self._scope_names()))

    def action_find_again(self, step: int) -> None:
        """F3 / shift+F3: the next (previous) box matching the last find; without one, `/`."""
        text = getattr(self, "_last_find", "")
        if not text:
            self.action_find()
        elif self.graph.find(text, step) is None:
            self.notify(f"no node of this body is named like {text!r}", markup=False,
                        timeout=3)

    def find_node(self, name: str) -> None:
        self.graph.find(name)
        self.graph.focus()

    def open_nested(self, path: str) -> None:
        self.graph.opened = path
        self.graph.show(self.view)
        self.graph.focus()

    def on_toggle_breakpoint(self, message: ToggleBreakpoint) -> None:
        bp = self.session.breakpoints.get(message.number)
        bp.enabled = not bp.enabled
        self.show_again()

    def on_edit_breakpoint(self, message: EditBreakpoint) -> None:
        number = message.number
        bp = self.session.breakpoints.get(number)

        def done(result):
            if result:
                self.show_again()
        self.ask(f"Edit breakpoint {number}", bp.text,
                 _check_expr(lambda t: self.session.breakpoints.edit(number, t)), done,
                 value=bp.text)

    def on_ignore_breakpoint(self, message: IgnoreBreakpoint) -> None:
        number = message.number
        bp = self.session.breakpoints.get(number)

        def check(text: str) -> str | None:
            t = text.strip()
            if not t.isdigit() or int(t) >= 2**31:
                return "type how many of its next hits to ignore: 0, 1, 2, ..."
            return None

        def done(result):
            if result:
                bp.ignore = int(result.strip())
                self.show_again()
        self.ask(f"Ignore the next … hits of breakpoint {number} ({bp.text})", "0   ·   3", check,
                 done, value=str(bp.ignore))

    def on_delete_breakpoint(self, message: DeleteBreakpoint) -> None:
        self.session.breakpoints.delete(message.number)
        self.show_again()

    def on_delete_watch(self, message: DeleteWatch) -> None:
        self.session.breakpoints.delete_watch(message.number)
        self.show_again()

