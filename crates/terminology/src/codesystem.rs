//! A FHIR CodeSystem resource compiled for lookups: concepts in one vector, an index by code, and the
//! hierarchy (nested concepts and `parent`/`child` properties) as index lists.

use crate::provider::CodeSystemProvider;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// `CodeSystem.content`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Content {
    /// All concepts are present.
    Complete,
    /// Some concepts are present.
    Fragment,
    /// Adds designations and properties to another code system.
    Supplement,
    /// Example concepts only.
    Example,
    /// No concepts present.
    NotPresent,
}

/// A property definition of a code system.
#[derive(Debug, Clone)]
pub struct PropertyDef {
    /// The code used in concepts.
    pub code: String,
    /// Its URI, if any.
    pub uri: Option<String>,
    /// Its type (`code`, `Coding`, `string`, `boolean`, ...).
    pub type_: Option<String>,
}

/// A designation of a concept.
#[derive(Debug, Clone, Default)]
pub struct Designation {
    /// Its language, if any.
    pub language: Option<String>,
    /// Its use (a Coding), if any.
    pub use_: Option<Value>,
    /// The text.
    pub value: String,
    /// No longer a valid display (an inactive SNOMED CT description): kept so validation can say so.
    pub inactive: bool,
    /// Extensions on the designation (`coding-sctdescid`, a `standards-status` that retires it, ...).
    pub extensions: Vec<Value>,
    /// The canonical (`url|version`) of the supplement it came from, when it came from one.
    pub source: Option<String>,
}

/// `structuredefinition-standards-status`: on a concept or designation, `deprecated`/`withdrawn` retire it.
pub const STANDARDS_STATUS: &str =
    "http://hl7.org/fhir/StructureDefinition/structuredefinition-standards-status";

impl Designation {
    /// A designation with `language`, `use_` and `value`, active, with no extensions.
    pub fn new(language: Option<String>, use_: Option<Value>, value: impl Into<String>) -> Self {
        Designation {
            language,
            use_,
            value: value.into(),
            ..Designation::default()
        }
    }

    /// Why the designation is no longer a correct display, if it is not: `inactive` (an inactive SNOMED CT
    /// description) or `deprecated` (a FHIR designation retired by a `standards-status` extension;
    /// tx.fhir.org names both `deprecated` and `withdrawn` so in its INACTIVE_DISPLAY_FOUND message).
    pub fn retired(&self) -> Option<&'static str> {
        if self.inactive {
            return Some("inactive");
        }
        self.extensions
            .iter()
            .any(|e| {
                e["url"] == STANDARDS_STATUS
                    && matches!(e["valueCode"].as_str(), Some("deprecated" | "withdrawn"))
            })
            .then_some("deprecated")
    }
}

/// A property value of a concept: `code` and the JSON value element (`{"valueCode": "x"}`).
#[derive(Debug, Clone)]
pub struct PropertyValue {
    /// The property code.
    pub code: String,
    /// The `value[x]` key (`valueCode`, `valueBoolean`, ...).
    pub key: String,
    /// The value.
    pub value: Value,
}

impl PropertyValue {
    /// The value as text (codes, strings, booleans, numbers; a Coding's code).
    pub fn text(&self) -> String {
        match &self.value {
            Value::String(s) => s.clone(),
            Value::Object(o) => o
                .get("code")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            other => other.to_string(),
        }
    }
}

/// One concept.
#[derive(Debug, Clone, Default)]
pub struct Concept {
    /// The code.
    pub code: String,
    /// Its display in the code system's language.
    pub display: Option<String>,
    /// Its definition.
    pub definition: Option<String>,
    /// Other designations.
    pub designations: Vec<Designation>,
    /// Property values.
    pub properties: Vec<PropertyValue>,
    /// Indices of the parents.
    pub parents: Vec<usize>,
    /// Indices of the children.
    pub children: Vec<usize>,
    /// Extensions on the concept (kept to echo them in expansions).
    pub extensions: Vec<Value>,
}

impl Concept {
    /// A concept with a code and display and nothing else (what grammar-based code systems compile).
    pub fn new(code: &str, display: Option<String>) -> Concept {
        Concept {
            code: code.to_string(),
            display,
            ..Concept::default()
        }
    }

    /// The first value of property `code`.
    pub fn property(&self, code: &str) -> Option<&PropertyValue> {
        self.properties.iter().find(|p| p.code == code)
    }

    /// The concept's status property (`status`), if any.
    pub fn status(&self) -> Option<String> {
        self.property("status").map(PropertyValue::text)
    }

    /// Inactive: `inactive = true` or a status of retired/inactive.
    pub fn is_inactive(&self) -> bool {
        if let Some(p) = self.property("inactive") {
            return p.value == Value::Bool(true);
        }
        matches!(self.status().as_deref(), Some("retired" | "inactive"))
    }

    /// Deprecated: a status of deprecated.
    pub fn is_deprecated(&self) -> bool {
        self.status().as_deref() == Some("deprecated") || self.extensions.iter().any(|e| {
            e["url"]
                == "http://hl7.org/fhir/StructureDefinition/structuredefinition-standards-status"
                && e["valueCode"] == "deprecated"
        })
    }

    /// Abstract (not selectable).
    pub fn is_abstract(&self) -> bool {
        self.properties.iter().any(|p| {
            (p.code == "notSelectable" || p.code == "abstract") && p.value == Value::Bool(true)
        })
    }
}

/// A compiled CodeSystem.
#[derive(Clone)]
pub struct CodeSystem {
    /// The canonical URL.
    pub url: String,
    /// The business version.
    pub version: Option<String>,
    /// `name`.
    pub name: Option<String>,
    /// `title`.
    pub title: Option<String>,
    /// `status`.
    pub status: Option<String>,
    /// `experimental`.
    pub experimental: bool,
    /// `content`.
    pub content: Content,
    /// `caseSensitive` (default true).
    pub case_sensitive: bool,
    /// `language` of displays.
    pub language: Option<String>,
    /// For a supplement: the canonical of the supplemented code system.
    pub supplements: Option<String>,
    /// Property definitions, shared by the copies a provider makes per request (LOINC declares dozens).
    pub properties: Arc<Vec<PropertyDef>>,
    /// All concepts, depth first in document order.
    pub concepts: Vec<Concept>,
    /// Concepts without parents.
    pub roots: Vec<usize>,
    /// The resource as received.
    pub resource: Arc<Value>,
    /// The store that answers for this code system when it is not a FHIR resource: this value then holds
    /// only the concepts compiled for one request (or none, as the code system's metadata).
    pub provider: Option<Arc<dyn CodeSystemProvider>>,
    /// Canonicals (`url|version`) of the supplements merged into this copy, as `used-supplement` reports them.
    pub applied_supplements: Vec<String>,
    /// The supplements merged into this copy, kept so that concepts a provider compiles later for a request
    /// get them too (a provider's code system has no concepts to merge them into up front).
    pub supplement_sources: Vec<Arc<CodeSystem>>,
    index: HashMap<String, usize>,
    lower_index: HashMap<String, usize>,
}

impl CodeSystem {
    /// Compiles a CodeSystem resource.
    pub fn from_json(resource: Arc<Value>) -> CodeSystem {
        let r = &*resource;
        let s = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
        let content = match r.get("content").and_then(Value::as_str) {
            Some("fragment") => Content::Fragment,
            Some("supplement") => Content::Supplement,
            Some("example") => Content::Example,
            Some("not-present") => Content::NotPresent,
            _ => Content::Complete,
        };
        let properties = r
            .get("property")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|p| PropertyDef {
                        code: p["code"].as_str().unwrap_or_default().to_string(),
                        uri: p["uri"].as_str().map(str::to_string),
                        type_: p["type"].as_str().map(str::to_string),
                    })
                    .collect()
            })
            .map(Arc::new)
            .unwrap_or_default();
        let mut cs = CodeSystem {
            url: s("url").unwrap_or_default(),
            version: s("version"),
            name: s("name"),
            title: s("title"),
            status: s("status"),
            experimental: r["experimental"] == Value::Bool(true),
            content,
            case_sensitive: r["caseSensitive"] != Value::Bool(false),
            language: s("language"),
            supplements: s("supplements"),
            properties,
            concepts: Vec::new(),
            roots: Vec::new(),
            index: HashMap::new(),
            lower_index: HashMap::new(),
            resource: resource.clone(),
            provider: None,
            applied_supplements: Vec::new(),
            supplement_sources: Vec::new(),
        };
        if let Some(list) = r.get("concept").and_then(Value::as_array) {
            for c in list {
                cs.add_concept(c, None);
            }
        }
        cs.link_property_hierarchy();
        cs.roots = (0..cs.concepts.len())
            .filter(|&i| cs.concepts[i].parents.is_empty())
            .collect();
        cs
    }

    /// A code system served by `provider`: `resource` carries its metadata (url, version, name, status), and
    /// `concepts` are the ones compiled for a request (their `parents`/`children` index into `concepts`).
    pub fn from_provider(
        resource: Arc<Value>,
        provider: Arc<dyn CodeSystemProvider>,
        concepts: Vec<Concept>,
    ) -> CodeSystem {
        CodeSystem::with_provider_concepts(CodeSystem::from_json(resource), provider, concepts)
    }

    /// As [`Self::from_provider`], from the metadata compiled before (`meta`: the resource compiled without
    /// concepts), which a provider keeps so that each request's concepts do not parse the resource again.
    pub fn from_provider_meta(
        meta: &CodeSystem,
        provider: Arc<dyn CodeSystemProvider>,
        concepts: Vec<Concept>,
    ) -> CodeSystem {
        CodeSystem::with_provider_concepts(meta.clone(), provider, concepts)
    }

    fn with_provider_concepts(
        mut cs: CodeSystem,
        provider: Arc<dyn CodeSystemProvider>,
        concepts: Vec<Concept>,
    ) -> CodeSystem {
        cs.provider = Some(provider);
        for (i, c) in concepts.iter().enumerate() {
            cs.lower_index.entry(c.code.to_lowercase()).or_insert(i);
            cs.index.entry(c.code.clone()).or_insert(i);
        }
        cs.roots = (0..concepts.len())
            .filter(|&i| concepts[i].parents.is_empty())
            .collect();
        cs.concepts = concepts;
        cs
    }

    fn add_concept(&mut self, c: &Value, parent: Option<usize>) {
        let code = c["code"].as_str().unwrap_or_default().to_string();
        let idx = self.concepts.len();
        let designations = c
            .get("designation")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(parse_designation).collect())
            .unwrap_or_default();
        let properties = c
            .get("property")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(parse_property).collect())
            .unwrap_or_default();
        self.concepts.push(Concept {
            code: code.clone(),
            display: c["display"].as_str().map(str::to_string),
            definition: c["definition"].as_str().map(str::to_string),
            designations,
            properties,
            parents: parent.into_iter().collect(),
            children: Vec::new(),
            extensions: c
                .get("extension")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        });
        if let Some(p) = parent {
            self.concepts[p].children.push(idx);
        }
        self.lower_index.entry(code.to_lowercase()).or_insert(idx);
        self.index.entry(code).or_insert(idx);
        if let Some(list) = c.get("concept").and_then(Value::as_array) {
            for child in list {
                self.add_concept(child, Some(idx));
            }
        }
    }

    /// `parent` and `child` properties (R5 style hierarchy) become links too.
    fn link_property_hierarchy(&mut self) {
        let mut links = Vec::new();
        for (i, c) in self.concepts.iter().enumerate() {
            for p in &c.properties {
                let target = p.text();
                match p.code.as_str() {
                    "parent" | "subsumedBy" => {
                        if let Some(&t) = self.index.get(&target) {
                            links.push((t, i));
                        }
                    }
                    "child" => {
                        if let Some(&t) = self.index.get(&target) {
                            links.push((i, t));
                        }
                    }
                    _ => {}
                }
            }
        }
        for (parent, child) in links {
            if !self.concepts[parent].children.contains(&child) {
                self.concepts[parent].children.push(child);
            }
            if !self.concepts[child].parents.contains(&parent) {
                self.concepts[child].parents.push(parent);
            }
        }
    }

    /// The concept with exactly this code (or, for case-insensitive systems, any case).
    pub fn find(&self, code: &str) -> Option<usize> {
        self.index.get(code).copied().or_else(|| {
            if self.case_sensitive {
                None
            } else {
                self.lower_index.get(&code.to_lowercase()).copied()
            }
        })
    }

    /// The concept whose code differs only by case (whatever the case sensitivity).
    pub fn find_any_case(&self, code: &str) -> Option<usize> {
        self.lower_index.get(&code.to_lowercase()).copied()
    }

    /// `url|version` (or just the url).
    pub fn versioned_url(&self) -> String {
        match &self.version {
            Some(v) => format!("{}|{}", self.url, v),
            None => self.url.clone(),
        }
    }

    /// Whether `descendant` is `ancestor` or below it.
    pub fn subsumes(&self, ancestor: usize, descendant: usize) -> bool {
        if ancestor == descendant {
            return true;
        }
        // Ancestors are few (a handful of levels), so a list beats a per-call bitmap of every concept: filters
        // call this once per concept of the code system (98k for ICD-10-CM).
        let mut stack = vec![descendant];
        let mut seen: Vec<usize> = Vec::new();
        while let Some(i) = stack.pop() {
            for &p in &self.concepts[i].parents {
                if p == ancestor {
                    return true;
                }
                if !seen.contains(&p) {
                    seen.push(p);
                    stack.push(p);
                }
            }
        }
        false
    }

    /// All descendants of `idx` (not including it), depth first.
    pub fn descendants(&self, idx: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut seen = vec![false; self.concepts.len()];
        let mut stack: Vec<usize> = self.concepts[idx].children.iter().rev().copied().collect();
        while let Some(i) = stack.pop() {
            if seen[i] {
                continue;
            }
            seen[i] = true;
            out.push(i);
            stack.extend(self.concepts[i].children.iter().rev().copied());
        }
        out
    }

    /// The property definition for `code`.
    pub fn property_def(&self, code: &str) -> Option<&PropertyDef> {
        self.properties.iter().find(|p| p.code == code)
    }

    /// Whether concept `i` is not selectable: its `notSelectable`/`abstract` property, or a property of
    /// another code that the code system declares with FHIR's `notSelectable` URI.
    pub fn is_abstract(&self, i: usize) -> bool {
        let c = &self.concepts[i];
        c.is_abstract()
            || self
                .properties
                .iter()
                .filter(|d| {
                    d.uri.as_deref() == Some("http://hl7.org/fhir/concept-properties#notSelectable")
                })
                .any(|d| {
                    c.properties
                        .iter()
                        .any(|p| p.code == d.code && p.value == Value::Bool(true))
                })
    }

    /// A copy with the designations and properties of `supplements` merged into its concepts.
    pub fn with_supplements(&self, supplements: &[Arc<CodeSystem>]) -> CodeSystem {
        let mut out = self.clone();
        for s in supplements {
            let source = s.versioned_url();
            if !out.applied_supplements.contains(&source) {
                out.applied_supplements.push(source.clone());
                out.supplement_sources.push(s.clone());
            }
            for p in s.properties.iter() {
                if out.property_def(&p.code).is_none() {
                    Arc::make_mut(&mut out.properties).push(p.clone());
                }
            }
            for sc in &s.concepts {
                if let Some(i) = out.find(&sc.code) {
                    let c = &mut out.concepts[i];
                    if let Some(d) = &sc.display {
                        c.designations.push(Designation {
                            source: Some(source.clone()),
                            ..Designation::new(s.language.clone(), None, d.clone())
                        });
                    }
                    c.designations
                        .extend(sc.designations.iter().map(|d| Designation {
                            source: Some(source.clone()),
                            ..d.clone()
                        }));
                    c.properties.extend(sc.properties.iter().cloned());
                    c.extensions.extend(sc.extensions.iter().cloned());
                }
            }
        }
        out
    }
}

impl std::fmt::Debug for CodeSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeSystem")
            .field("url", &self.url)
            .field("version", &self.version)
            .field("concepts", &self.concepts.len())
            .field("provider", &self.provider.is_some())
            .finish()
    }
}

fn parse_designation(d: &Value) -> Designation {
    Designation {
        extensions: d
            .get("extension")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        ..Designation::new(
            d["language"].as_str().map(str::to_string),
            d.get("use").cloned(),
            d["value"].as_str().unwrap_or_default(),
        )
    }
}

fn parse_property(p: &Value) -> Option<PropertyValue> {
    let code = p["code"].as_str()?.to_string();
    let (key, value) = p
        .as_object()?
        .iter()
        .find(|(k, _)| k.starts_with("value"))
        .map(|(k, v)| (k.clone(), v.clone()))?;
    Some(PropertyValue { code, key, value })
}
