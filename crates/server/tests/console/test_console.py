"""The Thoth console driven in a real browser (headless Chromium through Playwright).

Run by `cargo xtask console-test`, which prepares a data directory (the conformance SNOMED CT subset, the LOINC
subset, the FHIR packages), starts `thoth serve` and passes its addresses:

    python3 test_console.py --url http://127.0.0.1:PORT --mllp 127.0.0.1:MLLP_PORT --screenshots DIR --shared DIR

It walks what a person does: search -> concept page -> parent -> child; LOINC: a term -> one of its parts -> the
codes that have it -> back; ICD-10-CM: chapter -> block -> code and its path to the root (the expected contents
read from the subsets' own files in ../shared, passed as --shared); ECL with a syntax error, then a valid
expression and its count; a value set expansion; a message sent over MLLP appears in the desk, opens with named
fields, replays. Every screen is saved as a PNG in DIR. Any error in the browser console, any uncaught exception
and any failed request fails the run. It also prints the first load's compressed bytes, its time to interactive
and a search keystroke's time to results (docs/PERFORMANCE.md).
"""

import argparse
import csv
import gzip
import os
import re
import shutil
import socket
import statistics
import sys
import time
import xml.etree.ElementTree as ET

from playwright.sync_api import expect, sync_playwright

MLLP_START, MLLP_END = b"\x0b", b"\x1c\x0d"
TIMEOUT_MS = 15_000


def chromium_path():
    """Debian's chromium (no browser download): THOTH_CHROMIUM, or the first one on PATH."""
    for candidate in (os.environ.get("THOTH_CHROMIUM"), "chromium", "chromium-browser"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    sys.exit("ERROR: no chromium found (apt-get install chromium, or set THOTH_CHROMIUM)")


def send_mllp(addr, message):
    """Sends one message over MLLP and returns the ACK's text."""
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(MLLP_START + message.encode() + MLLP_END)
        data = b""
        while not data.endswith(MLLP_END):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    return data.strip(MLLP_START + MLLP_END).decode()


def sample_message(control):
    return "\r".join([
        f"MSH|^~\\&|CONSOLETEST|HOSP|EHR|HOSP|20240315143000||ADT^A01^ADT_A01|{control}|P|2.5.1",
        "EVN|A01|20240315143000",
        "PID|1||12345^^^HOSP^MR||DOE^JANE||19800101|F",
        "PV1|1|I|WARD1^101^A",
    ]) + "\r"


def with_token(browser, args):
    """A server started with `--auth`: the messages need a token, entered in the header's form."""
    control = f"AUTH{int(time.time())}"
    assert "MSA|AA" in send_mllp(args.auth_mllp, sample_message(control))
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT_MS)
    run = Run(page, args.screenshots)
    run.expected_status = 401
    page.goto(args.auth_url + "/#/messages")
    page.wait_for_selector("html[data-ready=true]")
    expect(page.get_by_role("alert")).to_contain_text("enter a token")
    form = page.get_by_role("form", name="Access token")
    expect(form).to_be_visible()
    run.shot("12-token-needed")
    form.get_by_label(re.compile("Bearer token")).fill(args.auth_token)
    form.get_by_role("button", name="Use token").click()
    row = page.get_by_role("table", name="Messages").get_by_role("row").filter(has_text=control)
    expect(row).to_be_visible()
    expect(page.get_by_role("button", name="Token ✓")).to_be_visible()
    run.shot("13-token-used")
    # Kept for the tab: another page of the console asks with it too.
    row.get_by_role("link").first.click()
    expect(page.get_by_role("cell", name=control, exact=True)).to_be_visible()
    page.get_by_role("button", name="Forget token").click()
    expect(page.get_by_role("alert")).to_contain_text("enter a token")
    run.check_clean("token")
    page.close()


class Run:
    def __init__(self, page, shots):
        self.page = page
        self.shots = shots
        self.problems = []
        # While a step provokes an API error on purpose, Chromium's "Failed to load resource: ... status of 4xx"
        # line is expected; nothing else is.
        self.expected_status = None
        page.on("console", self.on_console)
        page.on("pageerror", lambda e: self.problems.append(f"uncaught exception: {e}"))
        page.on("requestfailed", self.on_failed)

    def on_console(self, msg):
        if self.expected_status and f"status of {self.expected_status}" in msg.text:
            return
        if msg.type in ("error", "warning") and "ERR_ABORTED" not in msg.text:
            self.problems.append(f"console {msg.type}: {msg.text} ({msg.location})")

    def on_failed(self, request):
        # Requests the console cancels on purpose (a newer keystroke) are aborted, not failed.
        if "ERR_ABORTED" not in (request.failure or ""):
            self.problems.append(f"request failed: {request.url} {request.failure}")

    def shot(self, name):
        self.page.screenshot(path=os.path.join(self.shots, f"{name}.png"), full_page=True)

    def check_clean(self, where):
        if self.problems:
            raise AssertionError(f"{where}: browser reported problems:\n  " + "\n  ".join(self.problems))


def first_load(browser, url):
    """Compressed bytes on the wire and time to interactive of a first visit (cold cache), loopback."""
    context = browser.new_context()
    page = context.new_page()
    sizes = []
    page.on("requestfinished", lambda r: sizes.append(r.sizes()["responseBodySize"] + r.sizes()["responseHeadersSize"]))
    page.goto(url + "/#/browse")
    page.wait_for_selector("html[data-ready=true]")
    tti = page.evaluate(
        "performance.getEntriesByName('thoth-console-interactive')[0].startTime"
    )
    # Only the files: the API calls the first page makes are data, not the console.
    files = page.evaluate(
        "performance.getEntriesByType('resource').filter(e => !e.name.includes('/fhir/') && !e.name.includes('/v1/'))"
        ".map(e => e.transferSize).concat([performance.getEntriesByType('navigation')[0].transferSize])"
    )
    context.close()
    return sum(files), tti


def search_latency(page, words, rounds=3):
    """Milliseconds from a keystroke in the search box to its results, over prefixes of `words` typed one letter
    at a time. Two clocks: the results in the page (the list says which text it is for: `data-q`) and the results
    painted (the next frame after that, which waits for the display's refresh as a real screen does). Each
    keystroke is also split, from the browser's resource timing of its search request, into: before the request
    left, the server's answer (request sent → response received) and after (parse and render)."""
    samples = []
    page.get_by_role("link", name="Browse", exact=True).click()
    box = page.get_by_role("searchbox", name="Search")
    for _ in range(rounds):
        for word in words:
            for i in range(3, len(word) + 1):
                box.fill(word[: i - 1])
                page.wait_for_timeout(30)
                page.evaluate(
                    # A promise the next evaluate awaits (wait_for_function would poll with eval, which the
                    # console's Content-Security-Policy refuses).
                    # The clock starts when the page gets the key (keydown), not when this script asks for it:
                    # the test driver's own round trip to the browser is not the console's time.
                    """([text, limit]) => { performance.clearResourceTimings();
                    const box = document.querySelector('input[type=search]');
                    box.addEventListener('keydown', () => { window.__keydown = performance.now(); }, { once: true, capture: true });
                    const done = () => { const l = document.querySelector('ul.results');
                      return l && l.dataset.q === text; };
                    window.__results = new Promise((resolve, reject) => {
                      setTimeout(() => reject(new Error(`no results for ${text} within ${limit} ms`)), limit);
                      new MutationObserver((_, obs) => { if (!done()) return;
                        const seen = performance.now(); obs.disconnect();
                        requestAnimationFrame(() => setTimeout(() => resolve([seen, performance.now()]), 0)); })
                        .observe(document.querySelector('main'),
                          { childList: true, subtree: true, characterData: true, attributes: true, attributeFilter: ['data-q'] });
                    });
                    }""",
                    [word[:i], TIMEOUT_MS],
                )
                box.press(word[i - 1])
                started, seen, shown, req = page.evaluate(
                    """async (text) => { const [seen, shown] = await window.__results;
                    const e = performance.getEntriesByType('resource').filter((e) =>
                      e.name.includes('/v1/snomed/search') && new URL(e.name).searchParams.get('s') === text).pop();
                    return [window.__keydown, seen, shown, e ? [e.startTime, e.requestStart, e.responseStart, e.responseEnd] : null]; }""",
                    word[:i],
                )
                split = None
                if req:
                    sent, asked, answered, ended = req
                    split = (sent - started, answered - asked, seen - ended)
                samples.append({"text": word[:i], "in_page": seen - started, "painted": shown - started, "split": split})
    return samples


def latency_report(samples):
    """One line: medians and worst of both clocks, and where the worst keystroke's time went."""
    in_page = [s["in_page"] for s in samples]
    painted = [s["painted"] for s in samples]
    worst = max(samples, key=lambda s: s["in_page"])
    line = (f"median {statistics.median(in_page):.1f} ms, worst {max(in_page):.1f} ms; painted: median "
            f"{statistics.median(painted):.1f} ms, worst {max(painted):.1f} ms ({len(samples)} keystrokes)")
    splits = [s["split"] for s in samples if s["split"]]
    if splits:
        med = [statistics.median(x[k] for x in splits) for k in range(3)]
        line += (f"; medians: {med[0]:.1f} ms before the request, {med[1]:.1f} ms server, {med[2]:.1f} ms parse and "
                 f"render; server worst {max(x[1] for x in splits):.1f} ms")
    if worst["split"]:
        before, server, after = worst["split"]
        line += (f"; worst keystroke {worst['text']!r}: {before:.1f} ms before the request, {server:.1f} ms server, "
                 f"{after:.1f} ms parse and render")
    return line


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--mllp", required=True)
    ap.add_argument("--screenshots", required=True)
    ap.add_argument("--perf-only", action="store_true", help="measure only (a server with any SNOMED CT release)")
    ap.add_argument("--words", default="appendicitis,diabetes,fracture")
    ap.add_argument("--shared", help="../shared (the LOINC subset and ICD-10-CM files the server imported)")
    ap.add_argument("--auth-url", help="a second server, started with --auth")
    ap.add_argument("--auth-mllp")
    ap.add_argument("--auth-token", help="a token that server takes for the messages")
    args = ap.parse_args()
    os.makedirs(args.screenshots, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        # Warm once (the server compresses its files at first use), then measure a cold browser cache.
        first_load(browser, args.url)
        loads = [first_load(browser, args.url) for _ in range(5)]
        total_bytes = max(b for b, _ in loads)
        tti = statistics.median(t for _, t in loads)
        print(f"first load: {total_bytes} bytes on the wire (compressed); time to interactive median {tti:.0f} ms")
        assert total_bytes <= 150 * 1024, total_bytes
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        run = Run(page, args.screenshots)
        page.goto(args.url + "/")
        page.wait_for_selector("html[data-ready=true]")
        if args.perf_only:
            print("search keystroke to results: " + latency_report(search_latency(page, args.words.split(","))))
            run.check_clean("search")
            return
        walk(run, args)
        walk_code_systems(run, args)
        samples = search_latency(page, ["appendicitis", "fracture"], rounds=1)
        print("search keystroke to results (conformance subset): " + latency_report(samples))
        run.check_clean("the end")
        if args.auth_url:
            with_token(browser, args)
        browser.close()
    print("console: every screen passed")


LOINC = "http://loinc.org"
ICD10CM = "http://hl7.org/fhir/sid/icd-10-cm"
# A LOINC term of the subset whose COMPONENT part other terms share (its names and counts are read from the files).
LOINC_TERM = "595-9"


def loinc_facts(shared):
    """From the LOINC subset's files: the term's name, its COMPONENT part, the terms that have that part, and the
    root of the component hierarchy."""
    base = os.path.join(shared, "tx-ecosystem/tx-source/loinc")
    if not os.path.isdir(base):
        sys.exit(f"ERROR: the LOINC subset is missing: {base}")
    with open(os.path.join(base, "LoincTable/Loinc.csv"), newline="", encoding="utf-8") as f:
        name = next(r["LONG_COMMON_NAME"] for r in csv.DictReader(f) if r["LOINC_NUM"] == LOINC_TERM)
    with open(os.path.join(base, "AccessoryFiles/PartFile/LoincPartLink_Primary.csv"), newline="", encoding="utf-8") as f:
        links = list(csv.DictReader(f))
    part = next(r for r in links if r["LoincNumber"] == LOINC_TERM and r["PartTypeName"] == "COMPONENT")
    having = {r["LoincNumber"] for r in links if r["PartNumber"] == part["PartNumber"]}
    with open(os.path.join(base, "AccessoryFiles/ComponentHierarchyBySystem/ComponentHierarchyBySystem.csv"),
              newline="", encoding="utf-8") as f:
        root = next(r["CODE_TEXT"] for r in csv.DictReader(f) if not r["PATH_TO_ROOT"])
    return {"name": name, "part": part["PartNumber"], "part_name": part["PartName"], "having": having, "root": root}


def icd10cm_facts(shared):
    """From CDC's tabular XML: the chapters, the first chapter's sections, the first block's first category and
    that category's first code."""
    path = os.path.join(shared, "data/icd10cm/icd10c-tabular-April-1-2026.xml.gz")
    if not os.path.exists(path):
        sys.exit(f"ERROR: the ICD-10-CM file is missing: {path}")
    with gzip.open(path) as f:
        root = ET.parse(f).getroot()
    chapters = root.findall("chapter")
    first = chapters[0]
    sections = first.findall("section")
    block = next(s for s in sections if len(s.findall("diag")) > 1)
    category = block.find("diag")
    code = category.find("diag")
    text = lambda el, tag: el.find(tag).text.strip()
    return {
        "chapters": [text(c, "desc") for c in chapters],
        "sections": len(sections),
        "block": (block.get("id"), text(block, "desc")),
        "category": (text(category, "name"), text(category, "desc")),
        "code": (text(code, "name"), text(code, "desc")),
    }


def walk_code_systems(run, args):
    """LOINC parts and ICD-10-CM chapters browse like SNOMED CT: trees, paths to the root, parts as links."""
    if not args.shared:
        sys.exit("ERROR: --shared is needed (the LOINC subset and ICD-10-CM files the server imported)")
    page = run.page
    loinc = loinc_facts(args.shared)
    icd = icd10cm_facts(args.shared)
    h1 = page.get_by_role("heading", level=1)

    # LOINC: the top of its component hierarchy, then a search, a term, its COMPONENT part, the terms with it.
    page.get_by_role("link", name="Browse", exact=True).click()
    page.get_by_label("Code system").select_option(f"{LOINC}|2.82")
    expect(page.get_by_role("list", name="LOINC hierarchy").get_by_role("link", name=loinc["root"], exact=True)).to_be_visible()
    box = page.get_by_role("searchbox", name="Search")
    # The words the term's name starts with (LOINC's filter matches consecutive words).
    box.fill(" ".join(loinc["name"].split()[:4]))
    term = page.locator(f'ul.results a[href*="code={LOINC_TERM}"]')
    expect(term).to_be_visible()
    term.click()
    expect(h1).to_have_text(loinc["name"])
    parts = page.get_by_role("table", name="Parts")
    expect(parts.get_by_role("row").filter(has_text="COMPONENT")).to_contain_text(loinc["part"])
    run.shot("14-loinc-term")
    parts.get_by_role("link", name=loinc["part_name"], exact=True).click()
    expect(h1).to_have_text(loinc["part_name"])
    expect(page.get_by_text("part: COMPONENT")).to_be_visible()
    n = len(loinc["having"])
    expect(page.get_by_role("heading", name=f"Codes with this part ({n})")).to_be_visible()
    listed = page.get_by_role("list", name="Codes with this part").locator(".code")
    expect(listed).to_have_count(min(n, 50))
    shown = set(listed.all_inner_texts())
    assert shown <= loinc["having"], shown - loinc["having"]
    if n > 50:
        first = listed.first.inner_text()
        page.get_by_role("button", name="Next page").click()
        expect(page.get_by_text(f"51–{min(n, 100)} of {n}")).to_be_visible()
        expect(listed.first).not_to_have_text(first)
    run.shot("15-loinc-part")
    page.go_back()
    expect(h1).to_have_text(loinc["name"])
    run.check_clean("LOINC")

    # ICD-10-CM: chapters -> a chapter -> a block -> its first category, opened in the tree -> a code; the path.
    page.get_by_role("link", name="Browse", exact=True).click()
    page.get_by_label("Code system").select_option(f"{ICD10CM}|2026")
    chapters = page.get_by_role("list", name="ICD-10-CM chapters")
    expect(chapters.locator(":scope > li")).to_have_count(len(icd["chapters"]))
    expect(chapters.get_by_role("link").first).to_have_text(icd["chapters"][0])
    run.shot("16-icd10cm-chapters")
    chapters.get_by_role("link", name=icd["chapters"][0], exact=True).click()
    expect(h1).to_have_text(icd["chapters"][0])
    expect(page.get_by_role("heading", name=f"Children ({icd['sections']})")).to_be_visible()
    block_id, block_name = icd["block"]
    page.get_by_role("list", name="Children").get_by_role("link", name=block_name, exact=True).click()
    expect(h1).to_have_text(block_name)
    cat_code, cat_name = icd["category"]
    code, code_name = icd["code"]
    page.get_by_role("button", name=f"Expand {cat_name}", exact=True).click()
    page.get_by_role("link", name=code_name, exact=True).click()
    expect(h1).to_have_text(code_name)
    expect(page.get_by_role("list", name="Parents").get_by_role("link")).to_have_text(cat_name)
    page.get_by_role("button", name="Show paths to root").click()
    expect(page.get_by_role("list", name="Paths to root").get_by_role("listitem")).to_have_text(
        " › ".join([icd["chapters"][0], block_name, cat_name, code_name]))
    run.shot("17-icd10cm-code")
    page.go_back()
    expect(h1).to_have_text(block_name)
    # A code that does not exist: the server's explanation, not a blank page.
    run.expected_status = 404
    page.goto(f"{args.url}/#/code?system={ICD10CM}&code=NOPE1")
    expect(page.get_by_role("alert")).to_contain_text("Unknown code 'NOPE1'")
    run.expected_status = None
    run.check_clean("ICD-10-CM")


def walk(run, args):
    page = run.page
    for name in ["Browse", "ECL", "FHIR", "Messages"]:
        expect(page.get_by_role("link", name=name, exact=True)).to_be_visible()

    # Browse: search -> concept page -> parent -> child.
    page.get_by_role("link", name="Browse", exact=True).click()
    box = page.get_by_role("searchbox", name="Search")
    box.fill("appendic")
    result = page.get_by_role("link", name=re.compile(r"^Appendicitis\b.*74400008"))
    expect(result.first).to_be_visible()
    expect(page.locator("ul.results mark").first).to_have_text(re.compile("appendic", re.I))
    run.shot("01-search")
    # The search is a deep link (the address follows once typing pauses).
    expect(page).to_have_url(re.compile(r"q=appendic"))
    # The semantic tag narrows it (and is in the link too).
    box.fill("liver")
    tag = page.get_by_label("Semantic tag")
    liver_structure = page.locator('ul.results a[href="#/concept/10200004"]')  # Liver structure
    tag.select_option("body structure")
    expect(liver_structure.first).to_be_visible()
    expect(page).to_have_url(re.compile(r"tag=body"))
    tag.select_option("disorder")
    expect(page.locator("ul.results a").first).to_be_visible()
    expect(liver_structure).to_have_count(0)
    tag.select_option("")
    box.fill("appendic")
    expect(result.first).to_be_visible()
    result.first.click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Appendicitis")
    expect(page.get_by_text("74400008").first).to_be_visible()
    expect(page.get_by_role("heading", name="Descriptions")).to_be_visible()
    expect(page.get_by_role("cell", name="Appendicitis", exact=True).first).to_be_visible()
    run.shot("02-concept")
    parents = page.locator("section[aria-labelledby=h-parents] ul.plain a")
    expect(parents.first).to_be_visible()
    parent_name = parents.first.inner_text()
    parents.first.click()
    expect(page.get_by_role("heading", level=1)).to_have_text(parent_name)
    child = page.locator("ul.tree a", has_text=re.compile(r"^Appendicitis$"))
    expect(child.first).to_be_visible()
    run.shot("03-parent")
    child.first.click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Appendicitis")
    # Browser history works: back to the parent.
    page.go_back()
    expect(page.get_by_role("heading", level=1)).to_have_text(parent_name)
    # A concept that does not exist: a message, not a blank page.
    run.expected_status = 400
    page.goto(args.url + "/#/concept/999999999")
    expect(page.get_by_role("alert")).to_contain_text("999999999")
    run.expected_status = None
    run.check_clean("browse")

    # ECL: a syntax error shown at its position, then a valid expression and its count.
    page.get_by_role("link", name="ECL", exact=True).click()
    ecl = page.get_by_role("textbox", name="ECL")
    ecl.fill("<< 74400008 AND")
    expect(page.get_by_role("alert")).to_contain_text("Syntax error at line 1, column")
    expect(page.locator(".ecl-editor .err-mark").first).to_be_visible()
    run.shot("04-ecl-error")
    ecl.fill("<<128121009|Disorder of trunk|")
    count = page.get_by_text(re.compile(r"^\d+ concepts?$"))
    expect(count).to_be_visible()
    n = int(count.inner_text().split()[0])
    assert n > 20, n
    expect(page.locator("pre.pretty").first).to_have_text("<< 128121009 |Disorder of trunk|")
    expect(page.locator("ol.results a")).to_have_count(20)
    run.shot("05-ecl")
    first = page.locator("ol.results a").first
    page_one_first = first.inner_text()
    page.get_by_role("button", name="Next page").click()
    expect(page.get_by_text(f"21–40 of {n}")).to_be_visible()
    # The counter moves at once, the list when the next page has arrived.
    expect(first).not_to_have_text(page_one_first)
    first_name = first.inner_text()
    first.click()
    expect(page.get_by_role("heading", level=1)).to_have_text(first_name)
    page.go_back()
    expect(page.get_by_text(f"21–40 of {n}")).to_be_visible()
    assert "ecl?q=" in page.url, page.url
    run.check_clean("ECL")

    # FHIR: a value set expansion, with the request shown.
    page.get_by_role("link", name="FHIR", exact=True).click()
    page.get_by_role("combobox", name="Value set URL").fill("http://hl7.org/fhir/ValueSet/administrative-gender")
    page.get_by_role("button", name="Run $expand").click()
    expect(page.locator("pre.request")).to_contain_text("GET /fhir/ValueSet/$expand?url=")
    expect(page.get_by_role("cell", name="female", exact=True)).to_be_visible()
    expect(page.get_by_text(re.compile(r"^\d+ concepts$"))).to_be_visible()
    run.shot("06-fhir-expand")
    # An unknown value set: the server's explanation, shown.
    run.expected_status = 404
    page.get_by_role("combobox", name="Value set URL").fill("http://example.org/no-such-value-set")
    page.get_by_role("button", name="Run $expand").click()
    expect(page.get_by_role("alert")).to_contain_text("no-such-value-set")
    run.expected_status = None
    run.check_clean("FHIR")

    # Messages: one sent over MLLP appears in the desk, opens with named fields, replays.
    control = f"CONSOLE{int(time.time())}"
    sent = sample_message(control)
    ack = send_mllp(args.mllp, sent)
    assert "MSA|AA" in ack, ack
    page.get_by_role("link", name="Messages", exact=True).click()
    table = page.get_by_role("table", name="Messages")
    row = table.get_by_role("row").filter(has_text=control)
    expect(row).to_be_visible()
    run.shot("07-messages")
    row.get_by_role("link").first.click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("ADT^A01")
    expect(page.get_by_role("cell", name="Patient Name", exact=True)).to_be_visible()
    expect(page.get_by_role("cell", name="Message Control ID", exact=True)).to_be_visible()
    expect(page.get_by_role("cell", name=control, exact=True)).to_be_visible()
    run.shot("08-message")
    page.get_by_role("button", name="Replay").click()
    expect(page.get_by_role("status")).to_contain_text("Replayed")
    page.get_by_role("button", name="Show FHIR Bundle").click()
    expect(page.get_by_label("FHIR Bundle")).to_contain_text('"resourceType": "Bundle"')
    run.shot("09-message-replayed")
    # The exact bytes, downloaded through the API (so that a token goes with the request).
    with page.expect_download() as download:
        page.get_by_role("button", name="Download raw bytes").click()
    with open(download.value.path(), "rb") as f:
        assert f.read() == sent.encode(), "downloaded bytes differ from those sent"
    # The paste box: parse with names.
    page.goto(args.url + "/#/hl7")
    page.get_by_role("button", name="Use a sample").click()
    page.get_by_role("button", name="Parse").click()
    expect(page.get_by_role("cell", name="Patient Name", exact=True)).to_be_visible()
    run.shot("10-paste")
    run.expected_status = 400
    page.get_by_role("textbox", name="HL7 v2 message").fill("this is not HL7")
    page.get_by_role("button", name="Validate").click()
    expect(page.get_by_role("alert")).to_contain_text("MSH")
    run.expected_status = None
    run.check_clean("messages")

    # Keyboard alone: Tab from the top reaches the navigation, Enter follows it.
    page.goto(args.url + "/#/browse")
    page.wait_for_selector("html[data-ready=true]")
    page.keyboard.press("Escape")
    page.locator("body").focus()
    page.get_by_role("link", name="ECL", exact=True).focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("textbox", name="ECL")).to_be_focused()
    page.keyboard.type("<< 128121009")
    expect(page.get_by_text(re.compile(r"^\d+ concepts?$"))).to_be_visible()
    run.check_clean("keyboard")


if __name__ == "__main__":
    main()
