//! Expectations read against the guide's rows (ORU_R01 message map; PID[Patient], OBR[DiagnosticReport],
//! OBX[Observation], CWE[CodeableConcept], CQ/NM[Quantity]), not produced by the converter and accepted.

use crate::support::hl7_data;
use serde_json::Value;

fn convert(text: &str) -> Value {
    convert_with_notes(text).0
}

/// The Bundle and the conversion report's notes.
fn convert_with_notes(text: &str) -> (Value, Vec<v2fhir::Note>) {
    let bytes = text.replace('\n', "\r");
    let msg = hl7v2::Message::parse(bytes.as_bytes());
    let out = v2fhir::convert(&msg, &v2fhir::Options::default()).unwrap();
    (serde_json::from_slice(&out.json).unwrap(), out.notes)
}

fn resources<'v>(b: &'v Value, ty: &str) -> Vec<&'v Value> {
    b["entry"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["resource"])
        .filter(|r| r["resourceType"] == ty)
        .collect()
}

/// The entry URL of a resource, checked to be in the Bundle.
fn url_of(b: &Value, r: &Value) -> String {
    let url = format!("urn:uuid:{}", r["id"].as_str().unwrap());
    assert!(
        b["entry"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["fullUrl"] == *url)
    );
    url
}

const ORU: &str = "MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240315143000+0100||ORU^R01^ORU_R01|M42|P|2.5.1
PID|1||12345^^^HOSP^MR||DOE^JANE||19800315|F
OBR|1|PL1|FL1|24331-1^Lipid panel^LN|||20240315120000+0100
OBX|1|NM|2093-3^Cholesterol^LN||182|mg/dL^mg/dL^UCUM|<200||||F
OBX|2|NM|2571-8^Triglyceride^LN||150|mg/dL^mg/dL^UCUM|||||F
";

#[test]
fn oru_r01_by_the_guide() {
    let b = convert(ORU);
    assert_eq!(b["type"], "message");
    // MSH-10 → Bundle.identifier.value; MSH-7 → Bundle.timestamp (instant).
    assert_eq!(b["identifier"]["value"], "M42");
    assert_eq!(b["timestamp"], "2024-03-15T14:30:00+01:00");
    let header = &b["entry"][0]["resource"];
    assert_eq!(header["resourceType"], "MessageHeader");
    // MSH-9.2 → MessageHeader.eventCoding (HL7 table 0003).
    assert_eq!(header["eventCoding"]["code"], "R01");
    assert_eq!(
        header["eventCoding"]["system"],
        "http://terminology.hl7.org/CodeSystem/v2-0003"
    );

    // MSH[Provenance-Source]: MSH-9 → activity.coding.display = "message - "+MSG.1+"^"+MSG.2+"^"+MSG.3, the
    // components of MSH-9 (whose data type is MSG), not fields 1-3 of the MSH.
    let provenance = resources(&b, "Provenance");
    assert_eq!(provenance.len(), 1);
    assert_eq!(
        provenance[0]["activity"]["coding"][0]["display"],
        "message - ORU^R01^ORU_R01"
    );

    let patients = resources(&b, "Patient");
    assert_eq!(patients.len(), 1);
    let p = patients[0];
    assert_eq!(p["name"][0]["family"], "DOE");
    assert_eq!(p["name"][0]["given"][0], "JANE");
    assert_eq!(p["gender"], "female"); // AdministrativeSex map: F → female
    assert_eq!(p["birthDate"], "1980-03-15");
    assert_eq!(p["identifier"][0]["value"], "12345");
    let patient_url = url_of(&b, p);

    // One Observation per OBX (OBX-5 does not repeat), each with its subject.
    let obs = resources(&b, "Observation");
    assert_eq!(obs.len(), 2, "{obs:#?}");
    let chol = obs
        .iter()
        .find(|o| o["code"]["coding"][0]["code"] == "2093-3")
        .expect("cholesterol");
    assert_eq!(chol["code"]["coding"][0]["system"], "http://loinc.org"); // CWE.3 LN → LOINC's URI
    assert_eq!(chol["code"]["coding"][0]["display"], "Cholesterol");
    assert_eq!(chol["valueQuantity"]["value"], 182);
    assert_eq!(chol["status"], "final"); // OBX-11 F
    assert_eq!(chol["subject"]["reference"], patient_url.as_str());

    // OBR → one DiagnosticReport, coded by OBR-4.
    let reports = resources(&b, "DiagnosticReport");
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0]["code"]["coding"][0]["code"], "24331-1");
}

#[test]
fn two_orders_make_two_reports_and_unmapped_fields_are_reported() {
    let text = format!(
        "{ORU}OBR|2|PL2|FL2|57021-8^CBC^LN\nOBX|1|NM|718-7^Hemoglobin^LN||13.2|g/dL^g/dL^UCUM|||||F\nZZZ|1|x\n"
    );
    let bytes = text.replace('\n', "\r");
    let msg = hl7v2::Message::parse(bytes.as_bytes());
    let out = v2fhir::convert(&msg, &v2fhir::Options::default()).unwrap();
    let b: Value = serde_json::from_slice(&out.json).unwrap();
    assert_eq!(resources(&b, "DiagnosticReport").len(), 2);
    assert_eq!(resources(&b, "Observation").len(), 3);
    // The Z-segment has no map: reported with its path, not silently dropped.
    assert!(out.notes.iter().any(|n| n.path == "ZZZ"), "{:?}", out.notes);
    // A well-formed message gives no warning: MSH-10's identifier system is left to the implementer by the guide
    // (`/to be determined by the implementer/`), not filled with the control id.
    let warnings: Vec<_> = out
        .notes
        .iter()
        .filter(|n| n.severity == v2fhir::Severity::Warning)
        .collect();
    assert!(warnings.is_empty(), "{warnings:?}");
}

/// A terminology that records what it is asked: the CBC panel's code is not valid, the interpretation `N` is.
#[derive(Default)]
struct Recording {
    asked: std::sync::Mutex<Vec<(String, String)>>,
}

impl v2fhir::CodeChecker for Recording {
    fn check(&self, system: &str, code: &str) -> v2fhir::CodeCheck {
        self.asked
            .lock()
            .unwrap()
            .push((system.to_string(), code.to_string()));
        match code {
            "58410-2" => v2fhir::CodeCheck::Invalid {
                message: "unknown code".into(),
            },
            "N" => v2fhir::CodeCheck::Valid {
                display: Some("Normal".into()),
            },
            _ if code.ends_with("-1") => v2fhir::CodeCheck::Valid {
                display: Some(format!("display of {code}")),
            },
            _ => v2fhir::CodeCheck::NotLoaded,
        }
    }
}

#[test]
fn a_code_is_asked_once_per_message_and_its_verdict_applies_to_every_coding() {
    // The bench ORU^R01: seven Observations interpreted `N`, the panel's code in two resources.
    let bytes = include_bytes!("../../../../bench/hl7v2/messages/oru_r01.hl7");
    let msg = hl7v2::Message::parse(bytes);
    let checker = Recording::default();
    let options = v2fhir::Options {
        checker: Some(&checker),
        ..Default::default()
    };
    let out = v2fhir::convert(&msg, &options).unwrap();
    let asked = checker.asked.lock().unwrap().clone();
    for (i, pair) in asked.iter().enumerate() {
        assert!(!asked[..i].contains(pair), "{pair:?} asked twice");
    }
    assert!(asked.iter().any(|(_, c)| c == "N"), "{asked:?}");
    let b: Value = serde_json::from_slice(&out.json).unwrap();
    let normal = resources(&b, "Observation")
        .iter()
        .filter(|o| o["interpretation"][0]["coding"][0]["display"] == "Normal")
        .count();
    assert_eq!(normal, 7, "every `N` gets the display asked about once");
    // The invalid code is reported for each resource that carries it, as it was when each coding was asked.
    let panel: Vec<&str> = out
        .notes
        .iter()
        .filter(|n| n.message.contains("\"58410-2\" is not valid"))
        .map(|n| n.path.as_str())
        .collect();
    assert!(panel.len() >= 2, "{panel:?}");
    // The Bundle alone is the same bytes.
    assert_eq!(v2fhir::convert_json(&msg, &options).unwrap(), out.json);
}

#[test]
fn a_message_of_many_distinct_codes_gets_every_verdict() {
    // 150 results of distinct codes (more than the conversion keeps verdicts for), each interpreted `N`.
    let mut text = String::from(
        "MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240315150000||ORU^R01^ORU_R01|M1|P|2.5\rPID|1||MRN1^^^HOSP^MR\r\
         OBR|1|ORD1|FIL1|58410-2^CBC panel^LN\r",
    );
    for i in 0..150 {
        text.push_str(&format!(
            "OBX|{}|NM|{}-1^^LN||7.5|||N|||F\r",
            i + 1,
            10_000 + i
        ));
    }
    let msg = hl7v2::Message::parse(text.as_bytes());
    let checker = Recording::default();
    let options = v2fhir::Options {
        checker: Some(&checker),
        ..Default::default()
    };
    let b: Value = serde_json::from_slice(&v2fhir::convert_json(&msg, &options).unwrap()).unwrap();
    let obs = resources(&b, "Observation");
    assert_eq!(obs.len(), 150);
    for o in obs {
        let code = o["code"]["coding"][0]["code"].as_str().unwrap();
        assert_eq!(
            o["code"]["coding"][0]["display"],
            format!("display of {code}")
        );
        assert_eq!(o["interpretation"][0]["coding"][0]["display"], "Normal");
    }
    let asked = checker.asked.lock().unwrap();
    let n = asked.iter().filter(|(_, c)| c == "N").count();
    assert_eq!(n, 1, "`N`, among the first codes seen, is asked once");
}

/// A terminology that knows LOINC's 2093-3 only (the converter's caller implements the checker over its own).
struct OneLoincCode;

impl v2fhir::CodeChecker for OneLoincCode {
    fn check(&self, system: &str, code: &str) -> v2fhir::CodeCheck {
        match (system, code) {
            ("http://loinc.org", "2093-3") => v2fhir::CodeCheck::Valid {
                display: Some("Cholesterol [Mass/volume] in Serum or Plasma".into()),
            },
            ("http://loinc.org", _) => v2fhir::CodeCheck::Invalid {
                message: "unknown code".into(),
            },
            _ => v2fhir::CodeCheck::NotLoaded,
        }
    }
}

#[test]
fn codes_are_checked_kept_as_sent_and_reported() {
    // The triglyceride OBX is sent with a made-up LOINC code and no display; the cholesterol one is valid.
    let text = ORU
        .replace("2571-8^Triglyceride^LN", "9999-9^^LN")
        .replace("2093-3^Cholesterol^LN", "2093-3^^LN")
        .replace('\n', "\r");
    let msg = hl7v2::Message::parse(text.as_bytes());
    let checker = OneLoincCode;
    let options = v2fhir::Options {
        checker: Some(&checker),
        ..Default::default()
    };
    let out = v2fhir::convert(&msg, &options).unwrap();
    let b: Value = serde_json::from_slice(&out.json).unwrap();
    let obs = resources(&b, "Observation");
    let chol = obs
        .iter()
        .find(|o| o["code"]["coding"][0]["code"] == "2093-3")
        .unwrap();
    // A valid code without a display gets the code system's.
    assert_eq!(
        chol["code"]["coding"][0]["display"],
        "Cholesterol [Mass/volume] in Serum or Plasma"
    );
    // The invalid code is kept as sent, never dropped or guessed...
    assert!(
        obs.iter()
            .any(|o| o["code"]["coding"][0]["code"] == "9999-9")
    );
    // ... and reported, in the report and as an OperationOutcome entry of the Bundle.
    assert!(
        out.notes
            .iter()
            .any(|n| n.message.contains("9999-9") && n.severity == v2fhir::Severity::Warning)
    );
    let oo = resources(&b, "OperationOutcome");
    assert_eq!(oo.len(), 1);
    assert!(
        oo[0]["issue"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["diagnostics"].as_str().unwrap().contains("9999-9"))
    );
    // Without a checker nothing is said about codes.
    let plain = v2fhir::convert(&msg, &v2fhir::Options::default()).unwrap();
    assert!(!plain.notes.iter().any(|n| n.message.contains("9999-9")));
}

/// The guide's typos that the generator corrects (`ERRATA` in xtask/src/codegen_v2fhir.rs), each read against its
/// row: PID-19's SSN system, ORC-1's business event system, and VXU_V04's condition for an order's OBX.
#[test]
fn the_guides_corrected_rows_map_as_intended() {
    let vxu = "MSH|^~\\&|EHR|CLINIC|IIS|STATE|20210818112600-0400||VXU^V04^VXU_V04|V7|P|2.5.1
PID|1||P77^^^CLINIC^MR||ROE^ANN||20150101|F|||||||||||123-45-6789
ORC|RE|4422^CLINIC|13696^CLINIC
RXA|0|1|20210818||49281021588^TENIVAC^NDC|0.5|mL^mL^UCUM||00^New Record^NIP001
OBX|1|CE|30963-3^Vaccine Funding Source^LN|1|PHC70^Private^CDCPHINVS||||||F
OBX|2|DT|29769-7^Date Vis Presented^LN|2|20210818||||||F
";
    let b = convert(vxu);
    // PID-19 → identifier.system "http://hl7.org/fhir/sid/us-ssn" (published with a trailing dot).
    let patients = resources(&b, "Patient");
    assert_eq!(patients.len(), 1);
    let ssn: Vec<_> = patients[0]["identifier"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["value"] == "123-45-6789")
        .collect();
    assert_eq!(ssn.len(), 1, "{:#}", patients[0]);
    assert_eq!(ssn[0]["system"], "http://hl7.org/fhir/sid/us-ssn");

    // ORDER.OBSERVATION.OBX: `OBX-5 LST.count LESS THAN OR EQUALS 1 OR OBX-2 IS "NA"` (published with AND, which
    // no single-valued CE or DT result meets) → one Observation per OBX, part of the order's Immunization.
    let immunizations = resources(&b, "Immunization");
    assert_eq!(immunizations.len(), 1);
    let immunization_url = url_of(&b, immunizations[0]);
    let obs = resources(&b, "Observation");
    assert_eq!(obs.len(), 2, "{obs:#?}");
    // ORDER.ORC's reference `Immunization.patient.reference=Patient[1].id` (published as `Immunzation`).
    assert_eq!(
        immunizations[0]["patient"]["reference"],
        url_of(&b, patients[0]).as_str()
    );
    for o in &obs {
        assert_eq!(o["partOf"][0]["reference"], immunization_url.as_str());
        assert_eq!(o["subject"]["reference"], url_of(&b, patients[0]).as_str());
    }
    assert_eq!(obs[0]["code"]["coding"][0]["code"], "30963-3");
    assert_eq!(obs[0]["valueCodeableConcept"]["coding"][0]["code"], "PHC70");
    assert_eq!(obs[1]["valueDateTime"], "2021-08-18");

    // ORC-1 → ServiceRequest's businessEvent extension, a Coding of v2 table 0119's code system (published as its
    // ValueSet URL).
    let b = convert(ORU_WITH_ORC);
    let requests = resources(&b, "ServiceRequest");
    assert_eq!(requests.len(), 1);
    let event = &requests[0]["extension"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["url"] == "http://hl7.org/fhir/StructureDefinition/businessEvent")
        .expect("businessEvent")["extension"][0]["valueCodeableConcept"]["coding"][0];
    assert_eq!(event["code"], "RE");
    assert_eq!(
        event["system"],
        "http://terminology.hl7.org/CodeSystem/v2-0119"
    );
}

const ORU_WITH_ORC: &str =
    "MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240315143000+0100||ORU^R01^ORU_R01|M43|P|2.5.1
PID|1||12345^^^HOSP^MR||DOE^JANE||19800315|F
ORC|RE|PL1|FL1
OBR|1|PL1|FL1|24331-1^Lipid panel^LN|||20240315120000+0100
OBX|1|NM|2093-3^Cholesterol^LN||182|mg/dL^mg/dL^UCUM|<200||||F
";

/// FHIR requires a ServiceRequest's subject and an Immunization's patient (`required-elements.tsv`, from the R4
/// definitions); the ORU_R01 map names none for the ServiceRequest. Each refers to the Patient of its own
/// PATIENT_RESULT group, and the report says so.
#[test]
fn a_required_patient_the_guide_leaves_out_is_the_patient_of_its_group() {
    let two = "MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240315143000+0100||ORU^R01^ORU_R01|M44|P|2.5.1
PID|1||A1^^^HOSP^MR||ALPHA^ANN||19800315|F
ORC|RE|PA|FA
OBR|1|PA|FA|24331-1^Lipid panel^LN
OBX|1|NM|2093-3^Cholesterol^LN||182|mg/dL^mg/dL^UCUM|||||F
PID|2||B2^^^HOSP^MR||BETA^BEN||19700101|M
ORC|RE|PB|FB
OBR|1|PB|FB|57021-8^CBC^LN
OBX|1|NM|718-7^Hemoglobin^LN||13.2|g/dL^g/dL^UCUM|||||F
";
    let bytes = two.replace('\n', "\r");
    let msg = hl7v2::Message::parse(bytes.as_bytes());
    let out = v2fhir::convert(&msg, &v2fhir::Options::default()).unwrap();
    let b: Value = serde_json::from_slice(&out.json).unwrap();
    let patients = resources(&b, "Patient");
    assert_eq!(patients.len(), 2);
    let url_of_family = |family: &str| {
        let p = patients
            .iter()
            .find(|p| p["name"][0]["family"] == family)
            .unwrap();
        url_of(&b, p)
    };
    let requests = resources(&b, "ServiceRequest");
    assert_eq!(requests.len(), 2);
    let by_placer = |placer: &str| {
        requests
            .iter()
            .find(|r| r["identifier"][0]["value"] == placer)
            .unwrap_or_else(|| panic!("no ServiceRequest {placer}: {requests:#?}"))
    };
    assert_eq!(
        by_placer("PA")["subject"]["reference"],
        url_of_family("ALPHA").as_str()
    );
    assert_eq!(
        by_placer("PB")["subject"]["reference"],
        url_of_family("BETA").as_str()
    );
    assert!(
        out.notes
            .iter()
            .any(|n| n.path == "ServiceRequest" && n.message.contains("FHIR requires")),
        "{:?}",
        out.notes
    );

    // Without a patient in the message there is none to refer to: a warning, and no reference made up.
    let no_patient = "MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240315143000+0100||ORM^O01^ORM_O01|M45|P|2.5.1
ORC|NW|PC|FC
OBR|1|PC|FC|24331-1^Lipid panel^LN
";
    let b = convert(no_patient);
    let requests = resources(&b, "ServiceRequest");
    assert_eq!(requests.len(), 1);
    assert!(requests[0].get("subject").is_none());
    let outcome = resources(&b, "OperationOutcome");
    assert!(
        outcome[0]["issue"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["diagnostics"]
                .as_str()
                .unwrap()
                .starts_with("ServiceRequest.subject: FHIR requires the patient")),
        "{outcome:#?}"
    );
}

/// XTN[ContactPoint], with the generator's errata: a number without an equipment type is a phone (XTN.1 and XTN.7
/// are telephone numbers by v2's definition), an address in XTN.4 without one is an email, a cellular phone (CP) is
/// a phone; the use comes from XTN.2 (TelecommunicationUseCode). The guide's rows for an empty XTN.3 apply although
/// their own component is empty.
#[test]
fn telecommunication_numbers_get_their_system() {
    let adt = "MSH|^~\\&|A|B|C|D|20240101120000+0100||ADT^A01^ADT_A01|T1|P|2.5.1
PID|1||X1^^^H^MR||DOE^J||19800101|M|||||555-1234~^NET^^j@x.org~^PRN^PH^^^555^7654321~^ORN^CP^^^555^1112222
";
    let b = convert(adt);
    let patient = resources(&b, "Patient")[0];
    let telecom = patient["telecom"].as_array().unwrap();
    let by_value = |v: &str| {
        telecom
            .iter()
            .find(|t| t["value"] == v)
            .unwrap_or_else(|| panic!("no ContactPoint {v}: {telecom:#?}"))
    };
    assert_eq!(by_value("555-1234")["system"], "phone");
    assert_eq!(by_value("j@x.org")["system"], "email");
    assert_eq!(by_value("555 7654321")["system"], "phone");
    assert_eq!(by_value("555 7654321")["use"], "home");
    assert_eq!(by_value("555 1112222")["system"], "phone");
    // Every ContactPoint with a value has its system (FHIR's cpt-2).
    assert!(
        telecom
            .iter()
            .all(|t| t.get("value").is_none() || t.get("system").is_some()),
        "{telecom:#?}"
    );
}

#[test]
fn times_without_an_offset_take_the_configured_zones_offset_at_that_time() {
    // MSH-7 in summer, OBX-14 in winter, PID-7 a date: none with an offset.
    let text = "MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240715143000||ORU^R01^ORU_R01|Z1|P|2.5\n\
                PID|1||12345^^^HOSP^MR||DOE^JANE||19800315|F\n\
                OBR|1|ORD1|FIL1|24331-1^Lipid panel^LN\n\
                OBX|1|NM|2093-3^Cholesterol^LN||182|mg/dL|||||F|||20240115083000\n";
    let bytes = text.replace('\n', "\r");
    let msg = hl7v2::Message::parse(bytes.as_bytes());
    let read = |zone: Option<&v2fhir::TimeZone>| -> (Value, Vec<String>) {
        let out = v2fhir::convert(
            &msg,
            &v2fhir::Options {
                time_zone: zone,
                ..Default::default()
            },
        )
        .unwrap();
        let notes = out.report_json().lines().map(str::to_string).collect();
        (serde_json::from_slice(&out.json).unwrap(), notes)
    };

    // Without a zone: the dateTime keeps its date, the instants are left out, and each is reported.
    let (b, notes) = read(None);
    assert_eq!(b.get("timestamp"), None);
    assert_eq!(resources(&b, "Provenance")[0].get("recorded"), None);
    let obs = resources(&b, "Observation")[0];
    assert_eq!(obs["effectiveDateTime"], "2024-01-15");
    assert!(
        notes.iter().any(|n| n.contains("OBX-14")
            && n.contains("no time zone")
            && n.contains("only its date is kept")),
        "{notes:#?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("MSH-7") && n.contains("instant needs one")),
        "{notes:#?}"
    );

    // Chicago: CDT (-05:00) in July, CST (-06:00) in January; a date stays a date.
    let chicago = v2fhir::time_zone("America/Chicago").unwrap();
    let (b, notes) = read(Some(&chicago));
    assert_eq!(b["timestamp"], "2024-07-15T14:30:00-05:00");
    assert_eq!(
        resources(&b, "Provenance")[0]["recorded"],
        "2024-07-15T14:30:00-05:00"
    );
    let obs = resources(&b, "Observation")[0];
    assert_eq!(obs["effectiveDateTime"], "2024-01-15T08:30:00-06:00");
    assert_eq!(resources(&b, "Patient")[0]["birthDate"], "1980-03-15");
    assert!(
        !notes.iter().any(|n| n.contains("no time zone")),
        "{notes:#?}"
    );
    assert!(v2fhir::time_zone("Mars/Olympus_Mons").is_err());
}

#[test]
fn species_and_breed_make_one_patient_animal_extension() {
    // PID-35 (species) and PID-36 (breed): the guide writes both into `extension[6]`, as the `species` and
    // `breed` parts of one patient-animal extension.
    let mut pid = "PID|1||12345^^^HOSP^MR||REX^BUDDY||20200315|M".to_string();
    pid.push_str(&"|".repeat(26));
    pid.push_str("|448771007^Canis lupus familiaris^SCT|132570004^Golden retriever^SCT");
    let b = convert(&format!(
        "MSH|^~\\&|VET|CLINIC|EHR|CLINIC|20240315143000+0100||ADT^A04^ADT_A01|V1|P|2.5\n\
         EVN|A04|20240315143000+0100\n{pid}\nPV1|1|O\n"
    ));
    let patient = resources(&b, "Patient")[0];
    let animal: Vec<&Value> = patient["extension"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["url"] == "http://hl7.org/fhir/StructureDefinition/patient-animal")
        .collect();
    assert_eq!(animal.len(), 1, "{:#}", patient["extension"]);
    let part = |url: &str| {
        animal[0]["extension"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["url"] == url)
            .unwrap_or_else(|| panic!("no {url} in {:#}", animal[0]))["valueCodeableConcept"]["coding"][0]
            ["code"]
            .clone()
    };
    assert_eq!(part("species"), "448771007");
    assert_eq!(part("breed"), "132570004");
}

#[test]
fn required_elements_the_message_cannot_give_are_marked_absent_not_invented() {
    // A 2.5 message has no network addresses (MSH-24/25 came in 2.7), MSH-7 has no offset and no zone is set,
    // and the second OBX has no OBX-3.
    let text = "MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240715143000||ORU^R01^ORU_R01|A1|P|2.5\n\
                PID|1||12345^^^HOSP^MR||DOE^JANE||19800315|F\n\
                OBR|1|ORD1|FIL1|24331-1^Lipid panel^LN\n\
                OBX|1|NM|2093-3^Cholesterol^LN||182|mg/dL|||||F\n\
                OBX|2|NM|||7|mg/dL|||||F\n";
    let bytes = text.replace('\n', "\r");
    let msg = hl7v2::Message::parse(bytes.as_bytes());
    let out = v2fhir::convert(&msg, &v2fhir::Options::default()).unwrap();
    let b: Value = serde_json::from_slice(&out.json).unwrap();
    let absent = serde_json::json!({"extension": [{
        "url": "http://hl7.org/fhir/StructureDefinition/data-absent-reason",
        "valueCode": "unknown"
    }]});
    let header = resources(&b, "MessageHeader")[0];
    assert_eq!(header["source"]["name"], "LAB");
    assert_eq!(header["source"]["_endpoint"], absent);
    assert_eq!(header["source"].get("endpoint"), None);
    for d in header["destination"].as_array().unwrap() {
        assert_eq!(d["_endpoint"], absent, "{d:#}");
    }
    let provenance = resources(&b, "Provenance")[0];
    assert_eq!(provenance.get("recorded"), None);
    assert_eq!(provenance["_recorded"], absent);
    let obs = resources(&b, "Observation");
    assert_eq!(obs.len(), 2);
    let coded = obs
        .iter()
        .filter(|o| o["code"]["coding"][0]["code"] == "2093-3")
        .count();
    let uncoded: Vec<_> = obs.iter().filter(|o| o["code"] == absent).collect();
    assert_eq!((coded, uncoded.len()), (1, 1), "{obs:#?}");
    assert_eq!(uncoded[0]["valueQuantity"]["value"], 7);
    // Each is in the report.
    let report = out.report_json();
    for at in [
        "source.endpoint",
        "destination.endpoint",
        "recorded",
        "requires code",
    ] {
        assert!(
            report
                .lines()
                .any(|l| l.contains(at) && l.contains("data-absent-reason")),
            "{at}: {report}"
        );
    }

    // An allergy whose AL1-4 gives the reaction's severity and whose AL1-5 gives no manifestation (1..* in R4):
    // one item, marked; with AL1-5, the reaction as sent.
    let allergy = |al1: &str| {
        let b = convert(&format!(
            "MSH|^~\\&|HIS|H|EHR|H|20240315143000+0100||ADT^A01^ADT_A01|AL|P|2.5\n\
             EVN|A01|20240315143000+0100\nPID|1||12345^^^H^MR||DOE^JANE||19800315|F\nPV1|1|I\n{al1}\n"
        ));
        resources(&b, "AllergyIntolerance")[0]["reaction"][0].clone()
    };
    let reaction = allergy("AL1|1|DA|70618^Penicillin^RXNORM|SV");
    assert_eq!(reaction["severity"], "severe");
    assert_eq!(reaction["manifestation"], serde_json::json!([absent]));
    let reaction = allergy("AL1|1|DA|70618^Penicillin^RXNORM|SV|HIVES");
    assert_eq!(
        reaction["manifestation"][0]["text"], "HIVES",
        "{reaction:#}"
    );

    // An acknowledgment's MSH-9 has no trigger event, and event[x] is required.
    let b = convert("MSH|^~\\&|NBS|TN|EHR|H|20240315143000+0100||ACK|C1|P|2.5.1\nMSA|AA|A1\n");
    assert_eq!(resources(&b, "MessageHeader")[0]["eventCoding"], absent);

    // A value the message does give is never marked: MSH-7 with its offset.
    let b = convert(ORU);
    let provenance = resources(&b, "Provenance")[0];
    assert!(provenance["recorded"].is_string(), "{provenance:#}");
    assert_eq!(provenance.get("_recorded"), None);
}

#[test]
fn a_unit_whose_system_has_no_fhir_uri_is_the_units_text() {
    // OBX-6 `beats/min^^ISO`: ISO has no FHIR URI, and a Quantity's code needs its system (FHIR's qty-3).
    let b = convert(
        "MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240315143000+0100||ORU^R01^ORU_R01|U1|P|2.5\n\
         PID|1||12345^^^HOSP^MR||DOE^JANE||19800315|F\n\
         OBR|1|ORD1|FIL1|8867-4^Heart rate^LN\n\
         OBX|1|NM|8867-4^Heart rate^LN||60|beats/min^^ISO|||||F\n\
         OBX|2|NM|2093-3^Cholesterol^LN||182|mg/dL^^UCUM|||||F\n",
    );
    let obs = resources(&b, "Observation");
    let quantity = |code: &str| {
        obs.iter()
            .find(|o| o["code"]["coding"][0]["code"] == code)
            .unwrap()["valueQuantity"]
            .clone()
    };
    let heart = quantity("8867-4");
    assert_eq!(heart["value"], 60);
    assert_eq!(heart["unit"], "beats/min");
    assert_eq!(heart.get("code"), None, "{heart:#}");
    assert_eq!(heart.get("system"), None, "{heart:#}");
    // A unit system FHIR knows keeps its code.
    let chol = quantity("2093-3");
    assert_eq!(chol["code"], "mg/dL");
    assert_eq!(chol["system"], "http://unitsofmeasure.org");
}

#[test]
fn a_medication_orders_unit_codes_without_a_system_are_the_units_text() {
    // RXO-4 and RXO-12 map to a Quantity's `code` through CWE[Code], and the guide writes no system for them.
    let file = hl7_data().join("fhir-converter/RDE-O11-01.hl7");
    let bytes = std::fs::read(&file).unwrap();
    let msg = hl7v2::Message::parse(&bytes);
    let out = v2fhir::convert(&msg, &v2fhir::Options::default()).unwrap();
    let b: Value = serde_json::from_slice(&out.json).unwrap();
    let request = resources(&b, "MedicationRequest")[0];
    // RXO|...|2||caps^capsule|...|10|caps
    let low = &request["dosageInstruction"][0]["doseAndRate"][0]["doseRange"]["low"];
    assert_eq!(
        (&low["value"], &low["unit"]),
        (&Value::from(2), &Value::from("caps")),
        "{low:#}"
    );
    assert_eq!(low.get("code"), None);
    // RXO-3 (the maximum) is empty: the range's high, given only RXO-4's unit, bounds nothing and is left out.
    let range = &request["dosageInstruction"][0]["doseAndRate"][0]["doseRange"];
    assert_eq!(range.get("high"), None, "{range:#}");
    let dispense = &request["dispenseRequest"]["quantity"];
    assert_eq!(dispense["value"], 10);
    assert_eq!(dispense["unit"], "caps");
    assert_eq!(dispense.get("code"), None);
}

#[test]
fn attachment_data_is_base64_whatever_the_v2_encoding() {
    use base64::Engine as _;
    let decode = |v: &Value| {
        base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or_else(|| panic!("no data: {v}")))
            .unwrap_or_else(|e| panic!("{v} is not base64: {e}"))
    };
    // ED.4 says how ED.5 is written: `A` plain text, `Hex`, `Base64` (here with a line break v2 escapes as
    // `\.br\`); an encoding v2 does not define, or data that is not what ED.4 says, is reported and left out.
    let text = |data: &str| {
        format!(
            "MSH|^~\\&|DOCS|HOSP|EHR|HOSP|20240315143000+0100||MDM^T02^MDM_T02|D1|P|2.5\n\
             EVN|T02|20240315143000+0100\n\
             PID|1||12345^^^HOSP^MR||DOE^JANE||19800315|F\n\
             PV1|1|O\n\
             TXA|1|DI|TX|20240315143000+0100|||||||||DOC1||||AU\n\
             OBX|1|ED|11488-4^Consult note^LN||{data}||||||F\n"
        )
    };
    let data_of = |b: &Value| {
        let doc = resources(b, "DocumentReference")[0];
        doc["content"]
            .as_array()
            .unwrap()
            .iter()
            .find_map(|c| c["attachment"].get("data").cloned())
    };
    for (ed, want) in [
        ("^TEXT^^A^Patient is stable.", &b"Patient is stable."[..]),
        ("^AP^octet-stream^Hex^48656C6C6f", b"Hello"),
        ("^AP^PDF^Base64^SGVs\\.br\\bG8=", b"Hello"),
    ] {
        let b = convert(&text(ed));
        let data = data_of(&b).unwrap_or_else(|| panic!("{ed}: no attachment data in {b:#}"));
        assert_eq!(decode(&data), want, "{ed}");
    }
    for ed in [
        "^AP^PDF^Base64^not base64!",
        "^AP^octet-stream^Hex^4G",
        "^AP^PDF^UUENCODE^abc",
    ] {
        let bytes = text(ed).replace('\n', "\r");
        let msg = hl7v2::Message::parse(bytes.as_bytes());
        let out = v2fhir::convert(&msg, &v2fhir::Options::default()).unwrap();
        let b: Value = serde_json::from_slice(&out.json).unwrap();
        assert_eq!(data_of(&b), None, "{ed}: {b:#}");
        assert!(
            out.notes
                .iter()
                .any(|n| n.path.ends_with("ED.5") && n.message.contains("not mapped")),
            "{ed}: {:?}",
            out.notes
        );
    }
    // A note as an attachment (NTE-3 into DocumentReference.content): its text, encoded.
    let file = hl7_data().join("fhir-converter/MDM-T02-01.hl7");
    let bytes = std::fs::read(&file).unwrap();
    let msg = hl7v2::Message::parse(&bytes);
    let out = v2fhir::convert(&msg, &v2fhir::Options::default()).unwrap();
    let b: Value = serde_json::from_slice(&out.json).unwrap();
    assert_eq!(decode(&data_of(&b).unwrap()), b"Antibodies Detected");
}

/// A segment of the given fields (`PV1-45` is field 45), the others empty.
fn segment(id: &str, fields: &[(usize, &str)]) -> String {
    let last = fields.iter().map(|(n, _)| *n).max().unwrap_or(0);
    let mut out = id.to_string();
    for n in 1..=last {
        out.push('|');
        if let Some((_, v)) = fields.iter().find(|(f, _)| *f == n) {
            out.push_str(v);
        }
    }
    out
}

/// The guide's rows for a whole segment or value (element `AL1`, `PID`, `MSG` rather than a field), and the rows
/// whose constant is written into the attribute (`status="finished"`): read against the rows of AL1[AllergyIntolerance],
/// PID[Account], PV1[Encounter], MSG[Coding] and MSH[Provenance-Source].
#[test]
fn constants_for_the_whole_segment_and_in_the_attribute() {
    let text = [
        "MSH|^~\\&|HIS|HOSP|EHR|HOSP|20240315143000+0100||ADT^A03^ADT_A03|A3|P|2.5".to_string(),
        "EVN|A03|20240316100000+0100".to_string(),
        segment(
            "PID",
            &[
                (1, "1"),
                (3, "12345^^^HOSP^MR"),
                (5, "DOE^JANE"),
                (8, "F"),
                (18, "ACC-9"),
            ],
        ),
        segment(
            "PV1",
            &[
                (1, "1"),
                (2, "I"),
                (45, "20240316100000+0100"),
                (52, "777^OTHER^OLIVIA"),
            ],
        ),
        "AL1|1|DA|P^PENICILLIN|MO|RASH".to_string(),
    ]
    .join("\n");
    let b = convert(&text);

    // MSG[Coding]: MSG → display = MSG.1+"^"+MSG.2+"^"+MSG.3 (and MSG.2 → code, system HL7 table 0003).
    let header = &b["entry"][0]["resource"];
    assert_eq!(header["eventCoding"]["display"], "ADT^A03^ADT_A03");
    assert_eq!(header["eventCoding"]["code"], "A03");

    // AL1[AllergyIntolerance]: AL1 → clinicalStatus.coding.code = "active", .system = the clinical status code
    // system (FHIR's ait-1 asks for a clinical status).
    let allergy = resources(&b, "AllergyIntolerance");
    assert_eq!(allergy.len(), 1);
    let status = &allergy[0]["clinicalStatus"]["coding"][0];
    assert_eq!(status["code"], "active");
    assert_eq!(
        status["system"],
        "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical"
    );

    // PID[Account]: PID-18 → identifier; PID → status = "active".
    let account = resources(&b, "Account");
    assert_eq!(account.len(), 1);
    assert_eq!(account[0]["identifier"][0]["value"], "ACC-9");
    assert_eq!(account[0]["status"], "active");

    // PV1[Encounter]: PV1-45 `IF PV1-45 VALUED` → status="finished" (the PV1-2 status row is `IF PV1-45 NOT
    // VALUED`); PV1-52 → participant[5] with type.coding.code="PART" and type.text="Participation".
    let encounter = resources(&b, "Encounter");
    assert_eq!(encounter.len(), 1);
    assert_eq!(encounter[0]["status"], "finished");
    let other = encounter[0]["participant"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"][0]["coding"][0]["code"] == "PART")
        .unwrap_or_else(|| panic!("no PART participant: {:#}", encounter[0]));
    assert_eq!(other["type"][0]["text"], "Participation");
    assert_eq!(
        other["type"][0]["coding"][0]["system"],
        "http://terminology.hl7.org/CodeSystem/v3-ParticipationType"
    );
    let practitioner = other["individual"]["reference"].as_str().unwrap();
    assert!(
        resources(&b, "Practitioner")
            .iter()
            .any(|p| url_of(&b, p) == practitioner && p["name"][0]["family"] == "OTHER")
    );

    // MSH[Provenance-Source]: MSH → entity[1].role = "source" is a constant for an entity whose required `what`
    // only a narrative row names: not applied alone. MSH[Provenance-Transformation] has nothing but constants and
    // narrative: no resource.
    for p in resources(&b, "Provenance") {
        assert!(p.get("entity").is_none(), "{p:#}");
        assert_ne!(
            p["activity"]["coding"][0]["code"], "v2-fhir-transformation",
            "{p:#}"
        );
    }
}

/// ORC[Immunization] ORC-2 → identifier[1].type.coding.code="PLAC" (the constant written into the attribute, with
/// the same constant in the assignment cell), ORC-3 → FILL; RXO[MedicationRequest] RXO → intent="original-order"
/// (a whole-segment row with its constant in the attribute only).
#[test]
fn constants_in_the_attribute_of_order_rows() {
    let vxu = "MSH|^~\\&|EHR|CLINIC|IIS|STATE|20210818112600+0200||VXU^V04^VXU_V04|V1|P|2.5.1
PID|1||12345^^^HOSP^MR||DOE^JANE||20200101|F
ORC|RE|P-4422^EHR|F-13696^IIS
RXA|0|1|20210818||08^HepB^CVX|0.5|mL^mL^UCUM";
    let b = convert(vxu);
    let imm = resources(&b, "Immunization");
    assert_eq!(imm.len(), 1);
    let ids = imm[0]["identifier"].as_array().unwrap();
    let type_of = |value: &str| {
        let id = ids
            .iter()
            .find(|i| i["value"] == value)
            .unwrap_or_else(|| panic!("no identifier {value}: {:#}", imm[0]));
        id["type"]["coding"][0].clone()
    };
    assert_eq!(type_of("P-4422")["code"], "PLAC");
    assert_eq!(
        type_of("P-4422")["system"],
        "http://terminology.hl7.org/CodeSystem/v2-0203"
    );
    assert_eq!(type_of("F-13696")["code"], "FILL");

    let orm = "MSH|^~\\&|EHR|CLINIC|PHARM|HOSP|20240315143000+0100||ORM^O01^ORM_O01|O1|P|2.5
PID|1||12345^^^HOSP^MR||DOE^JANE||19800315|F
ORC|NW|ORD-1
RXO|00093-7180^Amoxicillin 500 mg^NDC|500||mg^mg^UCUM";
    let b = convert(orm);
    let requests = resources(&b, "MedicationRequest");
    assert_eq!(requests.len(), 1, "{b:#}");
    assert_eq!(requests[0]["intent"], "original-order");
}

/// Extensions of a primitive go in its `_` member, as FHIR JSON writes them: PID[Patient] PID-7 `IF PID-7 LENGTH
/// GREATER THAN 8` → birthDate.extension[1] = patient-birthTime with the whole time; FN[HumanName] FN.2-FN.5 →
/// family.extension = humanname-own-prefix, -own-name, -partner-prefix, -partner-name.
#[test]
fn extensions_of_primitives_go_in_their_underscore_member() {
    let patient = |pid7: &str| {
        let text = format!(
            "MSH|^~\\&|HIS|HOSP|EHR|HOSP|20240315143000+0100||ADT^A01^ADT_A01|A1|P|2.5\n\
             PID|1||12345^^^HOSP^MR||de Jong-van der Berg&de&Jong&van der&Berg^ANNA||{pid7}|F"
        );
        resources(&convert(&text), "Patient")[0].clone()
    };
    let p = patient("198003150815+0100");
    assert_eq!(p["birthDate"], "1980-03-15");
    let birth_time = &p["_birthDate"]["extension"];
    assert_eq!(birth_time.as_array().map(Vec::len), Some(1), "{p:#}");
    assert_eq!(
        birth_time[0]["url"],
        "http://hl7.org/fhir/StructureDefinition/patient-birthTime"
    );
    assert_eq!(birth_time[0]["valueDateTime"], "1980-03-15T08:15:00+01:00");
    // A date alone has no birth time.
    assert!(patient("19800315").get("_birthDate").is_none());

    let name = &p["name"][0];
    assert_eq!(name["family"], "de Jong-van der Berg");
    let parts: Vec<(&str, &str)> = name["_family"]["extension"]
        .as_array()
        .unwrap_or_else(|| panic!("no family extensions: {name:#}"))
        .iter()
        .map(|e| {
            (
                e["url"].as_str().unwrap(),
                e["valueString"].as_str().unwrap(),
            )
        })
        .collect();
    let base = "http://hl7.org/fhir/StructureDefinition/humanname-";
    assert_eq!(
        parts,
        [
            (&*format!("{base}own-prefix"), "de"),
            (&*format!("{base}own-name"), "Jong"),
            (&*format!("{base}partner-prefix"), "van der"),
            (&*format!("{base}partner-name"), "Berg"),
        ]
    );
}

/// The rows of the generator's errata of session 25, each read in its output: OBX-10's extension `url` (published
/// `uri`), ORC-9's `valueDateTime` (`valuedateTime`), MSH-7's `occurredDateTime` (`occurred`), DLN.1's identifier
/// type `system` (`sytem`), PR1-8's function `system` (`uri`). And a row whose path names no element (OBX-5
/// `valueSampedData`, still as published) is reported, not silently dropped.
#[test]
fn the_guides_misspelt_paths_corrected_map_as_intended() {
    let oru = "MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240315143000+0100||ORU^R01^ORU_R01|M44|P|2.5.1
PID|1||12345^^^HOSP^MR||DOE^JANE||19800315|F||||||||||||D1234567^MA^20300101
ORC|RE|PL1|FL1||||||20240315120000+0100
OBR|1|PL1|FL1|24331-1^Lipid panel^LN|||20240315120000+0100
OBX|1|NM|2093-3^Cholesterol^LN||182|mg/dL^mg/dL^UCUM|<200|H||A|F";
    let b = convert(oru);
    // MSH[Provenance-Source] MSH-7 → occurredDateTime.
    let provenance = resources(&b, "Provenance");
    assert!(
        provenance
            .iter()
            .any(|p| p["occurredDateTime"] == "2024-03-15T14:30:00+01:00"),
        "{provenance:#?}"
    );
    // PID-20 through DLN[Identifier]: DLN.1 → value, type.coding.code "DL", type.coding.system v2 table 0203.
    let patient = resources(&b, "Patient")[0];
    let licence = patient["identifier"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["value"] == "D1234567")
        .unwrap_or_else(|| panic!("no licence: {patient:#}"));
    assert_eq!(licence["type"]["coding"][0]["code"], "DL");
    assert_eq!(
        licence["type"]["coding"][0]["system"],
        "http://terminology.hl7.org/CodeSystem/v2-0203"
    );
    // ORC-9 → extension[2] businessEvent, with its `date` extension's valueDateTime.
    let request = resources(&b, "ServiceRequest")[0];
    let date = request["extension"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["url"] == "http://hl7.org/fhir/StructureDefinition/businessEvent")
        .flat_map(|e| e["extension"].as_array().unwrap())
        .find(|e| e["url"] == "date")
        .unwrap_or_else(|| panic!("no business event date: {request:#}"));
    assert_eq!(date["valueDateTime"], "2024-03-15T12:00:00+01:00");
    // OBX-10 → extension[2] observation-nature-of-abnormal-test, its value through NatureOfAbnormalTesting.
    let obs = resources(&b, "Observation")[0];
    let nature = &obs["extension"][0];
    assert_eq!(
        nature["url"],
        "http://hl7.org/fhir/StructureDefinition/observation-nature-of-abnormal-test"
    );
    assert_eq!(nature["valueCodeableConcept"]["coding"][0]["code"], "A");

    // PR1-8 → performer[1]: the anesthesiologist, function SNOMED CT 88189002.
    let adt = "MSH|^~\\&|HIS|HOSP|EHR|HOSP|20240315143000+0100||ADT^A01^ADT_A01|A9|P|2.5
PID|1||12345^^^HOSP^MR||DOE^JANE||19800315|F
PV1|1|I
PR1|1||80146002^Appendectomy^SCT||20240315120000+0100|||555^GAS^ANNE";
    let b = convert(adt);
    let procedure = resources(&b, "Procedure")[0];
    let function = &procedure["performer"][0]["function"]["coding"][0];
    assert_eq!(function["code"], "88189002");
    assert_eq!(function["system"], "http://snomed.info/sct");

    // OBX-5 of an `NA` (numeric array) result → `valueSampedData`, a name Observation does not have: reported.
    let na = "MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240315143000+0100||ORU^R01^ORU_R01|M45|P|2.5.1
PID|1||12345^^^HOSP^MR||DOE^JANE||19800315|F
OBR|1|PL1|FL1|24331-1^Lipid panel^LN
OBX|1|NA|2093-3^Cholesterol^LN||182^190|mg/dL^mg/dL^UCUM||||||F";
    let (_, notes) = convert_with_notes(na);
    assert!(
        notes.iter().any(|n| n.path == "OBX-5"
            && n.message
                == "OBX-5: valueSampedData is not an element of FHIR Observation; not mapped"),
        "{notes:#?}"
    );
}

/// HD[MessageHeader.source-endpoint] and HD[MessageHeader.destination-endpoint] are written against the backbone
/// elements MessageHeader.source and .destination (their rows name `name` and `endpoint`): MSH-3 → source.endpoint
/// = "urn:oid:"+HD.2 when HD.3 is `ISO`, MSH-5 → destination.endpoint = HD.2 as sent when HD.3 is neither `ISO` nor
/// `UUID`. A universal id that is no OID is left out, reported, and the endpoint marked absent as before.
#[test]
fn message_endpoints_come_from_the_applications_universal_ids() {
    let header = |msh3: &str, msh5: &str| {
        let (b, notes) = convert_with_notes(&format!(
            "MSH|^~\\&|{msh3}|HOSP|{msh5}|HOSP|20240315143000+0100||ADT^A01^ADT_A01|A1|P|2.5\n\
             PID|1||12345^^^HOSP^MR||DOE^JANE||19800315|F"
        ));
        (b["entry"][0]["resource"].clone(), notes)
    };
    let (h, _) = header(
        "LAB^2.16.840.1.114222.4.3.3.5.1.2^ISO",
        "EHR^23D0650909^CLIA",
    );
    assert_eq!(
        h["source"]["endpoint"],
        "urn:oid:2.16.840.1.114222.4.3.3.5.1.2"
    );
    assert!(h["source"].get("_endpoint").is_none(), "{h:#}");
    assert_eq!(h["destination"][0]["endpoint"], "23D0650909");

    let (h, notes) = header("LAB^2.16.840.1.114222.4.1.000000^ISO", "EHR");
    assert!(h["source"].get("endpoint").is_none(), "{h:#}");
    assert_eq!(
        h["source"]["_endpoint"]["extension"][0]["url"],
        "http://hl7.org/fhir/StructureDefinition/data-absent-reason"
    );
    assert!(
        notes.iter().any(|n| n
            .message
            .contains("\"2.16.840.1.114222.4.1.000000\" is not an OID")),
        "{notes:#?}"
    );
}

/// `$this` through a data type map onto the type being built fills that resource: ORC[ServiceRequest] ORC-7 →
/// `$this` with TQ[ServiceRequest] (TQ.1 → quantityQuantity, TQ.4/TQ.5 → occurrenceTiming.repeat.boundsPeriod),
/// the same ServiceRequest that ORC-1 gives its business event and ORC-2 its placer number, not a second one.
#[test]
fn an_orders_timing_is_part_of_its_service_request() {
    let orm = "MSH|^~\\&|EHR|CLINIC|RIS|HOSP|20240315143000+0100||ORM^O01^ORM_O01|O2|P|2.5
PID|1||12345^^^HOSP^MR||DOE^JANE||19800315|F
ORC|NW|1101^EHR|1201^RIS||SC||12^BID^^20240316^20240320
OBR|1|1101^EHR|1201^RIS|24725-4^CT Head^LN";
    let b = convert(orm);
    let requests = resources(&b, "ServiceRequest");
    assert_eq!(requests.len(), 1, "{requests:#?}");
    let r = requests[0];
    assert_eq!(r["intent"], "order");
    assert_eq!(r["identifier"][0]["value"], "1101");
    assert_eq!(r["quantityQuantity"]["value"], 12);
    let period = &r["occurrenceTiming"]["repeat"]["boundsPeriod"];
    assert_eq!(period["start"], "2024-03-16");
    assert_eq!(period["end"], "2024-03-20");
}
