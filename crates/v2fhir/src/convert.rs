//! The converter: walks a message's segments in their group tree, applies the guide's message map rows to each,
//! the segment maps to the resources the rows name, the data type maps to each value, and assembles the Bundle.

use crate::condition::{Facts, Ref};
use crate::maps::{Attr, ElementMap, ElementRow, Key, MessageRow, Part, Step, maps};
use crate::systems::system_uri;
use crate::tree::{Node, fnv, write_str};
use crate::value::{self, Unfit};
use crate::{BundleType, CodeCheck, Conversion, Note, Options, Severity};
use fhir::TypeShape;
use hl7v2::{Level, Message, Segment, Value};

/// Data type maps nest (CX → HD → ...); the guide's deepest chain is four; this bounds hostile cycles.
const MAX_DEPTH: usize = 6;

/// One resource being built.
struct Built {
    key: Key,
    ty: TypeShape,
    id: String,
    node: Node,
    /// The creating segment's group instances (name, repetition), outermost first.
    scope: Vec<(Box<str>, u32)>,
    creator: usize,
}

struct Ctx<'m, 'a> {
    msg: &'m Message<'a>,
    opts: &'m Options<'m>,
    /// Identity of the message for ids: sender and control id.
    identity: Vec<u8>,
    resources: Vec<Built>,
    /// Resources built from a value (`assigner(Organization)`), deduplicated by content.
    value_resources: Vec<(String, TypeShape, Node)>,
    bundle: Node,
    notes: Vec<Note>,
}

/// What a row reads from: a segment's fields, or a value's components.
#[derive(Clone, Copy)]
enum Src<'m, 'a> {
    Seg(Segment<'m, 'a>),
    Val(Value<'a>, Segment<'m, 'a>),
}

impl<'a> Src<'_, 'a> {
    fn segment(&self) -> Segment<'_, 'a> {
        match self {
            Src::Seg(s) | Src::Val(_, s) => *s,
        }
    }

    /// The repetitions of an element (`first` = field or component, `second` = component or subcomponent),
    /// non-empty ones only.
    fn element(&self, first: u16, second: u16) -> Vec<Value<'a>> {
        let (first, second) = (first as usize, second as usize);
        let reps: Vec<Value<'a>> = match self {
            Src::Seg(s) => match s.field(first) {
                Some(f) => {
                    let is_msh12 = s.is_header() && first <= 2;
                    if is_msh12 {
                        vec![f]
                    } else {
                        f.parts().collect()
                    }
                }
                None => Vec::new(),
            },
            Src::Val(v, _) => child(*v, first).into_iter().collect(),
        };
        reps.into_iter()
            .filter_map(|r| {
                if second > 0 {
                    child(r, second)
                } else {
                    Some(r)
                }
            })
            .filter(|v| !v.is_empty() && !v.is_null())
            .collect()
    }
}

/// The text of an element named by an assignment (`HD.2` of the value, or a field of the segment).
fn inner_or_seg(src: Src<'_, '_>, first: u16, second: u16) -> Option<String> {
    let v = src.element(first, second);
    let t = first_text(*v.first()?);
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
    msg: &'x Message<'a>,
    /// Segment ids present in the segment's group instance and its ancestors (for `IF ORC VALUED`).
    present: &'x dyn Fn(&str) -> bool,
}

impl Facts for SrcFacts<'_, '_, '_> {
    fn values(&self, r: &Ref) -> Vec<String> {
        let texts = |vals: Vec<Value<'_>>| {
            vals.iter()
                .map(|v| v.text().trim().to_string())
                .filter(|t| !t.is_empty())
                .collect()
        };
        match (&r.segment, self.src) {
            (None, src) => texts(src.element(r.first, r.second)),
            (Some(id), src) if src.segment().id() == &**id => match src {
                Src::Seg(s) | Src::Val(_, s) => texts(Src::Seg(s).element(r.first, r.second)),
            },
            (Some(id), _) => match self.msg.find_segment(id.as_bytes(), 1) {
                Some(s) if r.first == 0 => vec![s.id().to_string()],
                Some(s) => texts(Src::Seg(s).element(r.first, r.second)),
                None => Vec::new(),
            },
        }
    }
    fn segment_present(&self, id: &str) -> bool {
        (self.present)(id)
    }
}

/// Group instances from the message root: (name, 0-based repetition).
type Groups = Vec<(Box<str>, u32)>;

/// Parses `/PATIENT_RESULT(0)/ORDER_OBSERVATION(1)/OBX(2)` into group steps and the segment's name.
fn split_path(path: &str) -> (Groups, Box<str>) {
    let mut steps: Vec<(Box<str>, u32)> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| match s.split_once('(') {
            Some((n, r)) => (n.into(), r.trim_end_matches(')').parse().unwrap_or(0)),
            None => (s.into(), 0),
        })
        .collect();
    let seg = steps.pop().map(|s| s.0).unwrap_or_default();
    (steps, seg)
}

/// The message map for a structure: its own, or the family's (`ADT_A03` → `ADT_A01`).
fn message_map(structure: &str) -> Option<(&'static str, &'static [MessageRow])> {
    let m = maps();
    if let Some((k, v)) = m.messages.get_key_value(structure) {
        return Some((k, v));
    }
    let family = match structure.get(..3)? {
        "ADT" => "ADT_A01",
        "ORU" => "ORU_R01",
        "ORM" => "ORM_O01",
        "OML" => "OML_O21",
        "MDM" => "MDM_T02",
        "SIU" => "SIU_S12",
        "VXU" => "VXU_V04",
        _ => return None,
    };
    m.messages
        .get_key_value(family)
        .map(|(k, v)| (&**k, &v[..]))
}

pub(crate) fn convert(msg: &Message<'_>, opts: &Options<'_>) -> Conversion {
    let tree = msg.group_tree();
    let structure = tree.structure_id().unwrap_or("").to_string();
    let sender = msg.get("MSH-4").unwrap_or_default();
    let app = msg.get("MSH-3").unwrap_or_default();
    let control = msg.get("MSH-10").unwrap_or_default();
    let mut identity = Vec::new();
    identity.extend_from_slice(app.as_bytes());
    identity.push(b'|');
    identity.extend_from_slice(sender.as_bytes());
    identity.push(b'|');
    identity.extend_from_slice(control.as_bytes());
    if control.is_empty() {
        // Without a control id the message itself is its identity: converting it twice still gives one Bundle.
        identity.extend_from_slice(&fnv(&[msg.as_bytes()]).to_le_bytes());
    }
    let mut ctx = Ctx {
        msg,
        opts,
        identity,
        resources: Vec::new(),
        value_resources: Vec::new(),
        bundle: Node::obj(),
        notes: Vec::new(),
    };
    let map = message_map(&structure);
    match map {
        Some((name, _)) if name != structure => ctx.note(
            Severity::Warning,
            "MSH-9",
            format!("the guide has no map for {structure}; converted with the {name} map"),
        ),
        None => ctx.note(
            Severity::Warning,
            "MSH-9",
            format!(
                "the guide has no map for {}; each segment converted by its most common segment map",
                if structure.is_empty() { "this message type" } else { &structure }
            ),
        ),
        _ => {}
    }
    let rows: &[MessageRow] = map.map_or(&[], |m| m.1);

    // Segment ids per group instance, for `IF ORC VALUED`.
    let placed: Vec<(Groups, Box<str>)> = (0..msg.segment_count())
        .map(|i| split_path(&tree.path_of(i).unwrap_or_default()))
        .collect();
    let mut last_anchor: Option<&str> = None;
    for (index, seg) in msg.segments().enumerate() {
        let (groups, _name) = &placed[index];
        let id = seg.id();
        let present = |want: &str| {
            placed.iter().zip(msg.segments()).any(|((g, _), s)| {
                s.id() == want
                    && g.len() <= groups.len()
                    && g.iter().zip(groups.iter()).all(|(a, b)| a == b)
            })
        };
        let chosen = choose_rows(rows, id, groups, last_anchor);
        if rows.iter().any(|r| r.follows.as_deref() == Some(id)) {
            last_anchor = Some(id);
        }
        let src = Src::Seg(seg);
        let facts = SrcFacts {
            src,
            msg,
            present: &present,
        };
        let mut mapped_fields: Vec<bool> = vec![false; seg.field_count() + 1];
        let mut any = false;
        match chosen {
            Chosen::Rows(chosen) => {
                for row in chosen {
                    if !row.cond.holds(&facts) {
                        continue;
                    }
                    let (Some(key), Some(map_name)) = (&row.key, &row.segment_map) else {
                        continue;
                    };
                    any = true;
                    ctx.apply_segment(
                        index,
                        groups,
                        key,
                        row.creates,
                        row.scope_depth,
                        map_name,
                        src,
                        &present,
                        &mut mapped_fields,
                    );
                    for r in &row.references {
                        ctx.link(r.from.clone(), &r.path, &r.to, index);
                    }
                }
            }
            Chosen::Defaults(defaults) => {
                for (key, map_name) in defaults {
                    any = true;
                    ctx.apply_segment(
                        index,
                        groups,
                        key,
                        true,
                        0,
                        map_name,
                        src,
                        &present,
                        &mut mapped_fields,
                    );
                }
            }
        }
        // Nothing silently lost: every valued field that no applied row read is reported with its path.
        let label = |f: usize| format!("{id}-{f}");
        if !any && id != "MSH" {
            if seg.fields().skip(1).any(|f| !f.is_empty()) {
                ctx.note(
                    Severity::Information,
                    id,
                    format!("segment {id} (#{}) is not mapped by the guide", index + 1),
                );
            }
            continue;
        }
        let first = if seg.is_header() { 3 } else { 1 };
        for f in first..=seg.field_count() {
            if !mapped_fields.get(f).copied().unwrap_or(false)
                && seg.field(f).is_some_and(|v| !v.is_empty())
            {
                let l = label(f);
                ctx.note(
                    Severity::Information,
                    &l,
                    format!("{l} has no FHIR target in the guide's map"),
                );
            }
        }
    }
    ctx.finish()
}

enum Chosen<'r> {
    Rows(Vec<&'r MessageRow>),
    Defaults(&'r [(Key, Box<str>)]),
}

/// The message rows that apply to a segment at `groups`: those with its exact group path; else `:follow:` rows
/// after their anchor; else the rows whose group path shares the longest tail with it (versions name groups
/// differently); else the segment's default maps.
fn choose_rows<'r>(
    rows: &'r [MessageRow],
    id: &str,
    groups: &[(Box<str>, u32)],
    anchor: Option<&str>,
) -> Chosen<'r> {
    let names: Vec<&str> = groups.iter().map(|g| &*g.0).collect();
    let same_seg = || rows.iter().filter(move |r| &*r.segment == id);
    let exact: Vec<_> = same_seg()
        .filter(|r| r.follows.is_none() && r.groups.iter().map(|g| &**g).eq(names.iter().copied()))
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
            .zip(names.iter().rev())
            .take_while(|(a, b)| &***a == **b)
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

impl Ctx<'_, '_> {
    fn note(&mut self, severity: Severity, path: &str, message: String) {
        self.notes.push(Note {
            severity,
            path: path.to_string(),
            message,
        });
    }

    fn full_url(id: &str) -> String {
        format!("urn:uuid:{id}")
    }

    /// A deterministic UUID-shaped id (RFC 9562 version 8: application-defined) from the message's identity and
    /// `parts`.
    fn make_id(&self, parts: &[&[u8]]) -> String {
        let mut all: Vec<&[u8]> = vec![&self.identity];
        all.extend_from_slice(parts);
        let a = fnv(&all);
        all.push(b"second half");
        let b = fnv(&all);
        uuid_v8(a, b)
    }

    /// The index of the resource a row writes: an existing instance in scope, or a new one.
    fn instance(
        &mut self,
        index: usize,
        groups: &[(Box<str>, u32)],
        key: &Key,
        creates: bool,
        scope_depth: usize,
    ) -> Option<usize> {
        let found = self.resources.iter().rposition(|b| {
            b.key == *key
                && if creates {
                    b.creator == index
                } else {
                    b.scope.len() >= scope_depth
                        && groups.len() >= scope_depth
                        && b.scope[..scope_depth] == groups[..scope_depth]
                }
        });
        if let Some(i) = found {
            return Some(i);
        }
        let ty = TypeShape::resource(&key.ty)?;
        let id = self.make_id(&[
            key.ty.as_bytes(),
            &key.n.to_le_bytes(),
            &index.to_le_bytes(),
        ]);
        let mut node = Node::obj();
        node.member("resourceType", || Node::Str(key.ty.clone()));
        node.member("id", || Node::Str(id.as_str().into()));
        self.resources.push(Built {
            key: key.clone(),
            ty,
            id,
            node,
            scope: groups.to_vec(),
            creator: index,
        });
        Some(self.resources.len() - 1)
    }

    #[allow(clippy::too_many_arguments)]
    fn apply_segment(
        &mut self,
        index: usize,
        groups: &[(Box<str>, u32)],
        key: &Key,
        creates: bool,
        scope_depth: usize,
        map_name: &str,
        src: Src<'_, '_>,
        present: &dyn Fn(&str) -> bool,
        mapped: &mut [bool],
    ) {
        let Some(map) = maps().elements.get(map_name) else {
            self.note(
                Severity::Information,
                src.segment().id(),
                format!("the guide's segment map {map_name} is not published"),
            );
            return;
        };
        if key.ty.as_ref() == "Bundle" {
            let mut bundle = std::mem::replace(&mut self.bundle, Node::obj());
            let ty = TypeShape::resource("Bundle").expect("Bundle is an R4 resource");
            self.apply_map(
                map,
                src,
                &mut bundle,
                ty,
                fnv(&[b"bundle"]),
                present,
                Some(mapped),
                0,
            );
            self.bundle = bundle;
            return;
        }
        let Some(i) = self.instance(index, groups, key, creates, scope_depth) else {
            return;
        };
        let mut node = std::mem::replace(&mut self.resources[i].node, Node::obj());
        let ty = self.resources[i].ty;
        let base = fnv(&[&index.to_le_bytes(), map_name.as_bytes()]);
        self.apply_map(map, src, &mut node, ty, base, present, Some(mapped), 0);
        self.resources[i].node = node;
    }

    /// Applies the rows of a segment or data type map to `target` (an object of type `ty`).
    #[allow(clippy::too_many_arguments)]
    fn apply_map(
        &mut self,
        map: &ElementMap,
        src: Src<'_, '_>,
        target: &mut Node,
        ty: TypeShape,
        base: u64,
        present: &dyn Fn(&str) -> bool,
        mut mapped: Option<&mut [bool]>,
        depth: usize,
    ) -> Option<Node> {
        if depth > MAX_DEPTH {
            return None;
        }
        let msg = self.msg;
        let facts = SrcFacts { src, msg, present };
        let mut primitive: Option<Node> = None;
        let mut written: Vec<(&str, u16, u16)> = Vec::new();
        for row in &map.rows {
            if matches!(&row.attr, Attr::Path(p) if p.is_empty()) {
                continue;
            }
            if !row.cond.holds(&facts) {
                continue;
            }
            // Rows conditioned by narrative alone: the first applicable alternative for an element and attribute
            // is taken (the guide lists its default first).
            let attr_name = attr_label(&row.attr);
            if row.narrative_only && written.contains(&(attr_name, row.first, row.second)) {
                continue;
            }
            // An extension's `url` is always assigned; a row that leaves it blank (OBX-19) would put the v2 value
            // there instead.
            if row.assignment.is_none()
                && matches!(&row.attr, Attr::Path(p) if p.last().is_some_and(|s| &*s.name == "url"))
            {
                continue;
            }
            let values = src.element(row.first, row.second);
            if values.is_empty() {
                continue;
            }
            written.push((attr_name, row.first, row.second));
            if let Some(m) = mapped.as_deref_mut()
                && let Some(slot) = m.get_mut(row.first as usize)
            {
                *slot = true;
            }
            let path = self.path_label(src, row);
            for (rep, v) in values.iter().enumerate() {
                let rep_base = fnv(&[&base.to_le_bytes(), &(rep as u32).to_le_bytes()]);
                let inner = match src {
                    Src::Seg(s) | Src::Val(_, s) => Src::Val(*v, s),
                };
                match &row.attr {
                    Attr::Value if ty.json_kind() == fhir::JsonKind::Object => {
                        // `$value` in a map onto a complex type (`NM[Quantity]`) is its `value` element.
                        let steps = [Step {
                            name: "value".into(),
                            slot: 0,
                        }];
                        if let Some(leaf) = leaf_type(ty, &steps)
                            && let Some(node) = self.primitive_for(row, *v, leaf, &path)
                        {
                            write(target, ty, &steps, rep_base, node, &mut self.notes, &path);
                        }
                    }
                    Attr::Value => {
                        if primitive.is_none() {
                            primitive = self.primitive_for(row, *v, ty, &path);
                        }
                    }
                    Attr::This => {
                        if let Some(dt) = &row.data_type_map {
                            self.value_resource(dt, inner, present, depth);
                        }
                    }
                    Attr::Path(steps)
                        if row.data_type_map.as_ref().is_some_and(|dt| {
                            maps().elements.get(&**dt).and_then(|m| m.target) == Some(ty)
                                && leaf_type(ty, steps)
                                    .is_some_and(|l| l.json_kind() != fhir::JsonKind::Object)
                        }) =>
                    {
                        // `XPN.1 → family` with `FN[HumanName]`: the nested map writes into the same HumanName
                        // (its rows name `family` and `family.extension` themselves).
                        if let Some(map) = row
                            .data_type_map
                            .as_ref()
                            .and_then(|dt| maps().elements.get(&**dt))
                        {
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
                        }
                    }
                    Attr::Path(steps) => {
                        let value =
                            self.value_for(row, *v, inner, src, ty, steps, present, &path, depth);
                        if let Some(value) = value {
                            write(target, ty, steps, rep_base, value, &mut self.notes, &path);
                        }
                        // A repeating v2 element into a single FHIR element: the first repetition is kept and
                        // the rest reported.
                        if values.len() > 1 && !leaf_many(ty, steps) {
                            if rep == 0 {
                                self.note(Severity::Information, &path, format!("{path} repeats; FHIR {} holds one value: repetitions after the first are not mapped", attr_name));
                            }
                            break;
                        }
                    }
                    Attr::NewResource(steps, rty) => {
                        let Some(dt) = &row.data_type_map else {
                            continue;
                        };
                        if let Some(url) =
                            self.value_resource(dt, inner, present, depth).or_else(|| {
                                // `assigner(Organization)` under a map named for another type: built by name.
                                let _ = rty;
                                None
                            })
                        {
                            let mut r = Node::obj();
                            r.member("reference", || Node::Str(url.into()));
                            write(target, ty, steps, rep_base, r, &mut self.notes, &path);
                        }
                    }
                    Attr::InResource(..) => {
                        // Values written inside a referenced resource (`assigner(Organization[1].identifier[1]
                        // .value)`): the referenced resource is built by its own data type map row.
                    }
                }
            }
        }
        primitive
    }

    fn path_label(&self, src: Src<'_, '_>, row: &ElementRow) -> String {
        match src {
            Src::Seg(_) => row.label.to_string(),
            Src::Val(_, s) => format!("{}: {}", s.id(), row.label),
        }
    }

    /// A data type map that builds a resource (`HD[Organization]`, `XCN[Practitioner]`): builds it, adds it to
    /// the Bundle once per distinct content, and returns its full URL.
    fn value_resource(
        &mut self,
        dt: &str,
        src: Src<'_, '_>,
        present: &dyn Fn(&str) -> bool,
        depth: usize,
    ) -> Option<String> {
        let map = maps().elements.get(dt)?;
        let ty = map.target.filter(|t| t.is_resource())?;
        let mut node = Node::obj();
        node.member("resourceType", || Node::Str(ty.name().into()));
        self.apply_map(
            map,
            src,
            &mut node,
            ty,
            fnv(&[dt.as_bytes()]),
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
        let mut content = Vec::new();
        node.write_json(&mut content);
        let id = self.make_id(&[b"value", &content]);
        if !self.value_resources.iter().any(|(i, _, _)| *i == id) {
            if let Node::Obj(fields) = &mut node {
                fields.insert(1, ("id".into(), Node::Str(id.as_str().into())));
            }
            self.value_resources.push((id.clone(), ty, node));
        }
        Some(Self::full_url(&id))
    }

    /// The `$value` a primitive data type map produces.
    fn primitive_for(
        &mut self,
        row: &ElementRow,
        v: Value<'_>,
        ty: TypeShape,
        path: &str,
    ) -> Option<Node> {
        let text = first_text(v);
        // The row's own FHIR type, when it names a primitive (`CWE[code]`'s `$value` is a `code`).
        let ty = row.fhir_primitive.unwrap_or(ty);
        self.convert_primitive(&text, ty, row, path)
    }

    fn convert_primitive(
        &mut self,
        text: &str,
        ty: TypeShape,
        row: &ElementRow,
        path: &str,
    ) -> Option<Node> {
        let mut text = text.to_string();
        if let Some(vocab) = &row.vocabulary {
            match maps()
                .vocabulary
                .get(&(vocab.clone(), text.as_str().into()))
            {
                Some(m) if !m.code.is_empty() => text = m.code.to_string(),
                _ => self.note(
                    Severity::Warning,
                    path,
                    format!(
                        "{path}: code {text:?} is not in the guide's {vocab} map; kept as sent"
                    ),
                ),
            }
        }
        let (node, unfit) = value::convert(&text, ty);
        match unfit {
            Some(Unfit::Invalid) => self.note(
                Severity::Warning,
                path,
                format!(
                    "{path}: {text:?} is not a valid FHIR {}; not mapped",
                    ty.name()
                ),
            ),
            Some(Unfit::TimeWithoutZone) => self.note(
                Severity::Information,
                path,
                format!("{path}: {text:?} has a time but no time zone; only its date is kept"),
            ),
            None => {}
        }
        node
    }

    /// The value a row writes at a path: an assigned constant, a nested data type map's object or primitive, a
    /// Reference, or the element converted to the attribute's primitive type.
    #[allow(clippy::too_many_arguments)]
    fn value_for(
        &mut self,
        row: &ElementRow,
        v: Value<'_>,
        inner: Src<'_, '_>,
        whole: Src<'_, '_>,
        ty: TypeShape,
        steps: &[Step],
        present: &dyn Fn(&str) -> bool,
        path: &str,
        depth: usize,
    ) -> Option<Node> {
        let leaf = leaf_type(ty, steps)?;
        if let Some(parts) = &row.assignment {
            let mut text = String::new();
            for p in parts {
                match p {
                    Part::Lit(l) => text.push_str(l),
                    Part::Ref(first, second) => {
                        // A joined value needs every part: `"urn:oid:"+HD.2` without HD.2 is no endpoint.
                        let v = inner_or_seg(whole, *first, *second)?;
                        text.push_str(&v);
                    }
                }
            }
            return value::convert(&text, leaf).0;
        }
        if let Some(dt) = &row.data_type_map {
            let map = maps().elements.get(&**dt)?;
            if leaf.name() == "Reference" {
                let url = self.value_resource(dt, inner, present, depth)?;
                let mut r = Node::obj();
                r.member("reference", || Node::Str(url.into()));
                return Some(r);
            }
            if leaf.json_kind() != fhir::JsonKind::Object {
                let prim = self.apply_map(
                    map,
                    inner,
                    &mut Node::obj(),
                    leaf,
                    0,
                    present,
                    None,
                    depth + 1,
                );
                return match prim {
                    Some(Node::Str(s)) if row.vocabulary.is_some() => {
                        self.convert_primitive(&s, leaf, row, path)
                    }
                    other => other,
                };
            }
            let mut obj = Node::obj();
            self.apply_map(
                map,
                inner,
                &mut obj,
                leaf,
                fnv(&[dt.as_bytes()]),
                present,
                None,
                depth + 1,
            );
            if let Some(vocab) = &row.vocabulary {
                self.map_codings(&mut obj, vocab, path);
            }
            fix_systems(&mut obj, &mut self.notes, path);
            return Some(obj);
        }
        if leaf.json_kind() == fhir::JsonKind::Object {
            // An object without a data type map: the guide gives none; the text goes to the value's `text` or
            // nowhere.
            return None;
        }
        let mut text = first_text(v);
        if steps.last().is_some_and(|s| &*s.name == "system") && leaf.name() == "uri" {
            match system_uri(&text) {
                Some(u) => text = u.to_string(),
                None => {
                    self.note(
                        Severity::Warning,
                        path,
                        format!("{path}: coding system {text:?} has no known FHIR URI; not mapped"),
                    );
                    return None;
                }
            }
        }
        self.convert_primitive(&text, leaf, row, path)
    }

    /// A vocabulary map on a CodeableConcept or Coding: the v2 code's FHIR coding is put first, the code as sent
    /// kept after it.
    fn map_codings(&mut self, obj: &mut Node, vocab: &str, path: &str) {
        let Node::Obj(fields) = obj else { return };
        let codings: Vec<&mut Node> = match fields.iter_mut().find(|(k, _)| &**k == "coding") {
            Some((_, Node::Arr(items))) => items.iter_mut().map(|(_, n)| n).collect(),
            _ => vec![obj],
        };
        let mut missing = None;
        for c in codings {
            let Some(code) = c.get_str("code").map(str::to_string) else {
                continue;
            };
            match maps().vocabulary.get(&(vocab.into(), code.as_str().into())) {
                Some(m) if !m.code.is_empty() => {
                    let mut mapped = vec![
                        ("system".into(), Node::Str(m.system.clone())),
                        ("code".into(), Node::Str(m.code.clone())),
                    ];
                    if !m.display.is_empty() {
                        mapped.push(("display".into(), Node::Str(m.display.clone())));
                    }
                    if let Node::Obj(f) = c {
                        *f = mapped;
                    }
                }
                _ => missing = Some(code),
            }
            break;
        }
        if let Some(code) = missing {
            self.note(
                Severity::Information,
                path,
                format!("{path}: code {code:?} is not in the guide's {vocab} map; kept as sent"),
            );
        }
    }

    /// `X.path.reference = Y.id`: a Reference from the instance of X in scope to the latest Y. Skipped when
    /// either is missing, so a reference always resolves.
    fn link(&mut self, from: Key, path: &[Step], to: &Key, index: usize) {
        let Some(t) = self
            .resources
            .iter()
            .rposition(|b| b.key == *to)
            .or_else(|| self.resources.iter().rposition(|b| *b.key.ty == *to.ty))
        else {
            return;
        };
        let Some(f) = self
            .resources
            .iter()
            .rposition(|b| b.key == from && b.creator <= index)
            .or_else(|| {
                self.resources
                    .iter()
                    .rposition(|b| *b.key.ty == *from.ty && b.creator == index)
            })
        else {
            return;
        };
        if f == t {
            return;
        }
        let url = Self::full_url(&self.resources[t].id);
        let ty = self.resources[f].ty;
        // `Encounter.diagnosis.reference`: the guide names the backbone element; the Reference is its first
        // Reference-typed element (`diagnosis.condition`).
        let mut path = path.to_vec();
        match leaf_type(ty, &path) {
            Some(leaf) if leaf.name() == "Reference" => {}
            Some(leaf) if leaf.json_kind() == fhir::JsonKind::Object => {
                let Some((name, _)) = leaf.elements().find(|(_, e)| e.ty.name() == "Reference")
                else {
                    return;
                };
                path.push(Step {
                    name: name.into(),
                    slot: 0,
                });
            }
            _ => return,
        }
        let path = &path[..];
        let mut r = Node::obj();
        r.member("reference", || Node::Str(url.into()));
        let mut node = std::mem::replace(&mut self.resources[f].node, Node::obj());
        let tag = fnv(&[
            b"link",
            &index.to_le_bytes(),
            self.resources[t].id.as_bytes(),
        ]);
        let mut sink = Vec::new();
        write(&mut node, ty, path, tag, r, &mut sink, "references");
        self.resources[f].node = node;
    }

    fn finish(mut self) -> Conversion {
        if let Some(checker) = self.opts.checker {
            for b in &mut self.resources {
                check_codes(&mut b.node, checker, &mut self.notes, &b.key.ty);
            }
        }
        let mut bundle = std::mem::replace(&mut self.bundle, Node::obj());
        let Node::Obj(bfields) = &mut bundle else {
            unreachable!("the bundle is an object")
        };
        let given: Vec<(Box<str>, Node)> = std::mem::take(bfields);
        let bundle_id = self.make_id(&[b"Bundle"]);
        bfields.push(("resourceType".into(), Node::Str("Bundle".into())));
        bfields.push(("id".into(), Node::Str(bundle_id.into())));
        for (k, v) in given {
            if &*k != "type" && &*k != "resourceType" && &*k != "id" {
                bfields.push((k, v));
            }
        }
        let ty = match self.opts.bundle {
            BundleType::Message => "message",
            BundleType::Transaction => "transaction",
            BundleType::Collection => "collection",
        };
        bfields.push(("type".into(), Node::Str(ty.into())));
        // MessageHeader first (a message Bundle requires it), then resources in the order the message built them.
        let mut entries: Vec<(String, &'static str, Node)> = Vec::new();
        let mut resources = std::mem::take(&mut self.resources);
        for b in &mut resources {
            clean_extensions(&mut b.node);
            b.node.prune();
        }
        // A resource the maps gave nothing but its id (a Provenance whose segment was empty) is left out unless
        // something refers to it.
        let mut referenced = Vec::new();
        for b in &resources {
            collect_refs(&b.node, &mut referenced);
        }
        for (_, _, n) in &self.value_resources {
            collect_refs(n, &mut referenced);
        }
        resources.retain(|b| {
            !matches!(&b.node, Node::Obj(f) if f.len() <= 2)
                || &*b.key.ty == "MessageHeader"
                || referenced.contains(&Self::full_url(&b.id))
        });
        if self.opts.bundle == BundleType::Message
            && !resources.iter().any(|b| &*b.key.ty == "MessageHeader")
        {
            // A message Bundle starts with a MessageHeader, even when the MSH gave it nothing.
            let key = Key {
                ty: "MessageHeader".into(),
                n: 1,
            };
            let id = self.make_id(&[b"MessageHeader"]);
            let mut node = Node::obj();
            node.member("resourceType", || Node::Str("MessageHeader".into()));
            node.member("id", || Node::Str(id.as_str().into()));
            let ty = TypeShape::resource("MessageHeader").expect("MessageHeader is an R4 resource");
            resources.push(Built {
                key,
                ty,
                id,
                node,
                scope: Vec::new(),
                creator: 0,
            });
        }
        let mut seen = std::collections::HashSet::new();
        self.notes
            .retain(|n| seen.insert((n.path.clone(), n.message.clone())));
        resources.sort_by_key(|b| u8::from(&*b.key.ty != "MessageHeader"));
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
            if let Node::Obj(f) = &mut node {
                f.insert(1, ("id".into(), Node::Str(id.as_str().into())));
            }
            entries.push((id, "OperationOutcome", node));
        }
        let mut items = Vec::with_capacity(entries.len());
        for (i, (id, ty, mut node)) in entries.into_iter().enumerate() {
            node.prune();
            let mut e = Node::obj();
            e.member("fullUrl", || Node::Str(Self::full_url(&id).into()));
            if self.opts.bundle == BundleType::Transaction {
                let request = transaction_request(ty, &node);
                e.member("resource", || node);
                e.member("request", || request);
            } else {
                e.member("resource", || node);
            }
            items.push((i as u64, e));
        }
        if let Node::Obj(f) = &mut bundle {
            f.push(("entry".into(), Node::Arr(items)));
        }
        bundle.prune();
        let mut json = Vec::with_capacity(4096);
        bundle.write_json(&mut json);
        Conversion {
            json,
            notes: self.notes,
        }
    }

    /// Warnings and errors as an OperationOutcome for the Bundle (information stays in the report).
    fn outcome(&self) -> Option<Node> {
        let issues: Vec<(u64, Node)> = self
            .notes
            .iter()
            .filter(|n| n.severity >= Severity::Warning)
            .enumerate()
            .map(|(i, n)| {
                let mut issue = Node::obj();
                issue.member("severity", || Node::Str(n.severity.as_str().into()));
                issue.member("code", || {
                    Node::Str(
                        if n.message.contains("not valid") {
                            "code-invalid"
                        } else {
                            "not-supported"
                        }
                        .into(),
                    )
                });
                issue.member("diagnostics", || Node::Str(n.message.as_str().into()));
                issue.member("expression", || {
                    Node::Arr(vec![(0, Node::Str(n.path.as_str().into()))])
                });
                (i as u64, issue)
            })
            .collect();
        if issues.is_empty() {
            return None;
        }
        let mut o = Node::obj();
        o.member("resourceType", || Node::Str("OperationOutcome".into()));
        o.member("issue", || Node::Arr(issues));
        Some(o)
    }
}

/// Every `reference` string under a node.
fn collect_refs(n: &Node, out: &mut Vec<String>) {
    match n {
        Node::Obj(f) => {
            for (k, v) in f {
                match v {
                    Node::Str(s) if &**k == "reference" => out.push(s.to_string()),
                    _ => collect_refs(v, out),
                }
            }
        }
        Node::Arr(items) => items.iter().for_each(|(_, v)| collect_refs(v, out)),
        _ => {}
    }
}

/// An extension needs its url and a value or nested extensions; the maps build both halves from separate rows,
/// so one half alone (the v2 element was empty or did not convert) is removed.
fn clean_extensions(n: &mut Node) {
    match n {
        Node::Obj(fields) => {
            for (k, v) in fields.iter_mut() {
                if let (true, Node::Arr(items)) =
                    (&**k == "extension" || &**k == "modifierExtension", &mut *v)
                {
                    for (_, it) in items.iter_mut() {
                        clean_extensions(it);
                        it.prune();
                    }
                    items.retain(|(_, it)| {
                        let Node::Obj(f) = it else { return false };
                        let has_url = f
                            .iter()
                            .any(|(k, v)| &**k == "url" && matches!(v, Node::Str(_)));
                        let has_value = f
                            .iter()
                            .any(|(k, _)| k.starts_with("value") || &**k == "extension");
                        has_url && has_value
                    });
                } else {
                    clean_extensions(v);
                }
            }
        }
        Node::Arr(items) => items.iter_mut().for_each(|(_, v)| clean_extensions(v)),
        _ => {}
    }
}

/// A transaction entry's request: a conditional create on the resource's first business identifier.
fn transaction_request(ty: &str, node: &Node) -> Node {
    let mut req = Node::obj();
    req.member("method", || Node::Str("POST".into()));
    req.member("url", || Node::Str(ty.into()));
    if let Node::Obj(fields) = node
        && let Some((_, Node::Arr(ids))) = fields.iter().find(|(k, _)| &**k == "identifier")
        && let Some((_, first)) = ids.first()
        && let Some(value) = first.get_str("value")
    {
        let q = match first.get_str("system") {
            Some(s) => format!("identifier={}|{}", query_escape(s), query_escape(value)),
            None => format!("identifier={}", query_escape(value)),
        };
        req.member("ifNoneExist", || Node::Str(q.into()));
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

/// The attribute a row names, for "first alternative wins".
fn attr_label(a: &Attr) -> &str {
    match a {
        Attr::Path(s) | Attr::NewResource(s, _) | Attr::InResource(s) => {
            s.first().map_or("", |s| &s.name)
        }
        Attr::Value => "$value",
        Attr::This => "$this",
    }
}

/// The text of a value's first component (the whole value when it has none).
fn first_text(v: Value<'_>) -> String {
    match v.level() {
        Level::Field | Level::Repetition => v
            .component(1)
            .map(|c| c.subcomponent(1).map_or_else(|| c.text(), |s| s.text())),
        Level::Component => v.subcomponent(1).map(|s| s.text()),
        _ => Some(v.text()),
    }
    .unwrap_or_else(|| v.text())
    .trim()
    .to_string()
}

/// The FHIR type at the end of a path, or `None` when the path names no element of `ty`.
fn leaf_type(ty: TypeShape, steps: &[Step]) -> Option<TypeShape> {
    let mut t = ty;
    for s in steps {
        t = t.element(&s.name)?.ty;
    }
    Some(t)
}

/// Whether the path's first repeating element lets each v2 repetition have its own item.
fn leaf_many(ty: TypeShape, steps: &[Step]) -> bool {
    let mut t = ty;
    for s in steps {
        let Some(e) = t.element(&s.name) else {
            return false;
        };
        if e.many {
            return true;
        }
        t = e.ty;
    }
    false
}

/// Writes `value` at `steps` under `target` (an object of type `ty`). Repeating elements get the item tagged by
/// the step's slot and `base` (the v2 repetition and map application), so rows that share a slot share an item.
fn write(
    target: &mut Node,
    ty: TypeShape,
    steps: &[Step],
    base: u64,
    value: Node,
    notes: &mut Vec<Note>,
    path: &str,
) {
    let Some((last, init)) = steps.split_last() else {
        return;
    };
    let mut node = target;
    let mut t = ty;
    let mut tag = base;
    for s in init {
        let Some(e) = t.element(&s.name) else {
            notes.push(Note {
                severity: Severity::Information,
                path: path.into(),
                message: format!(
                    "{path}: {} is not an element of FHIR {}; not mapped",
                    s.name,
                    t.name()
                ),
            });
            return;
        };
        if other_choice_present(node, t, &s.name, e.choice) {
            notes.push(Note {
                severity: Severity::Information,
                path: path.into(),
                message: format!(
                    "{path}: {}[x] already has a value; {} not mapped",
                    e.choice.unwrap_or(""),
                    s.name
                ),
            });
            return;
        }
        // The guide numbers extensions per segment map, and sometimes gives two fields the same number
        // (OBX-10, OBX-19 and OBX-30 all write `extension[2]`): an extension's item is also told apart by the
        // element the row maps, which `path` names.
        let salt: &[u8] = if &*s.name == "extension" {
            path.as_bytes()
        } else {
            b""
        };
        tag = fnv(&[
            &tag.to_le_bytes(),
            s.name.as_bytes(),
            &s.slot.max(1).to_le_bytes(),
            salt,
        ]);
        let next = if e.many {
            node.member(&s.name, || Node::Arr(Vec::new()))
                .and_then(|a| a.slot(tag, Node::obj))
        } else {
            node.member(&s.name, Node::obj)
        };
        let Some(next) = next else { return };
        node = next;
        t = e.ty;
    }
    let Some(e) = t.element(&last.name) else {
        notes.push(Note {
            severity: Severity::Information,
            path: path.into(),
            message: format!(
                "{path}: {} is not an element of FHIR {}; not mapped",
                last.name,
                t.name()
            ),
        });
        return;
    };
    if let Some(base) = e.choice
        && other_choice_present(node, t, &last.name, e.choice)
    {
        // One alternative of a choice element only: the first row's value stands.
        notes.push(Note {
            severity: Severity::Information,
            path: path.into(),
            message: format!(
                "{path}: {base}[x] already has a value; {} not mapped",
                last.name
            ),
        });
        return;
    }
    // A code outside the required value set of its element would make the resource invalid: the code is kept
    // as the element's original text (an extension on the primitive) and reported, not written as the value.
    let value = match value {
        Node::Str(code) if e.ty.name() == "code" && !required_code_ok(t, &last.name, &code) => {
            notes.push(Note {
                severity: Severity::Warning,
                path: path.into(),
                message: format!(
                    "{path}: {code:?} is not a code of FHIR {}.{}'s required value set; kept as its original text",
                    t.name(),
                    last.name
                ),
            });
            if e.many {
                return;
            }
            let mut ext = Node::obj();
            ext.member("url", || {
                Node::Str("http://hl7.org/fhir/StructureDefinition/originalText".into())
            });
            ext.member("valueString", || Node::Str(code));
            let mut prim = Node::obj();
            prim.member("extension", || Node::Arr(vec![(0, ext)]));
            node.set_if_absent(&format!("_{}", last.name), prim);
            return;
        }
        v => v,
    };
    if e.many {
        let tag = fnv(&[
            &tag.to_le_bytes(),
            last.name.as_bytes(),
            &last.slot.max(1).to_le_bytes(),
        ]);
        if let Some(arr) = node.member(&last.name, || Node::Arr(Vec::new()))
            && let Node::Arr(items) = arr
            && !items.iter().any(|(t, _)| *t == tag)
        {
            items.push((tag, value));
        }
    } else if let Some(existing) = node.member(&last.name, || Node::Obj(Vec::new())) {
        // Objects merge (two rows filling one Reference or Period); a primitive keeps the first value written.
        let fresh = matches!(existing, Node::Obj(f) if f.is_empty());
        match (existing, value) {
            (Node::Obj(have), Node::Obj(add)) => {
                for (k, v) in add {
                    if !have.iter().any(|(hk, _)| *hk == k) {
                        have.push((k, v));
                    }
                }
            }
            (slot, v) if fresh => *slot = v,
            _ => {}
        }
    }
}

/// Whether `code` may stand in `element` of `t` (always, when its binding is not required or not enumerable).
fn required_code_ok(t: TypeShape, element: &str, code: &str) -> bool {
    let mut key = String::with_capacity(t.name().len() + element.len() + 1);
    key.push_str(t.name());
    key.push('.');
    key.push_str(element);
    maps()
        .required_codes
        .get(key.as_str())
        .is_none_or(|allowed| allowed.contains(&code))
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
    fields.iter().any(|(k, _)| {
        &**k != name && k.starts_with(base) && t.element(k).is_some_and(|o| o.choice == Some(base))
    })
}

/// Coding systems written from CWE.3 inside a nested map: the v2 name (`LN`) becomes the FHIR URI.
fn fix_systems(obj: &mut Node, notes: &mut Vec<Note>, path: &str) {
    match obj {
        Node::Obj(fields) => {
            let mut drop = false;
            for (k, v) in fields.iter_mut() {
                if &**k == "system" {
                    if let Node::Str(s) = v
                        && !s.contains(':')
                    {
                        match system_uri(s) {
                            Some(u) => *s = u.into(),
                            None => {
                                notes.push(Note {
                                    severity: Severity::Warning,
                                    path: path.into(),
                                    message: format!("{path}: coding system {s:?} has no known FHIR URI; the code is kept without a system"),
                                });
                                drop = true;
                            }
                        }
                    }
                } else {
                    fix_systems(v, notes, path);
                }
            }
            if drop {
                fields.retain(|(k, v)| {
                    !(&**k == "system" && matches!(v, Node::Str(s) if !s.contains(':')))
                });
            }
        }
        Node::Arr(items) => items
            .iter_mut()
            .for_each(|(_, v)| fix_systems(v, notes, path)),
        _ => {}
    }
}

/// Checks every coding (`coding` items, `class`) against the terminology: fills a missing display from the code
/// system, reports a code that is not valid (kept as sent).
fn check_codes(node: &mut Node, checker: &dyn crate::CodeChecker, notes: &mut Vec<Note>, at: &str) {
    match node {
        Node::Obj(fields) => {
            for (k, v) in fields.iter_mut() {
                let is_coding_list = &**k == "coding";
                match v {
                    Node::Arr(items) if is_coding_list => {
                        for (_, c) in items.iter_mut() {
                            check_one(c, checker, notes, at);
                        }
                    }
                    Node::Obj(_) if &**k == "class" => check_one(v, checker, notes, at),
                    _ => check_codes(v, checker, notes, at),
                }
            }
        }
        Node::Arr(items) => items
            .iter_mut()
            .for_each(|(_, v)| check_codes(v, checker, notes, at)),
        _ => {}
    }
}

fn check_one(c: &mut Node, checker: &dyn crate::CodeChecker, notes: &mut Vec<Note>, at: &str) {
    let (Some(system), Some(code)) = (c.get_str("system"), c.get_str("code")) else {
        return;
    };
    let (system, code) = (system.to_string(), code.to_string());
    match checker.check(&system, &code) {
        CodeCheck::NotLoaded => {}
        CodeCheck::Valid { display } => {
            if let Some(d) = display
                && c.get_str("display").is_none()
            {
                c.set_if_absent("display", Node::Str(d.into()));
            }
        }
        CodeCheck::Invalid { message } => notes.push(Note {
            severity: Severity::Warning,
            path: at.to_string(),
            message: format!(
                "{at}: code {code:?} is not valid in {system}: {message}; kept as sent"
            ),
        }),
    }
}

fn uuid_v8(a: u64, b: u64) -> String {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&a.to_be_bytes());
    bytes[8..].copy_from_slice(&b.to_be_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x80; // version 8
    bytes[8] = (bytes[8] & 0x3f) | 0x80; // RFC 9562 variant
    let mut s = String::with_capacity(36);
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// A JSON string for a report line.
pub(crate) fn json_str(s: &str) -> String {
    let mut out = Vec::new();
    write_str(s, &mut out);
    String::from_utf8(out).unwrap_or_default()
}
