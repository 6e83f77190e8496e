"""Recording a run: the trace header (model and inputs hashes, options) and the event-stream wrapper.

    from loopdbg.trace import recording
    with recording(engine.run(inputs, record_nodes=trace_all), "run.ltrace",
                   model=model, inputs=inputs, options={"trace_all": trace_all}) as rec:
        for event in rec:          # every event is on its way to disk before you see it
            ...

The wrapper closes the file properly however the loop ends: at the end of the run, on an
exception from the engine (status "error"), on Ctrl+C (status "interrupted"), or when the consumer
stops early (status "stopped"). A plain ``for e in recording(...)`` works too: the file is closed
when the iterator is dropped.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from pathlib import Path
from typing import Iterable, Iterator, Mapping

import numpy as np

from loopdbg import __version__
from loopdbg.engine import events as ev
from loopdbg.files.read import open_regular
from loopdbg.trace import format as fmt
from loopdbg.trace.writer import TraceWriter


def file_sha256(path) -> str | None:
    """The sha256 of a regular file (TraceError for anything else: a FIFO or ``/dev/zero`` named
    by a trace's header would hang the read); None when it cannot be read."""
    try:
        h = hashlib.sha256()
        with open_regular(path, fmt.TraceError) as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    except OSError:
        return None


def inputs_sha256(inputs: Mapping) -> str:
    """sha256 over, in sorted-name order: name, NUL, dtype.str, NUL, shape "2,3", NUL, C-order bytes."""
    h = hashlib.sha256()
    for name in sorted(inputs):
        a = np.asarray(inputs[name])
        a = a if a.flags.c_contiguous else a.copy(order="C")
        h.update(f"{name}\0{a.dtype.str}\0{','.join(map(str, a.shape))}\0".encode())
        h.update(a.reshape(-1).view(np.uint8))       # any dtype, bfloat16 and strings too
    return h.hexdigest()


def model_info(model) -> dict:
    """Path and hashes of a model given as a loopdbg Model, a path, or None."""
    if model is None:
        return {}
    xml = getattr(model, "path", None) if not isinstance(model, (str, Path)) else str(model)
    weights = getattr(model, "weights_path", None)
    if xml is not None and Path(xml).is_dir():
        xml = str(Path(xml) / "model.xml")
    info = {"path": str(Path(xml).resolve()) if xml else None,
            "format": getattr(model, "format", None) or (Path(xml).suffix.lstrip(".") if xml else None)}
    if xml:
        info["xml_sha256"] = file_sha256(xml)
        if weights is None and Path(xml).suffix.lower() == ".xml":
            candidate = Path(xml).with_suffix(".bin")
            weights = str(candidate) if candidate.exists() else None
    if weights:
        info["bin_path"] = str(Path(weights).resolve())
        info["bin_sha256"] = file_sha256(weights)
    return info


def open_recorded_model(reader, trace_path=None):
    """The Model a trace was recorded from, read again for a replay, after checking that it is
    the same: the sha256 of its .xml (or .onnx) and of its .bin must be those the header gives,
    and the inputs stored in the trace must hash to the header's inputs sha256. Anything else is
    refused with one sentence (a replay of other files would show a run that never happened)."""
    from loopdbg.ir.load import read_model

    where = str(trace_path if trace_path is not None else reader.path)
    header = reader.header if isinstance(reader.header, Mapping) else {}
    info = header.get("model") if isinstance(header.get("model"), Mapping) else {}
    path = info.get("path")
    if not isinstance(path, str) or not path or not Path(path).exists():
        raise fmt.TraceError(f"{where}: the model it was recorded from ({path or 'unknown'}) is not "
                           f"there, so it cannot be replayed; `loopdbg trace show` still reads the "
                           f"recorded values.")
    changed = "changed since the trace was recorded (its sha256 differs), so the replay would " \
              "not show the recorded run"
    want = info.get("xml_sha256")
    if want and file_sha256(path) != want:
        raise fmt.TraceError(f"{where}: {path} {changed}.")
    want = info.get("bin_sha256")
    if want:                                 # the .bin the IR reader will read: beside the .xml
        weights = Path(path).with_suffix(".bin")
        if not weights.exists():
            raise fmt.TraceError(f"{where}: the weights of {path} ({weights.name}) are not there any "
                               f"more, so it cannot be replayed.")
        if file_sha256(weights) != want:
            raise fmt.TraceError(f"{where}: {weights} {changed}.")
    inputs = header.get("inputs") if isinstance(header.get("inputs"), Mapping) else {}
    stored = reader.model_inputs()
    if inputs.get("sha256") and stored is not None and inputs_sha256(stored) != inputs["sha256"]:
        raise fmt.TraceError(f"{where}: the inputs stored in the trace do not have the sha256 its "
                           f"header gives (the file was altered), so it cannot be replayed.")
    return read_model(path)


def make_header(model=None, inputs: Mapping | None = None, options: Mapping | None = None,
                source: str | None = None) -> dict:
    opts = dict(options or {})
    opts.setdefault("trace_all", bool(opts.get("record_nodes", False)))
    header = {"format": "loopdbg trace", "version": list(fmt.VERSION), "loopdbg": __version__,
              "numpy": np.__version__,
              "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
              "model": model_info(model), "options": opts}
    if inputs is not None:
        arrays = {k: fmt.check_array(v, f"input '{k}'") for k, v in inputs.items()}
        header["inputs"] = {"sha256": inputs_sha256(arrays), "source": source,
                            "arrays": [{"name": k, "dtype": str(a.dtype), "shape": list(a.shape)}
                                       for k, a in sorted(arrays.items())]}
    return header


class Recording:
    """An iterator over the engine's events that writes each one to the trace first.

    Iterating it runs a generator that holds no reference back to this object, so a plain
    ``for e in recording(...)`` closes the file as soon as the loop's iterator is dropped.
    """

    def __init__(self, events: Iterable, writer: TraceWriter):
        self._events = iter(events)
        self.writer = writer
        self._gen = _record(self._events, writer)

    @property
    def path(self) -> str:
        return self.writer.path

    @property
    def final(self) -> ev.RunFinished | None:
        """The RunFinished event, once it went by."""
        return self.writer.final

    def __iter__(self) -> Iterator:
        return self._gen

    def __next__(self):
        return next(self._gen)

    def drain(self) -> None:
        """Write every event and pass none on (``record``): the same file as iterating,
        without the pass-through generator. Use inside ``with``: an exception closes the file
        with its status there."""
        writer = self.writer
        events = self._events
        for event in events:
            writer.write(event)             # looked up each time: the writer swaps it per loop
            pump = writer.pump              # a batched execution: its code takes the events
            if pump is not None and pump(events):
                break                       # ... to the end
        self._gen.close()                   # never started: nothing of it runs
        writer.close(fmt.COMPLETE if writer.final is not None else fmt.STOPPED)

    def timeline(self, engine):
        """The run so far as read back from the trace (a ``RecordingTimeline``): how a live
        session steps back past its in-memory history."""
        from loopdbg.trace.timeline import RecordingTimeline

        return RecordingTimeline(self.writer, engine)

    def close(self, status: str | None = None, error: str | None = None) -> None:
        """Stop: close the event source and finish the file (status "stopped" unless told)."""
        if status is not None and not self.writer.closed:
            _close_events(self._events)
            self.writer.close(status, error)
        self._gen.close()
        if not self.writer.closed:              # the generator had not started
            _close_events(self._events)
            self.writer.close(fmt.COMPLETE if self.final is not None else fmt.STOPPED)

    def __enter__(self) -> "Recording":
        return self

    def __exit__(self, et, exc, tb):
        if et is None:
            self.close()
        elif issubclass(et, KeyboardInterrupt):
            self.close(fmt.INTERRUPTED, "interrupted (Ctrl+C)")
        else:
            try:
                self.close(fmt.ERROR, str(exc) or et.__name__)
            except fmt.TraceError:
                pass
        return False


def _record(events, writer: TraceWriter):
    """Write each event, then pass it on; finish the file however the iteration ends."""
    try:
        for event in events:
            writer.write(event)             # looked up each time: the writer swaps it per loop
            yield event
    except GeneratorExit:                   # the consumer stopped early (close, or dropped us)
        _close_events(events)
        _finish(writer, fmt.COMPLETE if writer.final is not None else fmt.STOPPED, None)
        raise
    except KeyboardInterrupt:
        _finish(writer, fmt.INTERRUPTED, "interrupted (Ctrl+C)")
        raise
    except BaseException as exc:
        _finish(writer, fmt.ERROR, str(exc) or type(exc).__name__)
        raise
    writer.close(fmt.COMPLETE if writer.final is not None else fmt.STOPPED)


def _finish(writer: TraceWriter, status: str, error: str | None) -> None:
    """Close after an exception: that exception is the one to report, not a failed close."""
    try:
        writer.close(status, error)
    except fmt.TraceError:
        pass


def _close_events(events) -> None:
    close = getattr(events, "close", None)
    if close is not None:
        close()


def recording(events: Iterable, path, *, model=None, inputs: Mapping | None = None,
              options: Mapping | None = None, source: str | None = None,
              store_inputs: bool = True, **writer_options) -> Recording:
    """Wrap an engine event iterator so that every event is written to the trace at ``path``."""
    header = make_header(model, inputs, options, source)
    model_inputs = ({k: np.asarray(v) for k, v in inputs.items()}
                    if (store_inputs and inputs is not None) else None)
    external = [("the model's external data", f) for f in getattr(model, "data_files", ())]
    writer_options["reads"] = [*writer_options.get("reads", ()), *external]    # never written over
    writer = TraceWriter(path, header, model_inputs=model_inputs, **writer_options)
    return Recording(events, writer)


def record(events: Iterable, path, **kw) -> ev.RunFinished | None:
    """Record a whole run; return its RunFinished (None if the stream had none)."""
    with recording(events, path, **kw) as rec:
        rec.drain()
    return rec.final


def record_model(model, inputs: Mapping, path, *, trace_all: bool = False,
                 max_iterations: int | None = None, **run_options) -> ev.RunFinished | None:
    """Run ``model`` (a Model or a path) on ``inputs`` and record the run to ``path``."""
    from loopdbg.engine import Engine
    from loopdbg.ir.load import read_model

    m = read_model(model) if isinstance(model, (str, Path)) else model
    options = {"trace_all": trace_all, "max_iterations": max_iterations, **run_options}
    events = Engine(m).run(inputs, record_nodes=trace_all, max_iterations=max_iterations,
                           **run_options)
    return record(events, path, model=m, inputs=inputs, options=options)
