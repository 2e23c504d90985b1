"""Turns engine/message/op/ns lines into a Markdown table: time, MB/s and Thoth's speed-up over each engine."""

import os
import sys
from collections import defaultdict

rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
sizes = {
    "adt_a01_316B": "adt_a01.hl7",
    "oru_r01_814B": "oru_r01.hl7",
    "oru_r01_5KB": "oru_5k.hl7",
    "oru_r01_56KB": "oru_56k.hl7",
}
size = {m: os.path.getsize(os.path.join(sys.argv[2], f)) for m, f in sizes.items()}
ns = defaultdict(dict)
for engine, msg, op, t in rows:
    ns[(msg, op)][engine] = float(t)


def fmt_t(t):
    return f"{t / 1000:.2f} µs" if t < 1e6 else f"{t / 1e6:.2f} ms"


print("| message | operation | engine | time/message | MB/s | Thoth is × faster |")
print("|---|---|---|---|---|---|")
for (msg, op), by in ns.items():
    thoth = by.get("thoth")
    for engine, t in sorted(by.items(), key=lambda kv: kv[1]):
        mbs = size[msg] / t * 1e3  # bytes/ns -> MB/s
        ratio = "—" if engine == "thoth" or thoth is None else f"{t / thoth:.1f}×"
        print(f"| {msg} | {op} | {engine} | {fmt_t(t)} | {mbs:,.0f} | {ratio} |")
print()
print("| message | operation | Thoth | fastest peer | Thoth vs fastest peer | Thoth vs memchr floor |")
print("|---|---|---|---|---|---|")
for (msg, op), by in ns.items():
    thoth = by.get("thoth")
    peers = {e: t for e, t in by.items() if e not in ("thoth", "memchr-floor")}
    if thoth is None or not peers:
        continue
    best = min(peers, key=peers.get)
    floor = ns[(msg, "parse")].get("memchr-floor")
    vs_floor = f"{thoth / floor:.1f}× the floor's time" if floor and op == "parse" else "—"
    print(f"| {msg} | {op} | {fmt_t(thoth)} | {best} {fmt_t(peers[best])} | {peers[best] / thoth:.1f}× faster | {vs_floor} |")

# Message structures. HAPI always builds its message structure when it parses, so its plain parse is the peer of
# Thoth's parse + group tree; "validate" is HAPI's parse with its default validation context, hl7apy's strict parse
# + validate(); the group-path reads are Terser.get for HAPI.
STRUCTURE_OPS = [
    ("parse + group tree", "parse+tree", "parse"),
    ("parse + validation", "parse+validate", "parse+validate"),
    ("parse + 10 group-path reads", "parse+get10-group", "parse+get10-group"),
    ("10 group-path reads, parsed message", "get10-group", "get10-group"),
]
if any(op == "parse+tree" for _, op in ns):
    print()
    print("| message | operation | Thoth | Thoth vs its plain parse | HAPI 2.6 | Thoth vs HAPI | hl7apy | Thoth vs hl7apy |")
    print("|---|---|---|---|---|---|---|---|")
    for msg in sizes:
        plain = ns[(msg, "parse")].get("thoth")
        for label, op, peer_op in STRUCTURE_OPS:
            thoth = ns[(msg, op)].get("thoth")
            if thoth is None:
                continue
            own = f"{thoth / plain:.2f}×" if plain and op.startswith("parse") else "—"
            cells = []
            for engine in ("hapi-2.6", "hl7apy"):
                t = ns[(msg, peer_op if engine == "hapi-2.6" else op)].get(engine)
                cells += [fmt_t(t), f"{t / thoth:.1f}× faster"] if t else ["—", "—"]
            print(f"| {msg} | {label} | {fmt_t(thoth)} | {own} | " + " | ".join(cells) + " |")
