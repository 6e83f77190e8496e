"""A footer that shows the keys that fit, most needed first, instead of cutting the last one.

Textual's footer lays every shown binding in a row and clips what does not fit ("f fini"). This
one keeps the order of importance — the app's first nine keys (what a first hour needs: n s c b
q ? f i z), the focused widget's own (the breakpoint table's ``t e d``, the graph's ``enter``),
then the app's others in the order of its BINDINGS — and drops
whole keys from the end, always keeping ``q quit`` and ``? help`` (which lists the rest). It turns compact
below 120 columns, and lays itself out again when the terminal is resized.
"""

from __future__ import annotations

from textual.widgets import Footer
from textual.widgets._footer import FooterKey

ALWAYS = ("help", "quit")   # actions never dropped
PALETTE_WIDTH = 13          # "^p palette" with its separator
APP_FIRST = 9               # the app's keys shown before the focused widget's (n s c b q ? f i z)
PALETTE_FROM = 100          # narrower: no "^p palette" (ctrl+p still opens it; ? lists it)


class KeyFooter(Footer):
    """The app's footer (see the module docstring)."""

    def on_resize(self, event) -> None:
        compact = event.size.width < 120
        if compact != self.compact:
            self.compact = compact
        self.call_after_refresh(self.recompose)

    _composed = None          # what the keys shown were made from (``recompose`` skips a repeat)

    async def recompose(self) -> None:
        """Make the keys again only when what they show changed: focus moves, bindings and
        resizes ask often (four times while the app opens), and each costs ~40 ms."""
        if self.is_attached:
            shown = self._shown()
            if shown == self._composed:
                return
        await super().recompose()

    def _shown(self) -> tuple:
        """(the keys that fit, the palette's key or None, compact) as plain values."""
        app = self.app
        width = self.size.width or app.size.width
        shown = []
        for node, binding, enabled, tooltip in self.screen.active_bindings.values():
            if binding.show:
                own = node is not app and node is not self.screen
                shown.append((own, binding, enabled, tooltip))
        # the app's first keys, then the focused widget's, then the app's others
        apps = [item for item in shown if not item[0]]
        owns = [item for item in shown if item[0]]
        shown = apps[:APP_FIRST] + owns + apps[APP_FIRST:]
        seen_actions = set()
        items = []
        for _, binding, enabled, tooltip in shown:
            if binding.action in seen_actions:
                continue
            seen_actions.add(binding.action)
            items.append((binding, enabled, tooltip, app.get_key_display(binding)))
        palette_shown = self.show_command_palette and width >= PALETTE_FROM
        room = width - (PALETTE_WIDTH if palette_shown else 0)
        keys = tuple(_fit(items, room, self.compact))
        palette = None
        if palette_shown and app.ENABLE_COMMAND_PALETTE:
            palette = self.screen.active_bindings.get(app.COMMAND_PALETTE_BINDING)
            if palette is not None:
                _, binding, enabled, _ = palette
                palette = (binding, enabled, app.get_key_display(binding))
        return keys, palette, self.compact

    def compose(self):
        # The app's keys are known at once: shown with the first frame, not after the focus
        # settles (the focused widget's keys follow then, with a recompose if they change).
        self._composed = keys, palette, _ = self._shown()
        for binding, enabled, tooltip, key in keys:
            yield _born(FooterKey(binding.key, key, binding.description, binding.action,
                                  disabled=not enabled, tooltip=tooltip),
                        self.compact).data_bind(compact=Footer.compact)
        if palette is not None:
            binding, enabled, key = palette
            # the palette's key is always compact (as Textual's footer makes it)
            yield _born(FooterKey(binding.key, key, binding.description, binding.action,
                                  classes="-command-palette", disabled=not enabled,
                                  tooltip=binding.tooltip or binding.description), True)


def _born(key: FooterKey, compact: bool) -> FooterKey:
    """``key`` made compact or not before it is mounted. A FooterKey is born compact and learns
    the footer's width once mounted; each change of its class restyles it, and those restyles
    were about a fifth of the CPU that opening the app cost (~15 keys, made twice)."""
    key.set_reactive(FooterKey.compact, compact)
    key.set_class(compact, "-compact", update=False)
    return key


def _cost(key: str, description: str, compact: bool) -> int:
    """Columns a FooterKey takes: key, description, padding and margin (Footer's CSS)."""
    return len(key) + len(description) + (2 if compact else 3)


def _fit(items, room: int, compact: bool) -> list:
    """The items that fit in ``room`` columns, in order, keeping those in ``ALWAYS``."""
    must = sum(_cost(k, b.description, compact) for b, _, _, k in items if b.action in ALWAYS)
    used, out = must, []
    for item in items:
        binding, _, _, key = item
        if binding.action in ALWAYS:
            out.append(item)
            continue
        cost = _cost(key, binding.description, compact)
        if used + cost <= room:
            out.append(item)
            used += cost
    return out
