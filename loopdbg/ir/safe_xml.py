"""Untrusted XML read safely: the bytes of a model's .xml, parsed with nothing expanded.

Model files are untrusted input: parsing never expands entities, never loads a DTD and never
touches the network, and any DOCTYPE is refused outright (before lxml sees the bytes, and again
on the parsed tree). A file past ``XML_LIMIT``, an empty one or XML that is not well-formed is a
one-sentence ``ModelError`` naming the file.
"""

from __future__ import annotations

import re
from pathlib import Path

from loopdbg.errors import ModelError
from loopdbg.files.read import read_regular

LXML_POSITION = re.compile(r",\s*line \d+,\s*column \d+\s*$")


XML_LIMIT = 1 << 30        # an IR .xml past 1 GiB is not a model loopdbg can show


def read_xml_bytes(xml_path: Path) -> bytes:
    raw = read_regular(xml_path, ModelError, "the model", XML_LIMIT)
    if not raw.strip():
        raise ModelError(f"{xml_path} is empty.")
    return raw


FORBIDDEN_MARKERS = tuple(m.encode(enc) for m in ("<!DOCTYPE", "<!ENTITY")
                          for enc in ("ascii", "utf-16-le", "utf-16-be"))


def refuse_doctype(raw: bytes, file: str) -> None:
    """A DOCTYPE is never needed by IR and is how XXE and entity bombs get in: refuse it early.

    The raw bytes are checked before lxml sees them (ASCII and UTF-16 spellings); the parsed tree's
    docinfo is checked again afterwards in case some other encoding hid the marker.
    """
    upper = raw.upper()
    if any(marker in upper for marker in FORBIDDEN_MARKERS):
        raise ModelError(DOCTYPE_REFUSED.format(file=file))


DOCTYPE_REFUSED = ("{file} contains a DOCTYPE or entity declaration, which loopdbg refuses to "
                   "read for safety.")


def parse_untrusted_xml(raw: bytes, file: str):
    from lxml import etree

    refuse_doctype(raw, file)
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                             dtd_validation=False, huge_tree=False, remove_comments=True,
                             remove_pis=True)
    try:
        root = etree.fromstring(raw, parser)
    except etree.XMLSyntaxError as err:
        reason = LXML_POSITION.sub("", str(err.msg or err)).strip().rstrip(".")
        line = f" (line {err.lineno})" if err.lineno else ""
        raise ModelError(f"{file} is not well-formed XML: {reason}{line}.") from None
    except ValueError as err:          # e.g. an encoding declaration lxml cannot honour
        raise ModelError(f"{file} is not well-formed XML: {err}.") from None
    if root is None:
        raise ModelError(f"{file} is not well-formed XML: no root element.")
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None or docinfo.externalDTD is not None:
        raise ModelError(DOCTYPE_REFUSED.format(file=file))
    return root
