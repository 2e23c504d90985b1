//! The parser never panics or hangs, whatever the input, and deep nesting is refused with an error.

use ecl::{ParseErrorKind, parse};
use proptest::prelude::*;

const SEEDS: &[&str] = &[
    "< 404684003 |Clinical finding| : { 363698007 = << 39057004, 116676008 = << 415582006 } OR [0..1] R 1234567 = *",
    "^ [targetComponentId] 900000000000527005 {{ M referencedComponentId = 67415000, mapGroup != #2 }} {{ C active = 1 }}",
    "<< 64572001 {{ D term = (match:\"gas\" wild:\"*itis\"), dialect = (en-gb (prefer) en-us), typeId = (900000000000013009 900000000000003001) }} {{ +HISTORY-MIN }}",
    "((< 1234567 . 2345678) MINUS (LOINC#54486-6 OR \"http://x#a b\")) AND descendantOf 1234567",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,80}") {
        let _ = parse(&s);
    }

    #[test]
    fn ecl_alphabet_never_panics(s in "[<>!^*(){}\\[\\]:.,=#\"|/ 0-9a-zA-Z\\-+\\\\]{0,120}") {
        let _ = parse(&s);
    }

    #[test]
    fn mutated_valid_expressions_never_panic(seed in 0..SEEDS.len(), cut in 0usize..200, insert in "[<>!^*(){}:.,=#\"| a-z0-9]{0,3}") {
        let base = SEEDS[seed];
        let mut at = cut.min(base.len());
        while !base.is_char_boundary(at) { at -= 1; }
        let mutated = format!("{}{}{}", &base[..at], insert, &base[at..]);
        if let Ok(tree) = parse(&mutated) {
            // Whatever parses must round-trip.
            prop_assert_eq!(parse(&tree.to_string()).unwrap(), tree);
        }
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for open in ["(", "<< (", "^ (", "* : (", "* : 1234567 = ("] {
        let text = open.repeat(100_000);
        let err = parse(&text).unwrap_err();
        assert_eq!(err.kind, ParseErrorKind::TooDeep, "{open}");
    }
}

#[test]
fn adversarial_refinement_brackets_stay_fast() {
    // Each `(` in a refinement may open a bracketed refinement or a nested attribute name.
    let text = format!("* : {}1234567 = *{}", "(".repeat(60), ")".repeat(60));
    let start = std::time::Instant::now();
    let _ = parse(&text);
    assert!(start.elapsed().as_secs() < 2, "took {:?}", start.elapsed());
}
