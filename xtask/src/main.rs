//! `cargo xtask <task>`: project automation that needs more than a shell line.

mod codegen_fhir;
mod codegen_hl7v2;
mod codegen_v2fhir;
mod console_test;
mod generated;
mod tx_conformance;

fn main() -> anyhow::Result<()> {
    let task = std::env::args().nth(1);
    match task.as_deref() {
        None | Some("help") => {
            println!(
                "cargo xtask <task>\n\ntasks:\n  help    this text\n  codegen regenerate crates/{{fhir,hl7v2,v2fhir}}/src/generated ([--check] [--package TGZ]: the FHIR package)\n  tx-conformance run the HL7 terminology conformance tests ([--modes general,snomed] [--min-pass N])\n  console-test the console in headless Chromium ([--perf-only --data DIR] [--words a,b])"
            );
            Ok(())
        }
        Some("codegen") => {
            let args: Vec<String> = std::env::args().skip(2).collect();
            let check = args.iter().any(|a| a == "--check");
            // Both generators run (and both report) before either failure is returned.
            let fhir = codegen_fhir::run(&args);
            let hl7v2 = codegen_hl7v2::run(check);
            let v2fhir = codegen_v2fhir::run(check);
            fhir.and(hl7v2).and(v2fhir)
        }
        Some("tx-conformance") => {
            tx_conformance::run(&std::env::args().skip(2).collect::<Vec<_>>())
        }
        Some("console-test") => console_test::run(&std::env::args().skip(2).collect::<Vec<_>>()),
        Some(other) => anyhow::bail!("unknown task {other:?}; try `cargo xtask help`"),
    }
}
