//! `[validation]`: what `off`, `warn` and `reject` do with a message that does not validate.

use crate::{Harness, msa};
use interface::{EngineConfig, Status};

/// A small ADT^A01 that validates under 2.5.1, with `pid` as its PID segment.
fn adt(control_id: &str, pid: &str) -> Vec<u8> {
    format!(
        "MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240101120000||ADT^A01^ADT_A01|{control_id}|P|2.5.1\r\
         EVN|A01|20240101120000\r{pid}\rPV1|1|I\r"
    )
    .into_bytes()
}

const GOOD_PID: &str = "PID|1||12345^^^HOSP^MR||DOE^JOHN||19800101|M";
/// PID-5 (patient name) is required.
const NAMELESS_PID: &str = "PID|1||12345^^^HOSP^MR||||19800101|M";

/// A route to a directory inside the harness, so that a test can see what was routed.
fn with_dir_route(dir: &std::path::Path, validation: &str) -> String {
    format!(
        "{validation}\n[[route]]\nname = \"archive\"\ndir = {:?}\n",
        dir.to_str().unwrap()
    )
}

#[tokio::test]
async fn reject_answers_ae_with_err_at_the_missing_field_and_stores_the_message() {
    let out = tempfile::tempdir().unwrap();
    let h = Harness::start(&with_dir_route(
        out.path(),
        "[validation]\nmode = \"reject\"",
    ))
    .await;
    let mut c = h.client().await;
    let raw = adt("INV-1", NAMELESS_PID);
    let ack = c.send(&raw).await.unwrap();
    assert_eq!(msa(&ack), ("AE".into(), "INV-1".into()));
    let ack = hl7v2::Message::parse(&ack);
    let errs: Vec<_> = (1..).map_while(|n| ack.find_segment(b"ERR", n)).collect();
    assert_eq!(errs.len(), 1, "one ERR per error issue");
    // ERR-2 (ERL): PID, its first occurrence, field 5; ERR-3: table 0357 code 101; ERR-4: error.
    assert_eq!(ack.get("ERR-2-1").as_deref(), Some("PID"));
    assert_eq!(ack.get("ERR-2-2").as_deref(), Some("1"));
    assert_eq!(ack.get("ERR-2-3").as_deref(), Some("5"));
    assert_eq!(ack.get("ERR-3-1").as_deref(), Some("101"));
    assert_eq!(ack.get("ERR-4").as_deref(), Some("E"));
    assert!(ack.get("MSA-3").unwrap().contains("1 error(s)"));

    // Stored byte for byte, marked rejected, not routed.
    let stored = h.engine.get(h.id_of("INV-1")).unwrap().unwrap();
    assert_eq!(stored.raw, raw);
    assert_eq!(stored.summary.status, Status::Rejected);
    assert!(stored.deliveries.is_empty());
    assert_eq!(
        stored.summary.note.as_deref(),
        Some("validation: 1 error(s), 0 warning(s)")
    );
    assert_eq!(h.engine.stats().rejected, 1);

    // A valid message is accepted and routed as before.
    let ack = c.send(&adt("OK-1", GOOD_PID)).await.unwrap();
    assert_eq!(msa(&ack), ("AA".into(), "OK-1".into()));
    let id = h.id_of("OK-1");
    h.wait_status(id, Status::Delivered).await;
    assert_eq!(
        std::fs::read_dir(out.path()).unwrap().count(),
        1,
        "only the valid message was routed"
    );
    h.stop().await;
}

#[tokio::test]
async fn off_by_default_answers_aa_as_before() {
    let h = Harness::start("").await;
    assert_eq!(
        EngineConfig::from_toml("").unwrap().validation.mode,
        interface::ValidationMode::Off
    );
    let mut c = h.client().await;
    let ack = c.send(&adt("OFF-1", NAMELESS_PID)).await.unwrap();
    assert_eq!(msa(&ack), ("AA".into(), "OFF-1".into()));
    assert!(
        hl7v2::Message::parse(&ack)
            .find_segment(b"ERR", 1)
            .is_none()
    );
    let stored = h.engine.get(h.id_of("OFF-1")).unwrap().unwrap();
    assert_eq!(stored.summary.status, Status::Stored);
    assert_eq!(stored.summary.note, None);
    h.stop().await;
}

#[tokio::test]
async fn warn_accepts_and_notes_the_issues() {
    let h = Harness::start("[validation]\nmode = \"warn\"\n").await;
    let mut c = h.client().await;
    let ack = c.send(&adt("W-1", NAMELESS_PID)).await.unwrap();
    assert_eq!(msa(&ack), ("AA".into(), "W-1".into()));
    let stored = h.engine.get(h.id_of("W-1")).unwrap().unwrap();
    assert_eq!(stored.summary.status, Status::Stored);
    assert_eq!(
        stored.summary.note.as_deref(),
        Some("validation: 1 error(s), 0 warning(s)")
    );
    h.stop().await;
}

#[tokio::test]
async fn rule_overrides_apply_by_message_type_and_sender() {
    let config = "[validation]\nmode = \"reject\"\n\
        [[validation.rule]]\nrule = \"required-field\"\nseverity = \"warning\"\nmessage_type = \"ADT^A01\"\n\
        [[validation.rule]]\nrule = \"required-field\"\nseverity = \"error\"\nsender = \"OTHER\"\n";
    let h = Harness::start(config).await;
    let mut c = h.client().await;
    // ADT^A01 from LAB@HOSP: the required field is a warning for this type, and the sender rule does not match.
    let ack = c.send(&adt("R-1", NAMELESS_PID)).await.unwrap();
    assert_eq!(msa(&ack), ("AA".into(), "R-1".into()));
    // From OTHER, the later matching rule wins: an error again.
    let other = String::from_utf8(adt("R-2", NAMELESS_PID))
        .unwrap()
        .replace("|LAB|HOSP|", "|OTHER||");
    let ack = c.send(other.as_bytes()).await.unwrap();
    assert_eq!(msa(&ack), ("AE".into(), "R-2".into()));
    h.stop().await;

    let err = EngineConfig::from_toml(
        "[[validation.rule]]\nrule = \"no-such-rule\"\nseverity = \"error\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("no-such-rule") && err.contains("table-value"),
        "{err}"
    );
    assert!(EngineConfig::from_toml("[validation]\nmode = \"maybe\"\n").is_err());
}

#[tokio::test]
async fn reject_caps_err_segments_and_answers_enhanced_mode_with_ce() {
    let h = Harness::start("[validation]\nmode = \"reject\"\n").await;
    let mut c = h.client().await;
    // 60 OBX segments, each missing its required OBX-3 and OBX-11: 120 errors.
    let mut raw = adt("CAP-1", GOOD_PID);
    for i in 1..=60 {
        raw.extend_from_slice(format!("OBX|{i}\r").as_bytes());
    }
    let ack = c.send(&raw).await.unwrap();
    assert_eq!(msa(&ack).0, "AE");
    let ack = hl7v2::Message::parse(&ack);
    let errs = (1..).map_while(|n| ack.find_segment(b"ERR", n)).count();
    assert_eq!(errs, 50);
    let text = ack.get("MSA-3").unwrap().into_owned();
    assert!(
        text.contains("120 error(s)") && text.contains("first 50"),
        "{text}"
    );

    // Enhanced mode (MSH-15/16 valued): CE.
    let enhanced = String::from_utf8(adt("ENH-1", NAMELESS_PID))
        .unwrap()
        .replace("|P|2.5.1\r", "|P|2.5.1|||AL|AL\r");
    let ack = c.send(enhanced.as_bytes()).await.unwrap();
    assert_eq!(msa(&ack), ("CE".into(), "ENH-1".into()));
    h.stop().await;
}

#[tokio::test]
async fn a_header_without_type_or_control_id_is_refused_and_kept_whatever_the_mode() {
    // Validation is off: the required header fields are checked anyway, since nothing can route, deduplicate or
    // acknowledge a message without them.
    let h = Harness::start("").await;
    let mut c = h.client().await;
    for (raw, missing) in [
        (&b"MSH|"[..], vec!["9", "10"]),
        (
            &b"MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240101||||P|2.5.1\r"[..],
            vec!["9", "10"],
        ),
        (
            &b"MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240101||ADT^A01|| |P|2.5.1\r"[..],
            vec!["10"],
        ),
    ] {
        let ack = c.send(raw).await.unwrap();
        let ack = hl7v2::Message::parse(&ack);
        assert_eq!(
            ack.get("MSA-1").as_deref(),
            Some("AR"),
            "{}",
            String::from_utf8_lossy(raw)
        );
        let fields: Vec<String> = (1..)
            .map_while(|n| ack.find_segment(b"ERR", n))
            .filter(|e| e.field(2).is_some_and(|f| f.text().starts_with("MSH")))
            .map(|e| {
                e.field(2)
                    .unwrap()
                    .component(3)
                    .unwrap()
                    .text()
                    .into_owned()
            })
            .collect();
        assert_eq!(fields, missing, "ERR-2 points at each missing field");
    }
    // All three kept, marked rejected.
    let page = h
        .engine
        .list(&interface::Query {
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(page.items.len(), 3);
    for item in &page.items {
        let m = h.engine.get(item.id).unwrap().unwrap();
        assert_eq!(m.summary.status, Status::Rejected);
        assert!(
            m.summary
                .note
                .as_deref()
                .is_some_and(|n| n.contains("MSH-10")),
            "{:?}",
            m.summary.note
        );
    }
    assert_eq!(h.engine.stats().rejected, 3);
    h.stop().await;
}
