"""thoth.terminology on the terminology conformance suite's SNOMED CT subset: every answer equals the HTTP API's
(`thoth serve` over the same data directory, started by the `server` fixture)."""

import json
import random
import threading
import urllib.error
import urllib.parse
import urllib.request

import pytest

import thoth
from conftest import shared
from thoth.terminology import SNOMED, Terminology


def http(base, path, **query):
    url = f"{base}{path}?{urllib.parse.urlencode(query)}"
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture(scope="module")
def tx(snomed_data_dir):
    return Terminology.open(snomed_data_dir)


@pytest.fixture(scope="module")
def concepts():
    """A fixed sample of the subset's concepts, active and inactive."""
    rows = shared("tx-ecosystem/tx-source/snomed/Terminology/sct2_Concept_Snapshot_INT_20250909.txt")
    lines = rows.read_text().splitlines()[1:]
    ids = [line.split("\t")[0] for line in lines]
    assert len(ids) > 100
    return random.Random(23).sample(ids, 80)


def test_lookup_equals_http(tx, server, concepts):
    for code in concepts:
        status, expected = http(server, "/fhir/CodeSystem/$lookup", system=SNOMED, code=code)
        assert status == 200, (code, expected)
        assert tx.lookup(code) == expected, code
        # The cheap lookup agrees with $lookup on the display and the status.
        params = {p["name"]: p for p in expected["parameter"]}
        concept = tx.concept(code)
        assert concept["code"] == code and concept["display"] == params["display"]["valueString"], code
        inactive = [p for p in expected["parameter"] if p["name"] == "property"
                    and p["part"][0].get("valueCode") == "inactive"]
        if inactive:
            assert concept["active"] == (not inactive[0]["part"][1]["valueBoolean"]), code


def test_unknown_code_raises_the_http_message(tx, server):
    status, outcome = http(server, "/fhir/CodeSystem/$lookup", system=SNOMED, code="123456")
    assert status >= 400 and outcome["resourceType"] == "OperationOutcome"
    assert tx.concept("404684003")["fsn"] == "Clinical finding (finding)"
    assert tx.concept("22298006") is None  # a valid SCTID the subset does not hold
    with pytest.raises(thoth.ThothError):
        tx.concept("not-a-code")
    with pytest.raises(thoth.ThothError) as e:
        tx.lookup("123456")
    texts = [i.get("details", {}).get("text") or i.get("diagnostics") for i in outcome["issue"]]
    assert str(e.value) == "; ".join(texts)


def test_validate_code_equals_http(tx, server, concepts):
    for code in concepts[:30] + ["999999999"]:
        status, expected = http(server, "/fhir/CodeSystem/$validate-code", url=SNOMED, code=code)
        assert status == 200
        assert tx.validate_code(code) == expected, code
    code = concepts[0]
    display = tx.lookup(code)["parameter"]
    display = next(p["valueString"] for p in display if p["name"] == "display")
    _, expected = http(server, "/fhir/CodeSystem/$validate-code", url=SNOMED, code=code, display=display + "x")
    assert tx.validate_code(code, display=display + "x") == expected


def test_subsumes_equals_http(tx, server, concepts):
    outcomes = set()
    pairs = [(a, b) for a in concepts[:8] for b in concepts[:8]] + [("138875005", c) for c in concepts[:10]]
    for a, b in pairs:
        status, expected = http(server, "/fhir/CodeSystem/$subsumes", system=SNOMED, codeA=a, codeB=b)
        if status != 200:  # an inactive concept, say: the same error from Python
            with pytest.raises(thoth.ThothError):
                tx.subsumes(a, b)
            continue
        outcome = next(p["valueCode"] for p in expected["parameter"] if p["name"] == "outcome")
        assert tx.subsumes(a, b) == outcome, (a, b)
        outcomes.add(outcome)
    assert {"equivalent", "subsumes", "not-subsumed"} <= outcomes


def test_expand_ecl_equals_http(tx, server, concepts):
    for ecl in ["<< 404684003", "< 138875005 {{ term = \"heart\" }}", f"> {concepts[0]}", "^ 900000000000497000"]:
        status, vs = http(server, "/fhir/ValueSet/$expand", url=f"{SNOMED}?fhir_vs=ecl/{ecl}")
        if status != 200:
            with pytest.raises(thoth.ThothError):
                tx.expand_ecl(ecl)
            continue
        assert tx.expand_ecl(ecl) == vs["expansion"].get("contains", []), ecl
    with pytest.raises(thoth.ThothError):
        tx.expand_ecl("<< (")


def test_search_equals_http(tx, server):
    hits = 0
    for text, ecl in [("heart", None), ("fract", None), ("disease", "<< 404684003"), ("zzzzz", None)]:
        query = {"s": text, "maxHits": 10}
        if ecl:
            query["constraint"] = ecl
        status, expected = http(server, "/v1/snomed/search", **query)
        assert status == 200
        got = tx.search(text, ecl=ecl, limit=10)
        assert got == expected, text
        hits += len(got)
    assert hits > 10


def test_shared_across_threads(tx, concepts):
    expected = {c: tx.lookup(c) for c in concepts[:20]}
    errors = []

    def work():
        for c in concepts[:20]:
            if tx.lookup(c) != expected[c]:
                errors.append(c)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_open_errors(tmp_path):
    with pytest.raises(thoth.ThothError, match="not a directory"):
        Terminology.open(tmp_path / "missing")
    empty = Terminology.open(tmp_path)
    with pytest.raises(thoth.ThothError, match="no SNOMED CT"):
        empty.search("heart")
