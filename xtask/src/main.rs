//! `cargo xtask <task>`: project automation that needs more than a shell line.

fn main() -> anyhow::Result<()> {
    let task = std::env::args().nth(1);
    match task.as_deref() {
        None | Some("help") => {
            println!("cargo xtask <task>\n\ntasks:\n  help    this text");
            Ok(())
        }
        Some(other) => anyhow::bail!("unknown task {other:?}; try `cargo xtask help`"),
    }
}
