//! Golden tests: `test_data/ok/*.ecl` print as recorded in `*.txt` (brief, then long); `test_data/err/*.ecl`
//! fail with the error recorded in `*.txt`. Run with `UPDATE_EXPECT=1` to rewrite the expectations, then review
//! the diff.

use std::path::Path;

use ecl::{Profile, Syntax, parse, parse_with, print};

fn check(dir: &str, render: impl Fn(&str) -> String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("test_data")
        .join(dir);
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut mismatches = Vec::new();
    let mut count = 0;
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    inputs.sort();
    for input in inputs
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ecl"))
    {
        count += 1;
        let text = std::fs::read_to_string(input).unwrap();
        let actual = render(&text);
        let expect_path = input.with_extension("txt");
        if update {
            std::fs::write(&expect_path, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expect_path).unwrap_or_else(|_| {
            panic!(
                "missing {}; run with UPDATE_EXPECT=1",
                expect_path.display()
            )
        });
        if expected != actual {
            mismatches.push(format!(
                "{}\n--- expected\n{expected}--- actual\n{actual}",
                input.display()
            ));
        }
    }
    assert!(count > 0, "no golden inputs in {}", dir.display());
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn ok_cases() {
    check("ok", |text| {
        let tree = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let brief = print(&tree, Syntax::Brief);
        let long = print(&tree, Syntax::Long);
        assert_eq!(parse(&brief).unwrap(), tree, "brief round trip of {text}");
        assert_eq!(parse(&long).unwrap(), tree, "long round trip of {text}");
        format!("{brief}\n{long}\n")
    });
}

#[test]
fn err_cases() {
    check("err", |text| {
        let profile = if text.starts_with("/* lite */") {
            Profile::Lite
        } else {
            Profile::Full
        };
        match parse_with(text, profile) {
            Ok(tree) => panic!("{text} parsed but should not: {tree:?}"),
            Err(e) => {
                let (line, col) = e.line_column(text);
                format!("{line}:{col}: {e}\n")
            }
        }
    });
}
