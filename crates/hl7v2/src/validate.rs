//! Validation of a message against its version's definitions: structure (from the group tree), fields
//! (required, repetition, primitive data types, lengths) and HL7 table values.
//!
//! Every issue carries a severity, an HL7 table 0357 code, the HAPI-style path of the fault and a sentence a
//! person understands. What counts as an error is a [`Profile`]: a strict or lenient default, then per-rule
//! overrides (an engine keeps one profile per message type or sender).

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::ack::{AckError, ErrorCode, ErrorLocation, ErrorSeverity};
use crate::definitions::{DataTypeDef, Definitions, FieldDef};
use crate::message::{Message, Segment, Value};
use crate::structure::{Compiled, GroupTree, UnexpectedKind};

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
    let mut v = Validator {
        msg,
        tree,
        defs,
        profile,
        issues: Vec::new(),
        order: Vec::new(),
        occurrences,
    };
    v.header();
    v.structure();
    v.fields();
    let mut keyed: Vec<(usize, Issue)> = v.order.into_iter().zip(v.issues).collect();
    keyed.sort_by_key(|(k, _)| *k);
    Report {
        structure: tree.structure_id().map(str::to_owned),
        version: tree.version(),
        issues: keyed.into_iter().map(|(_, i)| i).collect(),
    }
}

struct Validator<'v, 'a> {
    msg: &'v Message<'a>,
    tree: &'v GroupTree,
    defs: &'static Definitions,
    profile: &'v Profile,
    issues: Vec<Issue>,
    /// Per issue, the index of the segment it belongs to (issues are reported in message order).
    order: Vec<usize>,
    /// Per segment, its 1-based occurrence among segments with its identifier (ERR-2.2).
    occurrences: Vec<usize>,
}

/// A path in HAPI's short form: `(0)` indexes left out.
fn short(path: &str) -> String {
    path.replace("(0)", "")
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
            sequence: self.occurrences.get(index).copied().unwrap_or(0),
            field,
            repetition,
            component,
            subcomponent: 0,
        }
    }

    /// Version and structure: what could not be resolved.
    fn header(&mut self) {
        let msh = self.msg.segments().find(|s| s.id_bytes() == b"MSH");
        let text = |f: usize| {
            msh.and_then(|m| m.field(f))
                .map(|v| v.text().into_owned())
                .unwrap_or_default()
        };
        let version = text(12);
        let version = version.split('^').next().unwrap_or("").trim().to_owned();
        if crate::definitions::Version::parse(&version).is_none() {
            let used = self.tree.version().as_str();
            let message = if version.is_empty() {
                format!("MSH-12 gives no version; read as {used}")
            } else {
                format!("version {version:?} is not one of 2.1-2.8.2; read as {used}")
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
                "version {} has no message structure for {:?}; read with {id} of version {}",
                self.tree.declared_version().as_str(),
                text(9),
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
                    "version {} has no message structure for {kind:?}: the message is read as a generic message",
                    self.tree.version().as_str()
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
        let instances: Vec<(u32, u32, u32)> = self.tree.group_instances().collect();
        // (group instance, child node), one entry per occurrence, sorted: a child's count is the length of its run.
        let mut counts: Vec<(u32, u32)> =
            Vec::with_capacity(self.msg.segment_count() + instances.len());
        // The last segment index seen in each group instance (issues about it are reported there).
        let mut last_in: Vec<usize> = vec![0; instances.len()];
        for (i, (group, node, _)) in self.tree.placements().enumerate() {
            counts.push((group, node));
            let mut g = group;
            loop {
                last_in[g as usize] = last_in[g as usize].max(i);
                if g == 0 {
                    break;
                }
                g = instances[g as usize].1;
            }
        }
        counts.extend(
            instances
                .iter()
                .skip(1)
                .map(|&(node, parent, _)| (parent, node)),
        );
        counts.sort_unstable();
        let count_of = |key: (u32, u32)| {
            let start = counts.partition_point(|k| *k < key);
            counts[start..].iter().take_while(|k| **k == key).count() as u32
        };
        for (g, &(node, _, _)) in instances.iter().enumerate() {
            let group = &c.nodes[node as usize];
            // Paths are written only for issues.
            let base = || self.tree.group_path(g as u32);
            let mut choices: Vec<(u32, Vec<&str>, u32)> = Vec::new();
            for child in group.children.clone() {
                let def = &c.nodes[child as usize];
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
                    let base = base();
                    let path = short(&format!("{base}/{}", def.name));
                    let loc = self.missing_location(def);
                    let message = format!(
                        "required {kind} {} is missing{}",
                        def.name,
                        if base.is_empty() {
                            String::new()
                        } else {
                            format!(" in {}", short(&base))
                        }
                    );
                    self.report(Rule::MissingSegment, last_in[g], path, loc, message);
                } else if def.max.is_some_and(|m| n > m) {
                    let path = short(&format!("{}/{}", base(), def.name));
                    let loc = self.missing_location(def);
                    let message = format!(
                        "{kind} {} occurs {n} times, at most {} allowed",
                        def.name,
                        def.max.unwrap_or(0)
                    );
                    self.report(Rule::TooManyRepetitions, last_in[g], path, loc, message);
                }
            }
            for (choice, names, present) in choices {
                let required = c.choice_min.get(choice as usize).copied().unwrap_or(0) > 0;
                let path = || {
                    short(&format!(
                        "{}/{}",
                        base(),
                        names.first().copied().unwrap_or("")
                    ))
                };
                if present > 1 {
                    let message = format!(
                        "only one of {} may be present, {present} are",
                        names.join(", ")
                    );
                    let path = path();
                    self.report(
                        Rule::Choice,
                        last_in[g],
                        path,
                        ErrorLocation::default(),
                        message,
                    );
                } else if present == 0 && required {
                    let message = format!("one of {} is required", names.join(", "));
                    let path = path();
                    self.report(
                        Rule::MissingSegment,
                        last_in[g],
                        path,
                        ErrorLocation::default(),
                        message,
                    );
                }
            }
        }
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
            let Some(def) = self.defs.segment(seg.id()) else {
                continue;
            };
            self.segment_fields(i, &seg, &def.fields);
        }
    }

    /// The path of a value: the segment's group path, then field, repetition, component, subcomponent.
    fn value_path(&self, ctx: &Ctx) -> String {
        let mut p = short(&self.tree.path_of(ctx.index).unwrap_or_default());
        let _ = write!(p, "-{}", ctx.field);
        if ctx.repetition > 1 {
            let _ = write!(p, "({})", ctx.repetition - 1);
        }
        if ctx.component > 0 {
            let _ = write!(p, "-{}", ctx.component);
            if ctx.subcomponent > 0 {
                let _ = write!(p, "-{}", ctx.subcomponent);
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

    fn segment_fields(&mut self, i: usize, seg: &Segment<'_, '_>, defs: &'static [FieldDef]) {
        let count = seg.field_count();
        let version = self.defs.version();
        for (k, fdef) in defs.iter().enumerate() {
            let n = k + 1;
            let at = Ctx {
                index: i,
                field: n,
                repetition: 1,
                component: 0,
                subcomponent: 0,
            };
            let Some(value) = seg.field(n).filter(|v| !v.is_empty()) else {
                if fdef.min > 0 {
                    let message =
                        format!("required field {}-{n} ({}) is empty", seg.id(), fdef.name);
                    self.report_at(Rule::RequiredField, &at, message);
                }
                continue;
            };
            if seg.is_header() && n <= 2 {
                continue;
            }
            if fdef.max == Some(0) {
                let message = format!(
                    "field {}-{n} ({}) is withdrawn in {}; its value is kept for backward compatibility only",
                    seg.id(),
                    fdef.name,
                    version.as_str()
                );
                self.report_at(Rule::Withdrawn, &at, message);
                continue;
            }
            let reps = value.parts().count();
            if let Some(max) = fdef.max
                && reps > max as usize
            {
                let message = if max == 1 {
                    format!(
                        "field {}-{n} ({}) may not repeat; it has {reps} repetitions",
                        seg.id(),
                        fdef.name
                    )
                } else {
                    format!(
                        "field {}-{n} ({}) repeats {reps} times, at most {max} allowed",
                        seg.id(),
                        fdef.name
                    )
                };
                self.report_at(Rule::FieldRepetition, &at, message);
            }
            for (r, rep) in value.parts().enumerate() {
                if rep.is_empty() || rep.is_null() {
                    continue;
                }
                let ctx = Ctx {
                    repetition: r + 1,
                    ..at
                };
                // Decoding can only shorten a value, so the raw length bounds the text's.
                if let Some(max) = fdef.length
                    && version <= crate::definitions::Version::V2_6
                    && rep.raw().len() > max as usize
                {
                    let len = text_len(&rep);
                    if len > max as usize {
                        let message = format!(
                            "{}-{n} ({}) is {len} characters long, at most {max} allowed in {}",
                            seg.id(),
                            fdef.name,
                            version.as_str()
                        );
                        self.report_at(Rule::Length, &ctx, message);
                    }
                }
                self.value(
                    &ctx,
                    &rep,
                    &fdef.data_type,
                    fdef.type_index,
                    fdef.table,
                    &fdef.name,
                    0,
                );
            }
        }
        if count > defs.len() {
            let extra =
                (defs.len() + 1..=count).find(|&n| seg.field(n).is_some_and(|v| !v.is_empty()));
            if let Some(n) = extra {
                let message = format!(
                    "{} defines {} fields in {}; field {n} is beyond them",
                    seg.id(),
                    defs.len(),
                    version.as_str()
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

    /// Checks one repetition (depth 0), component (1) or subcomponent (2) against its data type (recursing into
    /// components) and its table. `type_index` is the data type resolved at decoding (`u32::MAX`: none).
    #[allow(clippy::too_many_arguments)]
    fn value(
        &mut self,
        ctx: &Ctx,
        v: &Value<'_>,
        data_type: &str,
        type_index: u32,
        table: Option<u16>,
        name: &str,
        depth: usize,
    ) {
        let dt: Option<&'static DataTypeDef> = self.defs.data_type_at(type_index);
        let composite = dt.is_some_and(|d| !d.components.is_empty());
        if let Some(dt) = dt.filter(|_| composite && depth < 2) {
            // The table of a coded composite (CE, CWE, CNE...) applies to its identifier, component 1, when it names
            // HL7's table or no coding system at all.
            if let Some(t) = table
                && depth == 0
                && matches!(data_type, "CE" | "CWE" | "CNE" | "CF")
            {
                let code = v.component(1).map(|c| c.text()).unwrap_or_default();
                let system = v.component(3).map(|c| c.text()).unwrap_or_default();
                let hl7 = system.is_empty()
                    || (system.len() == 7
                        && system.starts_with("HL7")
                        && system[3..].parse() == Ok(t));
                if hl7 && !code.is_empty() && dt.components.len() > 1 {
                    let at = Ctx {
                        component: 1,
                        ..*ctx
                    };
                    self.table(&at, &code, t, Rule::TableValue, name, data_type);
                }
            }
            // One pass over the parts (components, or subcomponents of a component), beside their definitions.
            for (k, (part, cdef)) in v.parts().zip(dt.components.iter()).enumerate() {
                if part.is_empty() || part.is_null() {
                    continue;
                }
                // The sources type TS.1 as ST before 2.5; it is a timestamp in every version.
                let (ctype, cindex): (&str, u32) = if data_type == "TS" && k == 0 {
                    ("DTM", u32::MAX)
                } else {
                    (&cdef.data_type, cdef.type_index)
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
                self.value(
                    &sub,
                    &part,
                    ctype,
                    cindex,
                    cdef.table,
                    &cdef.name,
                    depth + 1,
                );
            }
            return;
        }
        // A primitive (or a composite nested too deep to split further): its first part is the value.
        let text: Cow<'_, str> = if composite {
            v.component(1).map(|c| c.text()).unwrap_or_default()
        } else if depth == 0 {
            v.component(1)
                .and_then(|c| c.subcomponent(1))
                .map(|c| c.text())
                .unwrap_or_default()
        } else {
            v.text()
        };
        // Trailing spaces are padding, as receivers read them (a fixed-width sender's `N  `).
        let text = text.trim_end_matches(' ');
        if text.is_empty() {
            return;
        }
        let base = if composite { "" } else { data_type };
        if let Some(problem) = check_primitive(base, text) {
            let message = format!(
                "{} ({name}) {problem}: {}",
                self.field_ref(ctx),
                quote(text)
            );
            self.report_at(Rule::DataType, ctx, message);
            return;
        }
        if let Some(t) = table
            && matches!(base, "ID" | "IS")
        {
            let rule = if base == "ID" {
                Rule::TableValueId
            } else {
                Rule::TableValue
            };
            self.table(ctx, text, t, rule, name, data_type);
        }
    }

    fn table(
        &mut self,
        ctx: &Ctx,
        code: &str,
        table: u16,
        rule: Rule,
        name: &str,
        data_type: &str,
    ) {
        let Some(t) = self.defs.table(table) else {
            return;
        };
        if t.codes.is_empty() || t.contains(code) || table_pattern(table, code) {
            return;
        }
        let at = self.field_ref(ctx);
        // The versions' tables are not cumulative in the sources (2.5.1's table 0125 lacks CWE, which later
        // versions list): a code another version lists is worth a warning, not an error.
        let elsewhere = crate::definitions::Version::ALL.iter().find(|v| {
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
            (0, _) => format!("{id}-{}", ctx.field),
            (c, 0) => format!("{id}-{}-{c}", ctx.field),
            (c, sub) => format!("{id}-{}-{c}-{sub}", ctx.field),
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

/// Characters of a value as a person counts them (escape sequences decoded).
fn text_len(v: &Value<'_>) -> usize {
    v.text().chars().count()
}

/// Why `text` is not a valid value of primitive type `data_type`; `None` when it is (or the type has no syntax to
/// check).
pub(crate) fn check_primitive(data_type: &str, text: &str) -> Option<&'static str> {
    let t = text.trim_end();
    match data_type {
        "NM" => (!is_number(t)).then_some("is not a number (NM)"),
        "SI" => (!(t.len() <= 10 && !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())))
            .then_some("is not a sequence number (SI: a non-negative integer)"),
        "DT" => (!is_date(t)).then_some("is not a date (DT: YYYY[MM[DD]])"),
        "DTM" | "TS" => (!is_datetime(t))
            .then_some("is not a timestamp (YYYY[MM[DD[HH[MM[SS[.S[S[S[S]]]]]]]]][+/-ZZZZ])"),
        "TM" => (!is_time(t)).then_some("is not a time (TM: HH[MM[SS[.S[S[S[S]]]]]][+/-ZZZZ])"),
        _ => None,
    }
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
        let year: u32 = t[..4].parse().unwrap_or(0);
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
    match t.rfind(['+', '-']) {
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
    let date_len = b.len().min(8);
    let date_len = if b.len() > 8 { 8 } else { date_len };
    if !is_date(&main[..date_len.min(main.len())]) {
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
