//! The converter: walks a message's segments in their group tree, applies the guide's message map rows to each,
//! the segment maps to the resources the rows name, the data type maps to each value, and assembles the Bundle.

use crate::condition::{Cond, Facts, GuardValue, Ref, eq_short};
use crate::maps::{
    Attr, DefaultMap, ElementMap, ElementRow, Fnv as FnvBuild, Key, MessageMap, MessageRow, Part,
    Resolved, Step, VALUE_STEP, maps,
};
use crate::systems::system_uri;
use crate::tree::{Fnv, LongArrays, Node, fnv, write_str};
use crate::value::{self, Unfit};
use crate::{BundleType, CodeCheck, Conversion, Error, Note, Options, Severity};
use bumpalo::Bump;
use bumpalo::collections::Vec as BVec;
use fhir::TypeShape;
use hl7v2::{Level, Message, Parts, Segment, Value};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::OnceLock;

/// Data type maps nest (CX → HD → ...); the guide's deepest chain is four; this bounds hostile cycles.
const MAX_DEPTH: usize = 6;

/// A segment's group instances from the message root: (name, 0-based repetition), borrowed from its group
/// path.
type Groups<'p> = [(&'p str, u32)];

/// One resource being built.
struct Built<'b> {
    key: Key,
    ty: TypeShape,
    id: &'b str,
    node: Node<'b>,
    /// The creating segment (its group instances are the resource's scope).
    creator: usize,
    /// The id of the newest Patient when it was made: the patient of its part of the message, for a type whose
    /// patient FHIR requires ([`crate::maps::required_patient`]).
    patient: Option<&'b str>,
}

struct Ctx<'m, 'a> {
    msg: &'m Message<'a>,
    opts: &'m Options<'m>,
    /// The arena of the tree being built (see [`crate::tree`]).
    bump: &'m Bump,
    /// The message's bytes as text, when they are UTF-8: a plain value's text is then a slice of it, found
    /// without checking its bytes again.
    text: Option<&'a str>,
    /// The bytes a plain value holds (see [`first_text_plain`]), by the message's delimiters.
    plain: PlainBytes,
    /// Identity of the message for ids: sender and control id.
    /// The hash of the identity, the first part of every id's hash.
    identity: Fnv,
    resources: Vec<Built<'m>>,
    /// The indexes of `resources` by key, in creation order: a row's instance and a link's ends are the newest
    /// of a key, found without walking every resource (a message of thousands of OBX made that quadratic).
    by_key: Vec<(Key, BVec<'m, usize>)>,
    /// Resources built from a value (`assigner(Organization)`), deduplicated by content.
    value_resources: Vec<(&'m str, TypeShape, Node<'m>)>,
    bundle: Node<'m>,
    /// The ids of the resources the References column linked to, and whether a row wrote a `reference` from the
    /// message: what may refer to a resource left bare (see [`Ctx::finish`]), known without a walk of the tree.
    linked: Vec<&'m str>,
    reference_from_message: bool,
    /// The id of the newest Patient made so far (see [`Built::patient`]).
    last_patient: Option<&'m str>,
    notes: Notes,
    /// The value resources built so far and their full URLs (see [`Ctx::value_resource`]).
    /// Scanned while short; past [`SCAN_MAX`] entries, moved to `value_memo_hashed` (a message may build
    /// thousands: scanning would be quadratic).
    value_memo: Vec<(ValueKey<'a>, Option<&'m str>)>,
    value_memo_hashed: HashMap<ValueKey<'a>, Option<&'m str>, FnvBuild>,
    /// The ids of `value_resources` once there are more than [`SCAN_MAX`] (scanned before).
    value_ids: HashSet<&'m str, FnvBuild>,
    /// Spare row lists for [`Ctx::apply_map`] (which recurses), so that each call does not allocate its own. In
    /// the arena, as the lists themselves: taken from it without a call to the allocator, and given back with it.
    spare: BVec<'m, BVec<'m, u32>>,
    /// Spare value lists for [`Ctx::apply_map`]: a row's repetitions, read once.
    spare_values: BVec<'m, BVec<'m, Value<'a>>>,
    /// Spare lists of the (attribute, element) pairs [`Ctx::apply_map`] wrote.
    spare_written: BVec<'m, BVec<'m, (&'static str, u16, u16)>>,
    /// Per segment-only condition ([`ElementRow::cond_slot`]): the segment it was last evaluated for (1-based;
    /// 0 = never) and its value then. Sized on first use.
    conds: Vec<(u32, bool)>,
    /// The segment being converted, 1-based.
    segment: u32,
    /// The tags of long arrays' items (see [`LongArrays`]).
    long: LongArrays,
    /// The conversion passed [`Options::max_memory`] (see [`Ctx::over_budget`]).
    over: bool,
    /// The memory kept per segment before the conversion started (see [`PER_SEGMENT`]).
    fixed: usize,
    /// A data type map is being tried onto a primitive, which [`Ctx::element_of_holder`] may answer instead: a
    /// path that names no element of the primitive is then no loss to report.
    trying: bool,
}

/// Where a value comes from, for the report and for extension slot tags: `PID-7`, or `PID: CX.4` inside a value.
/// Kept in parts and written out only when a note needs it: most rows make no note.
#[derive(Clone, Copy)]
struct Label<'x> {
    segment: Option<&'x str>,
    label: &'x str,
}

impl Label<'_> {
    fn plain(label: &str) -> Label<'_> {
        Label {
            segment: None,
            label,
        }
    }

    /// Feeds the label's text into a hash, as one part would be.
    fn hash(self, h: Fnv) -> Fnv {
        match self.segment {
            Some(s) => h
                .bytes(s.as_bytes())
                .bytes(b": ")
                .bytes(self.label.as_bytes()),
            None => h.bytes(self.label.as_bytes()),
        }
        .end()
    }
}

impl fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.segment {
            Some(s) => write!(f, "{s}: {}", self.label),
            None => f.write_str(self.label),
        }
    }
}

/// A segment read once for all the rows applied to it: its id and its fields (the OBX map has a hundred rows,
/// most of which ask for a field by number).
struct SegView<'a> {
    id: &'a str,
    header: bool,
    /// Field `n` at index `n` (index 0 is `None`).
    fields: Vec<Option<Value<'a>>>,
    /// The first valued text of the segment's elements that conditions asked for, by (field, component): the OBX
    /// map's alternatives for OBX-5 ask for OBX-2 a dozen times.
    firsts: RefCell<Vec<FirstText<'a>>>,
    /// The number of valued repetitions of the segment's elements that conditions counted, by (field,
    /// component): the ORU map's four alternatives for an OBX each count OBX-5.
    counts: RefCell<Vec<(u16, u16, usize)>>,
}

/// An element (field, component) and its first valued text, `None` when it is not valued.
type FirstText<'a> = (u16, u16, Option<Cow<'a, str>>);

impl<'a> SegView<'a> {
    /// Reads `seg`, reusing the allocations of the segment read before it (`spare`).
    fn new(seg: Segment<'_, 'a>, spare: Option<SegView<'a>>) -> SegView<'a> {
        let (mut fields, mut firsts, mut counts) = match spare {
            Some(v) => (v.fields, v.firsts.into_inner(), v.counts.into_inner()),
            None => Default::default(),
        };
        fields.clear();
        firsts.clear();
        counts.clear();
        fields.push(None);
        fields.extend(seg.fields().take(MAX_FIELDS).map(Some));
        SegView {
            id: seg.id(),
            header: seg.is_header(),
            fields,
            firsts: RefCell::new(firsts),
            counts: RefCell::new(counts),
        }
    }

    fn field(&self, n: usize) -> Option<Value<'a>> {
        self.fields.get(n).copied().flatten()
    }
}

/// What a row reads from: a segment's fields, or a value's components.
#[derive(Clone, Copy)]
enum Src<'m, 'a> {
    Seg(&'m SegView<'a>),
    Val(Value<'a>, &'m SegView<'a>),
}

/// The repetitions of a field, or the one value a component is.
#[derive(Clone)]
enum Reps<'a> {
    One(Option<Value<'a>>),
    Many(Parts<'a>),
}

impl<'a> Iterator for Reps<'a> {
    type Item = Value<'a>;
    fn next(&mut self) -> Option<Value<'a>> {
        match self {
            Reps::One(v) => v.take(),
            Reps::Many(p) => p.next(),
        }
    }
}

impl<'m, 'a> Src<'m, 'a> {
    fn view(&self) -> &'m SegView<'a> {
        match self {
            Src::Seg(s) | Src::Val(_, s) => s,
        }
    }

    /// The repetitions of an element (`first` = field or component, `second` = component or subcomponent),
    /// non-empty ones only. An iterator (cheap to clone, to count or to ask whether there is any) rather than a
    /// list: most rows read an element that is not valued.
    fn element(
        &self,
        first: u16,
        second: u16,
    ) -> impl Iterator<Item = Value<'a>> + Clone + use<'a> {
        let (first, second) = (first as usize, second as usize);
        let reps = match self {
            Src::Seg(s) => field_reps(s.field(first), s.header, first),
            Src::Val(v, _) => Reps::One(child(*v, first)),
        };
        reps.filter_map(move |r| {
            if second > 0 {
                child(r, second)
            } else {
                Some(r)
            }
        })
        .filter(|v| !v.is_empty() && !v.is_null())
    }

    /// What [`Src::element`] yields, appended to `out`: written out without iterator adaptors, as every row
    /// applied reads its element this way.
    /// `parts`: for a value, its [`child_parts`] (split once for all the rows of its map).
    fn read_element(
        &self,
        first: u16,
        second: u16,
        parts: &[Value<'a>],
        out: &mut BVec<'_, Value<'a>>,
    ) {
        let (first, second) = (first as usize, second as usize);
        let mut add = |r: Value<'a>| {
            let v = if second > 0 {
                child(r, second)
            } else {
                Some(r)
            };
            if let Some(v) = v
                && !v.is_empty()
                && !v.is_null()
            {
                out.push(v);
            }
        };
        match self {
            Src::Seg(s) => match s.field(first) {
                Some(f) if s.header && first <= 2 => add(f),
                // An empty field is one empty repetition, whose parts are empty.
                Some(f) if f.is_empty() => {}
                Some(f) => f.parts().for_each(add),
                None => {}
            },
            Src::Val(..) => {
                if let Some(&c) = first.checked_sub(1).and_then(|i| parts.get(i)) {
                    add(c);
                }
            }
        }
    }
}

/// What [`child`] gives of `v` for 1, 2, ...: its components (of its first repetition), or its subcomponents.
fn child_parts<'a>(v: Value<'a>, out: &mut BVec<'_, Value<'a>>) {
    match v.level() {
        Level::Field => {
            if let Some(r) = v.repetition(1) {
                out.extend(r.parts());
            }
        }
        Level::Repetition | Level::Component => out.extend(v.parts()),
        _ => out.push(v),
    }
}

/// The repetitions of field `n` (MSH-1 and MSH-2 are one value each).
fn field_reps(f: Option<Value<'_>>, header: bool, n: usize) -> Reps<'_> {
    match f {
        Some(f) if header && n <= 2 => Reps::One(Some(f)),
        Some(f) => Reps::Many(f.parts()),
        None => Reps::One(None),
    }
}

/// The non-empty repetitions of an element of a segment other than the one being converted.
fn other_element<'a>(
    s: Segment<'_, 'a>,
    first: u16,
    second: u16,
) -> impl Iterator<Item = Value<'a>> {
    let (first, second) = (first as usize, second as usize);
    field_reps(s.field(first), s.is_header(), first)
        .filter_map(move |r| {
            if second > 0 {
                child(r, second)
            } else {
                Some(r)
            }
        })
        .filter(|v| !v.is_empty() && !v.is_null())
}

/// The rows of `map` that may apply to `src`, in order: those reading a field (component) that is not empty.
/// `parts`: for a value, its [`child_parts`].
fn valued_rows(map: &ElementMap, src: Src<'_, '_>, parts: &[Value<'_>], out: &mut BVec<'_, u32>) {
    let mut add = |f: usize, v: Value<'_>| {
        if let Some(rows) = map.by_first.get(f)
            && !rows.is_empty()
            && !v.is_empty()
        {
            out.extend_from_slice(rows);
        }
    };
    match src {
        Src::Seg(s) => {
            for f in 1..map.by_first.len().min(s.fields.len()) {
                if let Some(v) = s.field(f) {
                    add(f, v);
                }
            }
        }
        // The parts `child` picks from.
        Src::Val(..) => {
            parts
                .iter()
                .take(map.by_first.len())
                .enumerate()
                .for_each(|(i, &p)| add(i + 1, p));
            out.extend_from_slice(&map.when_absent);
        }
    }
    out.sort_unstable();
}

/// The text of an element named by an assignment (`HD.2` of the value, or a field of the segment).
fn inner_or_seg<'a>(src: Src<'_, 'a>, first: u16, second: u16) -> Option<Cow<'a, str>> {
    let t = first_text(src.element(first, second).next()?);
    (!t.is_empty()).then_some(t)
}

/// Component `n` of a repetition, subcomponent `n` of a component.
fn child(v: Value<'_>, n: usize) -> Option<Value<'_>> {
    match v.level() {
        Level::Field | Level::Repetition => v.component(n),
        Level::Component => v.subcomponent(n),
        _ => (n == 1).then_some(v),
    }
}

struct SrcFacts<'x, 'm, 'a> {
    src: Src<'m, 'a>,
    /// For a value, its [`child_parts`] (empty for a segment).
    parts: &'x [Value<'a>],
    msg: &'x Message<'a>,
    /// Segment ids present in the segment's group instance and its ancestors (for `IF ORC VALUED`).
    present: &'x dyn Fn(&str) -> bool,
}

/// Visits the trimmed, non-empty texts of `vals` while `visit` returns true.
fn visit_texts<'a>(vals: impl Iterator<Item = Value<'a>>, visit: &mut dyn FnMut(&str) -> bool) {
    for v in vals {
        let t = v.text();
        let t = t.trim();
        if !t.is_empty() && !visit(t) {
            return;
        }
    }
}

/// The first non-empty trimmed text of the segment's element (`first`, `second`), as [`Src::element`] yields it,
/// walked without iterator adaptors (conditions ask for it once per segment; most of their cost was the adaptors).
fn first_in_segment<'a>(view: &SegView<'a>, first: u16, second: u16) -> Option<Cow<'a, str>> {
    let f = view.field(usize::from(first))?;
    let text_at = |r: Value<'a>| {
        let v = if second > 0 {
            child(r, usize::from(second))?
        } else {
            r
        };
        if v.is_empty() || v.is_null() {
            return None;
        }
        text_of(v)
    };
    if view.header && first <= 2 {
        return text_at(f);
    }
    f.parts().find_map(text_at)
}

/// A value's trimmed text, when it is not empty.
fn text_of(v: Value<'_>) -> Option<Cow<'_, str>> {
    match v.text() {
        Cow::Borrowed(t) => {
            let t = t.trim();
            (!t.is_empty()).then_some(Cow::Borrowed(t))
        }
        Cow::Owned(t) => {
            let tt = t.trim();
            if tt.is_empty() {
                None
            } else if tt.len() == t.len() {
                Some(Cow::Owned(t))
            } else {
                Some(Cow::Owned(tt.to_string()))
            }
        }
    }
}

impl<'a> SrcFacts<'_, '_, 'a> {
    /// The component of the value that `r` names (what `element` yields: one value at most), not empty and not
    /// null.
    fn component(&self, v: Value<'a>, r: &Ref) -> Option<Value<'a>> {
        let first = (r.first as usize).checked_sub(1);
        match first.and_then(|i| self.parts.get(i)) {
            Some(&c) => Some(c),
            // The value's parts were not split (facts built elsewhere): found as `child` finds them.
            None if self.parts.is_empty() => child(v, r.first as usize),
            None => None,
        }
        .and_then(|c| {
            if r.second > 0 {
                child(c, r.second as usize)
            } else {
                Some(c)
            }
        })
        .filter(|c| !c.is_empty() && !c.is_null())
    }
}

/// Whether a value has text ([`text_of`] gives some), known from its bytes when they are printable ASCII and
/// spaces without an escape (their text is themselves in every character set), decoded otherwise.
fn has_text(v: Value<'_>, escape: Option<u8>) -> bool {
    let raw = v.raw();
    let plain = raw.iter().all(|&b| {
        (b.is_ascii_graphic() || b.is_ascii_whitespace() || b == 0x0b) && Some(b) != escape
    });
    if plain {
        raw.iter().any(|&b| b.is_ascii_graphic())
    } else {
        text_of(v).is_some()
    }
}

impl Facts for SrcFacts<'_, '_, '_> {
    fn valued(&self, r: &Ref) -> bool {
        if let (None, Src::Val(v, _)) = (&r.segment, self.src) {
            return self
                .component(v, r)
                .is_some_and(|c| has_text(c, self.msg.delimiters().escape));
        }
        crate::condition::first_is(self, r, |_| true)
    }

    fn first(&self, r: &Ref, visit: &mut dyn FnMut(Option<&str>)) {
        let view = self.src.view();
        if let (None, Src::Val(v, _)) = (&r.segment, self.src) {
            // A component of the value, read without the visitor.
            return visit(self.component(v, r).and_then(text_of).as_deref());
        }
        let own = match &r.segment {
            Some(id) => eq_short(view.id, id),
            None => false,
        };
        if !own {
            return crate::condition::first_of_values(self, r, visit);
        }
        let mut cache = view.firsts.borrow_mut();
        let i = match cache
            .iter()
            .position(|(f, c, _)| *f == r.first && *c == r.second)
        {
            Some(i) => i,
            None => {
                let t = first_in_segment(view, r.first, r.second);
                cache.push((r.first, r.second, t));
                cache.len() - 1
            }
        };
        visit(cache[i].2.as_deref());
    }

    fn values(&self, r: &Ref, visit: &mut dyn FnMut(&str) -> bool) {
        match (&r.segment, self.src) {
            (None, src) => visit_texts(src.element(r.first, r.second), visit),
            (Some(id), src) if eq_short(src.view().id, id) => {
                visit_texts(Src::Seg(src.view()).element(r.first, r.second), visit)
            }
            (Some(id), _) => match self.msg.find_segment(id.as_bytes(), 1) {
                Some(s) if r.first == 0 => {
                    visit(s.id());
                }
                Some(s) => visit_texts(other_element(s, r.first, r.second), visit),
                None => {}
            },
        }
    }
    fn segment_present(&self, id: &str) -> bool {
        (self.present)(id)
    }

    fn count(&self, r: &Ref) -> usize {
        let view = self.src.view();
        let own = matches!((&r.segment, self.src), (Some(id), _) if eq_short(view.id, id));
        if !own {
            return crate::condition::count_of_values(self, r);
        }
        if let Some(&(_, _, n)) = view
            .counts
            .borrow()
            .iter()
            .find(|(f, c, _)| *f == r.first && *c == r.second)
        {
            return n;
        }
        let n = crate::condition::count_of_values(self, r);
        view.counts.borrow_mut().push((r.first, r.second, n));
        n
    }
}

/// How many entries a list is scanned for before it is hashed: a message builds a handful of value resources,
/// which a scan finds sooner than a hash of their keys.
const SCAN_MAX: usize = 32;

/// What a value resource is built from: the data type map (by address), the value's bytes and level, the
/// segment when the map's conditions read it (0 otherwise), and the nesting depth when the build may reach its
/// bound (0 otherwise).
#[derive(PartialEq, Eq, Hash)]
struct ValueKey<'a> {
    map: usize,
    raw: &'a [u8],
    /// `None` for a value without separators.
    level: Option<Level>,
    segment: u32,
    depth: usize,
}

/// The message map for a structure: its own, or the family's (`ADT_A03` → `ADT_A01`).
fn message_map(structure: &str) -> Option<(&'static str, &'static MessageMap)> {
    let m = maps();
    if let Some((k, v)) = m.messages.get_key_value(structure) {
        return Some((k, v));
    }
    let family = match structure.get(..3)? {
        "ADT" => "ADT_A01",
        "ORU" | "OUL" => "ORU_R01",
        "ORM" => "ORM_O01",
        "OML" => "OML_O21",
        "MDM" => "MDM_T02",
        "SIU" => "SIU_S12",
        "VXU" => "VXU_V04",
        _ => return None,
    };
    m.messages.get_key_value(family).map(|(k, v)| (&**k, v))
}

/// The data type map a row names, when the guide publishes it.
fn dt_map(row: &ElementRow) -> Option<&'static ElementMap> {
    row.dt.map(|i| &maps().elements[i])
}

/// The report being written. Information notes are formatted only when the caller asks for the report:
/// [`crate::convert_json`] gives the Bundle alone, whose OperationOutcome holds the warnings (always kept).
pub(crate) struct Notes {
    list: Vec<Note>,
    /// Whether information notes are kept.
    info: bool,
    /// How many notes were made, kept or not: whether a step of the conversion had something to say.
    made: usize,
    /// The memory the notes kept take (for [`crate::Options::max_memory`]).
    bytes: usize,
}

impl Notes {
    /// Records a note (an information note only when the report is asked for); `message` is formatted only then.
    fn add(&mut self, severity: Severity, path: impl fmt::Display, message: fmt::Arguments<'_>) {
        if severity == Severity::Information && !self.info {
            self.made += 1;
            return;
        }
        self.add_always(severity, path, message);
    }

    /// Records a note even when only the Bundle is asked for: an information note whose text a warning can share
    /// (`code .. is not in the guide's .. map`), so that the report's de-duplication, which keeps the first of
    /// equal notes, drops the same warnings either way.
    fn add_always(
        &mut self,
        severity: Severity,
        path: impl fmt::Display,
        message: fmt::Arguments<'_>,
    ) {
        self.made += 1;
        let note = Note {
            severity,
            path: path.to_string(),
            message: fmt::format(message),
        };
        self.bytes += std::mem::size_of::<Note>() + note.path.len() + note.message.len();
        self.list.push(note);
    }
}

thread_local! {
    /// The arena a thread's conversions build their trees in, emptied after each (see [`crate::tree`]).
    static ARENA: RefCell<Bump> = RefCell::new(Bump::new());
}

/// About what a conversion keeps per segment of the message before it converts any: the group tree's entry (about
/// 40 bytes, measured), the segment's group instances (a vector and two of them, 72 bytes) and its id (16).
const PER_SEGMENT: usize = 128;

/// The fields of a segment that are read: many more than any version defines for any segment (PV1 has 52), far
/// fewer than a hostile segment may have (60 million `|` made a gigabyte of field list).
const MAX_FIELDS: usize = 1024;

/// The room [`Ctx::apply_map`]'s spare lists start with.
const SPARE_ROOM: usize = 16;

/// A list from `pool`, or a new one with room for `room` items: room for what a map usually has (a data type's
/// components, the rows of an OBX that apply), so that it is allocated once rather than grown step by step.
fn spare<'m, T>(bump: &'m Bump, pool: &mut BVec<'m, BVec<'m, T>>, room: usize) -> BVec<'m, T> {
    pool.pop()
        .unwrap_or_else(|| BVec::with_capacity_in(room, bump))
}

/// An arena that grew past this for one message is given back rather than kept for the next.
const ARENA_KEPT: usize = 1 << 20;

/// `report`: whether the report's information notes are written (see [`Notes`]).
pub(crate) fn convert(
    msg: &Message<'_>,
    opts: &Options<'_>,
    report: bool,
) -> Result<Conversion, Error> {
    ARENA.with(|arena| match arena.try_borrow_mut() {
        Ok(mut bump) => {
            let out = convert_in(&bump, msg, opts, report);
            if bump.allocated_bytes() > ARENA_KEPT {
                *bump = Bump::new();
            } else {
                bump.reset();
            }
            out
        }
        // A conversion inside a conversion (a checker that converts): an arena of its own.
        Err(_) => convert_in(&Bump::new(), msg, opts, report),
    })
}

fn convert_in(
    bump: &Bump,
    msg: &Message<'_>,
    opts: &Options<'_>,
    report: bool,
) -> Result<Conversion, Error> {
    // What is kept per segment before any is converted (the group tree, each segment's group instances and id),
    // counted in the bound and checked before it is built: a body of millions of empty segments would take more
    // than the bound in these alone.
    let too_large = |segment| Error::TooLarge {
        limit: opts.max_memory,
        segment,
        segments: msg.segment_count(),
    };
    let fixed = msg.segment_count().saturating_mul(PER_SEGMENT);
    if fixed > opts.max_memory {
        return Err(too_large(1));
    }
    let tree = msg.group_tree();
    let structure = tree.structure_id().unwrap_or("");
    // `msg.get("MSH-4")` and the others, read from the MSH without a path parsed for each.
    let msh = msg.find_segment(b"MSH", 1);
    let msh_text = |n: usize| {
        msh.and_then(|s| s.field(n))
            .and_then(|f| f.repetition(1))
            .and_then(|r| r.component(1))
            .and_then(|c| c.subcomponent(1))
            .map(|v| v.text())
            .unwrap_or_default()
    };
    let sender = msh_text(4);
    let app = msh_text(3);
    let control = msh_text(10);
    // `app|sender|control` as one part of the hash, fed in pieces.
    let mut identity = Fnv::new()
        .bytes(app.as_bytes())
        .bytes(b"|")
        .bytes(sender.as_bytes())
        .bytes(b"|")
        .bytes(control.as_bytes());
    if control.is_empty() {
        // Without a control id the message itself is its identity: converting it twice still gives one Bundle.
        identity = identity.bytes(&fnv(&[msg.as_bytes()]).to_le_bytes());
    }
    let mut ctx = Ctx {
        msg,
        opts,
        bump,
        text: std::str::from_utf8(msg.as_bytes()).ok(),
        plain: PlainBytes::new(msg.delimiters()),
        identity: identity.end(),
        // About one resource per segment, and a few built from values (no growth copies for most messages).
        resources: Vec::with_capacity(msg.segment_count() + 4),
        by_key: Vec::with_capacity(16),
        value_resources: Vec::with_capacity(8),
        bundle: Node::obj(bump),
        linked: Vec::new(),
        reference_from_message: false,
        last_patient: None,
        notes: Notes {
            list: Vec::new(),
            info: report,
            made: 0,
            bytes: 0,
        },
        value_memo: Vec::new(),
        value_memo_hashed: HashMap::default(),
        value_ids: HashSet::default(),
        spare: BVec::new_in(bump),
        spare_values: BVec::new_in(bump),
        spare_written: BVec::new_in(bump),
        conds: Vec::new(),
        segment: 0,
        long: LongArrays::default(),
        over: false,
        fixed,
        trying: false,
    };
    let map = message_map(structure);
    match map {
        Some((name, _)) if name != structure => ctx.note(
            Severity::Warning,
            "MSH-9",
            format_args!("the guide has no map for {structure}; converted with the {name} map"),
        ),
        None => ctx.note(
            Severity::Warning,
            "MSH-9",
            format_args!(
                "the guide has no map for {}; each segment converted by its most common segment map",
                if structure.is_empty() { "this message type" } else { structure }
            ),
        ),
        _ => {}
    }
    let map: Option<&MessageMap> = map.map(|m| m.1);

    // Each segment's group instances, for choosing rows, scoping instances and `IF ORC VALUED`.
    let placed: Vec<Vec<(&str, u32)>> = (0..msg.segment_count())
        .map(|i| tree.group_steps(i))
        .collect();
    let ids: Vec<&str> = msg.segments().map(|s| s.id()).collect();
    // A segment id is present for a segment when a segment with it is in one of the segment's group instances
    // (or the message's root): scanned in a short message, looked up by group instance in a long one (scanning
    // for each segment was quadratic: 20,000 ORDER_OBSERVATION groups took 5.3 s).
    let by_place: Option<HashSet<(&Groups<'_>, &str)>> = (placed.len() > SCAN_MAX)
        .then(|| placed.iter().zip(&ids).map(|(g, s)| (&g[..], *s)).collect());
    let mut last_anchor: Option<&str> = None;
    let mut spare_view = None;
    let mut last_chosen: Option<(&str, &Groups<'_>, Option<&str>, Chosen<'_>)> = None;
    let mut mapped_fields: Vec<bool> = Vec::new();
    for (index, seg) in msg.segments().enumerate() {
        if ctx.over_budget() {
            return Err(too_large(index + 1));
        }
        let groups = &placed[index][..];
        let view = SegView::new(seg, spare_view.take());
        let id = view.id;
        if seg.field_count() > MAX_FIELDS {
            ctx.note(
                Severity::Warning,
                id,
                format_args!(
                    "{id} (segment {}) has {} fields; those past {MAX_FIELDS} are not read",
                    index + 1,
                    seg.field_count()
                ),
            );
        }
        ctx.segment = index as u32 + 1;
        let present = |want: &str| match &by_place {
            Some(set) => (0..=groups.len()).any(|k| set.contains(&(&groups[..k], want))),
            None => placed.iter().zip(&ids).any(|(g, s)| {
                *s == want
                    && g.len() <= groups.len()
                    && g.iter().zip(groups.iter()).all(|(a, b)| a == b)
            }),
        };
        // The rows are a function of the segment id, its groups' names and the anchor: the ORU's OBX after OBX
        // take the same rows, chosen once.
        let same_place = last_chosen
            .as_ref()
            .is_some_and(|(pid, pgroups, panchor, _)| {
                *pid == id
                    && *panchor == last_anchor
                    && pgroups.len() == groups.len()
                    && pgroups.iter().zip(groups).all(|(a, b)| a.0 == b.0)
            });
        if !same_place {
            last_chosen = Some((
                id,
                groups,
                last_anchor,
                choose_rows(map, id, groups, last_anchor),
            ));
        }
        let Some((_, _, _, chosen)) = &last_chosen else {
            unreachable!("chosen above")
        };
        if map.is_some_and(|m| m.anchors.iter().any(|a| **a == *id)) {
            last_anchor = Some(id);
        }
        let src = Src::Seg(&view);
        let facts = SrcFacts {
            src,
            parts: &[],
            msg,
            present: &present,
        };
        mapped_fields.clear();
        mapped_fields.resize(view.fields.len(), false);
        let mut any = false;
        match chosen {
            Chosen::Rows(chosen) => {
                for &row in chosen {
                    if !matches!(row.cond, Cond::Always) && !row.cond.holds(&facts) {
                        continue;
                    }
                    let (Some(key), Some(map_name)) = (&row.key, &row.segment_map) else {
                        continue;
                    };
                    any = true;
                    ctx.apply_segment(
                        (index, groups, &placed),
                        key,
                        row.creates,
                        row.scope_depth,
                        (map_name, row.map),
                        src,
                        &present,
                        &mut mapped_fields,
                    );
                    for r in &row.references {
                        if let Some((path, resolved)) = &r.path {
                            ctx.link(r.from, path, resolved, &r.to, index);
                        }
                    }
                }
            }
            Chosen::Defaults(defaults) => {
                for (key, map_name, map_index) in *defaults {
                    any = true;
                    ctx.apply_segment(
                        (index, groups, &placed),
                        key,
                        true,
                        0,
                        (map_name, *map_index),
                        src,
                        &present,
                        &mut mapped_fields,
                    );
                }
            }
        }
        // Nothing silently lost: every valued field that no applied row read is reported with its path (when the
        // report is asked for: these are information notes).
        if ctx.notes.info {
            unmapped_notes(&mut ctx, &view, index, any, &mapped_fields);
        }
        spare_view = Some(view);
    }
    if ctx.over_budget() {
        return Err(too_large(msg.segment_count()));
    }
    Ok(ctx.finish())
}

/// The information notes on a segment's valued fields that no applied row read.
fn unmapped_notes(
    ctx: &mut Ctx<'_, '_>,
    view: &SegView<'_>,
    index: usize,
    any: bool,
    mapped: &[bool],
) {
    let id = view.id;
    if !any && id != "MSH" {
        if view
            .fields
            .iter()
            .skip(1)
            .flatten()
            .skip(1)
            .any(|f| !f.is_empty())
        {
            ctx.note(
                Severity::Information,
                id,
                format_args!("segment {id} (#{}) is not mapped by the guide", index + 1),
            );
        }
        return;
    }
    let first = if view.header { 3 } else { 1 };
    for f in first..view.fields.len() {
        if !mapped.get(f).copied().unwrap_or(false) && view.field(f).is_some_and(|v| !v.is_empty())
        {
            ctx.note(
                Severity::Information,
                format_args!("{id}-{f}"),
                format_args!("{id}-{f} has no FHIR target in the guide's map"),
            );
        }
    }
}

enum Chosen<'r> {
    Rows(Vec<&'r MessageRow>),
    Defaults(&'r [DefaultMap]),
}

/// The message rows that apply to a segment at `groups`: those with its exact group path; else `:follow:` rows
/// after their anchor; else the rows whose group path shares the longest tail with it (versions name groups
/// differently); else the segment's default maps.
fn choose_rows<'r>(
    map: Option<&'r MessageMap>,
    id: &str,
    groups: &Groups<'_>,
    anchor: Option<&str>,
) -> Chosen<'r> {
    let (rows, indexes): (&[MessageRow], &[usize]) = match map {
        Some(m) => (&m.rows, m.by_segment.get(id).map_or(&[][..], |v| &v[..])),
        None => (&[], &[]),
    };
    let same_seg = || indexes.iter().map(|&i| &rows[i]);
    let exact: Vec<_> = same_seg()
        .filter(|r| {
            r.follows.is_none() && r.groups.iter().map(|g| &**g).eq(groups.iter().map(|g| g.0))
        })
        .collect();
    if !exact.is_empty() {
        return Chosen::Rows(exact);
    }
    let follow: Vec<_> = same_seg()
        .filter(|r| r.follows.is_some() && r.follows.as_deref() == anchor)
        .collect();
    if !follow.is_empty() {
        return Chosen::Rows(follow);
    }
    let tail = |r: &MessageRow| {
        r.groups
            .iter()
            .rev()
            .zip(groups.iter().rev())
            .take_while(|(a, b)| ***a == *b.0)
            .count()
    };
    if let Some(best) = same_seg()
        .filter(|r| r.follows.is_none())
        .max_by_key(|r| (tail(r), std::cmp::Reverse(r.groups.len())))
    {
        let groups = &best.groups;
        return Chosen::Rows(
            same_seg()
                .filter(|r| r.follows.is_none() && &r.groups == groups)
                .collect(),
        );
    }
    match maps().default_maps.get(id) {
        Some(d) => Chosen::Defaults(d),
        None => Chosen::Rows(Vec::new()),
    }
}

/// Where a segment stands: its index, its group instances, and every segment's group instances.
type Place<'x, 'p> = (usize, &'x Groups<'p>, &'x [Vec<(&'p str, u32)>]);

impl<'m, 'a> Ctx<'m, 'a> {
    /// Whether the conversion took more memory than [`Options::max_memory`] allows; once it has, every row is
    /// skipped and the conversion ends with [`Error::TooLarge`].
    fn over_budget(&mut self) -> bool {
        self.over = self.over
            || self.fixed + self.bump.allocated_bytes() + self.notes.bytes > self.opts.max_memory;
        self.over
    }

    fn note(&mut self, severity: Severity, path: impl fmt::Display, message: fmt::Arguments<'_>) {
        self.notes.add(severity, path, message);
    }

    /// `urn:uuid:` and the id, in the arena.
    fn full_url(&self, id: &str) -> &'m str {
        let mut s = bumpalo::collections::String::with_capacity_in(9 + id.len(), self.bump);
        s.push_str("urn:uuid:");
        s.push_str(id);
        s.into_bump_str()
    }

    /// A deterministic UUID-shaped id (RFC 9562 version 8: application-defined) from the message's identity and
    /// `parts`.
    fn make_id(&self, parts: &[&[u8]]) -> &'m str {
        let mut h = self.identity;
        for p in parts {
            h = h.part(p);
        }
        self.id_of(h)
    }

    /// The id of a hash that began with the identity ([`Ctx::make_id`]'s parts hashed), in the arena.
    fn id_of(&self, h: Fnv) -> &'m str {
        let a = h.0;
        let b = h.part(b"second half").0;
        uuid_v8(self.bump, a, b)
    }

    /// The newest resource of `key` that `test` accepts, among those created by segment `since` or later (the
    /// resources are in segment order: the search stops at the first one made before).
    fn newest(&self, key: &Key, since: usize, test: impl Fn(&Built<'m>) -> bool) -> Option<usize> {
        let (_, list) = self.by_key.iter().find(|(k, _)| k == key)?;
        list.iter()
            .rev()
            .copied()
            .take_while(|&i| self.resources[i].creator >= since)
            .find(|&i| test(&self.resources[i]))
    }

    /// [`Ctx::newest`] among the resources of any key of type `ty`.
    fn newest_of_type(
        &self,
        ty: TypeShape,
        since: usize,
        test: impl Fn(&Built<'m>) -> bool,
    ) -> Option<usize> {
        self.by_key
            .iter()
            .filter(|(k, _)| k.ty == ty)
            .filter_map(|(k, _)| self.newest(k, since, &test))
            .max()
    }

    /// The index of the resource a row writes: an existing instance in scope, or a new one.
    fn instance(
        &mut self,
        (index, groups, placed): Place<'_, '_>,
        key: &Key,
        creates: bool,
        scope_depth: usize,
    ) -> Option<usize> {
        let found = if creates {
            self.newest(key, index, |b| b.creator == index)
        } else {
            self.newest(key, 0, |b| {
                let scope = &placed[b.creator];
                scope.len() >= scope_depth
                    && groups.len() >= scope_depth
                    && scope[..scope_depth] == groups[..scope_depth]
            })
        };
        if let Some(i) = found {
            return Some(i);
        }
        let ty = key.ty;
        let id = self.make_id(&[
            ty.name().as_bytes(),
            &key.n.to_le_bytes(),
            &index.to_le_bytes(),
        ]);
        let mut node = Node::obj(self.bump);
        node.member("resourceType", || Node::Str(ty.name()));
        node.member("id", || Node::Str(id));
        let patient = self.last_patient;
        if ty == patient_type() {
            self.last_patient = Some(id);
        }
        self.resources.push(Built {
            key: *key,
            ty,
            id,
            node,
            creator: index,
            patient,
        });
        let at = self.resources.len() - 1;
        match self.by_key.iter_mut().find(|(k, _)| k == key) {
            Some((_, list)) => list.push(at),
            None => self.by_key.push((*key, bumpalo::vec![in self.bump; at])),
        }
        Some(at)
    }

    #[allow(clippy::too_many_arguments)]
    fn apply_segment(
        &mut self,
        place: Place<'_, '_>,
        key: &Key,
        creates: bool,
        scope_depth: usize,
        (map_name, map): (&str, Option<usize>),
        src: Src<'_, 'a>,
        present: &dyn Fn(&str) -> bool,
        mapped: &mut [bool],
    ) {
        let Some(map) = map.map(|i| &maps().elements[i]) else {
            self.note(
                Severity::Information,
                src.view().id,
                format_args!("the guide's segment map {map_name} is not published"),
            );
            return;
        };
        if key.ty.name() == "Bundle" {
            let mut bundle = std::mem::replace(&mut self.bundle, Node::placeholder(self.bump));
            self.apply_map(
                map,
                src,
                &mut bundle,
                key.ty,
                fnv(&[b"bundle"]),
                present,
                Some(mapped),
                0,
            );
            self.bundle = bundle;
            return;
        }
        let before = self.resources.len();
        let Some(i) = self.instance(place, key, creates, scope_depth) else {
            return;
        };
        let mut node = std::mem::replace(&mut self.resources[i].node, Node::placeholder(self.bump));
        let ty = self.resources[i].ty;
        let base = fnv(&[&place.0.to_le_bytes(), map_name.as_bytes()]);
        self.apply_map(map, src, &mut node, ty, base, present, Some(mapped), 0);
        // A row that merges into a resource started a new one because none was in its scope, and wrote
        // nothing: left in place, the empty resource would become the one later references point to (an ORU's
        // patient-level OBX outside its PATIENT group gave the Observations an empty second Patient).
        let only_id = |n: &Node| {
            // Judged after the clean-up `finish` does (an extension's url alone is no content).
            let mut n = n.clone();
            tidy(&mut n);
            matches!(n, Node::Obj(f) if f.len() <= 2)
        };
        if !creates && i == before && i + 1 == self.resources.len() && only_id(&node) {
            if let Some(b) = self.resources.pop()
                && let Some((_, list)) = self.by_key.iter_mut().find(|(k, _)| *k == b.key)
            {
                list.pop();
                if b.ty == patient_type() {
                    self.last_patient = self
                        .newest_of_type(b.ty, 0, |_| true)
                        .map(|i| self.resources[i].id);
                }
            }
            return;
        }
        self.resources[i].node = node;
    }

    /// Applies the rows of a segment or data type map to `target` (an object of type `ty`).
    #[allow(clippy::too_many_arguments)]
    fn apply_map(
        &mut self,
        map: &'static ElementMap,
        src: Src<'_, 'a>,
        target: &mut Node<'m>,
        ty: TypeShape,
        base: u64,
        present: &dyn Fn(&str) -> bool,
        mut mapped: Option<&mut [bool]>,
        depth: usize,
    ) -> Option<Node<'m>> {
        if depth > MAX_DEPTH || self.over {
            return None;
        }
        let msg = self.msg;
        // A value's components, split once for all the rows that read them (and their conditions).
        let mut parts = spare(self.bump, &mut self.spare_values, SPARE_ROOM);
        if let Src::Val(v, _) = src {
            child_parts(v, &mut parts);
        }
        let facts = SrcFacts {
            src,
            parts: &parts,
            msg,
            present,
        };
        let mut primitive: Option<Node> = None;
        let mut written = spare(self.bump, &mut self.spare_written, SPARE_ROOM);
        let mut order = spare(self.bump, &mut self.spare, 4 * SPARE_ROOM);
        let mut values = spare(self.bump, &mut self.spare_values, SPARE_ROOM);
        valued_rows(map, src, &parts, &mut order);
        // The element last read: a map's rows for one element are neighbours (the OBX map's 25 alternatives for
        // OBX-5), and they read it once.
        let mut read: Option<(u16, u16)> = None;
        // The element a guard last read, and its value (see [`Ctx::holds`]).
        let mut guarded = None;
        for &i in &order {
            let row = &map.rows[i as usize];
            // The element first: most rows read one that is not valued, and the checks below have no effects,
            // so their order does not change what is written.
            if row.when_absent {
                // Its value is assigned, and its condition says the component is empty: the row applies once,
                // to the value itself.
                let Src::Val(v, _) = src else { continue };
                values.clear();
                if src.element(row.first, row.second).next().is_none() {
                    values.push(v);
                }
                read = None;
            } else if read != Some((row.first, row.second)) {
                values.clear();
                src.read_element(row.first, row.second, &parts, &mut values);
                read = Some((row.first, row.second));
            }
            if values.is_empty() {
                continue;
            }
            if !self.holds(row, &facts, &mut guarded) {
                continue;
            }
            // Rows conditioned by narrative alone: the first applicable alternative for an element and attribute
            // is taken (the guide lists its default first).
            let attr_name = row.attr_label;
            // The element first, the attribute's name (compared in place) only when it matches.
            if row.narrative_only
                && written.iter().any(|&(a, f, c)| {
                    f == row.first && c == row.second && crate::tree::same(a, attr_name)
                })
            {
                continue;
            }
            // An extension's `url` is always assigned; a row that leaves it blank (OBX-19) would put the v2 value
            // there instead.
            if row.assignment.is_none()
                && matches!(&row.attr, Attr::Path(p) if p.last().is_some_and(|s| s.name == "url"))
            {
                continue;
            }
            written.push((attr_name, row.first, row.second));
            if let Some(m) = mapped.as_deref_mut()
                && let Some(slot) = m.get_mut(row.first as usize)
            {
                *slot = true;
            }
            let path = Self::path_label(src, row);
            let resolved = match &row.attr {
                Attr::Path(steps) | Attr::NewResource(steps) => Some(row.resolved_for(ty, steps)),
                Attr::Value if ty.json_kind() == fhir::JsonKind::Object => {
                    Some(row.resolved_for(ty, &VALUE_STEP))
                }
                _ => None,
            };
            let resolved = resolved.as_deref();
            let several = values.len() > 1;
            for (rep, &v) in values.iter().enumerate() {
                // A field repeated thousands of times grows the tree within one segment.
                if rep % 64 == 63 && self.over_budget() {
                    break;
                }
                let rep_base = mix(base, rep as u64);
                let inner = match src {
                    Src::Seg(s) | Src::Val(_, s) => Src::Val(v, s),
                };
                match (&row.attr, resolved) {
                    (Attr::Value, Some(resolved)) => {
                        // `$value` in a map onto a complex type (`NM[Quantity]`) is its `value` element.
                        let steps = &VALUE_STEP;
                        if let Some(leaf) = resolved.leaf(steps)
                            && let Some(node) = self.primitive_for(row, v, leaf, path)
                        {
                            write(
                                self.bump,
                                target,
                                steps,
                                resolved,
                                rep_base,
                                node,
                                (&mut self.notes, &mut self.long),
                                path,
                            );
                        }
                    }
                    (Attr::Value, None) => {
                        if primitive.is_none() {
                            primitive = self.primitive_for(row, v, ty, path);
                        }
                    }
                    (Attr::This, _) => match dt_map(row) {
                        // `$this` through a map onto the type being built (ORC-7's TQ[ServiceRequest], PRT-5's
                        // XCN[RelatedPerson]) fills this resource: made apart, the order's timing or the person's
                        // name was a second ServiceRequest or RelatedPerson.
                        Some(dt) if dt.target == Some(ty) => {
                            self.apply_map(
                                dt,
                                inner,
                                target,
                                ty,
                                rep_base,
                                present,
                                None,
                                depth + 1,
                            );
                        }
                        Some(dt) => {
                            self.value_resource(dt, inner, present, depth);
                        }
                        None => {}
                    },
                    (Attr::Path(steps), Some(resolved)) => {
                        let nested = dt_map(row).filter(|m| {
                            m.target == Some(ty)
                                && resolved
                                    .leaf(steps)
                                    .is_some_and(|l| l.json_kind() != fhir::JsonKind::Object)
                        });
                        if let Some(map) = nested {
                            // `XPN.1 → family` with `FN[HumanName]`: the nested map writes into the same
                            // HumanName (its rows name `family` and `family.extension` themselves).
                            self.apply_map(
                                map,
                                inner,
                                target,
                                ty,
                                rep_base,
                                present,
                                None,
                                depth + 1,
                            );
                            continue;
                        }
                        let value = self.value_for(
                            row,
                            v,
                            (inner, src),
                            steps,
                            resolved,
                            present,
                            path,
                            depth,
                        );
                        if let Some(value) = value {
                            write(
                                self.bump,
                                target,
                                steps,
                                resolved,
                                rep_base,
                                value,
                                (&mut self.notes, &mut self.long),
                                path,
                            );
                        }
                        // A repeating v2 element into a single FHIR element: the first repetition is kept and
                        // the rest reported.
                        if several && !resolved.many() {
                            if rep == 0 {
                                self.note(Severity::Information, path, format_args!("{path} repeats; FHIR {} holds one value: repetitions after the first are not mapped", attr_name));
                            }
                            break;
                        }
                    }
                    (Attr::NewResource(steps), Some(resolved)) => {
                        if row.data_type_map.is_none() {
                            continue;
                        }
                        // `assigner(Organization)`: the Reference to the resource the data type map builds.
                        if let Some(dt) = dt_map(row)
                            && let Some(url) = self.value_resource(dt, inner, present, depth)
                        {
                            let mut r = Node::obj(self.bump);
                            r.member("reference", || Node::Str(url));
                            write(
                                self.bump,
                                target,
                                steps,
                                resolved,
                                rep_base,
                                r,
                                (&mut self.notes, &mut self.long),
                                path,
                            );
                        }
                    }
                    // Values written inside a referenced resource (`assigner(Organization[1].identifier[1]
                    // .value)`): the referenced resource is built by its own data type map row.
                    (Attr::InResource(..), _) => {}
                    (Attr::Path(_) | Attr::NewResource(_), None) => {
                        unreachable!("paths are resolved above")
                    }
                }
            }
        }
        if !map.whole.is_empty() {
            self.apply_whole_rows(map, src, &facts, target, ty, base);
        }
        order.clear();
        self.spare.push(order);
        values.clear();
        self.spare_values.push(values);
        parts.clear();
        self.spare_values.push(parts);
        written.clear();
        self.spare_written.push(written);
        primitive
    }

    /// Whether a row's condition holds. Its guard ([`ElementRow::guard`]) is tested first, on the value `guarded`
    /// keeps for the element the last guard read (the guarded alternatives for one element are neighbours); a
    /// segment-only condition is evaluated once per segment. Inlined into the row loop of [`Ctx::apply_map`]:
    /// out of line, with a call for each row visited, it and [`Ctx::assigned`] cost 1.6% of the ADT^A01's
    /// instructions.
    #[inline(always)]
    fn holds(
        &mut self,
        row: &'static ElementRow,
        facts: &SrcFacts<'_, '_, '_>,
        guarded: &mut Option<(&'static Ref, GuardValue)>,
    ) -> bool {
        if let Some(g) = &row.guard {
            let value = match *guarded {
                Some((r, v)) if *r == g.r => v,
                _ => {
                    let v = GuardValue::read(facts, &g.r);
                    *guarded = Some((&g.r, v));
                    v
                }
            };
            match value.passes(g) {
                Some(false) => return false,
                Some(true) if g.decides => return true,
                _ => {}
            }
        }
        let Some(slot) = row.cond_slot else {
            // Most rows have no condition: answered without a call.
            return matches!(row.cond, Cond::Always) || row.cond.holds(facts);
        };
        if self.conds.is_empty() {
            self.conds = vec![(0, false); maps().cond_slots];
        }
        let (at, value) = self.conds[slot as usize];
        if at == self.segment {
            return value;
        }
        let value = row.cond.holds(facts);
        self.conds[slot as usize] = (self.segment, value);
        value
    }

    fn path_label<'r>(src: Src<'_, 'r>, row: &'r ElementRow) -> Label<'r> {
        match src {
            Src::Seg(_) => Label::plain(row.label),
            Src::Val(_, s) => Label {
                segment: Some(s.id),
                label: row.label,
            },
        }
    }

    /// A data type map that builds a resource (`HD[Organization]`, `XCN[Practitioner]`): builds it, adds it to
    /// the Bundle once per distinct content, and returns its full URL.
    ///
    /// The same map applied to the same value gives the same resource (`HD[Organization]` of `Hospital` in MSH-4,
    /// PID-3 and PV1-3): built once, unless building it made a note (whose path names where the value was), and
    /// once per segment when the map's conditions read the segment.
    fn value_resource(
        &mut self,
        map: &'static ElementMap,
        src: Src<'_, 'a>,
        present: &dyn Fn(&str) -> bool,
        depth: usize,
    ) -> Option<&'m str> {
        let key = match src {
            Src::Val(v, _) => Some(ValueKey {
                map: std::ptr::from_ref(map) as usize,
                raw: v.raw(),
                // A value without separators has the same parts at any level (itself): `Hospital` as MSH-4 and as
                // PID-3.4 is one organization.
                level: {
                    let d = self.msg.delimiters();
                    let flat = v.level() != Level::Verbatim
                        && !v.raw().iter().any(|&b| {
                            b == d.component || b == d.repetition || Some(b) == d.subcomponent
                        });
                    (!flat).then(|| v.level())
                },
                segment: if map.reads_segments { self.segment } else { 0 },
                // The depth changes nothing unless the build may reach the bound on nesting.
                depth: if depth + 1 + usize::from(map.nesting) > MAX_DEPTH {
                    depth
                } else {
                    0
                },
            }),
            Src::Seg(_) => None,
        };
        if let Some(key) = &key
            && let Some(url) = self.remembered(key)
        {
            return url;
        }
        let made = self.notes.made;
        let url = self.build_value_resource(map, src, present, depth);
        if let Some(key) = key
            && self.notes.made == made
        {
            self.remember(key, url);
        }
        url
    }

    /// The URL [`Ctx::value_resource`] gave for `key`, when it was kept.
    fn remembered(&self, key: &ValueKey<'a>) -> Option<Option<&'m str>> {
        if self.value_memo_hashed.is_empty() {
            self.value_memo
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, url)| *url)
        } else {
            self.value_memo_hashed.get(key).copied()
        }
    }

    fn remember(&mut self, key: ValueKey<'a>, url: Option<&'m str>) {
        if self.value_memo_hashed.is_empty() && self.value_memo.len() < SCAN_MAX {
            self.value_memo.push((key, url));
        } else {
            self.value_memo_hashed.extend(self.value_memo.drain(..));
            self.value_memo_hashed.insert(key, url);
        }
    }

    /// Whether a value resource has the id `id`; once there are many, the id is kept in a set as it is asked
    /// about (the caller adds the resource when it is new).
    fn has_value_resource(&mut self, id: &'m str) -> bool {
        if self.value_resources.len() < SCAN_MAX {
            return self.value_resources.iter().any(|(i, _, _)| *i == id);
        }
        if self.value_ids.is_empty() {
            self.value_ids
                .extend(self.value_resources.iter().map(|(i, _, _)| *i));
        }
        !self.value_ids.insert(id)
    }

    fn build_value_resource(
        &mut self,
        map: &'static ElementMap,
        src: Src<'_, 'a>,
        present: &dyn Fn(&str) -> bool,
        depth: usize,
    ) -> Option<&'m str> {
        let ty = map.target.filter(|t| t.is_resource())?;
        let mut node = Node::obj(self.bump);
        node.member("resourceType", || Node::Str(ty.name()));
        self.apply_map(
            map,
            src,
            &mut node,
            ty,
            fnv(&[map.name.as_bytes()]),
            present,
            None,
            depth + 1,
        );
        if node.prune() {
            return None;
        }
        let Node::Obj(fields) = &node else {
            return None;
        };
        if fields.len() <= 1 {
            return None; // only resourceType
        }
        // `make_id(&[b"value", json])`, the JSON hashed as it is written.
        let mut h = self.identity.part(b"value");
        node.write_json(&mut h);
        let id = self.id_of(h.end());
        if !self.has_value_resource(id) {
            if let Node::Obj(fields) = &mut node {
                fields.insert(1, ("id", Node::Str(id)));
            }
            self.value_resources.push((id, ty, node));
        }
        Some(self.full_url(id))
    }

    /// The `$value` a primitive data type map produces.
    fn primitive_for(
        &mut self,
        row: &ElementRow,
        v: Value<'a>,
        ty: TypeShape,
        path: Label<'_>,
    ) -> Option<Node<'m>> {
        let text = self.arena_text(first_text_plain(v, &self.plain, self.text));
        // The row's own FHIR type, when it names a primitive (`CWE[code]`'s `$value` is a `code`).
        let ty = row.fhir_primitive.unwrap_or(ty);
        self.convert_primitive(text, ty, row, path)
    }

    /// Text for the tree: the message's own (borrowed, not copied), or a decoded value copied into the arena.
    fn arena_text(&self, text: Cow<'a, str>) -> &'m str {
        match text {
            Cow::Borrowed(t) => t,
            Cow::Owned(t) => self.bump.alloc_str(&t),
        }
    }

    fn convert_primitive(
        &mut self,
        text: &'m str,
        ty: TypeShape,
        row: &ElementRow,
        path: Label<'_>,
    ) -> Option<Node<'m>> {
        let mut text = text;
        if let Some(vocab) = &row.vocabulary {
            match maps().vocabulary(row, text) {
                Some(m) if !m.code.is_empty() => text = m.code,
                _ => self.note(
                    Severity::Warning,
                    path,
                    format_args!(
                        "{path}: code {text:?} is not in the guide's {vocab} map; kept as sent"
                    ),
                ),
            }
        }
        let (node, unfit) = value::convert(self.bump, text, ty, self.opts.time_zone);
        match unfit {
            Some(Unfit::Invalid) => self.note(
                Severity::Warning,
                path,
                format_args!(
                    "{path}: {text:?} is not a valid FHIR {}; not mapped",
                    ty.name()
                ),
            ),
            Some(Unfit::TimeWithoutZone) => self.note(
                Severity::Information,
                path,
                format_args!(
                    "{path}: {text:?} has a time but no time zone, and no zone is set for such times; {}",
                    if node.is_some() {
                        "only its date is kept"
                    } else {
                        "a FHIR instant needs one: not mapped"
                    }
                ),
            ),
            None => {}
        }
        node
    }

    /// A row's data type map the guide names but does not publish (maps onto a primitive, which read the value
    /// as it is, were resolved when the maps were compiled): nothing builds the value, and the report says so.
    /// Out of line, as [`Ctx::element_of_holder`].
    #[cold]
    #[inline(never)]
    fn unpublished(&mut self, row: &ElementRow, path: Label<'_>) {
        let name = row.data_type_map.as_deref().unwrap_or("");
        self.note(
            Severity::Information,
            path,
            format_args!("{path}: the guide's data type map {name} is not published; not mapped"),
        );
    }

    /// A row whose data type map builds the type that holds the row's element (`ST[CodeableConcept]` for AL1-5's
    /// `manifestation.text`): the element, taken from what the map builds. Out of line: inlined into
    /// [`Ctx::value_for`] it cost every conversion some 2% (callgrind), for a rare row.
    #[inline(never)]
    fn element_of_holder(
        &mut self,
        map: &'static ElementMap,
        inner: Src<'_, 'a>,
        steps: &[Step],
        present: &dyn Fn(&str) -> bool,
        depth: usize,
    ) -> Option<Node<'m>> {
        let holder = map
            .target
            .filter(|t| t.json_kind() == fhir::JsonKind::Object)?;
        let mut obj = Node::obj(self.bump);
        self.apply_map(map, inner, &mut obj, holder, 0, present, None, depth + 1);
        let name = steps.last()?.name;
        let Node::Obj(fields) = obj else { return None };
        fields
            .into_iter()
            .find(|(k, v)| *k == name && !v.is_container())
            .map(|(_, v)| v)
    }

    /// The value a row writes at a path: an assigned constant, a nested data type map's object or primitive, a
    /// Reference, or the element converted to the attribute's primitive type. `(inner, whole)`: the value, and
    /// what it was read from.
    ///
    /// Always inlined into its one caller, [`Ctx::apply_map`]: when the compiler left it out of line (as it did
    /// once it grew by a few rows), every conversion took 2% more instructions (callgrind).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn value_for(
        &mut self,
        row: &ElementRow,
        v: Value<'a>,
        (inner, whole): (Src<'_, 'a>, Src<'_, 'a>),
        steps: &[Step],
        resolved: &Resolved,
        present: &dyn Fn(&str) -> bool,
        path: Label<'_>,
        depth: usize,
    ) -> Option<Node<'m>> {
        if steps.last().is_some_and(|s| s.name == "reference") {
            // A reference written from the message's text (or an assignment) may name any resource.
            self.reference_from_message = true;
        }
        let Some(leaf) = resolved.leaf(steps) else {
            self.path_names_no_element(steps, resolved, path);
            return None;
        };
        if let Some(parts) = &row.assignment {
            return self.assigned(row, parts, whole, leaf, path);
        }
        if row.data_type_map.is_some() {
            let Some(map) = dt_map(row) else {
                // A map the guide names but does not publish: nothing builds the value.
                self.unpublished(row, path);
                return None;
            };
            if leaf.name() == "Reference" {
                let url = self.value_resource(map, inner, present, depth)?;
                let mut r = Node::obj(self.bump);
                r.member("reference", || Node::Str(url));
                return Some(r);
            }
            if leaf.json_kind() != fhir::JsonKind::Object {
                // A map that builds an object (`ST[CodeableConcept]`, `HD[MessageHeader.source-endpoint]`) has
                // rows for that object's elements, which name none of a primitive's: the element is taken from
                // what it builds. Others (`CWE[code]`) give the primitive their own way.
                let builds_object = map
                    .target
                    .is_some_and(|t| t.json_kind() == fhir::JsonKind::Object);
                let prim = if builds_object {
                    None
                } else {
                    let trying = std::mem::replace(&mut self.trying, true);
                    let prim = self.apply_map(
                        map,
                        inner,
                        &mut Node::placeholder(self.bump),
                        leaf,
                        0,
                        present,
                        None,
                        depth + 1,
                    );
                    self.trying = trying;
                    prim
                };
                let prim = match prim {
                    None => self.element_of_holder(map, inner, steps, present, depth),
                    prim => prim,
                };
                return match prim {
                    Some(Node::Str(s)) if row.vocabulary.is_some() => {
                        self.convert_primitive(s, leaf, row, path)
                    }
                    other => other,
                };
            }
            let mut obj = Node::obj(self.bump);
            self.apply_map(
                map,
                inner,
                &mut obj,
                leaf,
                fnv(&[map.name.as_bytes()]),
                present,
                None,
                depth + 1,
            );
            if row.vocabulary.is_some() {
                self.map_codings(&mut obj, row, path);
            }
            fix_systems(leaf, &mut obj, &mut self.notes, path);
            return Some(obj);
        }
        if leaf.json_kind() == fhir::JsonKind::Object {
            // An object without a data type map: the guide gives none; the text goes to the value's `text` or
            // nowhere.
            return None;
        }
        let mut text = first_text_plain(v, &self.plain, self.text);
        if steps.last().is_some_and(|s| s.name == "system") && leaf.name() == "uri" {
            match system_uri(&text) {
                Some(u) => text = Cow::Borrowed(u),
                None => {
                    self.note(
                        Severity::Warning,
                        path,
                        format_args!(
                            "{path}: coding system {text:?} has no known FHIR URI; not mapped"
                        ),
                    );
                    return None;
                }
            }
        }
        if leaf.name() == "base64Binary" {
            return self.base64_binary(row, &text, whole, path);
        }
        let text = self.arena_text(text);
        self.convert_primitive(text, leaf, row, path)
    }

    /// A row whose path names no element of the type it is applied to (the guide's `valueSampedData`): nothing is
    /// written, and the report says so, as [`write`] does for the paths it cannot follow. Out of line: rare.
    #[cold]
    #[inline(never)]
    fn path_names_no_element(&mut self, steps: &[Step], resolved: &Resolved, path: Label<'_>) {
        if self.trying {
            return;
        }
        let at = resolved.shapes.len();
        let parent = at
            .checked_sub(1)
            .and_then(|i| resolved.shapes.get(i))
            .map_or(resolved.ty, |e| e.ty);
        let name = steps.get(at).map_or("", |s| s.name);
        not_an_element(&mut self.notes, path, name, parent);
    }

    /// A row's assigned value as FHIR type `leaf`: its literal, or literals and elements of `whole` (the segment
    /// or value the row reads) joined. Inlined into [`Ctx::value_for`], as the code it was taken from had been.
    #[inline(always)]
    fn assigned(
        &mut self,
        row: &ElementRow,
        parts: &[Part],
        whole: Src<'_, 'a>,
        leaf: TypeShape,
        path: Label<'_>,
    ) -> Option<Node<'m>> {
        // Most assignments are one literal (`VN`, `official`): used as it is, not copied.
        if let [Part::Lit(l)] = parts[..] {
            return value::convert(self.bump, l, leaf, self.opts.time_zone).0;
        }
        // Joined in the arena, where the value stays.
        let mut text = bumpalo::collections::String::new_in(self.bump);
        for p in parts {
            match p {
                Part::Lit(l) => text.push_str(l),
                Part::Ref(first, second) => {
                    // A joined value needs every part: `"urn:oid:"+HD.2` without HD.2 is no endpoint.
                    let v = inner_or_seg(whole, *first, *second)?;
                    text.push_str(&v);
                }
                Part::Component(n) => {
                    let v = match whole {
                        Src::Val(..) => inner_or_seg(whole, *n, 0),
                        // The row's field (a row for the whole segment has none: `MSG.1` in EVN's row
                        // names nothing there).
                        Src::Seg(_) if row.first > 0 && row.second == 0 => {
                            inner_or_seg(whole, row.first, *n)
                        }
                        Src::Seg(_) => None,
                    }?;
                    text.push_str(&v);
                }
            }
        }
        let text = text.into_bump_str();
        // `"urn:oid:"+HD.2` with a universal id that is no OID (`2.16.840.1.114222.4.1.000000`, `...XXX`): as a
        // uri or url it would make the resource invalid (a string, an identifier's value, may hold it). Left out,
        // and said.
        if let Some(oid) = text.strip_prefix("urn:oid:")
            && matches!(leaf.name(), "uri" | "url" | "canonical" | "oid")
            && !valid_oid(oid)
        {
            self.note(
                Severity::Warning,
                path,
                format_args!("{path}: {oid:?} is not an OID (FHIR's urn:oid: needs numbers without leading zeros); not mapped"),
            );
            return None;
        }
        value::convert(self.bump, text, leaf, self.opts.time_zone).0
    }

    /// The map's constants for the whole segment or value ([`ElementMap::whole`]), after its other rows: only
    /// when those gave `target` some content, so that a constant alone makes no resource or value (MSH's
    /// Provenance-Transformation, whose rows are all constants and narrative, stays out as before).
    #[cold]
    #[inline(never)]
    fn apply_whole_rows(
        &mut self,
        map: &'static ElementMap,
        src: Src<'_, 'a>,
        facts: &SrcFacts<'_, '_, 'a>,
        target: &mut Node<'m>,
        ty: TypeShape,
        base: u64,
    ) {
        let has_content = matches!(target, Node::Obj(f)
            if f.iter().any(|(k, _)| *k != "resourceType" && *k != "id"));
        if !has_content {
            return;
        }
        let mut guarded = None;
        for &i in &map.whole {
            let row = &map.rows[i as usize];
            let Attr::Path(steps) = &row.attr else {
                continue;
            };
            if !self.holds(row, facts, &mut guarded) {
                continue;
            }
            let (Some(parts), resolved) = (&row.assignment, row.resolved_for(ty, steps)) else {
                continue;
            };
            let path = Self::path_label(src, row);
            if let Some(leaf) = resolved.leaf(steps)
                && let Some(value) = self.assigned(row, parts, src, leaf, path)
            {
                write(
                    self.bump,
                    target,
                    steps,
                    &resolved,
                    mix(base, 0),
                    value,
                    (&mut self.notes, &mut self.long),
                    path,
                );
            }
        }
    }

    /// FHIR's base64Binary from v2 text, as the guide asks ("convert from A or HEX to binary64"): an ED's data
    /// (ED.5) by its encoding (ED.4): `Base64` as sent (without the line breaks v2 may carry), `Hex` decoded first,
    /// `A` (ASCII, no encoding) or none its text; any other text (NTE-3, a note as an attachment) its UTF-8 bytes.
    /// Data that does not decode as its encoding says is reported and not mapped: written as it is, it would not be
    /// base64. Out of line: attachments are rare.
    #[cold]
    #[inline(never)]
    fn base64_binary(
        &mut self,
        row: &ElementRow,
        text: &str,
        whole: Src<'_, 'a>,
        path: Label<'_>,
    ) -> Option<Node<'m>> {
        use base64::Engine as _;
        let b64 = &base64::engine::general_purpose::STANDARD;
        let encoding = match whole {
            Src::Val(..) if row.label == "ED.5" => inner_or_seg(whole, 4, 0),
            _ => None,
        };
        let bad = |ctx: &mut Self, what: &str| {
            ctx.note(
                Severity::Warning,
                path,
                format_args!("{path}: the data is not {what}; not mapped"),
            );
            None
        };
        let encoded = match encoding.as_deref() {
            Some(e) if e.eq_ignore_ascii_case("base64") => {
                let data: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
                if b64.decode(&data).is_err() {
                    return bad(self, "valid base64");
                }
                data
            }
            Some(e) if e.eq_ignore_ascii_case("hex") => {
                let digits: Vec<u8> = text.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
                let nibble = |c: u8| (c as char).to_digit(16);
                let bytes: Option<Vec<u8>> = digits
                    .chunks(2)
                    .map(|p| match p {
                        [h, l] => Some((nibble(*h)? * 16 + nibble(*l)?) as u8),
                        _ => None,
                    })
                    .collect();
                let Some(bytes) = bytes else {
                    return bad(self, "hexadecimal");
                };
                b64.encode(bytes)
            }
            Some(e) if !e.eq_ignore_ascii_case("a") => {
                return bad(self, &format!("in an encoding v2 defines ({e:?})"));
            }
            _ => b64.encode(text.as_bytes()),
        };
        (!encoded.is_empty()).then(|| Node::Str(self.bump.alloc_str(&encoded)))
    }

    /// A vocabulary map on a CodeableConcept or Coding: the v2 code's FHIR coding is put first, the code as sent
    /// kept after it.
    fn map_codings(&mut self, obj: &mut Node<'m>, row: &ElementRow, path: Label<'_>) {
        let Node::Obj(fields) = obj else { return };
        // The first coding with a code (a CodeableConcept's, or the Coding itself).
        let coding = match fields.iter_mut().position(|(k, _)| *k == "coding") {
            Some(i) => match &mut fields[i].1 {
                Node::Arr(items) => items
                    .iter_mut()
                    .map(|(_, n)| n)
                    .find(|n| n.get_str("code").is_some()),
                _ => None,
            },
            None => Some(obj),
        };
        let Some(c) = coding else { return };
        let Some(code) = c.get_str("code") else {
            return;
        };
        match maps().vocabulary(row, code) {
            Some(m) if !m.code.is_empty() => {
                let mut mapped = bumpalo::vec![in self.bump;
                    ("system", Node::Str(m.system)),
                    ("code", Node::Str(m.code)),
                ];
                if !m.display.is_empty() {
                    mapped.push(("display", Node::Str(m.display)));
                }
                if let Node::Obj(f) = c {
                    *f = mapped;
                }
            }
            _ => {
                let vocab = row.vocabulary.as_deref().unwrap_or_default();
                self.notes.add_always(
                    Severity::Information,
                    path,
                    format_args!(
                        "{path}: code {code:?} is not in the guide's {vocab} map; kept as sent"
                    ),
                );
            }
        }
    }

    /// `X.path.reference = Y.id`: a Reference from the instance of X in scope to the latest Y. Skipped when
    /// either is missing, so a reference always resolves.
    fn link(&mut self, from: Key, path: &[Step], resolved: &Resolved, to: &Key, index: usize) {
        let Some(t) = self
            .newest(to, 0, |_| true)
            .or_else(|| self.newest_of_type(to.ty, 0, |_| true))
        else {
            return;
        };
        let Some(f) = self
            .newest(&from, 0, |b| b.creator <= index)
            .or_else(|| self.newest_of_type(from.ty, index, |b| b.creator == index))
        else {
            return;
        };
        if f == t {
            return;
        }
        // The path was resolved against `from`'s type, which is the type of every instance found for it.
        debug_assert_eq!(self.resources[f].ty, resolved.ty);
        let url = self.full_url(self.resources[t].id);
        self.linked.push(self.resources[t].id);
        let mut r = Node::obj(self.bump);
        r.member("reference", || Node::Str(url));
        let mut node = std::mem::replace(&mut self.resources[f].node, Node::placeholder(self.bump));
        let tag = fnv(&[
            b"link",
            &index.to_le_bytes(),
            self.resources[t].id.as_bytes(),
        ]);
        // What a link would report is not reported (the References column is the converter's, not the message's).
        let mut sink = Notes {
            list: Vec::new(),
            info: false,
            made: 0,
            bytes: 0,
        };
        write(
            self.bump,
            &mut node,
            path,
            resolved,
            tag,
            r,
            (&mut sink, &mut self.long),
            Label::plain("references"),
        );
        self.resources[f].node = node;
    }

    fn finish(mut self) -> Conversion {
        if let Some(checker) = self.opts.checker {
            let mut checks = Checks::new(checker);
            for b in &mut self.resources {
                check_codes(&mut b.node, &mut checks, &mut self.notes, b.key.ty.name());
            }
        }
        let mut bundle = std::mem::replace(&mut self.bundle, Node::placeholder(self.bump));
        let Node::Obj(bfields) = &mut bundle else {
            unreachable!("the bundle is an object")
        };
        let given = std::mem::replace(bfields, BVec::new_in(self.bump));
        let bundle_id = self.make_id(&[b"Bundle"]);
        bfields.push(("resourceType", Node::Str("Bundle")));
        bfields.push(("id", Node::Str(bundle_id)));
        for (k, v) in given {
            if k != "type" && k != "resourceType" && k != "id" {
                bfields.push((k, v));
            }
        }
        let ty = match self.opts.bundle {
            BundleType::Message => "message",
            BundleType::Transaction => "transaction",
            BundleType::Collection => "collection",
        };
        bfields.push(("type", Node::Str(ty)));
        // MessageHeader first (a message Bundle requires it), then resources in the order the message built them.
        let mut entries: Vec<(&'m str, &'static str, Node)> =
            Vec::with_capacity(self.resources.len() + self.value_resources.len() + 2);
        let mut resources = std::mem::take(&mut self.resources);
        for b in &mut resources {
            tidy(&mut b.node);
            fill_required(b.ty, b.id, &mut b.node, &mut self.notes);
            uri_identifiers(self.bump, &mut b.node, &mut self.notes);
            if maps().bare_unit_codes.contains(&b.ty) {
                quantity_units(b.ty, &mut b.node, &mut self.notes, b.ty.name());
            }
        }
        // Resources built from a value (TQ1's ServiceRequest, XCN's Practitioner) as well.
        for (id, ty, node) in &mut self.value_resources {
            fill_required(*ty, id, node, &mut self.notes);
            uri_identifiers(self.bump, node, &mut self.notes);
        }
        // A resource the maps gave nothing but its id (a Provenance whose segment was empty) is left out unless
        // something refers to it. The references are collected only when there is such a resource.
        let is_header = |b: &Built| b.key.ty.name() == "MessageHeader";
        let bare = |b: &Built| matches!(&b.node, Node::Obj(f) if f.len() <= 2) && !is_header(b);
        // No bare resource was linked to and no reference came from the message: none is referred to.
        self.required_patients(&mut resources, bare);
        let unreferenced = |resources: &[Built<'_>]| {
            !self.reference_from_message
                && resources
                    .iter()
                    .filter(|b| bare(b))
                    .all(|b| !self.linked.contains(&b.id))
        };
        if resources.iter().any(bare) && unreferenced(&resources) {
            resources.retain(|b| !bare(b));
        } else if resources.iter().any(bare) {
            let mut referenced: Vec<&str> = Vec::new();
            for b in &resources {
                collect_refs(&b.node, &mut referenced);
            }
            for (_, _, n) in &self.value_resources {
                collect_refs(n, &mut referenced);
            }
            // Referenced: a reference is its full URL, `urn:uuid:` and the id.
            let keep: Vec<bool> = resources
                .iter()
                .map(|b| {
                    !bare(b)
                        || referenced
                            .iter()
                            .any(|r| r.strip_prefix("urn:uuid:") == Some(b.id))
                })
                .collect();
            let mut keep = keep.into_iter();
            resources.retain(|_| keep.next().unwrap_or(true));
        }
        if self.opts.bundle == BundleType::Message && !resources.iter().any(is_header) {
            // A message Bundle starts with a MessageHeader, even when the MSH gave it nothing.
            let ty = TypeShape::resource("MessageHeader").expect("MessageHeader is an R4 resource");
            let key = Key { ty, n: 1 };
            let id = self.make_id(&[b"MessageHeader"]);
            let mut node = Node::obj(self.bump);
            node.member("resourceType", || Node::Str("MessageHeader"));
            node.member("id", || Node::Str(id));
            resources.push(Built {
                key,
                ty,
                id,
                node,
                creator: 0,
                patient: None,
            });
        }
        // After the bare resources are left out: an element marked absent is no content.
        for b in &mut resources {
            mark_absent(self.bump, b.ty, b.id, &mut b.node, &mut self.notes);
        }
        for (id, ty, node) in &mut self.value_resources {
            mark_absent(self.bump, *ty, id, node, &mut self.notes);
        }
        self.notes.list = first_of_equal_notes(std::mem::take(&mut self.notes.list));
        resources.sort_by_key(|b| u8::from(!is_header(b)));
        for b in resources {
            entries.push((b.id, b.ty.name(), b.node));
        }
        for (id, ty, node) in std::mem::take(&mut self.value_resources) {
            entries.push((id, ty.name(), node));
        }
        let outcome = self.outcome();
        if let Some(o) = outcome {
            let id = self.make_id(&[b"OperationOutcome"]);
            let mut node = o;
            node.prune();
            if let Node::Obj(f) = &mut node {
                f.insert(1, ("id", Node::Str(id)));
            }
            entries.push((id, "OperationOutcome", node));
        }
        let mut items = BVec::with_capacity_in(entries.len(), self.bump);
        // Every resource is pruned already (the message's in the loop above, the value resources when built, the
        // OperationOutcome when built), and pruning twice changes nothing.
        for (i, (id, ty, node)) in entries.into_iter().enumerate() {
            let mut e = Node::obj(self.bump);
            e.member("fullUrl", || Node::Str(self.full_url(id)));
            if self.opts.bundle == BundleType::Transaction {
                let request = transaction_request(self.bump, ty, &node);
                e.member("resource", || node);
                e.member("request", || request);
            } else {
                e.member("resource", || node);
            }
            items.push((i as u64, e));
        }
        // The Bundle's own elements pruned; its entries are (a full URL and a resource with its type: none is
        // empty), so the entry list goes in when it has any.
        bundle.prune();
        if let Node::Obj(f) = &mut bundle
            && !items.is_empty()
        {
            f.push(("entry", Node::Arr(items)));
        }
        let mut json = Vec::with_capacity(16 * 1024);
        bundle.write_json(&mut json);
        // The tree is the arena's (its vectors and strings): it goes with the arena, not node by node.
        std::mem::forget(bundle);
        Conversion {
            json,
            notes: self.notes.list,
        }
    }

    /// FHIR requires a ServiceRequest's, an Immunization's, a Coverage's... patient (`required-elements.tsv`), and
    /// the guide's maps often name none (the ORU's and ORM's ServiceRequest, the VXU's Immunization). Such a
    /// resource refers to the patient of its part of the message (the newest Patient when it was made), or to the
    /// message's only Patient; the report says so. Without one it stays as it is, with a warning: no patient is
    /// guessed among several. Resources with nothing but their id are left alone (dropped unless referred to).
    fn required_patients(&mut self, resources: &mut [Built<'m>], bare: impl Fn(&Built) -> bool) {
        let only = {
            let mut patients = resources.iter().filter(|b| b.ty == patient_type());
            match (patients.next(), patients.next()) {
                (Some(p), None) => Some(p.id),
                _ => None,
            }
        };
        // Resources built from a value (an NK1's or a PRT's RelatedPerson) are one per distinct value across the
        // message: only the message's only Patient is theirs.
        let mut values = std::mem::take(&mut self.value_resources);
        let targets = resources
            .iter_mut()
            .filter(|b| !bare(b))
            .map(|b| (b.ty, b.patient, &mut b.node))
            .chain(values.iter_mut().map(|(_, ty, node)| (*ty, None, node)));
        for (ty, patient, node) in targets {
            let Some(element) = crate::maps::required_patient(ty) else {
                continue;
            };
            let name = ty.name();
            let Node::Obj(fields) = node else { continue };
            if fields.iter().any(|(k, _)| *k == element) {
                continue;
            }
            let Some(patient) = patient.or(only) else {
                self.notes.add(
                    Severity::Warning,
                    name,
                    format_args!(
                        "{name}.{element}: FHIR requires the patient, and the message gives none that is this {name}'s; the {name} is not valid FHIR"
                    ),
                );
                continue;
            };
            let mut r = Node::obj(self.bump);
            r.member("reference", || Node::Str(self.full_url(patient)));
            fields.push((element, r));
            self.linked.push(patient);
            self.notes.add(
                Severity::Information,
                name,
                format_args!(
                    "{name}.{element}: the guide's map names no patient, which FHIR requires; the message's Patient is referred to"
                ),
            );
        }
        self.value_resources = values;
    }

    /// Warnings and errors as an OperationOutcome for the Bundle (information stays in the report).
    fn outcome(&self) -> Option<Node<'m>> {
        let mut issues = BVec::new_in(self.bump);
        let warnings = self
            .notes
            .list
            .iter()
            .filter(|n| n.severity >= Severity::Warning)
            .enumerate();
        issues.extend(warnings.map(|(i, n)| {
            let mut issue = Node::obj(self.bump);
            issue.member("severity", || Node::Str(n.severity.as_str()));
            issue.member("code", || {
                Node::Str(if n.message.contains("not valid") {
                    "code-invalid"
                } else {
                    "not-supported"
                })
            });
            issue.member("diagnostics", || Node::Str(self.bump.alloc_str(&n.message)));
            issue.member("expression", || {
                Node::Arr(bumpalo::vec![in self.bump; (0, Node::Str(self.bump.alloc_str(&n.path)))])
            });
            (i as u64, issue)
        }));
        if issues.is_empty() {
            return None;
        }
        let mut o = Node::obj(self.bump);
        o.member("resourceType", || Node::Str("OperationOutcome"));
        o.member("issue", || Node::Arr(issues));
        Some(o)
    }
}
/// The Patient resource type (looked up once).
fn patient_type() -> TypeShape {
    static PATIENT: OnceLock<TypeShape> = OnceLock::new();
    *PATIENT.get_or_init(|| TypeShape::resource("Patient").expect("Patient is an R4 resource"))
}

/// Every `reference` string under a node.
/// The first of equal notes (same path and message), in their order. A handful are compared with each other; many
/// (a message of 40,000 segments the guide does not map, each noted) are sorted, as comparing each with all
/// those before it was quadratic (40,000 notes: 3.8 s).
fn first_of_equal_notes(notes: Vec<Note>) -> Vec<Note> {
    let same = |a: &Note, b: &Note| a.path == b.path && a.message == b.message;
    if notes.len() <= SCAN_MAX {
        let mut kept: Vec<Note> = Vec::with_capacity(notes.len());
        for n in notes {
            if !kept.iter().any(|k| same(k, &n)) {
                kept.push(n);
            }
        }
        return kept;
    }
    // Equal notes end up side by side, the first of them (the lowest index) first.
    let mut order: Vec<usize> = (0..notes.len()).collect();
    order.sort_unstable_by(|&a, &b| {
        (&notes[a].path, &notes[a].message, a).cmp(&(&notes[b].path, &notes[b].message, b))
    });
    let mut again = vec![false; notes.len()];
    for w in order.windows(2) {
        if same(&notes[w[0]], &notes[w[1]]) {
            again[w[1]] = true;
        }
    }
    notes
        .into_iter()
        .zip(again)
        .filter_map(|(n, again)| (!again).then_some(n))
        .collect()
}

fn collect_refs<'n>(n: &'n Node, out: &mut Vec<&'n str>) {
    match n {
        Node::Obj(f) => {
            for (k, v) in f {
                match v {
                    Node::Str(s) if *k == "reference" => out.push(s),
                    _ => collect_refs(v, out),
                }
            }
        }
        Node::Arr(items) => items.iter().for_each(|(_, v)| collect_refs(v, out)),
        _ => {}
    }
}

/// Whether an extension (cleaned and pruned) has its url and a value or nested extensions.
fn extension_complete(it: &Node<'_>) -> bool {
    let Node::Obj(f) = it else { return false };
    let has_url = f
        .iter()
        .any(|(k, v)| *k == "url" && matches!(v, Node::Str(_)));
    let has_value = f
        .iter()
        .any(|(k, _)| k.starts_with("value") || *k == "extension");
    has_url && has_value
}

/// A resource's clean-up: [`clean_extensions`], then [`drop_identifiers_without_value`], then [`Node::prune`],
/// the three in one walk (each subtree is independent of its siblings, so it can be finished before the next
/// is started). Where the three interact, the functions themselves run on the subtree in that order: under an
/// `extension` array (whose items are judged after their own clean-up, before identifiers are dropped from
/// them) and an `identifier` array. Returns whether the node is empty.
fn tidy(n: &mut Node<'_>) -> bool {
    match n {
        Node::Obj(fields) => crate::tree::clean_list(fields, |k, v| match v {
            // The kind first: most members are leaves, told in place.
            leaf if !leaf.is_container() => leaf.is_empty(),
            Node::Arr(items) if *k == "extension" || *k == "modifierExtension" => {
                for (_, it) in items.iter_mut() {
                    clean_extensions(it);
                    it.prune();
                }
                items.retain(|(_, it)| extension_complete(it));
                drop_identifiers_without_value(v);
                v.prune()
            }
            Node::Arr(_) if *k == "identifier" => {
                clean_extensions(v);
                if let Node::Arr(items) = v {
                    items.retain(|(_, it)| it.get_str("value").is_some());
                }
                drop_identifiers_without_value(v);
                v.prune()
            }
            _ => tidy(v),
        }),
        Node::Arr(items) => crate::tree::clean_list(items, |_, v| tidy(v)),
        leaf => leaf.is_empty(),
    }
}

/// An identifier without a value identifies nothing: rows that assign its type (`VN`) or system apply even when
/// the v2 identifier is empty, so the ones left without a value are removed.
fn drop_identifiers_without_value(n: &mut Node) {
    match n {
        Node::Obj(fields) => {
            for (k, v) in fields.iter_mut() {
                if let Node::Arr(items) = v
                    && *k == "identifier"
                {
                    items.retain(|(_, it)| it.get_str("value").is_some());
                }
                if v.is_container() {
                    drop_identifiers_without_value(v);
                }
            }
        }
        Node::Arr(items) => items
            .iter_mut()
            .for_each(|(_, v)| drop_identifiers_without_value(v)),
        _ => {}
    }
}

/// What FHIR requires of a resource and the guide's maps leave out, filled or tidied by rule, rather than a
/// resource that is not valid FHIR: a narrative's status; an Encounter's location entries without a Location; and
/// a status on Observation, DiagnosticReport, Encounter, ServiceRequest and many others (`required-elements.tsv`):
/// when the message gave none the guide could map, the status is `unknown` (where the element's required value
/// set has it) and the report says so.
fn fill_required(ty: TypeShape, id: &str, node: &mut Node<'_>, notes: &mut Notes) {
    let name = ty.name();
    let Node::Obj(fields) = node else {
        return;
    };
    // A narrative needs its status. The guide's only one (PV2-12, the visit description, as an Encounter's text)
    // is text from the message, not generated from the resource's elements: `additional`.
    if let Some((_, Node::Obj(text))) = fields.iter_mut().find(|(k, _)| *k == "text")
        && text.iter().any(|(k, _)| *k == "div")
        && !text.iter().any(|(k, _)| *k == "status")
    {
        text.push(("status", Node::Str("additional")));
    }
    // An Encounter's location entry requires its Location: the guide assigns an entry's status (`active`,
    // `planned`) from PV1-2 whether or not PV1-3 named a location, and such an entry says nothing.
    if name == "Encounter"
        && let Some((_, Node::Arr(items))) = fields.iter_mut().find(|(k, _)| *k == "location")
    {
        items.retain(
            |(_, it)| matches!(it, Node::Obj(f) if f.iter().any(|(k, _)| *k == "location")),
        );
        if items.is_empty() {
            fields.retain(|(k, _)| *k != "location");
        }
    }
    if !crate::maps::status_may_be_unknown(ty)
        || fields
            .iter()
            .any(|(k, _)| *k == "status" || *k == "_status")
    {
        return;
    }
    fields.push(("status", Node::Str("unknown")));
    notes.add(
        Severity::Information,
        name,
        format_args!(
            "{name} {}: the message gives no status the guide maps; status is unknown",
            id
        ),
    );
}

/// Elements FHIR R4 requires that a v2 message often cannot give, with where they sit: `(resource type, parent
/// element or "" for the resource itself, element, how it holds the mark)`.
/// - MessageHeader.source.endpoint and each destination's: v2 has a network address only from 2.7 (MSH-24 and
///   MSH-25), which the guide maps; before, the sender is named by application and facility alone.
/// - MessageHeader.event[x]: MSH-9's trigger event (MSG.2), which an `ACK` and a broken MSH leave out.
/// - Provenance.recorded: an instant, from a segment's time (EVN-2, ORC-9, TXA's), which some segments leave
///   empty (and which needs a time zone, see [`crate::Options::time_zone`]).
/// - Observation.code and a component's, DiagnosticReport.code: OBX-3, OBR-4, which some messages leave empty
///   although v2 requires them too.
/// - Encounter.class: PV1-2, which some messages leave empty; an AllergyIntolerance reaction's manifestation.
///
/// Not statuses or intents: their bindings are required, and a code is required with them (HAPI's validator
/// rejects the extension alone: "No code provided"); a status whose value set has `unknown` is `unknown` (see
/// [`fill_required`]), the others are left out, and the validator reports them.
const ABSENT_REQUIRED: [(&str, &str, &str, Absent); 9] = [
    (
        "MessageHeader",
        "source",
        "endpoint",
        Absent::Primitive("_endpoint"),
    ),
    (
        "MessageHeader",
        "destination",
        "endpoint",
        Absent::Primitive("_endpoint"),
    ),
    ("Provenance", "", "recorded", Absent::Primitive("_recorded")),
    // MSH-9 without a trigger event (`ACK`) or empty: the guide's only event[x] is eventCoding, from MSG.2.
    ("MessageHeader", "", "eventCoding", Absent::Complex),
    ("Observation", "", "code", Absent::Complex),
    ("Observation", "component", "code", Absent::Complex),
    ("DiagnosticReport", "", "code", Absent::Complex),
    ("Encounter", "", "class", Absent::Complex),
    // AL1-5 empty while AL1-4 gives the reaction's severity.
    (
        "AllergyIntolerance",
        "reaction",
        "manifestation",
        Absent::Repeating,
    ),
];

/// Whether a type has elements in [`ABSENT_REQUIRED`]: most have none, and are told apart at once rather than by
/// a comparison per entry (a test checks the two agree).
fn has_absent_required(name: &str) -> bool {
    matches!(
        name,
        "MessageHeader"
            | "Provenance"
            | "Observation"
            | "DiagnosticReport"
            | "Encounter"
            | "AllergyIntolerance"
    )
}

/// An object holding one extension, `{"extension": [{"url": url, value.0: value.1}]}`: a primitive's `_element`
/// (the v2 code as original text) or a complex element marked data-absent.
fn with_extension<'b>(
    bump: &'b Bump,
    url: &'static str,
    value: (&'static str, &'b str),
) -> Node<'b> {
    let mut ext = Node::obj(bump);
    ext.member("url", || Node::Str(url));
    ext.member(value.0, || Node::Str(value.1));
    let mut holder = Node::obj(bump);
    holder.member("extension", || Node::Arr(bumpalo::vec![in bump; (0, ext)]));
    holder
}

/// How an element of [`ABSENT_REQUIRED`] holds the data-absent-reason extension.
#[derive(Clone, Copy)]
enum Absent {
    /// A primitive: on its `_element` (named here: member names are static).
    Primitive(&'static str),
    /// A complex type: in the element itself.
    Complex,
    /// A repeating complex type: in one item.
    Repeating,
}

/// Marks each required element of [`ABSENT_REQUIRED`] the message gave no value with FHIR's data-absent-reason
/// extension, `unknown` (on `_element` for a primitive): the resource is valid, says that the value is unknown,
/// and invents none. Each is reported.
fn mark_absent<'b>(
    bump: &'b Bump,
    ty: TypeShape,
    id: &str,
    node: &mut Node<'b>,
    notes: &mut Notes,
) {
    let name = ty.name();
    if !has_absent_required(name) {
        return;
    }
    for &(_, parent, element, how) in ABSENT_REQUIRED.iter().filter(|r| r.0 == name) {
        let unknown = || {
            with_extension(
                bump,
                "http://hl7.org/fhir/StructureDefinition/data-absent-reason",
                ("valueCode", "unknown"),
            )
        };
        let mark = |obj: &mut Node<'b>| {
            let Node::Obj(fields) = obj else { return false };
            let shadow = match how {
                Absent::Primitive(shadow) => shadow,
                Absent::Complex | Absent::Repeating => element,
            };
            if fields.iter().any(|(k, _)| *k == element || *k == shadow) {
                return false;
            }
            let value = match how {
                Absent::Repeating => Node::Arr(bumpalo::vec![in bump; (0, unknown())]),
                Absent::Primitive(_) | Absent::Complex => unknown(),
            };
            fields.push((shadow, value));
            true
        };
        let mut marked = 0;
        match (parent, &mut *node) {
            ("", n) => marked += usize::from(mark(n)),
            (parent, Node::Obj(fields)) => match fields.iter_mut().find(|(k, _)| *k == parent) {
                Some((_, Node::Arr(items))) => {
                    for (_, item) in items.iter_mut() {
                        marked += usize::from(mark(item));
                    }
                }
                Some((_, obj)) => marked += usize::from(mark(obj)),
                // MessageHeader.source is required itself (MSH-3 empty).
                None if parent == "source" => {
                    let mut source = Node::obj(bump);
                    marked += usize::from(mark(&mut source));
                    fields.push(("source", source));
                }
                None => {}
            },
            _ => {}
        }
        if marked > 0 {
            // Formatted only when information notes are kept.
            let dot = if parent.is_empty() { "" } else { "." };
            notes.add(
                Severity::Information,
                name,
                format_args!(
                    "{name} {id}: FHIR R4 requires {parent}{dot}{element} and the message gives none; marked data-absent-reason unknown"
                ),
            );
        }
    }
}

/// The system `urn:ietf:rfc:3986` says an identifier's value is a URI. The guide gives it to HD.2 when HD.3 is
/// `ISO` or `UUID` (HD[Organization], HD[Device]), and HD.2 holds the bare OID or UUID: its URI is `urn:oid:` or
/// `urn:uuid:` and the value. A value that is neither and has no scheme is no URI, and the system is left out (the
/// report says so) rather than making the identifier invalid.
fn uri_identifiers<'b>(bump: &'b Bump, node: &mut Node<'b>, notes: &mut Notes) {
    const URI: &str = "urn:ietf:rfc:3986";
    let Node::Obj(fields) = node else { return };
    let Some((_, Node::Arr(items))) = fields.iter_mut().find(|(k, _)| *k == "identifier") else {
        return;
    };
    for (_, item) in items.iter_mut() {
        if item.get_str("system") != Some(URI) {
            continue;
        }
        let Node::Obj(parts) = item else { continue };
        let Some(value) = parts.iter_mut().find_map(|(k, v)| match v {
            Node::Str(s) if *k == "value" => Some(s),
            _ => None,
        }) else {
            continue;
        };
        let prefix = if has_scheme(value) {
            continue;
        } else if dotted_number(value) {
            "urn:oid:"
        } else if value::is_uuid(value) {
            "urn:uuid:"
        } else {
            notes.add(
                Severity::Information,
                "identifier",
                format_args!("identifier {value:?} is not a URI: its system {URI} is left out"),
            );
            parts.retain(|(k, _)| *k != "system");
            continue;
        };
        let mut uri =
            bumpalo::collections::String::with_capacity_in(prefix.len() + value.len(), bump);
        uri.push_str(prefix);
        uri.push_str(value);
        *value = uri.into_bump_str();
    }
}

/// An OID as FHIR's `urn:oid:` URIs require it: `0`, `1` or `2`, then dot-separated numbers without leading zeros.
fn valid_oid(s: &str) -> bool {
    let mut arcs = s.split('.');
    matches!(arcs.next(), Some("0" | "1" | "2"))
        && s.contains('.')
        && arcs.all(|a| {
            !a.is_empty()
                && a.bytes().all(|b| b.is_ascii_digit())
                && (a == "0" || !a.starts_with('0'))
        })
}

/// An OID as senders write them: numbers separated by dots (`2.16.840.1.114222.4.1.000001`; leading zeros, which
/// the OID rules forbid, are common, and `urn:oid:` with them is still a URI).
fn dotted_number(s: &str) -> bool {
    s.contains('.')
        && s.split('.')
            .all(|arc| !arc.is_empty() && arc.bytes().all(|b| b.is_ascii_digit()))
}

/// The text starts with a URI scheme (`urn:`, `http:`): a letter, then letters, digits, `+`, `-` or `.`, then `:`.
fn has_scheme(s: &str) -> bool {
    let Some((scheme, _)) = s.split_once(':') else {
        return false;
    };
    scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// An extension needs its url and a value or nested extensions; the maps build both halves from separate rows,
/// so one half alone (the v2 element was empty or did not convert) is removed.
fn clean_extensions(n: &mut Node) {
    match n {
        Node::Obj(fields) => {
            for (k, v) in fields.iter_mut() {
                // The kind first (most members are strings, walked into by no one), the name after.
                match v {
                    Node::Arr(items) if *k == "extension" || *k == "modifierExtension" => {
                        for (_, it) in items.iter_mut() {
                            clean_extensions(it);
                            it.prune();
                        }
                        items.retain(|(_, it)| extension_complete(it));
                    }
                    _ if v.is_container() => clean_extensions(v),
                    _ => {}
                }
            }
        }
        Node::Arr(items) => items.iter_mut().for_each(|(_, v)| clean_extensions(v)),
        _ => {}
    }
}

/// A transaction entry's request: a conditional create on the resource's first business identifier.
fn transaction_request<'b>(bump: &'b Bump, ty: &'static str, node: &Node<'b>) -> Node<'b> {
    let mut req = Node::obj(bump);
    req.member("method", || Node::Str("POST"));
    req.member("url", || Node::Str(ty));
    if let Node::Obj(fields) = node
        && let Some((_, Node::Arr(ids))) = fields.iter().find(|(k, _)| *k == "identifier")
        && let Some((_, first)) = ids.first()
        && let Some(value) = first.get_str("value")
    {
        let q = match first.get_str("system") {
            Some(s) => format!("identifier={}|{}", query_escape(s), query_escape(value)),
            None => format!("identifier={}", query_escape(value)),
        };
        req.member("ifNoneExist", || Node::Str(bump.alloc_str(&q)));
    }
    req
}

fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~:/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// [`first_text`], sooner for a value of ASCII bytes without a separator or the escape character (most values):
/// its first component and subcomponent are the whole value, and its text is its bytes, sliced from the
/// message's `text` when the message is UTF-8 (no second check of the bytes).
fn first_text_plain<'a>(v: Value<'a>, plain: &PlainBytes, text: Option<&'a str>) -> Cow<'a, str> {
    let raw = v.raw();
    if raw.iter().all(|&b| plain.0[usize::from(b)]) {
        // The value's bytes are the message's at its offset (checked: a value may come from elsewhere).
        let (at, len) = (v.offset(), raw.len());
        let sliced = text
            .and_then(|t| t.get(at..at + len))
            .filter(|s| s.as_ptr() == raw.as_ptr());
        if let Some(t) = sliced.or_else(|| std::str::from_utf8(raw).ok()) {
            return Cow::Borrowed(trim_ascii_text(t));
        }
    }
    first_text(v)
}

/// The bytes of a plain value: ASCII other than the component, repetition and subcomponent separators and the
/// escape character, by table (one load per byte rather than five comparisons).
struct PlainBytes([bool; 256]);

impl PlainBytes {
    fn new(d: &hl7v2::Delimiters) -> PlainBytes {
        let mut t = [false; 256];
        t[..128].fill(true);
        for b in [
            Some(d.component),
            Some(d.repetition),
            d.subcomponent,
            d.escape,
        ]
        .into_iter()
        .flatten()
        {
            t[usize::from(b)] = false;
        }
        PlainBytes(t)
    }
}

/// `str::trim` of ASCII text, by bytes: what `trim` removes from ASCII is tab to carriage return and space.
fn trim_ascii_text(t: &str) -> &str {
    let ws = |b: &u8| matches!(b, b'\t'..=b'\r' | b' ');
    let bytes = t.as_bytes();
    let start = bytes.iter().position(|b| !ws(b)).unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|b| !ws(b)).map_or(start, |i| i + 1);
    // Both ends are at ASCII bytes: character boundaries.
    t.get(start..end).unwrap_or_default()
}

/// The text of a value's first component (the whole value when it has none), trimmed.
fn first_text(v: Value<'_>) -> Cow<'_, str> {
    let t = match v.level() {
        Level::Field | Level::Repetition => v
            .component(1)
            .map(|c| c.subcomponent(1).map_or_else(|| c.text(), |s| s.text())),
        Level::Component => v.subcomponent(1).map(|s| s.text()),
        _ => Some(v.text()),
    }
    .unwrap_or_else(|| v.text());
    match t {
        Cow::Borrowed(b) => Cow::Borrowed(b.trim()),
        Cow::Owned(o) if o.trim().len() == o.len() => Cow::Owned(o),
        Cow::Owned(o) => Cow::Owned(o.trim().to_string()),
    }
}

/// Writes `value` at `steps` under `target` (an object of type `resolved.ty`, the steps resolved against it).
/// Repeating elements get the item tagged by the step's slot and `base` (the v2 repetition and map
/// application), so rows that share a slot share an item.
#[allow(clippy::too_many_arguments)]
fn write<'b>(
    bump: &'b Bump,
    target: &mut Node<'b>,
    steps: &[Step],
    resolved: &Resolved,
    base: u64,
    value: Node<'b>,
    (notes, long): (&mut Notes, &mut LongArrays),
    path: Label<'_>,
) {
    let Some((last, init)) = steps.split_last() else {
        return;
    };
    let mut node = target;
    let mut t = resolved.ty;
    let mut tag = base;
    for (i, s) in init.iter().enumerate() {
        let Some(&e) = resolved.shapes.get(i) else {
            not_an_element(notes, path, s.name, t);
            return;
        };
        if e.choice.is_some() && other_choice_present(node, t, s.name, e.choice) {
            notes.add(
                Severity::Information,
                path,
                format_args!(
                    "{path}: {}[x] already has a value; {} not mapped",
                    e.choice.unwrap_or(""),
                    s.name
                ),
            );
            return;
        }
        // The guide numbers extensions per segment map, and sometimes gives two fields the same number
        // (OBX-10, OBX-19 and OBX-30 all write `extension[2]`): an extension's item is also told apart by the
        // element the row maps, which `path` names.
        tag = step_tag(tag, s, path);
        let name = resolved.member_name(i, s.name);
        let next = if e.many {
            node.member(name, || Node::arr(bump))
                .and_then(|a| a.slot_in(long, tag, || Node::obj(bump)))
        } else {
            node.member(name, || Node::obj(bump))
        };
        let Some(next) = next else { return };
        node = next;
        t = e.ty;
    }
    let Some(&e) = resolved.shapes.get(init.len()) else {
        not_an_element(notes, path, last.name, t);
        return;
    };
    if let Some(base) = e.choice
        && other_choice_present(node, t, last.name, e.choice)
    {
        // One alternative of a choice element only: the first row's value stands.
        notes.add(
            Severity::Information,
            path,
            format_args!(
                "{path}: {base}[x] already has a value; {} not mapped",
                last.name
            ),
        );
        return;
    }
    // A code outside the required value set of its element would make the resource invalid, and so would the
    // element with no code (a required binding needs one, whatever its extensions say). Where the value set has
    // `unknown` (a status, a gender), the element is `unknown` and keeps the v2 code as its original text (an
    // extension on the primitive); elsewhere it is left out, and the report (and the Bundle's OperationOutcome)
    // keeps the code.
    let value = match value {
        Node::Str(code)
            if resolved
                .required
                .is_some_and(|allowed| !allowed.contains(&&*code))
                && e.ty.name() == "code" =>
        {
            let unknown = resolved
                .required
                .is_some_and(|allowed| allowed.contains(&"unknown"));
            notes.add(
                Severity::Warning,
                path,
                format_args!(
                    "{path}: {code:?} is not a code of FHIR {}.{}'s required value set; {}",
                    t.name(),
                    last.name,
                    if unknown {
                        "it is unknown, with the v2 code as its original text"
                    } else {
                        "not mapped"
                    }
                ),
            );
            if e.many || !unknown {
                return;
            }
            node.set_if_absent(last.name, Node::Str("unknown"));
            let prim = with_extension(
                bump,
                "http://hl7.org/fhir/StructureDefinition/originalText",
                ("valueString", code),
            );
            node.set_if_absent(bump.alloc_str(&format!("_{}", last.name)), prim);
            return;
        }
        v => v,
    };
    if e.many {
        // The same tag as a path that goes through this element (`identifier[1]` here and in
        // `identifier[1].type.coding.code`), so that both rows fill one item.
        let tag = step_tag(tag, last, path);
        if let Some(Node::Arr(items)) = node.member(last.name, || Node::arr(bump)) {
            match long.find(items, tag) {
                None => long.push(items, tag, value),
                // Objects merge; a primitive item keeps the first value written.
                Some(i) => {
                    if let (Node::Obj(have), Node::Obj(add)) = (&mut items[i].1, value) {
                        for (k, v) in add {
                            if !have.iter().any(|(hk, _)| *hk == k) {
                                have.push((k, v));
                            }
                        }
                    }
                }
            }
        }
    } else if let Some(existing) = node.member(last.name, || Node::placeholder(bump)) {
        // Objects merge (two rows filling one Reference or Period); a primitive keeps the first value written. An
        // empty object (the member just made) takes the value whole: merged into nothing, it would be the same.
        let fresh = matches!(existing, Node::Obj(f) if f.is_empty());
        match (existing, value) {
            // The empty object replaced is the arena's: nothing to drop.
            (slot, v) if fresh => std::mem::forget(std::mem::replace(slot, v)),
            (Node::Obj(have), Node::Obj(add)) => {
                for (k, v) in add {
                    if !have.iter().any(|(hk, _)| *hk == k) {
                        have.push((k, v));
                    }
                }
            }
            _ => {}
        }
    }
}

/// The report's note for a row whose path goes on to `name`, which FHIR type `parent` does not have: nothing is
/// written there. Out of line: rare.
#[cold]
#[inline(never)]
fn not_an_element(notes: &mut Notes, path: Label<'_>, name: &str, parent: TypeShape) {
    notes.add(
        Severity::Information,
        path,
        format_args!(
            "{path}: {name} is not an element of FHIR {}; not mapped",
            parent.name()
        ),
    );
}

/// Two hashes made one (splitmix64's finaliser over them): slot tags, which are compared and never written, so
/// only their equality matters.
fn mix(a: u64, b: u64) -> u64 {
    let mut x = a.rotate_left(23) ^ b ^ 0x9e37_79b9_7f4a_7c15;
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The tag of the item a step selects under the item tagged `tag`: the step's name and instance number, and for
/// `extension` the element the row maps (the guide numbers extensions per segment map, and sometimes gives two
/// fields the same number: OBX-10, OBX-19 and OBX-30 all write `extension[2]`), unless the map's fields build
/// that extension together (PID-35 and PID-36's patient-animal: [`crate::maps::Step::shared`]).
fn step_tag(tag: u64, s: &Step, path: Label<'_>) -> u64 {
    let t = mix(tag, s.key);
    if s.extension && !s.shared {
        mix(t, path.hash(Fnv::new()).0)
    } else {
        t
    }
}

/// Whether another alternative of the choice element `choice` is already set on `node`.
fn other_choice_present(
    node: &Node,
    t: TypeShape,
    name: &str,
    choice: Option<&'static str>,
) -> bool {
    let (Some(base), Node::Obj(fields)) = (choice, node) else {
        return false;
    };
    // The prefix first: most members are not of the choice at all, and the name lookup is the dear part.
    fields.iter().any(|(k, _)| {
        k.len() > base.len()
            && k.bytes().zip(base.bytes()).all(|(a, b)| a == b)
            && !crate::tree::same(k, name)
            && t.element(k).is_some_and(|o| o.choice == Some(base))
    })
}

/// The object a nested data type map built as `ty`: its coding and identifier systems (see [`fix_systems_in`]),
/// and for a Quantity its unit code (see [`unit_code_without_system`]).
fn fix_systems(ty: TypeShape, obj: &mut Node, notes: &mut Notes, path: Label<'_>) {
    fix_systems_in(obj, notes, path);
    if crate::maps::is_quantity(ty) {
        unit_code_without_system(obj, notes, path);
    }
}

/// Coding and identifier systems written from CWE.3 or CX.4 inside a nested map: the v2 name (`LN`) becomes the
/// FHIR URI. A ContactPoint's `system` is a code of its own (`phone`), left as it is.
fn fix_systems_in(obj: &mut Node, notes: &mut Notes, path: Label<'_>) {
    const CONTACT_POINT_SYSTEMS: [&str; 7] =
        ["phone", "fax", "email", "pager", "url", "sms", "other"];
    match obj {
        Node::Obj(fields) => {
            let mut drop = false;
            let coding = fields.iter().any(|(k, _)| *k == "code" || *k == "display");
            for (k, v) in fields.iter_mut() {
                if *k == "system"
                    && !coding
                    && matches!(v, Node::Str(s) if CONTACT_POINT_SYSTEMS.contains(s))
                {
                    continue;
                }
                if *k == "system" {
                    if let Node::Str(s) = v
                        && !s.contains(':')
                    {
                        match system_uri(s) {
                            Some(u) => *s = u,
                            None => {
                                notes.add(Severity::Warning, path, format_args!("{path}: coding system {s:?} has no known FHIR URI; the code is kept without a system"));
                                drop = true;
                            }
                        }
                    }
                } else if v.is_container() {
                    fix_systems_in(v, notes, path);
                }
            }
            if drop {
                fields.retain(|(k, v)| {
                    !(*k == "system" && matches!(v, Node::Str(s) if !s.contains(':')))
                });
            }
        }
        Node::Arr(items) => items
            .iter_mut()
            .for_each(|(_, v)| fix_systems_in(v, notes, path)),
        _ => {}
    }
}

/// Every Quantity of `node`, a `ty`, through [`unit_code_without_system`]: for the resources whose maps write a
/// unit code bare ([`crate::maps::Maps::bare_unit_codes`]). Typed, so that a Range's `high` with a code alone is
/// known for a Quantity.
fn quantity_units(ty: TypeShape, node: &mut Node, notes: &mut Notes, path: &str) {
    let Node::Obj(fields) = node else { return };
    for (k, v) in fields.iter_mut() {
        let Some(e) = ty.element(k) else { continue };
        if e.ty.json_kind() != fhir::JsonKind::Object {
            continue;
        }
        let mut one = |v: &mut Node| {
            if crate::maps::is_quantity(e.ty) {
                unit_code_without_system(v, notes, Label::plain(path));
            } else {
                quantity_units(e.ty, v, notes, path);
            }
        };
        match v {
            Node::Arr(items) => items.iter_mut().for_each(|(_, it)| one(it)),
            v => one(v),
        }
    }
    // A Range's bound with a unit and no value (RXO-4's unit written to `low` and `high`, RXO-3 empty) bounds
    // nothing, and FHIR's rng-2 cannot compare it: it goes, and the report says so.
    if ty.name() == "Range" {
        fields.retain(|(k, v)| {
            let bare = matches!(*k, "low" | "high")
                && matches!(v, Node::Obj(q) if !q.iter().any(|(qk, _)| *qk == "value"));
            if bare {
                notes.add(
                    Severity::Information,
                    path,
                    format_args!("{path}: a range's {k} has a unit but no value; left out"),
                );
            }
            !bare
        });
    }
}

/// A Quantity whose unit code has no system (CWE.3 empty, or a v2 name without a FHIR URI, such as `ISO` in
/// `beats/min^^ISO`): FHIR's qty-3 forbids the code alone, so it is the unit's text (or goes, when the unit has
/// one).
fn unit_code_without_system(obj: &mut Node, notes: &mut Notes, path: Label<'_>) {
    let Node::Obj(fields) = obj else { return };
    let has = |fields: &[(&str, Node)], name: &str| fields.iter().any(|(k, _)| *k == name);
    if has(fields, "system") {
        return;
    }
    let Some(i) = fields.iter().position(|(k, _)| *k == "code") else {
        return;
    };
    let (_, code) = fields.remove(i);
    if !has(fields, "unit") {
        fields.push(("unit", code));
    }
    notes.add(
        Severity::Information,
        path,
        format_args!("{path}: a unit code without a code system is the unit's text"),
    );
}

/// The code checks of one conversion: the checker, and the verdict on each (system, code) pair once asked. A
/// message repeats its codes (the ORU's OBX-8 `N` in every Observation, its OBR-4 in the DiagnosticReport and an
/// Observation), and a verdict depends on the pair alone (see [`crate::CodeChecker`]), so each pair is asked once.
///
/// A message has a few dozen distinct pairs: a scan of them costs less than hashing a key (a URI of some 60 bytes),
/// and their text is kept in one buffer. Past [`Checks::MEMO`] pairs, new ones are asked without being kept, so
/// that a message of thousands of distinct codes costs no more per code than asking.
struct Checks<'c> {
    checker: &'c dyn crate::CodeChecker,
    /// Each pair's system and code, one after the other.
    text: String,
    /// Each kept pair: where its system ends and its code ends in `text` (its system starts where the previous
    /// pair's code ends), and its verdict.
    seen: Vec<(usize, usize, CodeCheck)>,
    /// The verdict on a pair not kept.
    last: Option<CodeCheck>,
}

impl<'c> Checks<'c> {
    /// The most pairs kept.
    const MEMO: usize = 64;

    fn new(checker: &'c dyn crate::CodeChecker) -> Checks<'c> {
        Checks {
            checker,
            text: String::new(),
            seen: Vec::new(),
            last: None,
        }
    }

    /// The checker's verdict on `code` in `system`, asked the first time only.
    fn verdict(&mut self, system: &str, code: &str) -> &CodeCheck {
        let mut start = 0;
        let mut found = None;
        let text = self.text.as_bytes();
        for (i, &(system_end, code_end, _)) in self.seen.iter().enumerate() {
            // The code first: codes are short and differ early, systems share long prefixes. Compared as bytes
            // (no test of character boundaries: the ends are the pushed strings').
            if text[system_end..code_end] == *code.as_bytes()
                && text[start..system_end] == *system.as_bytes()
            {
                found = Some(i);
                break;
            }
            start = code_end;
        }
        if let Some(i) = found {
            return &self.seen[i].2;
        }
        let verdict = self.checker.check(system, code);
        if self.seen.len() == Self::MEMO {
            return self.last.insert(verdict);
        }
        self.text.push_str(system);
        let system_end = self.text.len();
        self.text.push_str(code);
        self.seen.push((system_end, self.text.len(), verdict));
        &self.seen[self.seen.len() - 1].2
    }
}

/// Checks every coding (`coding` items, `class`) against the terminology: fills a missing display from the code
/// system, reports a code that is not valid (kept as sent).
fn check_codes(node: &mut Node, checks: &mut Checks<'_>, notes: &mut Notes, at: &str) {
    // Only objects and arrays are walked into: most members are strings, and a call for each cost as much as the
    // checks of the ORU^R01's codings.
    match node {
        Node::Obj(fields) => {
            for (k, v) in fields.iter_mut() {
                match v {
                    Node::Arr(items) if crate::tree::same(k, "coding") => {
                        for (_, c) in items.iter_mut() {
                            check_one(c, checks, notes, at);
                        }
                    }
                    Node::Obj(_) if crate::tree::same(k, "class") => {
                        check_one(v, checks, notes, at)
                    }
                    _ if v.is_container() => check_codes(v, checks, notes, at),
                    _ => {}
                }
            }
        }
        Node::Arr(items) => {
            for (_, v) in items.iter_mut() {
                if v.is_container() {
                    check_codes(v, checks, notes, at);
                }
            }
        }
        _ => {}
    }
}

fn check_one(c: &mut Node, checks: &mut Checks<'_>, notes: &mut Notes, at: &str) {
    let Node::Obj(fields) = c else { return };
    // The coding's system, code and display, in one pass over its members.
    let (mut system, mut code, mut has_display) = (None, None, false);
    for (k, v) in fields.iter() {
        match (k.as_bytes(), v) {
            (b"system", Node::Str(s)) => system = Some(*s),
            (b"code", Node::Str(s)) => code = Some(*s),
            (b"display", _) => has_display = true,
            _ => {}
        }
    }
    let (Some(system), Some(code)) = (system, code) else {
        return;
    };
    // Every occurrence is reported: the notes' de-duplication keeps the first of equal ones, as before the memo.
    match checks.verdict(system, code) {
        CodeCheck::NotLoaded => {}
        CodeCheck::Valid { display } => {
            if let Some(d) = display
                && !has_display
            {
                // The arena the coding's members live in.
                let bump = fields.bump();
                fields.push(("display", Node::Str(bump.alloc_str(d))));
            }
        }
        CodeCheck::Invalid { message } => notes.add(
            Severity::Warning,
            at,
            format_args!("{at}: code {code:?} is not valid in {system}: {message}; kept as sent"),
        ),
    }
}

fn uuid_v8(bump: &Bump, a: u64, b: u64) -> &str {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&a.to_be_bytes());
    bytes[8..].copy_from_slice(&b.to_be_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x80; // version 8
    bytes[8] = (bytes[8] & 0x3f) | 0x80; // RFC 9562 variant
    // Each byte's two hex digits at once, from a table made at compile time.
    const PAIRS: [[u8; 2]; 256] = {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut t = [[0u8; 2]; 256];
        let mut i = 0;
        while i < 256 {
            t[i] = [HEX[i >> 4], HEX[i & 0xf]];
            i += 1;
        }
        t
    };
    // Where each byte's digits go in `8-4-4-4-12`.
    const AT: [usize; 16] = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
    // Written on the stack, then copied into the arena at once.
    let mut s = [b'-'; 36];
    for (b, at) in bytes.iter().zip(AT) {
        s[at..at + 2].copy_from_slice(&PAIRS[usize::from(*b)]);
    }
    // Hex digits and dashes: ASCII.
    bump.alloc_str(std::str::from_utf8(&s).unwrap_or_default())
}

/// A JSON string for a report line.
pub(crate) fn json_str(s: &str) -> String {
    let mut out = Vec::new();
    write_str(s, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORU: &[u8] = include_bytes!("../../../bench/hl7v2/messages/oru_r01.hl7");

    #[test]
    fn every_type_with_absent_required_elements_is_marked() {
        for (ty, ..) in ABSENT_REQUIRED {
            assert!(
                has_absent_required(ty),
                "{ty} is missing from has_absent_required"
            );
        }
        assert!(!has_absent_required("Patient"));
    }

    #[test]
    fn an_oid_is_numbers_without_leading_zeros_under_0_1_or_2() {
        for good in ["2.16.840.1.114222.4.3.3.5.1.2", "1.0.3", "0.9", "2.999"] {
            assert!(valid_oid(good), "{good}");
        }
        for bad in [
            "2.16.840.1.114222.4.1.000000",
            "2.16.840.1.114222.XXX",
            "3.1",
            "2",
            "2.",
            "2..1",
            "02.1",
            "",
            "1.Edu",
        ] {
            assert!(!valid_oid(bad), "{bad}");
        }
    }

    #[test]
    fn has_text_is_whether_the_text_is_not_blank() {
        let values = [
            "", " ", "  \t", "A", " A ", "\x0b", "\x0bx", "\\T\\", "\\X20\\", "\\.br\\", "é",
            " é ", "\x1c", "\x7f", "a&b", "&", "\u{a0}", "\u{3000}",
        ];
        for raw in values {
            let text = format!("MSH|^~\\&|A|B|C|D|1||ADT^A01|1|P|2.5\rPID|1||{raw}^x");
            let msg = Message::parse(text.as_bytes());
            let seg = msg.find_segment(b"PID", 1).unwrap();
            let c = seg.field(3).and_then(|f| f.component(1)).unwrap();
            assert_eq!(
                has_text(c, msg.delimiters().escape),
                text_of(c).is_some(),
                "{raw:?}"
            );
        }
    }

    /// `trim_ascii_text` is `str::trim` on ASCII: every ASCII byte around and inside a short text.
    #[test]
    fn ascii_trim_is_trim() {
        for a in 0u8..128 {
            for b in 0u8..128 {
                for t in [
                    format!("{}x{}", a as char, b as char),
                    format!("{}{}", a as char, b as char),
                    format!("{}", a as char),
                    String::new(),
                ] {
                    assert_eq!(trim_ascii_text(&t), t.trim(), "{t:?}");
                }
            }
        }
    }

    #[test]
    fn the_first_of_equal_notes_stays_in_order_however_many() {
        let note = |i: usize| Note {
            severity: Severity::Warning,
            path: format!("OBX-{}", i % 7),
            message: format!("m{}", i % 5),
        };
        for n in [0, 3, SCAN_MAX, SCAN_MAX + 1, 500] {
            let notes: Vec<Note> = (0..n).map(note).collect();
            let mut want: Vec<Note> = Vec::new();
            for x in &notes {
                if !want
                    .iter()
                    .any(|k| k.path == x.path && k.message == x.message)
                {
                    want.push(x.clone());
                }
            }
            assert_eq!(first_of_equal_notes(notes), want, "{n} notes");
        }
    }

    #[test]
    fn a_field_repeated_thousands_of_times_keeps_every_repetition_in_order() {
        // Past the length from which array items are found by an index (`LongArrays`).
        let n = 3000;
        let reps: Vec<String> = (0..n).map(|i| format!("M{i}^^^H^MR")).collect();
        let msg = format!(
            "MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|X1|P|2.5\rPID|1||{}||DOE^JOHN\r",
            reps.join("~")
        );
        let json = bundle(msg.as_bytes());
        let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
        let patient = v["entry"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| &e["resource"])
            .find(|r| r["resourceType"] == "Patient")
            .unwrap();
        let ids = patient["identifier"].as_array().unwrap();
        assert_eq!(ids.len(), n);
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(id["value"], format!("M{i}"));
            assert_eq!(id["type"]["coding"][0]["code"], "MR", "{i}");
        }
    }

    #[test]
    fn a_segment_is_present_in_its_own_group_instance_only_however_long_the_message() {
        // `IF ORC VALUED` on the ORU's OBR: a ServiceRequest for each ORDER_OBSERVATION that has an ORC. Forty
        // groups, half with one: past the length from which presence is looked up by group instance.
        let mut msg = String::from(
            "MSH|^~\\&|LAB|H|EHR|H|20240315150000||ORU^R01^ORU_R01|M1|P|2.5\rPID|1||MRN1^^^H^MR||DOE^JOHN\r",
        );
        for i in 0..40 {
            if i % 2 == 0 {
                msg.push_str(&format!("ORC|RE|O{i}\r"));
            }
            msg.push_str(&format!(
                "OBR|1|O{i}||58410-2^CBC^LN\rOBX|1|NM|6690-2^WBC^LN||{i}\r"
            ));
        }
        assert!(msg.matches('\r').count() > SCAN_MAX);
        let v: serde_json::Value = serde_json::from_slice(&bundle(msg.as_bytes())).unwrap();
        let count = |ty: &str| {
            v["entry"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["resource"]["resourceType"] == ty)
                .count()
        };
        assert_eq!(count("DiagnosticReport"), 40);
        assert_eq!(count("ServiceRequest"), 20);
    }

    #[test]
    fn a_message_past_the_memory_limit_is_an_error_not_a_partial_bundle() {
        let obx = "OBX|1|NM|6690-2^WBC^LN||7.5|10*3/uL|4.5-11.0|N|||F\r";
        let many = format!(
            "MSH|^~\\&|LAB|H|EHR|H|20240315150000||ORU^R01^ORU_R01|M1|P|2.5\rPID|1||MRN1^^^H^MR||DOE\rOBR|1|O1\r{}",
            obx.repeat(2000)
        );
        let msg = Message::parse(many.as_bytes());
        let limit = 1 << 20;
        let options = Options {
            max_memory: limit,
            ..Options::default()
        };
        // Stopped at a segment, past the limit: not at the first, not after the last.
        match convert(&msg, &options, true) {
            Err(Error::TooLarge {
                limit: l,
                segment,
                segments,
            }) => {
                assert_eq!(l, limit);
                assert_eq!(segments, 2003);
                assert!(segment > 3 && segment < segments, "{segment}");
            }
            other => panic!("{:?}", other.map(|c| c.json.len())),
        }
        // The default converts it, and the next message in the same thread is not affected.
        assert!(convert(&msg, &Options::default(), true).is_ok());
        // One field repeated past the limit within its segment: stopped within the segment too.
        let reps: Vec<String> = (0..20_000).map(|i| format!("M{i}^^^H^MR")).collect();
        let one = format!(
            "MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|X1|P|2.5\rPID|1||{}||DOE\r",
            reps.join("~")
        );
        let err = convert(&Message::parse(one.as_bytes()), &options, false).unwrap_err();
        assert_eq!(
            err,
            Error::TooLarge {
                limit,
                segment: 2,
                segments: 2
            }
        );
        assert!(err.to_string().contains("too large"), "{err}");
        // So many segments that what is kept for each before converting any passes the limit: refused at once.
        let empty = format!(
            "MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|X1|P|2.5\r{}",
            "NTE|\r".repeat(20_000)
        );
        let err = convert(&Message::parse(empty.as_bytes()), &options, false).unwrap_err();
        assert_eq!(
            err,
            Error::TooLarge {
                limit,
                segment: 1,
                segments: 20_001
            }
        );
    }

    #[test]
    fn fields_past_the_read_ones_are_reported_not_listed() {
        let msg = format!(
            "MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|X1|P|2.5\rPID|1||M1^^^H^MR||DOE^JOHN{}\r",
            "|".repeat(100_000)
        );
        let v: serde_json::Value = serde_json::from_slice(&bundle(msg.as_bytes())).unwrap();
        let text = v.to_string();
        assert!(text.contains("\"family\":\"DOE\""), "{text}");
        assert!(
            text.contains("PID (segment 2) has 100005 fields; those past 1024 are not read"),
            "{text}"
        );
    }

    /// Past [`SCAN_MAX`] value resources the memo and the ids are hashed: a value seen again is still one
    /// resource, and every reference still resolves.
    #[test]
    fn many_value_resources_stay_one_per_value() {
        let mut msg = ORU
            .split(|&b| b == b'\r')
            .filter(|s| !s.is_empty() && !s.starts_with(b"OBX"))
            .flat_map(|s| s.iter().copied().chain([b'\r']))
            .collect::<Vec<u8>>();
        // 100 observations performed by 3 * SCAN_MAX laboratories, each named three times or so.
        let labs = 3 * SCAN_MAX;
        for i in 0..100 {
            let lab = i % labs;
            msg.extend_from_slice(
                format!("OBX|{i}|NM|6690-2^WBC^LN||7.5||||||F||||||||||||LAB {lab}\r").as_bytes(),
            );
        }
        let json: serde_json::Value = serde_json::from_slice(&bundle(&msg)).unwrap();
        let entries = json["entry"].as_array().unwrap();
        let named = |name: &str| {
            entries
                .iter()
                .filter(|e| e["resource"]["name"] == name)
                .count()
        };
        for lab in 0..labs {
            assert_eq!(named(&format!("LAB {lab}")), 1, "LAB {lab}");
        }
        let urls: std::collections::HashSet<&str> = entries
            .iter()
            .filter_map(|e| e["fullUrl"].as_str())
            .collect();
        let text = json.to_string();
        for r in text.split("\"reference\":\"").skip(1) {
            let url = &r[..r.find('"').unwrap()];
            assert!(urls.contains(url), "{url} resolves");
        }
    }

    fn bundle(bytes: &[u8]) -> Vec<u8> {
        convert(&Message::parse(bytes), &Options::default(), false)
            .unwrap()
            .json
    }

    /// The thread's arena is emptied after each message, and given back when one message grew it past
    /// [`ARENA_KEPT`]: a large message neither changes the next message's Bundle nor stays in memory.
    #[test]
    fn the_arena_is_emptied_after_each_message_and_a_large_one_is_given_back() {
        let alone = bundle(ORU);
        assert!(alone.starts_with(b"{\"resourceType\":\"Bundle\""));
        let kept = ARENA.with(|a| a.borrow().allocated_bytes());
        assert!(
            kept <= ARENA_KEPT,
            "{kept} bytes kept after a small message"
        );

        // Two thousand observations: a Bundle of over a MiB.
        let mut large = ORU.to_vec();
        let obx = ORU
            .split(|&b| b == b'\r')
            .find(|s| s.starts_with(b"OBX"))
            .expect("the bench ORU has an OBX");
        for _ in 0..2000 {
            large.extend_from_slice(obx);
            large.push(b'\r');
        }
        let big = bundle(&large);
        // The tree is larger than its JSON: the arena grew past what is kept.
        assert!(big.len() > ARENA_KEPT, "{} bytes", big.len());
        let after = ARENA.with(|a| a.borrow().allocated_bytes());
        assert!(
            after <= ARENA_KEPT,
            "{after} bytes kept after a large message"
        );

        assert_eq!(bundle(ORU), alone, "the next message's Bundle is unchanged");
    }
}
