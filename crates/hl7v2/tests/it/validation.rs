//! Validation: one hand-made fault per rule, in several versions, gives exactly the issue expected at the right
//! path; the clean messages give none.

use hl7v2::{IssueSeverity, Message, Profile, Rule, validate};

/// A clean ADT^A01 of a version: every required segment and field present and well formed.
fn adt(version: &str) -> Vec<String> {
    // MSH-9.3 (message structure) exists from 2.3.1 on; 2.3 allows MSH-9 7 characters.
    let kind = if version == "2.3" {
        "ADT^A01"
    } else {
        "ADT^A01^ADT_A01"
    };
    vec![
        format!("MSH|^~\\&|HIS|Hospital|RIS|Radiology|20240315143000||{kind}|MSG00001|P|{version}"),
        // EVN-1 (event type) is withdrawn in 2.8.
        if version == "2.8" {
            "EVN||20240315143000"
        } else {
            "EVN|A01|20240315143000"
        }
        .into(),
        "PID|1||MRN12345^^^HOSP^MR||DOE^JOHN^ALLEN||19800315|M".into(),
        "PV1|1|I|ICU^101^A".into(),
    ]
}

fn issues(segments: &[String], profile: &Profile) -> Vec<(IssueSeverity, Rule, String)> {
    let text = segments.join("\r") + "\r";
    let msg = Message::parse(text.as_bytes());
    let report = validate(&msg, profile);
    report
        .issues
        .iter()
        .map(|i| (i.severity, i.rule, i.path.clone()))
        .collect()
}

const VERSIONS: [&str; 4] = ["2.3", "2.4", "2.5.1", "2.8"];

#[test]
fn the_clean_messages_give_no_issue() {
    for v in VERSIONS {
        assert_eq!(issues(&adt(v), &Profile::strict()), [], "version {v}");
    }
}

/// Replaces segment `index` (0-based) of the clean message with `with`, or inserts it before `index` when
/// `insert`.
struct Fault {
    what: &'static str,
    edit: fn(&mut Vec<String>),
    expect: (IssueSeverity, Rule, &'static str),
}

#[test]
fn each_fault_gives_exactly_its_issue() {
    use IssueSeverity::{Error, Warning};
    let faults = [
        Fault {
            what: "a required segment is missing",
            edit: |m| {
                m.remove(3);
            },
            expect: (Error, Rule::MissingSegment, "/PV1"),
        },
        Fault {
            what: "a non-repeating segment repeats",
            edit: |m| {
                let pid = m[2].clone();
                m.insert(3, pid);
            },
            expect: (Error, Rule::UnexpectedSegment, "/PID2"),
        },
        Fault {
            what: "a segment the version does not define",
            edit: |m| m.push("XYZ|1".into()),
            expect: (Error, Rule::UnexpectedSegment, "/XYZ"),
        },
        Fault {
            what: "a Z-segment",
            edit: |m| m.insert(3, "ZPI|1|local".into()),
            expect: (Warning, Rule::ZSegment, "/ZPI"),
        },
        Fault {
            what: "a required field is empty",
            edit: |m| m[2] = "PID|1||||DOE^JOHN||19800315|M".into(),
            expect: (Error, Rule::RequiredField, "/PID-3"),
        },
        Fault {
            what: "a non-repeating field repeats",
            edit: |m| m[2] = "PID|1||MRN12345^^^HOSP^MR||DOE^JOHN||19800315|M~F".into(),
            expect: (Error, Rule::FieldRepetition, "/PID-8"),
        },
        Fault {
            what: "a sequence number that is not one",
            edit: |m| m[2] = "PID|x||MRN12345^^^HOSP^MR||DOE^JOHN||19800315|M".into(),
            expect: (Error, Rule::DataType, "/PID-1"),
        },
        Fault {
            what: "a number that is not one",
            edit: |m| {
                m[2] = "PID|1||MRN12345^^^HOSP^MR||DOE^JOHN||19800315|M|||||||||||||||||A".into();
            },
            expect: (Error, Rule::DataType, "/PID-25"),
        },
        Fault {
            what: "an ID value outside its HL7 table",
            edit: |m| {
                m[2] = "PID|1||MRN12345^^^HOSP^MR||DOE^JOHN||19800315|M||||||||||||||||X".into();
            },
            expect: (Error, Rule::TableValueId, "/PID-24"),
        },
        Fault {
            what: "an IS value outside the HL7 table that lists its codes",
            edit: |m| m[2] = "PID|1||MRN12345^^^HOSP^MR||DOE^JOHN||19800315|Q".into(),
            // PID-8 is IS up to 2.6, CWE (whose component 1 carries the code) from 2.7 on.
            expect: (Warning, Rule::TableValue, "/PID-8|/PID-8-1"),
        },
        Fault {
            what: "more fields than the segment defines",
            edit: |m| m[1].push_str("|||||||||||extra"),
            expect: (Warning, Rule::ExtraField, "/EVN-13"),
        },
    ];
    for v in VERSIONS {
        for f in &faults {
            let mut m = adt(v);
            (f.edit)(&mut m);
            let got = issues(&m, &Profile::lenient());
            let (sev, rule, paths) = f.expect;
            let path = match paths.split_once('|') {
                Some((old, new)) => {
                    if v == "2.8" {
                        new
                    } else {
                        old
                    }
                }
                None => paths,
            };
            assert_eq!(
                got,
                [(sev, rule, path.to_owned())],
                "version {v}: {} should give exactly one {rule:?} at {path}",
                f.what
            );
        }
    }
}

#[test]
fn timestamps_dates_and_times_are_checked_to_the_letter() {
    // PID-7 is TS (2.3-2.5.1: component 1 is the time) or DTM (2.8).
    for (v, path) in [
        ("2.3", "/PID-7-1"),
        ("2.5.1", "/PID-7-1"),
        ("2.8", "/PID-7"),
    ] {
        for bad in [
            "1980133",
            "19800230",
            "198003151261",
            "20240315143000+2500",
            "2024031514300",
            "March 1980",
        ] {
            let mut m = adt(v);
            m[2] = format!("PID|1||MRN12345^^^HOSP^MR||DOE^JOHN||{bad}|M");
            assert_eq!(
                issues(&m, &Profile::lenient()),
                [(IssueSeverity::Error, Rule::DataType, path.to_owned())],
                "{v}: {bad:?}"
            );
        }
        for good in [
            "1980",
            "198003",
            "19800315",
            "2024031514",
            "202403151430",
            "20240315143000.1234-0500",
            "20240229",
        ] {
            let mut m = adt(v);
            m[2] = format!("PID|1||MRN12345^^^HOSP^MR||DOE^JOHN||{good}|M");
            assert_eq!(issues(&m, &Profile::lenient()), [], "{v}: {good:?}");
        }
    }
}

#[test]
fn the_profile_decides_what_is_an_error() {
    let mut m = adt("2.5.1");
    m.insert(3, "ZPI|1".into());
    m[2] = "PID|1||MRN12345^^^HOSP^MR||DOE^JOHN||19800315|Q".into();
    let lenient = issues(&m, &Profile::lenient());
    assert!(
        lenient.iter().all(|i| i.0 == IssueSeverity::Warning),
        "{lenient:?}"
    );
    let strict = issues(&m, &Profile::strict());
    assert_eq!(strict.len(), 2);
    assert!(
        strict.iter().all(|i| i.0 == IssueSeverity::Error),
        "{strict:?}"
    );
    let quiet = issues(
        &m,
        &Profile::strict()
            .with(Rule::ZSegment, None)
            .with(Rule::TableValue, None),
    );
    assert_eq!(quiet, []);
    let mut m = adt("2.5.1");
    m.remove(3);
    let relaxed = issues(
        &m,
        &Profile::lenient().with(Rule::MissingSegment, Some(IssueSeverity::Warning)),
    );
    assert_eq!(
        relaxed,
        [(
            IssueSeverity::Warning,
            Rule::MissingSegment,
            "/PV1".to_owned()
        )]
    );
}

#[test]
fn issues_point_at_err_locations_and_ack_codes() {
    let mut m = adt("2.5.1");
    m[2] = "PID|1||||DOE^JOHN||19800315|M".into();
    let text = m.join("\r");
    let msg = Message::parse(text.as_bytes());
    let report = validate(&msg, &Profile::lenient());
    assert_eq!(report.structure.as_deref(), Some("ADT_A01"));
    let issue = &report.issues[0];
    assert_eq!(issue.code().code(), 101);
    assert_eq!(&issue.location.segment_id, b"PID");
    assert_eq!((issue.location.sequence, issue.location.field), (1, 3));
    assert!(
        issue.message.contains("PID-3") && issue.message.contains("Patient Identifier List"),
        "{}",
        issue.message
    );
    let ack = msg
        .ack(hl7v2::AckCode::AE)
        .error(issue.to_ack_error())
        .timestamp("20240101")
        .control_id("A1")
        .build();
    let ack = Message::parse(&ack);
    assert_eq!(ack.get("ERR-2-1").as_deref(), Some("PID"));
    assert_eq!(ack.get("ERR-2-3").as_deref(), Some("3"));
    assert_eq!(ack.get("ERR-3-1").as_deref(), Some("101"));
}

#[test]
fn names_for_any_path() {
    let defs = hl7v2::Version::V2_5_1.definitions();
    let e = |p: &str| {
        defs.element(&hl7v2::Path::parse(p).unwrap())
            .map(|e| (e.name, e.data_type, e.table))
    };
    assert_eq!(e("PID-8"), Some(("Administrative Sex", "IS", Some(1))));
    assert_eq!(e("PID-11-3"), Some(("City", "ST", None)));
    assert_eq!(e("PID-3-4-1"), Some(("Namespace ID", "IS", Some(300))));
    assert_eq!(e("PID-99"), None);
    let msg = Message::parse(b"MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|1|P|2.5.1\rEVN||2024\rPID|1||7||DOE\rPV1|1|I\r");
    let json = hl7v2::to_json_with_names(&msg);
    assert_eq!(json["structure"], "ADT_A01");
    assert_eq!(json["segments"][2]["path"], "/PID(0)");
    assert_eq!(json["segments"][2]["name"], "Patient Identification");
    assert_eq!(json["segments"][2]["names"][4], "Patient Name");
    assert_eq!(json["segments"][2]["fields"][4], "DOE");
}
