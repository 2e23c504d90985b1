//! The fast path of the single-code operations (`$lookup`, `$subsumes`, `$validate-code`, `$translate` through
//! an implicit map): the common GET shapes answered straight from the provider or the compiled code system, the
//! answer written as JSON text without a `serde_json::Value` in between.
//!
//! It answers only what it can answer exactly as the general path does, byte for byte: a plain query (no
//! `tx-resource`, supplements, versions, displays to check, languages, ...), a code that is known, a code
//! system or value set of a simple shape. Everything else, errors included, returns `None`, and the caller
//! runs the general path. `tests/it/fast.rs` runs both paths over the codes of real releases and compares.

use crate::codesystem::{CodeSystem, Content};
use crate::context::Ctx;
use crate::error::TX_ISSUE_TYPE;
use crate::expand::vs_canonical;
use crate::params::Params;
use crate::provider::{CodeSystemProvider, Detail};
use crate::service::{Operation, Terminology};
use crate::validate::status_label;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;

/// The query parameters of a request, each name at most once (a repeated name goes to the general path).
struct Query<'q> {
    pairs: Vec<(&'q str, &'q str)>,
}

impl<'q> Query<'q> {
    /// The pairs of `query` other than `_format`-style ones, when every name is in `allowed` and none repeats.
    fn read<K: AsRef<str>, V: AsRef<str>>(
        query: &'q [(K, V)],
        allowed: &[&str],
    ) -> Option<Query<'q>> {
        let mut pairs: Vec<(&str, &str)> = Vec::with_capacity(query.len());
        for (k, v) in query {
            let k = k.as_ref();
            if k.starts_with('_') {
                continue;
            }
            if !allowed.contains(&k) || pairs.iter().any(|(n, _)| *n == k) {
                return None;
            }
            pairs.push((k, v.as_ref()));
        }
        Some(Query { pairs })
    }

    fn get(&self, name: &str) -> Option<&'q str> {
        self.pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }
}

/// A piece of JSON to write: a value, or text already in JSON.
pub(crate) enum Json<'a> {
    Value(&'a Value),
    Text(&'a str),
    /// A Coding: system, code, display.
    Coding(&'a str, &'a str, Option<&'a str>),
}

/// Appends `s` as a JSON string, escaped as `serde_json` escapes it. Displays and codes rarely hold a character
/// that needs escaping: those are copied in one piece after one pass over their bytes.
pub(crate) fn json_string(buf: &mut Vec<u8>, s: &str) {
    if !needs_escape(s) {
        buf.reserve(s.len() + 2);
        buf.push(b'"');
        buf.extend_from_slice(s.as_bytes());
        buf.push(b'"');
    } else {
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *buf, s);
    }
}

/// Appends the concatenation of `parts` as one JSON string (without making it first).
pub(crate) fn json_string_of(buf: &mut Vec<u8>, parts: &[&str]) {
    if parts.iter().all(|p| !needs_escape(p)) {
        buf.push(b'"');
        for p in parts {
            buf.extend_from_slice(p.as_bytes());
        }
        buf.push(b'"');
    } else {
        json_string(buf, &parts.concat());
    }
}

/// Whether JSON needs any character of `s` escaped (a control character, a quote or a backslash).
fn needs_escape(s: &str) -> bool {
    // A fold without an early exit: the compiler turns it into vector compares over 16-32 bytes at a time,
    // where `any` would test one byte per branch. Displays are tens of bytes.
    s.bytes().fold(false, |seen, b| {
        seen | (b < 0x20) | (b == b'"') | (b == b'\\')
    })
}

/// Appends `n` in decimal.
pub(crate) fn json_number(buf: &mut Vec<u8>, n: u64) {
    buf.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// JSON text of a `Parameters` resource, written as `serde_json` writes the `Value` the general path builds
/// (objects keep their insertion order).
pub(crate) struct Out {
    buf: Vec<u8>,
    first: bool,
}

impl Out {
    pub(crate) fn new() -> Out {
        Out::with_capacity(2048)
    }

    /// For an answer of about `bytes` (a lookup's answer runs to several kilobytes, and each doubling of the
    /// buffer copies what was written).
    pub(crate) fn with_capacity(bytes: usize) -> Out {
        let mut buf = Vec::with_capacity(bytes);
        buf.extend_from_slice(br#"{"resourceType":"Parameters","parameter":["#);
        Out { buf, first: true }
    }

    pub(crate) fn raw(&mut self, s: &str) {
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// A JSON string, escaped as `serde_json` escapes it.
    pub(crate) fn string(&mut self, s: &str) {
        json_string(&mut self.buf, s);
    }

    /// Any JSON value, as `serde_json` writes it.
    pub(crate) fn value(&mut self, v: &Value) {
        let _ = serde_json::to_writer(&mut self.buf, v);
    }

    pub(crate) fn json(&mut self, j: Json<'_>) {
        match j {
            Json::Value(v) => self.value(v),
            Json::Text(t) => self.raw(t),
            Json::Coding(system, code, display) => {
                self.raw(r#"{"system":"#);
                self.string(system);
                self.raw(r#","code":"#);
                self.string(code);
                if let Some(d) = display {
                    self.raw(r#","display":"#);
                    self.string(d);
                }
                self.raw("}");
            }
        }
    }

    /// Starts the next entry of `parameter`.
    pub(crate) fn entry(&mut self) {
        if !self.first {
            self.buf.push(b',');
        }
        self.first = false;
    }

    /// `{"name": name, key: "text"}`.
    pub(crate) fn param_str(&mut self, name: &str, key: &str, text: &str) {
        self.entry();
        self.raw(r#"{"name":"#);
        self.string(name);
        self.raw(",");
        self.string(key);
        self.raw(":");
        self.string(text);
        self.raw("}");
    }

    pub(crate) fn param_bool(&mut self, name: &str, b: bool) {
        self.entry();
        self.raw(r#"{"name":"#);
        self.string(name);
        self.raw(if b {
            r#","valueBoolean":true}"#
        } else {
            r#","valueBoolean":false}"#
        });
    }

    /// A `$lookup` designation entry, its parts in the general path's order; `use_` is the Coding's JSON.
    pub(crate) fn designation(
        &mut self,
        language: Option<&str>,
        source: Option<&str>,
        use_: Option<Json<'_>>,
        value: &str,
    ) {
        self.entry();
        self.raw(r#"{"name":"designation","part":["#);
        if let Some(l) = language {
            self.raw(r#"{"name":"language","valueCode":"#);
            self.string(l);
            self.raw("},");
        }
        if let Some(s) = source {
            self.raw(r#"{"name":"source","valueCanonical":"#);
            self.string(s);
            self.raw("},");
        }
        if let Some(u) = use_ {
            self.raw(r#"{"name":"use","valueCoding":"#);
            self.json(u);
            self.raw("},");
        }
        self.raw(r#"{"name":"value","valueString":"#);
        self.string(value);
        self.raw("}]}");
    }

    /// The start of a `$lookup` property entry (`{"name":"property","part":[{"name":"code",..}` and its
    /// `description` when given), up to the value part, which [`Self::property_value_end`] closes.
    pub(crate) fn property_start(&mut self, code: &str, description: Option<&str>) {
        self.entry();
        self.raw(r#"{"name":"property","part":[{"name":"code","valueCode":"#);
        self.string(code);
        self.raw("}");
        if let Some(d) = description {
            self.raw(r#",{"name":"description","valueString":"#);
            self.string(d);
            self.raw("}");
        }
        // The general path adds `name` to the value's object after the value, so it comes last.
        self.raw(",{");
    }

    /// Closes a property entry after its `"valueX":...` member.
    pub(crate) fn property_value_end(&mut self) {
        self.raw(r#","name":"value"}]}"#);
    }

    /// A property entry `code` whose value is a code (a parent, a child), with its description.
    pub(crate) fn property_code(&mut self, code: &str, value: &str, description: Option<&str>) {
        self.property_start(code, description);
        self.raw(r#""valueCode":"#);
        self.string(value);
        self.property_value_end();
    }

    /// A property entry `code` whose value is a boolean.
    pub(crate) fn property_bool(&mut self, code: &str, b: bool) {
        self.property_start(code, None);
        self.raw(if b {
            r#""valueBoolean":true"#
        } else {
            r#""valueBoolean":false"#
        });
        self.property_value_end();
    }

    pub(crate) fn finish(mut self) -> Vec<u8> {
        self.raw("]}");
        self.buf
    }
}

impl Terminology {
    /// Answers `op` from the fast path when the request (GET query pairs, the Accept-Language header) has a
    /// shape it handles: the JSON text of the answer, exactly what [`Terminology::run`] would give. `None` means
    /// "run the general path"; that is also how every error is answered.
    pub fn run_fast<K: AsRef<str>, V: AsRef<str>>(
        &self,
        op: Operation,
        query: &[(K, V)],
        accept_language: Option<&str>,
    ) -> Option<Vec<u8>> {
        // A language changes displays and designations: the general path knows how.
        if accept_language.is_some() {
            return None;
        }
        let ctx = self.plain_context();
        match op {
            Operation::Lookup => lookup(&ctx, &Query::read(query, &["system", "code"])?),
            Operation::Subsumes => {
                subsumes(&ctx, &Query::read(query, &["system", "codeA", "codeB"])?)
            }
            Operation::ValidateCs => validate_cs(&ctx, &Query::read(query, &["url", "code"])?),
            Operation::ValidateVs => {
                validate_vs(&ctx, &Query::read(query, &["url", "system", "code"])?)
            }
            Operation::Translate => {
                translate(&ctx, &Query::read(query, &["url", "system", "code"])?)
            }
            Operation::Expand => self.expand_fast(
                &Query::read(query, &["url", "count", "offset", "filter"])?,
                false,
            ),
            _ => None,
        }
    }

    /// `CodeSystem/$validate-code` of `code` in the code system `url` (no version), the verdict alone, when the
    /// fast path can give it: a valid code with the `display` of [`Terminology::run`]'s answer, a code the code
    /// system does not have with the answer's `message`, or a system not loaded. `None` for everything else (a
    /// code with a note, a fragment), which the general path answers. For callers that check many codes and
    /// read only the verdict, as the v2-to-FHIR converter does, without writing and reading the answer's JSON.
    pub fn code_verdict_fast(&self, url: &str, code: &str) -> Option<CodeVerdict> {
        let ctx = self.plain_context();
        if url.contains('|') {
            return None;
        }
        let Some(cs) = ctx.find_cs(url, None) else {
            // Nothing serves the system and no resource (a supplement at most) has its URL.
            return Some(CodeVerdict::UnknownSystem);
        };
        // A draft, experimental or deprecated code system (`status_label`) is answered here too, unlike in
        // `validate_cs`: its status adds only an information issue to the general answer (`status_issue`), which
        // is in neither its `display` nor its `message`. R4's own copies of THO code systems are drafts
        // (`provenance-participant-type` 4.0.1, which the v2-to-FHIR guide writes into every Provenance).
        match checked(&ctx, &cs, code) {
            Checked::Valid(valid) => Some(CodeVerdict::Valid {
                display: valid.display,
            }),
            Checked::Absent => {
                absent_code_message(&cs, code).map(|message| CodeVerdict::Unknown { message })
            }
            Checked::Other => None,
        }
    }

    /// [`Terminology::run_fast`] of `ValueSet/$expand` when its answer is already kept (a request seen before):
    /// `None` without evaluating anything otherwise. Work bounded by the request's size, whatever the value
    /// set: what an HTTP thread may do for an ECL implicit value set, whose first evaluation may take long.
    pub fn expand_seen<K: AsRef<str>, V: AsRef<str>>(
        &self,
        query: &[(K, V)],
        accept_language: Option<&str>,
    ) -> Option<Vec<u8>> {
        if accept_language.is_some() {
            return None;
        }
        self.expand_fast(
            &Query::read(query, &["url", "count", "offset", "filter"])?,
            true,
        )
    }

    /// `ValueSet/$expand` of a value set by `url`, with `count`, `offset` and `filter` at most: the general
    /// path's evaluation (from the same cache), its answer written as text.
    /// With `seen_only`, only an answer already kept (see [`Terminology::expand_seen`]).
    fn expand_fast(&self, q: &Query<'_>, seen_only: bool) -> Option<Vec<u8>> {
        let url = q.get("url")?;
        // `url|version` is the general path's (an implicit value set's URL may hold `|` in its ECL).
        if url.contains('|') && !url.contains("?fhir_vs") {
            return None;
        }
        let pairs: Vec<(String, String)> = q
            .pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let params = Params::from_query(&pairs);
        // The options these parameters give (`Options::from_params` of them: the others as for no parameters).
        let opts = crate::context::Options {
            filter: params.str("filter").filter(|s| !s.is_empty()),
            count: params.int("count").map(|n| n.max(0) as usize),
            offset: params.int("offset").map(|n| n.max(0) as usize),
            ..Default::default()
        };
        let ctx = self.context_of(crate::registry::Registry::new(), opts);
        // Parameters the value set states for its own expansion are the general path's to add.
        let vs = ctx.find_vs(url)?;
        if vs["compose"]["extension"].as_array().is_some_and(|a| {
            a.iter().any(|e| {
                e["url"] == "http://hl7.org/fhir/StructureDefinition/valueset-expansion-parameter"
            })
        }) {
            return None;
        }
        // Implicit value sets are never cached by the service (the provider caches what it evaluates).
        let implicit = url.contains("?fhir_vs");
        let cache = (!implicit).then_some(&self.expansions);
        // The answer's text depends on the value set (an implicit one's definition is dated when the provider
        // made it: a definition made anew is another key) and on these parameters as given (`count=010` is
        // echoed as 10, `count=x` as text), in any order.
        let date = if implicit { vs["date"].as_str() } else { None };
        let text_key = format!(
            "{url}|{date:?}|{:?}|{:?}|{:?}",
            q.get("count"),
            q.get("offset"),
            q.get("filter")
        );
        if seen_only {
            return self.expansion_texts.get(&text_key).map(|t| t.answer());
        }
        crate::expansion::expand_text(&ctx, &params, cache, &self.expansion_texts, Some(text_key))
    }
}

/// The code system `url` as the general path resolves it without version rules, supplements or a
/// `tx-resource`: the provider, else the newest version.
fn code_system(ctx: &Ctx<'_>, url: &str) -> Option<Arc<CodeSystem>> {
    if url.contains('|') {
        return None;
    }
    ctx.find_cs(url, None)
}

fn lookup(ctx: &Ctx<'_>, q: &Query<'_>) -> Option<Vec<u8>> {
    let code = q.get("code")?;
    let cs = code_system(ctx, q.get("system")?)?;
    if let Some(p) = &cs.provider {
        // A provider's text is its `lookup` answer, which for one that asks for the generic answer
        // (`lookup_codes`) is that answer over its concepts; the plain context applies no supplements.
        return p.lookup_text(code);
    }
    // A FHIR code system's answer, written as text: the general path's `concept_answer` without its `Value`.
    let i = cs.find(code)?;
    let display = ctx.display(&cs, &cs.concepts[i]);
    Some(crate::lookup::concept_answer_text(
        &cs,
        i,
        display.as_deref(),
    ))
}

fn subsumes(ctx: &Ctx<'_>, q: &Query<'_>) -> Option<Vec<u8>> {
    let (a, b) = (q.get("codeA")?, q.get("codeB")?);
    let cs = code_system(ctx, q.get("system")?)?;
    let outcome = match &cs.provider {
        Some(p) => p.subsumes(a, b).ok()?,
        None => {
            let (ia, ib) = (cs.find(a)?, cs.find(b)?);
            if ia == ib {
                "equivalent"
            } else if cs.subsumes(ia, ib) {
                "subsumes"
            } else if cs.subsumes(ib, ia) {
                "subsumed-by"
            } else {
                "not-subsumed"
            }
        }
    };
    let mut out = Out::new();
    out.param_str("outcome", "valueCode", outcome);
    Some(out.finish())
}

/// What `$validate-code` reports of a known code: its display (None when it has none), and for an inactive
/// concept of a code system that reports it, the warning's name for its status (`inactive`, `retired and
/// inactive`) with its `status` property when it has one.
/// The verdict of [`Terminology::code_verdict_fast`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodeVerdict {
    /// The code is valid.
    Valid {
        /// The answer's display of the code.
        display: Option<String>,
    },
    /// The code system does not have the code.
    Unknown {
        /// The answer's message.
        message: String,
    },
    /// No code system of that URL is loaded (the answer's issue is `not-found`).
    UnknownSystem,
}

/// The general path's message for `code`, which `cs` does not have (`check_in_cs`), when it says so plainly: a
/// whole code system (not a fragment, nor a FHIR code system that lists only part of its codes). `None` otherwise.
fn absent_code_message(cs: &CodeSystem, code: &str) -> Option<String> {
    if cs.content == Content::Fragment || (cs.provider.is_none() && cs.content != Content::Complete)
    {
        return None;
    }
    // A provider may name its version for people: "... version '<edition URI>' (International Edition)".
    let label = (cs.provider.as_ref())
        .and_then(|p| p.version_label())
        .map(|l| format!(" ({l})"))
        .unwrap_or_default();
    Some(match &cs.version {
        Some(v) => format!(
            "Unknown code '{code}' in the CodeSystem '{}' version '{v}'{label}",
            cs.url
        ),
        None => format!("Unknown code '{code}' in the CodeSystem '{}'", cs.url),
    })
}

struct Valid {
    display: Option<String>,
    inactive: Option<(String, Option<String>)>,
}

/// Checks `code` in `cs` as the general path's `check_in_cs` does, when that finds at most an inactive
/// concept to note: the code exists with exactly this spelling, is not deprecated (while active), and has no
/// provider note.
fn check_code(ctx: &Ctx<'_>, cs: &CodeSystem, code: &str) -> Option<Valid> {
    match checked(ctx, cs, code) {
        Checked::Valid(valid) => Some(valid),
        Checked::Absent | Checked::Other => None,
    }
}

/// What [`check_code`] found, with the absence of the code told apart from the cases the general path words.
enum Checked {
    Valid(Valid),
    /// The code system (a provider's compiled for the code) has no concept of this code, in any case.
    Absent,
    /// Anything else: a note, another case, a deprecated concept.
    Other,
}

fn checked(ctx: &Ctx<'_>, cs: &CodeSystem, code: &str) -> Checked {
    let compiled;
    let (cs, quiet) = match &cs.provider {
        Some(p) => {
            if let Some(display) = p.plain_display(code) {
                return Checked::Valid(Valid {
                    display,
                    inactive: None,
                });
            }
            if !p.code_notes(code).is_empty() {
                return Checked::Other;
            }
            // An unknown code (a converter's typo, a local code) without a code system compiled for it.
            if p.lacks(code) {
                return Checked::Absent;
            }
            // The display and status are all that is read here (no language is asked for, so designations
            // play no part): the sameness test holds the lighter detail to the general path's answers.
            compiled = p.compile(&[code], None, Detail::Display);
            (&compiled, p.quiet_inactive())
        }
        None => (cs, false),
    };
    let Some(i) = cs.find(code) else {
        return Checked::Absent;
    };
    let c = &cs.concepts[i];
    if c.code != code {
        return Checked::Other;
    }
    let inactive = if c.is_inactive() {
        (!quiet).then(|| {
            let status = c.status();
            let named = match status.as_deref() {
                Some(s) if s != "inactive" => format!("{s} and inactive"),
                _ => "inactive".to_string(),
            };
            (named, status)
        })
    } else if c.is_deprecated() {
        return Checked::Other;
    } else {
        None
    };
    Checked::Valid(Valid {
        display: ctx.display(cs, c),
        inactive,
    })
}

/// The parameters of a validation answer before `message`, `issues` and `result`.
fn write_valid(out: &mut Out, code: &str, valid: &Valid, cs: &CodeSystem) {
    out.param_str("code", "valueCode", code);
    if let Some(d) = &valid.display {
        out.param_str("display", "valueString", d);
    }
    if valid.inactive.is_some() {
        out.param_bool("inactive", true);
    }
    out.param_str("system", "valueUri", &cs.url);
    if let Some(v) = &cs.version {
        out.param_str("version", "valueString", v);
    }
    if let Some((_, Some(status))) = &valid.inactive {
        out.param_str("status", "valueCode", status);
    }
}

/// `message` and `issues` with the one issue of a validation (its expression the `code` parameter).
fn write_issue(out: &mut Out, id: &str, severity: &str, code: &str, tx_code: &str, text: &str) {
    out.param_str("message", "valueString", text);
    out.entry();
    out.raw(r#"{"name":"issues","resource":{"resourceType":"OperationOutcome","issue":[{"extension":[{"url":"http://hl7.org/fhir/StructureDefinition/operationoutcome-message-id","valueString":"#);
    out.string(id);
    out.raw(r#"}],"severity":"#);
    out.string(severity);
    out.raw(r#","code":"#);
    out.string(code);
    out.raw(r#","details":{"coding":[{"system":"#);
    out.string(TX_ISSUE_TYPE);
    out.raw(r#","code":"#);
    out.string(tx_code);
    out.raw(r#"}],"text":"#);
    out.string(text);
    out.raw(r#"},"expression":["code"]}]}}"#);
}

/// The warning on an inactive concept, when there is one.
fn write_inactive_note(out: &mut Out, code: &str, valid: &Valid) {
    if let Some((named, _)) = &valid.inactive {
        let text =
            format!("The concept '{code}' has a status of {named} and its use should be reviewed");
        write_issue(
            out,
            "INACTIVE_CONCEPT_FOUND",
            "warning",
            "business-rule",
            "code-comment",
            &text,
        );
    }
}

fn validate_cs(ctx: &Ctx<'_>, q: &Query<'_>) -> Option<Vec<u8>> {
    let code = q.get("code")?;
    let cs = code_system(ctx, q.get("url")?)?;
    if status_label(&cs.resource).is_some() {
        return None;
    }
    let valid = check_code(ctx, &cs, code)?;
    let mut out = Out::new();
    write_valid(&mut out, code, &valid, &cs);
    write_inactive_note(&mut out, code, &valid);
    out.param_bool("result", true);
    Some(out.finish())
}

/// Whether value set `vs` holds `code` of `cs` (whose url is `system`), when its definition has a shape the
/// fast path tests: one include of the coding's whole system (or a provider's filters), nothing else that
/// shapes the answer.
fn include_contains_vs(vs: &Value, cs: &CodeSystem, system: &str, code: &str) -> Option<bool> {
    let compose = vs.get("compose")?.as_object()?;
    if compose.keys().any(|k| k != "include") || !describes_only(vs) {
        return None;
    }
    if status_label(vs).is_some() {
        return None;
    }
    let [include] = compose["include"].as_array()?.as_slice() else {
        return None;
    };
    let include_obj = include.as_object()?;
    if include["system"] != system || include_obj.keys().any(|k| k != "system" && k != "filter") {
        return None;
    }
    include_contains(cs, include, code)
}

/// Whether the one include of a value set selects `code` of `cs`, for the shapes that need no evaluation: a
/// whole FHIR code system, or a provider's include that the provider tests directly. `None` otherwise.
fn include_contains(cs: &CodeSystem, include: &Value, code: &str) -> Option<bool> {
    let filters: &[Value] = match include.get("filter") {
        Some(f) => f.as_array()?,
        None => &[],
    };
    match &cs.provider {
        Some(p) => p.contains(filters, code),
        None if filters.is_empty() && cs.content == Content::Complete => {
            Some(cs.find(code).is_some())
        }
        None => None,
    }
}

/// Whether the value set's extensions only describe it (its maturity, work group, standards status: the
/// general path reads the last through `status_label`, checked apart), so that none changes a validation;
/// a `valueset-supplement`, say, does.
fn describes_only(vs: &Value) -> bool {
    const DESCRIPTIVE: [&str; 4] = [
        "http://hl7.org/fhir/StructureDefinition/structuredefinition-fmm",
        "http://hl7.org/fhir/StructureDefinition/structuredefinition-standards-status",
        "http://hl7.org/fhir/StructureDefinition/structuredefinition-wg",
        "http://hl7.org/fhir/StructureDefinition/structuredefinition-normative-version",
    ];
    match vs.get("extension") {
        None => true,
        Some(Value::Array(a)) => a
            .iter()
            .all(|e| e["url"].as_str().is_some_and(|u| DESCRIPTIVE.contains(&u))),
        Some(_) => false,
    }
}

fn validate_vs(ctx: &Ctx<'_>, q: &Query<'_>) -> Option<Vec<u8>> {
    let (url, system, code) = (q.get("url")?, q.get("system")?, q.get("code")?);
    // `url|version` and value sets with several versions are the general path's.
    if url.contains('|') && !url.contains("?fhir_vs") {
        return None;
    }
    let cs = code_system(ctx, system)?;
    if status_label(&cs.resource).is_some() {
        return None;
    }
    let (inside, canonical) = match url.split_once("?fhir_vs") {
        // An implicit value set of the coding's own system that its provider tests without the definition
        // (`isa/X`, the whole system): one include of the system, no version, nothing that describes it.
        Some((of, _)) if of == system && cs.provider.is_some() => {
            let p = cs.provider.as_ref()?;
            (p.implicit_contains(url, code)?, Cow::Borrowed(url))
        }
        _ => {
            let vs = ctx.find_vs(url)?;
            (
                include_contains_vs(&vs, &cs, system, code)?,
                Cow::Owned(vs_canonical(&vs)),
            )
        }
    };
    let valid = check_code(ctx, &cs, code)?;
    // An inactive code outside the value set has two issues to tell: the general path's.
    if !inside && valid.inactive.is_some() {
        return None;
    }
    let mut out = Out::new();
    write_valid(&mut out, code, &valid, &cs);
    if !inside {
        let text = format!(
            "The provided code '{system}#{code}' was not found in the value set '{canonical}'"
        );
        write_issue(
            &mut out,
            "None_of_the_provided_codes_are_in_the_value_set_one",
            "error",
            "code-invalid",
            "not-in-vs",
            &text,
        );
    }
    write_inactive_note(&mut out, code, &valid);
    out.param_bool("result", inside);
    Some(out.finish())
}

fn translate(ctx: &Ctx<'_>, q: &Query<'_>) -> Option<Vec<u8>> {
    let (url, code) = (q.get("url")?, q.get("code")?);
    if !url.contains("?fhir_cm=") {
        return None;
    }
    let system_of_map = url.split('?').next().unwrap_or_default();
    let p: &Arc<dyn CodeSystemProvider> =
        ctx.providers.iter().find(|p| p.system() == system_of_map)?;
    let targets = p.implicit_map(url, code, false)?;
    let mut out = Out::new();
    out.param_bool("result", !targets.is_empty());
    if targets.is_empty() {
        out.param_str(
            "message",
            "valueString",
            &format!("No translations found for code '{code}'"),
        );
    }
    for t in targets {
        out.entry();
        out.raw(r#"{"name":"match","part":[{"name":"equivalence","valueCode":"#);
        out.string(t.equivalence);
        out.raw(r#"},{"name":"concept","valueCoding":{"system":"#);
        out.string(&t.system);
        out.raw(r#","code":"#);
        out.string(&t.code);
        if let Some(d) = &t.display {
            out.raw(r#","display":"#);
            out.string(d);
        }
        out.raw(r#"}},{"name":"originMap","valueCanonical":"#);
        out.string(url);
        out.raw("}]}");
    }
    Some(out.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every character below U+0100, alone and inside text, and some beyond: the same bytes as serde_json.
    #[test]
    fn json_strings_are_written_as_serde_json_writes_them() {
        let mut samples: Vec<String> = (0u32..0x100)
            .filter_map(char::from_u32)
            .flat_map(|c| [c.to_string(), format!("Left {c} right"), format!("{c}{c}x")])
            .collect();
        samples.extend(
            [
                "",
                "Ménière's disease",
                "日本語",
                "a\"b\\c\n\u{2028}",
                "emoji 🩺",
            ]
            .map(String::from),
        );
        for s in &samples {
            let mut ours = Vec::new();
            json_string(&mut ours, s);
            assert_eq!(ours, serde_json::to_vec(s).unwrap(), "{s:?}");
            let mid = (0..=s.len() / 2)
                .rev()
                .find(|&i| s.is_char_boundary(i))
                .unwrap();
            let (head, tail) = s.split_at(mid);
            let mut parts = Vec::new();
            json_string_of(&mut parts, &[head, "|", tail]);
            assert_eq!(
                parts,
                serde_json::to_vec(&format!("{head}|{tail}")).unwrap()
            );
        }
        for n in [0u64, 7, 10, 404684003, u64::MAX] {
            let mut ours = Vec::new();
            json_number(&mut ours, n);
            assert_eq!(ours, n.to_string().into_bytes());
        }
    }
}
