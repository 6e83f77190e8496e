"""Model names with dots and numbers (PyTorch's ``h.25``, ``x.1``, ``enc.layer.0.weight``) in
breakpoint and watch expressions: read as written, as ``t["h.25"]``."""

from __future__ import annotations

import io
import re
import tokenize

_DOTTED = re.compile(r"[A-Za-z_]\w*\.\d")
_NUMBER_PART = re.compile(r"\.?\d+\.?")      # how the tokenizer cuts ".25", "0." out of "h.25.x"
# h.25.shape, x.1.sum(): the attribute and the methods an expression may call (expr.METHODS)
_NOT_PART = frozenset({"shape", "any", "all", "sum", "mean", "min", "max"})


def quote_dotted_names(text: str) -> str:
    """``text`` with each name that has dots and a number part (``h.25``, ``x.1.2``,
    ``enc.layer.0.weight``) written ``t["..."]``: Python reads ``h.25`` as a name followed by a
    number, which is never a valid expression, so the rewrite changes nothing that parsed before.
    Text in strings is left alone; anything the tokenizer refuses is returned as it is (the
    parser says what is wrong)."""
    if not _DOTTED.search(text) or "\n" in text:
        return text
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return text
    out, last, k = [], 0, 0
    while k < len(tokens):
        tok = tokens[k]
        prev = tokens[k - 1] if k else None
        after_dot = prev is not None and prev.string == "." and prev.end == tok.start
        if tok.type == tokenize.NAME and not after_dot:
            j, numbered, end = k + 1, False, k
            while j < len(tokens) and tokens[j].start == tokens[j - 1].end:
                part = tokens[j]
                if part.type == tokenize.NUMBER and _NUMBER_PART.fullmatch(part.string) and (
                        part.string.startswith(".") or tokens[j - 1].string == "."):
                    numbered, end = True, j
                elif part.string == "." or (part.type == tokenize.NAME and
                                            tokens[j - 1].string.endswith(".")):
                    if part.type == tokenize.NAME and part.string in _NOT_PART:
                        break
                    if part.type == tokenize.NAME:
                        end = j
                else:
                    break
                j += 1
            if numbered:
                a, b = tok.start[1], tokens[end].end[1]
                name = text[a:b].rstrip(".")
                b = a + len(name)
                out += [text[last:a], 't["', name, '"]']
                last = b
                while k + 1 < len(tokens) and tokens[k + 1].end[1] <= b:
                    k += 1
        k += 1
    out.append(text[last:])
    return "".join(out)
