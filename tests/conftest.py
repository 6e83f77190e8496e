"""For every test: the user's state directory (saved breakpoints) is a fresh temporary one, so no
test reads or writes the real ~/.local/state."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _private_state_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
