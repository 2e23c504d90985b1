#!/usr/bin/env python3
"""A synthetic LOINC release at full scale, for measuring `thoth import loinc` and the server's memory.

LOINC cannot be shipped here; this writes the same folder layout and columns as a real release (2.8x) with
realistic counts: 105,000 terms, 150,000 parts, 6 primary part links per term, a component hierarchy over the
parts, 2,500 answer lists of ~8 answers, a consumer name for most terms, and 12 linguistic variants covering
40-90% of the terms with three names each. Codes carry LOINC's mod-10 check digit. Deterministic (seeded).

usage: gen_release.py OUT_DIR [TERMS]
"""
import csv, os, random, sys

out = sys.argv[1]
TERMS = int(sys.argv[2]) if len(sys.argv) > 2 else 105_000
PARTS = int(TERMS * 150_000 / 105_000)
rnd = random.Random(42)


def check_digit(n: int) -> int:
    """LOINC's mod 10 (Luhn) check digit."""
    digits = [int(d) for d in str(n)][::-1]
    total = 0
    for i, d in enumerate(digits):
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return (10 - total % 10) % 10


def code(prefix: str, n: int) -> str:
    return f"{prefix}{n}-{check_digit(n)}"


def writer(rel, header):
    path = os.path.join(out, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    f = open(path, "w", newline="", encoding="utf-8")
    w = csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    w.writerow(header)
    return f, w


words = ("glucose urea nitrogen sodium potassium chloride bacteria virus antibody antigen hemoglobin platelets "
         "cortisol insulin ferritin creatinine albumin bilirubin calcium magnesium phosphate lipase amylase "
         "troponin lactate ammonia cholesterol triglyceride protein globulin").split()
axes = [("PROPERTY", 120), ("TIME", 40), ("SYSTEM", 1200), ("SCALE", 12), ("METHOD", 600), ("CLASS", 600)]
parts = []  # (code, type, name)
n = 10_000
def new_part(type_, name):
    global n
    n += 7
    parts.append((code("LP", n), type_, name))
    return parts[-1]
pools = {t: [new_part(t, f"{t.lower()} {i}") for i in range(k)] for t, k in axes}
components = [new_part("COMPONENT", f"{rnd.choice(words).title()} {rnd.choice(words)} {i}")
              for i in range(PARTS - len(parts))]

f, w = writer("AccessoryFiles/PartFile/Part.csv", ["PartNumber", "PartTypeName", "PartName", "PartDisplayName", "Status"])
for c, t, name in parts:
    w.writerow([c, t, name, name, "ACTIVE"])
f.close()

loinc = ["LOINC_NUM", "COMPONENT", "PROPERTY", "TIME_ASPCT", "SYSTEM", "SCALE_TYP", "METHOD_TYP", "CLASS",
         "VersionLastChanged", "CHNG_TYPE", "DefinitionDescription", "STATUS", "CONSUMER_NAME", "CLASSTYPE",
         "FORMULA", "EXMPL_ANSWERS", "SURVEY_QUEST_TEXT", "SURVEY_QUEST_SRC", "UNITSREQUIRED", "RELATEDNAMES2",
         "SHORTNAME", "ORDER_OBS", "HL7_FIELD_SUBFIELD_ID", "EXTERNAL_COPYRIGHT_NOTICE", "EXAMPLE_UNITS",
         "LONG_COMMON_NAME", "EXAMPLE_UCUM_UNITS", "STATUS_REASON", "STATUS_TEXT", "CHANGE_REASON_PUBLIC",
         "COMMON_TEST_RANK", "COMMON_ORDER_RANK", "HL7_ATTACHMENT_STRUCTURE", "EXTERNAL_COPYRIGHT_LINK",
         "PanelType", "AskAtOrderEntry", "AssociatedObservations", "VersionFirstReleased", "ValidHL7AttachmentRequest",
         "DisplayName"]
ft, wt = writer("LoincTable/Loinc.csv", loinc)
fl, wl = writer("AccessoryFiles/PartFile/LoincPartLink_Primary.csv",
                ["LoincNumber", "LongCommonName", "PartNumber", "PartName", "PartCodeSystem", "PartTypeName", "LinkTypeName", "Property"])
terms = []
prop_of = {"COMPONENT": "COMPONENT", "PROPERTY": "PROPERTY", "TIME": "TIME_ASPCT", "SYSTEM": "SYSTEM", "SCALE": "SCALE_TYP", "METHOD": "METHOD_TYP", "CLASS": "CLASS"}
for i in range(TERMS):
    num = code("", 10_000 + i * 3)
    comp = rnd.choice(components)
    chosen = {"COMPONENT": comp, **{t: rnd.choice(pools[t]) for t, _ in axes}}
    if rnd.random() < 0.5:
        del chosen["METHOD"]
    long = f"{comp[2]} [{chosen['PROPERTY'][2]}] in {chosen['SYSTEM'][2]}"
    short = f"{comp[2][:12]} {chosen['SYSTEM'][2][:6]}"
    status = rnd.choices(["ACTIVE", "DEPRECATED", "DISCOURAGED", "TRIAL"], [90, 6, 3, 1])[0]
    row = {c: "" for c in loinc}
    row.update({"LOINC_NUM": num, "COMPONENT": comp[2], "PROPERTY": chosen["PROPERTY"][2], "TIME_ASPCT": chosen["TIME"][2],
                "SYSTEM": chosen["SYSTEM"][2], "SCALE_TYP": chosen["SCALE"][2], "METHOD_TYP": chosen.get("METHOD", ("", "", ""))[2],
                "CLASS": chosen["CLASS"][2], "VersionLastChanged": "2.82", "VersionFirstReleased": "2.40", "STATUS": status,
                "CLASSTYPE": str(rnd.choice([1, 1, 1, 2, 3, 4])), "UNITSREQUIRED": rnd.choice("YN"),
                "RELATEDNAMES2": "; ".join(rnd.sample(words, 8)), "SHORTNAME": short, "ORDER_OBS": rnd.choice(["Observation", "Both", "Order"]),
                "LONG_COMMON_NAME": long, "EXAMPLE_UNITS": "mg/dL", "EXAMPLE_UCUM_UNITS": "mg/dL", "DisplayName": long})
    wt.writerow([row[c] for c in loinc])
    for t, p in chosen.items():
        wl.writerow([num, long, p[0], p[2], "http://loinc.org", t, "Primary", f"http://loinc.org/property/{prop_of[t]}"])
    terms.append((num, long))
ft.close(); fl.close()

# Component hierarchy: a root, 400 groups, every component under a group, terms under their component.
fh, wh = writer("AccessoryFiles/ComponentHierarchyBySystem/ComponentHierarchyBySystem.csv",
                ["PATH_TO_ROOT", "SEQUENCE", "IMMEDIATE_PARENT", "CODE", "CODE_TEXT"])
root = components[0]
groups = components[1:401]
wh.writerow(["", "1", "", root[0], "{component}"])
for g in groups:
    wh.writerow([root[0], "1", root[0], g[0], g[2]])
for c in components[401:]:
    g = rnd.choice(groups)
    wh.writerow([f"{root[0]}.{g[0]}", "1", g[0], c[0], c[2]])
fh.close()

fa, wa = writer("AccessoryFiles/AnswerFile/AnswerList.csv",
                ["AnswerListId", "AnswerListName", "AnswerListOID", "ExtDefinedYN", "ExtDefinedAnswerListCodeSystem",
                 "ExtDefinedAnswerListLink", "AnswerStringId", "LocalAnswerCode", "LocalAnswerCodeSystem", "SequenceNumber",
                 "DisplayText", "ExtCodeId", "ExtCodeDisplayName", "ExtCodeSystem", "ExtCodeSystemVersion",
                 "ExtCodeSystemCopyrightNotice", "SubsequentTextPrompt", "Description", "Score"])
fk, wk = writer("AccessoryFiles/AnswerFile/LoincAnswerListLink.csv",
                ["LoincNumber", "LongCommonName", "AnswerListId", "AnswerListName", "AnswerListLinkType", "ApplicableContext"])
answers = [(code("LA", 100 + 11 * i), f"answer {i}") for i in range(25_000)]
for l in range(2_500):
    ll = code("LL", 100 + 13 * l)
    for s, (la, text) in enumerate(rnd.sample(answers, 8)):
        wa.writerow([ll, f"list {l}", "", "N", "", "", la, "", "", str(s + 1), text] + [""] * 8)
    for t in rnd.sample(terms, 6):
        wk.writerow([t[0], t[1], ll, f"list {l}", "NORMATIVE", ""])
fa.close(); fk.close()

fc, wc = writer("AccessoryFiles/ConsumerName/ConsumerName.csv", ["LoincNumber", "ConsumerName"])
for t in terms:
    if rnd.random() < 0.8:
        wc.writerow([t[0], t[1].split(" [")[0] + ", consumer"])
fc.close()

langs = [(5, "zh", "CN", 0.9), (7, "es", "AR", 0.5), (8, "fr", "CA", 0.6), (11, "pt", "BR", 0.7), (12, "es", "ES", 0.6),
         (15, "de", "DE", 0.5), (16, "it", "IT", 0.7), (17, "el", "GR", 0.4), (18, "fr", "FR", 0.6), (20, "ru", "RU", 0.5),
         (22, "nl", "NL", 0.6), (19, "tr", "TR", 0.8)]
fv, wv = writer("AccessoryFiles/LinguisticVariants/LinguisticVariants.csv", ["ID", "ISO_LANGUAGE", "ISO_COUNTRY", "LANGUAGE_NAME", "PRODUCER"])
for i, lang, country, _ in langs:
    wv.writerow([str(i), lang, country, f"{lang} ({country})", "synthetic"])
fv.close()
for i, lang, country, share in langs:
    f, w = writer(f"AccessoryFiles/LinguisticVariants/{lang}{country}{i}LinguisticVariant.csv",
                  ["LOINC_NUM", "COMPONENT", "PROPERTY", "TIME_ASPCT", "SYSTEM", "SCALE_TYP", "METHOD_TYP", "CLASS",
                   "SHORTNAME", "LONG_COMMON_NAME", "RELATEDNAMES2", "LinguisticVariantDisplayName"])
    for t in terms:
        if rnd.random() < share:
            w.writerow([t[0], "", "", "", "", "", "", "", f"{lang} {t[1][:20]}", f"{lang}-{country} {t[1]}", "", f"{lang} {t[1][:30]}"])
    f.close()
print(f"{TERMS} terms, {len(parts)} parts, 2500 answer lists, {len(langs)} linguistic variants in {out}")
