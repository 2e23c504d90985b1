//! ISO 3166-1 country codes (`urn:iso:std:iso:3166`): the alpha-2, alpha-3 and numeric code of every country,
//! one concept each, with its English short name, plus the alpha-2 elements ISO 3166-1 leaves to its users
//! (`AA`, `QM`-`QZ`, `XA`-`XZ`, `ZZ`, displayed "User-assigned"). A closed list, served as version `2018`, as
//! tx.fhir.org serves it: an include of the whole system expands to all 789 codes, sorted by code.
//!
//! The codes come from the `isocountry` crate (ISO 3166-1 as of 2018, the same edition: "Swaziland",
//! "Macedonia, the former Yugoslav Republic of"). The names come from FHIR R4's own value set of the alpha-2
//! codes (`http://hl7.org/fhir/ValueSet/iso3166-1-2`, loaded with the R4 package), which writes them in ISO's
//! comma form (`Bolivia, Plurinational State of`) as tx.fhir.org shows them, and from the crate (its
//! parenthesised form) for a code that value set lacks or when R4 is not loaded. A user-assigned code has no
//! fixed name: a display other than "User-assigned" is only a hint to define one in a supplement.

use crate::codesystem::CodeSystem;
use crate::error::TxError;
use crate::provider::{CodeSystemProvider, Detail, MapTarget, ProviderShell, Selection};
use crate::registry::{Registry, pick};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// The canonical URL of ISO 3166-1 country codes.
pub const ISO3166_URL: &str = "urn:iso:std:iso:3166";
/// The version served (the ISO 3166-1 edition of the names), as tx.fhir.org names it.
pub const ISO3166_VERSION: &str = "2018";
/// FHIR R4's value set of the alpha-2 codes, whose displays name the countries.
const ALPHA2_VALUE_SET: &str = "http://hl7.org/fhir/ValueSet/iso3166-1-2";
/// The display of a user-assigned code element.
const USER_ASSIGNED: &str = "User-assigned";

/// Whether `code` is one of the alpha-2 code elements ISO 3166-1 reserves for users to assign (`AA`,
/// `QM`-`QZ`, `XA`-`XZ`, `ZZ`).
pub fn user_assigned(code: &str) -> bool {
    match code.as_bytes() {
        [b'A', b'A'] | [b'Z', b'Z'] => true,
        [b'Q', c] => (b'M'..=b'Z').contains(c),
        [b'X', c] => c.is_ascii_uppercase(),
        _ => false,
    }
}

/// ISO 3166-1 for the terminology operations.
pub struct Iso3166Provider {
    shell: ProviderShell,
    /// Every concept, sorted by code.
    all: CodeSystem,
}

impl std::fmt::Debug for Iso3166Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Iso3166Provider")
            .field("concepts", &self.all.concepts.len())
            .finish()
    }
}

impl Iso3166Provider {
    /// ISO 3166-1, named by FHIR R4's alpha-2 value set when the registry holds it.
    pub fn new(registry: &Registry) -> Arc<Iso3166Provider> {
        let names = value_set_names(registry);
        let mut concepts: Vec<(String, String)> = Vec::new();
        for country in isocountry::CountryCode::iter() {
            let name = names
                .get(country.alpha2())
                .and_then(|n| repair(n, country.name()))
                .unwrap_or_else(|| country.name().to_string());
            concepts.push((country.alpha2().to_string(), name.clone()));
            concepts.push((country.alpha3().to_string(), name.clone()));
            concepts.push((format!("{:03}", country.numeric_id()), name));
        }
        for a in b'A'..=b'Z' {
            for b in b'A'..=b'Z' {
                let code = String::from_utf8(vec![a, b]).unwrap_or_default();
                if user_assigned(&code) {
                    concepts.push((code, USER_ASSIGNED.to_string()));
                }
            }
        }
        // tx.fhir.org's expansion order: by code as text (digits first, then alpha-2 and alpha-3 mixed).
        concepts.sort();
        concepts.dedup_by(|a, b| a.0 == b.0);
        let shell = json!({
            "resourceType": "CodeSystem",
            "id": "iso3166",
            "url": ISO3166_URL,
            "version": ISO3166_VERSION,
            "name": "ISO 3166-1 Country Codes",
            "status": "active",
            "caseSensitive": true,
            "content": "complete",
        });
        let mut full = shell.clone();
        full["concept"] = concepts
            .iter()
            .map(|(code, display)| json!({"code": code, "display": display}))
            .collect();
        let all = CodeSystem::from_json(Arc::new(full));
        Arc::new_cyclic(|me| Iso3166Provider {
            shell: ProviderShell::new(Arc::new(shell), me),
            all,
        })
    }

    /// Every code, in expansion order.
    pub fn codes(&self) -> impl Iterator<Item = &str> {
        self.all.concepts.iter().map(|c| c.code.as_str())
    }
}

/// The displays of FHIR R4's alpha-2 value set, by code.
fn value_set_names(registry: &Registry) -> HashMap<String, String> {
    let mut names = HashMap::new();
    let Some(vs) = pick(
        registry.value_set_versions(ALPHA2_VALUE_SET),
        None,
        |v| v["version"].as_str(),
        |v| v["date"].as_str(),
    ) else {
        return names;
    };
    for inc in vs["compose"]["include"].as_array().into_iter().flatten() {
        if inc["system"] != ISO3166_URL {
            continue;
        }
        for c in inc["concept"].as_array().into_iter().flatten() {
            if let (Some(code), Some(d)) = (c["code"].as_str(), c["display"].as_str()) {
                names.insert(code.to_string(), d.to_string());
            }
        }
    }
    names
}

/// The value set's name `name` of a country the crate names `iso`, with the two faults of R4's generated
/// value set undone: apostrophes written twice (`Côte d''Ivoire`), and a name cut at its comma
/// (`Virgin Islands,`), which is completed with the qualifier the crate writes in brackets
/// (`Virgin Islands (U.S.)` gives `Virgin Islands, U.S.`). None when the cut name cannot be completed.
fn repair(name: &str, iso: &str) -> Option<String> {
    let name = name.replace("''", "'");
    let Some(stem) = name.strip_suffix(',') else {
        return Some(name);
    };
    let qualifier = iso
        .strip_prefix(stem)?
        .trim()
        .strip_prefix('(')?
        .strip_suffix(')')?;
    Some(format!("{stem}, {qualifier}"))
}

impl CodeSystemProvider for Iso3166Provider {
    fn system(&self) -> &str {
        ISO3166_URL
    }

    fn version(&self) -> &str {
        ISO3166_VERSION
    }

    fn code_system(&self) -> Arc<CodeSystem> {
        self.shell.empty()
    }

    fn compile(&self, codes: &[&str], _languages: Option<&str>, _detail: Detail) -> CodeSystem {
        let concepts = codes
            .iter()
            .filter_map(|c| self.all.find(c))
            .map(|i| self.all.concepts[i].clone())
            .collect();
        self.shell.with(concepts)
    }

    fn select(
        &self,
        filters: &[Value],
        only: Option<&[String]>,
        path: &str,
    ) -> Result<Selection, TxError> {
        // The generic filters (`code regex [A-Z]{3}`, as R4's `iso3166-1-3` uses) over the whole list.
        let compiled = filters
            .iter()
            .enumerate()
            .map(|(i, f)| {
                crate::filter::Filter::compile(&self.all, f, &format!("{path}.filter[{i}]"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let keep = |i: usize| compiled.iter().all(|f| f.matches(&self.all, i));
        let codes = match only {
            Some(codes) => codes
                .iter()
                .filter(|c| self.all.find(c).is_some_and(keep))
                .cloned()
                .collect(),
            None => (0..self.all.concepts.len())
                .filter(|&i| keep(i))
                .map(|i| self.all.concepts[i].code.clone())
                .collect(),
        };
        Ok(Selection {
            codes,
            unclosed: None,
        })
    }

    fn quiet_inactive(&self) -> bool {
        false
    }

    fn display_is_fixed(&self, code: &str) -> bool {
        !user_assigned(code)
    }

    fn subsumes(&self, a: &str, b: &str) -> Result<&'static str, String> {
        for c in [a, b] {
            if self.all.find(c).is_none() {
                return Err(c.to_string());
            }
        }
        Ok(if a == b { "equivalent" } else { "not-subsumed" })
    }

    fn lookup_codes(&self, code: &str) -> Option<Vec<String>> {
        Some(vec![code.to_string()])
    }

    fn lookup(&self, code: &str, _languages: Option<&str>, properties: &[String]) -> Option<Value> {
        let i = self.all.find(code)?;
        let display = self.all.concepts[i].display.clone();
        Some(crate::lookup::concept_answer(
            &self.all, i, display, properties,
        ))
    }

    fn implicit_value_set(&self, _url: &str) -> Option<Arc<Value>> {
        None
    }

    fn implicit_map(&self, _url: &str, _code: &str, _reverse: bool) -> Option<Vec<MapTarget>> {
        None
    }
}
