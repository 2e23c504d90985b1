"""Differential reference: field values of HL7 v2 files as python-hl7 (PyPI `hl7`) reads them.

Usage: python3 hl7_fields.py FILE...  -> JSON on stdout:
  {FILE: [message: [segment: [field: [repetition: [component: [subcomponent: str]]]]]]}
Field 0 of each segment is its identifier. Values are raw (escape sequences not decoded), as python-hl7's
str() gives them. python-hl7 splits segments on CR only and splits a file into messages itself only for batch
files, so this script normalises CRLF/LF to CR, drops blank lines and the batch envelope (FHS/BHS/BTS/FTS) and
starts a new message at every line beginning with MSH; a line that does not start a segment continues the
previous one (joined with LF; the Rust side compares line breaks inside values as LF). A message python-hl7 cannot parse at all is null.
"""

import json
import re
import sys

import hl7
from hl7.containers import Container


def expand(obj, level, seps):
    if level == 3:
        return str(obj)
    if isinstance(obj, Container) and obj.separator == seps[level]:
        return [expand(x, level + 1, seps) for x in obj]
    return [expand(obj, level + 1, seps)]


SEGMENT_START = re.compile(r"^[A-Za-z0-9]{3}([|]|$)")


def messages(text):
    text = text.lstrip("\ufeff").replace("\r\n", "\r").replace("\n", "\r")
    current = []
    for line in text.split("\r"):
        if not line.strip():
            continue
        if line[:3] in ("FHS", "BHS", "BTS", "FTS"):
            continue
        if line.startswith("MSH") and current:
            yield "\r".join(current)
            current = []
        if current and not SEGMENT_START.match(line):
            # Thoth's documented rule: a line that does not start a segment continues the previous one. Joined
            # with LF (python-hl7 splits segments on CR only) so the comparison is about fields, not that rule.
            current[-1] += "\n" + line
            continue
        current.append(line)
    if current:
        yield "\r".join(current)


def main():
    out = {}
    for path in sys.argv[1:]:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
        result = []
        for m in messages(text):
            try:
                msg = hl7.parse(m)
            except Exception:  # noqa: BLE001 - python-hl7 rejects some malformed headers; report as null
                result.append(None)
                continue
            seps = [msg.separators[2], msg.separators[3], msg.separators[4]]
            result.append([[expand(field, 0, seps) for field in seg] for seg in msg])
        out[path] = result
    json.dump(out, sys.stdout)


main()
