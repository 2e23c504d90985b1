//! The generated HL7 v2 definitions: facts checked by hand and, where cheap, recomputed from the source tarballs in
//! ../shared (hl7-dictionary's JSON, hl7apy's dict keys) independently of the generator.

use crate::support::hl7_data;
use hl7v2::{NodeKind, StructureNode, Version};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::io::Read;

/// Text files of a tarball in `../shared/data/hl7v2/definitions` whose path passes `keep`.
fn tarball(name: &str, keep: impl Fn(&str) -> bool) -> HashMap<String, String> {
    let path = hl7_data().join("definitions").join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&bytes[..]));
    let mut out = HashMap::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let p = entry.path().unwrap().to_string_lossy().into_owned();
        if keep(&p) {
            let mut text = String::new();
            entry.read_to_string(&mut text).unwrap();
            out.insert(p, text);
        }
    }
    out
}

/// hl7-dictionary's `lib/<dir>/segments.js` as JSON (`var segments = {...}; module.exports = segments;`).
fn dictionary_segments() -> HashMap<String, Value> {
    tarball("hl7-dictionary-1.0.1.tgz", |p| p.ends_with("/segments.js"))
        .into_iter()
        .map(|(path, text)| {
            let dir = path
                .trim_start_matches("package/lib/")
                .trim_end_matches("/segments.js")
                .to_string();
            let body = &text[text.find('=').unwrap() + 1..text.rfind("module.exports").unwrap()];
            (
                dir,
                serde_json::from_str(body.trim().trim_end_matches(';')).unwrap(),
            )
        })
        .collect()
}

fn seg(node: &StructureNode) -> Option<(&str, &str)> {
    match &node.kind {
        NodeKind::Segment { id, name } => Some((id, name)),
        NodeKind::Group { .. } => None,
    }
}

fn group<'a>(children: &'a [StructureNode], wanted: &str) -> &'a StructureNode {
    children
        .iter()
        .find(|n| matches!(&n.kind, NodeKind::Group { name, .. } if &**name == wanted))
        .unwrap_or_else(|| panic!("no group {wanted}"))
}

fn children(node: &StructureNode) -> &[StructureNode] {
    match &node.kind {
        NodeKind::Group { children, .. } => children,
        NodeKind::Segment { .. } => panic!("not a group"),
    }
}

fn walk<'a>(nodes: &'a [StructureNode], f: &mut impl FnMut(&'a StructureNode)) {
    for n in nodes {
        f(n);
        if let NodeKind::Group { children, .. } = &n.kind {
            walk(children, f);
        }
    }
}

#[test]
fn every_version_decodes_with_counts_that_match_hl7apy() {
    // Independent count: the top-level keys of hl7apy's MESSAGES and SEGMENTS dicts (lines `'KEY': `, whatever the indentation).
    let apy = tarball("hl7apy-0297526c.tar.gz", |p| {
        p.ends_with("/messages.py") || p.ends_with("/segments.py")
    });
    let keys = |version: Version, file: &str| -> Vec<String> {
        let module = format!("/hl7apy/v{}/{file}.py", version.as_str().replace('.', "_"));
        let text = apy.iter().find(|(p, _)| p.ends_with(&module)).unwrap().1;
        text.lines()
            .filter_map(|l| {
                l.trim_start()
                    .strip_prefix('\'')
                    .and_then(|r| r.split_once("': "))
                    .map(|(k, _)| k.to_string())
            })
            .collect()
    };
    for version in Version::ALL {
        let defs = version.definitions();
        assert_eq!(defs.version(), version);
        let structures: Vec<String> = defs.structures().map(|s| s.id.to_string()).collect();
        let mut expected = keys(version, "messages");
        expected.sort();
        assert_eq!(structures, expected, "{version}: structures");
        let segments: Vec<String> = defs.segments().map(|s| s.id.to_string()).collect();
        let mut expected: Vec<String> = keys(version, "segments")
            .into_iter()
            .filter(|k| k != "ANYHL7SEGMENT")
            .collect();
        expected.sort();
        assert_eq!(segments, expected, "{version}: segments");
        assert!(structures.len() >= 39 && segments.len() >= 38, "{version}");

        for s in defs.structures() {
            assert_eq!(
                s.children.first().and_then(seg).map(|x| x.0),
                Some("MSH"),
                "{version} {}",
                s.id
            );
            walk(&s.children, &mut |n| {
                if let Some((id, _)) = seg(n) {
                    assert!(
                        defs.segment(id).is_some(),
                        "{version} {}: segment {id} undefined",
                        s.id
                    );
                    assert_ne!(id, "ANYHL7SEGMENT");
                }
                if let NodeKind::Group { children, .. } = &n.kind {
                    assert!(!children.is_empty(), "{version} {}: empty group", s.id);
                }
            });
        }
        for sd in defs.segments() {
            assert!(!sd.fields.is_empty(), "{version} {}: no fields", sd.id);
        }
        let msh = defs.segment("MSH").unwrap();
        assert_eq!(
            msh.fields[0].data_type.as_ref(),
            "ST",
            "{version}: MSH-1 is the field separator"
        );
        assert!(
            defs.table(3).is_some() || version == Version::V2_1,
            "{version}: table 0003"
        );
    }
}

#[test]
fn oru_r01_and_adt_a01_in_2_5() {
    let defs = Version::V2_5.definitions();
    let oru = defs.structure("ORU_R01").unwrap();
    let ids: Vec<_> = oru.children.iter().map(|n| seg(n).map(|s| s.0)).collect();
    assert_eq!(&ids[..2], [Some("MSH"), Some("SFT")]);
    let pr = group(&oru.children, "PATIENT_RESULT");
    assert_eq!((pr.min, pr.max), (1, None));
    let patient = group(children(pr), "PATIENT");
    assert_eq!((patient.min, patient.max), (0, Some(1)));
    let oo = group(children(pr), "ORDER_OBSERVATION");
    assert_eq!((oo.min, oo.max), (1, None));
    let obs = group(children(oo), "OBSERVATION");
    assert_eq!(seg(&children(obs)[0]), Some(("OBX", "OBX")));

    let adt = defs.structure("ADT_A01").unwrap();
    let names: Vec<&str> = adt.children.iter().filter_map(seg).map(|s| s.1).collect();
    assert!(
        names.starts_with(&[
            "MSH", "SFT", "EVN", "PID", "PD1", "ROL", "NK1", "PV1", "PV2", "ROL2", "DB1"
        ]),
        "{names:?}"
    );
    let ins = group(&adt.children, "INSURANCE");
    let ins_names: Vec<&str> = children(ins).iter().filter_map(seg).map(|s| s.1).collect();
    assert_eq!(
        ins_names,
        ["IN1", "IN2", "IN3", "ROL"],
        "numbering restarts in each group"
    );
    let rol2 = adt
        .children
        .iter()
        .find(|n| seg(n) == Some(("ROL", "ROL2")))
        .unwrap();
    assert_eq!((rol2.min, rol2.max), (0, None));
}

#[test]
fn choice_groups_are_transparent_for_segment_names() {
    // Every segment name within one non-choice group (choice members included) is unique, and is the id for the
    // first occurrence: checked over every structure of every version.
    fn check(children: &[StructureNode], version: Version, id: &str) {
        fn collect<'a>(
            children: &'a [StructureNode],
            out: &mut Vec<(&'a str, &'a str)>,
            version: Version,
            id: &str,
        ) {
            for n in children {
                match &n.kind {
                    NodeKind::Segment { id, name } => out.push((id, name)),
                    NodeKind::Group {
                        choice: true,
                        children,
                        ..
                    } => collect(children, out, version, id),
                    NodeKind::Group {
                        choice: false,
                        children,
                        ..
                    } => check(children, version, id),
                }
            }
        }
        let mut segs = Vec::new();
        collect(children, &mut segs, version, id);
        let mut seen: HashMap<&str, u32> = HashMap::new();
        for (seg_id, name) in segs {
            let n = seen.entry(seg_id).or_default();
            *n += 1;
            let expected = if *n == 1 {
                seg_id.to_string()
            } else {
                format!("{seg_id}{n}")
            };
            assert_eq!(name, expected, "{version} {id}");
        }
    }
    let mut choices = 0;
    for version in Version::ALL {
        for s in version.definitions().structures() {
            check(&s.children, version, &s.id);
            walk(&s.children, &mut |n| {
                choices += usize::from(matches!(n.kind, NodeKind::Group { choice: true, .. }))
            });
        }
    }
    assert!(choices > 50, "hl7apy's choice groups are kept: {choices}");
}

#[test]
fn pid_fields_in_2_5_with_lengths_from_hl7_dictionary() {
    let dict = dictionary_segments();
    let dict_pid = &dict["2.5"]["PID"]["fields"];
    let pid = Version::V2_5.definitions().segment("PID").unwrap();
    assert_eq!(&*pid.name, "Patient Identification");
    let sex = &pid.fields[7];
    assert_eq!(&*sex.name, "Administrative Sex");
    assert_eq!(&*sex.data_type, "IS");
    assert_eq!((sex.table, sex.min, sex.max), (Some(1), 0, Some(1)));
    assert_eq!(sex.length, dict_pid[7]["len"].as_u64().map(|n| n as u32));
    assert_eq!(sex.length, Some(1));
    let ids = &pid.fields[2];
    assert_eq!((&*ids.data_type, ids.min, ids.max), ("CX", 1, None));
    assert_eq!(ids.length, Some(250));
    // Every 2.5 field length is hl7-dictionary's, field by field.
    for sd in Version::V2_5.definitions().segments() {
        let Some(fields) = dict["2.5"][&*sd.id]["fields"].as_array() else {
            continue;
        };
        for (f, d) in sd.fields.iter().zip(fields) {
            assert_eq!(f.length, d["len"].as_u64().map(|n| n as u32), "{}", sd.id);
        }
    }
    // 2.8.x: no hl7-dictionary, so names from hl7apy's long names and no lengths.
    let pid = Version::V2_8.definitions().segment("PID").unwrap();
    assert_eq!(&*pid.fields[7].name, "Administrative Sex");
    assert!(pid.fields.iter().all(|f| f.length.is_none()));
    // Components.
    let cx = Version::V2_5.definitions().data_type("CX").unwrap();
    assert_eq!(&*cx.components[0].name, "ID Number");
    assert_eq!(&*cx.components[3].data_type, "HD");
    assert!(
        Version::V2_5
            .definitions()
            .data_type("ST")
            .unwrap()
            .components
            .is_empty()
    );
}

#[test]
fn structure_of_event() {
    let d25 = Version::V2_5.definitions();
    assert_eq!(
        &*d25.structure_of_event("ADT", "A04").unwrap().id,
        "ADT_A01"
    );
    assert_eq!(
        &*d25.structure_of_event("ADT", "A08").unwrap().id,
        "ADT_A01"
    );
    assert_eq!(
        &*d25.structure_of_event("ORU", "R01").unwrap().id,
        "ORU_R01"
    );
    assert_eq!(
        &*d25.structure_of_event("ADT", "A28").unwrap().id,
        "ADT_A05"
    );
    assert_eq!(&*d25.structure_of_event("ACK", "A01").unwrap().id, "ACK");
    assert!(d25.structure_of_event("ADT", "Z99").is_none());
    assert!(
        d25.structure_of_event("ORU", "A04").is_none(),
        "0354 maps events of the same message type only"
    );
    assert!(
        Version::V2_3
            .definitions()
            .structure_of_event("ADT", "A08")
            .is_some()
    );
    assert_eq!(
        &*Version::V2_8_2
            .definitions()
            .structure_of_event("ADT", "A04")
            .unwrap()
            .id,
        "ADT_A01"
    );
}

#[test]
fn tables() {
    let t = Version::V2_5.definitions().table(1).unwrap();
    assert!(t.contains("F"));
    assert_eq!(t.display("F"), Some("Female"));
    assert!(!t.contains("Q"));
    assert!(t.codes.is_sorted_by(|a, b| a.code < b.code));
    // 2.1 and 2.2 codes come from hl7-dictionary.
    assert!(Version::V2_2.definitions().table(1).unwrap().contains("M"));
    for version in Version::ALL {
        for t in version.definitions().tables() {
            assert!(!t.codes.is_empty(), "{version} table {}", t.id);
        }
    }
    // Errata: hl7apy 2.5 keys table 0250 as 'HL7025'; 2.3.1 has 'L,M,N' as one code of table 0301.
    assert!(Version::V2_5.definitions().table(250).is_some());
    assert!(Version::V2_5.definitions().table(25).is_none());
    let t301 = Version::V2_3_1.definitions().table(301).unwrap();
    assert!(t301.contains("L") && t301.contains("N") && !t301.contains("L,M,N"));
    // hl7apy's Python escapes are decoded: 2.8 writes 'Patient\u2019s Relationship to Insured'.
    assert_eq!(
        &*Version::V2_8.definitions().table(344).unwrap().name,
        "Patient\u{2019}s Relationship to Insured"
    );
    // Rule nbsp-codes: ' UPP' (no-break space) and 'CHEST\u00c2\u00a0' (its mojibake) are UPP and CHEST.
    assert!(
        Version::V2_5
            .definitions()
            .table(495)
            .unwrap()
            .contains("UPP")
    );
    for version in [Version::V2_5, Version::V2_7, Version::V2_8_2] {
        let t550 = version.definitions().table(550).unwrap();
        assert!(t550.contains("CHEST") && t550.contains("KIDN"), "{version}");
    }
    // No escape is left undecoded, and no code or name carries an edge space or a no-break space.
    for version in Version::ALL {
        for t in version.definitions().tables() {
            let texts = std::iter::once(&*t.name).chain(
                t.codes
                    .iter()
                    .flat_map(|c| std::iter::once(&*c.code).chain(c.display.as_deref())),
            );
            for text in texts {
                assert!(
                    !text.contains(['\\', '\u{a0}', '\u{c2}'])
                        && !text.contains("u20")
                        && !text.contains("u00"),
                    "{version} table {}: {text:?}",
                    t.id
                );
            }
            for c in &t.codes {
                assert_eq!(c.code.trim(), &*c.code, "{version} table {}", t.id);
            }
        }
    }
}

#[test]
fn version_parse() {
    assert_eq!(Version::parse("2.5.1"), Some(Version::V2_5_1));
    assert_eq!(Version::parse(" 2.5 "), Some(Version::V2_5));
    assert_eq!(Version::parse("2.7.1"), Some(Version::V2_7));
    assert_eq!(Version::parse("2.3.2"), Some(Version::V2_3_1));
    assert_eq!(Version::parse("2.8.3"), Some(Version::V2_8_2));
    assert_eq!(Version::parse("2.9"), None);
    assert_eq!(Version::parse("2"), None);
    assert_eq!(Version::parse("2.5.x"), None);
    assert_eq!(Version::parse(""), None);
    for v in Version::ALL {
        assert_eq!(Version::parse(v.as_str()), Some(v));
    }
}

#[test]
fn errata_are_applied() {
    // 2.1 ORO (malformed in hl7apy) has its four fields.
    assert_eq!(
        Version::V2_1
            .definitions()
            .segment("ORO")
            .unwrap()
            .fields
            .len(),
        4
    );
    // 2.7+ QRD/QRF/URD/URS: the 2.6 definitions, as hl7-dictionary 2.7.1 has them.
    let dict = dictionary_segments();
    for version in [
        Version::V2_7,
        Version::V2_8,
        Version::V2_8_1,
        Version::V2_8_2,
    ] {
        for id in ["QRD", "QRF", "URD", "URS"] {
            let fields = &version.definitions().segment(id).unwrap().fields;
            let d = dict["2.7.1"][id]["fields"].as_array().unwrap();
            assert_eq!(fields.len(), d.len(), "{version} {id}");
            for (f, d) in fields.iter().zip(d) {
                assert_eq!(
                    *f.data_type,
                    *d["datatype"].as_str().unwrap(),
                    "{version} {id}"
                );
            }
        }
    }
    // Withdrawn fields hl7apy leaves out (2.6 DG1-7..14, 2.8 EVN-1) keep later fields in place.
    let dg1 = Version::V2_6.definitions().segment("DG1").unwrap();
    assert_eq!(dg1.fields[6].max, Some(0));
    assert_eq!(
        dg1.fields.len(),
        dict["2.6"]["DG1"]["fields"].as_array().unwrap().len()
    );
    assert_eq!(
        *dg1.fields[14].name,
        *dict["2.6"]["DG1"]["fields"][14]["desc"].as_str().unwrap()
    );
    let evn = Version::V2_8.definitions().segment("EVN").unwrap();
    assert_eq!(evn.fields[0].max, Some(0));
    assert_eq!(&*evn.fields[1].name, "Recorded Date Time");
    // 2.5.1 MSA-5 has a type (from hl7-dictionary).
    assert_eq!(
        &*Version::V2_5_1.definitions().segment("MSA").unwrap().fields[4].data_type,
        "ID"
    );
    // Group renames: hl7apy's 'TIIMING' (2.5, 2.6), 'RSPONSE' and 'DEFINTION' (2.4) are spelt as the standard does.
    for version in [Version::V2_5, Version::V2_6] {
        let oml = version.definitions().structure("OML_O21").unwrap();
        let order = group(&oml.children, "ORDER");
        let timing = group(children(order), "TIMING");
        assert_eq!(
            children(timing).iter().filter_map(seg).next(),
            Some(("TQ1", "TQ1")),
            "{version}"
        );
    }
    group(
        &Version::V2_4
            .definitions()
            .structure("ORS_O06")
            .unwrap()
            .children,
        "RESPONSE",
    );
    group(
        &Version::V2_4
            .definitions()
            .structure("RGR_RGR")
            .unwrap()
            .children,
        "DEFINITION",
    );
    for version in Version::ALL {
        for s in version.definitions().structures() {
            walk(&s.children, &mut |n| {
                if let NodeKind::Group { name, .. } = &n.kind {
                    assert!(
                        !["TIIMING", "RSPONSE", "DEFINTION"].contains(&&**name),
                        "{version} {}: group {name}",
                        s.id
                    );
                }
            });
        }
    }
}

/// hl7apy (as the definitions say, after errata) vs hl7-dictionary on field data type and repetition, recomputed
/// here from the definitions and hl7-dictionary read fresh, must equal the committed report exactly.
#[test]
fn disagreements_between_hl7apy_and_hl7_dictionary() {
    let dict = dictionary_segments();
    let mut lines = Vec::new();
    let mut counts: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    for version in &Version::ALL[..8] {
        let v = version.as_str();
        let entry = counts.entry(v).or_default();
        for sd in version.definitions().segments() {
            let Some(dfields) = dict[v][&*sd.id]["fields"].as_array() else {
                continue;
            };
            if dfields.len() != sd.fields.len() {
                lines.push(format!(
                    "{v}\t{}\tcount\t{}\t{}",
                    sd.id,
                    sd.fields.len(),
                    dfields.len()
                ));
                entry.2 += 1;
            }
            for (i, (f, d)) in sd.fields.iter().zip(dfields).enumerate() {
                let dt = d["datatype"].as_str().unwrap_or("");
                if *f.data_type != *dt {
                    lines.push(format!(
                        "{v}\t{}-{}\ttype\t{}\t{dt}",
                        sd.id,
                        i + 1,
                        f.data_type
                    ));
                    entry.0 += 1;
                }
                let rep = match d["rep"].as_u64() {
                    Some(0) => None,
                    Some(n) => Some(n as u32),
                    None => Some(1),
                };
                let show = |m: Option<u32>| m.map_or("*".to_string(), |n| n.to_string());
                if f.max != rep {
                    lines.push(format!(
                        "{v}\t{}-{}\tmax\t{}\t{}",
                        sd.id,
                        i + 1,
                        show(f.max),
                        show(rep)
                    ));
                    entry.1 += 1;
                }
            }
        }
    }
    let committed = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/generated/disagreements.tsv"),
    )
    .unwrap();
    let committed: Vec<&str> = committed.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(committed, lines, "disagreements.tsv is out of date");
    for (v, (types, reps, fcounts)) in &counts {
        println!("{v}: {types} data type, {reps} repetition, {fcounts} field-count disagreements");
    }
    // The README's measurement: within 5 data type differences in 2.5.
    assert_eq!(counts["2.5"].0, 5);
}

#[test]
fn decoding_is_fast() {
    // Decoding happens once per process; this measures it on a fresh thread-independent OnceLock state only when
    // this test runs first, so it just reports (run with --release --nocapture for the figure).
    let start = std::time::Instant::now();
    let total: usize = Version::ALL
        .iter()
        .map(|v| v.definitions().segments().count())
        .sum();
    println!(
        "decoded (or found decoded) all 12 versions in {:?} ({total} segments)",
        start.elapsed()
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
}
