//! The facade: [`Terminology`] holds the loaded content and answers the FHIR terminology operations,
//! search and read. The server and the CLI call only this.

use crate::codesystem::CodeSystem;
use crate::context::{Ctx, Options};
use crate::error::TxError;
use crate::params::Params;
use crate::provider::CodeSystemProvider;
use crate::registry::{Kind, Registry};
use serde_json::{Value, json};
use std::sync::Arc;

/// The parameters of `ValueSet/$validate-code` that name the value set (the rest name the code).
const VALUE_SET_PARAMS: &[&str] = &["url", "valueSet", "valueSetVersion", "context"];

/// The page size of a search without `_count`.
pub(crate) const DEFAULT_SEARCH_COUNT: usize = 100;

/// The largest page of a search: a larger `_count` is clamped to it (as HAPI clamps to its largest page size).
pub(crate) const MAX_SEARCH_COUNT: usize = 1000;

/// Limits and defaults of the service.
#[derive(Debug, Clone)]
pub struct Config {
    /// The largest expansion returned without paging (`count`); larger ones are refused as too costly.
    pub max_expansion: usize,
    /// Evaluated value sets kept for later `$expand` requests with the same parameters, and four times as many
    /// answers of the fast path (0: neither).
    pub expansion_cache_entries: usize,
    /// The byte budget of that cache (estimated from the codes held).
    pub expansion_cache_bytes: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_expansion: 1000,
            expansion_cache_entries: 1024,
            expansion_cache_bytes: 64 << 20,
        }
    }
}

/// A terminology operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Operation {
    /// `ValueSet/$expand`.
    Expand,
    /// `ValueSet/$validate-code`.
    ValidateVs,
    /// `CodeSystem/$validate-code`.
    ValidateCs,
    /// `CodeSystem/$lookup`.
    Lookup,
    /// `CodeSystem/$subsumes`.
    Subsumes,
    /// `ConceptMap/$translate`.
    Translate,
    /// `ValueSet/$batch-validate-code`.
    BatchValidate,
}

/// The terminology service over a fixed set of content.
#[derive(Debug)]
pub struct Terminology {
    registry: Registry,
    config: Config,
    providers: Vec<Arc<dyn CodeSystemProvider>>,
    /// Each provider's code system (metadata, no concepts), in the order of `providers`: made once, since
    /// building one clones the provider's resource and single-code requests look it up every time.
    provider_systems: Vec<Arc<CodeSystem>>,
    /// Evaluated value sets of earlier expansions. The content is fixed once served (registry and providers
    /// are never changed after start), so an entry is stale only if the request brought content of its own,
    /// and such requests are never cached.
    pub(crate) expansions: crate::expansion::ExpansionCache,
    /// The text of recent answers of the fast path's expansions (without their identifier and timestamp), by
    /// value set and parameters; bounded by the same bytes, disabled with it.
    pub(crate) expansion_texts: crate::expansion::TextCache,
    /// The JSON text of large registry resources as a search returns them whole, by the resource's address; each
    /// entry holds the resource, so that the address cannot be reused while it is cached.
    pub(crate) resource_texts: crate::cache::Lru<(Arc<Value>, bytes::Bytes)>,
}

impl Default for Terminology {
    fn default() -> Self {
        Terminology::new(Registry::new(), Config::default())
    }
}

/// The search Bundle's entry saying that `_count` (`asked`) was more than a page holds: one rule for both search
/// paths ([`Terminology::search`] and the fast path's text).
pub(crate) fn count_clamped_entry(asked: usize) -> Value {
    json!({
        "resource": {
            "resourceType": "OperationOutcome",
            "issue": [{
                "severity": "information",
                "code": "too-costly",
                "diagnostics": format!(
                    "_count {asked} exceeds the largest page, {MAX_SEARCH_COUNT}: the page holds at most {MAX_SEARCH_COUNT} entries"
                ),
            }],
        },
        "search": {"mode": "outcome"},
    })
}

/// Whether resource `r` passes every search parameter of `query` (`url`, `version`, `_id`, `status` exactly;
/// `name` and `title` by case-blind prefix; `system` as the URL or an included system; the rest are paging and
/// shaping parameters). The one rule of both search paths ([`Terminology::search`] and the fast path's text).
pub(crate) fn search_matches<K: AsRef<str>, V: AsRef<str>>(r: &Value, query: &[(K, V)]) -> bool {
    let text_match = |field: &str, want: &str| {
        r[field]
            .as_str()
            .is_some_and(|v| v.to_lowercase().starts_with(&want.to_lowercase()))
    };
    query.iter().all(|(k, v)| {
        let v = v.as_ref();
        match k.as_ref() {
            "url" => r["url"] == v,
            "version" => r["version"] == v,
            "_id" => r["id"] == v,
            "status" => r["status"] == v,
            "name" => text_match("name", v),
            "title" => text_match("title", v),
            "system" => {
                r["url"] == v
                    || r["compose"]["include"]
                        .as_array()
                        .is_some_and(|a| a.iter().any(|i| i["system"] == v))
            }
            _ => true,
        }
    })
}

impl Terminology {
    /// A service over `registry`, with the built-in code systems as far as they need no data files.
    pub fn new(registry: Registry, config: Config) -> Self {
        Terminology::with_builtin_data(registry, config, &crate::builtin::BuiltinData::default())
    }

    /// A service over `registry` whose built-in code systems use `data` (the IANA Language Subtag Registry's
    /// descriptions as BCP-47 displays).
    pub fn with_builtin_data(
        registry: Registry,
        config: Config,
        data: &crate::builtin::BuiltinData,
    ) -> Self {
        let expansions =
            crate::cache::Lru::new(config.expansion_cache_entries, config.expansion_cache_bytes);
        // Answers are a few kB: four times the entries, so that a typeahead's working set of text filters (the
        // bench's 1,214 prefixes) fits, which a least-recently-used cache cycled through does not.
        let expansion_texts = crate::cache::Lru::new(
            4 * config.expansion_cache_entries,
            config.expansion_cache_bytes,
        );
        // Grammar-based code systems (UCUM) need no content: every service answers for them.
        let providers = crate::builtin::builtin_providers(&registry, data);
        let provider_systems = providers.iter().map(|p| p.code_system()).collect();
        // A few dozen of the largest value sets (`snomed-intl-gps` is 2.3 MB of text), within the expansions' bytes.
        // Enough entries for every value set of the FHIR packages (1,621 in R4 and HL7 Terminology): a search
        // that cycles through more resources than the cache holds would find none of them kept.
        let resource_texts = crate::cache::Lru::new(4096, config.expansion_cache_bytes);
        Terminology {
            registry,
            config,
            providers,
            provider_systems,
            expansions,
            expansion_texts,
            resource_texts,
        }
    }

    /// This service with `provider` answering for its code system (it replaces any FHIR resource of that URL).
    pub fn with_provider(mut self, provider: Arc<dyn CodeSystemProvider>) -> Self {
        // Before the built-in ones, so that a provider given here answers for a system they also serve.
        self.provider_systems.insert(0, provider.code_system());
        self.providers.insert(0, provider);
        self
    }

    /// The code systems served by providers.
    pub fn providers(&self) -> &[Arc<dyn CodeSystemProvider>] {
        &self.providers
    }

    /// Entries and estimated bytes held by the expansion cache.
    pub fn expansion_cache_usage(&self) -> (usize, usize) {
        self.expansions.usage()
    }

    /// The loaded content.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Runs `op` with `params`; `accept_language` is the HTTP Accept-Language header, if any.
    pub fn run(
        &self,
        op: Operation,
        params: &Params,
        accept_language: Option<&str>,
    ) -> Result<Value, TxError> {
        if let Some(langs) = params.str("displayLanguage")
            && !crate::context::valid_language_list(&langs)
        {
            return Err(TxError::new(
                crate::error::ErrorKind::Invalid,
                crate::error::Issue::new(
                    crate::error::Severity::Error,
                    "processing",
                    Some("invalid-display"),
                    format!("Invalid displayLanguage: '{langs}'"),
                )
                .with_id("INVALID_DISPLAY_NAME"),
            ));
        }
        let ctx = self.context(params, accept_language);
        match op {
            Operation::Expand => {
                let defaults = expansion_defaults(&ctx, params, accept_language);
                if defaults.is_empty() {
                    crate::expansion::expand(&ctx, params, Some(&self.expansions))
                } else {
                    let mut params = params.clone();
                    for d in defaults {
                        params.push(d);
                    }
                    let ctx = self.context(&params, accept_language);
                    crate::expansion::expand(&ctx, &params, Some(&self.expansions))
                }
            }
            // `valueSetMode=NO_MEMBERSHIP_CHECK`: the coding in its code system, the value set left aside, as
            // tx.fhir.org answers the validator's request.
            Operation::ValidateVs if ctx.opts.no_membership_check => {
                crate::validate::validate_cs(&ctx, &params.without(VALUE_SET_PARAMS))
            }
            Operation::ValidateVs => match validation_language(&ctx, params, accept_language) {
                // The value set's language chooses the valid displays when the request names none.
                Some(lang) => {
                    let mut params = params.clone();
                    params.push(json!({"name": "displayLanguage", "valueCode": lang}));
                    let ctx = self.context(&params, accept_language);
                    crate::validate::validate_vs(&ctx, &params)
                }
                None => crate::validate::validate_vs(&ctx, params),
            },
            Operation::ValidateCs => crate::validate::validate_cs(&ctx, params),
            Operation::Lookup => crate::lookup::lookup(&ctx, params),
            Operation::Subsumes => crate::lookup::subsumes(&ctx, params),
            Operation::Translate => crate::translate::translate(&ctx, params),
            Operation::BatchValidate => self.batch_validate(params, accept_language),
        }
    }

    pub(crate) fn context(&self, params: &Params, accept_language: Option<&str>) -> Ctx<'_> {
        let mut overlay = Registry::new();
        for r in params.resources("tx-resource") {
            overlay.add(r.clone());
        }
        self.context_of(overlay, Options::from_params(params, accept_language))
    }

    /// A request's context without parameters: what the fast path resolves code systems and value sets in.
    pub(crate) fn plain_context(&self) -> Ctx<'_> {
        // What `context` makes of no parameters, without asking an empty list for each option by name (a test
        // checks that the two agree).
        self.context_of(Registry::new(), Options::default())
    }

    /// A context over the server's resources with the request's own (`overlay`) and its options.
    pub(crate) fn context_of(&self, overlay: Registry, opts: Options) -> Ctx<'_> {
        Ctx {
            base: &self.registry,
            overlay,
            opts,
            max_expansion: self.config.max_expansion,
            lenient_includes: std::cell::Cell::new(false),
            used_version_rules: Default::default(),
            providers: &self.providers,
            provider_systems: &self.provider_systems,
            probe: Default::default(),
        }
    }

    /// `$batch-validate-code`: each `validation` is a `$validate-code` of its own, with the batch's other
    /// parameters as defaults that its own parameters override (`lenient-display-validation` per item).
    fn batch_validate(
        &self,
        params: &Params,
        accept_language: Option<&str>,
    ) -> Result<Value, TxError> {
        let mut out = Vec::new();
        for v in params.named("validation") {
            let mut own: Vec<Value> = Vec::new();
            if let Some(inner) = v.get("resource") {
                own.extend(Params::from_json(inner).entries().iter().cloned());
            }
            own.extend(v["part"].as_array().into_iter().flatten().cloned());
            let mut p = Params::default();
            for s in params.entries().iter().filter(|e| {
                e["name"] != "validation"
                    && (e["name"] == "tx-resource" || !own.iter().any(|o| o["name"] == e["name"]))
            }) {
                p.push(s.clone());
            }
            for e in own {
                p.push(e);
            }
            let r = match self.run(Operation::ValidateVs, &p, accept_language) {
                Ok(r) => r,
                Err(e) => e.operation_outcome(),
            };
            out.push(json!({"name": "validation", "resource": r}));
        }
        Ok(json!({"resourceType": "Parameters", "parameter": out}))
    }

    /// Reads a resource by type and id.
    pub fn read(&self, kind: Kind, id: &str) -> Option<Value> {
        self.registry
            .resources(kind)
            .find(|r| r["id"] == id)
            .map(|r| (**r).clone())
    }

    /// Searches resources of `kind` by `url`, `version`, `name`, `title`, `status` (and `_id`), with `_count`,
    /// `_offset`, `_summary` and `_elements`; returns a searchset Bundle.
    pub fn search(&self, kind: Kind, query: &[(String, String)], base: &str) -> Value {
        let get = |k: &str| query.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        let asked: usize = get("_count")
            .and_then(|c| c.parse().ok())
            .unwrap_or(DEFAULT_SEARCH_COUNT);
        // Clamped, as HAPI clamps it to its largest page: a page never copies more than MAX_SEARCH_COUNT
        // resources, and the Bundle says so.
        let count = asked.min(MAX_SEARCH_COUNT);
        let offset: usize = get("_offset").and_then(|c| c.parse().ok()).unwrap_or(0);
        let summary = get("_summary");
        let elements: Option<Vec<&str>> = get("_elements").map(|e| e.split(',').collect());
        let matches: Vec<&std::sync::Arc<Value>> = self
            .registry
            .resources(kind)
            .filter(|r| search_matches(r, query))
            .collect();
        let total = matches.len();
        let entries: Vec<Value> = if summary == Some("count") {
            Vec::new()
        } else {
            matches
                .iter()
                .skip(offset)
                .take(count)
                .map(|r| {
                    // Only the elements kept are copied (a summary leaves a large code system's concepts
                    // behind without cloning them first).
                    let keep = |k: &str| {
                        !(summary == Some("true")
                            && matches!(k, "concept" | "compose" | "expansion" | "group" | "text"))
                            && elements.as_ref().is_none_or(|el| {
                                matches!(k, "resourceType" | "id" | "meta") || el.contains(&k)
                            })
                    };
                    let res = match r.as_object() {
                        Some(o) => Value::Object(
                            o.iter()
                                .filter(|(k, _)| keep(k))
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect(),
                        ),
                        None => (***r).clone(),
                    };
                    let id = res["id"].as_str().unwrap_or_default().to_string();
                    json!({
                        "fullUrl": format!("{base}/{}/{id}", kind.name()),
                        "resource": res,
                        "search": {"mode": "match"},
                    })
                })
                .collect()
        };
        let mut bundle = json!({
            "resourceType": "Bundle",
            "type": "searchset",
            "total": total,
        });
        let mut entries = entries;
        if asked > count && summary != Some("count") {
            entries.push(count_clamped_entry(asked));
        }
        if !entries.is_empty() {
            bundle["entry"] = Value::Array(entries);
        }
        bundle
    }

    /// The TerminologyCapabilities resource (`/metadata?mode=terminology`).
    pub fn capabilities(&self, software_version: &str) -> Value {
        let mut systems: Vec<Value> = Vec::new();
        let mut seen = std::collections::BTreeMap::<String, Vec<String>>::new();
        for r in self.registry.resources(Kind::CodeSystem) {
            if r["content"] == "supplement" {
                continue;
            }
            let url = r["url"].as_str().unwrap_or_default().to_string();
            let versions = seen.entry(url).or_default();
            if let Some(v) = r["version"].as_str() {
                versions.push(v.to_string());
            }
        }
        for p in &self.providers {
            let versions = seen.entry(p.system().to_string()).or_default();
            versions.clear();
            versions.push(p.version().to_string());
        }
        for (url, versions) in seen {
            let mut cs = json!({"uri": url});
            if !versions.is_empty() {
                cs["version"] =
                    Value::Array(versions.into_iter().map(|v| json!({"code": v})).collect());
            }
            systems.push(cs);
        }
        let params = [
            "activeOnly",
            "check-system-version",
            "count",
            "displayLanguage",
            "excludeNested",
            "force-system-version",
            "includeDefinition",
            "includeDesignations",
            "offset",
            "property",
            "system-version",
            "tx-resource",
        ];
        json!({
            "resourceType": "TerminologyCapabilities",
            "version": software_version,
            "name": "ThothTerminologyCapabilities",
            "title": "Thoth Terminology Capabilities",
            "status": "active",
            "date": "2026-11-22",
            "kind": "instance",
            "software": {"name": "Thoth", "version": software_version},
            "codeSystem": systems,
            "expansion": {
                "hierarchical": true,
                "paging": true,
                "parameter": params.iter().map(|p| json!({"name": p})).collect::<Vec<_>>(),
            },
            "validateCode": {"translations": false},
            "translation": {"needsMap": false},
        })
    }
}

/// The display language `$validate-code` checks displays in when the request names none (no
/// `displayLanguage`, no Accept-Language): the value set's `displayLanguage` expansion parameter, else its
/// `language`.
fn validation_language(
    ctx: &Ctx<'_>,
    params: &Params,
    accept_language: Option<&str>,
) -> Option<String> {
    if params.has("displayLanguage") || accept_language.is_some() {
        return None;
    }
    let vs = ctx.requested_value_set(params).ok()?;
    let stated = crate::expand::expansion_parameter(&vs, "displayLanguage")
        .and_then(crate::params::primitive);
    stated.or_else(|| vs["language"].as_str().map(str::to_string))
}

/// Parameters an expansion takes without the request stating them: the display language of the
/// Accept-Language header, then the value set's own `valueset-expansion-parameter`s. They are echoed.
pub(crate) fn expansion_defaults(
    ctx: &Ctx<'_>,
    params: &Params,
    accept_language: Option<&str>,
) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let stated =
        |out: &[Value], name: &str| params.has(name) || out.iter().any(|p| p["name"] == name);
    if let (Some(lang), false) = (accept_language, params.has("displayLanguage")) {
        out.push(json!({"name": "displayLanguage", "valueCode": lang}));
    }
    let Ok(vs) = ctx.requested_value_set(params) else {
        return out;
    };
    for ext in vs["compose"]["extension"].as_array().into_iter().flatten() {
        if ext["url"] != "http://hl7.org/fhir/StructureDefinition/valueset-expansion-parameter" {
            continue;
        }
        let parts = ext["extension"].as_array().cloned().unwrap_or_default();
        let name = parts
            .iter()
            .find(|p| p["url"] == "name")
            .and_then(|p| p["valueCode"].as_str().or(p["valueString"].as_str()));
        let value = parts.iter().find(|p| p["url"] == "value");
        // versionsMatch shapes the compose evaluation itself and is echoed from there.
        if let (Some(name), Some(value)) = (name, value) {
            if name == "versionsMatch" || stated(&out, name) {
                continue;
            }
            let mut p = json!({"name": name});
            if let Some(obj) = value.as_object() {
                for (k, v) in obj.iter().filter(|(k, _)| k.starts_with("value")) {
                    p[k] = v.clone();
                }
            }
            out.push(p);
        }
    }
    out
}
