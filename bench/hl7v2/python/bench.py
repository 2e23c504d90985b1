"""Times python-hl7 and hl7apy on the shared bench messages: `engine<TAB>message<TAB>op<TAB>ns` lines.

Each engine must first read the same 10 values Thoth reads (checked against python-hl7 for hl7apy).
"""

import statistics
import sys
import time

import hl7
from hl7apy.consts import VALIDATION_LEVEL
from hl7apy.exceptions import ValidationError
from hl7apy.parser import parse_message

MESSAGES = [
    ("adt_a01_316B", "adt_a01.hl7"),
    ("oru_r01_814B", "oru_r01.hl7"),
    ("oru_r01_5KB", "oru_5k.hl7"),
    ("oru_r01_56KB", "oru_56k.hl7"),
]
ADT = [("MSH", 1, 9, 1), ("MSH", 1, 9, 2), ("MSH", 1, 10, 1), ("MSH", 1, 12, 1), ("PID", 1, 3, 1),
       ("PID", 1, 5, 1), ("PID", 1, 5, 2), ("PID", 1, 7, 1), ("PID", 1, 8, 1), ("PV1", 1, 2, 1)]
ORU = [("MSH", 1, 9, 2), ("MSH", 1, 10, 1), ("PID", 1, 3, 1), ("PID", 1, 5, 1), ("OBR", 1, 4, 1),
       ("OBX", 1, 3, 1), ("OBX", 1, 5, 1), ("OBX", 2, 5, 1), ("OBX", 8, 5, 1), ("OBX", 8, 8, 1)]

# Group paths, as in ../rust and ../java: (groups with 0-based repetitions, segment, field, component). The ADT^A01's
# segments stand at the message level.
_PR, _OO = ("oru_r01_patient_result", 0), ("oru_r01_order_observation", 0)
ADT_GROUP = [((), s, f, c) for s, _, f, c in ADT]
ORU_GROUP = [((), "MSH", 9, 2), ((), "MSH", 10, 1), ((_PR, ("oru_r01_patient", 0)), "PID", 3, 1),
             ((_PR, ("oru_r01_patient", 0)), "PID", 5, 1), ((_PR, _OO), "OBR", 4, 1),
             ((_PR, _OO, ("oru_r01_observation", 0)), "OBX", 3, 1), ((_PR, _OO, ("oru_r01_observation", 0)), "OBX", 5, 1),
             ((_PR, _OO, ("oru_r01_observation", 1)), "OBX", 5, 1), ((_PR, _OO, ("oru_r01_observation", 7)), "OBX", 5, 1),
             ((_PR, _OO, ("oru_r01_observation", 7)), "OBX", 8, 1)]
# The structure operations are timed on these two only: hl7apy's strict parse takes milliseconds per KB.
STRUCTURE_MESSAGES = ("adt_a01_316B", "oru_r01_814B")


def timeit(budget_s, f):
    """Median of 5 rounds of the mean thread-CPU ns per call (the machine is shared; run.sh measures CPU time
    in every runner)."""
    n, t0 = 0, time.thread_time()
    while time.thread_time() - t0 < 0.05:
        f()
        n += 1
    per_round = max(1, int(n * budget_s / 5 / 0.05))
    rounds = []
    for _ in range(5):
        t = time.thread_time_ns()
        for _ in range(per_round):
            f()
        rounds.append((time.thread_time_ns() - t) / per_round)
    return statistics.median(rounds)


def hl7_get(m, q):
    s, o, f, c = q
    seg = s if o == 1 else f"{s}{o}"
    return m[f"{seg}.F{f}.R1.C{c}"]


def apy_get(m, q):
    s, o, f, c = q
    seg = [x for x in m.children if x.name == s][o - 1]
    field = getattr(seg, f"{s.lower()}_{f}")
    return field.children[c - 1].value


def apy_group_get(m, q):
    groups, s, f, c = q
    node = m
    for name, rep in groups:
        node = getattr(node, name)[rep]
    seg = getattr(node, s.lower())
    field = getattr(seg, f"{s.lower()}_{f}")
    return field.children[c - 1].value


def apy_validate(text):
    """hl7apy's strict parse, then its structure validation; the ADT^A01 fails it (EVN is required)."""
    m = parse_message(text, validation_level=VALIDATION_LEVEL.STRICT, find_groups=True)
    try:
        return m.validate()
    except ValidationError as e:
        return str(e)


def main():
    directory = sys.argv[1]
    budget = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    for name, file in MESSAGES:
        with open(f"{directory}/{file}", newline="") as fh:
            text = fh.read()
        paths = ADT if name.startswith("adt") else ORU
        expected = [hl7_get(hl7.parse(text), q) for q in paths]
        assert all(expected), (name, expected)
        got = [apy_get(parse_message(text, find_groups=False), q) for q in paths]
        assert got == expected, (name, got, expected)

        def report(engine, op, ns):
            print(f"{engine}\t{name}\t{op}\t{ns:.1f}", flush=True)

        report("python-hl7", "parse", timeit(budget, lambda: hl7.parse(text)))

        def hl7_10():
            m = hl7.parse(text)
            return [hl7_get(m, q) for q in paths]

        report("python-hl7", "parse+get10", timeit(budget, hl7_10))

        def apy10():
            m = parse_message(text, find_groups=False)
            return [apy_get(m, q) for q in paths]

        report("hl7apy", "parse", timeit(budget, lambda: parse_message(text, find_groups=False)))
        report("hl7apy", "parse+get10", timeit(budget, apy10))

        if name not in STRUCTURE_MESSAGES:
            continue
        group = ADT_GROUP if name.startswith("adt") else ORU_GROUP
        grouped = parse_message(text, find_groups=True)
        got = [apy_group_get(grouped, q) for q in group]
        assert got == expected, (name, got, expected)
        verdict = apy_validate(text)
        want = "Missing required child ADT_A01.EVN" if name.startswith("adt") else True
        assert verdict == want, (name, verdict)

        def apy_group10():
            m = parse_message(text, find_groups=True)
            return [apy_group_get(m, q) for q in group]

        report("hl7apy", "parse+validate", timeit(budget, lambda: apy_validate(text)))
        report("hl7apy", "parse+get10-group", timeit(budget, apy_group10))
        report("hl7apy", "get10-group", timeit(budget, lambda: [apy_group_get(grouped, q) for q in group]))


main()
