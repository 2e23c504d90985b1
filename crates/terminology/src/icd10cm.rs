//! ICD-10-CM from CDC's tabular XML (`icd10cm-tabular-*.xml`, gzip or plain) as one FHIR CodeSystem,
//! `http://hl7.org/fhir/sid/icd-10-cm`.
//!
//! The hierarchy is chapter (code = the chapter number, as in CDC's code list) → block (the section id,
//! `A00-A09`) → category (`A00`) → codes (`A00.0`), as nested concepts. CDC's file does not list the codes
//! that take a 7th character: `sevenChrDef` on a category or code defines the characters for every code below
//! it, and the importer writes each combination (`S00.00XA`, padded with the placeholder `X` to six
//! characters) with the description CDC publishes for it ("..., initial encounter"). Everything that is not a
//! billable code (chapters, blocks, codes with children or needing a 7th character) has `notSelectable = true`.
//! The instructional notes (includes, inclusionTerm, excludes1, excludes2, codeFirst, useAdditionalCode,
//! codeAlso) are string properties, one value per note.

use crate::error::LoadError;
use quick_xml::events::Event;
use quick_xml::reader::Reader;
use serde_json::{Value, json};
use std::io::Read;
use std::path::Path;

/// The canonical URL of ICD-10-CM.
pub const ICD10CM_URL: &str = "http://hl7.org/fhir/sid/icd-10-cm";

/// The implicit value set of every ICD-10-CM code ([`icd10cm_all_value_set`]).
pub const ICD10CM_ALL_VS: &str = "http://hl7.org/fhir/sid/icd-10-cm/vs";

/// The value set of all of ICD-10-CM (`CodeSystem.valueSet`), for `$expand?url=...` and `$validate-code`.
pub fn icd10cm_all_value_set(version: &str) -> Value {
    json!({
        "resourceType": "ValueSet",
        "id": "icd-10-cm-all",
        "url": ICD10CM_ALL_VS,
        "version": version,
        "name": "ICD10CM",
        "title": "All ICD-10-CM codes",
        "status": "active",
        "compose": {"include": [{"system": ICD10CM_URL}]},
    })
}

/// Where users get the file: CDC's ICD-10-CM page lists a "Code Tables, Tabular and Index" zip per fiscal year
/// holding `icd10cm-tabular-<year>.xml`.
pub const ICD10CM_SOURCE: &str = "https://www.cdc.gov/nchs/icd/icd-10-cm/files.html";

/// The notes kept as properties, in the order of the XML schema.
const NOTE_KINDS: &[&str] = &[
    "includes",
    "inclusionTerm",
    "excludes1",
    "excludes2",
    "codeFirst",
    "useAdditionalCode",
    "codeAlso",
];

/// What an import produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Icd10cmStats {
    /// The version (the file's `<version>`).
    pub version: String,
    /// Chapters.
    pub chapters: usize,
    /// Blocks (sections).
    pub blocks: usize,
    /// Categories and codes as listed in the file.
    pub codes: usize,
    /// Codes generated with a 7th character.
    pub seventh_character_codes: usize,
    /// Billable codes (selectable leaves).
    pub billable: usize,
}

/// Reads CDC's tabular XML into a CodeSystem resource. The file is the XML itself, gzip-compressed XML (told by
/// the gzip magic), or a zip archive holding it (told by the zip magic): CDC's own "Code Tables, Tabular and
/// Index" zip, or the wheel of the PyPI package `simple-icd-10-cm` that `thoth serve` fetches, which carries
/// CDC's file unchanged. In a zip, the member is the one XML file whose name contains `tabular`.
pub fn import_icd10cm(path: &Path) -> Result<(Value, Icd10cmStats), LoadError> {
    let io = |source| LoadError::Io {
        path: path.display().to_string(),
        source,
    };
    let raw = std::fs::read(path).map_err(io)?;
    let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .map_err(io)?;
        out
    } else if raw.starts_with(b"PK\x03\x04") {
        tabular_member(&raw).map_err(|message| LoadError::Format {
            path: path.display().to_string(),
            message,
        })?
    } else {
        raw
    };
    let text = String::from_utf8_lossy(&bytes);
    let root = parse_tree(&text).map_err(|message| LoadError::Format {
        path: path.display().to_string(),
        message,
    })?;
    if root.name != "ICD10CM.tabular" {
        return Err(LoadError::Format {
            path: path.display().to_string(),
            message: format!(
                "the root element is <{}>, not <ICD10CM.tabular>: not CDC's ICD-10-CM tabular XML",
                root.name
            ),
        });
    }
    let mut stats = Icd10cmStats {
        version: root
            .child("version")
            .map(|v| v.text.trim().to_string())
            .unwrap_or_default(),
        ..Default::default()
    };
    let mut chapters = Vec::new();
    for ch in root.children_named("chapter") {
        stats.chapters += 1;
        let mut concept = header(ch.child_text("name"), ch.child_text("desc"), ch);
        let mut blocks = Vec::new();
        for section in ch.children_named("section") {
            let id = section.attr_id.clone().unwrap_or_default();
            let diags: Vec<Value> = section
                .children_named("diag")
                .map(|d| diag(d, None, &mut stats))
                .collect();
            // A block of one category has that category's code as its id: the category stands for it.
            if diags.len() == 1 && diags[0]["code"] == id.as_str() {
                blocks.extend(diags);
                continue;
            }
            stats.blocks += 1;
            let mut b = header(&id, section.child_text("desc"), section);
            b["concept"] = Value::Array(diags);
            blocks.push(b);
        }
        concept["concept"] = Value::Array(blocks);
        chapters.push(concept);
    }
    if chapters.is_empty() {
        return Err(LoadError::Format {
            path: path.display().to_string(),
            message: "no <chapter> elements".into(),
        });
    }
    let mut properties = vec![
        json!({"code": "notSelectable", "uri": "http://hl7.org/fhir/concept-properties#notSelectable", "description": "Not a billable code: a chapter, a block, or a code with subdivisions or that needs a 7th character", "type": "boolean"}),
    ];
    for k in NOTE_KINDS {
        properties.push(json!({"code": k, "description": format!("The tabular list's {k} note"), "type": "string"}));
    }
    let count = stats.chapters + stats.blocks + stats.codes + stats.seventh_character_codes;
    let cs = json!({
        "resourceType": "CodeSystem",
        "id": "icd-10-cm",
        "url": ICD10CM_URL,
        "identifier": [{"system": "urn:ietf:rfc:3986", "value": "urn:oid:2.16.840.1.113883.6.90"}],
        "version": stats.version,
        "name": "ICD10CM",
        "title": "International Classification of Diseases, 10th Revision, Clinical Modification (ICD-10-CM)",
        "status": "active",
        "experimental": false,
        "publisher": "Centers for Disease Control and Prevention (CDC), National Center for Health Statistics (NCHS)",
        // CDC's descriptions are English: without a stated language they would be valid displays in every one.
        "language": "en",
        "description": format!("ICD-10-CM tabular list, version {}, imported from CDC's XML ({ICD10CM_SOURCE})", stats.version),
        "caseSensitive": true,
        "valueSet": ICD10CM_ALL_VS,
        "hierarchyMeaning": "is-a",
        "compositional": false,
        "versionNeeded": false,
        "content": "complete",
        "count": count,
        "property": properties,
        "concept": chapters,
    });
    Ok((cs, stats))
}

/// A chapter or block: not selectable, with its notes.
fn header(code: &str, display: &str, el: &El) -> Value {
    let mut c = json!({"code": code.trim(), "display": display.trim()});
    let mut props = vec![json!({"code": "notSelectable", "valueBoolean": true})];
    notes(el, &mut props);
    c["property"] = Value::Array(props);
    c
}

fn notes(el: &El, props: &mut Vec<Value>) {
    for kind in NOTE_KINDS {
        for n in el.children_named(kind) {
            for note in n.children_named("note") {
                let t = note.text.trim();
                if !t.is_empty() {
                    props.push(json!({"code": kind, "valueString": t}));
                }
            }
        }
    }
}

/// The 7th characters in force: (character, text).
type Seventh = Vec<(String, String)>;

fn diag(el: &El, inherited: Option<&Seventh>, stats: &mut Icd10cmStats) -> Value {
    stats.codes += 1;
    let code = el.child_text("name").trim().to_string();
    let display = el.child_text("desc").trim().to_string();
    let own: Option<Seventh> = el.child("sevenChrDef").map(|d| {
        d.children_named("extension")
            .map(|e| {
                (
                    e.attr_char.clone().unwrap_or_default(),
                    e.text.trim().to_string(),
                )
            })
            .filter(|(c, _)| !c.is_empty())
            .collect()
    });
    let seventh = own.as_ref().or(inherited);
    let children: Vec<Value> = el
        .children_named("diag")
        .map(|d| diag(d, seventh, stats))
        .collect();
    let mut props = Vec::new();
    let mut c = json!({"code": code, "display": display});
    let extended: Vec<Value> = match seventh {
        Some(chars) if children.is_empty() => {
            let undotted = code.replace('.', "");
            let padded = format!("{undotted:X<6}");
            chars
                .iter()
                .filter(|(ch, _)| seventh_applies(&undotted, ch))
                .map(|(ch, text)| {
                    stats.seventh_character_codes += 1;
                    stats.billable += 1;
                    let full = format!("{padded}{ch}");
                    json!({
                        "code": format!("{}.{}", &full[..3], &full[3..]),
                        "display": format!("{display}, {text}"),
                    })
                })
                .collect()
        }
        _ => Vec::new(),
    };
    if children.is_empty() && extended.is_empty() {
        stats.billable += 1;
    } else {
        props.push(json!({"code": "notSelectable", "valueBoolean": true}));
    }
    notes(el, &mut props);
    if !props.is_empty() {
        c["property"] = Value::Array(props);
    }
    if !children.is_empty() {
        c["concept"] = Value::Array(children);
    } else if !extended.is_empty() {
        c["concept"] = Value::Array(extended);
    }
    c
}

/// The one exception CDC states only in prose (a `<notes>` of category S06): "7th characters D and S do not
/// apply to codes in category S06 with 6th character 7 - death due to brain injury prior to regaining
/// consciousness, or 8 - death due to other cause prior to regaining consciousness".
fn seventh_applies(undotted: &str, ch: &str) -> bool {
    !(undotted.starts_with("S06")
        && matches!(undotted.as_bytes().get(5), Some(b'7' | b'8'))
        && matches!(ch, "D" | "S"))
}

/// An XML element with what the importer needs: `id` and `char` attributes, direct text, children.
#[derive(Debug, Default)]
struct El {
    name: String,
    attr_id: Option<String>,
    attr_char: Option<String>,
    text: String,
    children: Vec<El>,
}

impl El {
    fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a El> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }

    fn child(&self, name: &str) -> Option<&El> {
        self.children.iter().find(|c| c.name == name)
    }

    fn child_text(&self, name: &str) -> &str {
        self.child(name).map(|c| c.text.as_str()).unwrap_or("")
    }
}

fn parse_tree(text: &str) -> Result<El, String> {
    let mut reader = Reader::from_str(text);
    let mut stack: Vec<El> = vec![El::default()];
    loop {
        let ev = reader
            .read_event()
            .map_err(|e| format!("XML error at byte {}: {e}", reader.buffer_position()))?;
        match ev {
            Event::Start(s) => stack.push(element(&s)),
            Event::Empty(s) => {
                let el = element(&s);
                if let Some(top) = stack.last_mut() {
                    top.children.push(el);
                }
            }
            Event::End(_) => {
                let el = stack.pop().ok_or("unbalanced end tag")?;
                match stack.last_mut() {
                    Some(top) => top.children.push(el),
                    None => return Err("unbalanced end tag".into()),
                }
            }
            Event::Text(t) => {
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&t.xml10_content());
                }
            }
            Event::CData(t) => {
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&t);
                }
            }
            Event::GeneralRef(r) => {
                let resolved = match r.resolve_char_ref() {
                    Ok(Some(c)) => Some(c),
                    _ => match &*r.xml10_content() {
                        "lt" => Some('<'),
                        "gt" => Some('>'),
                        "amp" => Some('&'),
                        "quot" => Some('"'),
                        "apos" => Some('\''),
                        _ => None,
                    },
                };
                if let (Some(c), Some(top)) = (resolved, stack.last_mut()) {
                    top.text.push(c);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    let mut doc = stack.pop().ok_or("empty document")?;
    if !stack.is_empty() {
        return Err("the document ends inside an element".into());
    }
    doc.children.pop().ok_or_else(|| "no root element".into())
}

fn element(s: &quick_xml::events::BytesStart<'_>) -> El {
    let attr = |name: &str| {
        s.try_get_attribute(name).ok().flatten().and_then(|a| {
            a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .ok()
                .map(|v| v.to_string())
        })
    };
    El {
        name: s.name().as_ref().to_string(),
        attr_id: attr("id"),
        attr_char: attr("char"),
        ..Default::default()
    }
}

/// The tabular XML inside a zip archive: the one `.xml` member whose file name contains `tabular` (CDC names
/// it `icd10cm-tabular-<year>.xml` or `icd10cm_tabular_<year>.xml`, the PyPI wheel
/// `icd10c-tabular-April-1-2026.xml`).
fn tabular_member(zip_bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip_bytes))
        .map_err(|e| format!("not a readable zip archive: {e}"))?;
    let candidates: Vec<String> = archive
        .file_names()
        .filter(|name| {
            let file = name.rsplit('/').next().unwrap_or(name).to_ascii_lowercase();
            file.ends_with(".xml") && file.contains("tabular")
        })
        .map(str::to_string)
        .collect();
    let [name] = candidates.as_slice() else {
        return Err(if candidates.is_empty() {
            "the zip archive holds no ICD-10-CM tabular XML (no *tabular*.xml member)".to_string()
        } else {
            format!(
                "the zip archive holds several tabular XML files ({}): extract the one to import",
                candidates.join(", ")
            )
        });
    };
    let mut member = archive
        .by_name(name)
        .map_err(|e| format!("{name}: cannot read the zip member: {e}"))?;
    // The declared size is only a hint (a damaged or crafted archive may claim terabytes): reserve at most 64 MiB.
    let mut out = Vec::with_capacity(usize::try_from(member.size().min(64 << 20)).unwrap_or(0));
    member
        .read_to_end(&mut out)
        .map_err(|e| format!("{name}: cannot read the zip member: {e}"))?;
    Ok(out)
}
