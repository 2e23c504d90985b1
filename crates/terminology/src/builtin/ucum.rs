//! UCUM (`http://unitsofmeasure.org`): every well-formed unit expression made of known atoms is a code. The
//! grammar and the atom tables are the `ucum-units` crate's (built from the official `ucum-essence.xml`);
//! this file is the FHIR glue: displays, `$lookup`, the `canonical` filter, and the expansion tx.fhir.org gives
//! (the units of the `ucum-common` value set, marked unclosed).

use crate::codesystem::{CodeSystem, Concept};
use crate::error::{ErrorKind, Issue, Severity, TxError};
use crate::provider::{CodeSystemProvider, Detail, MapTarget, ProviderShell, Selection};
use crate::registry::{Registry, pick};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// The canonical URL of UCUM.
pub const UCUM_URL: &str = "http://unitsofmeasure.org";
/// The UCUM version whose tables `ucum-units` carries (ucum-essence.xml 2.2).
const UCUM_VERSION: &str = "2.2";
/// The value set of common units an expansion of all of UCUM lists.
const COMMON_UNITS: &str = "http://hl7.org/fhir/ValueSet/ucum-common";
/// SNOMED CT's "synonym" description type: the use tx.fhir.org gives a unit's name from `ucum-common`.
const SYNONYM: &str = "900000000000013009";

/// UCUM for the terminology operations.
pub struct UcumProvider {
    shell: ProviderShell,
    /// The valid codes of `ucum-common`, sorted, with the names it gives them.
    common: Vec<(String, Option<String>)>,
    common_index: HashMap<String, usize>,
    /// `url|version` of that value set.
    common_source: Option<String>,
}

impl std::fmt::Debug for UcumProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UcumProvider")
            .field("common", &self.common.len())
            .finish()
    }
}

impl UcumProvider {
    /// UCUM, with the common units of the newest `ucum-common` value set in `registry` (none if absent).
    pub fn new(registry: &Registry) -> Arc<UcumProvider> {
        let mut common: Vec<(String, Option<String>)> = Vec::new();
        let mut common_source = None;
        if let Some(vs) = pick(
            registry.value_set_versions(COMMON_UNITS),
            None,
            |v| v["version"].as_str(),
            |v| v["date"].as_str(),
        ) {
            common_source = Some(crate::expand::vs_canonical(vs));
            for inc in vs["compose"]["include"].as_array().into_iter().flatten() {
                if inc["system"] != UCUM_URL {
                    continue;
                }
                for c in inc["concept"].as_array().into_iter().flatten() {
                    if let Some(code) = c["code"].as_str()
                        && valid(code)
                    {
                        common.push((code.to_string(), c["display"].as_str().map(str::to_string)));
                    }
                }
            }
        }
        common.sort_by(|a, b| a.0.cmp(&b.0));
        common.dedup_by(|a, b| a.0 == b.0);
        let common_index = common
            .iter()
            .enumerate()
            .map(|(i, (c, _))| (c.clone(), i))
            .collect();
        let shell = Arc::new(json!({
            "resourceType": "CodeSystem",
            "id": "ucum",
            "url": UCUM_URL,
            "version": UCUM_VERSION,
            "name": "UCUM",
            "title": "Unified Code for Units of Measure (UCUM)",
            "status": "active",
            "caseSensitive": true,
            "content": "not-present",
            "filter": [{"code": "canonical", "operator": ["="], "value": "a UCUM unit: the canonical (base) units of the code"}],
        }));
        Arc::new_cyclic(|me| UcumProvider {
            shell: ProviderShell::new(shell, me),
            common,
            common_index,
            common_source,
        })
    }

    /// The name `ucum-common` gives `code`, if it lists it.
    fn common_name(&self, code: &str) -> Option<&str> {
        self.common_index
            .get(code)
            .and_then(|&i| self.common[i].1.as_deref())
    }

    fn concept(&self, code: &str) -> Concept {
        // tx.fhir.org shows a unit by its code.
        Concept::new(code, Some(code.to_string()))
    }

    /// Whether `code` passes every filter (already checked by [`check_filters`]).
    fn passes(code: &str, filters: &[(String, String)]) -> bool {
        filters
            .iter()
            .all(|(_, value)| canonical_units(code).as_deref() == Some(value.as_str()))
    }
}

/// The canonical (base) units of `code`, as UCUM writes them (`m3` for `mL`); None for an invalid code.
pub fn canonical_units(code: &str) -> Option<String> {
    ucum::analyze(&lenient(code))
        .ok()
        .map(|a| a.dimension.to_string())
}

/// Whether `code` is a UCUM unit expression made of known atoms.
pub fn valid(code: &str) -> bool {
    ucum::validate(&lenient(code)).is_ok()
}

/// `code` with the spaces inside its annotations (`{milligram per deciliter}`) made underscores: UCUM allows
/// only printable ASCII without space there, but tx.fhir.org (and the data it validates) accepts spaces, and an
/// annotation never changes what a unit means.
fn lenient(code: &str) -> std::borrow::Cow<'_, str> {
    if !code.contains(' ') {
        return code.into();
    }
    let mut depth = 0usize;
    code.chars()
        .map(|c| match c {
            '{' => {
                depth += 1;
                c
            }
            '}' => {
                depth = depth.saturating_sub(1);
                c
            }
            ' ' if depth > 0 => '_',
            c => c,
        })
        .collect::<String>()
        .into()
}

/// The unit's name as tx.fhir.org gives it: `(milligram) / (deciliter)`. An annotation after a unit counts
/// there as a factor of one (`mg/dL{per deciliter}` is `(milligram) / (deciliter) * 1`).
fn display_name(code: &str) -> Option<String> {
    let code = lenient(code);
    let mut name = ucum::display_name(&code).ok()?;
    let bytes = code.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let attached = i > 0 && !matches!(bytes[i - 1], b'.' | b'/' | b'(');
        if b == b'{' && attached {
            name.push_str(" * 1");
        }
    }
    Some(name)
}

/// Why `code` is not a UCUM unit, in tx.fhir.org's words; None when it is one.
pub fn invalid_reason(code: &str) -> Option<String> {
    let err = ucum::validate(&lenient(code)).err()?;
    let why = match err {
        ucum::UcumError::Parse { pos, msg } => format!("{msg} at character {}", pos + 1),
        ucum::UcumError::UnknownAtom { code: atom } => {
            let at = code.find(atom.as_str()).map_or(1, |p| p + 1);
            format!("The unit '{atom}' is unknown at character {at}")
        }
        other => other.to_string(),
    };
    Some(format!("Error processing unit '{code}': {why}"))
}

/// The `(property, value)` of each filter; the only property UCUM knows is `canonical` with `=`.
fn check_filters(filters: &[Value], path: &str) -> Result<Vec<(String, String)>, TxError> {
    let mut out = Vec::new();
    for (i, f) in filters.iter().enumerate() {
        let property = f["property"].as_str().unwrap_or_default();
        let op = f["op"].as_str().unwrap_or_default();
        let value = f["value"].as_str().unwrap_or_default();
        if property != "canonical" || op != "=" || value.is_empty() {
            return Err(TxError::new(
                ErrorKind::NotSupported,
                Issue::new(
                    Severity::Error,
                    "not-supported",
                    Some("vs-invalid"),
                    format!(
                        "The filter '{property} {op} {value}' is not supported for the code system {UCUM_URL}: only 'canonical = <unit>' is"
                    ),
                )
                .at(format!("{path}.filter[{i}]")),
            ));
        }
        out.push((property.to_string(), value.to_string()));
    }
    Ok(out)
}

impl CodeSystemProvider for UcumProvider {
    fn system(&self) -> &str {
        UCUM_URL
    }

    fn version(&self) -> &str {
        UCUM_VERSION
    }

    fn code_system(&self) -> Arc<CodeSystem> {
        self.shell.empty()
    }

    fn compile(&self, codes: &[&str], _languages: Option<&str>, _detail: Detail) -> CodeSystem {
        let concepts = codes
            .iter()
            .filter(|c| valid(c))
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
        let filters = check_filters(filters, path)?;
        let reason = format!(
            "The code System '{UCUM_URL}' has a grammar and so has infinite members. This extension is based on {COMMON_UNITS}"
        );
        let codes = match only {
            Some(codes) => codes
                .iter()
                .filter(|c| valid(c) && Self::passes(c, &filters))
                .cloned()
                .collect(),
            // A grammar has no list of its members: tx.fhir.org lists the common units instead.
            None => self
                .common
                .iter()
                .map(|(c, _)| c)
                .filter(|c| Self::passes(c, &filters))
                .cloned()
                .collect(),
        };
        Ok(Selection {
            codes,
            unclosed: Some(Some(reason)),
        })
    }

    fn quiet_inactive(&self) -> bool {
        false
    }

    fn filter_note(&self, filters: &[Value], code: &str) -> Option<String> {
        let units = canonical_units(code)?;
        filters.iter().find_map(|f| {
            let want = f["value"].as_str()?;
            (f["property"] == "canonical" && units != want)
                .then(|| format!("Code {code} has canonical form {units}, not {want} as required"))
        })
    }

    fn expands_to_examples(&self) -> bool {
        true
    }

    fn examples_source(&self) -> Option<String> {
        self.common_source.clone()
    }

    fn code_notes(&self, code: &str) -> Vec<Issue> {
        invalid_reason(code)
            .map(|text| {
                Issue::new(
                    Severity::Information,
                    "code-invalid",
                    Some("invalid-code"),
                    text,
                )
            })
            .into_iter()
            .collect()
    }

    fn subsumes(&self, a: &str, b: &str) -> Result<&'static str, String> {
        for c in [a, b] {
            if !valid(c) {
                return Err(c.to_string());
            }
        }
        // UCUM has no hierarchy: a unit subsumes only itself.
        Ok(if a == b { "equivalent" } else { "not-subsumed" })
    }

    fn lookup(
        &self,
        code: &str,
        _languages: Option<&str>,
        _properties: &[String],
    ) -> Option<Value> {
        if !valid(code) {
            return None;
        }
        let preferred = crate::expansion::preferred_for_language();
        let designation = |use_: Value, value: &str| {
            json!({"name": "designation", "part": [
                {"name": "language", "valueCode": "en"},
                {"name": "use", "valueCoding": use_},
                {"name": "value", "valueString": value},
            ]})
        };
        let mut out = vec![
            json!({"name": "code", "valueCode": code}),
            json!({"name": "system", "valueUri": UCUM_URL}),
            json!({"name": "name", "valueString": "UCUM"}),
            json!({"name": "version", "valueString": UCUM_VERSION}),
            json!({"name": "display", "valueString": code}),
            json!({"name": "abstract", "valueBoolean": false}),
            designation(preferred.clone(), code),
        ];
        if let Some(name) = display_name(code) {
            out.push(designation(preferred, &name));
        }
        if let Some(name) = self.common_name(code) {
            out.push(designation(
                json!({"system": "http://snomed.info/sct", "code": SYNONYM}),
                name,
            ));
        }
        out.push(json!({"name": "property", "part": [
            {"name": "code", "valueCode": "inactive"},
            {"name": "value", "valueBoolean": false},
        ]}));
        Some(json!({"resourceType": "Parameters", "parameter": out}))
    }

    fn implicit_value_set(&self, _url: &str) -> Option<Arc<Value>> {
        None
    }

    fn implicit_map(&self, _url: &str, _code: &str, _reverse: bool) -> Option<Vec<MapTarget>> {
        None
    }
}
