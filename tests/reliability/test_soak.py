"""The soak of issue 15: a runaway loop with loopdbg's DEFAULT settings ends by loopdbg's own
budget (not the OOM killer), and the trace it recorded is usable.

It takes the machine's default budget (a quarter of its memory) to its end, so it is opt-in:
``LOOPDBG_SOAK=1 python -m pytest tests/reliability/test_soak.py``. The same path with a small
budget runs in every suite (test_memory_budget.py, test_trace_cap.py, test_runaway.py).
"""

from __future__ import annotations

import pytest

from relhelpers import endless_loop
from test_memory_budget import run_measured

pytestmark = [pytest.mark.no_alarm, pytest.mark.soak]     # opt-in: LOOPDBG_SOAK=1


def test_a_runaway_loop_with_default_settings_ends_by_loopdbgs_budget(tmp_path, cli):
    from loopdbg.cli.common import default_memory_budget

    xml, inputs = endless_loop(tmp_path / "model", scan=True, width=256)
    trace = tmp_path / "runaway.ltrace"
    code, err, peak = run_measured("run", xml, inputs, "--trace", trace, "-q", timeout=3600)
    assert code != 0 and "Traceback" not in err, err
    last = err.splitlines()[-1]
    assert "--max-memory" in last or "--max-trace-size" in last, last
    assert peak < default_memory_budget() + (1 << 30), f"peak RSS {peak >> 20} MiB"
    info = cli("trace", "info", trace, "--check")
    assert info.code == 0, info.err
    assert "run failed" in info.out
