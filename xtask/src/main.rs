//! `cargo xtask <task>`: project automation that needs more than a shell line.

mod codegen_fhir;
mod tx_conformance;

fn main() -> anyhow::Result<()> {
    let task = std::env::args().nth(1);
    match task.as_deref() {
        None | Some("help") => {
            println!(
                "cargo xtask <task>\n\ntasks:\n  help    this text\n  codegen regenerate crates/fhir/src/generated ([--check] [--package TGZ])\n  tx-conformance run the HL7 terminology conformance tests ([--modes general,snomed] [--min-pass N])"
            );
            Ok(())
        }
        Some("codegen") => codegen_fhir::run(&std::env::args().skip(2).collect::<Vec<_>>()),
        Some("tx-conformance") => {
            tx_conformance::run(&std::env::args().skip(2).collect::<Vec<_>>())
        }
        Some(other) => anyhow::bail!("unknown task {other:?}; try `cargo xtask help`"),
    }
}
