//! ValueSet expansion: evaluates `compose` (includes, excludes, filters, imported value sets) over the
//! code systems in scope into an ordered set of codes, then applies the expansion parameters.

use crate::codesystem::{CodeSystem, Content};
use crate::context::{Ctx, split_canonical};
use crate::error::{ErrorKind, Issue, Severity, TxError};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// One code of an expansion.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its system.
    pub system: String,
    /// The code.
    pub code: String,
    /// Display from the value set, overriding the code system's.
    pub vs_display: Option<String>,
    /// Designations given in the value set.
    pub vs_designations: Vec<Value>,
    /// Extensions on the value set's concept reference.
    pub vs_extensions: Vec<Value>,
    /// The code system and concept index, when the code is defined there.
    pub concept: Option<(Arc<CodeSystem>, usize)>,
    /// Whether it came from an include that keeps the code system's hierarchy.
    pub hierarchical: bool,
    /// The code system version stated by the include it came from.
    pub include_version: Option<String>,
    /// Whether the expansion shows its code system version.
    pub show_version: bool,
}

impl Entry {
    /// Inactive in its code system.
    pub fn inactive(&self) -> bool {
        self.concept
            .as_ref()
            .is_some_and(|(cs, i)| cs.concepts[*i].is_inactive())
    }

    /// Abstract in its code system.
    pub fn is_abstract(&self) -> bool {
        self.concept
            .as_ref()
            .is_some_and(|(cs, i)| cs.is_abstract(*i))
    }
}

impl Entry {
    /// The version of the code system the code comes from.
    pub fn version(&self) -> Option<&str> {
        self.concept
            .as_ref()
            .and_then(|(cs, _)| cs.version.as_deref())
    }

    fn key(&self) -> (String, String, String) {
        (
            self.system.clone(),
            self.code.clone(),
            self.version().unwrap_or_default().to_string(),
        )
    }
}

/// An ordered set of codes keyed by (system, code, code system version): a value set may hold the same code
/// from two versions of its code system.
#[derive(Debug, Clone, Default)]
pub struct CodeSet {
    /// Entries in order.
    pub entries: Vec<Entry>,
    index: HashMap<(String, String, String), usize>,
    codes: HashMap<(String, String), usize>,
}

impl CodeSet {
    fn insert(&mut self, e: Entry) {
        let key = e.key();
        if !self.index.contains_key(&key) {
            self.index.insert(key, self.entries.len());
            *self
                .codes
                .entry((e.system.clone(), e.code.clone()))
                .or_default() += 1;
            self.entries.push(e);
        }
    }

    /// With `versionsMatch`, a code from another version replaces the one already there, in its place.
    fn insert_merged(&mut self, e: Entry) {
        match self
            .entries
            .iter()
            .position(|x| x.system == e.system && x.code == e.code)
        {
            Some(i) => {
                self.entries[i] = e;
                self.reindex();
            }
            None => self.insert(e),
        }
    }

    /// Whether (system, code) is in the set, in any version.
    pub fn contains(&self, system: &str, code: &str) -> bool {
        self.codes
            .contains_key(&(system.to_string(), code.to_string()))
    }

    /// Whether (system, code) is in the set in code system `version` (any version when None); codes not
    /// defined by a loaded code system match every version.
    pub fn contains_in(&self, system: &str, code: &str, version: Option<&str>) -> bool {
        let Some(v) = version else {
            return self.contains(system, code);
        };
        let key = |v: &str| (system.to_string(), code.to_string(), v.to_string());
        self.index.contains_key(&key(v)) || self.index.contains_key(&key(""))
    }

    fn contains_entry(&self, e: &Entry) -> bool {
        self.index.contains_key(&e.key())
    }

    fn retain(&mut self, keep: impl Fn(&Entry) -> bool) {
        self.entries.retain(|e| keep(e));
        self.reindex();
    }

    fn reindex(&mut self) {
        self.index.clear();
        self.codes.clear();
        for (i, e) in self.entries.iter().enumerate() {
            self.index.insert(e.key(), i);
            *self
                .codes
                .entry((e.system.clone(), e.code.clone()))
                .or_default() += 1;
        }
    }
}

/// What an evaluation of a value set's compose produced besides codes.
#[derive(Debug, Clone, Default)]
pub struct Evaluated {
    /// The codes.
    pub set: CodeSet,
    /// `url|version` of each code system used.
    pub used_cs: Vec<String>,
    /// `url|version` of each supplement applied to a code system used.
    pub used_supplements: Vec<String>,
    /// `url|version` of each value set imported.
    pub used_vs: Vec<String>,
    /// Codes (system, code) the compose left out for being inactive (`compose.inactive: false`).
    pub inactive_left_out: Vec<(String, String)>,
    /// `url|version` of each code system used that is only a fragment (`content: fragment`).
    pub used_fragments: Vec<String>,
    /// Warnings met on the way.
    pub issues: Vec<Issue>,
    /// Codes of different versions of one code system were merged (`versionsMatch`).
    pub versions_match: bool,
    /// Imported value sets that could not be found (only while includes are evaluated leniently).
    pub unresolved: Vec<Issue>,
    /// A provider's include admits more codes than it lists (SNOMED CT expressions), with the reason to give
    /// when there is one.
    pub unclosed: Option<Option<String>>,
    /// The codes include examples standing for an infinite grammar (UCUM's common units): the expansion is
    /// returned whole, never refused as too costly.
    pub examples: bool,
    /// The value sets (`url|version`) those examples come from.
    pub example_sources: Vec<String>,
}

/// The canonical `url|version` of a value set resource.
pub fn vs_canonical(vs: &Value) -> String {
    let url = vs["url"].as_str().unwrap_or("");
    match vs["version"].as_str() {
        Some(v) => format!("{url}|{v}"),
        None => url.to_string(),
    }
}

/// Supplements a value set asks for through the `valueset-supplement` extension.
pub fn vs_supplements(vs: &Value) -> Vec<String> {
    vs["extension"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|e| {
                    e["url"] == "http://hl7.org/fhir/StructureDefinition/valueset-supplement"
                })
                .filter_map(|e| e["valueCanonical"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Evaluates the compose of `vs`. `stack` holds the value sets being evaluated, to detect cycles.
pub fn evaluate(ctx: &Ctx<'_>, vs: &Value, stack: &mut Vec<String>) -> Result<Evaluated, TxError> {
    let canonical = vs_canonical(vs);
    if stack.contains(&canonical) {
        let mut path = stack.clone();
        path.retain(|p| !p.is_empty());
        return Err(TxError::new(
            ErrorKind::Invalid,
            Issue::new(
                Severity::Error,
                "processing",
                Some("vs-invalid"),
                format!(
                    "Found a circularity pointing to {canonical} processing ValueSet with pathway [{}]",
                    path.join(", ")
                ),
            ),
        ));
    }
    stack.push(canonical);
    let mut out = Evaluated::default();
    let result = evaluate_compose(ctx, vs, stack, &mut out);
    stack.pop();
    result?;
    Ok(out)
}

fn evaluate_compose(
    ctx: &Ctx<'_>,
    vs: &Value,
    stack: &mut Vec<String>,
    out: &mut Evaluated,
) -> Result<(), TxError> {
    let Some(compose) = vs.get("compose") else {
        // An already expanded value set without compose: take its expansion.
        if let Some(contains) = vs["expansion"]["contains"].as_array() {
            add_contains(contains, &mut out.set);
        }
        return Ok(());
    };
    let supplements = vs_supplements(vs);
    let versions_match = versions_match(vs);
    out.versions_match = versions_match;
    let includes = compose["include"].as_array().cloned().unwrap_or_default();
    for (i, inc) in includes.iter().enumerate() {
        let set = evaluate_include(
            ctx,
            vs,
            inc,
            &supplements,
            stack,
            out,
            &format!("ValueSet.compose.include[{i}]"),
        )?;
        for mut e in set.entries {
            e.include_version = inc["version"].as_str().map(str::to_string);
            if versions_match {
                out.set.insert_merged(e);
            } else {
                out.set.insert(e);
            }
        }
    }
    if let Some(excludes) = compose["exclude"].as_array() {
        for (i, exc) in excludes.iter().enumerate() {
            let set = evaluate_include(
                ctx,
                vs,
                exc,
                &supplements,
                stack,
                out,
                &format!("ValueSet.compose.exclude[{i}]"),
            )?;
            if versions_match {
                out.set.retain(|e| !set.contains(&e.system, &e.code));
            } else {
                out.set.retain(|e| !set.contains_entry(e));
            }
        }
    }
    // `compose.inactive: false`: the value set leaves inactive codes out.
    if compose["inactive"] == Value::Bool(false) {
        // Kept aside so validation can say why such a code is not in the value set.
        for e in out.set.entries.iter().filter(|e| e.inactive()) {
            out.inactive_left_out
                .push((e.system.clone(), e.code.clone()));
        }
        out.set.retain(|e| !e.inactive());
    }
    if several_versions(&out.set) {
        // As tx.fhir.org lists them: by code, the newest stated version first, unversioned includes last.
        out.set.entries.sort_by(|a, b| {
            (&a.system, &a.code)
                .cmp(&(&b.system, &b.code))
                .then_with(|| match (&a.include_version, &b.include_version) {
                    (Some(x), Some(y)) => crate::registry::compare_versions(y, x),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => std::cmp::Ordering::Equal,
                })
        });
        out.set.reindex();
    }
    Ok(())
}

/// The value (the `value` extension) of the expansion parameter `name` a value set states in its compose
/// (`valueset-expansion-parameter`); the name may be given as a code or a string.
pub(crate) fn expansion_parameter<'a>(vs: &'a Value, name: &str) -> Option<&'a Value> {
    vs["compose"]["extension"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| {
            e["url"] == "http://hl7.org/fhir/StructureDefinition/valueset-expansion-parameter"
        })
        .find_map(|e| {
            let parts = e["extension"].as_array()?;
            let n = parts.iter().find(|p| p["url"] == "name")?;
            if n["valueCode"] != name && n["valueString"] != name {
                return None;
            }
            parts.iter().find(|p| p["url"] == "value")
        })
}

/// The `versionsMatch` expansion parameter of a value set: codes of different versions of a code system are
/// the same code. Unstated, it holds when a whole code system version is excluded (tx.fhir.org's behaviour).
pub(crate) fn versions_match(vs: &Value) -> bool {
    let stated = expansion_parameter(vs, "versionsMatch").and_then(|value| {
        value["valueString"]
            .as_str()
            .map(|v| v == "true")
            .or(value["valueBoolean"].as_bool())
    });
    stated.unwrap_or_else(|| {
        vs["compose"]["exclude"].as_array().is_some_and(|a| {
            a.iter().any(|x| {
                x["version"].is_string() && x.get("concept").is_none() && x.get("filter").is_none()
            })
        })
    })
}

/// Whether some code occurs in more than one version of its code system.
fn several_versions(set: &CodeSet) -> bool {
    set.codes.values().any(|&n| n > 1)
}

fn add_contains(contains: &[Value], set: &mut CodeSet) {
    for c in contains {
        if let (Some(system), Some(code)) = (c["system"].as_str(), c["code"].as_str()) {
            set.insert(Entry {
                system: system.to_string(),
                code: code.to_string(),
                vs_display: c["display"].as_str().map(str::to_string),
                vs_designations: Vec::new(),
                vs_extensions: Vec::new(),
                concept: None,
                hierarchical: false,
                include_version: None,
                show_version: false,
            });
        }
        if let Some(children) = c["contains"].as_array() {
            add_contains(children, set);
        }
    }
}

/// Resolves the code system an include names, applying the request's version rules.
pub fn resolve_include_cs(
    ctx: &Ctx<'_>,
    system: &str,
    stated: Option<&str>,
    supplements: &[String],
) -> Result<Arc<CodeSystem>, TxError> {
    let version = ctx.effective_version(system, stated);
    match ctx.find_cs(system, version.as_deref()) {
        Some(cs) => {
            if !ctx.lenient_includes.get() {
                ctx.check_version(&cs)?;
            }
            ctx.with_supplements(cs, supplements)
        }
        None => Err(unknown_cs_for_expansion(ctx, system, version.as_deref())),
    }
}

fn unknown_cs_for_expansion(ctx: &Ctx<'_>, system: &str, version: Option<&str>) -> TxError {
    let known = ctx.known_versions(system);
    let text = match version {
        Some(v) if !known.is_empty() => format!(
            "A definition for CodeSystem '{system}' version '{v}' could not be found, so the value set cannot be expanded. Valid versions: {}",
            known.join(" or ")
        ),
        Some(v) => format!(
            "A definition for CodeSystem '{system}' version '{v}' could not be found, so the value set cannot be expanded. No versions of this code system are known"
        ),
        None => format!(
            "A definition for CodeSystem '{system}' could not be found, so the value set cannot be expanded"
        ),
    };
    TxError::new(
        ErrorKind::NotFound,
        Issue::new(Severity::Error, "not-found", Some("not-found"), text),
    )
}

fn evaluate_include(
    ctx: &Ctx<'_>,
    container: &Value,
    inc: &Value,
    supplements: &[String],
    stack: &mut Vec<String>,
    out: &mut Evaluated,
    path: &str,
) -> Result<CodeSet, TxError> {
    let mut result: Option<CodeSet> = None;
    if let Some(system) = inc["system"].as_str() {
        if ctx.lenient_includes.get() {
            // An unknown code system (version) contributes nothing; validation reports it against the coding.
            let version = ctx.effective_version(system, inc["version"].as_str());
            if ctx.find_cs(system, version.as_deref()).is_none() {
                return Ok(CodeSet::default());
            }
        }
        let cs = resolve_include_cs(ctx, system, inc["version"].as_str(), supplements)?;
        let used = cs.versioned_url();
        if cs.content == Content::Fragment {
            if !out.used_fragments.contains(&used) {
                out.used_fragments.push(used.clone());
            }
            // Codes of the whole system (or a filter over it) may lie outside the fragment we hold.
            if inc.get("concept").is_none() {
                out.unclosed = Some(Some(format!(
                    "This extension is based on a fragment of the code system {}",
                    cs.url
                )));
            }
        }
        if !out.used_cs.contains(&used) {
            out.used_cs.push(used);
        }
        for s in &cs.applied_supplements {
            if !out.used_supplements.contains(s) {
                out.used_supplements.push(s.clone());
            }
        }
        let mut set = CodeSet::default();
        if let Some(provider) = cs.provider.clone() {
            result = Some(provider_include(
                ctx, container, inc, system, &cs, &*provider, out, path,
            )?);
        } else if let Some(concepts) = inc["concept"].as_array() {
            for c in concepts {
                let code = c["code"].as_str().unwrap_or_default();
                let found = cs.find(code);
                if found.is_none() && cs.content == Content::Complete {
                    continue;
                }
                set.insert(Entry {
                    system: system.to_string(),
                    code: found
                        .map(|i| cs.concepts[i].code.clone())
                        .unwrap_or_else(|| code.to_string()),
                    vs_display: c["display"].as_str().map(str::to_string),
                    vs_designations: c["designation"].as_array().cloned().unwrap_or_default(),
                    vs_extensions: c["extension"].as_array().cloned().unwrap_or_default(),
                    concept: found.map(|i| (cs.clone(), i)),
                    hierarchical: false,
                    include_version: None,
                    show_version: false,
                });
            }
        } else {
            let filters = inc["filter"].as_array().cloned().unwrap_or_default();
            let mut compiled = Vec::new();
            for (fi, f) in filters.iter().enumerate() {
                compiled.push(crate::filter::Filter::compile(
                    &cs,
                    f,
                    &format!("{path}.filter[{fi}]"),
                )?);
            }
            if filters.is_empty() && matches!(cs.content, Content::NotPresent | Content::Supplement)
            {
                return Err(TxError::new(
                    ErrorKind::NotSupported,
                    Issue::new(
                        Severity::Error,
                        "not-supported",
                        None,
                        format!(
                            "The code system '{}' cannot be expanded because its codes cannot be iterated or enumerated in any meaningful sense",
                            cs.url
                        ),
                    ),
                ));
            }
            for (i, c) in cs.concepts.iter().enumerate() {
                if compiled.iter().all(|f| f.matches(&cs, i)) {
                    set.insert(Entry {
                        system: system.to_string(),
                        code: c.code.clone(),
                        vs_display: None,
                        vs_designations: Vec::new(),
                        vs_extensions: Vec::new(),
                        concept: Some((cs.clone(), i)),
                        hierarchical: true,
                        include_version: None,
                        show_version: false,
                    });
                }
            }
        }
        if cs.provider.is_none() {
            result = Some(set);
        }
    }
    if let Some(vss) = inc["valueSet"].as_array() {
        for v in vss {
            let canonical = v.as_str().unwrap_or_default();
            // `#id` names a value set contained in the one being evaluated.
            let contained = canonical.strip_prefix('#').and_then(|id| {
                container["contained"]
                    .as_array()?
                    .iter()
                    .find(|c| c["resourceType"] == "ValueSet" && c["id"] == id)
                    .map(|c| Arc::new(c.clone()))
            });
            let is_contained = contained.is_some();
            let Some(imported) = contained.or_else(|| ctx.find_vs(canonical)) else {
                let (url, stated) = split_canonical(canonical);
                // A versionless import is pinned by `default-valueset-version` when the request names one.
                let pinned = ctx
                    .opts
                    .default_vs_versions
                    .iter()
                    .find(|(u, _)| u == url)
                    .map(|(_, v)| v.as_str());
                // tx.fhir.org's validator and expander word a missing pinned import differently.
                let issue = match (stated, pinned) {
                    (None, Some(ver)) if ctx.lenient_includes.get() => Issue::new(
                        Severity::Error,
                        "not-found",
                        Some("not-found"),
                        format!("A definition for the value Set '{url}|{ver}' could not be found"),
                    )
                    .with_id("Unable_to_resolve_value_Set_"),
                    (Some(ver), _) | (None, Some(ver)) => Issue::new(
                        Severity::Error,
                        "not-found",
                        Some("not-found"),
                        format!("Unable to find included value set '{url}' version '{ver}'"),
                    )
                    .with_id("VS_EXP_IMPORT_UNK_PINNED"),
                    (None, None) => Issue::new(
                        Severity::Error,
                        "not-found",
                        Some("not-found"),
                        format!("A definition for the value Set '{canonical}' could not be found"),
                    )
                    .with_id("Unable_to_resolve_value_Set_"),
                };
                if ctx.lenient_includes.get() {
                    // Validation answers "not valid" and says why.
                    out.unresolved.push(issue);
                    result = Some(CodeSet::default());
                    continue;
                }
                return Err(TxError::new(ErrorKind::NotFound, issue));
            };
            let ev = evaluate(ctx, &imported, stack)?;
            out.unresolved.extend(ev.unresolved.iter().cloned());
            let c = vs_canonical(&imported);
            // A contained value set is part of the one that contains it, not a value set of its own that a
            // client could look up: tx.fhir.org does not list it as `used-valueset`.
            if !is_contained && !out.used_vs.contains(&c) {
                out.used_vs.push(c);
            }
            for u in ev.used_cs {
                if !out.used_cs.contains(&u) {
                    out.used_cs.push(u);
                }
            }
            for u in ev.used_supplements {
                if !out.used_supplements.contains(&u) {
                    out.used_supplements.push(u);
                }
            }
            for u in ev.used_fragments {
                if !out.used_fragments.contains(&u) {
                    out.used_fragments.push(u);
                }
            }
            out.issues.extend(ev.issues);
            if ev.unclosed.is_some() {
                out.unclosed = ev.unclosed;
            }
            out.examples |= ev.examples;
            for u in ev.example_sources {
                if !out.example_sources.contains(&u) {
                    out.example_sources.push(u);
                }
            }
            // An imported value set contributes its codes, not its code system's hierarchy: tx.fhir.org lists
            // them flat.
            let mut imported_set = ev.set;
            for e in imported_set.entries.iter_mut() {
                e.hierarchical = false;
            }
            result = Some(match result {
                None => imported_set,
                Some(mut s) => {
                    s.retain(|e| imported_set.contains(&e.system, &e.code));
                    s
                }
            });
        }
    }
    Ok(result.unwrap_or_default())
}

/// An include of a code system served by a provider: listed codes are compiled as given; filters are
/// evaluated by the provider (only the probed codes while validating), refused as too costly before anything
/// is compiled when they select more than an expansion may return.
#[allow(clippy::too_many_arguments)]
fn provider_include(
    ctx: &Ctx<'_>,
    container: &Value,
    inc: &Value,
    system: &str,
    cs: &Arc<CodeSystem>,
    provider: &dyn crate::provider::CodeSystemProvider,
    out: &mut Evaluated,
    path: &str,
) -> Result<CodeSet, TxError> {
    let mut set = CodeSet::default();
    let entry = |code: String, compiled: &Arc<CodeSystem>, c: Option<&Value>| {
        let found = compiled.find(&code);
        found.map(|i| Entry {
            system: system.to_string(),
            code,
            vs_display: c.and_then(|c| c["display"].as_str().map(str::to_string)),
            vs_designations: c
                .and_then(|c| c["designation"].as_array().cloned())
                .unwrap_or_default(),
            vs_extensions: c
                .and_then(|c| c["extension"].as_array().cloned())
                .unwrap_or_default(),
            concept: Some((compiled.clone(), i)),
            // Provider code systems are polyhierarchies too large to nest: expansions are flat.
            hierarchical: false,
            include_version: None,
            show_version: false,
        })
    };
    if let Some(concepts) = inc["concept"].as_array() {
        let codes: Vec<&str> = concepts.iter().filter_map(|c| c["code"].as_str()).collect();
        let compiled = ctx.compile(cs, &codes, crate::provider::Detail::Expansion);
        for c in concepts {
            let code = c["code"].as_str().unwrap_or_default().to_string();
            if let Some(e) = entry(code, &compiled, Some(c)) {
                set.insert(e);
            }
        }
        return Ok(set);
    }
    let filters = inc["filter"].as_array().cloned().unwrap_or_default();
    let probe = ctx.probe.borrow().clone();
    let mut selection = provider.select(&filters, probe.as_deref(), path)?;
    if let Some(reason) = selection.unclosed.take() {
        out.unclosed = Some(reason);
    }
    if provider.expands_to_examples() {
        out.examples = true;
        // Unfiltered, the expansion is that value set's (tx.fhir.org then warns of its status); a filter's
        // selection is the provider's own.
        if let Some(u) = provider.examples_source().filter(|_| filters.is_empty())
            && !out.example_sources.contains(&u)
        {
            out.example_sources.push(u);
        }
    }
    // An expansion with a text filter compiles only the concepts the provider's index says could match (the
    // generic filter then decides on the displays), not every selected concept.
    if probe.is_none()
        && let Some(filter) = &ctx.opts.filter
        && let Some(candidates) = provider.text_candidates(&selection.codes, filter)?
    {
        selection.codes = candidates;
    }
    if probe.is_none()
        && ctx.opts.count.is_none()
        && !provider.expands_to_examples()
        && selection.codes.len() > ctx.max_expansion
    {
        // tx.fhir.org names the value set by its URL alone here.
        let url = container["url"].as_str().unwrap_or_default();
        return Err(TxError::new(
            ErrorKind::TooCostly,
            crate::expansion::too_costly(url, ctx.max_expansion).with_id("VALUESET_TOO_COSTLY"),
        ));
    }
    let codes: Vec<&str> = selection.codes.iter().map(String::as_str).collect();
    let compiled = ctx.compile(cs, &codes, crate::provider::Detail::Expansion);
    for code in &selection.codes {
        if let Some(e) = entry(code.clone(), &compiled, None) {
            set.insert(e);
        }
    }
    Ok(set)
}
