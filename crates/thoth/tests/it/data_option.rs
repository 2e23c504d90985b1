//! `--data` is offered where the data directory is used, and only there: before the subcommand (the form scripts
//! use) and after the name of each command that reads or writes it. The command's own wins.

use crate::thoth;

fn help(args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.push("--help");
    let (ok, stdout, stderr) = thoth(&all);
    assert!(ok, "thoth {args:?} --help: {stderr}");
    stdout
}

#[test]
fn help_shows_data_only_on_commands_that_use_the_data_directory() {
    for uses in [
        &[][..],
        &["serve"],
        &["mcp"],
        &["import"],
        &["import", "snomed"],
        &["import", "loinc"],
        &["snomed", "search"],
        &["hl7", "to-fhir"],
    ] {
        assert!(
            help(uses).contains("--data <DIR>"),
            "thoth {uses:?} --help lacks --data"
        );
    }
    for ignores in [
        &["hl7", "json"][..],
        &["hl7", "validate"],
        &["fhir", "convert"],
        &["mllp", "send"],
        &["messages", "list"],
        &["dev", "gen-snomed"],
    ] {
        assert!(
            !help(ignores).contains("--data"),
            "thoth {ignores:?} --help offers --data it ignores"
        );
    }
}

#[test]
fn the_commands_own_data_wins_over_the_top_level_one() {
    let used = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let used_dir = used.path().to_str().unwrap();
    // `snomed info` names the directory it looked in when there is no store: the command's own, in every position.
    for args in [
        vec![
            "--data",
            other.path().to_str().unwrap(),
            "snomed",
            "--data",
            used_dir,
            "info",
        ],
        vec!["snomed", "info", "--data", used_dir],
        vec!["--data", used_dir, "snomed", "info"],
    ] {
        let (ok, _, stderr) = thoth(&args);
        assert!(!ok);
        assert!(
            stderr.contains(&format!("no SNOMED CT store at {used_dir}")),
            "{args:?}: {stderr}"
        );
    }
    // A command that ignores the data directory refuses the option rather than silently dropping it.
    let (ok, _, stderr) = thoth(&["fhir", "convert", "--data", used_dir, "-"]);
    assert!(!ok);
    assert!(stderr.contains("unexpected argument '--data'"), "{stderr}");
}
