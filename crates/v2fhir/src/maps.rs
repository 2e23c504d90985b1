//! The guide's maps, compiled once from the generated tables (`generated/*.tsv`, see `xtask/src/codegen_v2fhir.rs`)
//! into the rules the converter walks: message rows by group path, segment and data type maps by name with
//! their attribute paths and conditions parsed, vocabulary maps by code.

use crate::condition::{self, Cond, Ref};
use fhir::TypeShape;
use std::collections::HashMap;
use std::sync::OnceLock;

const MESSAGES: &str = include_str!("generated/messages.tsv");
const SEGMENTS: &str = include_str!("generated/segments.tsv");
const DATATYPES: &str = include_str!("generated/datatypes.tsv");
const VOCABULARY: &str = include_str!("generated/vocabulary.tsv");
const REQUIRED_CODES: &str = include_str!("generated/required-codes.tsv");

/// One step of a FHIR attribute path: `identifier[2]` → name `identifier`, slot 2.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    pub(crate) name: Box<str>,
    /// The guide's instance number (`[2]`); 0 when the path gives none.
    pub(crate) slot: u16,
}

/// Where a row writes.
#[derive(Clone, Debug)]
pub(crate) enum Attr {
    /// A path inside the resource or value the map applies to.
    Path(Vec<Step>),
    /// `x(Organization)`: a Reference at `x` to a new resource of that type built by the row's data type map.
    NewResource(Vec<Step>, Box<str>),
    /// `x(Organization[1].identifier[1].value)`: a value written inside a resource referenced from `x`. The
    /// referenced resource is built by the row that creates it; these rows are not applied.
    InResource(Vec<Step>),
    /// `$value`: the primitive a data type map produces.
    Value,
    /// `$this`: the value the map applies to, as a whole (its data type map builds a resource).
    This,
}

/// One row of a segment or data type map.
#[derive(Debug)]
pub(crate) struct ElementRow {
    /// 1-based field (segment maps) or component (data type maps).
    pub(crate) first: u16,
    /// 1-based component (segment maps) or subcomponent (data type maps); 0 = the whole element.
    pub(crate) second: u16,
    pub(crate) cond: Cond,
    pub(crate) narrative_only: bool,
    pub(crate) attr: Attr,
    /// The FHIR type the guide names for the attribute, when it is a primitive (`code`, `date`): the type of a
    /// `$value` row.
    pub(crate) fhir_primitive: Option<TypeShape>,
    pub(crate) data_type_map: Option<Box<str>>,
    pub(crate) vocabulary: Option<Box<str>>,
    /// A value the row assigns: a literal, or literals and components joined (`"urn:oid:"+HD.2`).
    pub(crate) assignment: Option<Vec<Part>>,
    /// The element's label for reports (`PID-7`, `CX.4`).
    pub(crate) label: Box<str>,
}

/// A piece of an assigned value.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Part {
    Lit(Box<str>),
    /// A component (data type maps) or field (segment maps) of the value the map applies to.
    Ref(u16, u16),
}

/// `"urn:oid:"+HD.2`, `"+"+XTN.5+" "+XTN.6`, `"message"`. `None` for narrative placeholders
/// (`/to be determined by the implementer/`).
fn parse_assignment(s: &str) -> Option<Vec<Part>> {
    let mut parts = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('"') {
            let end = r.find('"')?;
            parts.push(Part::Lit(r[..end].into()));
            rest = r[end + 1..].trim_start();
        } else {
            let end = rest.find('+').unwrap_or(rest.len());
            let (first, second) = parse_element(rest[..end].trim())?;
            parts.push(Part::Ref(first, second));
            rest = &rest[end..];
        }
        rest = rest.strip_prefix('+').unwrap_or(rest).trim_start();
    }
    (!parts.is_empty()).then_some(parts)
}

/// A segment or data type map: `PID[Patient]`, `CX[Identifier]`.
#[derive(Debug)]
pub(crate) struct ElementMap {
    /// The FHIR type the map builds (`Patient` for `PID[Patient]`, `Basic` for `PV1[Basic-EncounterHistory]`,
    /// `Identifier`, `string` for `XPN[String]`).
    pub(crate) target: Option<TypeShape>,
    pub(crate) rows: Vec<ElementRow>,
}

/// A resource a message row names: `Observation[2]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) ty: Box<str>,
    /// The guide's instance number; 0 for none or `[n]` (a new instance per segment).
    pub(crate) n: u16,
}

/// `Observation[1].subject.reference=Patient[1].id`.
#[derive(Clone, Debug)]
pub(crate) struct Reference {
    pub(crate) from: Key,
    pub(crate) path: Vec<Step>,
    pub(crate) to: Key,
}

/// One row of a message map.
#[derive(Debug)]
pub(crate) struct MessageRow {
    /// Group names from the message root to the segment's group (`PATIENT_RESULT`, `ORDER_OBSERVATION`).
    pub(crate) groups: Vec<Box<str>>,
    pub(crate) segment: Box<str>,
    /// `ADT_A01:follow:PID.ROL`: the row applies to the segment when it follows this one.
    pub(crate) follows: Option<Box<str>>,
    pub(crate) cond: Cond,
    pub(crate) narrative_only: bool,
    /// The resource the row writes, when it names one.
    pub(crate) key: Option<Key>,
    /// The segment map the row applies.
    pub(crate) segment_map: Option<Box<str>>,
    pub(crate) references: Vec<Reference>,
    /// How many groups the row shares with the first row that names the same resource: instances of the
    /// resource merge within one instance of that group (ORC and OBR build one DiagnosticReport per order).
    pub(crate) scope_depth: usize,
    /// This row is the first that names its resource: each of its segments starts a new instance.
    pub(crate) creates: bool,
}

/// A vocabulary map row's FHIR side.
#[derive(Debug)]
pub(crate) struct Mapped {
    pub(crate) code: Box<str>,
    pub(crate) display: Box<str>,
    pub(crate) system: Box<str>,
}

/// All maps.
pub(crate) struct Maps {
    pub(crate) messages: HashMap<Box<str>, Vec<MessageRow>>,
    pub(crate) elements: HashMap<Box<str>, ElementMap>,
    /// (map, v2 code) → FHIR coding.
    pub(crate) vocabulary: HashMap<(Box<str>, Box<str>), Mapped>,
    /// For each segment id, the segment map the guide most often applies to it, for messages it does not map.
    pub(crate) default_maps: HashMap<Box<str>, Vec<(Key, Box<str>)>>,
    /// FHIR R4 `code` elements with a required binding (`Encounter.location.status`) → the codes allowed.
    pub(crate) required_codes: HashMap<&'static str, Vec<&'static str>>,
    /// Rows whose condition could not be read, as `map element: condition` (listed, never applied).
    pub(crate) unparsed: Vec<String>,
}

/// The compiled maps (built on first use, in a few milliseconds).
pub(crate) fn maps() -> &'static Maps {
    static MAPS: OnceLock<Maps> = OnceLock::new();
    MAPS.get_or_init(compile)
}

fn rows(text: &'static str) -> impl Iterator<Item = Vec<&'static str>> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split('\t').collect())
}

fn opt(s: &str) -> Option<Box<str>> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.into())
}

/// `identifier[2].type.coding.code` → steps. `None` for forms the converter does not read.
fn parse_steps(s: &str) -> Option<Vec<Step>> {
    let mut out = Vec::new();
    for part in s.split('.') {
        let part = part.trim();
        let (name, slot) = match part.split_once('[') {
            Some((n, rest)) => {
                let num = rest.trim_end_matches(']');
                (n, num.parse().unwrap_or(0))
            }
            None => (part, 0),
        };
        if name.is_empty() || !name.bytes().all(|c| c.is_ascii_alphanumeric()) {
            return None;
        }
        out.push(Step {
            name: name.into(),
            slot,
        });
    }
    Some(out)
}

fn parse_attr(s: &str) -> Option<Attr> {
    let s = s.trim();
    // `[1].family` (XPN[HumanName]): the leading instance number names the value the map builds itself.
    let s = match s.strip_prefix('[').and_then(|r| r.split_once("].")) {
        Some((n, rest)) if n.bytes().all(|c| c.is_ascii_digit()) => rest,
        _ => s,
    };
    match s {
        "$value" => return Some(Attr::Value),
        "$this" => return Some(Attr::This),
        _ => {}
    }
    if let Some((outer, inner)) = s.split_once('(') {
        let inner = inner.strip_suffix(')')?;
        let steps = parse_steps(outer)?;
        if inner.bytes().all(|c| c.is_ascii_alphabetic()) {
            return Some(Attr::NewResource(steps, inner.into()));
        }
        // `Organization[1].identifier[1].value` or `Practitioner.address`
        let (head, path) = inner.split_once('.')?;
        let (ty, n) = match head.split_once('[') {
            Some((t, num)) => (t, num.trim_end_matches(']').parse().ok()?),
            None => (head, 0),
        };
        let _ = n;
        TypeShape::resource(ty)?;
        parse_steps(path)?;
        return Some(Attr::InResource(steps));
    }
    parse_steps(s).map(Attr::Path)
}

/// `PID-11.9` → (11, 9); `CX.4` → (4, 0).
fn parse_element(s: &str) -> Option<(u16, u16)> {
    let rest = &s[s.find(['-', '.'])? + 1..];
    let mut it = rest.split('.');
    let first = it.next()?.trim().parse().ok()?;
    let second = match it.next() {
        Some(x) => x.trim().parse().ok()?,
        None => 0,
    };
    Some((first, second))
}

/// The FHIR type a map builds, from its name: `PID[Patient]` → Patient, `PV1[Basic-EncounterHistory]` → Basic,
/// `XPN[String]` → string, `MSH[Bundle]` → Bundle.
fn map_target(name: &str) -> Option<TypeShape> {
    let inner = name.split_once('[')?.1.trim_end_matches(']');
    let head = inner.split(['-', '.']).next()?;
    TypeShape::resource(head)
        .or_else(|| TypeShape::named(head))
        .or_else(|| {
            let mut c = head.chars();
            let lower: String = c.next()?.to_lowercase().chain(c).collect();
            TypeShape::named(&lower)
        })
}

fn parse_key(s: &str) -> Option<Key> {
    let head = s.split(['.', '(', '=']).next()?.trim();
    let (ty, n) = match head.split_once('[') {
        Some((t, num)) => (t, num.trim_end_matches(']').parse().unwrap_or(0)),
        None => (head, 0),
    };
    TypeShape::resource(ty)?;
    Some(Key { ty: ty.into(), n })
}

/// The References cell: statements `A[1].x.reference=B[1].id`, separated by `;` or spaces (line breaks in the
/// guide, folded by the generator). Statements that assign a literal or reach into another element are left to
/// the segment maps.
fn parse_references(s: &str) -> Vec<Reference> {
    s.split([';', ' '])
        .filter_map(|stmt| {
            let (lhs, rhs) = stmt.trim().split_once('=')?;
            let rhs = rhs.strip_suffix(".id")?;
            let to = parse_key(rhs)?;
            let from = parse_key(lhs)?;
            let path_text = lhs.split_once('.')?.1;
            let path_text = path_text
                .strip_suffix(".reference")
                .or_else(|| path_text.strip_suffix(".id"))?;
            Some(Reference {
                from,
                path: parse_steps(path_text)?,
                to,
            })
        })
        .collect()
}

fn compile() -> Maps {
    let mut unparsed = Vec::new();
    let mut elements: HashMap<Box<str>, ElementMap> = HashMap::new();
    for (text, is_type) in [(SEGMENTS, false), (DATATYPES, true)] {
        for r in rows(text) {
            let [
                map,
                element,
                cond,
                narrative,
                attr,
                fhir_type,
                dt_map,
                vocab,
                assign,
            ] = r[..]
            else {
                continue;
            };
            let Some((first, second)) = parse_element(element) else {
                continue;
            };
            let entry = elements.entry(map.into()).or_insert_with(|| ElementMap {
                target: map_target(map),
                rows: Vec::new(),
            });
            let Some(attr) = parse_attr(attr).filter(|_| !attr.trim().is_empty()) else {
                // Rows without a target (or in a form not read) still list the element: the converter
                // reports valued elements that no row maps.
                entry.rows.push(ElementRow {
                    first,
                    second,
                    cond: Cond::Unparsed,
                    narrative_only: false,
                    attr: Attr::Path(Vec::new()),
                    fhir_primitive: None,
                    data_type_map: None,
                    vocabulary: None,
                    assignment: None,
                    label: element.into(),
                });
                continue;
            };
            let prefix = element.split(['-', '.']).next().unwrap_or("");
            let own = Ref {
                segment: (!is_type).then(|| prefix.into()),
                first,
                second,
            };
            let cond = condition::parse(cond, own, is_type.then_some(prefix));
            if cond.is_unparsed() {
                unparsed.push(format!("{map} {element}: {cond_text}", cond_text = r[2]));
            }
            let assignment = opt(assign).and_then(|a| parse_assignment(&a));
            entry.rows.push(ElementRow {
                first,
                second,
                cond,
                narrative_only: narrative == "N",
                attr,
                fhir_primitive: TypeShape::named(fhir_type.trim())
                    .filter(|t| t.json_kind() != fhir::JsonKind::Object),
                data_type_map: opt(dt_map),
                vocabulary: opt(vocab),
                assignment,
                label: element.into(),
            });
        }
    }

    let mut messages: HashMap<Box<str>, Vec<MessageRow>> = HashMap::new();
    for r in rows(MESSAGES) {
        let [map, path, segment, cond, narrative, target, seg_map, refs] = r[..] else {
            continue;
        };
        let (follows, path) = match path.strip_prefix(":follow:") {
            Some(rest) => {
                let (f, seg) = rest.split_once('.').unwrap_or((rest, ""));
                (Some(f.into()), seg.to_string())
            }
            None => (None, path.to_string()),
        };
        let mut groups: Vec<Box<str>> = path.split('.').map(Into::into).collect();
        groups.pop();
        let seg_id = segment.trim();
        if seg_id.len() != 3 {
            continue; // group rows
        }
        let own = Ref {
            segment: Some(seg_id.into()),
            first: 0,
            second: 0,
        };
        let cond = condition::parse(cond, own, None);
        if cond.is_unparsed() {
            unparsed.push(format!("{map} {path}: {}", r[3]));
        }
        messages.entry(map.into()).or_default().push(MessageRow {
            groups,
            segment: seg_id.into(),
            follows,
            cond,
            narrative_only: narrative == "N",
            key: parse_key(target).or_else(|| {
                // A row naming only its segment map (`SFT[Device]` under `Provenance[1].entity.what(Device)`)
                // builds the map's resource.
                let ty = map_target(seg_map)?;
                ty.is_resource().then(|| Key {
                    ty: ty.name().into(),
                    n: 0,
                })
            }),
            segment_map: opt(seg_map),
            references: parse_references(refs),
            scope_depth: 0,
            creates: false,
        });
    }
    for rows in messages.values_mut() {
        let mut first_of: HashMap<Key, usize> = HashMap::new();
        for i in 0..rows.len() {
            let Some(key) = rows[i].key.clone() else {
                continue;
            };
            match first_of.get(&key) {
                None => {
                    first_of.insert(key, i);
                    rows[i].creates = true;
                    rows[i].scope_depth = rows[i].groups.len();
                }
                Some(&f) => {
                    let same_segment =
                        rows[f].segment == rows[i].segment && rows[f].groups == rows[i].groups;
                    rows[i].creates = same_segment;
                    rows[i].scope_depth = rows[f]
                        .groups
                        .iter()
                        .zip(&rows[i].groups)
                        .take_while(|(a, b)| a == b)
                        .count();
                }
            }
        }
    }
    let mut default_maps: HashMap<Box<str>, Vec<(Key, Box<str>)>> = HashMap::new();
    // The ORU^R01 and ADT^A01 maps first: their choices are the guide's most worked-out ones.
    let mut names: Vec<&Box<str>> = messages.keys().collect();
    names.sort_by_key(|n| (!matches!(&***n, "ADT_A01" | "ORU_R01"), n.to_string()));
    for name in names {
        for row in &messages[name] {
            let (Some(key), Some(m)) = (&row.key, &row.segment_map) else {
                continue;
            };
            if row.cond != Cond::Always || row.narrative_only || !row.creates {
                continue;
            }
            let list = default_maps.entry(row.segment.clone()).or_default();
            if list.iter().all(|(_, existing)| existing != m)
                && list.iter().all(|(k, _)| k.ty != key.ty)
            {
                list.push((key.clone(), m.clone()));
            }
        }
    }
    let mut vocabulary = HashMap::new();
    for r in rows(VOCABULARY) {
        let [map, code, _v2system, _cond, fcode, display, system] = r[..] else {
            continue;
        };
        vocabulary
            .entry((map.into(), code.into()))
            .or_insert(Mapped {
                code: fcode.into(),
                display: display.into(),
                system: system.into(),
            });
    }
    let required_codes = rows(REQUIRED_CODES)
        .filter_map(|r| Some((*r.first()?, r.get(1)?.split(' ').collect())))
        .collect();
    Maps {
        required_codes,
        messages,
        elements,
        vocabulary,
        default_maps,
        unparsed,
    }
}
