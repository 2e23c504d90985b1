//! The guide's maps, compiled once from the generated tables (`generated/*.tsv`, see `xtask/src/codegen_v2fhir.rs`)
//! into the rules the converter walks: message rows by group path, segment and data type maps by name with
//! their attribute paths and conditions parsed, vocabulary maps by code.

use crate::condition::{self, Cond, Guard, Ref};
use fhir::{ElementShape, TypeShape};
use std::collections::HashMap;
use std::sync::OnceLock;

const MESSAGES: &str = include_str!("generated/messages.tsv");
const SEGMENTS: &str = include_str!("generated/segments.tsv");
const DATATYPES: &str = include_str!("generated/datatypes.tsv");
const VOCABULARY: &str = include_str!("generated/vocabulary.tsv");
const REQUIRED_CODES: &str = include_str!("generated/required-codes.tsv");
const REQUIRED_ELEMENTS: &str = include_str!("generated/required-elements.tsv");

/// One step of a FHIR attribute path: `identifier[2]` → name `identifier`, instance 2.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    /// A slice of the generated tables (or of the FHIR definitions): static, so that it keys JSON members
    /// without a copy.
    pub(crate) name: &'static str,
    /// The name and the guide's instance number (`[2]`; 0 or 1 when the path gives none) hashed once, for the
    /// converter's slot tags.
    pub(crate) key: u64,
    /// The step is `extension` (whose items are also told apart by the element the row maps).
    pub(crate) extension: bool,
    /// An `extension` step whose item the map's fields share (see [`share_extensions`]): told apart by its number
    /// alone.
    pub(crate) shared: bool,
}

impl Step {
    pub(crate) const fn new(name: &'static str, slot: u16) -> Step {
        // FNV-1a over the name, then the instance number (0 and 1 are the same instance).
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let b = name.as_bytes();
        let mut i = 0;
        while i < b.len() {
            h ^= b[i] as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
            i += 1;
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        let slot1 = if slot == 0 { 1 } else { slot };
        h ^= slot1 as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        let extension = b.len() == 9
            && b[0] == b'e'
            && b[1] == b'x'
            && b[2] == b't'
            && b[3] == b'e'
            && b[4] == b'n'
            && b[5] == b's'
            && b[6] == b'i'
            && b[7] == b'o'
            && b[8] == b'n';
        Step {
            name,
            key: h,
            extension,
            shared: false,
        }
    }
}

/// The shape of a primitive's `extension` list: an Extension's own (`Extension.extension`, repeating Extensions).
fn primitive_extension() -> ElementShape {
    static SHAPE: OnceLock<ElementShape> = OnceLock::new();
    *SHAPE.get_or_init(|| {
        TypeShape::named("Extension")
            .and_then(|t| t.element("extension"))
            .expect("FHIR R4's Extension has extensions")
    })
}

/// `_name`, the JSON member of primitive `name`'s id and extensions, kept for the process (element names of the
/// maps' paths: a few dozen at most).
fn underscored(name: &str) -> &'static str {
    static NAMES: crate::systems::Interned = crate::systems::Interned::new();
    NAMES.get(name, || format!("_{name}"))
}

/// Where a row writes.
#[derive(Clone, Debug)]
pub(crate) enum Attr {
    /// A path inside the resource or value the map applies to.
    Path(Vec<Step>),
    /// `x(Organization)`: a Reference at `x` to a new resource built by the row's data type map (which names
    /// the resource's type).
    NewResource(Vec<Step>),
    /// `x(Organization[1].identifier[1].value)`: a value written inside a resource referenced from `x`. The
    /// referenced resource is built by the row that creates it; these rows are not applied.
    InResource(Vec<Step>),
    /// `$value`: the primitive a data type map produces.
    Value,
    /// `$this`: the value the map applies to, as a whole (its data type map builds a resource).
    This,
}

/// A path resolved against a FHIR type once, so that writing a value looks no element up by name.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    /// The type the path was resolved against.
    pub(crate) ty: TypeShape,
    /// Each step's element, up to the first step that names no element of its parent type (all of them when the
    /// path is valid).
    pub(crate) shapes: Vec<ElementShape>,
    /// When every step resolved: the codes a required binding allows at the last step (`None`: any).
    pub(crate) required: Option<&'static [&'static str]>,
    /// Steps written under another member than their name: a primitive whose extension the path goes on to
    /// (`birthDate.extension` → `_birthDate.extension`, FHIR JSON's element of a primitive). Mostly empty.
    pub(crate) renamed: Vec<(usize, &'static str)>,
}

impl Resolved {
    /// Resolves `steps` against `ty`.
    pub(crate) fn new(ty: TypeShape, steps: &[Step]) -> Resolved {
        let mut shapes: Vec<ElementShape> = Vec::with_capacity(steps.len());
        let mut renamed = Vec::new();
        let mut t = ty;
        for (i, s) in steps.iter().enumerate() {
            let e = match t.element(s.name) {
                Some(e) => e,
                // `birthDate.extension.url` (PID-7's birth time), `status.extension` (OBX-11's v2 code): the
                // extensions of a primitive, which FHIR JSON writes in `_birthDate`. A repeating primitive's
                // (`category` of AllergyIntolerance) would need a list kept in step with the values': not written.
                None if s.name == "extension"
                    && t.json_kind() != fhir::JsonKind::Object
                    && i > 0
                    && !shapes[i - 1].many =>
                {
                    renamed.push((i - 1, underscored(steps[i - 1].name)));
                    primitive_extension()
                }
                None => break,
            };
            shapes.push(e);
            t = e.ty;
        }
        let required = match steps.last() {
            Some(last) if shapes.len() == steps.len() => {
                let parent = shapes.len().checked_sub(2).map_or(ty, |i| shapes[i].ty);
                required_codes(parent.name(), last.name)
            }
            _ => None,
        };
        Resolved {
            ty,
            shapes,
            required,
            renamed,
        }
    }

    /// The member step `i` (named `name`) is written under.
    #[inline(always)]
    pub(crate) fn member_name(&self, i: usize, name: &'static str) -> &'static str {
        if self.renamed.is_empty() {
            return name;
        }
        self.renamed
            .iter()
            .find(|(at, _)| *at == i)
            .map_or(name, |(_, n)| n)
    }

    /// The FHIR type at the end of the path, or `None` when the path names no element.
    pub(crate) fn leaf(&self, steps: &[Step]) -> Option<TypeShape> {
        match self.shapes.last() {
            Some(e) if self.shapes.len() == steps.len() => Some(e.ty),
            None if steps.is_empty() => Some(self.ty),
            _ => None,
        }
    }

    /// Whether the path's first repeating element lets each v2 repetition have its own item.
    pub(crate) fn many(&self) -> bool {
        self.shapes.iter().any(|e| e.many)
    }
}

/// One row of a segment or data type map.
#[derive(Debug)]
pub(crate) struct ElementRow {
    /// 1-based field (segment maps) or component (data type maps).
    pub(crate) first: u16,
    /// 1-based component (segment maps) or subcomponent (data type maps); 0 = the whole element.
    pub(crate) second: u16,
    pub(crate) cond: Cond,
    /// For a condition on segments only ([`Cond::segment_only`]): its number among the distinct such
    /// conditions, so that the converter evaluates each once per segment (the OBX map asks for OBX-2 dozens of
    /// times).
    pub(crate) cond_slot: Option<u32>,
    /// The condition's leading test of one element against literals ([`Cond::guard`]).
    pub(crate) guard: Option<Guard>,
    pub(crate) narrative_only: bool,
    /// A data type map's row that assigns a value when its own component is empty (see
    /// [`ElementMap::when_absent`]).
    pub(crate) when_absent: bool,
    pub(crate) attr: Attr,
    /// The FHIR type the guide names for the attribute, when it is a primitive (`code`, `date`): the type of a
    /// `$value` row.
    pub(crate) fhir_primitive: Option<TypeShape>,
    pub(crate) data_type_map: Option<Box<str>>,
    /// The data type map's index in [`Maps::elements`], when the guide publishes it.
    pub(crate) dt: Option<usize>,
    pub(crate) vocabulary: Option<Box<str>>,
    /// The vocabulary map's index in [`Maps::vocabulary`], when the guide publishes it: looked up once, when the
    /// maps are compiled, rather than by name for each code.
    pub(crate) vocabulary_table: Option<u32>,
    /// A value the row assigns: a literal, or literals and components joined (`"urn:oid:"+HD.2`).
    pub(crate) assignment: Option<Vec<Part>>,
    /// The element's label for reports (`PID-7`, `CX.4`).
    pub(crate) label: &'static str,
    /// The attribute's first step (`$value`, `$this`): rows conditioned by narrative alone are alternatives per
    /// element and attribute.
    pub(crate) attr_label: &'static str,
    /// The attribute path (`$value`: `value`, for maps onto a complex type) resolved against the map's target
    /// type, the type the row is nearly always applied to.
    pub(crate) resolved: Option<Resolved>,
    /// The path resolved against the other type the row was first applied to (a map onto `Quantity` writing a
    /// `SimpleQuantity`), kept for the next time.
    pub(crate) resolved_other: OnceLock<Resolved>,
}

impl ElementRow {
    /// The row's path resolved against `ty`: the one compiled for the map's target, else resolved now.
    pub(crate) fn resolved_for(
        &self,
        ty: TypeShape,
        steps: &[Step],
    ) -> std::borrow::Cow<'_, Resolved> {
        match &self.resolved {
            Some(r) if r.ty == ty => std::borrow::Cow::Borrowed(r),
            _ => {
                // Another thread may have kept another type first: the kept one is used only when it is this.
                let kept = self.resolved_other.get_or_init(|| Resolved::new(ty, steps));
                if kept.ty == ty {
                    std::borrow::Cow::Borrowed(kept)
                } else {
                    std::borrow::Cow::Owned(Resolved::new(ty, steps))
                }
            }
        }
    }
}

/// The step of a `$value` row in a map onto a complex type (`NM[Quantity]`): its `value` element.
pub(crate) const VALUE_STEP: [Step; 1] = [Step::new("value", 0)];

/// A piece of an assigned value.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Part {
    Lit(&'static str),
    /// A field of the segment, or a component of it (`OBX-5.1`, written with the segment's id and a hyphen).
    Ref(u16, u16),
    /// Component `n` of the value of the data type the reference names (`HD.2`, `MSG.1`): in a data type map, the
    /// value the map applies to; in a segment map, the row's own field (`MSG.1` in the row for MSH-9, whose data
    /// type is MSG), which is not field 1 of the segment.
    Component(u16),
}

/// `"urn:oid:"+HD.2`, `"+"+XTN.5+" "+XTN.6`, `"message"`. `None` for narrative placeholders
/// (`/to be determined by the implementer/`).
fn parse_assignment(s: &'static str) -> Option<Vec<Part>> {
    let mut parts = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('"') {
            let end = r.find('"')?;
            parts.push(Part::Lit(&r[..end]));
            rest = r[end + 1..].trim_start();
        } else {
            let end = rest.find('+').unwrap_or(rest.len());
            let named = rest[..end].trim();
            let (first, second) = parse_element(named)?;
            // `XX.n` names a data type's component, `XXX-n` a segment's field.
            let of_type = named
                .find(['-', '.'])
                .is_some_and(|i| named[i..].starts_with('.'));
            parts.push(if of_type && second == 0 {
                Part::Component(first)
            } else {
                Part::Ref(first, second)
            });
            rest = &rest[end..];
        }
        rest = rest.strip_prefix('+').unwrap_or(rest).trim_start();
    }
    (!parts.is_empty()).then_some(parts)
}

/// The guide's narrative assignment for ED.5 (ED[Attachment], ED[DocumentReference]).
const BASE64_BY_ENCODING: &str = "/convert from A or HEX to binary64/";

/// A segment or data type map: `PID[Patient]`, `CX[Identifier]`.
#[derive(Debug)]
pub(crate) struct ElementMap {
    /// `PID[Patient]`.
    pub(crate) name: &'static str,
    /// The FHIR type the map builds (`Patient` for `PID[Patient]`, `Basic` for `PV1[Basic-EncounterHistory]`,
    /// `Identifier`, `string` for `XPN[String]`).
    pub(crate) target: Option<TypeShape>,
    pub(crate) rows: Vec<ElementRow>,
    /// A row's condition, or a data type map it applies, reads the segment (not only the value): what the map
    /// gives a value then depends on where the value is.
    pub(crate) reads_segments: bool,
    /// How deep data type maps nest below this one (16 or more for a cycle).
    pub(crate) nesting: u8,
    /// Field (component) number → the indexes of the rows that read it and write something, in order: a
    /// segment or value has few valued fields, so the converter visits their rows only.
    pub(crate) by_first: Vec<Vec<u32>>,
    /// Rows of a data type map that apply when their own component is empty: an assigned value under a condition
    /// that the component is NOT VALUED (`XTN.3 IF XTN.3 NOT VALUED AND XTN.4 VALUED → system = "email"`). They
    /// are visited with the rows of the valued components.
    pub(crate) when_absent: Vec<u32>,
    /// Rows for the whole segment or value rather than one of its elements (`AL1` → `clinicalStatus` =
    /// `"active"`, `OBR` → `intent` = `"order"`): constants, applied once each time the map is, after its other
    /// rows, when those gave the target some content (see [`whole_row_applies`]).
    pub(crate) whole: Vec<u32>,
}

/// A data type map the guide names but does not publish, onto a FHIR primitive (`ID[Code]`, `CWE[String]`,
/// `DTM[DateTime]`, `ID[Boolean]`): its rows read the value as that primitive (the element's first component, as a
/// row without a map does), with the row's vocabulary. Without this the rows wrote nothing: XTN.2 and XTN.3 gave no
/// ContactPoint `use` or `system`, PID-30 no `deceasedBoolean`. `CQ[Code]` is not one: a quantity's code is its
/// unit (CQ.2), not its first component.
fn onto_primitive(map: &str) -> bool {
    let Some((source, target)) = map.trim_end_matches(']').split_once('[') else {
        return false;
    };
    let mut name = target.to_string();
    if let Some(first) = name.get_mut(..1) {
        first.make_ascii_lowercase();
    }
    source != "CQ"
        && TypeShape::named(&name).is_some_and(|t| t.json_kind() != fhir::JsonKind::Object)
}

/// A resource a message row names: `Observation[2]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    /// A resource type (keys are compared often: a shape compares as a number).
    pub(crate) ty: TypeShape,
    /// The guide's instance number; 0 for none or `[n]` (a new instance per segment).
    pub(crate) n: u16,
}

/// `Observation[1].subject.reference=Patient[1].id`.
#[derive(Clone, Debug)]
pub(crate) struct Reference {
    pub(crate) from: Key,
    /// Where the Reference goes in `from`'s type, resolved once: the guide's path, plus the backbone element's
    /// first Reference-typed element when the path names a backbone element (`Encounter.diagnosis.reference`
    /// is `diagnosis.condition`). `None` when the path names no Reference: the link is never written.
    pub(crate) path: Option<(Vec<Step>, Resolved)>,
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
    /// Its index in [`Maps::elements`], when the guide publishes it.
    pub(crate) map: Option<usize>,
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
    pub(crate) code: &'static str,
    pub(crate) display: &'static str,
    pub(crate) system: &'static str,
}

/// A message map's rows, with what choosing them per segment needs indexed once.
#[derive(Debug, Default)]
pub(crate) struct MessageMap {
    pub(crate) rows: Vec<MessageRow>,
    /// Segment id → the indexes of its rows, in order.
    pub(crate) by_segment: HashMap<Box<str>, Vec<usize>>,
    /// The segments `:follow:` rows follow.
    pub(crate) anchors: Vec<Box<str>>,
}

/// A segment's default map: (resource, map name, map index in [`Maps::elements`]).
pub(crate) type DefaultMap = (Key, Box<str>, Option<usize>);

/// All maps.
pub(crate) struct Maps {
    pub(crate) messages: HashMap<Box<str>, MessageMap>,
    /// Segment and data type maps; rows refer to them by index.
    pub(crate) elements: Vec<ElementMap>,
    /// Per vocabulary map (see [`ElementRow::vocabulary_table`]): v2 code → FHIR coding.
    pub(crate) vocabulary: Vec<HashMap<Box<str>, Mapped, Fnv>>,
    /// For each segment id, the segment map the guide most often applies to it, for messages it does not map:
    /// (resource, map name, map index).
    pub(crate) default_maps: HashMap<Box<str>, Vec<DefaultMap>>,
    /// How many distinct segment-only conditions the element rows have (see [`ElementRow::cond_slot`]).
    pub(crate) cond_slots: usize,
    /// Rows whose condition could not be read, as `map element: condition` (listed, never applied).
    pub(crate) unparsed: Vec<String>,
    /// The resource types whose segment maps write a Quantity's unit `code` with no row for its `system` (RXO-4
    /// and RXO-12 through `CWE[Code]`): their Quantities are checked when the resource is finished.
    pub(crate) bare_unit_codes: Vec<TypeShape>,
}

/// The Quantity types, whose unit code needs its system (FHIR's qty-3).
pub(crate) fn is_quantity(t: TypeShape) -> bool {
    matches!(
        t.name(),
        "Quantity" | "SimpleQuantity" | "Duration" | "Age" | "Count" | "Distance"
    )
}

/// See [`Maps::bare_unit_codes`]: a row that writes `X.code` where X is a Quantity, without a data type map (which
/// would write the system too), in a map where no row writes `X.system`.
fn bare_unit_codes(elements: &[ElementMap]) -> Vec<TypeShape> {
    let mut out = Vec::new();
    for m in elements {
        let Some(target) = m.target.filter(|t| t.is_resource()) else {
            continue;
        };
        let parent_of = |row: &ElementRow| {
            let (Attr::Path(steps), Some(r)) = (&row.attr, &row.resolved) else {
                return None;
            };
            let n = steps.len();
            (n >= 2 && r.shapes.len() == n && is_quantity(r.shapes[n - 2].ty)).then(|| {
                (
                    steps[..n - 1].iter().map(|s| s.key).collect::<Vec<_>>(),
                    steps[n - 1].name,
                )
            })
        };
        let written: Vec<(Vec<u64>, &str)> = m.rows.iter().filter_map(&parent_of).collect();
        let bare = m.rows.iter().any(|r| {
            r.dt.is_none()
                && parent_of(r).is_some_and(|(parent, name)| {
                    name == "code" && !written.iter().any(|(p, n)| *p == parent && *n == "system")
                })
        });
        if bare && !out.contains(&target) {
            out.push(target);
        }
    }
    out
}

/// The compiled maps (built on first use, in a few milliseconds).
pub(crate) fn maps() -> &'static Maps {
    static MAPS: OnceLock<Maps> = OnceLock::new();
    MAPS.get_or_init(compile)
}

/// FNV-1a for the maps looked up per value (a vocabulary map by code): short keys, which the standard
/// library's SipHash costs more to hash than the lookup's compare. The tables are fixed when the maps compile: a
/// message's codes are only looked up, never inserted, so no input can crowd a bucket.
#[derive(Clone, Copy)]
pub(crate) struct FnvHasher(u64);

impl Default for FnvHasher {
    fn default() -> FnvHasher {
        FnvHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for FnvHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

pub(crate) type Fnv = std::hash::BuildHasherDefault<FnvHasher>;

impl Maps {
    /// The FHIR coding a row's vocabulary map gives a v2 code (none when the guide does not publish the map).
    pub(crate) fn vocabulary(&self, row: &ElementRow, code: &str) -> Option<&Mapped> {
        self.vocabulary
            .get(row.vocabulary_table? as usize)?
            .get(code)
    }
}

/// The codes a required binding allows in `ty.element` (`Encounter.location.status`), or `None` when the
/// element is not a `code` with a required, enumerable binding. Compiled apart from [`maps`] because resolving
/// the maps' paths needs it.
pub(crate) fn required_codes(ty: &str, element: &str) -> Option<&'static [&'static str]> {
    static CODES: OnceLock<HashMap<&'static str, Vec<&'static str>>> = OnceLock::new();
    let codes = CODES.get_or_init(|| {
        rows(REQUIRED_CODES)
            .filter_map(|r| Some((*r.first()?, r.get(1)?.split(' ').collect())))
            .collect()
    });
    let mut key = String::with_capacity(ty.len() + element.len() + 1);
    key.push_str(ty);
    key.push('.');
    key.push_str(element);
    codes.get(key.as_str()).map(|v| &v[..])
}

/// What FHIR requires of a resource type that the converter fills when the maps leave it out
/// (`generated/required-elements.tsv`). Asked for every resource a message makes: indexed by the type's number.
#[derive(Default)]
struct Required {
    /// The element that names whose record it is (`subject` of ServiceRequest, `patient` of Immunization).
    patient: Option<&'static str>,
    /// The type's `status` is required, and its required value set has `unknown`.
    status_unknown: bool,
}

fn required(ty: TypeShape) -> &'static Required {
    static BY_TYPE: OnceLock<Vec<Required>> = OnceLock::new();
    static NONE: Required = Required {
        patient: None,
        status_unknown: false,
    };
    let by_type = BY_TYPE.get_or_init(|| {
        let mut by_type: Vec<Required> = Vec::new();
        for r in rows(REQUIRED_ELEMENTS) {
            if let [ty, element, fill] = r[..]
                && let Some(ty) = TypeShape::resource(ty)
            {
                if by_type.len() <= ty.index() {
                    by_type.resize_with(ty.index() + 1, Required::default);
                }
                let req = &mut by_type[ty.index()];
                match fill {
                    "patient" => req.patient = req.patient.or(Some(element)),
                    "unknown" if element == "status" => req.status_unknown = true,
                    _ => {}
                }
            }
        }
        by_type
    });
    by_type.get(ty.index()).unwrap_or(&NONE)
}

/// The element of a resource type that names whose record it is, when FHIR requires it (`subject` of
/// ServiceRequest, `patient` of Immunization).
pub(crate) fn required_patient(ty: TypeShape) -> Option<&'static str> {
    required(ty).patient
}

/// FHIR requires the type's `status`, and its required value set has `unknown`.
pub(crate) fn status_may_be_unknown(ty: TypeShape) -> bool {
    required(ty).status_unknown
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
fn parse_steps(s: &'static str) -> Option<Vec<Step>> {
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
        out.push(Step::new(name, slot));
    }
    Some(out)
}

/// An attribute with its constant written in (`status="finished"`): the path, and the constant without its
/// quotes. Any other attribute is returned as it is.
fn split_literal(attr: &'static str) -> (&'static str, Option<&'static str>) {
    let attr = attr.trim();
    match attr.split_once("=\"") {
        Some((path, rest)) => match rest.strip_suffix('"') {
            Some(lit) if !lit.contains('"') => (path, Some(lit)),
            _ => (attr, None),
        },
        None => (attr, None),
    }
}

/// Whether a row for the whole segment or value is applied: a constant (no data type map: a map cannot read a
/// whole segment, as TXA's `agent[2].who` with XCN[Practitioner] would) at a path of the map's target that
/// begins with a single element. A constant that would make an item of a repeating element on its own is not:
/// MSH's `entity[1].role` = `"source"` and `agent[1].type` = `"assembler"` describe items whose required `what`
/// and `who` only the guide's narrative gives, and alone they would be invalid.
fn whole_row_applies(row: &ElementRow) -> bool {
    let (Some(_), None, Attr::Path(steps)) = (&row.assignment, &row.data_type_map, &row.attr)
    else {
        return false;
    };
    match &row.resolved {
        Some(r) => r.shapes.len() == steps.len() && r.shapes.first().is_some_and(|e| !e.many),
        None => false,
    }
}

fn parse_attr(s: &'static str) -> Option<Attr> {
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
            return Some(Attr::NewResource(steps));
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
/// `XPN[String]` → string, `MSH[Bundle]` → Bundle, and `HD[MessageHeader.source-endpoint]` → the backbone
/// element MessageHeader.source, which the map's rows (`name`, `endpoint`) are written against.
fn map_target(name: &str) -> Option<TypeShape> {
    let inner = name.split_once('[')?.1.trim_end_matches(']');
    if let Some((ty, path)) = inner.split('-').next()?.split_once('.') {
        let mut t = TypeShape::resource(ty)?;
        for step in path.split('.') {
            t = t.element(step)?.ty;
        }
        return (t.json_kind() == fhir::JsonKind::Object).then_some(t);
    }
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
    Some(Key {
        ty: TypeShape::resource(ty)?,
        n,
    })
}

/// The References cell: statements `A[1].x.reference=B[1].id`, separated by `;` or spaces (line breaks in the
/// guide, folded by the generator). Statements that assign a literal or reach into another element are left to
/// the segment maps.
fn parse_references(s: &'static str) -> Vec<Reference> {
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
            let mut path = parse_steps(path_text)?;
            let path = match Resolved::new(from.ty, &path).leaf(&path) {
                Some(leaf) if leaf.name() == "Reference" => Some(path),
                Some(leaf) if leaf.json_kind() == fhir::JsonKind::Object => leaf
                    .elements()
                    .find(|(_, e)| e.ty.name() == "Reference")
                    .map(|(name, _)| {
                        path.push(Step::new(name, 0));
                        path
                    }),
                _ => None,
            }
            .map(|p| {
                let r = Resolved::new(from.ty, &p);
                (p, r)
            });
            Some(Reference { from, path, to })
        })
        .collect()
}

/// Marks the extension items that several fields of one map build together.
///
/// The guide numbers a map's extensions (`extension[6]`), and sometimes gives two fields the same number by
/// mistake (OBX-10, OBX-19 and OBX-30 all write `extension[2]`, with different URLs): an extension's item is then
/// told apart by the field as well. Some fields share one on purpose: PID-35 (species) and PID-36 (breed) are the
/// two parts of one `patient-animal` extension, NTE-3, NTE-5 and NTE-6 the text, author and time of one
/// Annotation. Such an item is shared when every field that writes it assigns it the same URL and no two fields
/// write the same element below it (IN1-10 and IN1-49 each write a whole `subscriberId` identifier: two items).
fn share_extensions(elements: &mut [ElementMap]) {
    /// The elements a row writes below step `at` of its path: its own steps after it, each extended by the first
    /// step of every row of its data type map (a map onto an Annotation writes `text`, another its `author`).
    fn below(elements: &[ElementMap], row: &ElementRow, steps: &[Step], at: usize) -> Vec<String> {
        // Names and instance numbers (`extension[1]` and `extension[2]` are different elements).
        let own: Vec<String> = steps[at + 1..]
            .iter()
            .map(|s| format!("{}#{:x}", s.name, s.key))
            .collect();
        let own = own.join(".");
        match row.dt {
            Some(d) => elements[d]
                .rows
                .iter()
                .filter_map(|r| match &r.attr {
                    // A row without a path writes nothing.
                    Attr::Path(p) | Attr::NewResource(p) | Attr::InResource(p) => {
                        p.first().map(|s| format!("{own}/{}", s.name))
                    }
                    Attr::Value | Attr::This => Some(format!("{own}/$value")),
                })
                .collect(),
            // A data type map the guide names but does not publish writes nothing.
            None if row.data_type_map.is_some() => Vec::new(),
            None => vec![own],
        }
    }
    let mut marks: Vec<(usize, usize, usize)> = Vec::new();
    for (mi, map) in elements.iter().enumerate() {
        // Per extension item (the keys of the steps down to it): the rows that write below it, and where.
        let mut items: HashMap<Vec<u64>, Vec<(usize, usize)>> = HashMap::new();
        for (ri, row) in map.rows.iter().enumerate() {
            let (Attr::Path(steps) | Attr::NewResource(steps)) = &row.attr else {
                continue;
            };
            for (at, step) in steps.iter().enumerate() {
                if step.extension {
                    let key = steps[..=at].iter().map(|s| s.key).collect();
                    items.entry(key).or_default().push((ri, at));
                }
            }
        }
        for rows in items.values() {
            let mut fields: HashMap<u16, (Option<&Vec<Part>>, Vec<String>)> = HashMap::new();
            for &(ri, at) in rows {
                let row = &map.rows[ri];
                let (Attr::Path(steps) | Attr::NewResource(steps)) = &row.attr else {
                    continue;
                };
                let field = fields.entry(row.first).or_default();
                if steps.len() == at + 2 && steps[at + 1].name == "url" {
                    field.0 = row.assignment.as_ref();
                } else {
                    field.1.extend(below(elements, row, steps, at));
                }
            }
            if fields.len() < 2 {
                continue;
            }
            let mut urls = fields.values().map(|(url, _)| *url);
            let first_url = urls.next().flatten();
            let same_url = first_url.is_some() && urls.all(|u| u == first_url);
            let mut written = std::collections::HashSet::new();
            let disjoint = fields.values().all(|(_, leaves)| {
                leaves
                    .iter()
                    .collect::<std::collections::HashSet<_>>()
                    .iter()
                    .all(|l| written.insert(*l))
            });
            if same_url && disjoint {
                marks.extend(rows.iter().map(|&(ri, at)| (mi, ri, at)));
            }
        }
    }
    for (mi, ri, at) in marks {
        if let Attr::Path(steps) | Attr::NewResource(steps) = &mut elements[mi].rows[ri].attr {
            steps[at].shared = true;
        }
    }
}

fn compile() -> Maps {
    let mut unparsed = Vec::new();
    let mut elements: Vec<ElementMap> = Vec::new();
    let mut element_index: HashMap<Box<str>, usize> = HashMap::new();
    let mut cond_slots: HashMap<String, u32> = HashMap::new();
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
            // `AL1` in AL1[AllergyIntolerance], `MSG` in MSG[Coding]: the whole segment or value, element 0.
            let whole = map.split('[').next() == Some(element.trim());
            let Some((first, second)) = parse_element(element).or(whole.then_some((0, 0))) else {
                continue;
            };
            let index = *element_index.entry(map.into()).or_insert_with(|| {
                elements.push(ElementMap {
                    name: map,
                    target: map_target(map),
                    rows: Vec::new(),
                    by_first: Vec::new(),
                    when_absent: Vec::new(),
                    whole: Vec::new(),
                    reads_segments: false,
                    nesting: 0,
                });
                elements.len() - 1
            });
            let entry = &mut elements[index];
            // `Quantity.code` in CWE[Quantity]: some maps name their own type first.
            let target_name = entry.target.map(|t| t.name());
            let (attr, attr_literal) = split_literal(attr);
            let attr = parse_attr(attr).map(|a| match a {
                Attr::Path(mut steps) if steps.len() > 1 && Some(steps[0].name) == target_name => {
                    steps.remove(0);
                    Attr::Path(steps)
                }
                other => other,
            });
            // An assignment the converter cannot read (`/to be determined by the implementer/` for MSH-10's
            // identifier system) leaves the row to the implementer: without this, the element's own value would be
            // written where the guide meant a constant.
            // One such narrative the converter does carry out: an ED's data converted to base64 by its encoding
            // (`Ctx::base64_binary`, which every base64Binary value from v2 text goes through).
            let unreadable_assignment = !assign.trim().is_empty()
                && parse_assignment(assign).is_none()
                && assign.trim() != BASE64_BY_ENCODING;
            let Some(attr) = attr.filter(|_| !r[4].trim().is_empty() && !unreadable_assignment)
            else {
                // Rows without a target (or in a form not read) still list the element: the converter
                // reports valued elements that no row maps.
                entry.rows.push(ElementRow {
                    first,
                    second,
                    cond: Cond::Unparsed,
                    cond_slot: None,
                    guard: None,
                    narrative_only: false,
                    when_absent: false,
                    attr: Attr::Path(Vec::new()),
                    fhir_primitive: None,
                    data_type_map: None,
                    dt: None,
                    vocabulary: None,
                    vocabulary_table: None,
                    assignment: None,
                    label: element,
                    attr_label: "",
                    resolved: None,
                    resolved_other: OnceLock::new(),
                });
                continue;
            };
            let prefix = element.split(['-', '.']).next().unwrap_or("");
            let own = Ref {
                segment: (!is_type).then(|| prefix.into()),
                first,
                second,
            };
            let cond = condition::parse(cond, own.clone(), is_type.then_some(prefix));
            if cond.is_unparsed() {
                unparsed.push(format!("{map} {element}: {cond_text}", cond_text = r[2]));
            }
            // The constant is in the assignment cell, or (seven rows of the guide) written into the attribute
            // itself: `identifier[1].type.coding.code="PLAC"`, `status="finished"`.
            let assignment = match (parse_assignment(assign), attr_literal) {
                (None, Some(lit)) if assign.trim().is_empty() => Some(vec![Part::Lit(lit)]),
                (a, _) => a,
            };
            let when_absent = is_type && assignment.is_some() && cond.requires_empty(&own);
            let attr_label = match &attr {
                Attr::Path(s) | Attr::NewResource(s) | Attr::InResource(s) => {
                    s.first().map_or("", |s| s.name)
                }
                Attr::Value => "$value",
                Attr::This => "$this",
            };
            let resolved = entry.target.and_then(|t| match &attr {
                Attr::Path(steps) | Attr::NewResource(steps) => Some(Resolved::new(t, steps)),
                Attr::Value if t.json_kind() == fhir::JsonKind::Object => {
                    Some(Resolved::new(t, &VALUE_STEP))
                }
                _ => None,
            });
            let cond_slot = (cond != Cond::Always && cond.segment_only()).then(|| {
                let n = cond_slots.len() as u32;
                *cond_slots.entry(format!("{cond:?}")).or_insert(n)
            });
            entry.rows.push(ElementRow {
                first,
                second,
                guard: cond.guard(),
                cond,
                cond_slot,
                narrative_only: narrative == "N",
                when_absent,
                attr,
                fhir_primitive: TypeShape::named(fhir_type.trim())
                    .filter(|t| t.json_kind() != fhir::JsonKind::Object),
                data_type_map: opt(dt_map),
                dt: None,
                vocabulary: opt(vocab),
                vocabulary_table: None,
                assignment,
                label: element,
                attr_label,
                resolved,
                resolved_other: OnceLock::new(),
            });
        }
    }
    for m in &mut elements {
        for (i, row) in m.rows.iter_mut().enumerate() {
            row.dt = row
                .data_type_map
                .as_deref()
                .and_then(|d| element_index.get(d).copied());
            if row.dt.is_none() && row.data_type_map.as_deref().is_some_and(onto_primitive) {
                row.data_type_map = None;
            }
            // Rows with no target are never applied; element 0, the whole segment or value, is never valued: its
            // constants are applied apart.
            if matches!(&row.attr, Attr::Path(p) if p.is_empty()) {
                continue;
            }
            if row.first == 0 {
                if whole_row_applies(row) {
                    m.whole.push(i as u32);
                }
                continue;
            }
            if row.when_absent {
                m.when_absent.push(i as u32);
                continue;
            }
            let f = usize::from(row.first);
            if m.by_first.len() <= f {
                m.by_first.resize_with(f + 1, Vec::new);
            }
            m.by_first[f].push(i as u32);
        }
    }

    share_extensions(&mut elements);

    // Which maps read the segment, through their own conditions or a data type map they apply.
    let mut reads: Vec<bool> = elements
        .iter()
        .map(|m| m.rows.iter().any(|r| r.cond.reads_segment()))
        .collect();
    loop {
        let mut changed = false;
        for (i, m) in elements.iter().enumerate() {
            if !reads[i] && m.rows.iter().any(|r| r.dt.is_some_and(|d| reads[d])) {
                reads[i] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for (m, r) in elements.iter_mut().zip(reads) {
        m.reads_segments = r;
    }
    // How deep data type maps nest below each map: relaxed until nothing grows (a cycle stops at the cap).
    const NESTING_CAP: u8 = 16;
    for _ in 0..NESTING_CAP {
        let mut changed = false;
        for i in 0..elements.len() {
            let deepest = elements[i]
                .rows
                .iter()
                .filter_map(|r| r.dt)
                .map(|d| elements[d].nesting.saturating_add(1).min(NESTING_CAP))
                .max()
                .unwrap_or(0);
            if deepest > elements[i].nesting {
                elements[i].nesting = deepest;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }

    let mut messages: HashMap<Box<str>, MessageMap> = HashMap::new();
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
        let segment_map = opt(seg_map);
        messages
            .entry(map.into())
            .or_default()
            .rows
            .push(MessageRow {
                groups,
                segment: seg_id.into(),
                follows,
                cond,
                narrative_only: narrative == "N",
                key: parse_key(target).or_else(|| {
                    // A row naming only its segment map (`SFT[Device]` under `Provenance[1].entity.what(Device)`)
                    // builds the map's resource.
                    let ty = map_target(seg_map)?;
                    ty.is_resource().then_some(Key { ty, n: 0 })
                }),
                map: segment_map
                    .as_deref()
                    .and_then(|m| element_index.get(m).copied()),
                segment_map,
                references: parse_references(refs),
                scope_depth: 0,
                creates: false,
            });
    }
    for mm in messages.values_mut() {
        let rows = &mut mm.rows;
        let mut first_of: HashMap<Key, usize> = HashMap::new();
        for i in 0..rows.len() {
            let Some(key) = rows[i].key else {
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
        for (i, row) in rows.iter().enumerate() {
            mm.by_segment
                .entry(row.segment.clone())
                .or_default()
                .push(i);
            if let Some(f) = &row.follows
                && !mm.anchors.contains(f)
            {
                mm.anchors.push(f.clone());
            }
        }
    }
    let mut default_maps: HashMap<Box<str>, Vec<DefaultMap>> = HashMap::new();
    // A segment takes the choices of the first map (in this order) that maps it, and of that map only: mixing
    // maps gave an RDE's pharmacy ORC both ORU's DiagnosticReport and VXU's Immunization. ADT^A01 first (the
    // guide's most worked-out map), then ORM^O01 (an ORC in an unmapped message is an order more often than a
    // result), then ORU^R01, then the rest by name.
    let mut names: Vec<&Box<str>> = messages.keys().collect();
    let rank = |n: &str| match n {
        "ADT_A01" => 0,
        "ORM_O01" => 1,
        "ORU_R01" => 2,
        _ => 3,
    };
    names.sort_by_key(|n| (rank(n), n.to_string()));
    for name in names {
        let mut taken: HashMap<Box<str>, Vec<DefaultMap>> = HashMap::new();
        for row in &messages[name].rows {
            let (Some(key), Some(m)) = (&row.key, &row.segment_map) else {
                continue;
            };
            if row.cond != Cond::Always || row.narrative_only || !row.creates {
                continue;
            }
            if default_maps.contains_key(&row.segment) {
                continue; // an earlier map already chose for this segment
            }
            let list = taken.entry(row.segment.clone()).or_default();
            if list.iter().all(|(_, existing, _)| existing != m)
                && list.iter().all(|(k, _, _)| k.ty != key.ty)
            {
                list.push((*key, m.clone(), row.map));
            }
        }
        default_maps.extend(taken);
    }
    let mut vocabulary: Vec<HashMap<Box<str>, Mapped, Fnv>> = Vec::new();
    let mut vocabulary_index: HashMap<&str, u32> = HashMap::new();
    for r in rows(VOCABULARY) {
        let [map, code, _v2system, _cond, fcode, display, system] = r[..] else {
            continue;
        };
        let i = *vocabulary_index.entry(map).or_insert_with(|| {
            vocabulary.push(HashMap::default());
            (vocabulary.len() - 1) as u32
        });
        vocabulary[i as usize].entry(code.into()).or_insert(Mapped {
            code: fcode,
            display,
            system,
        });
    }
    for row in elements.iter_mut().flat_map(|m| m.rows.iter_mut()) {
        row.vocabulary_table = row
            .vocabulary
            .as_deref()
            .and_then(|v| vocabulary_index.get(v).copied());
    }
    let bare_unit_codes = bare_unit_codes(&elements);
    Maps {
        bare_unit_codes,
        messages,
        elements,
        vocabulary,
        default_maps,
        cond_slots: cond_slots.len(),
        unparsed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_primitives_extensions_resolve_under_its_underscore_member() {
        let patient = TypeShape::resource("Patient").unwrap();
        let steps = parse_steps("birthDate.extension[1].valueDateTime").unwrap();
        let r = Resolved::new(patient, &steps);
        assert_eq!(r.leaf(&steps).map(|t| t.name()), Some("dateTime"));
        assert_eq!(r.renamed, [(0, "_birthDate")]);
        assert_eq!(r.member_name(0, "birthDate"), "_birthDate");
        assert_eq!(r.member_name(1, "extension"), "extension");
        // The same name twice is one string.
        let again = Resolved::new(patient, &steps);
        assert!(std::ptr::eq(r.renamed[0].1, again.renamed[0].1));
        // A path without a primitive's extension renames nothing.
        let plain = parse_steps("name[1].family").unwrap();
        assert!(Resolved::new(patient, &plain).renamed.is_empty());
        // A repeating primitive's extensions (AllergyIntolerance.category) would need `_category` kept in step with
        // `category`: the path does not resolve, and nothing is written.
        let allergy = TypeShape::resource("AllergyIntolerance").unwrap();
        let steps = parse_steps("category.extension[1].url").unwrap();
        assert_eq!(Resolved::new(allergy, &steps).leaf(&steps), None);
    }

    #[test]
    fn a_constant_in_the_attribute_is_split_from_its_path() {
        assert_eq!(
            split_literal("identifier[1].type.coding.code=\"PLAC\""),
            ("identifier[1].type.coding.code", Some("PLAC"))
        );
        assert_eq!(
            split_literal(" status=\"finished\" "),
            ("status", Some("finished"))
        );
        assert_eq!(split_literal("status"), ("status", None));
        // Not a constant: left for the path parser, which rejects it.
        assert_eq!(split_literal("status=finished"), ("status=finished", None));
        assert_eq!(split_literal("a=\"b\"c\""), ("a=\"b\"c\"", None));
    }

    /// `(map, element, path)` of every row whose path has a shared extension step.
    fn shared() -> Vec<String> {
        let mut out = Vec::new();
        for m in &maps().elements {
            for r in &m.rows {
                if let Attr::Path(steps) | Attr::NewResource(steps) = &r.attr
                    && steps.iter().any(|s| s.shared)
                {
                    let path: Vec<&str> = steps.iter().map(|s| s.name).collect();
                    out.push(format!("{} {} {}", m.name, r.label, path.join(".")));
                }
            }
        }
        out
    }

    #[test]
    fn resources_with_bare_unit_codes_are_known_when_the_maps_compile() {
        let names: Vec<&str> = maps().bare_unit_codes.iter().map(|t| t.name()).collect();
        // RXO-4 and RXO-12 write `doseRange.low.code` and `dispenseRequest.quantity.code` through CWE[Code].
        assert!(names.contains(&"MedicationRequest"), "{names:?}");
        // OBX-6 goes through CWE[Quantity], which writes the system too; PV1's length of stay has none.
        for t in ["Observation", "Patient", "Encounter", "MessageHeader"] {
            assert!(!names.contains(&t), "{t}: {names:?}");
        }
    }

    #[test]
    fn extensions_two_fields_build_together_are_shared_and_others_are_not() {
        let shared = shared();
        let has = |map: &str, element: &str| {
            shared
                .iter()
                .any(|s| s.starts_with(&format!("{map} {element} ")))
        };
        // One patient-animal extension of species and breed.
        assert!(
            has("PID[Patient]", "PID-35") && has("PID[Patient]", "PID-36"),
            "{shared:#?}"
        );
        // One Annotation of NTE-3's text, NTE-5's author and NTE-6's time.
        for nte in ["NTE-3", "NTE-5", "NTE-6"] {
            assert!(has("NTE[Appointment-Comment]", nte), "{nte}: {shared:#?}");
        }
        // Two whole identifiers (IN1-10, IN1-49), and one number given to extensions of different URLs
        // (OBX-10, OBX-19, OBX-30; PV2-8 and PV2-38): apart.
        for (map, element) in [
            ("IN1[Coverage]", "IN1-10"),
            ("IN1[Coverage]", "IN1-49"),
            ("OBX[Observation]", "OBX-19"),
            ("PV2[Encounter]", "PV2-38"),
        ] {
            assert!(!has(map, element), "{map} {element}: {shared:#?}");
        }
    }
}
