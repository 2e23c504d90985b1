//! Loading FHIR packages (npm `.tgz`) from ../shared/data/fhir/packages.

use crate::shared;
use terminology::{Kind, Registry, load_package};

#[test]
fn terminology_package_loads_its_code_systems_and_value_sets() {
    let mut registry = Registry::new();
    let path = shared().join("data/fhir/packages/hl7.terminology.r4-7.0.1.tgz");
    let stats = load_package(&path, &mut registry).unwrap();
    assert!(stats.resources > 1000, "{stats:?}");
    assert!(registry.resources(Kind::CodeSystem).count() > 300);
    assert!(
        !registry
            .code_system_versions("http://terminology.hl7.org/CodeSystem/v3-ActCode")
            .is_empty()
    );
}

#[test]
fn a_file_that_is_not_a_package_is_an_error() {
    let mut registry = Registry::new();
    let path = shared().join("tx-ecosystem/tests/test-cases.json");
    assert!(load_package(&path, &mut registry).is_err());
}
