"""The If branches the body graph opens from an If's box (a mixin of ``GraphView``).

Enter on an If's box opens the branch taken at this stop, drawn as a body is, its values
computed again from the If's inputs (``loopdbg.view.branch``); ``o`` shows the other branch on
the same inputs; Escape comes back with the cursor on the If. An If inside a branch opens the
same way: the opened branches are a chain, the first opened in the loop body shown.
"""

from __future__ import annotations

from loopdbg.text import safe
from loopdbg.view.branch import WORD, ModelGraph, open_branch


class IfBranches:
    """What ``GraphView`` does with the If branches opened in it (``self.branches``)."""

    def _show_body(self, spec, values, changed, current) -> None:
        """Draw loop ``spec``'s body, or the If branch opened in it (its values computed from
        the body's at this stop)."""
        chain = self.branches
        if not chain or chain[0].parent is not spec:
            self.branches = []
            self._set_spec(spec, values, changed, current)
            return
        self._branch_base = values
        for branch in chain:
            branch.fill(values)
            values = branch.values
        last = chain[-1]
        other = "else" if last.role == "then_body" else "then"
        self._title += "".join(f" › {safe(b.layer.name)}:{WORD[b.role]}" for b in chain[:-1])
        self._title += f" › {last.title()}" + (f" — {last.failure}" if last.failure else "")
        self._set_spec(last, values, set(), None)
        self.border_subtitle = f"{last.status()} · o: {other} · Esc: back"

    _model_graph = None

    def _show_model_graph(self, view) -> None:
        """A model without loops: its own graph when its control flow is If (each If's box
        opens its branches), else one sentence."""
        session = view.session
        if not session.engine.ifs:
            self._title = "model"
            self._set_text(["this model has no loop and no If: no control flow to step through "
                            "(its outputs are in the Outputs tab)"])
            return
        graph = self._model_graph
        if graph is None or graph[0] is not session.engine:
            graph = self._model_graph = (session.engine, ModelGraph(session.engine,
                                                                    session.inputs))
        model = graph[1]
        self._title = "model" if self.branches else \
            "model (no loop; Enter on an If opens its branch)" + \
            (f" — its values could not be computed: {model.failure}" if model.failure else "")
        self._show_body(model, model.values, set(), None)

    def _open_branch(self, layer) -> bool:
        """Enter on an If's box: open the branch taken at this stop (``o``: the other one)."""
        branch = open_branch(self._view.session.engine, self._spec, layer, self._values)
        if branch is None:
            return False
        self.branches.append(branch)
        self.show(self._view)
        return True

    def action_other_branch(self) -> None:
        """``o`` in an opened If branch: the If's other branch, on the same inputs."""
        if not self.branches or self._view is None:
            return
        parent = self.branches[-2].values if len(self.branches) > 1 else self._branch_base
        self.branches[-1] = self.branches[-1].other(parent)
        self.show(self._view)

    def close_branch(self) -> bool:
        """Escape in a branch: back to where its If is, the cursor on it; False if none."""
        if not self.branches or self._view is None:
            return False
        closed = self.branches.pop()
        self._pending = closed.layer.id          # the cursor back on the If's box
        self.show(self._view)
        return True
