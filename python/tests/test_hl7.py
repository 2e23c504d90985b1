"""thoth.hl7 on the 271 real messages of ../shared/data/hl7v2: byte-exact round trips, values equal to python-hl7's,
and the API's behaviour (paths, errors, ACK, validation, FHIR, streaming)."""

import re

import hl7 as python_hl7
import pytest
from hl7.containers import Container

import thoth
from thoth import hl7

ADT = (
    b"MSH|^~\\&|HIS|Hospital|RIS|Radiology|20240315143000||ADT^A01^ADT_A01|MSG00001|P|2.5\r"
    b"EVN|A01|20240315143000\r"
    b"PID|1||MRN12345^^^Hospital^MR~X9^^^Other||DOE^JOHN^ALLEN||19800315|M|||1 A \\T\\ B ST\r"
    b"PV1|1|I|W^389^1\r"
)


def test_every_corpus_file_round_trips_byte_for_byte(hl7_corpus):
    for path in hl7_corpus:
        data = path.read_bytes()
        messages = list(hl7.iter_file(path))
        if not data.strip():  # the corpus holds one empty file
            assert messages == [], path
            continue
        assert messages, path
        # The messages are the file's message chunks, in order; with no envelope or stray lines (the whole
        # corpus but a few files) they concatenate to the file.
        joined = b"".join(m.encode() for m in messages)
        if data.startswith(b"MSH") and not re.search(rb"(^|[\r\n])(FHS|BHS|BTS|FTS)", data):
            assert joined == data, path
        else:
            assert joined in data, path
        for m in messages:
            assert hl7.parse(m.encode()).encode() == m.encode()
        assert [m.encode() for m in hl7.iter_messages(data)] == [m.encode() for m in messages]


SEGMENT_START = re.compile(r"^[A-Za-z0-9]{3}([|]|$)")


def python_hl7_messages(text):
    """The file cut into messages as crates/hl7v2/tests/python/hl7_fields.py does for the Rust differential test:
    python-hl7 splits on CR only and knows no files of many messages."""
    text = text.lstrip("\ufeff").replace("\r\n", "\r").replace("\n", "\r")
    current = []
    for line in text.split("\r"):
        if not line.strip() or line[:3] in ("FHS", "BHS", "BTS", "FTS"):
            continue
        if line.startswith("MSH") and current:
            yield "\r".join(current)
            current = []
        if current and not SEGMENT_START.match(line):
            current[-1] += "\n" + line
            continue
        current.append(line)
    if current:
        yield "\r".join(current)


def leaves(obj, level, seps, prefix=()):
    """(repetition, component, subcomponent) 1-based → raw text, from python-hl7's nesting of one field."""
    if level == 3:
        yield prefix, str(obj)
        return
    parts = list(obj) if isinstance(obj, Container) and obj.separator == seps[level] else [obj]
    for i, part in enumerate(parts, 1):
        yield from leaves(part, level + 1, seps, prefix + (i,))


def norm(text):
    text = text.replace("\r", "\n")
    while "\n\n" in text:
        text = text.replace("\n\n", "\n")
    return text


def test_values_agree_with_python_hl7(hl7_corpus):
    compared = 0
    rejected = 0
    mismatches = []
    for path in hl7_corpus:
        ours = list(hl7.iter_file(path))
        theirs = list(python_hl7_messages(path.read_bytes().decode("utf-8")))
        assert len(ours) == len(theirs), path
        for msg, text in zip(ours, theirs):
            try:
                their = python_hl7.parse(text)
            except Exception:  # python-hl7 rejects a few malformed headers; the Rust test counts them too
                rejected += 1
                continue
            seps = [their.separators[2], their.separators[3], their.separators[4]]
            segments = msg.segments()
            assert [s.id for s in segments] == [str(s[0]) for s in their], path
            seen = {}
            for k, (seg, their_seg) in enumerate(zip(segments, their)):
                seen[seg.id] = seen.get(seg.id, 0) + 1
                if len(seg) != len(their_seg) - 1:
                    mismatches.append(f"{path.name} {seg.id}: {len(seg)} fields, python-hl7 {len(their_seg) - 1}")
                    continue
                for n, field in enumerate(their_seg):
                    if n == 0:
                        continue
                    if seg.id == "MSH" and n <= 2:
                        assert msg.raw(f"MSH-{n}").decode() == str(field), (path, n)
                        continue
                    field_leaves = list(leaves(field, 0, seps))
                    for i, ((r, c, s), value) in enumerate(field_leaves):
                        p = f"{seg.id}[{seen[seg.id]}]-{n}[{r}]-{c}-{s}"
                        raw = msg.raw(p)
                        got = norm(raw.decode("utf-8", "replace")) if raw is not None else ""
                        if k == len(segments) - 1 and n == len(their_seg) - 1 and i == len(field_leaves) - 1:
                            # python-hl7 strips trailing whitespace from the whole message (parse() calls strip()).
                            got = got.rstrip()
                        compared += 1
                        if got != norm(value):
                            mismatches.append(f"{path.name} {p}: {got!r} != {value!r}")
    assert not mismatches, "\n".join(mismatches[:20])
    assert compared > 50_000, compared
    assert rejected == 1, rejected  # msh_present_but_missing_all_fields.hl7, as in the Rust test


def test_get_decodes_and_paths_follow_the_cli():
    msg = hl7.parse(ADT)
    assert msg.get("PID-5-1") == "DOE"
    assert msg["PID-5-2"] == "JOHN"
    assert msg.get("PID-3(1)-4") == "Other"  # 0-based in parentheses, as in HAPI
    assert msg.get("PID-3[2]-4") == "Other"  # 1-based in brackets
    assert msg.get("PID-11") == "1 A & B ST"  # escapes decoded on read
    assert msg.raw("PID-11") == b"1 A \\T\\ B ST"
    assert msg.get("PID-30") is None
    assert msg.get("/PID-5-1") == "DOE"  # a group path: PID is at the root of ADT_A01
    assert msg.message_type == "ADT^A01^ADT_A01" and msg.control_id == "MSG00001" and msg.version == "2.5"
    assert msg.field_name("PID-5") == "Patient Name"
    assert hl7.field_name("PID-8", "2.5.1") == "Administrative Sex"
    with pytest.raises(KeyError):
        msg["PID-30"]
    with pytest.raises(thoth.ThothError, match=r'^path "PID-x":'):
        msg.get("PID-x")
    with pytest.raises(ValueError):  # ThothError is a ValueError
        hl7.field_name("PID-5", "9.9")


def test_segments_and_fields():
    msg = hl7.parse(ADT.decode().replace("\r", "\n"))  # str input, LF line ends
    assert len(msg) == 4
    assert [s.id for s in msg.segments()] == ["MSH", "EVN", "PID", "PV1"]
    (pid,) = msg.segments("PID")
    assert pid[5] == "DOE^JOHN^ALLEN" and pid.field(8) == "M" and pid.field(99) is None
    assert pid.fields()[0] == "1" and len(pid) == 11
    assert pid.raw().startswith(b"PID|1||MRN12345")
    assert msg.segments("MSH")[0][1] == "|"
    with pytest.raises(IndexError):
        pid[99]


def test_json_ack_validate_and_fhir():
    msg = hl7.parse(ADT)
    j = msg.to_json()
    assert j["segments"][2]["id"] == "PID" and j["segments"][2]["fields"][4] == ["DOE", "JOHN", "ALLEN"]
    ack = hl7.parse(msg.ack("AA", control_id="ACK1", timestamp="20240315143001"))
    assert ack.encode() == (
        b"MSH|^~\\&|RIS|Radiology|HIS|Hospital|20240315143001||ACK^A01^ACK|ACK1|P|2.5\rMSA|AA|MSG00001\r"
    )
    with pytest.raises(thoth.ThothError, match="unknown acknowledgement code"):
        msg.ack("XX")
    assert [i for i in msg.validate() if i["severity"] == "error"] == []
    broken = hl7.parse(b"MSH|^~\\&|A|B|C|D|20240101||ORU^R01|C42|P|2.5.1\rpid|1\r")
    assert broken.diagnostics and broken.diagnostics[0]["severity"] == "error"
    with pytest.raises(thoth.ThothError):
        hl7.parse(broken.encode(), strict=True)
    issues = hl7.parse(ADT.replace(b"|M|||", b"|ZZ|||")).validate(strict=True)
    assert any(i["path"].endswith("PID-8") for i in issues), issues
    bundle = msg.to_fhir()
    assert bundle["resourceType"] == "Bundle" and bundle["type"] == "message"
    patient = next(e["resource"] for e in bundle["entry"] if e["resource"]["resourceType"] == "Patient")
    assert patient["name"][0]["family"] == "DOE"
    with pytest.raises(thoth.ThothError):
        msg.to_fhir("nope")
    # MSH-7 without an offset: an instant only in a zone (Chicago: CDT, -05:00, in March after the 10th).
    assert "timestamp" not in bundle
    zoned = msg.to_fhir(time_zone="America/Chicago")
    assert zoned["timestamp"] == "2024-03-15T14:30:00-05:00", zoned["timestamp"]
    with pytest.raises(thoth.ThothError, match="Nowhere/Land"):
        msg.to_fhir(time_zone="Nowhere/Land")


def test_bad_inputs_never_crash():
    bad = shared_bad_inputs()
    assert len(bad) == 37
    for path in bad:
        msg = hl7.parse(path.read_bytes())
        msg.to_json()
        msg.validate()
        assert msg.encode() == path.read_bytes()


def shared_bad_inputs():
    from conftest import shared

    return sorted(p for p in shared("data/hl7v2/bad-inputs").rglob("*") if p.is_file() and p.name != "LICENSE")


def test_type_errors_and_missing_files():
    with pytest.raises(TypeError):
        hl7.parse(42)
    with pytest.raises(OSError):
        hl7.iter_file("/nonexistent/file.hl7")
