"""Times fhir.resources (PyPI, pydantic models) parse and serialize of FHIR JSON and XML for every *.json input in
a directory; prints TSV lines "fhir.resources json|xml <op> <input> <median ms>" like Thoth's compare example.
XML (the `xml` extra, lxml) is timed as HAPI's is: the XML text is the library's own serialization of the input.

fhir.resources 8 models R5 at the top level; its R4B package is the closest to R4 and is used here.
"""
import json
import statistics
import sys
import time
from pathlib import Path

from fhir.resources.R4B import get_fhir_model_class


def median_ms(f):
    times = []
    start = time.perf_counter()
    while len(times) < 5 or (time.perf_counter() - start < 1.5 and len(times) < 500):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main(directory):
    for path in sorted(Path(directory).glob("*.json")):
        text = path.read_text(encoding="utf-8")
        cls = get_fhir_model_class(json.loads(text)["resourceType"])
        try:
            model = cls.model_validate_json(text)
        except Exception as e:  # noqa: BLE001 - report, keep measuring the other inputs
            print(f"fhir.resources\tjson\tparse\t{path.stem}\tERROR {type(e).__name__}", flush=True)
            continue
        print(f"fhir.resources\tjson\tparse\t{path.stem}\t{median_ms(lambda: cls.model_validate_json(text)):.4f}", flush=True)
        print(f"fhir.resources\tjson\tserialize\t{path.stem}\t{median_ms(lambda: model.model_dump_json()):.4f}", flush=True)
        try:
            xml = model.model_dump_xml()
            cls.model_validate_xml(xml)
        except Exception as e:  # noqa: BLE001 - report, keep measuring the other inputs
            print(f"fhir.resources\txml\tparse\t{path.stem}\tERROR {type(e).__name__}: {e}"[:300], flush=True)
            continue
        print(f"fhir.resources\txml\tparse\t{path.stem}\t{median_ms(lambda: cls.model_validate_xml(xml)):.4f}", flush=True)
        print(f"fhir.resources\txml\tserialize\t{path.stem}\t{median_ms(lambda: model.model_dump_xml()):.4f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
