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
use crate::provider::{CodeSystemProvider, Detail};
use crate::service::{Operation, Terminology};
use crate::validate::status_label;
use serde_json::Value;
use std::sync::Arc;

/// The query parameters of a request, each name at most once (a repeated name goes to the general path).
struct Query<'q> {
    pairs: Vec<(&'q str, &'q str)>,
}

impl<'q> Query<'q> {
    /// The pairs of `query` other than `_format`-style ones, when every name is in `allowed` and none repeats.
    fn read(query: &'q [(String, String)], allowed: &[&str]) -> Option<Query<'q>> {
        let mut pairs: Vec<(&str, &str)> = Vec::with_capacity(query.len());
        for (k, v) in query {
            if k.starts_with('_') {
                continue;
            }
            if !allowed.contains(&k.as_str()) || pairs.iter().any(|(n, _)| n == k) {
                return None;
            }
            pairs.push((k, v));
        }
        Some(Query { pairs })
    }

    fn get(&self, name: &str) -> Option<&'q str> {
        self.pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }
}

/// JSON text of a `Parameters` resource, written as `serde_json` writes the `Value` the general path builds
/// (objects keep their insertion order).
struct Out {
    buf: Vec<u8>,
    first: bool,
}

impl Out {
    fn new() -> Out {
        let mut buf = Vec::with_capacity(512);
        buf.extend_from_slice(br#"{"resourceType":"Parameters","parameter":["#);
        Out { buf, first: true }
    }

    fn raw(&mut self, s: &str) {
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// A JSON string, escaped as `serde_json` escapes it.
    fn string(&mut self, s: &str) {
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut self.buf, s);
    }

    /// Starts the next entry of `parameter`.
    fn entry(&mut self) {
        if !self.first {
            self.buf.push(b',');
        }
        self.first = false;
    }

    /// `{"name": name, key: "text"}`.
    fn param_str(&mut self, name: &str, key: &str, text: &str) {
        self.entry();
        self.raw(r#"{"name":"#);
        self.string(name);
        self.raw(",");
        self.string(key);
        self.raw(":");
        self.string(text);
        self.raw("}");
    }

    fn param_bool(&mut self, name: &str, b: bool) {
        self.entry();
        self.raw(r#"{"name":"#);
        self.string(name);
        self.raw(if b {
            r#","valueBoolean":true}"#
        } else {
            r#","valueBoolean":false}"#
        });
    }

    fn finish(mut self) -> Vec<u8> {
        self.raw("]}");
        self.buf
    }
}

impl Terminology {
    /// Answers `op` from the fast path when the request (GET query pairs, the Accept-Language header) has a
    /// shape it handles: the JSON text of the answer, exactly what [`Terminology::run`] would give. `None` means
    /// "run the general path"; that is also how every error is answered.
    pub fn run_fast(
        &self,
        op: Operation,
        query: &[(String, String)],
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
            _ => None,
        }
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
        // As the general path: the generic answer over the compiled concepts when the provider asks for it.
        if let Some(codes) = p.lookup_codes(code) {
            let codes: Vec<&str> = codes.iter().map(String::as_str).collect();
            let compiled = ctx.compile(&cs, &codes, Detail::Validation);
            let i = compiled.find(code)?;
            let display = ctx.display(&compiled, &compiled.concepts[i]);
            return serde_json::to_vec(&crate::lookup::concept_answer(&compiled, i, display, &[]))
                .ok();
        }
        return p.lookup_text(code);
    }
    // A FHIR code system's answer is the general path's own (its designations and properties follow the
    // resource); what is saved here is the request's parsing, context and trip to the blocking pool.
    let i = cs.find(code)?;
    let display = ctx.display(&cs, &cs.concepts[i]);
    serde_json::to_vec(&crate::lookup::concept_answer(&cs, i, display, &[])).ok()
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

/// What `$validate-code` reports of a known code: its display (None when it has none).
struct Valid {
    display: Option<String>,
}

/// Checks `code` in `cs` as the general path's `check_in_cs` does, when that finds nothing to say: the code
/// exists with exactly this spelling, has no status note (inactive where the code system reports it,
/// deprecated), and no provider note.
fn check_code(ctx: &Ctx<'_>, cs: &CodeSystem, code: &str) -> Option<Valid> {
    let compiled;
    let (cs, quiet) = match &cs.provider {
        Some(p) => {
            if !p.code_notes(code).is_empty() {
                return None;
            }
            // The display and status are all that is read here: the lighter detail (no list of every
            // description) gives the same concept display and status (the sameness test holds it to that).
            compiled = p.compile(&[code], None, Detail::Expansion);
            (&compiled, p.quiet_inactive())
        }
        None => (cs, false),
    };
    let c = &cs.concepts[cs.find(code)?];
    let noted = if c.is_inactive() {
        !quiet
    } else {
        c.is_deprecated()
    };
    (c.code == code && !noted).then(|| Valid {
        display: ctx.display(cs, c),
    })
}

/// The parameters of a validation answer before `message`, `issues` and `result`.
fn write_valid(out: &mut Out, code: &str, valid: &Valid, cs: &CodeSystem) {
    out.param_str("code", "valueCode", code);
    if let Some(d) = &valid.display {
        out.param_str("display", "valueString", d);
    }
    out.param_str("system", "valueUri", &cs.url);
    if let Some(v) = &cs.version {
        out.param_str("version", "valueString", v);
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
    out.param_bool("result", true);
    Some(out.finish())
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

fn validate_vs(ctx: &Ctx<'_>, q: &Query<'_>) -> Option<Vec<u8>> {
    let (url, system, code) = (q.get("url")?, q.get("system")?, q.get("code")?);
    // `url|version` and value sets with several versions are the general path's.
    if url.contains('|') && !url.contains("?fhir_vs") {
        return None;
    }
    let vs = ctx.find_vs(url)?;
    // One include of the coding's whole system (or a provider's filters), nothing else that shapes the answer.
    let compose = vs.get("compose")?.as_object()?;
    if compose.keys().any(|k| k != "include") || vs.get("extension").is_some() {
        return None;
    }
    if status_label(&vs).is_some() {
        return None;
    }
    let [include] = compose["include"].as_array()?.as_slice() else {
        return None;
    };
    let include_obj = include.as_object()?;
    if include["system"] != system || include_obj.keys().any(|k| k != "system" && k != "filter") {
        return None;
    }
    let cs = code_system(ctx, system)?;
    if status_label(&cs.resource).is_some() {
        return None;
    }
    let inside = include_contains(&cs, include, code)?;
    let valid = check_code(ctx, &cs, code)?;
    let mut out = Out::new();
    write_valid(&mut out, code, &valid, &cs);
    if !inside {
        let text = format!(
            "The provided code '{system}#{code}' was not found in the value set '{}'",
            vs_canonical(&vs)
        );
        out.param_str("message", "valueString", &text);
        out.entry();
        out.raw(r#"{"name":"issues","resource":{"resourceType":"OperationOutcome","issue":[{"extension":[{"url":"http://hl7.org/fhir/StructureDefinition/operationoutcome-message-id","valueString":"None_of_the_provided_codes_are_in_the_value_set_one"}],"severity":"error","code":"code-invalid","details":{"coding":[{"system":"#);
        out.string(TX_ISSUE_TYPE);
        out.raw(r#","code":"not-in-vs"}],"text":"#);
        out.string(&text);
        out.raw(r#"},"expression":["code"]}]}}"#);
    }
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
