//! The scope of one request: the server's registry, the resources the request brought along (`tx-resource`),
//! and the options that steer versions, languages and limits.

use crate::codesystem::{CodeSystem, Concept, Content};
use crate::error::{ErrorKind, Issue, Severity, TxError};
use crate::params::Params;
use crate::provider::{CodeSystemProvider, Detail};
use crate::registry::{Registry, pick, pick_cs, version_matches};
use serde_json::Value;
use std::sync::Arc;

/// Options of an operation, read from its parameters.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `activeOnly`.
    pub active_only: Option<bool>,
    /// `abstract` of `$validate-code`: whether an abstract (not selectable) code is acceptable.
    pub abstract_allowed: Option<bool>,
    /// `valueset-membership-only` of `$validate-code`, or `valueSetMode=CHECK_MEMBERSHIP_ONLY`: only whether the
    /// code is in the value set matters.
    pub membership_only: bool,
    /// `valueSetMode=NO_MEMBERSHIP_CHECK` of `ValueSet/$validate-code`: the code is checked in its code system
    /// alone, whatever the value set holds.
    pub no_membership_check: bool,
    /// `filter` text.
    pub filter: Option<String>,
    /// `count`.
    pub count: Option<usize>,
    /// `offset`.
    pub offset: Option<usize>,
    /// `includeDesignations`.
    pub include_designations: bool,
    /// `displayLanguage`, else the request's Accept-Language.
    pub display_language: Option<String>,
    /// `excludeNested`.
    pub exclude_nested: Option<bool>,
    /// `property`.
    pub properties: Vec<String>,
    /// `system-version`: default versions per system (`url|version`).
    pub default_versions: Vec<(String, String)>,
    /// `check-system-version`.
    pub check_versions: Vec<(String, String)>,
    /// `force-system-version`.
    pub force_versions: Vec<(String, String)>,
    /// `default-valueset-version`.
    pub default_vs_versions: Vec<(String, String)>,
    /// `useSupplement`.
    pub use_supplements: Vec<String>,
    /// `lenient-display-validation`: a wrong display is a warning, not an error.
    pub lenient_display: bool,
    /// `designation`: the languages or uses (`system|code`) of the designations to return.
    pub designations: Vec<String>,
}

fn pairs(params: &Params, name: &str) -> Vec<(String, String)> {
    params
        .strs(name)
        .into_iter()
        .map(|s| match s.split_once('|') {
            Some((u, v)) => (u.to_string(), v.to_string()),
            None => (s, String::new()),
        })
        .collect()
}

impl Options {
    /// Reads the options from `params`; `accept_language` is the HTTP header, used when `displayLanguage`
    /// is absent.
    pub fn from_params(params: &Params, accept_language: Option<&str>) -> Options {
        let value_set_mode = params
            .str("valueSetMode")
            .and_then(|m| ValueSetMode::parse(&m));
        Options {
            active_only: params.bool("activeOnly"),
            abstract_allowed: params.bool("abstract"),
            membership_only: params.bool("valueset-membership-only").unwrap_or(false)
                || value_set_mode == Some(ValueSetMode::MembershipOnly),
            no_membership_check: value_set_mode == Some(ValueSetMode::NoMembershipCheck),
            filter: params.str("filter").filter(|s| !s.is_empty()),
            count: params.int("count").map(|n| n.max(0) as usize),
            offset: params.int("offset").map(|n| n.max(0) as usize),
            include_designations: params.bool("includeDesignations").unwrap_or(false),
            display_language: params
                .str("displayLanguage")
                .or_else(|| accept_language.map(str::to_string)),
            exclude_nested: params.bool("excludeNested"),
            properties: params.strs("property"),
            default_versions: pairs(params, "system-version"),
            check_versions: pairs(params, "check-system-version"),
            force_versions: pairs(params, "force-system-version"),
            default_vs_versions: pairs(params, "default-valueset-version"),
            use_supplements: params.strs("useSupplement"),
            lenient_display: params.bool("lenient-display-validation").unwrap_or(false),
            designations: params.strs("designation"),
        }
    }
}

/// `valueSetMode` of `ValueSet/$validate-code`, which the HL7 FHIR validator sends (`ValidationOptions`); the
/// default, `ALL_CHECKS`, is no parameter at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ValueSetMode {
    MembershipOnly,
    NoMembershipCheck,
}

impl ValueSetMode {
    fn parse(text: &str) -> Option<ValueSetMode> {
        match text {
            // The validator spells it without the B; the right spelling is taken too.
            "CHECK_MEMERSHIP_ONLY" | "CHECK_MEMBERSHIP_ONLY" => Some(ValueSetMode::MembershipOnly),
            "NO_MEMBERSHIP_CHECK" => Some(ValueSetMode::NoMembershipCheck),
            _ => None,
        }
    }
}

/// A request's view of the resources: its own `tx-resource`s first, then the server's registry.
pub struct Ctx<'a> {
    /// The server's content.
    pub base: &'a Registry,
    /// The request's own resources.
    pub overlay: Registry,
    /// The request's options.
    pub opts: Options,
    /// The largest expansion we produce.
    pub max_expansion: usize,
    /// While set, an include whose code system (version) is unknown or fails a version check contributes no
    /// codes instead of failing the evaluation: `$validate-code` reports such problems as issues of its answer.
    pub lenient_includes: std::cell::Cell<bool>,
    /// `system-version` / `check-system-version` values that chose a version for an unversioned include
    /// (parameter name, `url|version`), echoed by `$expand`.
    pub used_version_rules: std::cell::RefCell<Vec<(&'static str, String)>>,
    /// Code systems served from stores of their own (SNOMED CT).
    pub providers: &'a [Arc<dyn CodeSystemProvider>],
    /// The code system of each of `providers`, in the same order.
    pub provider_systems: &'a [Arc<CodeSystem>],
    /// While set (by `$validate-code`), the only codes whose membership matters: a provider's include then
    /// tests these instead of listing every code it selects.
    pub probe: std::cell::RefCell<Option<Vec<String>>>,
}

impl<'a> Ctx<'a> {
    /// All versions of code system `url` visible to this request.
    pub fn cs_versions(&self, url: &str) -> Vec<Arc<CodeSystem>> {
        // A provider's code system replaces any FHIR stub of it (THO ships SNOMED CT as `not-present`).
        let served: Vec<Arc<CodeSystem>> = self
            .providers
            .iter()
            .zip(self.provider_systems)
            .filter(|(p, _)| p.system() == url)
            .map(|(_, cs)| cs.clone())
            .collect();
        if !served.is_empty() {
            return served;
        }
        let mut out: Vec<Arc<CodeSystem>> = self.overlay.code_system_versions(url).to_vec();
        for c in self.base.code_system_versions(url) {
            if !out.iter().any(|o| o.version == c.version) {
                out.push(c.clone());
            }
        }
        out
    }

    /// The code system of the provider serving `url` in `version` (any version when None).
    fn provider_system(&self, url: &str, version: Option<&str>) -> Option<&Arc<CodeSystem>> {
        self.providers
            .iter()
            .position(|p| p.system() == url && version.is_none_or(|v| p.accepts_version(v)))
            .map(|i| &self.provider_systems[i])
    }

    /// `cs` with the concepts `codes` compiled, when a provider serves it; `cs` itself otherwise.
    pub fn compile(&self, cs: &Arc<CodeSystem>, codes: &[&str], detail: Detail) -> Arc<CodeSystem> {
        match &cs.provider {
            Some(p) => Arc::new(with_sources(
                cs,
                p.compile(codes, self.opts.display_language.as_deref(), detail),
            )),
            None => cs.clone(),
        }
    }

    /// The code system `url` in `version` (a pattern) or the newest, without version rules.
    pub fn find_cs(&self, url: &str, version: Option<&str>) -> Option<Arc<CodeSystem>> {
        // A provider's version may be named in other forms (a SNOMED CT edition without its date).
        if let Some(cs) = version.and_then(|v| self.provider_system(url, Some(v))) {
            return Some(cs.clone());
        }
        // Without a version, the one provider serving `url` is what `pick` would choose from the lists below
        // (a provider replaces any other resource of its system); found without making them.
        if version.is_none() {
            let mut served = (self.providers.iter())
                .zip(self.provider_systems)
                .filter(|(p, _)| p.system() == url);
            match (served.next(), served.next()) {
                (Some((_, cs)), None) => return Some(cs.clone()),
                // Nothing serves `url` and the request brought no resources (every GET, every code the v2-to-FHIR
                // converter checks): the registry's versions of `url` are the lists below, and the registry keeps
                // the one `pick_cs` chooses from them.
                (None, _) if self.overlay.is_empty() => {
                    return self.base.latest_code_system(url).cloned();
                }
                _ => {}
            }
        }
        let all = self.cs_versions(url);
        let all: Vec<_> = all
            .into_iter()
            .filter(|c| c.content != Content::Supplement)
            .collect();
        pick_cs(&all, version).cloned()
    }

    /// A supplement with canonical `url` (and version).
    pub fn find_supplement(&self, url: &str) -> Option<Arc<CodeSystem>> {
        let (u, v) = split_canonical(url);
        let all = self.cs_versions(u);
        pick_cs(&all, v)
            .filter(|c| c.content == Content::Supplement)
            .cloned()
    }

    /// The value set an operation is asked about: the `valueSet` resource in the request, else the one named by
    /// `url` (with `valueSetVersion`, unless the url already carries a version).
    pub fn requested_value_set(&self, params: &Params) -> Result<Arc<Value>, TxError> {
        if let Some(v) = params.resource("valueSet") {
            return Ok(Arc::new(v.clone()));
        }
        let Some(url) = params.str("url") else {
            return Err(TxError::invalid(
                "No value set was provided (url or valueSet)",
            ));
        };
        let url = match params.str("valueSetVersion") {
            Some(v) if !url.contains('|') => format!("{url}|{v}"),
            _ => url,
        };
        self.find_vs(&url).ok_or_else(|| {
            TxError::not_found(format!(
                "A definition for the value Set '{url}' could not be found"
            ))
        })
    }

    /// The value set `url` (optionally `|version`), or None.
    pub fn find_vs(&self, canonical: &str) -> Option<Arc<Value>> {
        if let Some((system, _)) = canonical.split_once("?fhir_vs") {
            // Implicit value sets (`http://snomed.info/sct?fhir_vs=isa/...`) are defined by their URL, which
            // may hold `|` (terms in ECL), so it is not split as `url|version`.
            let p = self.providers.iter().find(|p| p.system() == system)?;
            return p.implicit_value_set(canonical);
        }
        let (url, stated) = split_canonical(canonical);
        let version = stated.or_else(|| {
            self.opts
                .default_vs_versions
                .iter()
                .find(|(u, _)| u == url)
                .map(|(_, v)| v.as_str())
        });
        let pick_from = |items: &[Arc<Value>]| -> Option<Arc<Value>> {
            pick(
                items,
                version,
                |r: &Arc<Value>| r["version"].as_str(),
                |r: &Arc<Value>| r["date"].as_str(),
            )
            .cloned()
        };
        pick_from(self.overlay.value_set_versions(url))
            .or_else(|| pick_from(self.base.value_set_versions(url)))
    }

    /// The concept map `url` (optionally `|version`).
    pub fn find_cm(&self, canonical: &str) -> Option<Arc<Value>> {
        let (url, version) = split_canonical(canonical);
        let pick_from = |items: &[Arc<Value>]| -> Option<Arc<Value>> {
            pick(
                items,
                version,
                |r: &Arc<Value>| r["version"].as_str(),
                |r: &Arc<Value>| r["date"].as_str(),
            )
            .cloned()
        };
        pick_from(self.overlay.concept_map_versions(url))
            .or_else(|| pick_from(self.base.concept_map_versions(url)))
    }

    /// Known versions of `url`, for messages ("1.0.0 or 1.2.0").
    pub fn known_versions(&self, url: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .cs_versions(url)
            .iter()
            .filter_map(|c| c.version.clone())
            .collect();
        v.sort_by(|a, b| crate::registry::compare_versions(a, b));
        v.dedup();
        v
    }

    /// The version to use for `url` when the value set or request says `stated` (force and default rules).
    pub fn effective_version(&self, url: &str, stated: Option<&str>) -> Option<String> {
        if let Some((_, v)) = self.opts.force_versions.iter().find(|(u, _)| u == url) {
            return Some(v.clone());
        }
        if let Some(s) = stated.filter(|s| !s.is_empty()) {
            return Some(s.to_string());
        }
        // Unversioned: a default version, else the pattern a version check demands picks the version.
        let rules = [
            ("system-version", &self.opts.default_versions),
            ("check-system-version", &self.opts.check_versions),
        ];
        for (name, list) in rules {
            if let Some((_, v)) = list.iter().find(|(u, _)| u == url) {
                let used = (name, format!("{url}|{v}"));
                let mut seen = self.used_version_rules.borrow_mut();
                if !seen.contains(&used) {
                    seen.push(used);
                }
                return Some(v.clone());
            }
        }
        None
    }

    /// Checks a chosen version against `check-system-version`.
    pub fn check_version(&self, cs: &CodeSystem) -> Result<(), TxError> {
        if let Some((_, want)) = self.opts.check_versions.iter().find(|(u, _)| *u == cs.url) {
            let have = cs.version.as_deref().unwrap_or("");
            if !version_matches(want, have) {
                return Err(TxError::new(
                    ErrorKind::Invalid,
                    Issue::new(
                        Severity::Error,
                        "exception",
                        Some("version-error"),
                        format!(
                            "The version '{have}' is not allowed for system '{}': required to be '{want}' by a version-check parameter",
                            cs.url
                        ),
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Applies supplements named by `useSupplement` or by a value set's supplement extension.
    pub fn with_supplements(
        &self,
        cs: Arc<CodeSystem>,
        extra: &[String],
    ) -> Result<Arc<CodeSystem>, TxError> {
        let mut sups = Vec::new();
        for s in self.opts.use_supplements.iter().chain(extra) {
            match self.find_supplement(s) {
                Some(sup) => {
                    if sup
                        .supplements
                        .as_deref()
                        .map(|x| split_canonical(x).0 == cs.url)
                        .unwrap_or(false)
                    {
                        sups.push(sup);
                    }
                }
                None => {
                    return Err(TxError::new(
                        ErrorKind::NotFound,
                        Issue::new(
                            Severity::Error,
                            "not-found",
                            Some("not-found"),
                            format!("Required supplement not found: {s}"),
                        ),
                    ));
                }
            }
        }
        // A supplement carried in the request applies unnamed only when it is a language pack (tx.fhir.org's
        // rule): any other supplement changes what the code system says, so it must be asked for.
        // It only adds designations, as if the code system had them, so it is not echoed as `used-supplement`
        // unless it was named (tx.fhir.org lists no language pack it applied on its own).
        let named = sups.len();
        for sup in self.overlay.supplements_of(&cs.url) {
            if is_language_pack(&sup) && !sups.iter().any(|s| Arc::ptr_eq(s, &sup)) {
                sups.push(sup);
            }
        }
        if sups.is_empty() {
            Ok(cs)
        } else {
            let mut out = cs.with_supplements(&sups);
            let echoed: Vec<String> = sups[..named].iter().map(|s| s.versioned_url()).collect();
            out.applied_supplements
                .retain(|u| echoed.contains(u) || cs.applied_supplements.contains(u));
            Ok(Arc::new(out))
        }
    }

    /// The display to show for `concept` in the requested language.
    pub fn display(&self, cs: &CodeSystem, concept: &Concept) -> Option<String> {
        display_in(cs, concept, self.opts.display_language.as_deref())
    }
}

/// The display to show for `concept` when the languages `languages` (an Accept-Language list) are asked for.
pub fn display_in(cs: &CodeSystem, concept: &Concept, languages: Option<&str>) -> Option<String> {
    if let Some(langs) = languages {
        for lang in parse_languages(langs) {
            if lang == "*" {
                break;
            }
            let cs_lang = cs.language.as_deref().unwrap_or("en");
            if lang_matches(&lang, cs_lang) && concept.display.is_some() {
                return concept.display.clone();
            }
            if let Some(d) = concept.designations.iter().find(|d| {
                d.language
                    .as_deref()
                    .is_some_and(|l| lang_matches(&lang, l))
            }) {
                return Some(d.value.clone());
            }
            // `*; q=0`: no other language is acceptable, so a concept with nothing in the languages asked
            // for has no display rather than one in the code system's language.
            if refuses_other_languages(langs) {
                return None;
            }
        }
    }
    concept.display.clone()
}

/// Whether a supplement declares itself a language pack (`codesystem-supplement-type = lang-pack`).
fn is_language_pack(cs: &CodeSystem) -> bool {
    cs.resource["extension"].as_array().is_some_and(|a| {
        a.iter().any(|e| {
            e["url"] == "http://hl7.org/fhir/StructureDefinition/codesystem-supplement-type"
                && e["valueCode"] == "lang-pack"
        })
    })
}

/// `compiled` (concepts a provider compiled for `cs`) with the supplements that were applied to `cs`.
pub fn with_sources(cs: &CodeSystem, compiled: CodeSystem) -> CodeSystem {
    if cs.supplement_sources.is_empty() {
        compiled
    } else {
        let mut out = compiled.with_supplements(&cs.supplement_sources);
        // Echo what `cs` echoes (an unnamed language pack is applied but not listed).
        out.applied_supplements = cs.applied_supplements.clone();
        out
    }
}

/// Splits `url|version`.
pub fn split_canonical(s: &str) -> (&str, Option<&str>) {
    match s.split_once('|') {
        Some((u, v)) => (u, Some(v)),
        None => (s, None),
    }
}

/// Languages of an Accept-Language style list, best first (quality values ordered, `;q=0` dropped).
pub fn parse_languages(s: &str) -> Vec<String> {
    let mut items: Vec<(f32, usize, String)> = Vec::new();
    for (i, part) in s.split(',').enumerate() {
        let mut bits = part.trim().split(';');
        let tag = bits.next().unwrap_or("").trim().to_string();
        if tag.is_empty() {
            continue;
        }
        let q = bits
            .find_map(|b| {
                b.trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
            })
            .unwrap_or(1.0);
        if q > 0.0 {
            items.push((q, i, tag));
        }
    }
    items.sort_by(|a, b| {
        b.0.partial_cmp(&a.0)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.1.cmp(&b.1))
    });
    items.into_iter().map(|(_, _, t)| t).collect()
}

/// Whether `s` is a well-formed language priority list (RFC 4647 basic language ranges, each `*` or 1-8
/// letters followed by `-` and 1-8 letters or digits, with an optional `;q=` weight): a `displayLanguage`
/// that is not is a client error.
pub fn valid_language_list(s: &str) -> bool {
    s.trim().is_empty()
        || s.split(',').all(|part| {
            let mut bits = part.trim().split(';');
            let range = bits.next().unwrap_or("").trim();
            let range_ok = range == "*"
                || range.split('-').enumerate().all(|(i, sub)| {
                    (1..=8).contains(&sub.len())
                        && if i == 0 {
                            sub.chars().all(|c| c.is_ascii_alphabetic())
                        } else {
                            sub.chars().all(|c| c.is_ascii_alphanumeric())
                        }
                });
            let weights_ok = bits.all(|b| {
                b.trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| (0.0..=1.0).contains(&q))
            });
            range_ok && weights_ok
        })
}

/// Whether an Accept-Language style list gives the wildcard `*` a quality of 0: only the languages it names
/// are acceptable.
pub fn refuses_other_languages(s: &str) -> bool {
    s.split(',').any(|part| {
        let mut bits = part.trim().split(';');
        bits.next().map(str::trim) == Some("*")
            && bits.any(|b| {
                b.trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    == Some(0.0)
            })
    })
}

/// Whether a requested language tag accepts a designation's language (`en` accepts `en-US`).
pub fn lang_matches(requested: &str, actual: &str) -> bool {
    let r = requested.to_ascii_lowercase();
    let a = actual.to_ascii_lowercase();
    r == a || a.starts_with(&format!("{r}-")) || r.starts_with(&format!("{a}-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path's plain context takes `Options::default()` for a request without parameters.
    #[test]
    fn no_parameters_give_the_default_options() {
        assert_eq!(
            format!("{:?}", Options::from_params(&Params::default(), None)),
            format!("{:?}", Options::default())
        );
        // And the comparison can tell options apart.
        let mut p = Params::default();
        p.push(serde_json::json!({"name": "activeOnly", "valueBoolean": true}));
        assert_ne!(
            format!("{:?}", Options::from_params(&p, None)),
            format!("{:?}", Options::default())
        );
    }
}
