#!/usr/bin/env python3
"""hl7apy's strict verdict on HL7 v2 message files: one JSON line per file.

    python3 hl7apy_validate.py FILE...

Each line is {"file", "verdict", "errors", "warnings"}: verdict is "valid", "invalid" (Validator.validate
found errors) or "refused" (parse_message at the STRICT level raised; its exception is the only error).
hl7apy reports table values and lengths as warnings only; a UTF-8 byte order mark and a batch envelope are
dropped first (Thoth reads both). Used by docs/CONFORMANCE.md and
crates/thoth/tests/it/hl7apy_verdicts.rs; needs `pip install hl7apy==1.3.5` (.ci/requirements.txt).
"""

import json
import os
import sys
import tempfile

from hl7apy.consts import VALIDATION_LEVEL
from hl7apy.parser import parse_message
from hl7apy.validation import Validator

BATCH = {"FHS", "BHS", "BTS", "FTS"}


def where(exc):
    """` (at NAME: 'TEXT')`: the element hl7apy's parser was reading when it refused (innermost parse_* frame)."""
    name = text = None
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_filename.endswith(os.path.join("hl7apy", "parser.py")):
            loc = frame.f_locals
            if frame.f_code.co_name == "parse_message" and "message_structure" in frame.f_locals:
                name = f"structure {loc.get('message_structure')} v{loc.get('version')}"
            elif isinstance(loc.get("name"), str):
                name = loc["name"]
            if isinstance(loc.get("text"), str) and frame.f_code.co_name != "parse_message":
                text = loc["text"]
        tb = tb.tb_next
    if name is None and text is None:
        return ""
    return f" (at {name or '?'}: {text[:60]!r})" if text is not None else f" (at {name})"


def verdict(path, report):
    with open(path, "rb") as f:
        text = f.read().decode("utf-8-sig", "replace")
    # One message a file; segments end in CR whatever the file's line ends.
    # One message a file; segments end in CR whatever the file's line ends. A batch envelope (FHS/BHS...BTS/FTS)
    # is dropped, as Thoth validates the message inside it; hl7apy would refuse the file.
    segments = text.replace("\r\n", "\r").replace("\n", "\r").split("\r")
    text = "\r".join(s for s in segments if s.strip() and s[:3] not in BATCH) + "\r"
    out = {"file": path, "verdict": "valid", "errors": [], "warnings": []}
    try:
        msg = parse_message(text, validation_level=VALIDATION_LEVEL.STRICT, find_groups=True)
    except Exception as e:  # noqa: BLE001 - every parser failure is a refusal
        out.update(verdict="refused", errors=[f"{type(e).__name__}: {e}{where(e)}"])
        return out
    try:
        Validator.validate(msg, report_file=report)
    except Exception:  # noqa: BLE001 - the report holds every error, the exception only the first
        pass
    with open(report, encoding="utf-8") as f:
        for line in f.read().splitlines():
            kind, _, message = line.partition(": ")
            if kind == "Error":
                out["errors"].append(message)
            elif kind == "Warning":
                out["warnings"].append(message)
            elif line:
                # A message spanning lines continues the previous one.
                (out["warnings"] or out["errors"]).append(line)
    if out["errors"]:
        out["verdict"] = "invalid"
    return out


def main():
    fd, report = tempfile.mkstemp(suffix=".txt")
    os.close(fd)
    try:
        for path in sys.argv[1:]:
            print(json.dumps(verdict(path, report)), flush=True)
    finally:
        os.unlink(report)


if __name__ == "__main__":
    main()
