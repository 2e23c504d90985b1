"""Turns the TSV of bench/fhir/run.sh into the markdown tables of docs/PERFORMANCE.md."""
import sys
from collections import defaultdict

rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
times = {}
sizes = defaultdict(dict)
inputs = []
for engine, fmt, op, name, value in rows:
    if name not in inputs:
        inputs.append(name)
    if engine == "size":
        sizes[name][(fmt, op)] = int(value)
    elif not value.startswith("ERROR"):
        times[(engine, fmt, op, name)] = float(value)

print("### Speed (median ms per operation; ratio = HAPI time / this engine's time)\n")
print("| input | operation | Thoth JSON | Thoth XML | Thoth binary | HAPI JSON | HAPI XML | fhir.resources JSON | fhir.resources XML | Thoth JSON vs HAPI JSON | Thoth XML vs HAPI XML | Thoth binary vs Thoth JSON |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for name in inputs:
    if name not in sizes:
        continue
    for op in ("parse", "serialize"):
        t = lambda e, f: times.get((e, f, op, name))
        fmt = lambda v: "n/a" if v is None else f"{v:.3f}"
        tj, hj = t("thoth", "json"), t("hapi", "json")
        tb = t("thoth", "pb")
        tx, hx = t("thoth", "xml"), t("hapi", "xml")
        ratio = "n/a" if not (tj and hj) else f"{hj / tj:.1f}x"
        xratio = "n/a" if not (tx and hx) else f"{hx / tx:.1f}x"
        own = "n/a" if not (tj and tb) else f"{tj / tb:.1f}x"
        print(f"| {name} | {op} | {fmt(tj)} | {fmt(t('thoth', 'xml'))} | {fmt(tb)} | {fmt(hj)} | {fmt(t('hapi', 'xml'))} | {fmt(t('fhir.resources', 'json'))} | {fmt(t('fhir.resources', 'xml'))} | {ratio} | {xratio} | {own} |")

print("\n### Sizes (bytes; ratio to compact JSON)\n")
print("| input | JSON pretty | JSON compact | XML | binary | gzip JSON pretty | gzip JSON compact | gzip XML | gzip binary |")
print("|---|---|---|---|---|---|---|---|---|")
for name in inputs:
    s = sizes.get(name)
    if not s:
        continue
    base, gbase = s[("json", "plain")], s[("json", "gzip")]
    cells = [f"{s[(e, 'plain')]:,} ({s[(e, 'plain')] / base:.2f})" for e in ("json-pretty", "json", "xml", "pb")]
    cells += [f"{s[(e, 'gzip')]:,} ({s[(e, 'gzip')] / gbase:.2f})" for e in ("json-pretty", "json", "xml", "pb")]
    print(f"| {name} | " + " | ".join(cells) + " |")
