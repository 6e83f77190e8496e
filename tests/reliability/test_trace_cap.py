"""A trace has a size cap (`--max-trace-size`, default half the free disk where it is written):
the run stops there with one sentence, and the trace is closed and readable up to that point.
And `run --trace` records with breakpoints too (it used to drop the trace silently)."""

from __future__ import annotations

import pytest

from relhelpers import assert_refused, endless_loop


@pytest.fixture(scope="module")
def endless_scan(tmp_path_factory):
    return endless_loop(tmp_path_factory.mktemp("endless_scan"), scan=True, width=256)


def test_a_runaway_recording_stops_at_the_trace_cap_with_a_readable_trace(endless_scan, cli,
                                                                         tmp_path):
    xml, inputs = endless_scan
    trace = tmp_path / "cap.ltrace"
    line = assert_refused(cli("run", xml, inputs, "--trace", trace, "--max-trace-size", "2M",
                              "-q"), str(trace), "2.0 MiB", "--max-trace-size", "readable")
    assert "recorded iterations" in line
    size = trace.stat().st_size
    assert 2 << 20 < size < 4 << 20, size          # one flush past the cap, then the footer
    info = cli("trace", "info", trace, "--check")
    assert info.code == 0, info.err
    assert "run failed" in info.out and "--max-trace-size" in info.out
    export = cli("trace", "export", trace, "-o", tmp_path / "cap.npz")
    assert export.code == 0, export.err


def test_the_cap_is_documented_with_its_default(cli):
    out = cli("run", "--help")
    assert "--max-trace-size" in out.out and "free space" in out.out


@pytest.mark.parametrize("bad", ["0", "-1", "lots", "1e999G"])
def test_a_bad_cap_is_a_usage_error(endless_scan, cli, tmp_path, bad):
    xml, inputs = endless_scan
    out = cli("run", xml, inputs, "--trace", tmp_path / "t.ltrace", "--max-trace-size", bad)
    assert out.code == 2 and "--max-trace-size" in out.err
    assert not (tmp_path / "t.ltrace").exists()


def test_run_with_a_breakpoint_records_up_to_the_stop(endless_scan, cli, tmp_path):
    xml, inputs = endless_scan
    trace = tmp_path / "bp.ltrace"
    out = cli("run", xml, inputs, "--trace", trace, "--break", "i == 5")
    assert out.code == 0, out.err
    info = cli("trace", "info", trace, "--check")
    assert info.code == 0, info.err
    assert "stopped" in info.out
    shown = cli("trace", "show", trace, "--loop", "spin", "--iteration", "5")
    assert shown.code == 0, shown.err
