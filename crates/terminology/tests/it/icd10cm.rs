//! `import_icd10cm` over CDC's April 2026 tabular XML in ../shared/data/icd10cm, checked against CDC's code
//! list of the same release, then the FHIR operations over the result.

use crate::shared;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use terminology::{Config, Operation, Params, Registry, Terminology, import_icd10cm};

fn flatten<'a>(concepts: &'a Value, out: &mut HashMap<String, &'a Value>) {
    for c in concepts.as_array().into_iter().flatten() {
        out.insert(c["code"].as_str().unwrap().replace('.', ""), c);
        flatten(&c["concept"], out);
    }
}

fn not_selectable(c: &Value) -> bool {
    c["property"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|p| p["code"] == "notSelectable" && p["valueBoolean"] == true)
}

fn param<'a>(answer: &'a Value, name: &str) -> Option<&'a Value> {
    answer["parameter"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == name)
}

#[test]
fn every_code_of_cdcs_code_list_is_present_with_its_description() {
    let (cs, stats) =
        import_icd10cm(&shared().join("data/icd10cm/icd10c-tabular-April-1-2026.xml.gz")).unwrap();
    assert_eq!(cs["version"], "2026");
    let mut codes = HashMap::new();
    flatten(&cs["concept"], &mut codes);
    let list =
        std::fs::read_to_string(shared().join("data/icd10cm/code-list-April-2026.txt")).unwrap();
    // The list names chapters by number, blocks by range and codes without the dot; some blocks of one
    // category repeat that category's code.
    let listed: BTreeSet<&str> = list
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(listed.len(), 98_466);
    for code in &listed {
        let c = codes.get(*code).unwrap_or_else(|| panic!("{code} missing"));
        assert!(
            c["display"].as_str().is_some_and(|d| !d.trim().is_empty()),
            "{code} has no description"
        );
    }
    assert_eq!(
        codes.len(),
        listed.len(),
        "codes that CDC's list does not have"
    );
    assert_eq!(cs["count"], listed.len());
    assert_eq!(stats.chapters, 22);
    assert_eq!(
        stats.chapters + stats.blocks + stats.codes + stats.seventh_character_codes,
        listed.len()
    );

    // Descriptions, billable flags and notes.
    assert_eq!(
        codes["A000"]["display"],
        "Cholera due to Vibrio cholerae 01, biovar cholerae"
    );
    assert!(not_selectable(codes["A00"]));
    assert!(!not_selectable(codes["A000"]));
    assert!(not_selectable(codes["1"]) && not_selectable(codes["A00-A09"]));
    assert_eq!(
        codes["A000"]["property"][0],
        json!({"code": "inclusionTerm", "valueString": "Classical cholera"})
    );
    let chapter1 = codes["1"]["property"].to_string();
    assert!(
        chapter1.contains("useAdditionalCode") && chapter1.contains("excludes2"),
        "{chapter1}"
    );
    // 7th characters: padded with X, described as CDC describes them, and the S06 exception.
    assert_eq!(codes["S0000XA"]["code"], "S00.00XA");
    assert_eq!(
        codes["S0000XA"]["display"],
        "Unspecified superficial injury of scalp, initial encounter"
    );
    assert!(not_selectable(codes["S0000"]));
    assert!(codes.contains_key("S061X7A") && !codes.contains_key("S061X7D"));
}

#[test]
fn operations_over_icd10cm() {
    let (cs, _) =
        import_icd10cm(&shared().join("data/icd10cm/icd10c-tabular-April-1-2026.xml.gz")).unwrap();
    let mut registry = Registry::new();
    registry.add(cs);
    let tx = Terminology::new(registry, Config::default());
    let run = |op, params: Value| tx.run(op, &Params::from_json(&params), None).unwrap();
    let system = json!({"name": "system", "valueUri": "http://hl7.org/fhir/sid/icd-10-cm"});

    let out = run(
        Operation::Lookup,
        json!({"resourceType": "Parameters", "parameter": [system, {"name": "code", "valueCode": "E11.9"}]}),
    );
    assert_eq!(
        param(&out, "display").unwrap()["valueString"],
        "Type 2 diabetes mellitus without complications"
    );
    assert_eq!(param(&out, "version").unwrap()["valueString"], "2026");

    let out = run(
        Operation::ValidateCs,
        json!({"resourceType": "Parameters", "parameter": [
        {"name": "url", "valueUri": "http://hl7.org/fhir/sid/icd-10-cm"}, {"name": "code", "valueCode": "E11.9"}]}),
    );
    assert_eq!(
        param(&out, "result").unwrap()["valueBoolean"],
        true,
        "{out}"
    );
    let out = run(
        Operation::ValidateCs,
        json!({"resourceType": "Parameters", "parameter": [
        {"name": "url", "valueUri": "http://hl7.org/fhir/sid/icd-10-cm"}, {"name": "code", "valueCode": "E11.99"}]}),
    );
    assert_eq!(
        param(&out, "result").unwrap()["valueBoolean"],
        false,
        "{out}"
    );

    let out = run(
        Operation::Subsumes,
        json!({"resourceType": "Parameters", "parameter": [system,
        {"name": "codeA", "valueCode": "E08-E13"}, {"name": "codeB", "valueCode": "E11.9"}]}),
    );
    assert_eq!(param(&out, "outcome").unwrap()["valueCode"], "subsumes");

    let vs = json!({"resourceType": "ValueSet", "url": "http://example.org/e11", "status": "active", "compose": {"include": [{
        "system": "http://hl7.org/fhir/sid/icd-10-cm",
        "filter": [{"property": "concept", "op": "descendent-of", "value": "E11.6"}]}]}});
    let out = run(
        Operation::Expand,
        json!({"resourceType": "Parameters", "parameter": [{"name": "valueSet", "resource": vs}]}),
    );
    let mut codes = Vec::new();
    let mut stack: Vec<&Value> = out["expansion"]["contains"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    while let Some(c) = stack.pop() {
        codes.push(c["code"].as_str().unwrap());
        stack.extend(c["contains"].as_array().into_iter().flatten());
    }
    assert!(
        codes.contains(&"E11.65") && codes.contains(&"E11.610"),
        "{codes:?}"
    );
    assert!(
        !codes.contains(&"E11.6") && !codes.contains(&"E11.9"),
        "{codes:?}"
    );

    // Every code (74,000): too many without `count` (1,000) and for one page of `count` (10,000); a page within
    // the ceiling, however far in, is answered. (A `count` of any size used to build the whole expansion.)
    let all = json!({"resourceType": "ValueSet", "url": "http://example.org/all", "status": "active",
        "compose": {"include": [{"system": "http://hl7.org/fhir/sid/icd-10-cm"}]}});
    let expand = |extra: &[Value]| {
        let mut params = vec![json!({"name": "valueSet", "resource": all.clone()})];
        params.extend_from_slice(extra);
        tx.run(
            Operation::Expand,
            &Params::from_json(&json!({"resourceType": "Parameters", "parameter": params})),
            None,
        )
    };
    let count = |n: i64| json!({"name": "count", "valueInteger": n});
    for extra in [vec![], vec![count(10_001)], vec![count(1_000_000)]] {
        let err = expand(&extra).unwrap_err();
        assert_eq!(err.kind, terminology::ErrorKind::TooCostly, "{extra:?}");
    }
    let page = expand(&[
        count(10_000),
        json!({"name": "offset", "valueInteger": 50_000}),
    ])
    .unwrap();
    let total = page["expansion"]["total"].as_u64().unwrap();
    assert!(total > 60_000, "{total}");
    assert_eq!(
        page["expansion"]["contains"].as_array().unwrap().len(),
        10_000
    );
}

/// A zip with the tabular XML as one of its members, laid out as the PyPI wheel `thoth serve` fetches
/// (`simple_icd_10_cm/data/icd10c-tabular-April-1-2026.xml` beside CDC's code list and Python code).
fn wheel_like_zip(members: &[(&str, &[u8])]) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    let mut zip = zip::ZipWriter::new(file.reopen().unwrap());
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in members {
        zip.start_file(*name, options).unwrap();
        std::io::Write::write_all(&mut zip, bytes).unwrap();
    }
    zip.finish().unwrap();
    file
}

fn tabular_xml() -> Vec<u8> {
    let gz =
        std::fs::read(shared().join("data/icd10cm/icd10c-tabular-April-1-2026.xml.gz")).unwrap();
    let mut xml = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut xml).unwrap();
    xml
}

#[test]
fn a_zip_holding_the_tabular_xml_imports_as_the_xml_itself() {
    let xml = tabular_xml();
    let list = std::fs::read(shared().join("data/icd10cm/code-list-April-2026.txt")).unwrap();
    let wheel = wheel_like_zip(&[
        ("simple_icd_10_cm/__init__.py", b"".as_slice()),
        ("simple_icd_10_cm/data/code-list-April-2026.txt", &list),
        (
            "simple_icd_10_cm/data/icd10c-tabular-April-1-2026.xml",
            &xml,
        ),
    ]);
    let (from_zip, zip_stats) = import_icd10cm(wheel.path()).unwrap();
    let (from_gz, gz_stats) =
        import_icd10cm(&shared().join("data/icd10cm/icd10c-tabular-April-1-2026.xml.gz")).unwrap();
    assert_eq!(zip_stats, gz_stats);
    assert!(zip_stats.billable > 70_000, "{zip_stats:?}");
    assert!(from_zip == from_gz, "the same CodeSystem from both forms");
}

#[test]
fn a_zip_without_exactly_one_tabular_xml_is_a_clear_error() {
    let none = wheel_like_zip(&[("data/code-list-April-2026.txt", b"A00\n".as_slice())]);
    let e = import_icd10cm(none.path()).unwrap_err().to_string();
    assert!(e.contains("no ICD-10-CM tabular XML"), "{e}");
    let two = wheel_like_zip(&[
        (
            "a/icd10cm-tabular-2025.xml",
            b"<ICD10CM.tabular/>".as_slice(),
        ),
        (
            "b/icd10cm-tabular-2026.xml",
            b"<ICD10CM.tabular/>".as_slice(),
        ),
    ]);
    let e = import_icd10cm(two.path()).unwrap_err().to_string();
    assert!(e.contains("several tabular XML files"), "{e}");
    let mut cut = std::fs::read(none.path()).unwrap();
    cut.truncate(cut.len() / 2);
    let cut_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(cut_file.path(), &cut).unwrap();
    let e = import_icd10cm(cut_file.path()).unwrap_err().to_string();
    assert!(e.contains("zip"), "{e}");
}
