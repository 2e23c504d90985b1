"""Thoth from Python vs the Python libraries a user would pick, side by side in one process and one run.

    python bench.py DATA_DIR [--big-gb 1.0]

DATA_DIR is a Thoth data directory holding SNOMED CT (run.sh imports the conformance subset). Prints one TSV line
per measurement and the ratios of docs/PERFORMANCE.md ("Python bindings"). Times are the median of 5 rounds of
the mean thread-CPU time per call (the machine is shared: CPU time, not wall time).
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import hl7 as python_hl7
from fhir.resources.R4B.bundle import Bundle
from hl7apy.parser import parse_message

import thoth
from thoth import fhir, hl7
from thoth.terminology import Terminology

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"


def timeit(f, budget_s=1.0):
    n, t0 = 0, time.thread_time()
    while time.thread_time() - t0 < 0.05 or n < 2:
        f()
        n += 1
    per_round = max(1, int(n * budget_s / 5 / max(time.thread_time() - t0, 1e-9)))
    rounds = []
    for _ in range(5):
        t = time.thread_time_ns()
        for _ in range(per_round):
            f()
        rounds.append((time.thread_time_ns() - t) / per_round)
    return statistics.median(rounds)


def row(what, engine, ns):
    print(f"{what}\t{engine}\t{ns / 1000:.3f} us", flush=True)
    return ns


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("--big-gb", type=float, default=1.0)
    args = ap.parse_args()
    ratios = []

    # HL7 v2: parse the shared ADT^A01 (316 B) and read PID-5-1, so that every engine has done the same work.
    adt = (ROOT / "bench/hl7v2/messages/adt_a01.hl7").read_bytes()
    adt_text = adt.decode()
    assert hl7.parse(adt).get("PID-5-1") == str(python_hl7.parse(adt_text)["PID.F5.R1.C1"])
    t = row("hl7 parse ADT^A01", "thoth", timeit(lambda: hl7.parse(adt)))
    p = row("hl7 parse ADT^A01", "python-hl7 0.4.5", timeit(lambda: python_hl7.parse(adt_text)))
    a = row("hl7 parse ADT^A01", "hl7apy 1.3.5", timeit(lambda: parse_message(adt_text.replace("\n", "\r"))))
    ratios += [("hl7 parse ADT^A01 vs python-hl7", p / t, 50), ("hl7 parse ADT^A01 vs hl7apy", a / t, 500)]
    t = row("hl7 parse + get PID-5-1", "thoth", timeit(lambda: hl7.parse(adt).get("PID-5-1")))
    p = row("hl7 parse + get PID-5-1", "python-hl7 0.4.5",
            timeit(lambda: str(python_hl7.parse(adt_text)["PID.F5.R1.C1"])))
    ratios.append(("hl7 parse + get vs python-hl7", p / t, None))

    # FHIR: the 10 Synthea bundles' entries in one Bundle, pretty JSON (~1.9 MB, as the fhir crate's bench input).
    entries = []
    for path in sorted((SHARED / "data/fhir/synthea").glob("*.json")):
        entries += json.loads(path.read_bytes())["entry"]
    bundle = json.dumps({"resourceType": "Bundle", "type": "collection", "entry": entries}, indent=2).encode()
    assert fhir.loads(bundle) == json.loads(bundle)
    size = f"{len(bundle) / 1e6:.1f} MB"
    t = row(f"fhir JSON -> dict ({size} Bundle)", "thoth fhir.loads", timeit(lambda: fhir.loads(bundle), 3))
    j = row(f"fhir JSON -> dict ({size} Bundle)", "json.loads", timeit(lambda: json.loads(bundle), 3))
    r = row(f"fhir JSON -> dict ({size} Bundle)", "json.loads + fhir.resources 8.3.0 R4B",
            timeit(lambda: Bundle.model_validate(json.loads(bundle)), 3))
    ratios += [("fhir JSON -> validated dict vs json.loads + fhir.resources", r / t, 5),
               ("fhir JSON -> validated dict vs bare json.loads (no validation)", j / t, None)]
    pb = fhir.convert(bundle, dst="pb")
    row(f"fhir binary -> dict ({len(pb) / 1e6:.1f} MB)", "thoth fhir.loads", timeit(lambda: fhir.loads(pb), 3))

    # Terminology: $lookup of SNOMED CT concepts from Python (the FHIR Parameters as a dict).
    tx = Terminology.open(args.data_dir)
    concepts = [line.split("\t")[0] for line in
                (SHARED / "tx-ecosystem/tx-source/snomed/Terminology/sct2_Concept_Snapshot_INT_20250909.txt")
                .read_text().splitlines()[1:] if line.split("\t")[2] == "1"][:200]
    it = iter(range(1 << 62))
    t = row("snomed lookup", "thoth Terminology.lookup", timeit(lambda: tx.lookup(concepts[next(it) % 200])))
    ratios.append(("snomed $lookup as a dict, µs (full FHIR Parameters)", t / 1000, None))
    t = row("snomed concept", "thoth Terminology.concept", timeit(lambda: tx.concept(concepts[next(it) % 200])))
    ratios.append(("snomed concept lookup, µs (target ≤ 5)", t / 1000, None))
    row("snomed subsumes", "thoth Terminology.subsumes", timeit(lambda: tx.subsumes("138875005", concepts[7])))

    # Memory: iterate a file of ~big_gb GB of messages; resident memory before and after.
    corpus = sorted((SHARED / "data/hl7v2/fhir-converter").rglob("*.hl7"))
    block = b"".join(p.read_bytes().replace(b"\n", b"\r").rstrip(b"\r") + b"\r" for p in corpus
                     if p.read_bytes().startswith(b"MSH"))
    with tempfile.NamedTemporaryFile(dir="/tmp", suffix=".hl7", delete=False) as f:
        for _ in range(int(args.big_gb * (1 << 30)) // len(block) + 1):
            f.write(block)
        big = f.name
    try:
        before = peak = rss_kib()
        n, t0 = 0, time.perf_counter()
        for msg in hl7.iter_file(big):
            msg.get("MSH-10")
            n += 1
            if n % 50_000 == 0:
                peak = max(peak, rss_kib())
        elapsed = time.perf_counter() - t0
        size_mb = os.path.getsize(big) / 1e6
        print(f"iterate {size_mb:.0f} MB file\t{n} messages\t{size_mb / elapsed:.0f} MB/s wall\t"
              f"RSS {before / 1024:.0f} -> peak {peak / 1024:.0f} MiB", flush=True)
    finally:
        os.unlink(big)

    print()
    print("| comparison | ratio | floor |")
    print("|---|---|---|")
    for what, ratio, floor in ratios:
        print(f"| {what} | **{ratio:.1f}** | {'≥ ' + str(floor) + '×' if floor else ''} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
