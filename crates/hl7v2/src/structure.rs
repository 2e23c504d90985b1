//! The group tree: where each segment of a message stands in its version's message structure, placed the way
//! HAPI's parser places it, and group paths resolved against it.
//!
//! Placement follows HAPI's `MessageIterator`, so that Terser paths written for HAPI (and Mirth) read the same
//! segments here. From the position of the last placed segment, for the next segment `S`:
//! 1. the position is a segment named `S` that may repeat (or has not been used yet): a new repetition of it;
//! 2. the position is a segment and `S` can follow it nowhere in the structure (not later in document order, not
//!    in a repeating group around it): `S` is *unexpected* and is added right after the position, in the same
//!    group, under its own name (HAPI's non-standard segment; a numeral when the name is taken: `PID2`);
//! 3. the position is a group that contains `S` somewhere and may repeat (or has not been used yet): a new
//!    repetition of it, entered at its first child;
//! 4. otherwise move on to the next sibling, or up to the parent when there is none.
//!
//! Choice groups of the definitions are transparent (HAPI has none): their members are children of the group
//! around them. Nothing is re-ordered or dropped: every segment of the message has exactly one place.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use crate::Charset;
use crate::definitions::{Definitions, MessageStructure, NodeKind, StructureNode, Version};
use crate::delimiters::Delimiters;
use crate::message::{Message, Segment, Value};
use crate::path::{Path, Step};

/// How a message's structure and version are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeOptions {
    /// The version used when MSH-12 is empty or names no version we know.
    pub default_version: Version,
    /// Use this version whatever MSH-12 says.
    pub force_version: Option<Version>,
}

impl Default for TreeOptions {
    fn default() -> Self {
        TreeOptions {
            default_version: Version::V2_5_1,
            force_version: None,
        }
    }
}

/// Where a message's segments stand in its message structure: built by [`Message::group_tree`] or
/// [`GroupTree::build`]. It holds indexes only (no borrow of the message), so it can be kept beside it.
#[derive(Clone, Debug)]
pub struct GroupTree {
    version: Version,
    declared: Version,
    structure: Option<&'static Compiled>,
    /// Group instances; 0 is the message itself.
    groups: Vec<GroupInstance>,
    /// Per segment of the message, in message order.
    placed: Vec<Placement>,
    /// What unexpected segments need; `None` while there is none (most messages), so building a tree allocates
    /// and initialises none of it.
    extras: Option<Box<Extras>>,
}

/// The unexpected segments of a [`GroupTree`].
#[derive(Clone, Debug, Default)]
struct Extras {
    /// Definitions added for unexpected segments (HAPI's non-standard segments).
    nodes: Vec<ExtraNode>,
    notes: Vec<Unexpected>,
    /// Names given to unexpected segments, per group instance.
    names: HashSet<(u32, Box<str>)>,
    /// Per group instance and identifier, the numeral the next name search starts from.
    next_numeral: HashMap<(u32, Box<str>), u32>,
}

/// A segment the structure has no place for, kept where it occurred.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unexpected {
    /// 0-based index of the segment in the message.
    pub segment_index: usize,
    /// Its path in the group tree (`/PATIENT_RESULT(0)/PATIENT(0)/ZPI(0)`).
    pub path: String,
    /// What kind of segment it is.
    pub kind: UnexpectedKind,
}

/// What kind of segment an [`Unexpected`] one is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnexpectedKind {
    /// A Z-segment (locally defined): expected to be unknown to the standard.
    ZSegment,
    /// A segment the version defines, standing where the structure does not allow it (wrong order, or repeated
    /// where it may not repeat).
    NotAllowedHere,
    /// A segment identifier the version does not define.
    UnknownSegment,
}

/// One segment of a message with its place in the group tree.
#[derive(Clone, Copy, Debug)]
pub struct PlacedSegment<'t, 'm, 'a> {
    tree: &'t GroupTree,
    /// The segment.
    pub segment: Segment<'m, 'a>,
    index: usize,
}

impl PlacedSegment<'_, '_, '_> {
    /// The segment's full group path, every index written, 0-based: `/PATIENT_RESULT(0)/ORDER_OBSERVATION(0)/OBX(2)`.
    pub fn path(&self) -> String {
        self.tree.path_of(self.index).unwrap_or_default()
    }
    /// The name the segment has in its group (`OBX`, `ROL2`, a Z-segment's id).
    pub fn name(&self) -> &str {
        self.tree.placement_name(self.index)
    }
    /// False when the structure has no place for the segment (see [`GroupTree::unexpected`]).
    pub fn is_expected(&self) -> bool {
        self.tree.placed[self.index].node < EXTRA_BASE
    }
}

#[derive(Clone, Copy, Debug)]
struct GroupInstance {
    node: u32,
    parent: u32,
    rep: u32,
}

#[derive(Clone, Copy, Debug)]
struct Placement {
    group: u32,
    node: u32,
    rep: u32,
}

#[derive(Clone, Debug)]
struct ExtraNode {
    name: Box<str>,
    key: u32,
    /// The definition node it was added after (its following segments are that node's).
    anchor: u32,
}

/// Names HAPI v2 gives differently from the standard's, which these definitions follow: (structure, HAPI's name,
/// ours). An empty structure applies to all. HAPI names groups the standard left unnamed (2.3.1) after their
/// segments, and its Java class for the segment CON is `CON_`.
const HAPI_NAMES: &[(&str, &str, &str)] = &[
    ("", "CON_", "CON"),
    ("MDM_T02", "OBXNTE", "OBSERVATION"),
    // HL7's own 2.4 database misspells these; the errata correct them, HAPI's v24 keeps the misspelling.
    ("ORS_O06", "RSPONSE", "RESPONSE"),
    ("RGR_RGR", "DEFINTION", "DEFINITION"),
    (
        "PPR_PC1",
        "PRBNTEVARROLVARPTHVAROBXNTEGOLNTEVARROLVAROBXNTEORCOBRRXONTEVAROBXNTEVAR",
        "PROBLEM",
    ),
];

/// Node references at or above this index are [`ExtraNode`]s.
const EXTRA_BASE: u32 = 1 << 30;
/// Segment key of a group node or an identifier that is not three characters (matches no segment).
const NO_KEY: u32 = u32::MAX;

/// A message structure flattened for placement: nodes in one array, the root first.
#[derive(Debug)]
pub(crate) struct Compiled {
    pub(crate) id: Box<str>,
    pub(crate) nodes: Vec<Node>,
    /// Per choice (inlined choice group), its own minimum: 1 when one member is required.
    pub(crate) choice_min: Vec<u32>,
    /// The structure's alphabet (its distinct segment keys; bit `i` of a node's sets stands for the `i`-th in
    /// sorted order) as an open-addressing hash table of (key, bit), [`NO_KEY`] marking an empty slot; its length
    /// is a power of two at least twice the alphabet's. Every segment of a message is looked up here, so one
    /// multiplication and a probe or two replace a binary search.
    bits: Box<[(u32, u8)]>,
}

impl Compiled {
    /// The bit of a segment key in this structure's sets; 0 for a segment the structure does not contain.
    fn bit(&self, key: u32) -> u128 {
        if key == NO_KEY {
            return 0;
        }
        let mask = self.bits.len() - 1;
        let mut i = bit_slot(key, self.bits.len());
        loop {
            let (k, bit) = self.bits[i];
            if k == key {
                return 1u128 << bit;
            }
            if k == NO_KEY {
                return 0;
            }
            i = (i + 1) & mask;
        }
    }
}

/// The first slot of a segment key in a [`Compiled::bits`] table of `len` (a power of two) slots: Fibonacci
/// hashing, the key's high product bits.
fn bit_slot(key: u32, len: usize) -> usize {
    let shift = 32 - len.trailing_zeros();
    (key.wrapping_mul(0x9E37_79B9) >> shift) as usize
}

/// The [`Compiled::bits`] table of a sorted alphabet.
fn bit_table(alphabet: &[u32]) -> Box<[(u32, u8)]> {
    let len = (2 * alphabet.len()).next_power_of_two().max(4);
    let mut table = vec![(NO_KEY, 0u8); len];
    for (bit, &key) in alphabet.iter().enumerate() {
        let mut i = bit_slot(key, len);
        while table[i].0 != NO_KEY {
            i = (i + 1) & (len - 1);
        }
        table[i] = (key, bit as u8);
    }
    table.into_boxed_slice()
}

#[derive(Debug)]
pub(crate) struct Node {
    /// HAPI's name: `PATIENT_RESULT`, `OBX`, `ROL2`.
    pub(crate) name: Box<str>,
    /// The segment key for a segment node, [`NO_KEY`] for a group.
    pub(crate) key: u32,
    pub(crate) min: u32,
    pub(crate) max: Option<u32>,
    /// Index of the choice this node is a member of (for validation: at most one member).
    pub(crate) choice: Option<u32>,
    pub(crate) parent: u32,
    /// Children (groups only), contiguous.
    pub(crate) children: std::ops::Range<u32>,
    /// HAPI's "possible first children": the segments that may start this group (or the segment itself), as bits
    /// of the structure's alphabet.
    first: u128,
    /// HAPI's "names of all possible following leaves" (segments only), as bits of the alphabet: every segment after
    /// this one in document order, and the possible first children of every repeating group around it or around
    /// any of them.
    following: u128,
    /// False for the last segment of the structure in document order (HAPI's `getNextLeaf() == null`).
    has_next_leaf: bool,
}

impl Node {
    pub(crate) fn is_group(&self) -> bool {
        self.key == NO_KEY
    }
    pub(crate) fn repeats(&self) -> bool {
        self.max != Some(1)
    }
}

/// `a == b` for the short names of nodes and path steps, compared in place (`==` on `str` calls `memcmp`, which
/// costs more than the comparison for names of a few bytes).
fn same_name(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| x == y)
}

/// Packs a three-character segment identifier; any other length gives [`NO_KEY`].
pub(crate) fn seg_key(id: &[u8]) -> u32 {
    match id {
        [a, b, c] => (u32::from(*a) << 16) | (u32::from(*b) << 8) | u32::from(*c),
        _ => NO_KEY,
    }
}

/// Compiled structures per version, in the order of the version's structures (so the index
/// [`Definitions::structure_index`] finds is the index here), built on first use of a version.
fn compiled(version: Version) -> &'static [Compiled] {
    static CACHE: [OnceLock<Vec<Compiled>>; 12] = [const { OnceLock::new() }; 12];
    CACHE[version.index()].get_or_init(|| version.definitions().structures().map(compile).collect())
}

fn compile(structure: &MessageStructure) -> Compiled {
    let mut nodes = vec![Node {
        name: structure.id.clone(),
        key: NO_KEY,
        min: 1,
        max: Some(1),
        choice: None,
        parent: 0,
        children: 0..0,
        first: 0,
        following: 0,
        has_next_leaf: false,
    }];
    let mut choice_min = Vec::new();
    add_children(&mut nodes, 0, &structure.children, &mut choice_min);
    let n = nodes.len();
    // The placement stack holds one position per level (nodes are added after their parents).
    let mut depth = vec![0usize; n];
    for i in 1..n {
        depth[i] = depth[nodes[i].parent as usize] + 1;
    }
    assert!(
        depth.iter().all(|d| d + 2 <= STACK_CAPACITY),
        "{} nests deeper than the placement stack holds",
        structure.id
    );
    // Possible first children, as HAPI computes them: children in order, each adding its own first children; stop
    // after the first required child, or after the first non-choice child that follows choice members.
    let mut first: Vec<Vec<u32>> = vec![Vec::new(); n];
    for i in (0..n).rev() {
        if !nodes[i].is_group() {
            first[i] = vec![nodes[i].key];
            continue;
        }
        let mut keys = Vec::new();
        let mut had_choice = false;
        for c in nodes[i].children.clone() {
            let c = c as usize;
            keys.extend_from_slice(&first[c]);
            if nodes[c].choice.is_some() {
                had_choice = true;
                continue;
            } else if had_choice {
                break;
            }
            if nodes[c].min > 0 {
                break;
            }
        }
        keys.sort_unstable();
        keys.dedup();
        first[i] = keys;
    }
    // Following keys, from the last segment backwards: following(S) = {next leaf} + following(next leaf) + the
    // first children of every repeating group around S.
    let leaves: Vec<u32> = document_order(&nodes)
        .into_iter()
        .filter(|&i| !nodes[i as usize].is_group())
        .collect();
    let mut following = vec![Vec::new(); n];
    let mut next: Option<u32> = None;
    for &leaf in leaves.iter().rev() {
        let i = leaf as usize;
        let mut set = Vec::new();
        if let Some(nl) = next {
            set.push(nodes[nl as usize].key);
            set.extend_from_slice(&following[nl as usize]);
        }
        let mut p = nodes[i].parent as usize;
        while p != 0 {
            if nodes[p].repeats() {
                set.extend_from_slice(&first[p]);
            }
            p = nodes[p].parent as usize;
        }
        set.sort_unstable();
        set.dedup();
        following[i] = set;
        nodes[i].has_next_leaf = next.is_some();
        next = Some(leaf);
    }
    // The structure's alphabet: its distinct segment identifiers, sorted; sets become bit masks over it (the
    // largest structure of 2.1-2.8.2 has 48 distinct segments).
    let mut alphabet: Vec<u32> = nodes
        .iter()
        .filter(|n| !n.is_group())
        .map(|n| n.key)
        .collect();
    alphabet.sort_unstable();
    alphabet.dedup();
    assert!(
        alphabet.len() <= 128,
        "{} has more than 128 distinct segments",
        structure.id
    );
    let mask = |keys: &[u32]| {
        keys.iter()
            .filter_map(|k| alphabet.binary_search(k).ok().filter(|i| *i < 128))
            .fold(0u128, |m, i| m | (1u128 << i))
    };
    for (i, node) in nodes.iter_mut().enumerate() {
        node.first = mask(&first[i]);
        node.following = mask(&following[i]);
    }
    Compiled {
        id: structure.id.clone(),
        nodes,
        choice_min,
        bits: bit_table(&alphabet),
    }
}

/// Adds `defs` as the children of `parent` (contiguous), inlining choice groups, then recurses into groups.
fn add_children(
    nodes: &mut Vec<Node>,
    parent: u32,
    defs: &[StructureNode],
    choice_min: &mut Vec<u32>,
) {
    let mut flat: Vec<(&StructureNode, Option<u32>)> = Vec::new();
    for def in defs {
        match &def.kind {
            NodeKind::Group {
                choice: true,
                children,
                ..
            } => {
                let id = choice_min.len() as u32;
                choice_min.push(def.min);
                flat.extend(children.iter().map(|c| (c, Some(id))));
            }
            _ => flat.push((def, None)),
        }
    }
    let start = nodes.len() as u32;
    for (def, choice) in &flat {
        let (name, key) = match &def.kind {
            NodeKind::Segment { id, name } => (name.clone(), seg_key(id.as_bytes())),
            NodeKind::Group { name, .. } => (name.clone(), NO_KEY),
        };
        nodes.push(Node {
            name,
            key,
            // A choice member is optional on its own: the choice as a whole carries the cardinality.
            min: if choice.is_some() { 0 } else { def.min },
            max: def.max,
            choice: *choice,
            parent,
            children: 0..0,
            first: 0,
            following: 0,
            has_next_leaf: false,
        });
    }
    let end = nodes.len() as u32;
    nodes[parent as usize].children = start..end;
    for (k, (def, _)) in flat.iter().enumerate() {
        if let NodeKind::Group { children, .. } = &def.kind {
            add_children(nodes, start + k as u32, children, choice_min);
        }
    }
}

/// Node indexes in document order (depth first, children in order).
fn document_order(nodes: &[Node]) -> Vec<u32> {
    let mut out = Vec::with_capacity(nodes.len());
    let mut stack = vec![0u32];
    while let Some(i) = stack.pop() {
        out.push(i);
        stack.extend(nodes[i as usize].children.clone().rev());
    }
    out
}

/// How deep the placement stack can get: the message, one level per group nesting (choice groups are inlined;
/// the deepest structure of 2.1-2.8.2 nests 9 levels), and an unexpected segment at the message level.
/// [`compile`] checks that every structure fits.
const STACK_CAPACITY: usize = 16;

/// The placement stack, kept on the call stack: building a tree allocates no vector for it.
#[derive(Debug)]
struct Stack {
    items: [Position; STACK_CAPACITY],
    len: usize,
}

impl Default for Stack {
    fn default() -> Stack {
        let empty = Position {
            node: 0,
            rep: 0,
            instance: 0,
        };
        Stack {
            items: [empty; STACK_CAPACITY],
            len: 0,
        }
    }
}

impl Stack {
    fn push(&mut self, p: Position) {
        self.items[self.len] = p;
        self.len += 1;
    }
    fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }
}

impl std::ops::Deref for Stack {
    type Target = [Position];
    fn deref(&self) -> &[Position] {
        &self.items[..self.len]
    }
}

impl std::ops::DerefMut for Stack {
    fn deref_mut(&mut self) -> &mut [Position] {
        &mut self.items[..self.len]
    }
}

/// Where placement stands: a node of the structure (or an extra node) and how many times it has been used.
#[derive(Clone, Copy, Debug)]
struct Position {
    node: u32,
    /// Repetitions used so far minus one: -1 when not used yet.
    rep: i64,
    /// The group instance, for a group position that has been entered.
    instance: u32,
}

impl GroupTree {
    /// Places every segment of `msg` in the message structure of its version: MSH-12 (else the default), and
    /// MSH-9-3 when that version has it, else the structure of MSH-9-1/MSH-9-2 (the trigger event map). A message
    /// whose structure cannot be resolved gets a flat, *generic* tree: every segment under the message itself.
    pub fn build(msg: &Message<'_>, options: &TreeOptions) -> GroupTree {
        let (version, declared, compiled) = resolve(msg, options);
        // Most segments open at most one group instance (a new OBSERVATION per OBX); more only grows the vector.
        let mut groups = Vec::with_capacity(msg.segment_count() + 1);
        groups.push(GroupInstance {
            node: 0,
            parent: 0,
            rep: 0,
        });
        let mut tree = GroupTree {
            version,
            declared,
            structure: compiled,
            groups,
            placed: Vec::with_capacity(msg.segment_count()),
            extras: None,
        };
        let structure: &Compiled = compiled.unwrap_or_else(|| GENERIC.get_or_init(generic));
        let nodes: &[Node] = &structure.nodes;
        let mut stack = Stack::default();
        stack.push(Position {
            node: 0,
            rep: 0,
            instance: 0,
        });
        if !nodes[0].children.is_empty() {
            stack.push(Position {
                node: nodes[0].children.start,
                rep: -1,
                instance: 0,
            });
        }
        for seg in msg.segments() {
            let key = seg_key(seg.id_bytes());
            tree.place(nodes, &mut stack, key, structure.bit(key), seg.id_bytes());
        }
        let defs = version.definitions();
        let mut notes = Vec::new();
        let placed = if tree.extras.is_none() {
            &[][..]
        } else {
            &tree.placed[..]
        };
        for (i, p) in placed.iter().enumerate() {
            if p.node < EXTRA_BASE {
                continue;
            }
            let Some(seg) = msg.segment(i) else { continue };
            let kind = if seg.id_bytes().first() == Some(&b'Z') {
                UnexpectedKind::ZSegment
            } else if defs.segment(seg.id()).is_some() {
                UnexpectedKind::NotAllowedHere
            } else {
                UnexpectedKind::UnknownSegment
            };
            let path = tree.path_of(i).unwrap_or_default();
            notes.push(Unexpected {
                segment_index: i,
                path,
                kind,
            });
        }
        if let Some(extras) = &mut tree.extras {
            extras.notes = notes;
        }
        tree
    }

    /// The version whose definitions were used: the declared one, or an earlier version when the declared one
    /// has withdrawn the message's structure.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The version the message declares in MSH-12 (or the default, or the forced version).
    pub fn declared_version(&self) -> Version {
        self.declared
    }

    /// The message structure id (`ORU_R01`), or `None` for a generic (unresolved) message.
    pub fn structure_id(&self) -> Option<&str> {
        self.structure.map(|c| &*c.id)
    }

    /// The segments the structure has no place for, in message order.
    pub fn unexpected(&self) -> &[Unexpected] {
        self.extras.as_ref().map_or(&[], |e| &e.notes)
    }

    /// Every segment of `msg` (the message this tree was built from) with its place, in message order.
    pub fn segments<'t, 'm, 'a>(
        &'t self,
        msg: &'m Message<'a>,
    ) -> impl Iterator<Item = PlacedSegment<'t, 'm, 'a>> + 't
    where
        'm: 't,
    {
        msg.segments()
            .take(self.placed.len())
            .enumerate()
            .map(move |(index, segment)| PlacedSegment {
                tree: self,
                segment,
                index,
            })
    }

    /// The full group path of the segment at a 0-based message index, every index written, 0-based.
    pub fn path_of(&self, segment_index: usize) -> Option<String> {
        use std::fmt::Write as _;
        let p = self.placed.get(segment_index)?;
        let mut out = self.group_path(p.group);
        let _ = write!(out, "/{}({})", self.node_name(p.node), p.rep);
        Some(out)
    }

    /// The group instances from the message down to the segment at a 0-based message index, as (group name,
    /// 0-based repetition): the group steps of [`GroupTree::path_of`] (its segment step left out) without writing
    /// or parsing a string. Empty for a segment at the message's top level and for an index past the last segment.
    pub fn group_steps(&self, segment_index: usize) -> Vec<(&str, u32)> {
        let Some(p) = self.placed.get(segment_index) else {
            return Vec::new();
        };
        let mut steps = Vec::new();
        let mut g = p.group;
        while g != 0 {
            let inst = self.groups[g as usize];
            steps.push((self.node_name(inst.node), inst.rep));
            g = inst.parent;
        }
        steps.reverse();
        steps
    }

    /// The message index of the segment a group path names (the path's groups and segment step; its field part
    /// is ignored). `None` when the path is flat or names nothing in this message.
    pub fn find(&self, path: &Path) -> Option<usize> {
        let seg = path.segment_step.as_ref()?;
        let mut group = 0u32;
        for step in &path.groups {
            group = self.find_group(group, step)?;
        }
        self.find_segment(group, seg)
    }

    /// The compiled structure, for validation.
    pub(crate) fn compiled(&self) -> Option<&'static Compiled> {
        self.structure
    }

    /// For validation: each group instance as (node, parent instance, repetition).
    pub(crate) fn group_instances(&self) -> impl ExactSizeIterator<Item = (u32, u32, u32)> + '_ {
        self.groups.iter().map(|g| (g.node, g.parent, g.rep))
    }

    /// For validation: the parent instance of group instance `g`.
    pub(crate) fn group_parent(&self, g: u32) -> u32 {
        self.groups[g as usize].parent
    }

    /// For validation: each segment's (group instance, node, repetition); nodes at or above `EXTRA_BASE` are
    /// unexpected segments.
    pub(crate) fn placements(&self) -> impl ExactSizeIterator<Item = (u32, u32, u32)> + '_ {
        self.placed.iter().map(|p| (p.group, p.node, p.rep))
    }

    /// The path of a group instance (`/PATIENT_RESULT(0)/ORDER_OBSERVATION(1)`; empty for the message).
    pub(crate) fn group_path(&self, mut g: u32) -> String {
        use std::fmt::Write as _;
        let mut parts = Vec::new();
        while g != 0 {
            let inst = self.groups[g as usize];
            parts.push((self.node_name(inst.node), inst.rep));
            g = inst.parent;
        }
        let mut out = String::new();
        for (name, rep) in parts.iter().rev() {
            let _ = write!(out, "/{name}({rep})");
        }
        out
    }

    /// The path of a segment in HAPI's short form, `(0)` indexes left out (`/PATIENT_RESULT/PATIENT/PID`): what
    /// [`short`] makes of [`GroupTree::path_of`] ("" when there is no such segment), written directly.
    pub(crate) fn short_path_of(&self, segment_index: usize) -> String {
        let Some(p) = self.placed.get(segment_index) else {
            return String::new();
        };
        let mut out = String::with_capacity(48);
        if self.write_short_steps(&mut out, p.group)
            && write_short_step(&mut out, self.node_name(p.node), p.rep)
        {
            return out;
        }
        short(&self.path_of(segment_index).unwrap_or_default())
    }

    /// The path of a group instance in HAPI's short form: what [`short`] makes of [`GroupTree::group_path`].
    pub(crate) fn short_group_path(&self, g: u32) -> String {
        let mut out = String::new();
        if self.write_short_steps(&mut out, g) {
            return out;
        }
        short(&self.group_path(g))
    }

    /// Writes the short-form steps from the message down to group instance `g`; false when a name holds a
    /// parenthesis (a segment identifier can), where leaving out `(0)` indexes is not what [`short`] does.
    fn write_short_steps(&self, out: &mut String, g: u32) -> bool {
        if g == 0 {
            return true;
        }
        let inst = self.groups[g as usize];
        // A parent instance is created before its children, so this ends at the message.
        self.write_short_steps(out, inst.parent)
            && write_short_step(out, self.node_name(inst.node), inst.rep)
    }

    /// The unexpected segment's definition a node reference at or above [`EXTRA_BASE`] stands for.
    fn extra_node(&self, node: u32) -> &ExtraNode {
        let extras = self
            .extras
            .as_ref()
            .expect("extra nodes exist once one is added");
        &extras.nodes[(node - EXTRA_BASE) as usize]
    }

    fn placement_name(&self, index: usize) -> &str {
        self.placed
            .get(index)
            .map_or("", |p| self.node_name(p.node))
    }

    fn node_name(&self, node: u32) -> &str {
        if node >= EXTRA_BASE {
            return &self.extra_node(node).name;
        }
        self.structure.map_or("", |c| &*c.nodes[node as usize].name)
    }

    /// What a path step's name matches: the name as written and, when HAPI names it differently, our name for it
    /// (looked up once per step, not per node compared).
    fn step_names<'n>(&self, name: &'n str) -> (&'n str, Option<&'n str>) {
        let canonical = self.canonical_name(name);
        (name, (canonical != name).then_some(canonical))
    }

    /// True when a step's names (from [`GroupTree::step_names`]) name the node: its own name or HAPI's name for it.
    fn names_match(&self, node: u32, (name, canonical): (&str, Option<&str>)) -> bool {
        let own = self.node_name(node);
        same_name(own, name) || canonical.is_some_and(|c| same_name(own, c))
    }

    /// The name these definitions give to what HAPI names `hapi_name` in this message's structure (HAPI names a
    /// few groups its own way, and the segment CON `CON_`); other names are returned unchanged. Group paths
    /// written for HAPI read the same segments here.
    pub fn canonical_name<'n>(&self, hapi_name: &'n str) -> &'n str {
        // The name first: it differs (in length, mostly) from every entry for nearly all names.
        if let Some(&(_, _, ours)) = HAPI_NAMES.iter().find(|(s, hapi, _)| {
            same_name(hapi, hapi_name) && (s.is_empty() || *s == self.structure_id().unwrap_or(""))
        }) {
            return ours;
        }
        hapi_name
    }

    fn node_key(&self, node: u32) -> u32 {
        if node >= EXTRA_BASE {
            return self.extra_node(node).key;
        }
        self.structure
            .map_or(NO_KEY, |c| c.nodes[node as usize].key)
    }

    /// A direct child group instance of `group` named by `step`, or with `search`, the first group of that name
    /// anywhere below (in document order) and its repetition.
    fn find_group(&self, group: u32, step: &Step) -> Option<u32> {
        let rep = step.repetition.checked_sub(1)? as u32;
        let names = self.step_names(&step.name);
        if !step.search {
            return self.groups.iter().enumerate().skip(1).find_map(|(i, g)| {
                (g.parent == group && g.rep == rep && self.names_match(g.node, names))
                    .then_some(i as u32)
            });
        }
        // The first instance (in creation order, which is document order) below `group` with that name fixes
        // which node is meant; then its repetition `rep` under the same parent.
        let first =
            self.groups.iter().enumerate().skip(1).find(|(i, g)| {
                self.names_match(g.node, names) && self.is_below(*i as u32, group)
            })?;
        let (node, parent) = (first.1.node, first.1.parent);
        self.groups.iter().enumerate().skip(1).find_map(|(i, g)| {
            (g.node == node && g.parent == parent && g.rep == rep).then_some(i as u32)
        })
    }

    fn find_segment(&self, group: u32, step: &Step) -> Option<usize> {
        let rep = step.repetition.checked_sub(1)? as u32;
        let names = self.step_names(&step.name);
        if !step.search {
            return self
                .placed
                .iter()
                .position(|p| p.group == group && p.rep == rep && self.names_match(p.node, names));
        }
        let key = seg_key(step.name.as_bytes());
        let first = self.placed.iter().find(|p| {
            (self.names_match(p.node, names) || self.node_key(p.node) == key)
                && self.is_below(p.group, group)
        })?;
        let (node, g) = (first.node, first.group);
        self.placed
            .iter()
            .position(|p| p.node == node && p.group == g && p.rep == rep)
    }

    /// True when group instance `g` is `ancestor` or below it.
    fn is_below(&self, mut g: u32, ancestor: u32) -> bool {
        loop {
            if g == ancestor {
                return true;
            }
            if g == 0 {
                return false;
            }
            g = self.groups[g as usize].parent;
        }
    }

    /// Places the next segment (key `key`) from the position on top of `stack`, as HAPI's iterator does.
    fn place(&mut self, nodes: &[Node], stack: &mut Stack, key: u32, bit: u128, id: &[u8]) {
        // Each step moves forward in the structure, enters a group or leaves groups; the bound only guards
        // against a bug.
        let mut budget = 4 * nodes.len() + 16;
        while budget > 0 {
            budget -= 1;
            let last = stack.len() - 1;
            let top = stack[last];
            if top.node == 0 {
                break;
            }
            let (is_group, node_key, repeats, def_node) = if top.node >= EXTRA_BASE {
                let e = self.extra_node(top.node);
                (false, e.key, true, e.anchor)
            } else {
                let n = &nodes[top.node as usize];
                (n.is_group(), n.key, n.repeats(), top.node)
            };
            let def = &nodes[def_node as usize];
            if !is_group {
                if node_key == key && (repeats || top.rep < 0) {
                    stack[last].rep += 1;
                    self.placed.push(Placement {
                        group: enclosing(stack, last),
                        node: top.node,
                        rep: stack[last].rep as u32,
                    });
                    return;
                }
                if def.following & bit == 0 {
                    self.add_extra(stack, key, id, def_node);
                    return;
                }
            } else if (repeats || top.rep < 0) && def.first & bit != 0 {
                stack[last].rep += 1;
                let instance = self.groups.len() as u32;
                self.groups.push(GroupInstance {
                    node: top.node,
                    parent: enclosing(stack, last),
                    rep: stack[last].rep as u32,
                });
                stack[last].instance = instance;
                stack.push(Position {
                    node: def.children.start,
                    rep: -1,
                    instance: 0,
                });
                continue;
            }
            if is_final_child(nodes, def_node) {
                match pop_until_match(nodes, stack, bit) {
                    Some(depth) => stack.truncate(depth),
                    None => {
                        self.add_extra(stack, key, id, def_node);
                        return;
                    }
                }
            } else {
                stack[last] = Position {
                    node: def_node + 1,
                    rep: -1,
                    instance: 0,
                };
            }
        }
        // At the message level with nowhere to go (a generic message, or a second MSH): keep the segment under
        // the message, after the last one.
        let anchor = stack.last().map_or(0, |p| {
            if p.node >= EXTRA_BASE {
                self.extra_node(p.node).anchor
            } else {
                p.node
            }
        });
        self.add_extra(stack, key, id, anchor);
    }

    /// Adds an unexpected segment right after the current position, in the current group, named by its
    /// identifier (with a numeral when the group already has that name), and makes it the position.
    fn add_extra(&mut self, stack: &mut Stack, key: u32, id: &[u8], anchor: u32) {
        let id = String::from_utf8_lossy(id);
        let id: &str = &id;
        let at_root = stack.len() <= 1;
        let group = if at_root {
            0
        } else {
            enclosing(stack, stack.len() - 1)
        };
        let group_node = self.groups[group as usize].node;
        let name = self.unused_name(group, group_node, id);
        let extras = self.extras.get_or_insert_with(Box::default);
        let node = EXTRA_BASE + extras.nodes.len() as u32;
        extras.nodes.push(ExtraNode { name, key, anchor });
        let pos = Position {
            node,
            rep: 0,
            instance: 0,
        };
        if at_root {
            stack.push(pos);
        } else {
            let last = stack.len() - 1;
            stack[last] = pos;
        }
        self.placed.push(Placement {
            group,
            node,
            rep: 0,
        });
    }

    /// `id`, or `id2`, `id3`... : the first name no child of the group instance has.
    fn unused_name(&mut self, group: u32, group_node: u32, id: &str) -> Box<str> {
        let structure = self.structure;
        let extras = self.extras.get_or_insert_with(Box::default);
        let names = &extras.names;
        let taken = |name: &str| {
            let defined = structure.is_some_and(|c| {
                c.nodes.get(group_node as usize).is_some_and(|g| {
                    g.children
                        .clone()
                        .any(|k| &*c.nodes[k as usize].name == name)
                })
            });
            defined || names.contains(&(group, Box::<str>::from(name)))
        };
        let name: Box<str> = if !taken(id) {
            id.into()
        } else {
            // HAPI tries id2, id3... in turn; remembering where the last search ended keeps 10,000 unexpected
            // segments of one identifier linear instead of cubic.
            let start = extras
                .next_numeral
                .get(&(group, Box::<str>::from(id)))
                .copied()
                .unwrap_or(2);
            let mut n = start;
            while taken(&format!("{id}{n}")) {
                n += 1;
            }
            extras.next_numeral.insert((group, id.into()), n + 1);
            format!("{id}{n}").into_boxed_str()
        };
        extras.names.insert((group, name.clone()));
        name
    }
}

/// A path in HAPI's short form: `(0)` indexes left out.
pub(crate) fn short(path: &str) -> String {
    path.replace("(0)", "")
}

/// Writes `/name(rep)`, `(0)` left out; false (writing nothing) when the name holds a parenthesis.
fn write_short_step(out: &mut String, name: &str, rep: u32) -> bool {
    use std::fmt::Write as _;
    // Bytes, not a `char` pattern: a name is a few ASCII bytes, and this runs for every issue's path.
    if name.bytes().any(|b| b == b'(' || b == b')') {
        return false;
    }
    out.push('/');
    out.push_str(name);
    if rep != 0 {
        let _ = write!(out, "({rep})");
    }
    true
}

/// HAPI's `isFinalChildOfParent`: the message itself, or the last child of its group.
fn is_final_child(nodes: &[Node], node: u32) -> bool {
    node == 0 || node + 1 == nodes[nodes[node as usize].parent as usize].children.end
}

/// HAPI's `popUntilMatchFound`: leaves the groups that end here until one may start with `key` or is followed
/// by a sibling. Returns the new stack length, or `None` when the message level is reached.
fn pop_until_match(nodes: &[Node], stack: &[Position], bit: u128) -> Option<usize> {
    let mut len = stack.len() - 1;
    loop {
        if len == 0 {
            return None;
        }
        let t = stack[len - 1].node;
        if t >= EXTRA_BASE {
            return Some(len);
        }
        if nodes[t as usize].first & bit != 0 {
            return Some(len);
        }
        if !is_final_child(nodes, t) {
            return Some(len);
        }
        if len > 1 {
            len -= 1;
        } else {
            return None;
        }
    }
}

/// The group instance the position at `index` of the stack stands in: the entered group below it.
fn enclosing(stack: &[Position], index: usize) -> u32 {
    index.checked_sub(1).map_or(0, |i| stack[i].instance)
}

/// The structure of a message whose structure is unknown: the message alone, every segment placed under it.
static GENERIC: OnceLock<Compiled> = OnceLock::new();

fn generic() -> Compiled {
    compile(&MessageStructure {
        id: "GENERIC".into(),
        children: Box::default(),
    })
}

/// What [`resolve`] finds: the version whose definitions are used, the version the message declares (or the
/// default) and the compiled message structure.
type Resolution = (Version, Version, Option<&'static Compiled>);

/// The last resolution of a thread and what it was resolved from. [`resolve`] depends only on the raw MSH-9 and
/// MSH-12 (with the delimiters and character set that split and decode them) and the options; the messages of
/// an interface repeat those, so most trees skip reading them as text and looking the structure up.
#[derive(Clone, Copy)]
struct Memo {
    msh9: [u8; 32],
    msh9_len: usize,
    msh12: [u8; 16],
    msh12_len: usize,
    delims: Delimiters,
    charset: Charset,
    options: TreeOptions,
    resolution: Resolution,
}

impl Memo {
    /// A memo of a resolution; `None` when a field is too long to keep.
    fn new(
        msh9: &[u8],
        msh12: &[u8],
        msg: &Message<'_>,
        options: &TreeOptions,
        resolution: Resolution,
    ) -> Option<Memo> {
        let mut memo = Memo {
            msh9: [0; 32],
            msh9_len: msh9.len(),
            msh12: [0; 16],
            msh12_len: msh12.len(),
            delims: *msg.delimiters(),
            charset: msg.charset(),
            options: *options,
            resolution,
        };
        memo.msh9.get_mut(..msh9.len())?.copy_from_slice(msh9);
        memo.msh12.get_mut(..msh12.len())?.copy_from_slice(msh12);
        Some(memo)
    }

    fn matches(&self, msh9: &[u8], msh12: &[u8], msg: &Message<'_>, options: &TreeOptions) -> bool {
        self.msh9.get(..self.msh9_len) == Some(msh9)
            && self.msh12.get(..self.msh12_len) == Some(msh12)
            && self.delims == *msg.delimiters()
            && self.charset == msg.charset()
            && self.options == *options
    }
}

thread_local! {
    static LAST_RESOLUTION: RefCell<Option<Memo>> = const { RefCell::new(None) };
}

/// Resolves a message's version and structure (see [`resolve_fields`]), through this thread's memo of the last
/// resolution.
fn resolve(msg: &Message<'_>, options: &TreeOptions) -> Resolution {
    // MSH is the first segment of nearly every message: look there before searching.
    let msh = match msg.segment(0) {
        Some(s) if s.id_bytes() == b"MSH" => Some(s),
        _ => msg.segments().find(|s| s.id_bytes() == b"MSH"),
    };
    let (msh9, msh12) = (msh.and_then(|m| m.field(9)), msh.and_then(|m| m.field(12)));
    // An absent field reads as an empty one.
    let raw9 = msh9.as_ref().map_or(&[][..], Value::raw);
    let raw12 = msh12.as_ref().map_or(&[][..], Value::raw);
    let memo = LAST_RESOLUTION.with_borrow(|last| {
        last.as_ref()
            .filter(|m| m.matches(raw9, raw12, msg, options))
            .map(|m| m.resolution)
    });
    if let Some(resolution) = memo {
        return resolution;
    }
    let resolution = resolve_fields(msh9, msh12, msg.delimiters(), options);
    if let Some(memo) = Memo::new(raw9, raw12, msg, options, resolution) {
        LAST_RESOLUTION.with_borrow_mut(|last| *last = Some(memo));
    }
    resolution
}

/// The version and structure from MSH-9 and MSH-12: MSH-12 (else the default) unless the options force a
/// version; MSH-9-3 when that version has it, else the structure of MSH-9-1/MSH-9-2; an earlier version that
/// has the structure when this one does not.
fn resolve_fields(
    msh9: Option<Value<'_>>,
    msh12: Option<Value<'_>>,
    delims: &Delimiters,
    options: &TreeOptions,
) -> Resolution {
    let msh9 = components(msh9, delims);
    let [version_text, ..] = components(msh12, delims);
    let version = options
        .force_version
        .unwrap_or_else(|| Version::parse(&version_text).unwrap_or(options.default_version));
    let [kind, event, name] = &msh9;
    let (name, kind, event) = (name.trim(), kind.trim(), event.trim());
    let find = |v: Version| {
        let defs: &'static Definitions = v.definitions();
        let i = defs
            .structure_index(name)
            .or_else(|| defs.structure_index_of_event(kind, event))?;
        Some(&compiled(v)[i])
    };
    if let Some(s) = find(version) {
        return (version, version, Some(s));
    }
    // A structure the version withdrew (ADT_A30 is gone from 2.8, yet ADT^A47 messages say 2.8): read it with the
    // latest earlier version that defines it, rather than as a generic message.
    let earlier = Version::ALL.iter().rev().filter(|v| **v < version);
    for &v in earlier {
        if let Some(s) = find(v) {
            return (v, version, Some(s));
        }
    }
    (version, version, None)
}

/// Components 1-3 of a field's first repetition (each its first subcomponent), as text; "" when absent.
fn components<'a>(field: Option<Value<'a>>, delims: &Delimiters) -> [Cow<'a, str>; 3] {
    let mut out: [Cow<'a, str>; 3] = Default::default();
    let Some(field) = field else {
        return out;
    };
    let raw = field.raw();
    // MSH-9 and MSH-12 are nearly always plain ASCII, which every character set reads as itself: split the
    // field in place rather than through `Value` and the decoder.
    if raw.is_ascii()
        && delims.escape.is_none_or(|e| !raw.contains(&e))
        && let Ok(text) = std::str::from_utf8(raw)
    {
        // ASCII: every byte index is a character boundary.
        let until = |s: &'a str, sep: u8| &s[..s.bytes().position(|b| b == sep).unwrap_or(s.len())];
        let repetition = until(text, delims.repetition);
        // The components as `Value::parts` splits them: one more than there are separators.
        let mut rest = Some(repetition);
        for slot in out.iter_mut() {
            let Some(r) = rest else { break };
            let component = until(r, delims.component);
            rest = r.get(component.len() + 1..);
            let first = match delims.subcomponent {
                Some(sub) => until(component, sub),
                None => component,
            };
            *slot = Cow::Borrowed(first);
        }
        return out;
    }
    if let Some(r) = field.repetition(1) {
        for (slot, c) in out.iter_mut().zip(r.parts()) {
            *slot = c.subcomponent(1).map(|v| v.text()).unwrap_or_default();
        }
    }
    out
}
