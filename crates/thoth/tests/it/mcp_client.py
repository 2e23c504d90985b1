"""The official MCP Python SDK (PyPI `mcp`) as the client of Thoth's MCP server, over both transports.

Run by crates/thoth/tests/it/mcp.rs against a `thoth serve` (HTTP: POST /mcp) and `thoth mcp` (stdio) on one data
directory holding the conformance SNOMED CT subset, the LOINC subset and ICD-10-CM, with one v2 message received by
the engine. Every tool is called, and each answer is compared with what the HTTP API answers to the same question.

    python3 mcp_client.py --thoth BIN --data DIR --url http://127.0.0.1:PORT --message FILE
        [--reader-token T --other-token T]   (a server started with --auth: check the message tools' access)

Exits non-zero with the first mismatch.
"""

import argparse
import asyncio
import json
import sys
import urllib.error
import urllib.parse
import urllib.request

try:
    from mcp import Client, StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
except ImportError as e:  # pragma: no cover
    sys.exit(f"the MCP Python SDK is missing ({e}): python3 -m pip install -r .ci/requirements.txt")

ARGS = None
FAILURES = []


def http_raw(method, path, body=None, headers=None):
    """(status, body bytes) of the HTTP API."""
    req = urllib.request.Request(ARGS.url + path, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def http(method, path, body=None, headers=None):
    """(status, JSON or text) of the HTTP API."""
    status, raw = http_raw(method, path, body, headers)
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode("utf-8", "replace")


def query_path(path, params):
    q = urllib.parse.urlencode([(k, v) for k, v in params.items() if v is not None], doseq=True)
    return path + ("?" + q if q else "")


def get(path, **params):
    return http("GET", query_path(path, params))


def verhoeff(digits):
    """`digits` with its Verhoeff check digit: a valid SCTID (with partition 10 at the end of `digits`)."""
    d = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 3, 4, 0, 6, 7, 8, 9, 5], [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
         [3, 4, 0, 1, 2, 8, 9, 5, 6, 7], [4, 0, 1, 2, 3, 9, 5, 6, 7, 8], [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
         [6, 5, 9, 8, 7, 1, 0, 4, 3, 2], [7, 6, 5, 9, 8, 2, 1, 0, 4, 3], [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
         [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]]
    p = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 5, 7, 6, 2, 8, 3, 0, 9, 4], [5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
         [8, 9, 1, 6, 0, 4, 3, 5, 2, 7], [9, 4, 5, 3, 1, 2, 8, 7, 6, 0], [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
         [2, 7, 9, 3, 8, 0, 6, 4, 1, 5], [7, 0, 4, 6, 9, 1, 3, 2, 5, 8]]
    inv = [0, 4, 3, 2, 1, 5, 6, 7, 8, 9]
    c = 0
    for i, ch in enumerate(reversed(digits)):
        c = d[c][p[(i + 1) % 8][int(ch)]]
    return int(digits + str(inv[c]))


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, file=sys.stderr)


async def call(client, name, args):
    r = await client.call_tool(name, args)
    return r


def ok(result, name):
    if result.is_error:
        check(False, f"{name} failed: {result.content[0].text if result.content else result}")
        return {}
    if result.structured_content is None:
        # A route's resource passed through (FHIR operations, HL7 v2 validation and conversion): JSON text only.
        return json.loads(result.content[0].text)
    sc = result.structured_content
    # The text rendering is the same JSON.
    check(json.loads(result.content[0].text) == sc, f"{name}: text and structured content differ")
    return sc


def same(a, b, what):
    check(a == b, f"{what}: MCP {json.dumps(a)[:400]} != HTTP {json.dumps(b)[:400]}")


async def snomed_tools(c):
    s, http_concept = get("/v1/snomed/concepts/11687002")
    check(s == 200, "HTTP concept")
    same(ok(await call(c, "concept", {"concept_id": 11687002}), "concept"), http_concept, "concept")
    # Identifiers as text and as arrays (Hermes's tools take both).
    many = ok(await call(c, "concept", {"concept_id": ["11687002", 404684003]}), "concept[]")
    same(many["results"][0], http_concept, "concept[] first")
    same(many["results"][1], get("/v1/snomed/concepts/404684003")[1], "concept[] second")
    for tool, route in [("extended_concept", "extended"), ("properties", "properties"), ("synonym", "preferred"),
                        ("historical", "historical")]:
        same(ok(await call(c, tool, {"concept_id": 11687002}), tool), get(f"/v1/snomed/concepts/11687002/{route}")[1],
             tool)
    for tool, route in [("descriptions", "descriptions"), ("membership", "refsets")]:
        sc = ok(await call(c, tool, {"concept_id": 404684003}), tool)
        same(sc["items"], get(f"/v1/snomed/concepts/404684003/{route}")[1], tool)
    # An inactive concept's historical associations (the subset's association refset).
    same(ok(await call(c, "historical", {"concept_id": 28273000}), "historical inactive"),
         get("/v1/snomed/concepts/28273000/historical")[1], "historical inactive")
    fsn = ok(await call(c, "fully_specified_name", {"concept_id": 404684003}), "fsn")
    check(fsn["term"] == "Clinical finding (finding)", f"fsn: {fsn}")
    for a, b in [(11687002, 404684003), (404684003, 11687002)]:
        same(ok(await call(c, "subsumed_by", {"concept_id": a, "subsumer_id": b}), "subsumed_by"),
             get(f"/v1/snomed/concepts/{a}/subsumed-by/{b}")[1], f"subsumed_by {a} {b}")
    any_pair = ok(await call(c, "subsumed_by", {"concept_id": [138875005, 11687002], "subsumer_id": [404684003]}), "")
    check(any_pair == {"subsumedBy": True}, f"subsumed_by any pair: {any_pair}")
    # Search and autocomplete: the /v1/snomed/search answers.
    sc = ok(await call(c, "search", {"query": "diab mell"}), "search")
    same(sc["items"], get("/v1/snomed/search", s="diab mell", maxHits=10, fallbackFuzzy="true")[1], "search")
    check(len(sc["items"]) > 0, "search finds diabetes")
    sc = ok(await call(c, "autocomplete", {"query": "diab", "constraint": "<<404684003", "max_hits": 20}), "auto")
    same(sc["items"], get("/v1/snomed/search", s="diab", maxHits=20, constraint="<<404684003")[1], "autocomplete")
    # ECL: expansion paged from the /expand answer.
    full = get("/v1/snomed/expand", ecl="<<404684003")[1]
    sc = ok(await call(c, "expand_ecl", {"ecl": "<<404684003", "max_hits": 5}), "expand_ecl")
    same(sc["items"], full[:5], "expand_ecl page 1")
    check(sc["total"] == len(full) and sc["next_offset"] == 5 and "offset=5" in sc["note"], f"expand_ecl paging {sc}")
    sc = ok(await call(c, "expand_ecl", {"ecl": "<<404684003", "max_hits": 5, "offset": 5}), "expand_ecl 2")
    same(sc["items"], full[5:10], "expand_ecl page 2")
    check(ok(await call(c, "valid_ecl", {"ecl": "<< 404684003 |Clinical finding|"}), "valid_ecl")["valid"] is True,
          "valid ECL")
    bad = ok(await call(c, "valid_ecl", {"ecl": "<<<"}), "valid_ecl bad")
    check(bad["valid"] is False and bad["error"], f"invalid ECL: {bad}")
    sc = ok(await call(c, "intersect_ecl", {"concept_id": [11687002, 138875005], "ecl": "<<404684003"}), "intersect")
    check(sc["items"] == [11687002], f"intersect_ecl: {sc}")
    sc = ok(await call(c, "paths_to_root", {"concept_id": 11687002}), "paths_to_root")
    check(sc["paths"] and all(p[0]["id"] == 11687002 and p[-1]["id"] == 138875005 for p in sc["paths"]),
          f"paths_to_root: {sc}")
    check(any(n["id"] == 404684003 for p in sc["paths"] for n in p), "paths_to_root passes Clinical finding")
    sc = ok(await call(c, "transitive_synonyms", {"concept_id": 404684003, "max_hits": 3}), "transitive_synonyms")
    check(len(sc["items"]) == 3 and sc["total"] > 3, f"transitive_synonyms: {sc}")
    # The members of the subset's association refset "REPLACED BY", paged one at a time.
    sc = ok(await call(c, "refset_members", {"refset_id": 900000000000526001, "max_hits": 1}), "refset_members")
    check(len(sc["items"]) == 1 and (sc["total"] == 1 or sc["next_offset"] == 1), f"refset_members: {sc}")
    sc = ok(await call(c, "refsets", {}), "refsets")
    check(any(r["id"] == 900000000000526001 and r["type"]["id"] == 900000000000522004 for r in sc["items"]),
          f"refsets lists REPLACED BY as a historical association: {sc}")
    same(ok(await call(c, "map_to", {"concept_id": 11687002, "refset_id": 900000000000527005}), "map_to")["items"],
         get("/v1/snomed/concepts/11687002/map/900000000000527005")[1], "map_to")
    # map_into: the most specific members of the target among the concept and its ancestors, checked against the
    # HTTP API's expansion and subsumption (computed here, not by the tool's own code).
    # (/expand answers a row per description: the concept ids are taken as sets.)
    ancestors = {r["conceptId"] for r in get("/v1/snomed/expand", ecl=">>11687002")[1]}
    target = "<<404684003 OR 138875005"
    in_target = ancestors & {r["conceptId"] for r in get("/v1/snomed/expand", ecl=target)[1]}
    below = lambda a, b: a != b and get(f"/v1/snomed/concepts/{a}/subsumed-by/{b}")[1]["subsumedBy"]
    expected = sorted(a for a in in_target if not any(below(b, a) for b in in_target))
    sc = ok(await call(c, "map_into", {"concept_id": [11687002], "target": target}), "map_into")
    check(sc["items"] == [{"conceptId": 11687002, "mappedTo": expected}] and 11687002 in expected,
          f"map_into {sc} expected {expected}")
    sc = ok(await call(c, "map_into", {"concept_id": 11687002, "target": "138875005 OR 404684003"}), "map_into 2")
    check(sc["items"][0]["mappedTo"] == [404684003], f"map_into headings: {sc}")
    # Two headings neither of which is below the other: both (Disorder of pregnancy and Diabetes mellitus).
    parents = sorted(get("/v1/snomed/concepts/11687002/extended")[1]["parentRelationships"]["116680003"])
    two = [p for p in parents if p not in (138875005, 404684003, 64572001)][:2]
    sc = ok(await call(c, "map_into", {"concept_id": 11687002, "target": " OR ".join(map(str, two + [404684003]))}),
            "map_into 3")
    check(sc["items"][0]["mappedTo"] == sorted(a for a in two if not any(below(b, a) for b in two)),
          f"map_into two headings {two}: {sc}")
    # A reference set as the target: the association refset's only members are inactive concepts.
    # (307530000 is REPLACED BY 74400008 in the subset's association refset.)
    inactive = 307530000
    hist = get(f"/v1/snomed/concepts/{inactive}/historical")[1]
    check(hist, f"historical associations of {inactive}: {hist}")
    refset, members = next(iter(hist.items()))
    sc = ok(await call(c, "map_into", {"concept_id": inactive, "target": int(refset)}), "map_into refset")
    check(sc["items"][0]["mappedTo"] == [inactive], f"map_into a refset: {sc}")
    # source_historical / with_historical: the reverse of `historical`, and both directions together.
    successor = members[0]["targetComponentId"]
    sc = ok(await call(c, "source_historical", {"concept_id": successor}), "source_historical")
    check(any(g["associationType"] == int(refset) and any(s["conceptId"] == inactive for s in g["sources"])
              for g in sc["associations"]), f"source_historical of {successor}: {sc}")
    sc = ok(await call(c, "with_historical", {"concept_id": inactive}), "with_historical")
    check(inactive in sc["items"] and successor in sc["items"], f"with_historical: {sc}")
    sc = ok(await call(c, "with_historical", {"concept_id": successor}), "with_historical back")
    check(inactive in sc["items"] and successor in sc["items"], f"with_historical back: {sc}")
    # Expressions: validated and rendered as the FHIR $validate-code answers; subsumption as $subsumes answers.
    def fhir_param(answer, name):
        return next((p for p in answer["parameter"] if p["name"] == name), {})
    refined = "11687002:363698007=11687002"
    for expression, valid in [(refined, True), ("11687002:", False), ("11687002:11687002=404684003", False)]:
        sc = ok(await call(c, "validate_expression", {"expression": expression}), "validate_expression")
        http = get("/fhir/CodeSystem/$validate-code", url="http://snomed.info/sct", code=expression)[1]
        check(sc["valid"] is valid and sc["valid"] == fhir_param(http, "result").get("valueBoolean")
              and sc["display"] == fhir_param(http, "display").get("valueString"), f"validate_expression: {sc} {http}")
        check(valid or sc["message"], f"an invalid expression says why: {sc}")
    check("Gestational diabetes mellitus" in ok(await call(c, "validate_expression", {"expression": refined}),
                                                 "render")["display"], "rendered with terms")
    for a, b, outcome in [("11687002", refined, "subsumes"), (refined, "11687002", "subsumed-by"),
                          ("404684003", refined, "subsumes"), (refined, refined, "equivalent")]:
        sc = ok(await call(c, "subsumes_expression", {"expression_a": a, "expression_b": b}), "subsumes_expression")
        http = get("/fhir/CodeSystem/$subsumes", system="http://snomed.info/sct", codeA=a, codeB=b)[1]
        check(sc["outcome"] == outcome == fhir_param(http, "outcome").get("valueCode"),
              f"subsumes_expression {a} {b}: {sc} {http}")
    # Errors: the route's error text, as a tool error (never a crash).
    r = await call(c, "map_from", {"refset_id": 900000000000527005, "code": "E11.9"})
    s, body = get("/v1/snomed/crossmap/900000000000527005/E11.9")
    check(r.is_error and s >= 400 and body["error"] in r.content[0].text, f"map_from error: {r.content} vs {body}")
    r = await call(c, "concept", {"concept_id": 404684004})
    check(r.is_error and "check digit" in r.content[0].text, f"bad check digit: {r.content}")
    r = await call(c, "concept", {"concept_id": verhoeff("987654100")})
    check(r.is_error and "not found" in r.content[0].text, f"unknown concept: {r.content}")
    r = await call(c, "concept", {})
    check(r.is_error and "concept_id" in r.content[0].text, f"missing argument: {r.content}")
    r = await call(c, "expand_ecl", {"ecl": "<<404684003", "max_hits": 100000})
    check(r.is_error and "offset" in r.content[0].text, f"page too large: {r.content}")


async def fhir_tools(c):
    cases = [
        ("lookup", {"system": "http://loinc.org", "code": "14394-1"}, "/fhir/CodeSystem/$lookup",
         {"system": "http://loinc.org", "code": "14394-1"}),
        ("lookup", {"system": "http://hl7.org/fhir/sid/icd-10-cm", "code": "S00.00XA"}, "/fhir/CodeSystem/$lookup",
         {"system": "http://hl7.org/fhir/sid/icd-10-cm", "code": "S00.00XA"}),
        ("lookup", {"system": "http://snomed.info/sct", "code": "11687002"}, "/fhir/CodeSystem/$lookup",
         {"system": "http://snomed.info/sct", "code": "11687002"}),
        ("validate_code", {"system": "http://hl7.org/fhir/sid/icd-10-cm", "code": "E11.9"},
         "/fhir/CodeSystem/$validate-code", {"url": "http://hl7.org/fhir/sid/icd-10-cm", "code": "E11.9"}),
        ("validate_code", {"system": "http://hl7.org/fhir/sid/icd-10-cm", "code": "E11.9",
                           "value_set": "http://hl7.org/fhir/sid/icd-10-cm/vs"}, "/fhir/ValueSet/$validate-code",
         {"url": "http://hl7.org/fhir/sid/icd-10-cm/vs", "system": "http://hl7.org/fhir/sid/icd-10-cm",
          "code": "E11.9"}),
        ("validate_code", {"system": "http://loinc.org", "code": "14394-1", "display": "wrong"},
         "/fhir/CodeSystem/$validate-code", {"url": "http://loinc.org", "code": "14394-1", "display": "wrong"}),
        ("subsumes", {"system": "http://snomed.info/sct", "code_a": "404684003", "code_b": "11687002"},
         "/fhir/CodeSystem/$subsumes", {"system": "http://snomed.info/sct", "codeA": "404684003",
                                        "codeB": "11687002"}),
    ]
    for tool, args, path, params in cases:
        r = await call(c, tool, args)
        same(ok(r, tool), get(path, **params)[1], f"{tool} {args}")
        # The route's resource as the route wrote it, byte for byte, as text only.
        status, raw = http_raw("GET", query_path(path, params))
        check(status == 200 and r.structured_content is None and r.content[0].text == raw.decode(),
              f"{tool} {args}: the tool's text is not the route's answer byte for byte")
    sc = ok(await call(c, "expand", {"value_set": "http://loinc.org/vs/LL744-4", "count": 1}), "expand")
    s, vs = get("/fhir/ValueSet/$expand", url="http://loinc.org/vs/LL744-4", offset=0, count=1)
    volatile = ("identifier", "timestamp")
    same({k: v for k, v in sc["expansion"].items() if k not in volatile},
         {k: v for k, v in vs["expansion"].items() if k not in volatile}, "expand")
    check(sc["next_offset"] == 1 and "offset=1" in sc["note"], f"expand paging: {sc.get('note')}")
    # An unknown code system: the OperationOutcome's text as a tool error.
    r = await call(c, "lookup", {"system": "http://example.org/none", "code": "x"})
    s, body = get("/fhir/CodeSystem/$lookup", system="http://example.org/none", code="x")
    issue = body["issue"][0]
    text = issue.get("diagnostics") or issue["details"]["text"]
    check(r.is_error and s >= 400 and text in r.content[0].text,
          f"lookup error: {r.content} vs {body}")
    r = await call(c, "translate", {"system": "http://snomed.info/sct", "code": "11687002",
                                    "target_system": "http://hl7.org/fhir/sid/icd-10-cm"})
    s, body = get("/fhir/ConceptMap/$translate", system="http://snomed.info/sct", code="11687002",
                  targetsystem="http://hl7.org/fhir/sid/icd-10-cm")
    if s == 200:
        same(ok(r, "translate"), body, "translate")
    else:
        check(r.is_error, f"translate: HTTP {s} but the tool succeeded")
    info = ok(await call(c, "server_info", {}), "server_info")
    urls = {cs["url"] for cs in info["codeSystems"] if cs["url"]}
    check({"http://loinc.org", "http://hl7.org/fhir/sid/icd-10-cm"} <= urls,
          f"server_info code systems: {sorted(urls)[:20]}")
    check(info["snomed"]["concepts"] > 0 and info["snomed"]["releases"], f"server_info snomed: {info['snomed']}")


async def hl7_tools(c, message, engine):
    text = message.replace("\r", "\n")  # as an assistant pastes it
    sc = ok(await call(c, "hl7_parse", {"message": text}), "hl7_parse")
    check(sc["structure"] == "ADT_A01" and sc["segments"][0]["id"] == "MSH", f"hl7_parse: {str(sc)[:300]}")
    pid = next(s for s in sc["segments"] if s["id"] == "PID")
    check(pid["names"][7] == "Administrative Sex", f"PID-8 named: {pid['names'][:9]}")
    same(ok(await call(c, "hl7_validate", {"message": text}), "hl7_validate"),
         http("POST", "/hl7/validate", message.encode())[1], "hl7_validate")
    same(ok(await call(c, "hl7_validate", {"message": text, "strict": True, "version": "2.5.1"}), "strict"),
         http("POST", "/hl7/validate?version=2.5.1&strict=true", message.encode())[1], "hl7_validate strict")
    mine = ok(await call(c, "hl7_to_fhir", {"message": text}), "hl7_to_fhir")
    theirs = http("POST", "/hl7/to-fhir", message.encode())[1]
    check(mine["resourceType"] == "Bundle", "to-fhir gives a Bundle")
    same([e["resource"]["resourceType"] for e in mine["entry"]],
         [e["resource"]["resourceType"] for e in theirs["entry"]], "hl7_to_fhir resources")
    same([e["resource"].get("identifier") for e in mine["entry"]],
         [e["resource"].get("identifier") for e in theirs["entry"]], "hl7_to_fhir identifiers")
    sc = ok(await call(c, "hl7_explain", {"path": "PID-8", "message": text}), "hl7_explain")
    check(sc["name"] == "Administrative Sex" and sc["table"]["id"] == "0001" and sc["value"], f"hl7_explain: {sc}")
    r = await call(c, "hl7_explain", {"path": "PID-999"})
    check(r.is_error and "PID" in r.content[0].text, f"hl7_explain bad path: {r.content}")
    r = await call(c, "hl7_parse", {"message": "hello"})
    check(r.is_error and "MSH" in r.content[0].text, f"hl7_parse not a message: {r.content}")
    if engine:
        sc = ok(await call(c, "find_messages", {"type": "ADT"}), "find_messages")
        same(sc, get("/messages", type="ADT", offset=0, limit=100)[1], "find_messages")
        check(sc["total"] == 1, f"find_messages total: {sc}")
        mid = sc["items"][0]["id"]
        same(ok(await call(c, "get_message", {"id": mid}), "get_message"), get(f"/messages/{mid}")[1], "get_message")


async def session(client, label, message, engine, full=True):
    async with client as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        hermes = {"search", "autocomplete", "concept", "extended_concept", "properties", "expand_ecl", "map_to",
                  "map_from", "intersect_ecl", "subsumed_by", "paths_to_root", "historical", "synonym", "valid_ecl",
                  "membership", "fully_specified_name", "descriptions", "refset_members", "server_info", "refsets",
                  "transitive_synonyms", "map_into", "source_historical", "with_historical",
                  "validate_expression", "subsumes_expression"}
        others = {"lookup", "validate_code", "expand", "subsumes", "translate", "hl7_parse", "hl7_validate",
                  "hl7_to_fhir", "hl7_explain"}
        check(hermes | others <= set(tools), f"{label}: tools missing: {sorted((hermes | others) - set(tools))}")
        check(("find_messages" in tools) == engine, f"{label}: find_messages listed only with the engine")
        for t in tools.values():
            check(t.input_schema.get("type") == "object", f"{label}: {t.name} has an object schema")
        if full:
            for part in (snomed_tools(c), fhir_tools(c), hl7_tools(c, message, engine)):
                try:
                    await part
                except (KeyError, IndexError, TypeError, StopIteration) as e:
                    check(False, f"{label}: {e!r}")
        else:
            same(ok(await call(c, "concept", {"concept_id": 11687002}), "concept"),
                 get("/v1/snomed/concepts/11687002")[1], f"{label}: concept")
        resources = {r.uri for r in (await c.list_resources()).resources}
        check({"thoth://guides/ecl", "thoth://codesystems"} <= resources, f"{label}: resources {resources}")
        guide = await c.read_resource("thoth://guides/ecl")
        check("ECL" in guide.contents[0].text, f"{label}: ECL guide")
        prompts = {p.name for p in (await c.list_prompts()).prompts}
        check({"find_code", "explain_rejection"} <= prompts, f"{label}: prompts {prompts}")
        p = await c.get_prompt("find_code", {"phrase": "heart attack"})
        check("heart attack" in p.messages[0].content.text, f"{label}: find_code prompt")
        print(f"{label}: {len(tools)} tools, protocol {c.protocol_version}", file=sys.stderr)


def http_client(url, token=None, mode="auto"):
    headers = {"Authorization": f"Bearer {token}"} if token else None
    return Client(streamable_http_client(url, http_client=create_mcp_http_client(headers=headers)), mode=mode)


async def access(url):
    """A server with --auth: message tools only for a token with messages:read."""
    async with http_client(url, ARGS.reader_token) as c:
        sc = ok(await call(c, "find_messages", {}), "find_messages with messages:read")
        check(sc["total"] >= 0, "reader sees messages")
    async with http_client(url, ARGS.other_token) as c:
        r = await call(c, "find_messages", {})
        check(r.is_error and "messages:read" in r.content[0].text, f"a token without the scope: {r.content}")
        # Terminology stays open.
        ok(await call(c, "concept", {"concept_id": 11687002}), "concept with any token")


async def main():
    message = open(ARGS.message, "rb").read().decode("utf-8", "replace")
    url = ARGS.url + "/mcp"
    if ARGS.reader_token:
        await access(url)
    else:
        stdio = lambda mode: Client(StdioServerParameters(command=ARGS.thoth, args=["--data", ARGS.data, "mcp"],
                                                          env={"RUST_LOG": "warn"}), mode=mode)
        # The current revision (stateless) on both transports, every tool.
        await session(http_client(url), "http", message, engine=True)
        await session(stdio("auto"), "stdio", message, engine=False)
        # Clients of the earlier revisions: the initialize handshake.
        await session(http_client(url, mode="legacy"), "http legacy", message, engine=True, full=False)
        await session(stdio("legacy"), "stdio legacy", message, engine=False, full=False)
    if FAILURES:
        sys.exit(f"{len(FAILURES)} failure(s); first: {FAILURES[0]}")
    print("ok", file=sys.stderr)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--thoth", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--message", required=True)
    p.add_argument("--reader-token")
    p.add_argument("--other-token")
    ARGS = p.parse_args()
    asyncio.run(main())
