"""Trace files: a run of a model recorded frame by frame, read back in O(1) per iteration.

Recording::

    from loopdbg.trace import recording
    with recording(engine.run(inputs, record_nodes=trace_all), "run.ltrace", model=model,
                   inputs=inputs, options={"trace_all": trace_all}) as rec:
        for event in rec:
            ...

Reading::

    from loopdbg.trace import TraceReader
    with TraceReader("run.ltrace") as t:
        t.loops()                                  # every loop execution, iterations, why it stopped
        f = t.frame("loop", 99_999)                # O(1): back_edges, scan_slices, sliced_inputs...
        t.frame("outer/inner", 3, outer=(2,))      # nested loops: the enclosing iterations
        for f in t.frames("loop"): ...             # in order
        t.body_inputs("loop", 7)                   # what the body was fed (for replay)
        t.outputs(), t.model_inputs(), t.notices(), t.truncated, t.status, t.problems
        t.verify()                                 # read every frame, check every checksum
        for off, kind, data in t.raw(): ...        # every frame in file order, undecoded

Tools: ``diff.diff(a, b, rtol, atol)`` (first divergence), ``export.export(trace, out)`` (.npz).

The file format (version 2.0)
=============================

All integers are little-endian. One file, append-only, written while the model runs::

    file     := preamble HEADER [INPUTS] frame* END FOOTER locator
    preamble := magic "\\x89LDTRACE\\r\\n\\x1a\\n" (12 bytes), u16 major = 2, u16 minor = 0
    frame    := head body crc
    head     := sync "LDF\\xa7" (4 bytes), u8 kind, u8 flags = 0, u16 reserved = 0, u64 body length
    crc      := u32 zlib.crc32 of head + body
    body     := u32 meta length, meta, u32 array count, array*
    array    := u8 group, u16 name length, name (UTF-8), u64 length, an .npy file (numpy's own
                format 1.0/2.0, C order, never object dtype: nothing is ever pickled)
    locator  := "LDTRIDX1", u64 footer offset, u64 footer length, u32 crc32 of the previous
                24 bytes, "\\x1aEND"  (32 bytes, the last bytes of a complete file)

Frame kinds and their meta (JSON, UTF-8, unless said otherwise):

    1 HEADER       {"format", "version", "loopdbg" (version), "numpy", "created" (UTC),
                    "model": {"path", "format", "xml_sha256", "bin_path", "bin_sha256"},
                    "inputs": {"sha256", "source", "arrays": [{"name", "dtype", "shape"}]},
                    "options": {"trace_all", "max_iterations", ...}}
    2 INPUTS       {} + the model inputs (group 6)
    3 LOOP_START   {"path", "layer_id", "layer_name", "kind", "trip_count", "execution_condition",
                    "outer", and in the loop's first execution only "schema": {"params",
                    "results", "roles", "back_edges", "concats", "sliced", "current_iteration",
                    "condition_param"}}
    4 ITERATION    binary meta: i64 iteration, i64 trip count (-1: none), u8 cond, u8 continues,
                   u16 n, u16 path length, n x i64 outer iterations, path (UTF-8);
                   arrays: back edges (group 0, by body Parameter), what each concatenated output
                   got (1, by output name), each sliced input's slice (2, by body Parameter), with
                   trace-all every body node (3), and in iteration 0 every body input (4)
    5 LOOP_FINISH  {"path", "outer", "iterations", "reason", "error"} + last-value outputs (5);
                   concatenated outputs are not repeated (they are the scan slices)
    6 NOTICE       {"path", "message", "rule"}
    7 RUN_FINISH   {"interrupted", "loops", "notices", "outputs"} + the model outputs (5)
    8 END          {"status": complete | interrupted | error | stopped, "error", "frames",
                    "iterations"}
    9 FOOTER       {"paths", "path_info", "reasons", "errors", "inputs", "run_finish", "end",
                    "frames"} + columns (group 0): one row per loop execution, key (path, outer):
                   ex_path, ex_outer_n, ex_outer (flattened), ex_start, ex_finish, ex_iterations,
                   ex_reason, ex_trip, ex_first, ex_count, ex_recorded; run_first, run_offset
                   (execution r has ex_recorded[r] iterations in ex_count[r] runs, from
                   ex_first[r] on: run j starts at iteration run_first[j], in the frame at
                   run_offset[j]; offset 0: missing); notices (offsets)
   10 BATCH        consecutive iterations of one execution, as their ITERATION frames would hold
                   them: binary meta: i64 first iteration, u32 count, i64 trip count (-1: none),
                   u16 n, u16 path length, n x i64 outer iterations, path, then count bytes (per
                   iteration, bit 0: cond, bit 1: continues); arrays: one per tensor of the
                   iterations (groups 0-2 as in ITERATION), its rows the iterations, in the
                   order an ITERATION frame has them

Iterations whose tensors keep their dtypes and shapes and are small are written in BATCH frames
(``batch``): about one byte of framing per iteration instead of ~150, and one .npy header per
tensor per batch. The first iterations of every execution (iteration 0 carries the body inputs),
trace-all iterations and big tensors are ITERATION frames. A batch stands for exactly the
ITERATION frames of its iterations: ``TraceReader.raw`` gives those, byte for byte, so ``diff`` and
``export`` see iterations. Batches end at least every ``flush_interval`` (0.25 s) and at 1 MiB, so
a recording cut anywhere keeps every iteration written before its last complete batch.

Version 1 files (no BATCH frames; a footer with one offset per iteration, ``iter_offsets``, and
no ex_recorded, run_first, run_offset) are still read; a later major version is refused.

While a recording runs, the writer holds an exclusive lock (``flock``) on the file: a second
recorder of the same path is refused before it can empty it. Readers take no lock. Every array a
reader decodes, and every array ``export`` copies, is checked first (``format.npy_layout``): .npy
format 1.0 or 2.0, a header parsed as a literal, a plain dtype (never an object or structured
one), C order, sizes that fill its bytes exactly; ``TraceReader.verify`` checks every frame so.

A reader reads the locator first, then the footer: any (loop, outer, iteration) is one dict
lookup, a binary search among that execution's runs (one per batch of up to 16,384 iterations)
and one read of its frame (the last batch read is kept, so reading iterations in order reads each
batch once). A file without a valid locator and footer (crash, kill -9, full disk) is
scanned from the start: every complete frame whose crc holds is kept, damaged ones are skipped
(re-synchronising on the next sync marker) and reported, and the file is said to be truncated
when its END frame is missing.

The inputs hash is sha256 over the inputs in sorted-name order, each as: name, NUL, numpy
``dtype.str``, NUL, shape as "2,3", NUL, then its bytes in C order. Model hashes are the sha256 of
the .xml and .bin files.
"""

from loopdbg.trace.format import (COMPLETE, ERROR, INTERRUPTED, STOPPED, VERSION,
                                  TraceError)
from loopdbg.trace.reader import IterationFrame, LoopRecord, Record, TraceReader
from loopdbg.trace.record import (Recording, inputs_sha256, make_header, record, record_model,
                                  recording)
from loopdbg.trace.writer import TraceWriter

__all__ = ["TraceWriter", "TraceReader", "TraceError", "IterationFrame", "LoopRecord", "Record",
           "Recording", "recording", "record", "record_model", "make_header", "inputs_sha256",
           "VERSION", "COMPLETE", "INTERRUPTED", "ERROR", "STOPPED"]
