//! Integration tests of the terminology crate, over the HL7 conformance suites' own resources in ../shared.

mod bcp47;
mod builtins;
mod expansion_cache;
mod fast;
mod icd10cm;
mod languages;
mod loinc;
mod operations;
mod packages;
mod sct;
mod supplements;
mod translate;
mod ucum;
mod value_set_rules;
mod versions;

use serde_json::Value;
use std::path::PathBuf;

/// `../shared` beside the repository.
pub fn shared() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    assert!(
        p.join("tx-ecosystem/tests/test-cases.json").exists(),
        "../shared/tx-ecosystem is missing beside the repository: {}",
        p.display()
    );
    p
}

/// A registry of the two FHIR packages in `../shared/data/fhir/packages`: R4 (its examples package, which holds
/// the core definitions) and HL7 Terminology 7.0.1.
pub fn both_packages() -> terminology::Registry {
    let mut registry = terminology::Registry::new();
    for p in [
        "hl7.fhir.r4.examples-4.0.1.tgz",
        "hl7.terminology.r4-7.0.1.tgz",
    ] {
        let path = shared().join("data/fhir/packages").join(p);
        terminology::load_package(&path, &mut registry).unwrap();
    }
    registry
}

/// A JSON file of the conformance tests (`simple/codesystem-simple.json`).
pub fn tx_test_file(rel: &str) -> Value {
    let path = shared().join("tx-ecosystem/tests").join(rel);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
    serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The data directory of the built-in code systems' pinned data (`<target>/test-data`), with the IANA Language
/// Subtag Registry package fetched from the npm registry on first use and checked against its pinned sha512
/// (the binary pins the same `dist.integrity`). Fails loudly when it can be neither found nor fetched.
pub fn builtin_data_dir() -> PathBuf {
    use sha2::Digest;
    /// sha512 of `language-subtag-registry-0.4.2.tgz` (its `dist.integrity`, in hex).
    const SHA512: &str = "774cdc2201cb4f0d7c67c181ddfde2b0af19ea63396c4d0998611bcce46c0bb91e3b07b9131e627c05019477b2ecfef2115143cb1407379f88fe808a2870096a";
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
        let dir = target.join("test-data");
        let path = terminology::builtin_data_path(
            &dir,
            terminology::SUBTAG_REGISTRY_PACKAGE,
            terminology::SUBTAG_REGISTRY_VERSION,
        );
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        let good = |bytes: &[u8]| hex(&sha2::Sha512::digest(bytes)) == SHA512;
        if std::fs::read(&path).is_ok_and(|b| good(&b)) {
            return dir;
        }
        let url = format!(
            "https://registry.npmjs.org/{0}/-/{0}-{1}.tgz",
            terminology::SUBTAG_REGISTRY_PACKAGE,
            terminology::SUBTAG_REGISTRY_VERSION
        );
        let bytes = reqwest::blocking::get(&url)
            .and_then(|r| r.error_for_status())
            .and_then(|r| r.bytes())
            .unwrap_or_else(|e| {
                panic!(
                    "the IANA Language Subtag Registry package could not be fetched from {url}: {e}"
                )
            });
        assert!(good(&bytes), "{url} does not match its pinned sha512");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let tmp = path.with_extension("partial");
        std::fs::write(&tmp, &bytes).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        dir
    })
    .clone()
}
