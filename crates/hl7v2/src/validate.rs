//! Validation of a message against its version's definitions: structure (from the group tree), fields
//! (required, repetition, primitive data types, lengths) and HL7 table values.
//!
//! Every issue carries a severity, an HL7 table 0357 code, the HAPI-style path of the fault and a sentence a
//! person understands. What counts as an error is a [`Profile`]: a strict or lenient default, then per-rule
//! overrides (an engine keeps one profile per message type or sender).

use std::borrow::Cow;
use std::cell::OnceCell;
use std::fmt::Write as _;
use std::sync::OnceLock;

use crate::ack::{AckError, ErrorCode, ErrorLocation, ErrorSeverity};
use crate::definitions::{ComponentDef, Definitions, FieldDef, SegmentDef, Version};
use crate::delimiters::Delimiters;
use crate::message::{Message, Parts, Segment, Value};
use crate::structure::{Compiled, GroupTree, UnexpectedKind, short};

/// How serious an issue is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IssueSeverity {
    /// Worth knowing; the message is valid.
    Warning,
    /// The message does not conform.
    Error,
}

impl IssueSeverity {
    /// `"error"` or `"warning"`.
    pub fn as_str(self) -> &'static str {
        match self {
            IssueSeverity::Error => "error",
            IssueSeverity::Warning => "warning",
        }
    }
}

/// Which rule an issue comes from; a [`Profile`] sets the severity of each (or ignores it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Rule {
    /// A required segment or group is missing.
    MissingSegment,
    /// A segment stands where the structure does not allow it (wrong order, or repeated where it may not
    /// repeat), or its identifier is not defined by the version.
    UnexpectedSegment,
    /// A Z-segment (locally defined).
    ZSegment,
    /// More than one member of a choice group.
    Choice,
    /// A segment or group repeats more often than its maximum.
    TooManyRepetitions,
    /// A required field is empty.
    RequiredField,
    /// A field repeats but may not (or more often than its maximum).
    FieldRepetition,
    /// A value is not of its primitive data type (NM, SI, DT, DTM/TS, TM).
    DataType,
    /// An ID value not in its HL7 table.
    TableValueId,
    /// An IS, CE, CWE... value not in the HL7 table that lists its codes.
    TableValue,
    /// A value longer than the version's maximum length (2.1-2.6).
    Length,
    /// More fields than the segment defines.
    ExtraField,
    /// A value in a field the version has withdrawn (kept for backward compatibility only).
    Withdrawn,
    /// The message structure could not be resolved (read as a generic message).
    UnknownStructure,
    /// MSH-12 names no version we have definitions for (the default version was used).
    UnknownVersion,
}

impl Rule {
    /// Every rule.
    pub const ALL: [Rule; 15] = [
        Rule::MissingSegment,
        Rule::UnexpectedSegment,
        Rule::ZSegment,
        Rule::Choice,
        Rule::TooManyRepetitions,
        Rule::RequiredField,
        Rule::FieldRepetition,
        Rule::DataType,
        Rule::TableValueId,
        Rule::TableValue,
        Rule::Length,
        Rule::ExtraField,
        Rule::Withdrawn,
        Rule::UnknownStructure,
        Rule::UnknownVersion,
    ];

    /// The rule's name in configuration files: `missing-segment`, `table-value`...
    pub fn name(self) -> &'static str {
        match self {
            Rule::MissingSegment => "missing-segment",
            Rule::UnexpectedSegment => "unexpected-segment",
            Rule::ZSegment => "z-segment",
            Rule::Choice => "choice",
            Rule::TooManyRepetitions => "too-many-repetitions",
            Rule::RequiredField => "required-field",
            Rule::FieldRepetition => "field-repetition",
            Rule::DataType => "data-type",
            Rule::TableValueId => "table-value-id",
            Rule::TableValue => "table-value",
            Rule::Length => "length",
            Rule::ExtraField => "extra-field",
            Rule::Withdrawn => "withdrawn",
            Rule::UnknownStructure => "unknown-structure",
            Rule::UnknownVersion => "unknown-version",
        }
    }

    /// The rule of a configuration name.
    pub fn from_name(name: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The HL7 table 0357 code of the rule's issues.
    pub fn code(self) -> ErrorCode {
        match self {
            Rule::MissingSegment
            | Rule::UnexpectedSegment
            | Rule::ZSegment
            | Rule::Choice
            | Rule::TooManyRepetitions => ErrorCode::SegmentSequenceError,
            Rule::RequiredField => ErrorCode::RequiredFieldMissing,
            Rule::FieldRepetition | Rule::DataType | Rule::ExtraField | Rule::Withdrawn => {
                ErrorCode::DataTypeError
            }
            Rule::TableValueId | Rule::TableValue => ErrorCode::TableValueNotFound,
            Rule::Length => ErrorCode::ValueTooLong,
            Rule::UnknownStructure => ErrorCode::UnsupportedMessageType,
            Rule::UnknownVersion => ErrorCode::UnsupportedVersionId,
        }
    }

    /// The severity in the lenient (default) and strict profiles.
    fn default_severity(self, strict: bool) -> Option<IssueSeverity> {
        use IssueSeverity::{Error, Warning};
        match self {
            Rule::MissingSegment
            | Rule::UnexpectedSegment
            | Rule::Choice
            | Rule::TooManyRepetitions
            | Rule::RequiredField
            | Rule::FieldRepetition
            | Rule::DataType
            | Rule::TableValueId => Some(Error),
            Rule::ZSegment
            | Rule::TableValue
            | Rule::Length
            | Rule::ExtraField
            | Rule::Withdrawn => Some(if strict { Error } else { Warning }),
            Rule::UnknownStructure | Rule::UnknownVersion => Some(Warning),
        }
    }
}

/// What counts as an error: a strict or lenient default per rule, then overrides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// Strict: Z-segments, table values of user tables, lengths and extra fields are errors, not warnings.
    pub strict: bool,
    /// Per rule: `Some(severity)` to change it, `None` to ignore the rule.
    pub overrides: Vec<(Rule, Option<IssueSeverity>)>,
}

impl Profile {
    /// The lenient default.
    pub fn lenient() -> Profile {
        Profile::default()
    }

    /// The strict default.
    pub fn strict() -> Profile {
        Profile {
            strict: true,
            overrides: Vec::new(),
        }
    }

    /// Sets the severity of a rule (`None` ignores it); the last setting of a rule wins.
    pub fn with(mut self, rule: Rule, severity: Option<IssueSeverity>) -> Profile {
        self.overrides.push((rule, severity));
        self
    }

    /// The severity of a rule under this profile; `None` when it is ignored.
    pub fn severity(&self, rule: Rule) -> Option<IssueSeverity> {
        self.overrides
            .iter()
            .rev()
            .find(|(r, _)| *r == rule)
            .map_or_else(|| rule.default_severity(self.strict), |(_, s)| *s)
    }
}

/// One finding of [`validate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    /// How serious it is.
    pub severity: IssueSeverity,
    /// The rule it comes from.
    pub rule: Rule,
    /// HAPI-style path of the fault: `/PATIENT_RESULT/PATIENT/PID-5`, `/PATIENT_RESULT/ORDER_OBSERVATION(1)/OBX(2)-5`.
    pub path: String,
    /// For people.
    pub message: String,
    /// Where it is, for an ERR segment (ERR-2): segment, its occurrence in the message, field...
    pub location: ErrorLocation,
}

impl Issue {
    /// The HL7 table 0357 code.
    pub fn code(&self) -> ErrorCode {
        self.rule.code()
    }

    /// The ERR segment content for an acknowledgement.
    pub fn to_ack_error(&self) -> AckError {
        AckError {
            code: self.code(),
            severity: match self.severity {
                IssueSeverity::Error => ErrorSeverity::Error,
                IssueSeverity::Warning => ErrorSeverity::Warning,
            },
            location: self.location,
            text: self.message.clone(),
        }
    }
}

/// The result of [`validate`]: the structure and version used, and the issues in message order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The message structure id (`ORU_R01`), or `None` when it could not be resolved.
    pub structure: Option<String>,
    /// The version whose definitions were used.
    pub version: crate::definitions::Version,
    /// What was found.
    pub issues: Vec<Issue>,
}

impl Report {
    /// True when no issue is an error.
    pub fn is_valid(&self) -> bool {
        !self
            .issues
            .iter()
            .any(|i| i.severity == IssueSeverity::Error)
    }

    /// The number of issues of a severity.
    pub fn count(&self, severity: IssueSeverity) -> usize {
        self.issues
            .iter()
            .filter(|i| i.severity == severity)
            .count()
    }
}

/// What `format!` writes for plain `{}` arguments (text and unsigned numbers), without going through the
/// formatting machinery: validation writes a message and a path for every issue, and a message with many issues
/// spends most of its time there.
macro_rules! text {
    ($($part:expr),+ $(,)?) => {{
        let mut out = String::with_capacity(96);
        $( TextPart::push_to(&$part, &mut out); )+
        out
    }};
}

/// An argument of [`text!`].
trait TextPart {
    fn push_to(&self, out: &mut String);
}

impl TextPart for str {
    fn push_to(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl TextPart for Box<str> {
    fn push_to(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl TextPart for String {
    fn push_to(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl<T: TextPart + ?Sized> TextPart for &T {
    fn push_to(&self, out: &mut String) {
        (**self).push_to(out);
    }
}

impl TextPart for usize {
    /// In decimal, as `Display` writes it.
    fn push_to(&self, out: &mut String) {
        // Field numbers, repetitions and lengths are nearly always below 100: written from a table.
        const PAIRS: &str = "00010203040506070809101112131415161718192021222324252627282930313233343536373839\
                             40414243444546474849505152535455565758596061626364656667686970717273747576777879\
                             8081828384858687888990919293949596979899";
        match *self {
            n @ 0..10 => return out.push_str(&PAIRS[2 * n + 1..2 * n + 2]),
            n @ 10..100 => return out.push_str(&PAIRS[2 * n..2 * n + 2]),
            _ => {}
        }
        let mut digits = [0u8; 20];
        let mut n = *self;
        let mut start = digits.len();
        loop {
            start -= 1;
            digits[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        out.extend(digits[start..].iter().map(|&d| char::from(d)));
    }
}

impl TextPart for u32 {
    fn push_to(&self, out: &mut String) {
        (*self as usize).push_to(out);
    }
}

/// Most issues one message reports: a hostile message with a fault in every one of 100,000 segments must not
/// produce an unbounded report.
pub const MAX_ISSUES: usize = 1000;

/// Validates a message against its version's definitions under a profile.
///
/// ```
/// use hl7v2::{Message, Profile, validate};
///
/// let msg = Message::parse(b"MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|1|P|2.5\rEVN|A01|2024\rPID|1||7||DOE\r");
/// let report = validate(&msg, &Profile::lenient());
/// assert!(!report.is_valid());
/// // PV1 is required in ADT_A01; EVN-2 is a timestamp of at least four digits.
/// assert!(report.issues.iter().any(|i| i.code().code() == 100 && i.message.contains("PV1")));
/// ```
pub fn validate(msg: &Message<'_>, profile: &Profile) -> Report {
    let tree = msg.group_tree();
    let defs = tree.version().definitions();
    let mut v = Validator {
        msg,
        tree,
        defs,
        plans: plans(defs),
        profile,
        issues: Vec::new(),
        order: OrderKeys::default(),
        classes: ByteClasses::new(msg.delimiters()),
        occurrences: OnceCell::new(),
    };
    v.header();
    v.structure();
    v.fields();
    // Issues are found by rule, then by segment: put them in message order (a stable sort, so issues of one
    // segment keep their order), unless they already are.
    let issues = if v.order.iter().is_sorted() {
        v.issues
    } else {
        let mut keyed: Vec<(usize, Issue)> = v.order.iter().zip(v.issues).collect();
        keyed.sort_by_key(|(k, _)| *k);
        keyed.into_iter().map(|(_, i)| i).collect()
    };
    Report {
        structure: tree.structure_id().map(str::to_owned),
        version: tree.version(),
        issues,
    }
}

/// Per issue, the index of the segment it belongs to: the first few in place (a message has a few issues, and
/// the vector would cost an allocation for each report), the others in a vector.
#[derive(Default)]
struct OrderKeys {
    first: [usize; 8],
    len: usize,
    more: Vec<usize>,
}

impl OrderKeys {
    fn push(&mut self, key: usize) {
        match self.first.get_mut(self.len) {
            Some(slot) => *slot = key,
            None => self.more.push(key),
        }
        self.len += 1;
    }

    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.first[..self.len.min(self.first.len())]
            .iter()
            .chain(&self.more)
            .copied()
    }
}

/// Per segment, its 1-based occurrence among segments with its identifier (ERR-2.2).
fn occurrences(msg: &Message<'_>) -> Vec<usize> {
    let mut occurrences = Vec::with_capacity(msg.segment_count());
    let mut seen: Vec<(&[u8], usize)> = Vec::new();
    for seg in msg.segments() {
        let id = seg.id_bytes();
        let n = match seen.iter_mut().find(|(s, _)| *s == id) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                seen.push((id, 1));
                1
            }
        };
        occurrences.push(n);
    }
    occurrences
}

struct Validator<'v, 'a> {
    msg: &'v Message<'a>,
    tree: &'v GroupTree,
    defs: &'static Definitions,
    plans: &'static Plans,
    profile: &'v Profile,
    issues: Vec<Issue>,
    /// Per issue, the index of the segment it belongs to (issues are reported in message order).
    order: OrderKeys,
    /// The message's delimiters as byte classes, for [`scan_field`].
    classes: ByteClasses,
    /// Per segment, its 1-based occurrence among segments with its identifier (ERR-2.2): counted for the first
    /// issue, so a clean message does not pay for it.
    occurrences: OnceCell<Vec<usize>>,
}

impl Validator<'_, '_> {
    fn report(
        &mut self,
        rule: Rule,
        order: usize,
        path: String,
        location: ErrorLocation,
        message: String,
    ) {
        let Some(severity) = self.profile.severity(rule) else {
            return;
        };
        if self.issues.len() >= MAX_ISSUES {
            return;
        }
        self.issues.push(Issue {
            severity,
            rule,
            path,
            message,
            location,
        });
        self.order.push(order);
    }

    fn location(
        &self,
        index: usize,
        field: usize,
        repetition: usize,
        component: usize,
    ) -> ErrorLocation {
        let mut segment_id = [0u8; 3];
        if let Some(seg) = self.msg.segment(index) {
            for (d, s) in segment_id.iter_mut().zip(seg.id_bytes()) {
                *d = *s;
            }
        }
        ErrorLocation {
            segment_id,
            sequence: self.occurrence(index),
            field,
            repetition,
            component,
            subcomponent: 0,
        }
    }

    /// The 1-based occurrence of the segment at `index` among segments with its identifier (ERR-2.2): counted in
    /// place in a message of a few dozen segments, through a table counted once in a larger one.
    fn occurrence(&self, index: usize) -> usize {
        if self.msg.segment_count() > 64 {
            return self
                .occurrences
                .get_or_init(|| occurrences(self.msg))
                .get(index)
                .copied()
                .unwrap_or(0);
        }
        let Some(id) = self.msg.segment(index).map(|s| s.id_bytes()) else {
            return 0;
        };
        // Identifiers compared in place (`==` on slices calls `memcmp`).
        let same =
            |other: &[u8]| other.len() == id.len() && other.iter().zip(id).all(|(a, b)| a == b);
        self.msg
            .segments()
            .take(index + 1)
            .filter(|s| same(s.id_bytes()))
            .count()
    }

    /// Version and structure: what could not be resolved.
    fn header(&mut self) {
        let msh = self.msg.segments().find(|s| s.id_bytes() == b"MSH");
        // Borrowed unless decoding changed the text.
        let text = |f: usize| -> Cow<'_, str> {
            msh.and_then(|m| m.field(f))
                .map(|v| v.text())
                .unwrap_or_default()
        };
        let version = text(12);
        let version = version.split('^').next().unwrap_or("").trim();
        if crate::definitions::Version::parse(version).is_none() {
            let used = self.tree.version().as_str();
            let message = if version.is_empty() {
                format!("MSH-12 gives no version; read as {used}")
            } else {
                // Quoted to a few dozen characters: the field may be megabytes long.
                format!(
                    "version {} is not one of 2.1-2.8.2; read as {used}",
                    quote(version)
                )
            };
            self.report(
                Rule::UnknownVersion,
                0,
                "/MSH-12".into(),
                self.location(0, 12, 1, 0),
                message,
            );
        }
        if let Some(id) = self.tree.structure_id()
            && self.tree.version() != self.tree.declared_version()
        {
            let message = format!(
                "version {} has no message structure for {}; read with {id} of version {}",
                self.tree.declared_version().as_str(),
                quote(&text(9)),
                self.tree.version().as_str()
            );
            self.report(
                Rule::UnknownStructure,
                0,
                "/MSH-9".into(),
                self.location(0, 9, 1, 0),
                message,
            );
        }
        if self.tree.structure_id().is_none() {
            let kind = text(9);
            let message = if kind.is_empty() {
                "MSH-9 gives no message type: the message is read as a generic message".to_owned()
            } else {
                format!(
                    "version {} has no message structure for {}: the message is read as a generic message",
                    self.tree.version().as_str(),
                    quote(&kind)
                )
            };
            self.report(
                Rule::UnknownStructure,
                0,
                "/MSH-9".into(),
                self.location(0, 9, 1, 0),
                message,
            );
        }
    }

    /// Segments and groups: missing, unexpected, too many, choices.
    fn structure(&mut self) {
        let unexpected: Vec<_> = self.tree.unexpected().to_vec();
        for u in unexpected {
            let id = self
                .msg
                .segment(u.segment_index)
                .map(|s| s.id().to_owned())
                .unwrap_or_default();
            let (rule, message) = match u.kind {
                UnexpectedKind::ZSegment => (
                    Rule::ZSegment,
                    format!("Z-segment {id} is not part of the standard structure"),
                ),
                UnexpectedKind::NotAllowedHere => (
                    Rule::UnexpectedSegment,
                    format!(
                        "segment {id} is not allowed here in {} (out of order, or repeated where it may not repeat)",
                        self.structure_name()
                    ),
                ),
                UnexpectedKind::UnknownSegment => (
                    Rule::UnexpectedSegment,
                    format!(
                        "segment {id} is not defined in version {}",
                        self.tree.version().as_str()
                    ),
                ),
            };
            let loc = self.location(u.segment_index, 0, 0, 0);
            self.report(rule, u.segment_index, short(&u.path), loc, message);
        }
        let Some(compiled) = self.tree.compiled() else {
            return;
        };
        self.cardinality(compiled);
    }

    fn structure_name(&self) -> String {
        self.tree.structure_id().unwrap_or("the message").to_owned()
    }

    fn cardinality(&mut self, c: &'static Compiled) {
        let tree = self.tree;
        let groups = tree.group_instances().len();
        // (group instance, child node), one entry per occurrence, sorted: a child's count is the length of its run.
        // On the stack for a message of a few dozen segments and groups (most), else on the heap.
        let entries = tree
            .placements()
            .map(|(group, node, _)| (group, node))
            .chain(
                tree.group_instances()
                    .skip(1)
                    .map(|(node, parent, _)| (parent, node)),
            );
        let n = tree.placements().len() + groups.saturating_sub(1);
        let mut small = [(0u32, 0u32); 64];
        let mut large = Vec::new();
        let counts: &mut [(u32, u32)] = if n <= small.len() {
            for (slot, e) in small.iter_mut().zip(entries) {
                *slot = e;
            }
            &mut small[..n]
        } else {
            large.extend(entries);
            &mut large
        };
        // The last segment index in each group instance: issues about it are reported there. The message's is its
        // last segment; the others' are counted for the first issue that needs them.
        let last_in_groups: OnceCell<Vec<usize>> = OnceCell::new();
        let last_in = |g: usize| {
            if g == 0 {
                return tree.placements().len().saturating_sub(1);
            }
            last_in_groups.get_or_init(|| {
                let mut last = vec![0; groups];
                for (i, (group, _, _)) in tree.placements().enumerate() {
                    let mut g = group;
                    loop {
                        last[g as usize] = last[g as usize].max(i);
                        if g == 0 {
                            break;
                        }
                        g = tree.group_parent(g);
                    }
                }
                last
            })[g]
        };
        counts.sort_unstable();
        let counts: &[(u32, u32)] = counts;
        // Group instances in order, and each one's children in order (their node indexes are contiguous and
        // increasing), visit the keys in sorted order: the runs are read in one pass over `counts`.
        let mut at = 0;
        let mut count_of = |key: (u32, u32)| {
            while counts.get(at).is_some_and(|k| *k < key) {
                at += 1;
            }
            let start = at;
            while counts.get(at) == Some(&key) {
                at += 1;
            }
            (at - start) as u32
        };
        for (g, (node, _, _)) in tree.group_instances().enumerate() {
            let group = &c.nodes[node as usize];
            let mut choices: Vec<(u32, Vec<&str>, u32)> = Vec::new();
            for child in group.children.clone() {
                let def = &c.nodes[child as usize];
                if def.choice.is_none() && def.min == 0 && def.max.is_none() {
                    // Optional and unbounded: nothing to report, whatever its count.
                    continue;
                }
                let n = count_of((g as u32, child));
                if let Some(choice) = def.choice {
                    match choices.iter_mut().find(|(id, _, _)| *id == choice) {
                        Some((_, names, present)) => {
                            names.push(&def.name);
                            *present += u32::from(n > 0);
                        }
                        None => choices.push((choice, vec![&def.name], u32::from(n > 0))),
                    }
                    continue;
                }
                let kind = if def.is_group() { "group" } else { "segment" };
                if n == 0 && def.min > 0 {
                    let path = self.child_path(g as u32, &def.name);
                    let loc = self.missing_location(def);
                    let message = if g == 0 {
                        text!("required ", kind, " ", def.name, " is missing")
                    } else {
                        text!(
                            "required ",
                            kind,
                            " ",
                            def.name,
                            " is missing in ",
                            tree.short_group_path(g as u32)
                        )
                    };
                    self.report(Rule::MissingSegment, last_in(g), path, loc, message);
                } else if def.max.is_some_and(|m| n > m) {
                    let path = self.child_path(g as u32, &def.name);
                    let loc = self.missing_location(def);
                    let message = format!(
                        "{kind} {} occurs {n} times, at most {} allowed",
                        def.name,
                        def.max.unwrap_or(0)
                    );
                    self.report(Rule::TooManyRepetitions, last_in(g), path, loc, message);
                }
            }
            for (choice, names, present) in choices {
                let required = c.choice_min.get(choice as usize).copied().unwrap_or(0) > 0;
                let path = || self.child_path(g as u32, names.first().copied().unwrap_or(""));
                if present > 1 {
                    let message = format!(
                        "only one of {} may be present, {present} are",
                        names.join(", ")
                    );
                    let path = path();
                    self.report(
                        Rule::Choice,
                        last_in(g),
                        path,
                        ErrorLocation::default(),
                        message,
                    );
                } else if present == 0 && required {
                    let message = format!("one of {} is required", names.join(", "));
                    let path = path();
                    self.report(
                        Rule::MissingSegment,
                        last_in(g),
                        path,
                        ErrorLocation::default(),
                        message,
                    );
                }
            }
        }
    }

    /// The short path of a child named `name` of group instance `g`: what [`short`] makes of the group's path, a
    /// `/` and the name.
    fn child_path(&self, g: u32, name: &str) -> String {
        if name.contains(['(', ')']) {
            return short(&format!("{}/{name}", self.tree.group_path(g)));
        }
        let group = self.tree.short_group_path(g);
        let mut path = String::with_capacity(group.len() + 1 + name.len());
        path.push_str(&group);
        path.push('/');
        path.push_str(name);
        path
    }

    fn missing_location(&self, def: &crate::structure::Node) -> ErrorLocation {
        let mut segment_id = [0u8; 3];
        if !def.is_group() {
            for (d, s) in segment_id.iter_mut().zip(def.name.bytes()) {
                *d = s;
            }
        }
        ErrorLocation {
            segment_id,
            ..ErrorLocation::default()
        }
    }

    /// Fields of every segment the version defines. Paths and messages are only written for issues: a clean
    /// message allocates nothing per field.
    fn fields(&mut self) {
        let msg = self.msg;
        for (i, seg) in msg.segments().enumerate() {
            if self.issues.len() >= MAX_ISSUES {
                return;
            }
            let Some(s) = self.defs.segment_index(seg.id_bytes()) else {
                continue;
            };
            let (checks, required) = (&self.plans.fields[s], &self.plans.required[s]);
            self.segment_fields(i, &seg, self.defs.segment_at(s), checks, required);
        }
    }

    /// The path of a value: the segment's group path, then field, repetition, component, subcomponent.
    fn value_path(&self, ctx: &Ctx) -> String {
        let mut p = self.tree.short_path_of(ctx.index);
        p.push('-');
        ctx.field.push_to(&mut p);
        if ctx.repetition > 1 {
            p.push('(');
            (ctx.repetition - 1).push_to(&mut p);
            p.push(')');
        }
        if ctx.component > 0 {
            p.push('-');
            ctx.component.push_to(&mut p);
            if ctx.subcomponent > 0 {
                p.push('-');
                ctx.subcomponent.push_to(&mut p);
            }
        }
        p
    }

    fn report_at(&mut self, rule: Rule, ctx: &Ctx, message: String) {
        if self.profile.severity(rule).is_none() {
            return;
        }
        let path = self.value_path(ctx);
        let loc = self.location(ctx.index, ctx.field, ctx.repetition, ctx.component);
        self.report(rule, ctx.index, path, loc, message);
    }

    fn segment_fields(
        &mut self,
        i: usize,
        seg: &Segment<'_, '_>,
        def: &'static SegmentDef,
        checks: &'static [Check],
        required: &'static [u64],
    ) {
        let defs = &def.fields;
        let count = seg.field_count();
        // Lengths are known for 2.1-2.6 only.
        let lengths = self.defs.version() <= Version::V2_6;
        let header = seg.is_header();
        // The spans of the fields the segment has (`seg.field(n)` is `None` past them), read directly.
        let sg = &self.msg.segs[i];
        let spans = self
            .msg
            .spans
            .get(sg.first as usize + 1..(sg.first + sg.count) as usize)
            .unwrap_or_default();
        let buf = self.msg.buf;
        // Most defined fields are empty and not required: the fields are taken 64 at a time as two bit sets, the
        // non-empty ones and the required ones (read from the plan, not from each field's definition), and only
        // fields in either are visited, in field order.
        for block in 0..defs.len().div_ceil(64) {
            let start = block * 64;
            let end = defs.len().min(start + 64);
            let mut present = 0u64;
            for (j, span) in spans
                .get(start..end.min(spans.len()))
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                present |= u64::from(!span.is_empty()) << j;
            }
            let mut visit = present | required.get(block).copied().unwrap_or(0);
            while visit != 0 {
                let j = visit.trailing_zeros() as usize;
                visit &= visit - 1;
                let k = start + j;
                if present >> j & 1 == 0 {
                    self.required(seg, i, k + 1, &defs[k]);
                } else if !(header && k < 2) {
                    let raw = spans[k].slice(buf);
                    self.field(seg, i, k + 1, raw, &defs[k], &checks[k], lengths);
                }
            }
        }
        if count > defs.len() {
            let extra =
                (defs.len() + 1..=count).find(|&n| seg.field(n).is_some_and(|v| !v.is_empty()));
            if let Some(n) = extra {
                let message = text!(
                    seg.id(),
                    " defines ",
                    defs.len(),
                    " fields in ",
                    self.defs.version().as_str(),
                    "; field ",
                    n,
                    " is beyond them"
                );
                let ctx = Ctx {
                    index: i,
                    field: n,
                    repetition: 1,
                    component: 0,
                    subcomponent: 0,
                };
                self.report_at(Rule::ExtraField, &ctx, message);
            }
        }
    }

    /// Checks field `n` (non-empty, `raw`) of the segment at index `i`: withdrawn, repeated, then each repetition.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn field(
        &mut self,
        seg: &Segment<'_, '_>,
        i: usize,
        n: usize,
        raw: &[u8],
        fdef: &FieldDef,
        check: &Check,
        lengths: bool,
    ) {
        let at = Ctx {
            index: i,
            field: n,
            repetition: 1,
            component: 0,
            subcomponent: 0,
        };
        if fdef.max == Some(0) {
            self.withdrawn(seg, &at, fdef);
            return;
        }
        let delims = *self.msg.delimiters();
        // One pass: the repetition separators (as many repetitions as `Value::parts` yields, plus one) and whether
        // the field is plain (see `Piece::Plain`).
        let (separators, plain) = scan_field(raw, &self.classes);
        if let Some(max) = fdef.max
            && separators >= max as usize
        {
            self.repeated(seg, &at, fdef, separators + 1, max);
        }
        let length = fdef.length.filter(|_| lengths);
        if length.is_none() && !check.active[0] {
            // Nothing to check in any repetition: not even split.
            return;
        }
        // Repetitions split in place when the field is plain (the common case), else through `Value`. (Split here
        // rather than through one iterator over both kinds: building that iterator from bytes cost a stalled load
        // per field.)
        if plain && separators == 0 {
            self.repetition(seg, &at, 0, Piece::Plain(raw), fdef, check, length);
        } else if plain {
            for (r, rep) in raw.split(|&b| b == delims.repetition).enumerate() {
                self.repetition(seg, &at, r, Piece::Plain(rep), fdef, check, length);
            }
        } else if let Some(value) = seg.field(n) {
            for (r, rep) in value.parts().enumerate() {
                self.repetition(seg, &at, r, Piece::Value(rep), fdef, check, length);
            }
        }
    }

    /// Checks repetition `r` (0-based) of a field: its length, then its value as its [`Check`] says.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn repetition(
        &mut self,
        seg: &Segment<'_, '_>,
        at: &Ctx,
        r: usize,
        rep: Piece<'_>,
        fdef: &FieldDef,
        check: &Check,
        length: Option<u32>,
    ) {
        if rep.is_empty() || rep.is_null() {
            return;
        }
        let ctx = Ctx {
            repetition: r + 1,
            ..*at
        };
        // Decoding can only shorten a value, so the raw length bounds the text's.
        if let Some(max) = length
            && rep.raw_len() > max as usize
        {
            let len = rep.text_len();
            if len > max as usize {
                self.too_long(seg, &ctx, fdef, len, max);
            }
        }
        if check.active[0] {
            match rep {
                Piece::Plain(raw) => self.plain(&ctx, raw, check, Def::Field(fdef)),
                Piece::Value(_) => self.value(&ctx, rep, check, Def::Field(fdef), 0),
            }
        }
    }

    /// Reports a value in a withdrawn field.
    #[cold]
    fn withdrawn(&mut self, seg: &Segment<'_, '_>, at: &Ctx, fdef: &FieldDef) {
        let message = text!(
            "field ",
            seg.id(),
            "-",
            at.field,
            " (",
            fdef.name,
            ") is withdrawn in ",
            self.defs.version().as_str(),
            "; its value is kept for backward compatibility only"
        );
        self.report_at(Rule::Withdrawn, at, message);
    }

    /// Reports a field repeated more often than its maximum.
    #[cold]
    fn repeated(
        &mut self,
        seg: &Segment<'_, '_>,
        at: &Ctx,
        fdef: &FieldDef,
        reps: usize,
        max: u32,
    ) {
        let n = at.field;
        let message = if max == 1 {
            text!(
                "field ",
                seg.id(),
                "-",
                n,
                " (",
                fdef.name,
                ") may not repeat; it has ",
                reps,
                " repetitions"
            )
        } else {
            text!(
                "field ",
                seg.id(),
                "-",
                n,
                " (",
                fdef.name,
                ") repeats ",
                reps,
                " times, at most ",
                max,
                " allowed"
            )
        };
        self.report_at(Rule::FieldRepetition, at, message);
    }

    /// Reports a repetition longer than its field's maximum length.
    #[cold]
    fn too_long(
        &mut self,
        seg: &Segment<'_, '_>,
        ctx: &Ctx,
        fdef: &FieldDef,
        len: usize,
        max: u32,
    ) {
        let message = text!(
            seg.id(),
            "-",
            ctx.field,
            " (",
            fdef.name,
            ") is ",
            len,
            " characters long, at most ",
            max,
            " allowed in ",
            self.defs.version().as_str()
        );
        self.report_at(Rule::Length, ctx, message);
    }

    /// Reports required field `n` of the segment at index `i` empty.
    #[cold]
    fn required(&mut self, seg: &Segment<'_, '_>, i: usize, n: usize, fdef: &FieldDef) {
        let message = text!(
            "required field ",
            seg.id(),
            "-",
            n,
            " (",
            fdef.name,
            ") is empty"
        );
        let at = Ctx {
            index: i,
            field: n,
            repetition: 1,
            component: 0,
            subcomponent: 0,
        };
        self.report_at(Rule::RequiredField, &at, message);
    }

    /// Checks one repetition (depth 0), component (1) or subcomponent (2) against its data type (recursing into
    /// components) and its table, as its [`Check`] says; `def` is its definition, for messages.
    fn value(&mut self, ctx: &Ctx, v: Piece<'_>, check: &Check, def: Def<'_>, depth: usize) {
        if !check.active[depth] {
            return;
        }
        let delims = self.msg.delimiters();
        match check.kind {
            CheckKind::Composite { coded, ts } => {
                // (Active only above depth 2: deeper, a composite is not split and nothing is checked.)
                // The table of a coded composite (CE, CWE, CNE...) applies to its identifier, component 1, when it
                // names HL7's table or no coding system at all.
                if let Some((t, slot)) = coded
                    && depth == 0
                {
                    self.coded(ctx, v, t, slot, def);
                }
                let Some(dt) = self.defs.data_type_at(check.type_index) else {
                    return;
                };
                let checks: &'static [Check] = &self.plans.components[check.type_index as usize];
                // One pass over the parts (components, or subcomponents of a component), beside their definitions,
                // up to the last one with something to check.
                let separator = (depth == 0).then_some(delims.component);
                let mut parts = v.parts(separator);
                // Parts are pulled one by one beside the checks (`last_part` is at most their number): a chain of
                // zips cost more than the work it carries.
                for (k, ccheck) in checks[..check.last_part[depth]].iter().enumerate() {
                    let Some(part) = parts.next() else { break };
                    if !ccheck.active[depth + 1] || part.is_empty() || part.is_null() {
                        continue;
                    }
                    let cdef = &dt.components[k];
                    let cdef = if ts && k == 0 {
                        Def::TimestampComponent(cdef)
                    } else {
                        Def::Component(cdef)
                    };
                    let sub = if depth == 0 {
                        Ctx {
                            component: k + 1,
                            ..*ctx
                        }
                    } else {
                        Ctx {
                            subcomponent: k + 1,
                            ..*ctx
                        }
                    };
                    self.value(&sub, part, ccheck, cdef, depth + 1);
                }
            }
            CheckKind::Primitive { syntax, table } => {
                let text = v.primitive_text(depth, delims);
                self.primitive(ctx, &text, syntax, table, def);
            }
        }
    }

    /// What [`Validator::value`] does at depth 0 for a plain repetition (most are), split in place: the same
    /// checks in the same order, without the generic walk's dispatch on the kind of piece at every step.
    fn plain(&mut self, ctx: &Ctx, raw: &[u8], check: &Check, def: Def<'_>) {
        let separator = self.msg.delimiters().component;
        match check.kind {
            CheckKind::Primitive { syntax, table } => {
                // A primitive's value is its first component.
                let end = raw.iter().position(|&b| b == separator);
                self.primitive(ctx, &raw[..end.unwrap_or(raw.len())], syntax, table, def);
            }
            CheckKind::Composite { coded, ts } => {
                if let Some((t, slot)) = coded {
                    self.coded(ctx, Piece::Plain(raw), t, slot, def);
                }
                let Some(dt) = self.defs.data_type_at(check.type_index) else {
                    return;
                };
                let plans: &'static Plans = self.plans;
                let checks = &plans.components[check.type_index as usize][..check.last_part[0]];
                let mut parts = raw.split(|&b| b == separator);
                for (k, ccheck) in checks.iter().enumerate() {
                    let Some(part) = parts.next() else { break };
                    if !ccheck.active[1] || part.is_empty() || part == b"\"\"" {
                        continue;
                    }
                    let cdef = &dt.components[k];
                    let cdef = if ts && k == 0 {
                        Def::TimestampComponent(cdef)
                    } else {
                        Def::Component(cdef)
                    };
                    let at = Ctx {
                        component: k + 1,
                        ..*ctx
                    };
                    match ccheck.kind {
                        CheckKind::Primitive { syntax, table } => {
                            self.primitive(&at, part, syntax, table, cdef);
                        }
                        CheckKind::Composite { ts, .. } => {
                            // A plain component has no subcomponent separator: it is its own first and only
                            // subcomponent. (A composite is never active at depth 2, so only a primitive one is
                            // checked.)
                            let subs = &plans.components[ccheck.type_index as usize];
                            let (Some(sdt), Some(scheck)) = (
                                self.defs.data_type_at(ccheck.type_index),
                                subs[..ccheck.last_part[1]].first(),
                            ) else {
                                continue;
                            };
                            if let CheckKind::Primitive { syntax, table } = scheck.kind
                                && scheck.active[2]
                            {
                                let sdef = &sdt.components[0];
                                let sdef = if ts {
                                    Def::TimestampComponent(sdef)
                                } else {
                                    Def::Component(sdef)
                                };
                                let at = Ctx {
                                    subcomponent: 1,
                                    ..at
                                };
                                self.primitive(&at, part, syntax, table, sdef);
                            }
                        }
                    }
                }
            }
        }
    }

    /// The table of a coded composite (CE, CWE, CNE...) applies to its identifier, component 1, when it names
    /// HL7's table `t` or no coding system at all.
    fn coded(&mut self, ctx: &Ctx, v: Piece<'_>, t: u16, slot: u32, def: Def<'_>) {
        let delims = self.msg.delimiters();
        let code = v.component_text(1, delims);
        let system = v.component_text(3, delims);
        let hl7 = system.is_empty()
            || (system.len() == 7 && system.starts_with("HL7") && system[3..].parse() == Ok(t));
        if hl7 && !code.is_empty() {
            let at = Ctx {
                component: 1,
                ..*ctx
            };
            self.table(&at, code.as_bytes(), t, slot, Rule::TableValue, def);
        }
    }

    /// Checks a primitive's text (UTF-8 bytes): its syntax, then its table.
    #[inline]
    fn primitive(
        &mut self,
        ctx: &Ctx,
        text: &[u8],
        syntax: Syntax,
        table: Option<(u16, u32, Rule)>,
        def: Def<'_>,
    ) {
        // Trailing spaces are padding, as receivers read them (a fixed-width sender's `N  `).
        let end = text.iter().rposition(|&b| b != b' ').map_or(0, |p| p + 1);
        let text = &text[..end];
        if text.is_empty() {
            return;
        }
        if syntax != Syntax::None {
            let text = utf8_text(text);
            if let Some(problem) = syntax.problem(&text) {
                self.bad_syntax(ctx, def, problem, &text);
                return;
            }
        }
        if let Some((t, slot, rule)) = table {
            self.table(ctx, text, t, slot, rule, def);
        }
    }

    /// Reports a value not of its primitive type's syntax. (Issues are reported apart from the walk, in cold
    /// functions, so that the walk stays small.)
    #[cold]
    fn bad_syntax(&mut self, ctx: &Ctx, def: Def<'_>, problem: &str, text: &str) {
        let message = format!(
            "{} ({}) {problem}: {}",
            self.field_ref(ctx),
            def.name(),
            quote(text)
        );
        self.report_at(Rule::DataType, ctx, message);
    }

    /// Checks a code (UTF-8 bytes) against the table at `slot` (this version's table number `table`, which lists
    /// codes).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn table(&mut self, ctx: &Ctx, code: &[u8], table: u16, slot: u32, rule: Rule, def: Def<'_>) {
        if !self.defs.table_at_contains(slot, code) {
            self.not_in_table(ctx, &utf8_text(code), table, slot, rule, def);
        }
    }

    /// Reports a code the table at `slot` does not list, unless the table admits it by pattern. Apart from
    /// [`Validator::table`], which runs for every coded value, so that the lookup stays small.
    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn not_in_table(
        &mut self,
        ctx: &Ctx,
        code: &str,
        table: u16,
        slot: u32,
        rule: Rule,
        def: Def<'_>,
    ) {
        if table_pattern(table, code) {
            return;
        }
        let (name, data_type) = (def.name(), def.data_type());
        let t = self.defs.table_at(slot);
        let at = self.field_ref(ctx);
        // The versions' tables are not cumulative in the sources (2.5.1's table 0125 lacks CWE, which later
        // versions list): a code another version lists is worth a warning, not an error.
        let elsewhere = Version::ALL.iter().find(|v| {
            v.definitions()
                .table(table)
                .is_some_and(|t| t.contains(code))
        });
        let (rule, message) = match elsewhere {
            Some(v) => (
                Rule::TableValue,
                format!(
                    "{at} ({name}, {data_type}) {} is not in HL7 table {table:04} ({}) of version {}, only in that of {}",
                    quote(code),
                    t.name,
                    self.defs.version().as_str(),
                    v.as_str()
                ),
            ),
            None => (
                rule,
                format!(
                    "{at} ({name}, {data_type}) {} is not in HL7 table {table:04} ({})",
                    quote(code),
                    t.name
                ),
            ),
        };
        self.report_at(rule, ctx, message);
    }

    /// `PID-5`, `OBX-6-1`: where a value is, as people write it.
    fn field_ref(&self, ctx: &Ctx) -> String {
        let id = self.msg.segment(ctx.index).map_or("", |s| s.id());
        match (ctx.component, ctx.subcomponent) {
            (0, _) => text!(id, "-", ctx.field),
            (c, 0) => text!(id, "-", ctx.field, "-", c),
            (c, sub) => text!(id, "-", ctx.field, "-", c, "-", sub),
        }
    }
}

/// What validation checks in a field, component or subcomponent, decided once per version from its definition
/// (data type and table): the walk then compares no data type names, and skips, unread, what can report nothing.
#[derive(Clone, Copy, Debug)]
struct Check {
    /// The data type's index in the version's data types (`u32::MAX`: not defined there).
    type_index: u32,
    kind: CheckKind,
    /// Whether anything can be reported for a value of this definition met at depth 0 (a repetition), 1 (a
    /// component) or 2 (a subcomponent).
    active: [bool; 3],
    /// For a composite met at depth 0 and 1: how many of its parts to walk (up to the last active one).
    last_part: [usize; 2],
}

#[derive(Clone, Copy, Debug)]
enum CheckKind {
    /// A data type with components. `coded`: for CE, CWE, CNE and CF with a table that lists codes, the table's
    /// number and slot (component 1 is checked against it). `ts`: the type is TS, whose component 1 is a
    /// timestamp whatever the sources say.
    Composite { coded: Option<(u16, u32)>, ts: bool },
    /// A primitive (or a data type the version does not define): its syntax and, for ID and IS with a table that
    /// lists codes, the table's number, slot and rule.
    Primitive {
        syntax: Syntax,
        table: Option<(u16, u32, Rule)>,
    },
}

/// The checks of one version's definitions.
#[derive(Debug)]
struct Plans {
    /// Per segment definition (in the definitions' order), per field.
    fields: Vec<Box<[Check]>>,
    /// Per segment definition, its required fields (`min > 0`) as a bit set: bit `k` for field `k + 1`.
    required: Vec<Box<[u64]>>,
    /// Per data type (in the definitions' order), per component.
    components: Vec<Box<[Check]>>,
}

/// The checks of a version, built on its first validation.
fn plans(defs: &'static Definitions) -> &'static Plans {
    static PLANS: [OnceLock<Plans>; 12] = [const { OnceLock::new() }; 12];
    PLANS[defs.version().index()].get_or_init(|| Plans::new(defs))
}

impl Plans {
    fn new(defs: &'static Definitions) -> Plans {
        // The checks without their activity first: a composite's activity depends on its components'.
        let components: Vec<Vec<Check>> = defs
            .data_types()
            .map(|dt| {
                dt.components
                    .iter()
                    .enumerate()
                    .map(|(k, c)| {
                        if &*dt.id == "TS" && k == 0 {
                            Check::new(defs, "DTM", u32::MAX, c.table)
                        } else {
                            Check::new(defs, &c.data_type, c.type_index, c.table)
                        }
                    })
                    .collect()
            })
            .collect();
        // A primitive is active at every depth, or at none; a composite is never active at depth 2 (it is not
        // split there); so its activity at depth 1 depends on its components' at depth 2, and at depth 0 on
        // theirs at depth 1.
        let primitive_active = |c: &Check| match c.kind {
            CheckKind::Primitive { syntax, table } => syntax != Syntax::None || table.is_some(),
            CheckKind::Composite { .. } => false,
        };
        let at_depth1: Vec<bool> = components
            .iter()
            .map(|cs| cs.iter().any(primitive_active))
            .collect();
        let active_below = |c: &Check, depth: usize| match c.kind {
            CheckKind::Primitive { .. } => primitive_active(c),
            CheckKind::Composite { .. } => depth == 1 && at_depth1[c.type_index as usize],
        };
        let at_depth0: Vec<bool> = components
            .iter()
            .map(|cs| cs.iter().any(|c| active_below(c, 1)))
            .collect();
        let finish = |c: &mut Check| match c.kind {
            CheckKind::Primitive { .. } => c.active = [primitive_active(c); 3],
            CheckKind::Composite { coded, .. } => {
                let t = c.type_index as usize;
                c.active = [coded.is_some() || at_depth0[t], at_depth1[t], false];
                for depth in 0..2 {
                    c.last_part[depth] = components[t]
                        .iter()
                        .rposition(|part| active_below(part, depth + 1))
                        .map_or(0, |k| k + 1);
                }
            }
        };
        let mut finished = components.clone();
        for c in finished.iter_mut().flatten() {
            finish(c);
        }
        let fields = defs
            .segments()
            .map(|seg| {
                seg.fields
                    .iter()
                    .map(|f| {
                        let mut c = Check::new(defs, &f.data_type, f.type_index, f.table);
                        finish(&mut c);
                        c
                    })
                    .collect()
            })
            .collect();
        let required = defs
            .segments()
            .map(|seg| {
                let mut bits = vec![0u64; seg.fields.len().div_ceil(64)];
                for (k, f) in seg.fields.iter().enumerate() {
                    if f.min > 0 {
                        bits[k / 64] |= 1 << (k % 64);
                    }
                }
                bits.into_boxed_slice()
            })
            .collect();
        Plans {
            fields,
            required,
            components: finished.into_iter().map(Vec::into_boxed_slice).collect(),
        }
    }
}

impl Check {
    /// The check of a definition of type `data_type` (resolved to `type_index`) with table `table`, its activity
    /// not yet set.
    fn new(defs: &Definitions, data_type: &str, type_index: u32, table: Option<u16>) -> Check {
        let dt = defs
            .data_type_at(type_index)
            .filter(|d| !d.components.is_empty());
        let kind = match dt {
            Some(dt) => CheckKind::Composite {
                coded: table
                    .filter(|_| {
                        matches!(data_type, "CE" | "CWE" | "CNE" | "CF") && dt.components.len() > 1
                    })
                    .and_then(|t| Some((t, defs.table_slot(t)?))),
                ts: data_type == "TS",
            },
            None => CheckKind::Primitive {
                syntax: Syntax::of(data_type),
                table: table
                    .filter(|_| matches!(data_type, "ID" | "IS"))
                    .and_then(|t| {
                        let rule = if data_type == "ID" {
                            Rule::TableValueId
                        } else {
                            Rule::TableValue
                        };
                        Some((t, defs.table_slot(t)?, rule))
                    }),
            },
        };
        Check {
            type_index,
            kind,
            active: [false; 3],
            last_part: [0; 2],
        }
    }
}

/// The syntax of a primitive data type that has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Syntax {
    /// No syntax to check (ST, ID, IS...).
    None,
    /// NM
    Number,
    /// SI
    SequenceId,
    /// DT
    Date,
    /// DTM, TS
    DateTime,
    /// TM
    Time,
}

impl Syntax {
    fn of(data_type: &str) -> Syntax {
        match data_type {
            "NM" => Syntax::Number,
            "SI" => Syntax::SequenceId,
            "DT" => Syntax::Date,
            "DTM" | "TS" => Syntax::DateTime,
            "TM" => Syntax::Time,
            _ => Syntax::None,
        }
    }

    /// Why `text` is not a valid value of this syntax; `None` when it is.
    fn problem(self, text: &str) -> Option<&'static str> {
        let t = text.trim_end();
        match self {
            Syntax::None => None,
            Syntax::Number => (!is_number(t)).then_some("is not a number (NM)"),
            Syntax::SequenceId => {
                (!(t.len() <= 10 && !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())))
                    .then_some("is not a sequence number (SI: a non-negative integer)")
            }
            Syntax::Date => (!is_date(t)).then_some("is not a date (DT: YYYY[MM[DD]])"),
            Syntax::DateTime => (!is_datetime(t))
                .then_some("is not a timestamp (YYYY[MM[DD[HH[MM[SS[.S[S[S[S]]]]]]]]][+/-ZZZZ])"),
            Syntax::Time => {
                (!is_time(t)).then_some("is not a time (TM: HH[MM[SS[.S[S[S[S]]]]]][+/-ZZZZ])")
            }
        }
    }
}

/// Codes a table admits by pattern rather than by listing: table 0396 (coding system) takes `HL7nnnn` (an HL7
/// table), `99zzz` (local) and `L` (local general code).
fn table_pattern(table: u16, code: &str) -> bool {
    table == 396
        && (code
            .strip_prefix("HL7")
            .is_some_and(|n| n.len() == 4 && n.bytes().all(|b| b.is_ascii_digit()))
            || (code.starts_with("99") && code.len() <= 6)
            || code == "L")
}

#[derive(Clone, Copy)]
struct Ctx {
    index: usize,
    field: usize,
    repetition: usize,
    component: usize,
    subcomponent: usize,
}

fn quote(text: &str) -> String {
    let mut out = String::new();
    let cut: String = text.chars().take(40).collect();
    let _ = write!(out, "{cut:?}");
    if cut.len() < text.len() {
        out.push('…');
    }
    out
}

/// The definition of what a check is about, for the names its issues give: read only when an issue is written
/// (the walk passes it on without touching it).
#[derive(Clone, Copy)]
enum Def<'d> {
    Field(&'d FieldDef),
    Component(&'d ComponentDef),
    /// TS.1: the sources type it ST before 2.5; it is a timestamp (DTM) in every version.
    TimestampComponent(&'d ComponentDef),
}

impl Def<'_> {
    fn name(&self) -> &str {
        match self {
            Def::Field(f) => &f.name,
            Def::Component(c) | Def::TimestampComponent(c) => &c.name,
        }
    }

    fn data_type(&self) -> &str {
        match self {
            Def::Field(f) => &f.data_type,
            Def::Component(c) => &c.data_type,
            Def::TimestampComponent(_) => "DTM",
        }
    }
}

/// A field, repetition, component or subcomponent being checked. Most fields are plain ASCII (which every
/// character set reads as itself) with neither escape sequences nor subcomponents: those are split and read in
/// place; the others go through [`Value`], which splits and decodes them.
#[derive(Clone, Copy)]
enum Piece<'a> {
    /// ASCII bytes without the escape or the subcomponent character: a field or repetition (split at the
    /// repetition and component separators), or a component or subcomponent of one (no delimiter left).
    Plain(&'a [u8]),
    Value(Value<'a>),
}

impl<'a> Piece<'a> {
    fn is_empty(&self) -> bool {
        match self {
            Piece::Plain(raw) => raw.is_empty(),
            Piece::Value(v) => v.is_empty(),
        }
    }

    /// HL7's explicit null, `""`.
    fn is_null(&self) -> bool {
        match self {
            Piece::Plain(raw) => *raw == b"\"\"",
            Piece::Value(v) => v.is_null(),
        }
    }

    /// The length of the raw bytes.
    fn raw_len(&self) -> usize {
        match self {
            Piece::Plain(raw) => raw.len(),
            Piece::Value(v) => v.raw().len(),
        }
    }

    /// Characters as a person counts them (escape sequences decoded): a plain piece's are its bytes.
    fn text_len(&self) -> usize {
        match self {
            Piece::Plain(raw) => raw.len(),
            Piece::Value(v) => text_len(v),
        }
    }

    /// The parts one level down, as [`Value::parts`] splits them: a field at its repetitions, a repetition at its
    /// components, a component at its subcomponents. `separator` is the one of this level for a plain piece
    /// (`None` for a component: a plain one has no subcomponents, it is its own only part).
    fn parts(self, separator: Option<u8>) -> PieceParts<'a> {
        match self {
            Piece::Plain(raw) => PieceParts::Plain {
                rest: Some(raw),
                separator,
            },
            Piece::Value(v) => PieceParts::Value(v.parts()),
        }
    }

    /// The text of component `n` of a repetition ("" when absent).
    fn component_text(self, n: usize, delims: &Delimiters) -> Cow<'a, str> {
        match self {
            Piece::Plain(_) => match self.parts(Some(delims.component)).nth(n - 1) {
                Some(Piece::Plain(raw)) => utf8_text(raw),
                _ => Cow::Borrowed(""),
            },
            Piece::Value(v) => v.component(n).map(|c| c.text()).unwrap_or_default(),
        }
    }

    /// The text of a primitive, as UTF-8 bytes: at depth 0 (a repetition) the first subcomponent of its first
    /// component, deeper the value itself. Bytes, because a table lookup needs no `&str`: the text of a plain
    /// piece is made a `&str` only where it is needed.
    fn primitive_text(self, depth: usize, delims: &Delimiters) -> Cow<'a, [u8]> {
        let text = match self {
            Piece::Plain(raw) if depth == 0 => {
                let end = raw.iter().position(|&b| b == delims.component);
                return Cow::Borrowed(&raw[..end.unwrap_or(raw.len())]);
            }
            Piece::Plain(raw) => return Cow::Borrowed(raw),
            Piece::Value(v) if depth == 0 => v
                .component(1)
                .and_then(|c| c.subcomponent(1))
                .map(|c| c.text())
                .unwrap_or_default(),
            Piece::Value(v) => v.text(),
        };
        match text {
            Cow::Borrowed(text) => Cow::Borrowed(text.as_bytes()),
            Cow::Owned(text) => Cow::Owned(text.into_bytes()),
        }
    }
}

/// What [`scan_field`] needs to know of each byte value: bit 0, the repetition separator; bit 1, a byte that keeps
/// a field from being a [`Piece::Plain`] (not ASCII, the escape or the subcomponent character).
struct ByteClasses([u8; 256]);

impl ByteClasses {
    fn new(delims: &Delimiters) -> ByteClasses {
        let mut classes = [0u8; 256];
        for c in &mut classes[0x80..] {
            *c = 2;
        }
        for special in [delims.escape, delims.subcomponent].into_iter().flatten() {
            classes[special as usize] |= 2;
        }
        classes[delims.repetition as usize] |= 1;
        ByteClasses(classes)
    }
}

/// A field's repetition separators, counted, and whether it can be read as a [`Piece::Plain`]: ASCII without the
/// escape or subcomponent character. One table lookup per byte (fields are too short for vector compares to pay).
fn scan_field(raw: &[u8], classes: &ByteClasses) -> (usize, bool) {
    let (separators, special) = raw.iter().fold((0usize, 0u8), |(n, special), &b| {
        let c = classes.0[b as usize];
        (n + usize::from(c & 1), special | c)
    });
    (separators, special & 2 == 0)
}

/// Bytes known to be UTF-8 (a plain piece's ASCII, or decoded text) as text: always borrowed.
fn utf8_text(raw: &[u8]) -> Cow<'_, str> {
    std::str::from_utf8(raw).map_or_else(|_| String::from_utf8_lossy(raw), Cow::Borrowed)
}

/// The parts of a [`Piece`].
enum PieceParts<'a> {
    /// Of a plain piece: split at `separator` (none: the piece is its own only part); `rest` is `None` once
    /// done.
    Plain {
        rest: Option<&'a [u8]>,
        separator: Option<u8>,
    },
    Value(Parts<'a>),
}

impl<'a> Iterator for PieceParts<'a> {
    type Item = Piece<'a>;

    fn next(&mut self) -> Option<Piece<'a>> {
        match self {
            PieceParts::Plain { rest, separator } => {
                let raw = (*rest)?;
                let sep = *separator;
                match sep.and_then(|s| raw.iter().position(|&b| b == s)) {
                    Some(end) => {
                        *rest = Some(&raw[end + 1..]);
                        Some(Piece::Plain(&raw[..end]))
                    }
                    None => {
                        *rest = None;
                        Some(Piece::Plain(raw))
                    }
                }
            }
            PieceParts::Value(parts) => parts.next().map(Piece::Value),
        }
    }
}

/// Characters of a value as a person counts them (escape sequences decoded).
fn text_len(v: &Value<'_>) -> usize {
    v.text().chars().count()
}

/// Why `text` is not a valid value of primitive type `data_type`; `None` when it is (or the type has no syntax to
/// check).
#[cfg(test)]
fn check_primitive(data_type: &str, text: &str) -> Option<&'static str> {
    Syntax::of(data_type).problem(text)
}

fn is_number(t: &str) -> bool {
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    let mut digits = 0;
    let mut dots = 0;
    for b in t.bytes() {
        match b {
            b'0'..=b'9' => digits += 1,
            b'.' => dots += 1,
            _ => return false,
        }
    }
    digits > 0 && dots <= 1
}

fn two(b: &[u8], at: usize) -> Option<u32> {
    let d = b.get(at..at + 2)?;
    d.iter()
        .all(u8::is_ascii_digit)
        .then(|| u32::from(d[0] - b'0') * 10 + u32::from(d[1] - b'0'))
}

fn is_date(t: &str) -> bool {
    let b = t.as_bytes();
    if !matches!(b.len(), 4 | 6 | 8) || !b.iter().all(u8::is_ascii_digit) {
        return false;
    }
    if b.len() >= 6 && !matches!(two(b, 4), Some(1..=12)) {
        return false;
    }
    if b.len() == 8 {
        // Four ASCII digits (checked above).
        let year = b[..4]
            .iter()
            .fold(0u32, |y, &d| y * 10 + u32::from(d - b'0'));
        let month = two(b, 4).unwrap_or(0);
        let days = match month {
            2 if (year.is_multiple_of(4) && !year.is_multiple_of(100))
                || year.is_multiple_of(400) =>
            {
                29
            }
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        if !matches!(two(b, 6), Some(d) if d >= 1 && d <= days) {
            return false;
        }
    }
    true
}

/// `HH[MM[SS[.S{1,4}]]]` starting at `b`, returns whether it is well formed (hour 0-23, minute and second 0-59).
fn is_clock(b: &[u8]) -> bool {
    let (main, frac) = match b.iter().position(|&c| c == b'.') {
        Some(p) => (&b[..p], Some(&b[p + 1..])),
        None => (b, None),
    };
    if !matches!(main.len(), 2 | 4 | 6) || !main.iter().all(u8::is_ascii_digit) {
        return false;
    }
    if !matches!(two(main, 0), Some(0..=23)) {
        return false;
    }
    if main.len() >= 4 && !matches!(two(main, 2), Some(0..=59)) {
        return false;
    }
    if main.len() == 6 && !matches!(two(main, 4), Some(0..=59)) {
        return false;
    }
    match frac {
        None => true,
        Some(f) => {
            main.len() == 6 && (1..=4).contains(&f.len()) && f.iter().all(u8::is_ascii_digit)
        }
    }
}

/// Splits a `+ZZZZ`/`-ZZZZ` offset off the end; `None` when an offset is there but malformed.
fn split_offset(t: &str) -> Option<(&str, bool)> {
    // Bytes, not a `char` pattern: `+` and `-` are ASCII, which no byte of a multi-byte character equals.
    match t.bytes().rposition(|b| b == b'+' || b == b'-') {
        None => Some((t, true)),
        Some(p) => {
            let z = &t.as_bytes()[p + 1..];
            let ok = z.len() == 4
                && z.iter().all(u8::is_ascii_digit)
                && matches!(two(z, 0), Some(0..=14))
                && matches!(two(z, 2), Some(0..=59));
            ok.then_some((&t[..p], true))
        }
    }
}

fn is_time(t: &str) -> bool {
    split_offset(t).is_some_and(|(main, _)| is_clock(main.as_bytes()))
}

fn is_datetime(t: &str) -> bool {
    let Some((main, _)) = split_offset(t) else {
        return false;
    };
    let b = main.as_bytes();
    // Only ASCII digits can be a timestamp; checking first also keeps the byte slicing below on character
    // boundaries (`2024010é` once panicked here).
    if !main.is_ascii() {
        return false;
    }
    let date_len = b.len().min(8);
    if !is_date(&main[..date_len]) {
        return false;
    }
    if b.len() <= 8 {
        return b.len() == date_len;
    }
    is_clock(&b[8..])
}

#[cfg(test)]
mod tests {
    use super::check_primitive;

    #[test]
    fn primitive_syntax() {
        for (ty, good) in [
            ("NM", "-1.5"),
            ("NM", "+12"),
            ("NM", ".5"),
            ("SI", "0"),
            ("DT", "2024"),
            ("DT", "202402"),
            ("DT", "20240229"),
            ("TM", "23"),
            ("TM", "2359"),
            ("TM", "235959.1234"),
            ("TM", "1200-0500"),
            ("DTM", "20240315143000.1+0100"),
        ] {
            assert_eq!(check_primitive(ty, good), None, "{ty} {good:?}");
        }
        for (ty, bad) in [
            ("DTM", "2024010é"),
            ("DTM", "20240101é"),
            ("NM", "1.2.3"),
            ("NM", "1e5"),
            ("NM", "-"),
            ("SI", "-1"),
            ("SI", "1.0"),
            ("DT", "2023022"),
            ("DT", "20230229"),
            ("DT", "20241301"),
            ("TM", "24"),
            ("TM", "2360"),
            ("TM", "235960"),
            ("TM", "2359.5"),
            ("TM", "1200+05"),
            ("DTM", "20240315143000.12345"),
        ] {
            assert!(
                check_primitive(ty, bad).is_some(),
                "{ty} {bad:?} should be rejected"
            );
        }
    }
}
