//! Every official example expression parses, and printing it (brief and long) parses back to the same tree.

use std::path::{Path, PathBuf};

use ecl::{Syntax, parse, print};

fn examples_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/ecl/examples");
    assert!(
        dir.is_dir(),
        "the official ECL examples are missing: expected them at {}",
        dir.display()
    );
    dir
}

fn example_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for group in std::fs::read_dir(examples_dir()).unwrap() {
        let group = group.unwrap().path();
        for f in std::fs::read_dir(&group).unwrap() {
            files.push(f.unwrap().path());
        }
    }
    files.sort();
    files
}

#[test]
fn all_official_examples_parse_and_round_trip() {
    let files = example_files();
    assert_eq!(files.len(), 121, "the official example set has 121 files");
    let mut failures = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let tree = match parse(&text) {
            Ok(t) => t,
            Err(e) => {
                let (line, col) = e.line_column(&text);
                failures.push(format!("{}:{line}:{col}: {e}", f.display()));
                continue;
            }
        };
        for syntax in [Syntax::Brief, Syntax::Long] {
            let printed = print(&tree, syntax);
            match parse(&printed) {
                Ok(again) if again == tree => {}
                Ok(again) => failures.push(format!(
                    "{}: {syntax:?} print changed the tree\n  printed: {printed}\n  before: {tree:?}\n  after:  {again:?}",
                    f.display()
                )),
                Err(e) => failures.push(format!("{}: {syntax:?} print does not parse: {e}\n  {printed}", f.display())),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn terms_are_kept_and_trimmed() {
    let e = parse("^ 700043003 |example problem list concepts reference set |").unwrap();
    assert_eq!(
        print(&e, Syntax::Brief),
        "^ 700043003 |example problem list concepts reference set|"
    );
}

#[test]
fn examples_are_also_valid_long_syntax_when_printed_long() {
    let text =
        std::fs::read_to_string(examples_dir().join("2_refinement/2.14_ReverseAttributes.txt"))
            .unwrap();
    let long = print(&parse(&text).unwrap(), Syntax::Long);
    assert_eq!(
        long,
        "descendantOf 105590001 |substance| : reverseOf 127489000 |has active ingredient| = 111115 |TRIPHASIL tablet|"
    );
}

#[test]
fn ecl_lite_accepts_its_own_constructs() {
    use ecl::{Profile, parse_with};
    let lite = "(<< 1234567 OR ^ 2345678) {{ C active = 1 }} {{ +HISTORY-MIN }} : { 3456789 = << 4567890, 5678901 = \"x\" }";
    assert_eq!(
        parse_with(lite, Profile::Lite).unwrap(),
        parse(lite).unwrap()
    );
    assert!(parse_with("< 1234567 . 2345678", Profile::Lite).is_ok());
}
