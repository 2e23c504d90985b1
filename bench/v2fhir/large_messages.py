#!/usr/bin/env python3
"""Writes the large and hostile messages of docs/PERFORMANCE.md ("Large messages") into a directory, built from
the bench ORU^R01 (bench/hl7v2/messages/oru_r01.hl7), for `/usr/bin/time thoth hl7 to-fhir FILE`:

  python3 bench/v2fhir/large_messages.py /tmp/large
  for f in /tmp/large/*.hl7; do /usr/bin/time -f "$f %e s %M KB" target/release/thoth hl7 to-fhir --report "$f" >/dev/null 2>/dev/null; done

(`/usr/bin/time` writes to stderr: send the report elsewhere with `2>` only around thoth, or drop `--report`.)
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ORU = open(os.path.join(HERE, "..", "hl7v2", "messages", "oru_r01.hl7"), "rb").read().split(b"\r")
HEAD = [s for s in ORU if s and not s.startswith(b"OBX")]
OBX = [s for s in ORU if s.startswith(b"OBX")]


def message(segments):
    return b"\r".join(segments) + b"\r"


def files():
    # The ORU's eight OBX repeated: many small elements, the tree's worst ratio to the message's size.
    for n in (30_000, 60_000, 120_000):
        yield f"obx_{n}", message(HEAD + [OBX[i % 8] for i in range(n)])
    # One field repeated: PID-3 with 400,000 identifiers in one segment.
    pid = b"PID|1||" + b"~".join(b"M%d^^^H^MR" % i for i in range(400_000)) + b"||DOE^JOHN"
    yield "pid3_400000_repetitions", message([ORU[0], pid])
    # A warning per segment, each different: 40,000 OBX with a date FHIR cannot take.
    yield "notes_40000", message(
        HEAD + [b"OBX|%d|NM|6690-2^WBC^LN||7.5|10*3/uL|4.5-11.0|N|||F|||2024X%d" % (i, i) for i in range(40_000)]
    )
    # Segments the guide does not map, each reported: 40,000 Z segments.
    yield "unmapped_40000", message(HEAD + [b"ZXX|%d|foo" % i for i in range(40_000)])
    # Group instances: 20,000 ORDER_OBSERVATION groups (ORC, OBR, OBX), whose OBR asks `IF ORC VALUED`.
    groups = [b"ORC|RE|O%d\rOBR|1|O%d||58410-2^CBC^LN\rOBX|1|NM|6690-2^WBC^LN||7.5" % (i, i) for i in range(20_000)]
    yield "order_groups_20000", message(ORU[:3] + groups)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "large-messages"
    os.makedirs(out, exist_ok=True)
    for name, data in files():
        with open(os.path.join(out, name + ".hl7"), "wb") as f:
            f.write(data)
        print(f"{name}.hl7 {len(data):,} bytes")


if __name__ == "__main__":
    main()
