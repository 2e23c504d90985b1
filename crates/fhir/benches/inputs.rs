//! Benchmark inputs built from ../shared: a ~2.6 MB Synthea bundle (the ten patient bundles' entries in one
//! Bundle), a small resource (a Synthea Patient) and a large one (the biggest StructureDefinition-sized
//! resource among the R4 examples: StructureDefinition-ExplanationOfBenefit).

use std::io::Read;
use std::path::PathBuf;

/// `../shared` beside the repository root.
pub fn shared() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    assert!(
        p.join("data/fhir").is_dir(),
        "benchmark data missing: expected {}",
        p.display()
    );
    p
}

/// (name, JSON text) of the three inputs.
pub fn inputs() -> Vec<(&'static str, Vec<u8>)> {
    let dir = shared().join("data/fhir/synthea");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("synthea dir")
        .flatten()
        .map(|e| e.path())
        .collect();
    names.sort();
    let mut entries = Vec::new();
    for p in names
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
    {
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p).expect("read")).expect("json");
        entries.extend(v["entry"].as_array().cloned().unwrap_or_default());
    }
    let small = entries
        .iter()
        .find(|e| e["resource"]["resourceType"] == "Patient")
        .map(|e| serde_json::to_vec_pretty(&e["resource"]).expect("json"))
        .expect("a Patient");
    let bundle =
        serde_json::json!({"resourceType": "Bundle", "type": "transaction", "entry": entries});
    let bundle = serde_json::to_vec_pretty(&bundle).expect("json");
    vec![
        ("synthea-bundle", bundle),
        ("small-patient", small),
        ("large-structuredefinition", large()),
    ]
}

fn large() -> Vec<u8> {
    let tgz = shared().join("data/fhir/packages/hl7.fhir.r4.examples-4.0.1.tgz");
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(
        std::fs::File::open(tgz).expect("tgz"),
    ));
    for e in ar.entries().expect("tar") {
        let mut e = e.expect("entry");
        if e.path()
            .expect("path")
            .ends_with("StructureDefinition-ExplanationOfBenefit.json")
        {
            let mut v = Vec::new();
            e.read_to_end(&mut v).expect("read");
            return v;
        }
    }
    panic!("StructureDefinition-ExplanationOfBenefit.json not in the package")
}
