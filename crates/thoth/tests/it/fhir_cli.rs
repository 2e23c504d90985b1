//! `thoth fhir convert` checks primitive values as the options say: refuse (the default), warn, or keep.

fn convert(input: &std::path::Path, extra: &[&str]) -> (bool, String, String) {
    let input = input.to_str().unwrap();
    let args: Vec<&str> = ["fhir", "convert", "--to", "json", input]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
    crate::thoth(&args)
}

#[test]
fn invalid_primitive_values_are_refused_or_warned_about_with_their_path() {
    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("patient.xml");
    std::fs::write(
        &xml,
        r#"<Patient xmlns="http://hl7.org/fhir"><birthDate value="notadate"/></Patient>"#,
    )
    .unwrap();
    let (ok, stdout, stderr) = convert(&xml, &[]);
    assert!(!ok && stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("Patient.birthDate") && stderr.contains("notadate"),
        "{stderr}"
    );
    let (ok, stdout, stderr) = convert(&xml, &["--invalid-values", "warn"]);
    assert!(
        ok && stdout.contains("\"birthDate\":\"notadate\""),
        "{stdout} {stderr}"
    );
    assert!(
        stderr.contains("warning") && stderr.contains("Patient.birthDate"),
        "{stderr}"
    );
    let (ok, _, stderr) = convert(&xml, &["--invalid-values", "keep"]);
    assert!(ok && stderr.is_empty(), "{stderr}");
    let good = dir.path().join("good.xml");
    std::fs::write(
        &good,
        r#"<Patient xmlns="http://hl7.org/fhir"><birthDate value="1970-01-31"/></Patient>"#,
    )
    .unwrap();
    assert!(convert(&good, &[]).0);
}
