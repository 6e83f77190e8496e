"""The files loopdbg writes (issue 14, classes 4, 5 and 6).

4. A command never overwrites a file it reads: ``run --trace``/``-o`` naming the model's .xml or
   .bin, the inputs (given, or found beside the model), ``-o X --trace X``, ``trace export T -o
   T``, ``inputs -o``/``graph -o`` naming the model; through a hard link or another spelling
   too (a symbolic link is refused as such: see 5).
5. ``-o`` writes exactly the path given: ``.npz`` is added only to a new name without a suffix
   (and the message says so); a folder, a device, a FIFO, or any symbolic link (issue 26: to a
   file, a folder or nothing) is refused; a full disk is one sentence and leaves the old file
   whole.
6. Two recorders of one trace: the second is refused in one sentence and the first one's file
   stays whole (an exclusive lock, held while recording).
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from relhelpers import ROOT, accumulate_loop, subprocess_env
from relhelpers import assert_refused_but_inputs_line as assert_refused

NEVER = "never overwrites a file it reads"
LINK = "it is a symbolic link"




@pytest.fixture
def files(tmp_path):
    """A model folder (model.xml, model.bin, inputs.npz beside, in.npz) and a recorded trace."""
    xml, given = accumulate_loop(tmp_path / "m")
    beside = xml.with_name("inputs.npz")
    shutil.copy(given, beside)
    return xml, xml.with_suffix(".bin"), given, beside


def snapshot(*paths) -> dict:
    return {Path(p): Path(p).read_bytes() for p in paths}


def assert_untouched(before: dict) -> None:
    for p, data in before.items():
        assert p.read_bytes() == data, f"{p} was changed"


# -- 4. never overwrite an input ------------------------------------------------------------------

@pytest.mark.parametrize("flag", ["--trace", "-o"])
@pytest.mark.parametrize("victim", ["xml", "bin", "given inputs", "inputs beside"])
def test_run_never_writes_over_what_it_reads(cli, files, flag, victim):
    xml, bin_, given, beside = files
    before = snapshot(xml, bin_, given, beside)
    target = {"xml": xml, "bin": bin_, "given inputs": given, "inputs beside": beside}[victim]
    argv = ["run", xml] + ([given] if victim == "given inputs" else []) + [flag, target]
    assert_refused(cli(*argv), str(target), NEVER)
    assert_untouched(before)


@pytest.mark.parametrize("how", ["symlink", "hard link", "dot path"])
def test_through_links_and_other_spellings(cli, files, tmp_path, how):
    xml, bin_, given, beside = files
    before = snapshot(xml, bin_, given, beside)
    alias = tmp_path / "alias.npz"
    if how == "symlink":
        alias.symlink_to(given)
    elif how == "hard link":
        os.link(given, alias)
    else:
        alias = given.parent / ".." / given.parent.name / given.name
    for flag in ("-o", "--trace"):
        assert_refused(cli("run", xml, given, flag, alias), LINK if how == "symlink" else NEVER)
    assert_untouched(before)


def test_output_and_trace_must_differ(cli, files, tmp_path):
    xml, *_ = files
    for out, trace in (("same.npz", "same.npz"), ("same", "same.npz")):     # .npz added to -o
        r = cli("run", xml, "-o", tmp_path / out, "--trace", tmp_path / trace)
        assert_refused(r, "-o and --trace name the same file")
        assert not (tmp_path / trace).exists()


def test_trace_export_never_writes_over_its_trace(cli, files, tmp_path):
    xml, *_ = files
    trace = tmp_path / "run.ltrace"
    assert cli("run", xml, "--trace", trace, "-q").code == 0
    before = snapshot(trace)
    link = tmp_path / "link.npz"
    link.symlink_to(trace)
    assert_refused(cli("trace", "export", trace, "-o", trace), NEVER, "the trace")
    assert_refused(cli("trace", "export", trace, "-o", link), LINK)
    assert_untouched(before)
    assert cli("trace", "info", trace, "--check").code == 0


def test_inputs_and_graph_never_write_over_the_model(cli, files, tmp_path):
    xml, bin_, *_ = files
    before = snapshot(xml, bin_)
    for victim in (xml, bin_):
        assert_refused(cli("inputs", xml, "-o", victim), NEVER)
        dot = tmp_path / f"{victim.name}.dot"
        dot.symlink_to(victim)                         # graph needs a .dot/.svg/.png name
        assert_refused(cli("graph", xml, "-o", dot), LINK)
    assert_untouched(before)


def test_onnx_model(cli, tmp_path):
    pytest.importorskip("onnx")
    sys.path.insert(0, str(ROOT / "tests" / "unit"))
    import onnx

    from _onnx_models import loop_running_sum
    m, feeds = loop_running_sum(m_value=3)
    path = tmp_path / "model.onnx"
    onnx.save(m, str(path))
    np.savez(tmp_path / "in.npz", **feeds)
    before = snapshot(path, tmp_path / "in.npz")
    for flag in ("-o", "--trace"):
        assert_refused(cli("run", path, tmp_path / "in.npz", flag, path), "the model", NEVER)
        assert_refused(cli("run", path, tmp_path / "in.npz", flag, tmp_path / "in.npz"), NEVER)
    assert_untouched(before)


def test_the_recording_api_never_writes_over_the_model(files):
    from loopdbg.engine import Engine
    from loopdbg.engine.inputs import load_npz
    from loopdbg.errors import LoopdbgError
    from loopdbg.ir.load import read_model
    from loopdbg.trace import record

    xml, bin_, given, _ = files
    before = snapshot(xml, bin_, given)
    model, inputs = read_model(xml), load_npz(given)
    for victim in (xml, bin_, given):
        with pytest.raises(LoopdbgError, match=NEVER):
            record(Engine(model).run(inputs), victim, model=model, inputs=inputs, source=str(given))
    assert_untouched(before)


# -- 5. exactly the path given, and only a regular file -------------------------------------------

def test_npz_added_only_to_a_new_name_without_suffix(cli, files, tmp_path):
    xml, *_ = files
    r = cli("run", xml, "-o", tmp_path / "out")
    assert r.code == 0, r.err
    assert (tmp_path / "out.npz").exists() and not (tmp_path / "out").exists()
    assert f"outputs saved to {tmp_path / 'out.npz'} (.npz added" in r.err
    r = cli("run", xml, "-o", tmp_path / "out.dat")
    assert r.code == 0 and (tmp_path / "out.dat").exists() and ".npz added" not in r.err
    assert not (tmp_path / "out.dat.npz").exists()
    with np.load(tmp_path / "out.dat", allow_pickle=False) as data:
        assert set(data.files) == {"acc_final", "acc_seq"}
    existing = tmp_path / "existing"
    existing.write_bytes(b"old")
    assert cli("run", xml, "-o", existing).code == 0
    assert existing.read_bytes()[:2] == b"PK" and not (tmp_path / "existing.npz").exists()
    for argv, made in ((("inputs", xml, "-o", tmp_path / "tmpl"), "tmpl.npz"),
                       (("trace", "export", None, "-o", tmp_path / "exp"), "exp.npz")):
        if argv[0] == "trace":
            trace = tmp_path / "t.ltrace"
            assert cli("run", xml, "--trace", trace, "-q").code == 0
            argv = ("trace", "export", trace, *argv[3:])
        r = cli(*argv)
        assert r.code == 0, r.err
        assert (tmp_path / made).exists() and ".npz added" in r.err


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _link(link: Path, to) -> Path:
    link.symlink_to(to)
    return link


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


def device(folder: Path, name: str = "null", numbers=(1, 3)) -> Path:
    """A character device node of our own (a copy of /dev/null, or /dev/full with (1, 7)).

    Never the real /dev/null or /dev/full: as root, a loopdbg that renames its output over the
    target would replace the system's device with a regular file (the tests of the code before
    this fix did exactly that once)."""
    import stat

    path = folder / name
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(*numbers))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here ({exc.strerror}); the links to /dev/full "
                    f"cover devices")
    return path


# kind -> make(folder, name): something that is not a regular file, called ``name`` if it can be
NOT_REGULAR = {
    "folder": lambda d, name: _folder(d / name),
    "device": lambda d, name: device(d, name),
    "FIFO": lambda d, name: _fifo(d / name),
    "link to a device": lambda d, name: _link(d / name, "/dev/full"),
    "link to a folder": lambda d, name: _link(d / name, _folder(d / "sub")),
    "link to a FIFO": lambda d, name: _link(d / name, _fifo(d / "pipe")),
}
COMMANDS = ["run -o", "run --trace", "inputs", "export", "graph"]


@pytest.mark.parametrize("kind,command", [(k, c) for c in COMMANDS for k in NOT_REGULAR])
def test_only_regular_files_are_written(cli, files, tmp_path, kind, command):
    xml, *_ = files
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = NOT_REGULAR[kind](out_dir, "g.dot" if command == "graph" else "x.npz")
    if command == "export":
        assert cli("run", xml, "--trace", tmp_path / "t.ltrace", "-q").code == 0
    argv = {"run -o": ("run", xml, "-o", target), "run --trace": ("run", xml, "--trace", target),
            "inputs": ("inputs", xml, "-o", target),
            "export": ("trace", "export", tmp_path / "t.ltrace", "-o", target),
            "graph": ("graph", xml, "-o", target)}[command]
    listing = sorted(p.name for p in out_dir.rglob("*"))
    assert_refused(cli(*argv), str(target), LINK if kind.startswith("link") else
                   "not a regular file")
    assert sorted(p.name for p in out_dir.rglob("*")) == listing, "something was written"
    assert os.path.islink(target) == kind.startswith("link")     # a link is never replaced


def test_a_device_named_without_suffix(cli, files, tmp_path):
    """The issue's case: as root, `-o /dev/full` made /dev/full.npz (here on a node of our own)."""
    xml, *_ = files
    full = device(tmp_path, "full", (1, 7))
    for argv in (("run", xml, "-o", full), ("inputs", xml, "-o", full),
                 ("run", xml, "--trace", full), ("trace", "export", full, "-o", full)):
        assert_refused(cli(*argv), f"{full} is a device, not a regular file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full", "m"]
    assert Path(full).is_char_device()


def test_a_missing_folder_is_one_sentence(cli, files, tmp_path):
    xml, *_ = files
    for flag in ("-o", "--trace"):
        assert_refused(cli("run", xml, flag, tmp_path / "nope" / "x.npz"), "does not exist")
        assert_refused(cli("run", xml, flag, f"{tmp_path / 'new'}/"), "a file name, not")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_a_full_disk_is_one_sentence_and_keeps_the_old_file(cli, files, tmp_path, monkeypatch):
    """ENOSPC for real: the temporary file's descriptor is opened on /dev/full."""
    import loopdbg.files.write

    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    real_temporary = loopdbg.files.write._temporary

    def on_full_disk(*args, **kwargs):
        fd, name = real_temporary(*args, **kwargs)
        os.close(fd)
        return os.open("/dev/full", os.O_WRONLY), name

    monkeypatch.setattr(loopdbg.files.write, "_temporary", on_full_disk)
    xml, *_ = files
    trace = tmp_path / "t.ltrace"
    monkeypatch.undo()
    assert cli("run", xml, "--trace", trace, "-q").code == 0
    monkeypatch.setattr(loopdbg.files.write, "_temporary", on_full_disk)
    out = tmp_path / "out.npz"
    for argv in (("run", xml, "-o", out), ("inputs", xml, "-o", out),
                 ("trace", "export", trace, "-o", out), ("graph", xml, "-o", tmp_path / "g.dot")):
        target = Path(argv[-1])
        target.write_bytes(b"the old file")
        r = cli(*argv)
        assert_refused(r, f"cannot write {target}", "No space left on device")
        assert target.read_bytes() == b"the old file"
        assert sorted(p.name for p in tmp_path.iterdir() if "partial" in p.name) == []


def test_a_write_past_the_file_size_limit_in_a_real_process(files, tmp_path):
    """EFBIG from the kernel (RLIMIT_FSIZE): one sentence, the old file whole, no temp left."""
    xml, *_ = files
    out = tmp_path / "out.npz"
    out.write_bytes(b"the old file")

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))

    proc = subprocess.run([sys.executable, "-B", "-m", "loopdbg", "run", str(xml), "-o", str(out),
                           "-q"], capture_output=True, text=True, env=subprocess_env(),
                          preexec_fn=limit, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"loopdbg: cannot write {out}"), proc.stderr
    assert out.read_bytes() == b"the old file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m", "out.npz"]     # no temp left


# -- 6. one recorder per trace --------------------------------------------------------------------

def test_a_second_recorder_in_the_same_process_is_refused(files, tmp_path):
    from loopdbg.engine import Engine
    from loopdbg.engine.inputs import load_npz
    from loopdbg.errors import LoopdbgError
    from loopdbg.ir.load import read_model
    from loopdbg.trace import TraceReader, recording

    xml, _, given, _ = files
    model, inputs = read_model(xml), load_npz(given)
    path = tmp_path / "t.ltrace"
    first = recording(Engine(model).run(inputs), path, model=model, inputs=inputs,
                      options={"who": "first"})
    events = iter(first)
    next(events)
    with pytest.raises(LoopdbgError, match="being recorded by another loopdbg"):
        recording(Engine(model).run(inputs), path, model=model, inputs=inputs,
                  options={"who": "second"})
    for _ in events:
        pass
    first.close()
    with TraceReader(path) as t:
        assert t.header["options"]["who"] == "first" and t.status == "complete"
        assert not t.truncated and t.verify() == []
    # the lock went with the first recorder: recording again works
    second = recording(Engine(model).run(inputs), path, model=model, inputs=inputs,
                       options={"who": "second"})
    for _ in second:
        pass
    with TraceReader(path) as t:
        assert t.header["options"]["who"] == "second" and t.status == "complete"


def test_a_second_recording_process_is_refused(tmp_path):
    model = ROOT / "tests" / "data" / "endless_loop" / "model.xml"
    trace = tmp_path / "endless.ltrace"
    env = subprocess_env()
    first = subprocess.Popen([sys.executable, "-m", "loopdbg", "run", str(model), "--trace",
                              str(trace)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (trace.exists() and trace.stat().st_size > 50_000):
            if first.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the first recorder did not record: {first.communicate()[1]!r}")
            time.sleep(0.02)
        second = subprocess.run([sys.executable, "-m", "loopdbg", "run", str(model), "--trace",
                                 str(trace), "--max-iterations", "5"], env=env,
                                capture_output=True, text=True, timeout=120)
        assert second.returncode == 2, second.stderr
        lines = [x for x in second.stderr.strip().splitlines() if not x.startswith("inputs: ")]
        assert len(lines) == 1 and "being recorded by another loopdbg" in lines[0], second.stderr
        assert trace.stat().st_size > 50_000          # not emptied by the second one
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert first.returncode == 130
    from loopdbg.trace import TraceReader
    with TraceReader(trace) as t:
        assert not t.truncated and t.status == "interrupted"
        assert t.header["options"].get("max_iterations") is None      # the first run's header
        assert t.verify() == []
