//! Properties over generated inputs: any bytes, parsed and converted, never panic, and the Bundle alone
//! (`convert_json`) is the Bundle of the full conversion.

use proptest::prelude::*;

/// Bytes drawn mostly from the pieces of the messages the maps convert (segment starts of ADT and ORU, delimiters,
/// escapes, codes, dates), so that the generator reaches the converter's corners rather than producing noise.
fn hl7ish() -> impl Strategy<Value = Vec<u8>> {
    let atoms = prop_oneof![
        Just(b"MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240315143000||ORU^R01^ORU_R01|M1|P|2.5".to_vec()),
        Just(b"MSH|^~\\&|HIS|H|RIS|R|20240315143000+0100||ADT^A01^ADT_A01||P|2.5".to_vec()),
        Just(b"MSH|^~\\&#|A|B|C|D|2024||VXU^V04|1|P|2.8".to_vec()),
        Just(b"\rPID|1||MRN1^^^HOSP&1.2.3&ISO^MR~X^^^Y^PI||DOE^JANE^Q||19800315|F|||1 MAIN ST^^BOSTON^MA".to_vec()),
        Just(b"\rPV1|1|I|ICU^101^A^Hospital||||1234^SMITH^JANE^^^DR|||||||||VIP".to_vec()),
        Just(b"\rORC|RE|ORD1|FIL1".to_vec()),
        Just(b"\rOBR|1|ORD1|FIL1|58410-2^CBC^LN|||20240315140000".to_vec()),
        Just(b"\rOBX|1|NM|6690-2^WBC^LN||7.5|10*3/uL|4.5-11.0|H|||F|||20240315143000".to_vec()),
        Just(b"\rOBX|2|SN|1-1^X^LN||<^10^:^2|".to_vec()),
        Just(b"\rOBX|3|CWE|1-2^Y^LN||A^B^HL70078~C^D^LN".to_vec()),
        Just(b"\rOBX|4|ED|1-3^Z||^^^Base64^QUJD".to_vec()),
        Just(b"\rNTE|1||note \\F\\ \\.br\\ text".to_vec()),
        Just(b"\rAL1|1|DA|123^PENICILLIN^RXNORM".to_vec()),
        Just(b"\rIN1|1|P1^PLAN|ORG1^^^^^^^^^^NPI".to_vec()),
        Just(b"\rZZZ|1|x".to_vec()),
        Just(b"\\X0D\\".to_vec()),
        Just(b"\"\"".to_vec()),
        prop::sample::select(b"|^~\\&#\r\n ABZ019+-.:\"\x00\xc3\xa9".to_vec()).prop_map(|b| vec![b]),
    ];
    prop::collection::vec(atoms, 0..24).prop_map(|v| v.concat())
}

/// A terminology that answers every way the checker can.
struct Oracle;

impl v2fhir::CodeChecker for Oracle {
    fn check(&self, _system: &str, code: &str) -> v2fhir::CodeCheck {
        match code.len() % 3 {
            0 => v2fhir::CodeCheck::NotLoaded,
            1 => v2fhir::CodeCheck::Valid {
                display: Some("d".into()),
            },
            _ => v2fhir::CodeCheck::Invalid {
                message: "no".into(),
            },
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    #[test]
    fn any_bytes_convert_without_panic_and_the_bundle_alone_is_the_same(input in hl7ish()) {
        let oracle = Oracle;
        for bundle in [v2fhir::BundleType::Message, v2fhir::BundleType::Transaction, v2fhir::BundleType::Collection] {
            for checker in [None, Some(&oracle as &dyn v2fhir::CodeChecker)] {
                let options = v2fhir::Options { bundle, checker, ..Default::default() };
                for msg in std::iter::once(hl7v2::Message::parse(&input)).chain(hl7v2::messages(&input)) {
                    let full = v2fhir::convert(&msg, &options).unwrap();
                    prop_assert!(serde_json::from_slice::<serde_json::Value>(&full.json).is_ok());
                    prop_assert!(v2fhir::convert_json(&msg, &options).unwrap() == full.json);
                }
            }
        }
    }
}
