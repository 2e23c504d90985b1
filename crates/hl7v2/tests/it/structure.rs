//! The group tree: every message of the shared corpus resolves its structure, and every segment stands at the
//! group path HAPI v2 2.6.0 gives it (HAPI runs on the same messages, through `tests/hapi/run.sh`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use hl7v2::{Message, UnexpectedKind, Version};

use crate::support::corpus;

/// The messages of a file as the HAPI harness splits them: BOM dropped, terminators normalised to CR, a new
/// message at each segment starting with `MSH`, lines before the first `MSH` dropped.
fn split_messages(bytes: &[u8]) -> Vec<Vec<u8>> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut out: Vec<Vec<u8>> = Vec::new();
    for line in bytes.split(|&b| b == b'\r' || b == b'\n') {
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        if line.starts_with(b"MSH") {
            out.push(Vec::new());
        }
        if let Some(m) = out.last_mut() {
            m.extend_from_slice(line);
            m.push(b'\r');
        }
    }
    out
}

/// What HAPI printed for one message.
#[derive(Debug, Default)]
struct HapiMessage {
    structure: Option<String>,
    error: Option<String>,
    /// (path, segment id) in HAPI's tree order.
    segments: Vec<(String, String)>,
}

fn run_hapi(files: &[PathBuf]) -> BTreeMap<(String, usize), HapiMessage> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hapi/run.sh");
    let java = Command::new("java").arg("-version").output();
    let mvn = Command::new("mvn").arg("-v").output();
    assert!(
        java.is_ok_and(|o| o.status.success()) && mvn.is_ok_and(|o| o.status.success()),
        "\n\n!!! The HAPI differential test needs a JDK 17 and Maven (`scripts/test.sh` installs them).\n\n"
    );
    let out = Command::new("bash")
        .arg(&script)
        .args(files)
        .output()
        .expect("running the HAPI harness");
    assert!(
        out.status.success(),
        "HAPI harness failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut result = BTreeMap::new();
    let mut key: Option<(String, usize)> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("#MESSAGE ") {
            let (file, index) = rest.rsplit_once('\t').expect("#MESSAGE file\\tindex");
            let k = (file.to_owned(), index.parse().expect("index"));
            result.insert(k.clone(), HapiMessage::default());
            key = Some(k);
        } else if let Some(rest) = line.strip_prefix("#STRUCTURE ") {
            let m = result.get_mut(key.as_ref().unwrap()).unwrap();
            m.structure = Some(rest.split('\t').next().unwrap_or("").to_owned());
        } else if let Some(rest) = line.strip_prefix("#ERROR ") {
            let m = result.get_mut(key.as_ref().unwrap()).unwrap();
            m.error = Some(rest.to_owned());
        } else if let Some((path, seg)) = line.split_once('\t') {
            let m = result.get_mut(key.as_ref().unwrap()).unwrap();
            m.segments
                .push((path.to_owned(), seg.chars().take(3).collect()));
        }
    }
    result
}

/// Thoth's placement of one message: (path, segment id), sorted like HAPI's output is compared.
fn thoth_paths(bytes: &[u8]) -> (Option<String>, Vec<(String, String)>) {
    let msg = Message::parse(bytes);
    let tree = msg.group_tree();
    let mut v: Vec<(String, String)> = tree
        .segments(&msg)
        .map(|p| (p.path(), p.segment.id().to_owned()))
        .collect();
    v.sort();
    (tree.structure_id().map(str::to_owned), v)
}

#[test]
fn every_corpus_message_resolves_its_structure() {
    let mut unresolved = Vec::new();
    let mut count = 0;
    for file in corpus() {
        let bytes = std::fs::read(&file).unwrap();
        for m in split_messages(&bytes) {
            count += 1;
            let msg = Message::parse(&m);
            let tree = msg.group_tree();
            // Files whose header is damaged on purpose (negative tests) have no message type to resolve.
            let kind = msg.get("MSH-9-1").unwrap_or_default();
            if tree.structure_id().is_none() && !kind.is_empty() {
                unresolved.push(format!(
                    "{}: MSH-9 {:?} version {}",
                    file.display(),
                    msg.get("MSH-9").unwrap_or_default(),
                    tree.version().as_str()
                ));
            }
        }
    }
    assert!(count >= 270, "{count} messages");
    assert!(
        unresolved.is_empty(),
        "{} messages without a structure:\n{}",
        unresolved.len(),
        unresolved.join("\n")
    );
}

#[test]
fn group_paths_agree_with_hapi() {
    let tmp = std::env::temp_dir().join(format!("thoth-hapi-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    // One file per message, so that HAPI and Thoth see the same bytes.
    let mut ours = BTreeMap::new();
    let mut files = Vec::new();
    for (i, file) in corpus().into_iter().enumerate() {
        let bytes = std::fs::read(&file).unwrap();
        for (j, m) in split_messages(&bytes).into_iter().enumerate() {
            let name = tmp.join(format!("{i:03}-{j}.hl7"));
            std::fs::write(&name, &m).unwrap();
            ours.insert(name.display().to_string(), (file.clone(), m));
            files.push(name);
        }
    }
    let mut hapi = run_hapi(&files);
    // HAPI reads a message whose MSH-9-3 names a structure its version lacks (ADT_A08 in 2.8) as a generic
    // message, where Thoth falls back to the trigger event map. Ask HAPI again with MSH-9-3 set to the structure
    // Thoth resolved, so that the placement itself is compared.
    let mut retry = Vec::new();
    for (name, (_, m)) in &ours {
        let h = &hapi[&(name.clone(), 0)];
        let generic = h
            .structure
            .as_deref()
            .is_some_and(|s| s.starts_with("GenericMessage"));
        let (structure, _) = thoth_paths(m);
        if let (true, Some(s)) = (generic, structure) {
            let rewritten = with_structure(m, &s);
            let path = PathBuf::from(format!("{name}.as-{s}.hl7"));
            std::fs::write(&path, rewritten).unwrap();
            retry.push((name.clone(), path));
        }
    }
    if !retry.is_empty() {
        let mut again = run_hapi(&retry.iter().map(|(_, p)| p.clone()).collect::<Vec<_>>());
        for (name, path) in &retry {
            if let Some(h) = again.remove(&(path.display().to_string(), 0)) {
                hapi.insert((name.clone(), 0), h);
            }
        }
    }

    let mut compared = 0;
    let mut refused = 0;
    let mut segments = 0;
    let mut mismatches = Vec::new();
    let mut known = Vec::new();
    for (name, (original, m)) in &ours {
        let h = &hapi[&(name.clone(), 0)];
        if h.error.is_some()
            || h.structure
                .as_deref()
                .is_some_and(|s| s.starts_with("GenericMessage"))
        {
            refused += 1;
            let msg = Message::parse(m);
            eprintln!(
                "not compared: {} (MSH-9-3 {:?}, MSH-12 {:?}): HAPI {}",
                original.display(),
                msg.get("MSH-9-3").unwrap_or_default(),
                msg.get("MSH-12").unwrap_or_default(),
                h.error.as_deref().or(h.structure.as_deref()).unwrap_or("")
            );
            continue;
        }
        compared += 1;
        let (structure, mine) = thoth_paths(m);
        let msg = Message::parse(m);
        let tree = msg.group_tree();
        if let Some(why) = KNOWN_DEFINITION_DIFFERENCES
            .iter()
            .find(|(v, s, _)| *v == tree.version().as_str() && Some(*s) == structure.as_deref())
        {
            known.push(format!("{} ({})", original.display(), why.2));
            continue;
        }
        // HAPI's names for a few groups differ from the standard's (see `GroupTree::canonical_name`).
        let mut theirs: Vec<(String, String)> = h
            .segments
            .iter()
            .map(|(path, id)| (canonical_path(tree, path), id.clone()))
            .collect();
        theirs.sort();
        segments += theirs.len();
        // HAPI names some structures by their event (ADT_A04 in 2.3 and 2.5.1) where the event map gives ADT_A01.
        let same_structure = structure.as_deref() == h.structure.as_deref()
            || h.structure
                .as_deref()
                .and_then(|s| s.split_once('_'))
                .and_then(|(k, e)| {
                    tree.version()
                        .definitions()
                        .structure_of_event(k, e)
                        .map(|s| &*s.id)
                })
                == structure.as_deref();
        if !same_structure || mine != theirs {
            let only_ours: Vec<_> = mine
                .iter()
                .filter(|p| !theirs.contains(p))
                .take(4)
                .collect();
            let only_theirs: Vec<_> = theirs
                .iter()
                .filter(|p| !mine.contains(p))
                .take(4)
                .collect();
            mismatches.push(format!(
                "{} ({:?} vs HAPI {:?}):\n  Thoth only: {only_ours:?}\n  HAPI only:  {only_theirs:?}",
                original.display(),
                structure,
                h.structure
            ));
        }
    }
    std::fs::remove_dir_all(&tmp).ok();
    eprintln!(
        "HAPI comparison: {compared} messages, {segments} segments compared; {refused} refused by HAPI; {} with \
         known definition differences:\n{}",
        known.len(),
        known.join("\n")
    );
    assert!(compared >= 230, "only {compared} messages compared");
    assert!(
        mismatches.is_empty(),
        "{} of {compared} messages place segments differently from HAPI:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// Structures whose HAPI definition differs from the standard's (hl7apy's, which Thoth follows): (version,
/// structure, what differs). docs/CONFORMANCE.md lists them.
const KNOWN_DEFINITION_DIFFERENCES: &[(&str, &str, &str)] = &[
    (
        "2.8",
        "ADT_A60",
        "HAPI's 2.8 ADT_A60 has no VISIT group: PV1, ARV and PV2 are top-level segments",
    ),
    (
        "2.8",
        "DFT_P03",
        "HAPI's 2.8 DFT_P03 has no VISIT group: PV1, PV2 and PRT are top-level segments",
    ),
    (
        "2.8",
        "DFT_P11",
        "HAPI's 2.8 DFT_P11 has no VISIT group: PV1, PV2 and PRT are top-level segments",
    ),
];

/// A HAPI path with HAPI's own names replaced by the standard's.
fn canonical_path(tree: &hl7v2::GroupTree, path: &str) -> String {
    path.split('/')
        .map(|step| match step.split_once('(') {
            Some((name, rest)) => format!("{}({rest}", tree.canonical_name(name)),
            None => step.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The message with MSH-9-3 set to `structure`.
fn with_structure(m: &[u8], structure: &str) -> Vec<u8> {
    let msg = Message::parse(m);
    let mut buf = hl7v2::MessageBuf::from(&msg);
    buf.set("MSH-9-3", structure).unwrap();
    buf.encode()
}

#[test]
fn hapi_style_placement_of_unexpected_segments() {
    // The cases HAPI's parser was observed to place (ORU_R01, 2.5.1).
    let m = b"MSH|^~\\&|A|B|C|D|20240101||ORU^R01^ORU_R01|1|P|2.5.1\rZAA|top\rPID|1||123\rOBR|1||X|1^a\r\
OBX|1|ST|c1||v1\rZXT|a\rZXT|b\rNTE|1||n\rZXT|c\rOBX|2|ST|c2||v2\rZXT|d\r";
    let msg = Message::parse(m);
    let tree = msg.group_tree();
    let paths: Vec<String> = tree.segments(&msg).map(|p| p.path()).collect();
    assert_eq!(
        paths,
        [
            "/MSH(0)",
            "/ZAA(0)",
            "/PATIENT_RESULT(0)/PATIENT(0)/PID(0)",
            "/PATIENT_RESULT(0)/ORDER_OBSERVATION(0)/OBR(0)",
            "/PATIENT_RESULT(0)/ORDER_OBSERVATION(0)/OBSERVATION(0)/OBX(0)",
            "/PATIENT_RESULT(0)/ORDER_OBSERVATION(0)/OBSERVATION(0)/ZXT(0)",
            "/PATIENT_RESULT(0)/ORDER_OBSERVATION(0)/OBSERVATION(0)/ZXT(1)",
            "/PATIENT_RESULT(0)/ORDER_OBSERVATION(0)/OBSERVATION(0)/NTE(0)",
            "/PATIENT_RESULT(0)/ORDER_OBSERVATION(0)/OBSERVATION(0)/ZXT2(0)",
            "/PATIENT_RESULT(0)/ORDER_OBSERVATION(0)/OBSERVATION(1)/OBX(0)",
            "/PATIENT_RESULT(0)/ORDER_OBSERVATION(0)/OBSERVATION(1)/ZXT(0)",
        ]
    );
    let kinds: Vec<_> = tree.unexpected().iter().map(|u| u.kind).collect();
    assert!(
        kinds.iter().all(|k| *k == UnexpectedKind::ZSegment),
        "{kinds:?}"
    );
    assert_eq!(kinds.len(), 5);
    // Group paths read through the tree, HAPI's 0-based indexes; the flat form counts in the whole message.
    assert_eq!(
        msg.get("/PATIENT_RESULT/ORDER_OBSERVATION/OBSERVATION(1)/OBX-5")
            .as_deref(),
        Some("v2")
    );
    assert_eq!(
        msg.get("/PATIENT_RESULT/ORDER_OBSERVATION/OBSERVATION/ZXT2-1")
            .as_deref(),
        Some("c")
    );
    assert_eq!(msg.get("/.OBX-5").as_deref(), Some("v1"));
    assert_eq!(msg.get("/.ZXT(1)-1").as_deref(), Some("b"));
    assert_eq!(msg.get("/.OBSERVATION(1)/ZXT-1").as_deref(), Some("d"));
    assert_eq!(
        msg.get("/PATIENT_RESULT/PATIENT/PID-3").as_deref(),
        Some("123")
    );
    assert_eq!(msg.get("/PID-3"), msg.get("PID-3"));
    assert_eq!(msg.get("OBX(1)-5").as_deref(), Some("v2"));
    assert_eq!(msg.get("OBX[2]-5").as_deref(), Some("v2"));
    assert_eq!(
        msg.get("/PATIENT_RESULT/ORDER_OBSERVATION/OBSERVATION(2)/OBX-5"),
        None
    );
}

#[test]
fn an_unknown_structure_or_version_reads_as_a_generic_message() {
    let msg = Message::parse(
        b"MSH|^~\\&|A|B|C|D|20240101||QQQ^Q99|1|P|9.9\rPID|1||7\rPID|2||8\rXYZ|1\rPID|3\r",
    );
    let tree = msg.group_tree();
    assert_eq!(tree.structure_id(), None);
    assert_eq!(tree.version(), Version::V2_5_1);
    let paths: Vec<String> = tree.segments(&msg).map(|p| p.path()).collect();
    assert_eq!(
        paths,
        ["/MSH(0)", "/PID(0)", "/PID(1)", "/XYZ(0)", "/PID2(0)"]
    );
}

#[test]
fn hostile_shapes_are_bounded() {
    // 10,000 repeated segments, a structure far out of order, a 1,000-level deep path.
    let mut m = b"MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|1|P|2.5\r".to_vec();
    for i in 0..10_000 {
        m.extend_from_slice(if i % 2 == 0 { b"PV1|1\r" } else { b"ZZ1|1\r" });
    }
    for s in [
        "PID", "EVN", "OBX", "IN1", "PR1", "AL1", "DG1", "NK1", "MSH", "EVN",
    ] {
        m.extend_from_slice(format!("{s}|x\r").as_bytes());
    }
    let started = std::time::Instant::now();
    let msg = Message::parse(&m);
    let tree = msg.group_tree();
    assert_eq!(tree.segments(&msg).count(), msg.segment_count());
    let report = hl7v2::validate(&msg, &hl7v2::Profile::lenient());
    assert!(!report.is_valid());
    assert!(report.issues.len() <= hl7v2::MAX_ISSUES);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let deep = format!("{}PID-1", "/G(0)".repeat(1000));
    assert!(hl7v2::Path::parse(&deep).is_err());
    assert_eq!(msg.get(deep.as_str()), None);
    let deep = format!("{}PID-1", "/G".repeat(20));
    assert_eq!(msg.get(deep.as_str()), None);
}

#[test]
fn every_segment_path_leads_back_to_its_segment() {
    let data = crate::support::hl7_data();
    let mut files = corpus();
    files.extend(crate::support::files(&data.join("bad-inputs"), ""));
    let mut checked = 0;
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        let msg = Message::parse(&bytes);
        let tree = msg.group_tree();
        assert_eq!(
            tree.segments(&msg).count(),
            msg.segment_count(),
            "{}",
            file.display()
        );
        let addressable = msg.segments().all(|s| {
            s.id_bytes().len() == 3
                && s.id_bytes()
                    .iter()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        });
        for placed in tree.segments(&msg).filter(|_| addressable) {
            let path = hl7v2::Path::parse(&format!("{}-1", placed.path())).unwrap();
            let found = msg.segment_at(&path).map(|s| s.index());
            assert_eq!(
                found,
                Some(placed.segment.index()),
                "{}: {path}",
                file.display()
            );
            checked += 1;
        }
    }
    assert!(checked > 8000, "{checked}");
}

#[test]
fn every_structure_of_every_version_builds_a_tree() {
    // An MSH-only message of each structure: placement works over every compiled structure (each has at most
    // 128 distinct segments, which the placement's bit sets assume).
    for v in Version::ALL {
        for s in v.definitions().structures() {
            let (kind, event) = s.id.split_once('_').unwrap_or((&s.id, ""));
            let text = format!(
                "MSH|^~\\&|A|B|C|D|20240101||{kind}^{event}^{}|1|P|{}\rZZZ|1\r",
                s.id,
                v.as_str()
            );
            let msg = Message::parse(text.as_bytes());
            let tree = msg.group_tree();
            assert_eq!(tree.structure_id(), Some(&*s.id), "{v} {}", s.id);
            assert_eq!(tree.path_of(0).as_deref(), Some("/MSH(0)"), "{v} {}", s.id);
            assert_eq!(tree.unexpected().len(), 1);
        }
    }
}

#[test]
fn group_steps_are_the_group_steps_of_the_path() {
    // `group_steps` gives what `path_of` writes, its segment step left out, for every segment of the corpora and
    // of the crash inputs (and nothing past the last segment).
    let data = crate::support::hl7_data();
    let mut files = corpus();
    files.extend(crate::support::files(&data.join("bad-inputs"), ""));
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        let msg = Message::parse(&bytes);
        let tree = msg.group_tree();
        for i in 0..=msg.segment_count() {
            let path = tree.path_of(i).unwrap_or_default();
            let mut written: Vec<String> = path
                .split('/')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            written.pop();
            let steps: Vec<String> = tree
                .group_steps(i)
                .iter()
                .map(|(name, rep)| format!("{name}({rep})"))
                .collect();
            assert_eq!(steps, written, "{} segment {i}", file.display());
        }
    }
}
