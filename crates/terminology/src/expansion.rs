//! `ValueSet/$expand`: evaluates the value set, applies activeOnly, text filter, paging and the size limit,
//! and renders the FHIR `ValueSet.expansion` (nested when the code system's hierarchy is kept).

use crate::context::Ctx;
use crate::error::{ErrorKind, Issue, Severity, TxError};
use crate::expand::{Entry, evaluate, vs_canonical};
use crate::fast::{json_number, json_string};
use crate::params::Params;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// Parameters echoed into `expansion.parameter` when the request carries them.
const ECHOED: &[&str] = &[
    "activeOnly",
    "designation",
    "count",
    "displayLanguage",
    "excludeNested",
    "filter",
    "includeDefinition",
    "includeDesignations",
    "offset",
    "default-valueset-version",
];

/// Properties defined by FHIR for every code system (`http://hl7.org/fhir/concept-properties`).
const STANDARD_PROPERTIES: &[&str] = &[
    "inactive",
    "deprecated",
    "notSelectable",
    "parent",
    "child",
    "partOf",
    "synonym",
    "comment",
    "itemWeight",
    "status",
    "definition",
    "display",
];

/// Elements of the value set copied into its expansion (not `description`: tx.fhir.org leaves it out, and no
/// conformance test expects it).
const KEPT: &[&str] = &[
    "resourceType",
    "id",
    "language",
    "url",
    "version",
    "name",
    "title",
    "status",
    "experimental",
    "date",
    "publisher",
];

/// A value set evaluated for `$expand`, before paging and rendering: what the expansion cache keeps.
#[derive(Debug)]
pub(crate) struct Prepared {
    vs: Arc<Value>,
    /// The evaluation's findings (its code set moved to `entries`).
    ev: crate::expand::Evaluated,
    /// The codes after `activeOnly` and the text filter (only the page when `prepaged`).
    entries: Vec<Entry>,
    total: usize,
    /// A provider paged the include: `entries` is the requested page.
    prepaged: bool,
    /// Parameters the content decided (version rules used, code systems and value sets used, status
    /// warnings, versionsMatch), echoed in the expansion.
    content_params: Vec<Value>,
}

impl Prepared {
    /// A rough size for the cache's byte bound: entries dominate (their strings, and the concepts a
    /// provider compiled for them).
    fn bytes(&self) -> usize {
        1024 + self.entries.len() * 512
    }
}

/// The service's cache of evaluated value sets.
pub(crate) type ExpansionCache = crate::cache::Lru<Prepared>;

/// The cache key of an expansion request, None when it must not be cached: the request brings content of its
/// own (`tx-resource`, a `valueSet`), or names an implicit value set (its definition is dated now, and a
/// provider caches what it evaluates itself). `count` and `offset` are left out, since every page is cut
/// from the same evaluation, except whether a count is given (without one, size limits apply).
fn cache_key(params: &Params) -> Option<String> {
    let mut kept = Vec::new();
    for p in params.entries() {
        let name = p["name"].as_str().unwrap_or_default();
        match name {
            "tx-resource" | "valueSet" => return None,
            "url" if p.to_string().contains("?fhir_vs") => return None,
            "count" | "offset" => {}
            _ => kept.push(p),
        }
    }
    Some(format!(
        "{}|{}",
        params.has("count"),
        Value::Array(kept.into_iter().cloned().collect())
    ))
}

/// ValueSet/$expand; `cache` keeps evaluated value sets for later requests with the same parameters.
pub fn expand(
    ctx: &Ctx<'_>,
    params: &Params,
    cache: Option<&ExpansionCache>,
) -> Result<Value, TxError> {
    let prepared = prepared(ctx, params, cache)?;
    render(ctx, params, &prepared)
}

/// The evaluated value set of an expansion request: from `cache` when it holds it, else evaluated (and kept
/// there when it may be).
fn prepared(
    ctx: &Ctx<'_>,
    params: &Params,
    cache: Option<&ExpansionCache>,
) -> Result<Arc<Prepared>, TxError> {
    let key = cache.and_then(|_| cache_key(params));
    if let (Some(cache), Some(key)) = (cache, &key)
        && let Some(prepared) = cache.get(key)
    {
        return Ok(prepared);
    }
    let prepared = Arc::new(prepare(ctx, params)?);
    if let (Some(cache), Some(key), false) = (cache, key, prepared.prepaged) {
        cache.put(key, prepared.clone(), prepared.bytes());
    }
    Ok(prepared)
}

/// Evaluates the requested value set and applies `activeOnly` and the text filter.
fn prepare(ctx: &Ctx<'_>, params: &Params) -> Result<Prepared, TxError> {
    let vs = ctx.requested_value_set(params)?;
    let opts = &ctx.opts;
    // A provider that pages its include hands over the page alone (`prepaged`) and the total.
    let (ev, mut entries, total, prepaged) = match provider_page(ctx, &vs)? {
        Some((ev, entries, total)) => (ev, entries, total, true),
        None => {
            let mut stack = Vec::new();
            let mut ev = evaluate(ctx, &vs, &mut stack)?;
            let mut entries: Vec<Entry> = std::mem::take(&mut ev.set.entries);
            if opts.active_only == Some(true) {
                entries.retain(|e| !e.inactive());
            }
            if let Some(f) = &opts.filter {
                let f = f.to_lowercase();
                entries
                    .retain(|e| text_matches(&e.code, &display_of(ctx, e).unwrap_or_default(), &f));
            }
            let total = entries.len();
            (ev, entries, total, false)
        }
    };
    // Codes say which version they come from when the value set uses several versions of their system.
    let versioned = systems_in_several_versions(&vs, &ev.used_cs);
    for e in entries.iter_mut() {
        e.show_version = versioned.contains(&e.system);
    }
    let mut content_params = Vec::new();
    // Version rules are echoed when they shaped the expansion: a default or a check when it chose the
    // version of an unversioned include (a forced version always, from the request).
    for (name, canonical) in ctx.used_version_rules.borrow().iter() {
        content_params.push(json!({"name": name, "valueUri": canonical}));
    }
    for u in &ev.used_cs {
        content_params.push(json!({"name": "used-codesystem", "valueUri": u}));
    }
    for u in &ev.used_supplements {
        content_params.push(json!({"name": "used-supplement", "valueUri": u}));
    }
    for u in &ev.used_fragments {
        content_params.push(json!({"name": "used-fragment", "valueUri": u}));
    }
    // Content used with a status worth a warning: `warning-<status>` with its canonical.
    let root_label = crate::validate::status_label(&vs);
    // The requested value set itself only warns when it is deprecated or withdrawn, not for being draft.
    if let Some(label @ ("deprecated" | "withdrawn")) = root_label {
        content_params
            .push(json!({"name": format!("warning-{label}"), "valueUri": vs_canonical(&vs)}));
    }
    for u in &ev.used_cs {
        let (url, version) = crate::context::split_canonical(u);
        // Only the status elements are read: the concepts (98k for ICD-10-CM) are not worth a copy.
        let label = ctx
            .find_cs(url, version)
            .and_then(|cs| crate::validate::status_label(&cs.resource).map(str::to_string));
        if let Some(label) = label {
            content_params.push(json!({"name": format!("warning-{label}"), "valueUri": u}));
        }
    }
    for u in ev.used_vs.iter().chain(&ev.example_sources) {
        let label = ctx
            .find_vs(u)
            .and_then(|v| crate::validate::status_label(&v).map(str::to_string));
        if let Some(label) = label {
            content_params.push(json!({"name": format!("warning-{label}"), "valueUri": u}));
        }
    }
    if ev.versions_match {
        content_params.push(json!({"name": "versionsMatch", "valueBoolean": true}));
    }
    for u in &ev.used_vs {
        content_params.push(json!({"name": "used-valueset", "valueUri": u}));
    }
    Ok(Prepared {
        vs,
        ev,
        entries,
        total,
        prepaged,
        content_params,
    })
}

/// The most codes one page of an expansion (`count` given) may hold, unless `max_expansion` is larger.
pub(crate) const MAX_PAGE: usize = 10_000;

/// How a prepared value set is cut and laid out for one request.
struct Layout {
    offset: usize,
    /// `count` or `offset` given: the expansion says where its page starts.
    paged: bool,
    /// Listed as the code systems' tree.
    nest: bool,
}

/// The layout of `prepared` for the request, or the size limit's refusal.
fn layout(ctx: &Ctx<'_>, prepared: &Prepared) -> Result<Layout, TxError> {
    let Prepared { vs, ev, total, .. } = prepared;
    let total = *total;
    let opts = &ctx.opts;
    let offset = opts.offset.unwrap_or(0);
    // Without `count` the whole expansion must fit in `max_expansion` codes. A client that names a `count` asks
    // for that many on purpose (the conformance suite expands 2,251 codes with `count=3000`), but a page still has
    // a ceiling: a `count` of a million over a large value set used to build it all.
    let (answered, limit) = match opts.count {
        None => (total, ctx.max_expansion),
        Some(count) => (
            count.min(total.saturating_sub(offset)),
            ctx.max_expansion.max(MAX_PAGE),
        ),
    };
    if answered > limit && !ev.examples {
        return Err(TxError::new(
            ErrorKind::TooCostly,
            too_costly(&vs_canonical(vs), limit),
        ));
    }
    let paged = opts.count.is_some() || offset > 0;
    // A compose that excludes codes is listed flat, as tx.fhir.org lists it: the codes left no longer form the
    // code system's tree (an excluded parent would have its children re-hung elsewhere).
    let excludes = vs["compose"]["exclude"]
        .as_array()
        .is_some_and(|a| !a.is_empty());
    let nest = opts.exclude_nested != Some(true)
        && !paged
        && !excludes
        && compose_keeps_hierarchy(vs, opts.filter.is_some());
    Ok(Layout {
        offset,
        paged,
        nest,
    })
}

/// The entries an expansion shows: the page (all of them when not paged, or when the provider paged).
fn shown<'p>(ctx: &Ctx<'_>, prepared: &'p Prepared, layout: &Layout) -> &'p [Entry] {
    let entries = &prepared.entries;
    if layout.paged && !prepared.prepaged {
        let start = layout.offset.min(entries.len());
        let end = start
            .saturating_add(ctx.opts.count.unwrap_or(usize::MAX))
            .min(entries.len());
        &entries[start..end]
    } else {
        entries
    }
}

/// `expansion.parameter`: the request's echoed parameters and the content's, by name as tx.fhir.org lists them
/// (designations by value).
fn expansion_parameters(ctx: &Ctx<'_>, params: &Params, content_params: &[Value]) -> Vec<Value> {
    let mut parameters = Vec::new();
    for p in params.entries() {
        if p["name"] == "default-valueset-version" {
            // Echoed as a uri, whichever type the request used (tx.fhir.org does the same).
            if let Some(v) = crate::params::primitive(p) {
                parameters.push(json!({"name": "default-valueset-version", "valueUri": v}));
            }
        } else if p["name"].as_str().is_some_and(|n| ECHOED.contains(&n)) {
            parameters.push(p.clone());
        }
    }
    for (u, v) in &ctx.opts.force_versions {
        parameters.push(json!({"name": "force-system-version", "valueUri": format!("{u}|{v}")}));
    }
    parameters.extend(content_params.iter().cloned());
    parameters.sort_by(|a, b| {
        let key = |p: &Value| {
            let name = p["name"].as_str().unwrap_or_default().to_string();
            let value = if name == "designation" {
                crate::params::primitive(p).unwrap_or_default()
            } else {
                String::new()
            };
            (name, value)
        };
        key(a).cmp(&key(b))
    });
    parameters
}

/// `expansion.extension`: unclosed (and why), and the declarations of the properties the shown codes carry.
fn expansion_extensions(
    ctx: &Ctx<'_>,
    ev: &crate::expand::Evaluated,
    shown: &[Entry],
) -> Vec<Value> {
    let mut ext: Vec<Value> = Vec::new();
    if let Some(reason) = &ev.unclosed {
        ext.push(json!({"url": "http://hl7.org/fhir/StructureDefinition/valueset-unclosed", "valueBoolean": true}));
        if let Some(r) = reason {
            ext.push(json!({"url": "http://hl7.org/fhir/StructureDefinition/valueset-unclosed-reason", "valueString": r}));
        }
    }
    // R4 has no `expansion.property`: it travels as R5's cross-version extension.
    // Declarations cover the codes shown (a `count=0` expansion shows none).
    let props = property_declarations(ctx, shown);
    ext.extend(props.iter().map(|p| r5_extension("property", p)));
    ext
}

/// The expansion resource of a prepared value set: the size limit, the page, the parameters.
fn render(ctx: &Ctx<'_>, params: &Params, prepared: &Prepared) -> Result<Value, TxError> {
    let layout = layout(ctx, prepared)?;
    let Prepared {
        vs,
        ev,
        entries,
        total,
        prepaged,
        content_params,
    } = prepared;
    let shown = shown(ctx, prepared, &layout);
    let contains = if layout.nest && !prepaged {
        render_nested(ctx, entries)
    } else {
        shown.iter().map(|e| render_entry(ctx, e)).collect()
    };
    let parameters = expansion_parameters(ctx, params, content_params);
    let mut expansion = Map::new();
    expansion.insert(
        "identifier".into(),
        json!(format!("urn:uuid:{}", new_identifier())),
    );
    expansion.insert("timestamp".into(), json!(crate::time::now_instant()));
    // Examples standing for a whole grammar-based system are returned without a total, as tx.fhir.org does:
    // the total would read as the size of a value set that has no end.
    if ev.example_sources.is_empty() {
        expansion.insert("total".into(), json!(total));
    }
    // Only a paged expansion says where its page starts.
    if layout.paged {
        expansion.insert("offset".into(), json!(layout.offset));
    }
    if !parameters.is_empty() {
        expansion.insert("parameter".into(), Value::Array(parameters));
    }
    let ext = expansion_extensions(ctx, ev, shown);
    if !ext.is_empty() {
        expansion.insert("extension".into(), Value::Array(ext));
    }
    if !contains.is_empty() {
        expansion.insert("contains".into(), Value::Array(contains));
    }
    // The expansion carries the value set's identity and metadata, and its definition (compose, extensions,
    // narrative, ...) only when `includeDefinition` asks for it.
    let include_definition = params.bool("includeDefinition") == Some(true);
    let mut out = Map::new();
    if let Some(o) = vs.as_object() {
        for (k, v) in o {
            if (include_definition && k != "expansion") || KEPT.contains(&k.as_str()) {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    out.insert("expansion".into(), Value::Object(expansion));
    Ok(Value::Object(out))
}

/// A random (version 4) UUID for an expansion's identifier, from a generator of each thread seeded once from
/// the system's: an identifier must be unique, not secret, and the system's generator costs a system call
/// (half a microsecond in process, and more under load).
fn new_identifier() -> uuid::Uuid {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = Cell::new(u64::from_le_bytes(
            uuid::Uuid::new_v4().as_bytes()[..8].try_into().unwrap_or_default(),
        ));
    }
    // SplitMix64, twice: 128 bits of which the version and variant take 6.
    let next = || {
        STATE.with(|s| {
            let z = s.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
            s.set(z);
            let z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        })
    };
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&next().to_le_bytes());
    bytes[8..].copy_from_slice(&next().to_le_bytes());
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

/// An answer of [`expand_text`] around its identifier and timestamp, which each answer makes anew.
pub(crate) struct ExpansionText {
    /// Up to the identifier's UUID.
    head: Vec<u8>,
    /// After the timestamp's value.
    tail: Vec<u8>,
}

/// The fast path's cache of expansion texts.
pub(crate) type TextCache = crate::cache::Lru<ExpansionText>;

const TIMESTAMP: &[u8] = br#"","timestamp":"#;

impl ExpansionText {
    /// The answer, with an identifier and timestamp of its own.
    pub(crate) fn answer(&self) -> Vec<u8> {
        let mut buf = Vec::with_capacity(self.head.len() + self.tail.len() + 80);
        buf.extend_from_slice(&self.head);
        buf.extend_from_slice(
            new_identifier()
                .hyphenated()
                .encode_lower(&mut uuid::Uuid::encode_buffer())
                .as_bytes(),
        );
        buf.extend_from_slice(TIMESTAMP);
        json_string(&mut buf, &crate::time::now_instant());
        buf.extend_from_slice(&self.tail);
        buf
    }
}

/// The expansion of a request without a definition, designations or properties to show, as JSON text: the
/// bytes `serde_json` writes for [`expand`]'s value (the same evaluation, from the same cache), without the
/// value. `None` where the general path answers an error. When `text_key` is given, the answer is kept in
/// `texts` under it and answered from there the next time: the caller makes the key of everything the text
/// but for the identifier and timestamp depends on besides the content, which is fixed while serving.
pub(crate) fn expand_text(
    ctx: &Ctx<'_>,
    params: &Params,
    cache: Option<&ExpansionCache>,
    texts: &TextCache,
    text_key: Option<String>,
) -> Option<Vec<u8>> {
    if let Some(key) = &text_key
        && let Some(text) = texts.get(key)
    {
        return Some(text.answer());
    }
    let prepared = prepared(ctx, params, cache).ok()?;
    let layout = layout(ctx, &prepared).ok()?;
    let Prepared {
        vs,
        ev,
        entries,
        total,
        prepaged,
        content_params,
    } = &*prepared;
    let shown = shown(ctx, &prepared, &layout);
    let mut buf: Vec<u8> = Vec::with_capacity(1024 + 160 * shown.len());
    buf.push(b'{');
    for (k, v) in vs
        .as_object()?
        .iter()
        .filter(|(k, _)| KEPT.contains(&k.as_str()))
    {
        json_string(&mut buf, k);
        buf.push(b':');
        serde_json::to_writer(&mut buf, v).ok()?;
        buf.push(b',');
    }
    buf.extend_from_slice(br#""expansion":{"identifier":"urn:uuid:"#);
    let head_len = buf.len();
    let mut tail: Vec<u8> = Vec::with_capacity(1024 + 160 * shown.len());
    if ev.example_sources.is_empty() {
        tail.extend_from_slice(br#","total":"#);
        json_number(&mut tail, *total as u64);
    }
    if layout.paged {
        tail.extend_from_slice(br#","offset":"#);
        json_number(&mut tail, layout.offset as u64);
    }
    let values = |buf: &mut Vec<u8>, name: &[u8], list: &[Value]| -> Option<()> {
        if list.is_empty() {
            return Some(());
        }
        buf.extend_from_slice(name);
        buf.push(b'[');
        for (n, v) in list.iter().enumerate() {
            if n > 0 {
                buf.push(b',');
            }
            serde_json::to_writer(&mut *buf, v).ok()?;
        }
        buf.push(b']');
        Some(())
    };
    let parameters = expansion_parameters(ctx, params, content_params);
    values(&mut tail, br#","parameter":"#, &parameters)?;
    values(
        &mut tail,
        br#","extension":"#,
        &expansion_extensions(ctx, ev, shown),
    )?;
    if layout.nest && !prepaged {
        values(&mut tail, br#","contains":"#, &render_nested(ctx, entries))?;
    } else if !shown.is_empty() {
        tail.extend_from_slice(br#","contains":["#);
        for (n, e) in shown.iter().enumerate() {
            if n > 0 {
                tail.push(b',');
            }
            entry_text(ctx, e, &mut tail)?;
        }
        tail.push(b']');
    }
    tail.extend_from_slice(b"}}");
    let text = ExpansionText { head: buf, tail };
    let answer = text.answer();
    if let Some(key) = text_key {
        let bytes = head_len + text.tail.len();
        texts.put(key, Arc::new(text), bytes);
    }
    Some(answer)
}

/// One `contains` entry as [`render_entry`] writes it; an entry with extensions or properties to show goes
/// through [`render_entry`] itself.
fn entry_text(ctx: &Ctx<'_>, e: &Entry, buf: &mut Vec<u8>) -> Option<()> {
    let concept = e.concept.as_ref().map(|(cs, i)| &cs.concepts[*i]);
    let plain = !ctx.opts.include_designations
        && concept.is_none_or(|c| {
            kept_extensions(&c.extensions, CS_ECHOED_EXTENSIONS)
                .next()
                .is_none()
        })
        && kept_extensions(&e.vs_extensions, VS_ECHOED_EXTENSIONS)
            .next()
            .is_none()
        && entry_properties(ctx, e).is_empty();
    if !plain {
        return serde_json::to_writer(&mut *buf, &render_entry(ctx, e)).ok();
    }
    buf.extend_from_slice(br#"{"system":"#);
    json_string(buf, &e.system);
    if e.is_abstract() {
        buf.extend_from_slice(br#","abstract":true"#);
    }
    if e.inactive() {
        buf.extend_from_slice(br#","inactive":true"#);
    }
    if let (true, Some(v)) = (e.show_version, e.version()) {
        buf.extend_from_slice(br#","version":"#);
        json_string(buf, v);
    }
    buf.extend_from_slice(br#","code":"#);
    json_string(buf, &e.code);
    if let Some(d) = display_of(ctx, e) {
        buf.extend_from_slice(br#","display":"#);
        json_string(buf, &d);
    }
    buf.push(b'}');
    Some(())
}

/// The generic text filter of an expansion: the code, the display, or a word of the display (split at
/// anything not alphanumeric) starts with `filter` (already lowercase), ignoring case.
pub(crate) fn text_matches(code: &str, display: &str, filter: &str) -> bool {
    let d = display.to_lowercase();
    code.to_lowercase().starts_with(filter)
        || d.split(|c: char| !c.is_alphanumeric())
            .any(|w| w.starts_with(filter))
        || d.starts_with(filter)
}

/// A paged expansion (`count` given) of a value set that is one filtered include of a provider's code system
/// (the implicit value sets of SNOMED CT, say), when the provider pages it itself: the evaluation's findings,
/// the entries of the page with only their concepts compiled, and the total. None when the expansion needs
/// the general path (several includes, excludes, imports, listed concepts, supplements, a display language
/// other than the code system's, or a provider that does not page).
fn provider_page(
    ctx: &Ctx<'_>,
    vs: &Value,
) -> Result<Option<(crate::expand::Evaluated, Vec<Entry>, usize)>, TxError> {
    let opts = &ctx.opts;
    let Some(count) = opts.count else {
        return Ok(None);
    };
    let compose = &vs["compose"];
    let [inc] = compose["include"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
    else {
        return Ok(None);
    };
    let excludes = compose["exclude"].as_array().is_some_and(|a| !a.is_empty());
    let Some(system) = inc["system"].as_str() else {
        return Ok(None);
    };
    if excludes
        || inc.get("concept").is_some()
        || inc.get("valueSet").is_some()
        || ctx.lenient_includes.get()
        || !opts.use_supplements.is_empty()
        || !crate::expand::vs_supplements(vs).is_empty()
        || !ctx.overlay.supplements_of(system).is_empty()
        || !ctx.providers.iter().any(|p| p.system() == system)
    {
        return Ok(None);
    }
    // The display the text filter tests and the expansion shows is the provider's own (compiled in the
    // requested languages) unless the first language asked for is not the code system's: then
    // `Ctx::display` may pick a designation instead, which only the general path reproduces.
    let plain_display = opts.display_language.as_deref().is_none_or(|l| {
        crate::context::parse_languages(l)
            .first()
            .is_none_or(|f| f == "*" || crate::context::lang_matches(f, "en"))
    });
    if !plain_display {
        return Ok(None);
    }
    let cs = crate::expand::resolve_include_cs(ctx, system, inc["version"].as_str(), &[])?;
    let Some(provider) = cs.provider.clone() else {
        return Ok(None);
    };
    let filters = inc["filter"].as_array().cloned().unwrap_or_default();
    let req = crate::provider::PageRequest {
        text: opts.filter.as_deref(),
        active_only: opts.active_only == Some(true) || compose["inactive"] == Value::Bool(false),
        languages: opts.display_language.as_deref(),
        offset: opts.offset.unwrap_or(0),
        count,
    };
    let page = match provider.expand_page(&filters, &req, "ValueSet.compose.include[0]") {
        None => return Ok(None),
        Some(page) => page?,
    };
    let codes: Vec<&str> = page.codes.iter().map(String::as_str).collect();
    // The provider has filtered the page already: the concepts' designations are read only to be shown, or to
    // choose displays in a language, or for the properties asked for.
    let detail = if opts.include_designations
        || opts.display_language.is_some()
        || !opts.designations.is_empty()
        || !opts.properties.is_empty()
    {
        crate::provider::Detail::Expansion
    } else {
        crate::provider::Detail::Display
    };
    // A page of concepts with nothing to show but their displays is not compiled (a `CodeSystem` with its code
    // index, per request): the entries carry the displays the provider gives.
    let displays: Option<Vec<Option<String>>> = (detail == crate::provider::Detail::Display)
        .then(|| {
            page.codes
                .iter()
                .map(|c| provider.expansion_display(c))
                .collect()
        })
        .flatten();
    let ev = crate::expand::Evaluated {
        used_cs: vec![cs.versioned_url()],
        versions_match: crate::expand::versions_match(vs),
        unclosed: page.unclosed,
        ..Default::default()
    };
    if let Some(displays) = displays {
        let entries = page
            .codes
            .into_iter()
            .zip(displays)
            .map(|(code, display)| Entry {
                system: system.to_string(),
                code,
                vs_display: display,
                vs_designations: Vec::new(),
                vs_extensions: Vec::new(),
                concept: None,
                hierarchical: false,
                include_version: inc["version"].as_str().map(str::to_string),
                show_version: false,
            })
            .collect();
        return Ok(Some((ev, entries, page.total)));
    }
    let compiled = ctx.compile(&cs, &codes, detail);
    let entries = page
        .codes
        .iter()
        .filter_map(|code| {
            compiled.find(code).map(|i| Entry {
                system: system.to_string(),
                code: code.clone(),
                vs_display: None,
                vs_designations: Vec::new(),
                vs_extensions: Vec::new(),
                concept: Some((compiled.clone(), i)),
                hierarchical: false,
                include_version: inc["version"].as_str().map(str::to_string),
                show_version: false,
            })
        })
        .collect();
    Ok(Some((ev, entries, page.total)))
}

/// Whether the `designation` parameters (`system|code` of a language or a use) admit `d`; all pass without them.
fn designation_wanted(ctx: &Ctx<'_>, d: &crate::codesystem::Designation) -> bool {
    if ctx.opts.designations.is_empty() {
        return true;
    }
    ctx.opts.designations.iter().any(|want| {
        let (system, code) = want.rsplit_once('|').unwrap_or(("", want));
        let language = system == "urn:ietf:bcp:47" || system.is_empty();
        (language && d.language.as_deref() == Some(code))
            || d.use_
                .as_ref()
                .is_some_and(|u| u["code"] == code && (system.is_empty() || u["system"] == system))
    })
}

fn display_of(ctx: &Ctx<'_>, e: &Entry) -> Option<String> {
    if let Some((cs, i)) = &e.concept {
        if e.vs_display.is_some() && ctx.opts.display_language.is_none() {
            return e.vs_display.clone();
        }
        ctx.display(cs, &cs.concepts[*i])
            .or_else(|| e.vs_display.clone())
    } else {
        e.vs_display.clone()
    }
}

/// An inactive concept of a provider's code system shows its status unasked, as tx.fhir.org does for SNOMED CT.
fn auto_status(ctx: &Ctx<'_>, e: &Entry) -> bool {
    e.inactive()
        && e.concept
            .as_ref()
            .is_some_and(|(cs, _)| cs.provider.as_ref().is_some_and(|p| p.quiet_inactive()))
        && !ctx.opts.properties.iter().any(|p| p == "status")
}

/// Concept extensions of a code system that an expansion carries onto `contains` as they are.
const CS_ECHOED_EXTENSIONS: &[&str] = &[
    "http://hl7.org/fhir/StructureDefinition/coding-sctdescid",
    "http://hl7.org/fhir/StructureDefinition/rendering-style",
    "http://hl7.org/fhir/StructureDefinition/rendering-xhtml",
    "http://hl7.org/fhir/StructureDefinition/codesystem-alternate",
];

/// Extensions of a value set's concept reference that an expansion carries onto `contains` as they are.
const VS_ECHOED_EXTENSIONS: &[&str] = &[
    "http://hl7.org/fhir/StructureDefinition/valueset-supplement",
    "http://hl7.org/fhir/StructureDefinition/valueset-deprecated",
    crate::codesystem::STANDARDS_STATUS,
    "http://hl7.org/fhir/StructureDefinition/valueset-concept-definition",
    "http://hl7.org/fhir/StructureDefinition/coding-sctdescid",
    "http://hl7.org/fhir/StructureDefinition/rendering-style",
    "http://hl7.org/fhir/StructureDefinition/rendering-xhtml",
];

/// Extensions of a designation that an expansion keeps (others, unknown to it, are dropped).
const DESIGNATION_EXTENSIONS: &[&str] = &[
    "http://hl7.org/fhir/StructureDefinition/coding-sctdescid",
    "http://hl7.org/fhir/StructureDefinition/rendering-style",
    "http://hl7.org/fhir/StructureDefinition/rendering-xhtml",
    crate::codesystem::STANDARDS_STATUS,
    "http://hl7.org/fhir/StructureDefinition/codesystem-alternate",
];

/// Concept extensions that become properties of `contains`: (value set extension, code system extension,
/// property code, its URI). A value set's own value wins over the code system's.
const EXTENSION_PROPERTIES: &[(&str, &str, &str, &str)] = &[
    (
        "http://hl7.org/fhir/StructureDefinition/itemWeight",
        "http://hl7.org/fhir/StructureDefinition/itemWeight",
        "weight",
        "http://hl7.org/fhir/concept-properties#itemWeight",
    ),
    (
        "http://hl7.org/fhir/StructureDefinition/valueset-label",
        "http://hl7.org/fhir/StructureDefinition/codesystem-label",
        "label",
        "http://hl7.org/fhir/concept-properties#label",
    ),
    (
        "http://hl7.org/fhir/StructureDefinition/valueset-conceptOrder",
        "http://hl7.org/fhir/StructureDefinition/codesystem-conceptOrder",
        "order",
        "http://hl7.org/fhir/concept-properties#order",
    ),
];

const STATUS_URI: &str = "http://hl7.org/fhir/concept-properties#status";

/// The `value[x]` of an extension.
fn extension_value(e: &Value) -> Option<&Value> {
    e.as_object()?
        .iter()
        .find(|(k, _)| k.starts_with("value"))
        .map(|(_, v)| v)
}

fn find_extension<'a>(list: &'a [Value], url: &str) -> Option<&'a Value> {
    list.iter().find(|e| e["url"] == url)
}

/// The extensions among `list` whose URL is in `kept`.
fn kept_extensions<'a>(
    list: &'a [Value],
    kept: &'a [&str],
) -> impl Iterator<Item = &'a Value> + 'a {
    list.iter()
        .filter(|e| e["url"].as_str().is_some_and(|u| kept.contains(&u)))
}

/// The properties of one `contains` entry (`{"code": c, "valueX": v}`), in the order tx.fhir.org defines
/// them: the requested definition, the properties that concept extensions carry (weight, label, order), the
/// status of a deprecated or (provider) inactive concept, then the other requested properties.
fn entry_properties(ctx: &Ctx<'_>, e: &Entry) -> Vec<Value> {
    let mut props = Vec::new();
    let Some((cs, i)) = &e.concept else {
        return props;
    };
    let c = &cs.concepts[*i];
    let requested = |p: &str| ctx.opts.properties.iter().any(|r| r == p);
    if let (true, Some(d)) = (requested("definition"), &c.definition) {
        props.push(json!({"code": "definition", "valueString": d}));
    }
    for (vs_url, cs_url, code, _) in EXTENSION_PROPERTIES {
        let value = find_extension(&e.vs_extensions, vs_url)
            .or_else(|| find_extension(&c.extensions, cs_url))
            .and_then(extension_value);
        if let Some(v) = value {
            // Labels are strings; weights and orders are decimals (an integer order reads as one).
            let key = if *code == "label" {
                "valueString"
            } else {
                "valueDecimal"
            };
            let mut p = json!({"code": code});
            p[key] = v.clone();
            props.push(p);
        }
    }
    if !requested("status") {
        if auto_status(ctx, e) {
            props.push(json!({"code": "status", "valueCode": "inactive"}));
        } else if let Some(status) = retired_status(c) {
            props.push(json!({"code": "status", "valueCode": status}));
        }
    }
    for p in ctx.opts.properties.iter().filter(|p| *p != "definition") {
        match p.as_str() {
            "display" => {
                if let Some(d) = &c.display {
                    props.push(json!({"code": "display", "valueString": d}));
                }
            }
            _ => {
                for v in c.properties.iter().filter(|v| &v.code == p) {
                    let mut o = json!({"code": p});
                    o[v.key.as_str()] = v.value.clone();
                    props.push(o);
                }
            }
        }
    }
    props
}

/// The status an expansion shows unasked for a concept of a FHIR code system: the value of its
/// `standards-status` extension, else `deprecated` for a concept whose status property says so, else any other
/// status property that is not `active` (`retired`), as tx.fhir.org shows them.
fn retired_status(c: &crate::codesystem::Concept) -> Option<String> {
    find_extension(&c.extensions, crate::codesystem::STANDARDS_STATUS)
        .and_then(|e| e["valueCode"].as_str())
        .map(str::to_string)
        .or_else(|| c.is_deprecated().then(|| "deprecated".to_string()))
        .or_else(|| c.status().filter(|s| s != "active"))
}

/// `expansion.property`: the requested properties, and the ones the shown concepts carry unasked, in the
/// order of [`entry_properties`].
fn property_declarations(ctx: &Ctx<'_>, entries: &[Entry]) -> Vec<Value> {
    let requested = |p: &str| ctx.opts.properties.iter().any(|r| r == p);
    let declare = |p: &str| {
        let uri = entries.iter().find_map(|e| {
            e.concept
                .as_ref()
                .and_then(|(cs, _)| cs.property_def(p).and_then(|d| d.uri.clone()))
        });
        let uri = uri.or_else(|| {
            STANDARD_PROPERTIES
                .contains(&p)
                .then(|| format!("http://hl7.org/fhir/concept-properties#{p}"))
        });
        let mut decl = json!({"code": p});
        if let Some(u) = uri {
            decl["uri"] = json!(u);
        }
        decl
    };
    let mut out = Vec::new();
    if requested("definition") {
        out.push(declare("definition"));
    }
    let shown: Vec<Vec<Value>> = entries.iter().map(|e| entry_properties(ctx, e)).collect();
    let carried = |code: &str| shown.iter().flatten().any(|p| p["code"] == code);
    for (_, _, code, uri) in EXTENSION_PROPERTIES {
        if carried(code) {
            out.push(json!({"code": code, "uri": uri}));
        }
    }
    if !requested("status") && carried("status") {
        out.push(json!({"code": "status", "uri": STATUS_URI}));
    }
    for p in ctx.opts.properties.iter().filter(|p| *p != "definition") {
        out.push(declare(p));
    }
    out
}

/// Systems the value set includes in more than one stated version: their codes carry `version` in the
/// expansion, since the code alone no longer says which version it came from.
fn systems_in_several_versions(vs: &Value, used: &[String]) -> Vec<String> {
    let mut seen: HashMap<&str, Vec<&str>> = HashMap::new();
    for inc in vs["compose"]["include"].as_array().into_iter().flatten() {
        if let (Some(system), Some(version)) = (inc["system"].as_str(), inc["version"].as_str()) {
            let versions = seen.entry(system).or_default();
            if !versions.contains(&version) {
                versions.push(version);
            }
        }
    }
    let mut used_versions: HashMap<&str, Vec<&str>> = HashMap::new();
    for u in used {
        if let Some((system, version)) = u.split_once('|') {
            used_versions.entry(system).or_default().push(version);
        }
    }
    seen.into_iter()
        .chain(used_versions)
        .filter(|(_, v)| v.len() > 1)
        .map(|(s, _)| s.to_string())
        .collect()
}

fn render_entry(ctx: &Ctx<'_>, e: &Entry) -> Value {
    let mut m = Map::new();
    m.insert("system".into(), json!(e.system));
    if e.is_abstract() {
        m.insert("abstract".into(), json!(true));
    }
    if e.inactive() {
        m.insert("inactive".into(), json!(true));
    }
    if let (true, Some(v)) = (e.show_version, e.version()) {
        m.insert("version".into(), json!(v));
    }
    m.insert("code".into(), json!(e.code));
    let display = display_of(ctx, e);
    if let Some(d) = &display {
        m.insert("display".into(), json!(d));
    }
    let concept = e.concept.as_ref().map(|(cs, i)| (cs, &cs.concepts[*i]));
    // The code system's extensions first, then the value set's; each side only those an expansion carries.
    let mut extensions: Vec<Value> = concept
        .map(|(_, c)| {
            kept_extensions(&c.extensions, CS_ECHOED_EXTENSIONS)
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    extensions.extend(kept_extensions(&e.vs_extensions, VS_ECHOED_EXTENSIONS).cloned());
    if ctx.opts.include_designations {
        let mut designations: Vec<Value> = Vec::new();
        if let Some((cs, concept)) = concept {
            // When the display shown is not the code system's own (another language was asked for, or none
            // of its designations is acceptable), that display becomes the preferred designation of its
            // language.
            let swapped =
                e.vs_display.is_none() && concept.display.is_some() && display != concept.display;
            if swapped {
                designations.push(json!({
                    "language": cs.language.as_deref().unwrap_or("en"),
                    "use": preferred_for_language(),
                    "value": concept.display,
                }));
            }
            for d in &concept.designations {
                if swapped && Some(&d.value) == display.as_ref() {
                    continue;
                }
                if !designation_wanted(ctx, d) {
                    continue;
                }
                let mut v = Map::new();
                let kept: Vec<Value> = kept_extensions(&d.extensions, DESIGNATION_EXTENSIONS)
                    .cloned()
                    .collect();
                if !kept.is_empty() {
                    v.insert("extension".into(), Value::Array(kept));
                }
                if let Some(l) = &d.language {
                    v.insert("language".into(), json!(l));
                }
                if let Some(u) = &d.use_ {
                    v.insert("use".into(), u.clone());
                }
                v.insert("value".into(), json!(d.value));
                designations.push(Value::Object(v));
            }
        }
        // The value set's own designations follow the code system's.
        for d in &e.vs_designations {
            let mut d = d.clone();
            if let Some(list) = d.get("extension").and_then(Value::as_array) {
                let kept: Vec<Value> = kept_extensions(list, DESIGNATION_EXTENSIONS)
                    .cloned()
                    .collect();
                if let (true, Some(o)) = (kept.is_empty(), d.as_object_mut()) {
                    o.remove("extension");
                } else {
                    d["extension"] = Value::Array(kept);
                }
            }
            designations.push(d);
        }
        if !designations.is_empty() {
            m.insert("designation".into(), Value::Array(designations));
        }
    }
    let mut props = entry_properties(ctx, e);
    // tx.fhir.org lists a code's properties by code.
    props.sort_by(|a, b| a["code"].as_str().cmp(&b["code"].as_str()));
    // R4 has no `contains.property`: R5's cross-version extension carries it.
    extensions.extend(props.iter().map(|p| r5_extension("contains.property", p)));
    if !extensions.is_empty() {
        m.insert("extension".into(), Value::Array(extensions));
    }
    Value::Object(m)
}

/// The designation use of a display that is the preferred one in its language.
pub(crate) fn preferred_for_language() -> Value {
    json!({
        "system": "http://terminology.hl7.org/CodeSystem/hl7TermMaintInfra",
        "code": "preferredForLanguage",
        "display": "Preferred For Language"
    })
}

/// `{"code": c, "valueX": v}` (or `"uri": u`) as the R5 cross-version extension
/// `extension-ValueSet.expansion.<element>` with one sub-extension per member.
fn r5_extension(element: &str, item: &Value) -> Value {
    let parts: Vec<Value> = item
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| match k.as_str() {
            "code" => json!({"url": "code", "valueCode": v}),
            "uri" => json!({"url": "uri", "valueUri": v}),
            value => json!({"url": "value", value: v}),
        })
        .collect();
    json!({
        "url": format!("http://hl7.org/fhir/5.0/StructureDefinition/extension-ValueSet.expansion.{element}"),
        "extension": parts,
    })
}

/// Whether the includes of `vs` can be listed as the code systems' tree, by tx.fhir.org's rules: an include
/// that lists codes, imports a value set or combines several filters makes the whole expansion flat (its codes
/// are a selection, not a subtree), and so does a text filter over a whole code system, which tx.fhir.org
/// answers from its text search, a flat list of matches without a total. A text filter applied to an include
/// with one filter (`is-a`, ...) only narrows that include, whose codes keep their parents: `search-filter-yes`
/// nests `data-exchange1..3` under `data-exchange`, while `search-all-yes` lists the same four codes flat.
fn compose_keeps_hierarchy(vs: &Value, text_filter: bool) -> bool {
    vs["compose"]["include"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|inc| {
            let filters = inc["filter"].as_array().map_or(0, Vec::len);
            let whole_system = filters == 0 && inc.get("concept").is_none();
            inc.get("valueSet").is_none()
                && inc.get("concept").is_none()
                && filters <= 1
                && !(text_filter && whole_system)
        })
}

/// Nests hierarchical entries under their nearest ancestor present in the expansion.
fn render_nested(ctx: &Ctx<'_>, entries: &[Entry]) -> Vec<Value> {
    // Position of each (system, concept index) in `entries`.
    let mut pos: HashMap<(String, usize), usize> = HashMap::new();
    for (n, e) in entries.iter().enumerate() {
        if let (true, Some((_, i))) = (e.hierarchical, &e.concept) {
            pos.insert((e.system.clone(), *i), n);
        }
    }
    let mut parent_of: Vec<Option<usize>> = vec![None; entries.len()];
    for (n, e) in entries.iter().enumerate() {
        if !e.hierarchical {
            continue;
        }
        let Some((cs, i)) = &e.concept else { continue };
        // Breadth-first up the hierarchy to the nearest included ancestor.
        let mut frontier = cs.concepts[*i].parents.clone();
        let mut seen = std::collections::HashSet::new();
        'up: while !frontier.is_empty() {
            let mut next = Vec::new();
            for p in frontier {
                if !seen.insert(p) {
                    continue;
                }
                if let Some(&m) = pos.get(&(e.system.clone(), p)) {
                    parent_of[n] = Some(m);
                    break 'up;
                }
                next.extend(cs.concepts[p].parents.iter().copied());
            }
            frontier = next;
        }
    }
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); entries.len()];
    let mut roots = Vec::new();
    for (n, p) in parent_of.iter().enumerate() {
        match p {
            Some(p) => children[*p].push(n),
            None => roots.push(n),
        }
    }
    fn build(ctx: &Ctx<'_>, entries: &[Entry], children: &[Vec<usize>], n: usize) -> Value {
        let mut v = render_entry(ctx, &entries[n]);
        if !children[n].is_empty() {
            v["contains"] = Value::Array(
                children[n]
                    .iter()
                    .map(|&c| build(ctx, entries, children, c))
                    .collect(),
            );
        }
        v
    }
    roots
        .into_iter()
        .map(|n| build(ctx, entries, &children, n))
        .collect()
}

/// The issue of an expansion refused for its size; `name` is how the value set is named in the message.
pub(crate) fn too_costly(name: &str, limit: usize) -> Issue {
    Issue::new(
        Severity::Error,
        "too-costly",
        None,
        format!("The value set '{name}' expansion has too many codes to produce (>{limit})"),
    )
}
