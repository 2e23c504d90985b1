//! `Expression::concept_ids` finds every concept an expression names outside its filters, at any depth.

#[test]
fn concept_ids_reach_nested_refinements_and_dotted_attributes() {
    let e = ecl::parse(
        "((<< 404684003 |Clinical finding| OR 64572001) : { 363698007 = << 39057004, \
         [0..1] 116676008 = (<< 72704001 MINUS 40733004) }) AND (^ 700043003 . 246075003) \
         AND * AND LOINC#54486-6 {{ D term = \"heart\" }}",
    )
    .unwrap();
    let mut ids = e.concept_ids();
    ids.sort_unstable();
    assert_eq!(
        ids,
        [
            39057004, 40733004, 64572001, 72704001, 116676008, 246075003, 363698007, 404684003,
            700043003
        ]
    );
}
