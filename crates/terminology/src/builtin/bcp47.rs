//! BCP-47 language tags (`urn:ietf:bcp:47`): every valid tag is a code. Well-formedness and validity (each
//! language, script, region and variant subtag in the IANA Language Subtag Registry) are the `language-tags`
//! crate's, which embeds the registry's subtags; tx.fhir.org also wants the registry's case (`en-US`, not
//! `en-us`). Displays come from the registry's descriptions ([`SubtagRegistry`], fetched as data since the
//! crate embeds none) and from the language value sets of the loaded content (HL7 Terminology's `Languages`,
//! FHIR R4's `languages`): a bare language is named by the registry (`ady` "Adyghe", as tx.fhir.org names it;
//! the value set says "Adyghe; Adygei"), a longer tag by the value sets when they list it (`en-US` "English
//! (United States)"), else by the registry's descriptions of its subtags (`de-CH` "German (Region=Switzerland)",
//! tx.fhir.org's form). Without the registry a tag the value sets do not list is named after its language.

use super::data::{SubtagKind, SubtagRegistry};
use crate::codesystem::{CodeSystem, Concept, Designation};
use crate::error::TxError;
use crate::provider::{CodeSystemProvider, Detail, MapTarget, ProviderShell, Selection};
use crate::registry::{Registry, pick};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// The canonical URL of BCP-47 language tags.
pub const BCP47_URL: &str = "urn:ietf:bcp:47";
/// The value set whose languages an expansion of all tags lists (as tx.fhir.org does).
const COMMON_LANGUAGES: &str = "http://terminology.hl7.org/ValueSet/Languages";
/// Further value sets whose displays name tags (`en-US` "English (United States)").
const NAMED_TAGS: &[&str] = &[COMMON_LANGUAGES, "http://hl7.org/fhir/ValueSet/languages"];

/// BCP-47 for the terminology operations.
pub struct Bcp47Provider {
    shell: ProviderShell,
    /// Displays of tags, from the language value sets.
    names: HashMap<String, String>,
    /// The tags of `Languages`, sorted.
    common: Vec<String>,
    /// `url|version` of `Languages`.
    common_source: Option<String>,
    /// The IANA registry's descriptions, when present.
    subtags: Option<Arc<SubtagRegistry>>,
}

impl std::fmt::Debug for Bcp47Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bcp47Provider")
            .field("names", &self.names.len())
            .field("subtags", &self.subtags.as_ref().map(|r| r.len()))
            .finish()
    }
}

/// Whether `tag` is a valid language tag written in the registry's case: language (and extended language)
/// lower case, script title case, region upper case.
pub fn valid_tag(tag: &str) -> bool {
    let Ok(parsed) = language_tags::LanguageTag::parse(tag) else {
        return false;
    };
    // The parser writes the tag in the registry's case: a tag in any other case is not the code.
    parsed.validate().is_ok() && parsed.as_str() == tag
}

impl Bcp47Provider {
    /// BCP-47, with the displays and the common languages of the loaded content, and the IANA registry's
    /// descriptions when given.
    pub fn new(registry: &Registry, subtags: Option<Arc<SubtagRegistry>>) -> Arc<Bcp47Provider> {
        let mut names = HashMap::new();
        let mut common = Vec::new();
        let mut common_source = None;
        for url in NAMED_TAGS {
            let Some(vs) = pick(
                registry.value_set_versions(url),
                None,
                |v| v["version"].as_str(),
                |v| v["date"].as_str(),
            ) else {
                continue;
            };
            if *url == COMMON_LANGUAGES {
                common_source = Some(crate::expand::vs_canonical(vs));
            }
            for inc in vs["compose"]["include"].as_array().into_iter().flatten() {
                if inc["system"] != BCP47_URL {
                    continue;
                }
                for c in inc["concept"].as_array().into_iter().flatten() {
                    let Some(code) = c["code"].as_str().filter(|c| valid_tag(c)) else {
                        continue;
                    };
                    if let Some(d) = c["display"].as_str() {
                        names
                            .entry(code.to_string())
                            .or_insert_with(|| d.to_string());
                    }
                    if *url == COMMON_LANGUAGES {
                        common.push(code.to_string());
                    }
                }
            }
        }
        common.sort();
        common.dedup();
        // tx.fhir.org names no version of BCP-47.
        let shell = Arc::new(json!({
            "resourceType": "CodeSystem",
            "id": "bcp-47",
            "url": BCP47_URL,
            "name": "IETF BCP-47 Language Tags",
            "status": "active",
            "caseSensitive": true,
            "content": "not-present",
        }));
        Arc::new_cyclic(|me| Bcp47Provider {
            shell: ProviderShell::new(shell, me),
            names,
            common,
            common_source,
            subtags,
        })
    }

    /// The display of `tag`: a bare language's registry description; else the value sets' name of the tag;
    /// else the registry's descriptions of its subtags; else (no registry) its language's name.
    fn display(&self, tag: &str) -> Option<String> {
        let parsed = language_tags::LanguageTag::parse(tag).ok()?;
        let language = parsed.primary_language();
        let bare = parsed.as_str() == language;
        if bare && let Some(first) = self.registry_names(&parsed).into_iter().next() {
            return Some(first);
        }
        if let Some(n) = self.names.get(tag) {
            return Some(n.clone());
        }
        if let Some(first) = self.registry_names(&parsed).into_iter().next() {
            return Some(first);
        }
        self.names.get(language).cloned()
    }

    /// Names of `tag` from the IANA registry, the preferred first: a registered whole tag's descriptions,
    /// else each description of its language with its script, region and variants named after it
    /// (`German (Script=Latin, Region=Switzerland)`). Empty without the registry or when the language has no
    /// description (a private-use language).
    fn registry_names(&self, tag: &language_tags::LanguageTag) -> Vec<String> {
        let Some(reg) = &self.subtags else {
            return Vec::new();
        };
        let whole = reg.tag_descriptions(tag.as_str());
        if !whole.is_empty() {
            return whole.to_vec();
        }
        let first = |kind, subtag: &str| {
            reg.descriptions(kind, subtag)
                .first()
                .cloned()
                .unwrap_or_else(|| subtag.to_string())
        };
        let mut parts = Vec::new();
        if let Some(s) = tag.script() {
            parts.push(format!("Script={}", first(SubtagKind::Script, s)));
        }
        if let Some(r) = tag.region() {
            parts.push(format!("Region={}", first(SubtagKind::Region, r)));
        }
        for v in tag.variant_subtags() {
            parts.push(format!("Variant={}", first(SubtagKind::Variant, v)));
        }
        let suffix = if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join(", "))
        };
        // An extended language subtag names the language more precisely than the primary one (`zh-yue` is
        // "Yue Chinese", not "Chinese").
        let language = match tag.extended_language() {
            Some(ext) if !reg.descriptions(SubtagKind::Extlang, ext).is_empty() => {
                reg.descriptions(SubtagKind::Extlang, ext)
            }
            _ => reg.descriptions(SubtagKind::Language, tag.primary_language()),
        };
        language.iter().map(|d| format!("{d}{suffix}")).collect()
    }

    /// Other names a display may give (all English): the registry's other descriptions and, for a language
    /// with a region, `Language (Region)`, as tx.fhir.org accepts them.
    fn other_names(&self, tag: &str, display: Option<&str>) -> Vec<String> {
        let Ok(parsed) = language_tags::LanguageTag::parse(tag) else {
            return Vec::new();
        };
        let mut out = self.registry_names(&parsed);
        if let Some(n) = self.names.get(tag) {
            out.push(n.clone());
        }
        if let (Some(reg), Some(region)) = (&self.subtags, parsed.region()) {
            let languages = reg.descriptions(SubtagKind::Language, parsed.primary_language());
            if let Some(r) = reg.descriptions(SubtagKind::Region, region).first() {
                out.extend(languages.iter().map(|l| format!("{l} ({r})")));
            }
        }
        let mut seen = std::collections::HashSet::new();
        out.retain(|n| Some(n.as_str()) != display && seen.insert(n.clone()));
        out
    }

    fn concept(&self, tag: &str) -> Concept {
        let display = self.display(tag);
        let designations = self
            .other_names(tag, display.as_deref())
            .into_iter()
            .map(|n| Designation::new(Some("en".to_string()), None, n))
            .collect();
        Concept {
            designations,
            ..Concept::new(tag, display)
        }
    }
}

impl CodeSystemProvider for Bcp47Provider {
    fn system(&self) -> &str {
        BCP47_URL
    }

    fn version(&self) -> &str {
        ""
    }

    fn code_system(&self) -> Arc<CodeSystem> {
        self.shell.empty()
    }

    fn compile(&self, codes: &[&str], _languages: Option<&str>, _detail: Detail) -> CodeSystem {
        let concepts = codes
            .iter()
            .filter(|c| valid_tag(c))
            .map(|c| self.concept(c))
            .collect();
        self.shell.with(concepts)
    }

    fn select(
        &self,
        filters: &[Value],
        only: Option<&[String]>,
        path: &str,
    ) -> Result<Selection, TxError> {
        // BCP-47 defines no filters: the generic compiler gives its error for any, and they select nothing.
        let meta = self.code_system();
        for (i, f) in filters.iter().enumerate() {
            crate::filter::Filter::compile(&meta, f, &format!("{path}.filter[{i}]"))?;
        }
        if !filters.is_empty() {
            return Ok(Selection::default());
        }
        let codes = match only {
            Some(codes) => codes.iter().filter(|c| valid_tag(c)).cloned().collect(),
            // A grammar has no list of its members: tx.fhir.org lists the common languages instead.
            None => self.common.clone(),
        };
        Ok(Selection {
            codes,
            unclosed: Some(Some(format!(
                "The code System '{BCP47_URL}' has a grammar and so has infinite members. This extension is based on {COMMON_LANGUAGES}"
            ))),
        })
    }

    fn quiet_inactive(&self) -> bool {
        false
    }

    fn expands_to_examples(&self) -> bool {
        true
    }

    fn examples_source(&self) -> Option<String> {
        self.common_source.clone()
    }

    fn subsumes(&self, a: &str, b: &str) -> Result<&'static str, String> {
        for c in [a, b] {
            if !valid_tag(c) {
                return Err(c.to_string());
            }
        }
        Ok(if a == b { "equivalent" } else { "not-subsumed" })
    }

    fn lookup(
        &self,
        code: &str,
        _languages: Option<&str>,
        _properties: &[String],
    ) -> Option<Value> {
        if !valid_tag(code) {
            return None;
        }
        let mut out = vec![
            json!({"name": "code", "valueCode": code}),
            json!({"name": "system", "valueUri": BCP47_URL}),
            json!({"name": "name", "valueString": "IETF BCP-47 Language Tags"}),
        ];
        let display = self.display(code);
        if let Some(d) = &display {
            out.push(json!({"name": "display", "valueString": d}));
        }
        out.push(json!({"name": "abstract", "valueBoolean": false}));
        // The other English names the tag goes by (the registry's other descriptions, `Language (Region)`).
        for n in self.other_names(code, display.as_deref()) {
            out.push(json!({"name": "designation", "part": [
                {"name": "language", "valueCode": "en"},
                {"name": "value", "valueString": n},
            ]}));
        }
        Some(json!({"resourceType": "Parameters", "parameter": out}))
    }

    fn implicit_value_set(&self, _url: &str) -> Option<Arc<Value>> {
        None
    }

    fn implicit_map(&self, _url: &str, _code: &str, _reverse: bool) -> Option<Vec<MapTarget>> {
        None
    }
}
