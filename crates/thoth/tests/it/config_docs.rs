//! docs/CONFIGURATION.md and docs/thoth.example.toml stay true: the example loads, and every key the program
//! reads (found by asking the parser itself, which lists the keys it expects when it meets an unknown one) is
//! in the page's tables, and nothing the page lists is unknown to the program.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs")
}

#[test]
fn the_example_configuration_loads() {
    let config = interface::EngineConfig::from_file(&docs().join("thoth.example.toml"))
        .unwrap_or_else(|e| panic!("docs/thoth.example.toml: {e}"));
    assert_eq!(config.routes.len(), 4);
    assert!(config.listener_config().is_ok());
    assert!(config.to_fhir.zone().is_some(), "[to_fhir] time_zone");
}

#[test]
fn an_unknown_time_zone_is_a_configuration_error() {
    let error =
        interface::EngineConfig::from_toml("[to_fhir]\ntime_zone = \"America/Springfield\"\n")
            .expect_err("no such zone")
            .to_string();
    assert!(
        error.contains("[to_fhir]") && error.contains("America/Springfield"),
        "{error}"
    );
    let config =
        interface::EngineConfig::from_toml("[to_fhir]\ntime_zone = \"Europe/Berlin\"\n").unwrap();
    assert!(config.to_fhir.zone().is_some());
}

/// The keys a table accepts, from the error the parser gives for an unknown key placed in it.
fn expected_keys(error: &str) -> BTreeSet<String> {
    let after = error
        .split("expected")
        .nth(1)
        .unwrap_or_else(|| panic!("no expected keys in: {error}"));
    after
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

fn engine_keys(toml: &str) -> BTreeSet<String> {
    let error = interface::EngineConfig::from_toml(toml)
        .expect_err("an unknown key is refused")
        .to_string();
    expected_keys(&error)
}

fn auth_keys(toml: &str) -> BTreeSet<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auth.toml");
    std::fs::write(&path, toml).unwrap();
    let error = server::AuthFile::from_file(&path).expect_err("an unknown key is refused");
    expected_keys(&error)
}

/// The keys of each `### `[table]`` section of the page: the first column of its table.
fn documented() -> BTreeMap<String, BTreeSet<String>> {
    let page = std::fs::read_to_string(docs().join("CONFIGURATION.md")).unwrap();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut section = None;
    for line in page.lines() {
        if let Some(h) = line.strip_prefix("### `") {
            section = Some(h.trim_end_matches('`').to_string());
        } else if line.starts_with("## ") {
            section =
                (line == "## The access control file (`--auth FILE`)").then(|| "auth".to_string());
        } else if let (Some(s), Some(row)) = (&section, line.strip_prefix("| `")) {
            let cell = row.split('`').next().unwrap();
            // The auth table names keys as "[table] key".
            let (table, key) = match cell.rsplit_once("] ") {
                Some((t, k)) => (format!("{t}]"), k.to_string()),
                None => (s.clone(), cell.to_string()),
            };
            out.entry(table).or_default().insert(key);
        }
    }
    out
}

#[test]
fn every_key_the_program_reads_is_documented() {
    let documented = documented();
    let section = |name: &str| documented.get(name).cloned().unwrap_or_default();
    let cases: Vec<(&str, BTreeSet<String>)> = vec![
        ("[ack]", engine_keys("[ack]\nnot_a_key = 1\n")),
        ("[store]", engine_keys("[store]\nnot_a_key = 1\n")),
        ("[duplicates]", engine_keys("[duplicates]\nnot_a_key = 1\n")),
        ("[delivery]", engine_keys("[delivery]\nnot_a_key = 1\n")),
        ("[mllp]", engine_keys("[mllp]\nnot_a_key = 1\n")),
        ("[mllp.tls]", engine_keys("[mllp.tls]\nnot_a_key = 1\n")),
        ("[validation]", engine_keys("[validation]\nnot_a_key = 1\n")),
        (
            "[[validation.rule]]",
            engine_keys("[[validation.rule]]\nnot_a_key = 1\n"),
        ),
        ("[[route]]", engine_keys("[[route]]\nnot_a_key = 1\n")),
        (
            "[[kafka_source]]",
            engine_keys("[[kafka_source]]\nnot_a_key = 1\n"),
        ),
        ("[to_fhir]", engine_keys("[to_fhir]\nnot_a_key = 1\n")),
        ("[auth]", auth_keys("[auth]\nnot_a_key = 1\n")),
        (
            "[[auth.tokens]]",
            auth_keys("[[auth.tokens]]\nnot_a_key = 1\n"),
        ),
        ("[auth.jwt]", auth_keys("[auth.jwt]\nnot_a_key = 1\n")),
    ];
    // The top-level tables of the engine file are the sections above.
    let top = engine_keys("not_a_key = 1\n");
    assert_eq!(
        top,
        [
            "ack",
            "delivery",
            "duplicates",
            "kafka_source",
            "mllp",
            "route",
            "store",
            "to_fhir",
            "validation"
        ]
        .map(String::from)
        .into(),
        "a new top-level table needs its own section in docs/CONFIGURATION.md"
    );
    for (table, keys) in cases {
        assert!(!keys.is_empty(), "{table}: the parser listed no keys");
        assert_eq!(section(table), keys, "docs/CONFIGURATION.md, {table}");
    }
}
