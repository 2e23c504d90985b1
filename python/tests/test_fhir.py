"""thoth.fhir on the shared FHIR examples: every format round trip gives back the resource, dicts equal json.loads."""

import io
import json
import tarfile

import pytest

import thoth
from conftest import shared
from thoth import fhir


def examples():
    """(name, bytes) of every JSON resource of the official R4 examples package."""
    with tarfile.open(shared("data/fhir/packages/hl7.fhir.r4.examples-4.0.1.tgz")) as tar:
        for member in tar:
            name = member.name.removeprefix("package/")
            if member.isfile() and name.endswith(".json") and name != "package.json" and "/" not in name:
                yield name, tar.extractfile(member).read()


def test_every_r4_example_round_trips_through_xml_and_binary():
    count = 0
    failures = []
    for name, data in examples():
        count += 1
        try:
            expected = fhir.loads(data)
            assert expected == json.loads(data)
            for dst in ("xml", "pb"):
                assert fhir.loads(fhir.convert(data, dst=dst), src=dst) == expected, dst
        except Exception as e:  # collect every failing file, report them together
            failures.append(f"{name}: {e!r}"[:300])
    assert count > 5000, count
    assert not failures, f"{len(failures)} of {count} failed:\n" + "\n".join(failures[:20])


def test_synthea_bundles_and_edge_cases_read_as_json_loads_does():
    synthea = sorted(shared("data/fhir/synthea").glob("*.json"))
    edge = sorted(shared("data/fhir/edge-cases").glob("*.json"))
    assert len(synthea) == 10 and len(edge) >= 2
    for path in synthea + edge:
        data = path.read_bytes()
        d = fhir.loads(data)
        # The dict is json.loads of the resource as the fhir crate writes it: for the Synthea bundles, that is the
        # file itself; the edge cases are written in canonical form (primitive extension arrays padded with null).
        assert d == json.loads(fhir.convert(data, dst="json")), path.name
        if path in synthea:
            assert d == json.loads(data), path.name
        assert fhir.loads(fhir.dumps(d, dst="pb")) == d
        assert fhir.loads(fhir.convert(data, dst="xml", pretty=True)) == d


def test_decimals_keep_their_lexical_form_across_formats():
    data = shared("data/fhir/edge-cases/observation-decimal.json").read_bytes()
    via_pb = fhir.convert(fhir.convert(data, dst="pb"), dst="json")
    assert via_pb == fhir.convert(data, dst="json")
    xml = shared("data/fhir/edge-cases/observation-decimal.xml").read_bytes()
    assert fhir.loads(xml) == fhir.loads(data)


def test_errors_carry_the_cli_messages(tmp_path):
    with pytest.raises(thoth.ThothError, match=r"^JSON at line 1, column 49 \(Patient\.name\[0\]\.given\[1\]\): "):
        fhir.loads('{"resourceType":"Patient","name":[{"given":["a",1]}]}')
    with pytest.raises(thoth.ThothError, match="unknown FHIR format"):
        fhir.convert("{}", dst="yaml")
    with pytest.raises(thoth.ThothError):
        fhir.loads('{"resourceType":"Patient","unknownElement":1}')
    assert fhir.loads('{"resourceType":"Patient","unknownElement":1}', lenient=True)["unknownElement"] == 1


def test_ndjson_streams_dicts(tmp_path):
    bundle = json.loads(next(shared("data/fhir/synthea").glob("*.json")).read_bytes())
    resources = [e["resource"] for e in bundle["entry"]]
    path = tmp_path / "bulk.ndjson"
    path.write_text("".join(json.dumps(r) + "\n" for r in resources) + "\n")
    assert list(fhir.iter_ndjson(path)) == resources
    path.write_text(json.dumps(resources[0]) + "\n{\"resourceType\": \"Nope\"}\n")
    it = fhir.iter_ndjson(path)
    assert next(it) == resources[0]
    with pytest.raises(thoth.ThothError, match="line 2"):
        next(it)
