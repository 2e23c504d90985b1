//! LOINC served from the memory-mapped [`LoincStore`]: the [`LoincProvider`] compiles only the concepts a
//! request touches and evaluates the LOINC filters over the store, with the answers of the FHIR CodeSystem
//! model (`import_loinc`) it replaces.

use super::store::{LoincStore, PropKind, StoredProperty};
use super::{LOINC_URL, all_loinc_value_set, answer_list_value_set};
use crate::codesystem::{CodeSystem, Concept, Designation, PropertyValue};
use crate::error::{LoadError, TxError};
use crate::fast::{Json, Out};
use crate::provider::{CodeSystemProvider, Detail, MapTarget, Page, PageRequest, Selection};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Weak};

/// LOINC for the terminology operations, over an open [`LoincStore`].
pub struct LoincProvider {
    store: LoincStore,
    shell: Arc<Value>,
    /// The shell compiled once (no provider, no concepts): the metadata the text answers write, and the start
    /// of every compiled CodeSystem.
    meta: CodeSystem,
    /// The property codes whose `true` makes a concept abstract, as `CodeSystem::is_abstract` reads them.
    abstract_codes: Vec<String>,
    version: String,
    me: Weak<LoincProvider>,
}

impl std::fmt::Debug for LoincProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoincProvider")
            .field("version", &self.version)
            .field("concepts", &self.store.len())
            .finish()
    }
}

impl LoincProvider {
    /// LOINC from the store file at `path` (written by `import_loinc_store`).
    pub fn open(path: &Path) -> Result<Arc<LoincProvider>, LoadError> {
        Ok(LoincProvider::new(LoincStore::open(path)?))
    }

    /// LOINC from an open store.
    pub fn new(store: LoincStore) -> Arc<LoincProvider> {
        let shell = Arc::new(store.shell().clone());
        let version = store.stats().version.clone();
        let meta = CodeSystem::from_json(shell.clone());
        let abstract_codes = ["notSelectable", "abstract"]
            .into_iter()
            .map(str::to_string)
            .chain(
                meta.properties
                    .iter()
                    .filter(|d| {
                        d.uri.as_deref()
                            == Some("http://hl7.org/fhir/concept-properties#notSelectable")
                    })
                    .map(|d| d.code.clone()),
            )
            .collect();
        Arc::new_cyclic(|me| LoincProvider {
            store,
            shell,
            meta,
            abstract_codes,
            version,
            me: me.clone(),
        })
    }

    /// The store served.
    pub fn store(&self) -> &LoincStore {
        &self.store
    }

    /// The resources to register beside the provider: the CodeSystem without its concepts (for read and
    /// search; operations go to the provider), the value set of all LOINC (`http://loinc.org/vs`) and one
    /// per answer list (`http://loinc.org/vs/LL...`).
    pub fn resources(&self) -> Vec<Value> {
        let mut out = vec![(*self.shell).clone(), all_loinc_value_set(&self.version)];
        for (list, title, members) in self.store.answer_lists() {
            let members: Vec<String> = members.into_iter().map(str::to_string).collect();
            out.push(answer_list_value_set(&self.version, list, title, &members));
        }
        out
    }

    fn me(&self) -> Arc<dyn CodeSystemProvider> {
        // `self` is only ever reached through the Arc made in `new`, so the upgrade cannot fail while a
        // method runs.
        match self.me.upgrade() {
            Some(me) => me as Arc<dyn CodeSystemProvider>,
            None => unreachable!("LoincProvider used after its last Arc was dropped"),
        }
    }

    /// The concepts `idx` as a CodeSystem; parents and children link the ones among them.
    fn compile_idx(&self, idx: &[u32]) -> CodeSystem {
        let pos: HashMap<u32, usize> = idx.iter().enumerate().rev().map(|(n, &i)| (i, n)).collect();
        let concepts = idx
            .iter()
            .map(|&i| self.concept(i, &pos))
            .collect::<Vec<_>>();
        CodeSystem::from_provider_meta(&self.meta, self.me(), concepts)
    }

    fn concept(&self, i: u32, pos: &HashMap<u32, usize>) -> Concept {
        let s = &self.store;
        Concept {
            code: s.code(i).to_string(),
            display: s.display(i).map(str::to_string),
            definition: s.definition(i).map(str::to_string),
            designations: s
                .designations(i)
                .map(|d| {
                    Designation::new(
                        d.language.map(str::to_string),
                        Some(json!({"system": LOINC_URL, "code": d.use_, "display": d.use_})),
                        d.value,
                    )
                })
                .collect(),
            properties: s.properties(i).map(|p| property_value(&p)).collect(),
            parents: s.parents(i).filter_map(|p| pos.get(&p).copied()).collect(),
            children: s.children(i).filter_map(|c| pos.get(&c).copied()).collect(),
            extensions: Vec::new(),
        }
    }

    /// Whether `ancestor` is `descendant` or above it in the component hierarchy.
    fn subsumes_idx(&self, ancestor: u32, descendant: u32) -> bool {
        if ancestor == descendant {
            return true;
        }
        let mut stack = vec![descendant];
        let mut seen = HashSet::new();
        while let Some(i) = stack.pop() {
            for p in self.store.parents(i) {
                if p == ancestor {
                    return true;
                }
                if seen.insert(p) {
                    stack.push(p);
                }
            }
        }
        false
    }

    /// `root` and everything below it, or above it with `up`.
    fn closure(&self, root: u32, up: bool) -> HashSet<u32> {
        let mut out = HashSet::from([root]);
        let mut stack = vec![root];
        while let Some(i) = stack.pop() {
            let next: Vec<u32> = if up {
                self.store.parents(i).collect()
            } else {
                self.store.children(i).collect()
            };
            for n in next {
                if out.insert(n) {
                    stack.push(n);
                }
            }
        }
        out
    }

    /// The values a filter on `property` compares for concept `i` (as the FHIR CodeSystem model's filter
    /// does: a Coding by its code or its display).
    fn values(&self, i: u32, property: &str) -> Vec<&str> {
        let s = &self.store;
        match property {
            "concept" | "code" => vec![s.code(i)],
            "display" => s.display(i).into_iter().collect(),
            "definition" => s.definition(i).into_iter().collect(),
            "inactive" if s.property_values(i, "inactive").next().is_none() => vec!["false"],
            "parent" => s.parents(i).map(|p| s.code(p)).collect(),
            "child" => s.children(i).map(|c| s.code(c)).collect(),
            p => s
                .property_values(i, p)
                .flat_map(|v| {
                    let display = (v.kind == PropKind::Coding).then_some(v.display).flatten();
                    std::iter::once(v.value).chain(display)
                })
                .collect(),
        }
    }

    /// The concepts among `candidates` that pass filter `f` (already checked by the generic filter
    /// compiler, so the operator is one it knows).
    fn apply(&self, f: &Value, candidates: Vec<u32>) -> Vec<u32> {
        let property = f["property"].as_str().unwrap_or_default();
        let op = f["op"].as_str().unwrap_or_else(|| {
            f["_op"]["extension"]
                .as_array()
                .into_iter()
                .flatten()
                .find_map(|e| e["valueCode"].as_str())
                .unwrap_or_default()
        });
        let value = f["value"].as_str().unwrap_or_default();
        let target = || self.store.find(value);
        let keep_set = |set: HashSet<u32>, want: bool| -> Vec<u32> {
            candidates
                .iter()
                .copied()
                .filter(|i| set.contains(i) == want)
                .collect()
        };
        match op {
            "=" if matches!(property, "LIST" | "answers-for") => {
                // A term stands for its answer lists.
                let lists: Vec<&str> = target()
                    .map(|t| {
                        self.store
                            .property_values(t, "answer-list")
                            .map(|p| p.value)
                            .collect()
                    })
                    .filter(|l: &Vec<&str>| !l.is_empty())
                    .unwrap_or_else(|| vec![value]);
                candidates
                    .into_iter()
                    .filter(|&i| {
                        self.store
                            .property_values(i, "AnswerList")
                            .any(|p| lists.contains(&p.value))
                    })
                    .collect()
            }
            "is-a" => match target() {
                Some(t) => keep_set(self.closure(t, false), true),
                None => Vec::new(),
            },
            "descendent-of" => match target() {
                Some(t) => {
                    let mut set = self.closure(t, false);
                    set.remove(&t);
                    keep_set(set, true)
                }
                None => Vec::new(),
            },
            "is-not-a" => match target() {
                Some(t) => keep_set(self.closure(t, false), false),
                None => candidates,
            },
            "generalizes" => match target() {
                Some(t) => keep_set(self.closure(t, true), true),
                None => Vec::new(),
            },
            "child-of" => match target() {
                Some(t) => keep_set(self.store.children(t).collect(), true),
                None => Vec::new(),
            },
            "=" => self.keep(candidates, property, |v| v == value),
            "in" | "not-in" => {
                let list: Vec<&str> = value.split(',').map(str::trim).collect();
                let want = op == "in";
                candidates
                    .into_iter()
                    .filter(|&i| self.values(i, property).iter().any(|v| list.contains(v)) == want)
                    .collect()
            }
            "exists" => {
                let want = value == "true";
                candidates
                    .into_iter()
                    .filter(|&i| self.values(i, property).is_empty() != want)
                    .collect()
            }
            "regex" => match regex::Regex::new(&format!("^(?:{value})$")) {
                Ok(r) => self.keep(candidates, property, |v| r.is_match(v)),
                Err(_) => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    /// The codes an include with these `filters` selects, in code order (`only`: of those codes alone).
    fn select_idx(
        &self,
        filters: &[Value],
        only: Option<&[String]>,
        path: &str,
    ) -> Result<Vec<u32>, TxError> {
        let meta = self.code_system();
        let mut candidates: Vec<u32> = match only {
            Some(codes) => {
                let mut v: Vec<u32> = codes.iter().filter_map(|c| self.store.find(c)).collect();
                v.sort_unstable();
                v.dedup();
                v
            }
            None => (0..self.store.len() as u32).collect(),
        };
        for (fi, f) in filters.iter().enumerate() {
            // The generic compiler gives the errors (no value, unknown operator, bad regex) in its words.
            crate::filter::Filter::compile(&meta, f, &format!("{path}.filter[{fi}]"))?;
            candidates = self.apply(f, candidates);
        }
        Ok(candidates)
    }

    /// Deprecated (`inactive = true`), as `Concept::is_inactive` reads the compiled concept.
    fn inactive(&self, i: u32) -> bool {
        self.store
            .property_values(i, "inactive")
            .next()
            .is_some_and(|p| p.value == "true")
    }

    /// The display of concept `i` in `languages`, as `context::display_in` picks it from the compiled concept.
    fn display_for(&self, i: u32, languages: Option<&str>) -> Option<&str> {
        let s = &self.store;
        if let Some(langs) = languages {
            let cs_lang = self.shell["language"].as_str().unwrap_or("en");
            for lang in crate::context::parse_languages(langs) {
                if lang == "*" {
                    break;
                }
                if crate::context::lang_matches(&lang, cs_lang) && s.display(i).is_some() {
                    return s.display(i);
                }
                if let Some(d) = s.designations(i).find(|d| {
                    d.language
                        .is_some_and(|l| crate::context::lang_matches(&lang, l))
                }) {
                    return Some(d.value);
                }
                if crate::context::refuses_other_languages(langs) {
                    return None;
                }
            }
        }
        s.display(i)
    }

    /// `Concept::is_inactive` of the compiled concept `i`: `inactive = true`, or a retired or inactive status.
    fn compiled_inactive(&self, i: u32) -> bool {
        self.store.status_flags(i).0
    }

    fn keep(&self, candidates: Vec<u32>, property: &str, test: impl Fn(&str) -> bool) -> Vec<u32> {
        candidates
            .into_iter()
            .filter(|&i| self.values(i, property).into_iter().any(&test))
            .collect()
    }
}

fn property_value(p: &StoredProperty<'_>) -> PropertyValue {
    let (key, value) = match p.kind {
        PropKind::String => ("valueString", json!(p.value)),
        PropKind::Boolean => ("valueBoolean", json!(p.value == "true")),
        PropKind::Code => ("valueCode", json!(p.value)),
        PropKind::Coding => {
            let mut c = json!({"system": LOINC_URL, "code": p.value});
            if let Some(d) = p.display {
                c["display"] = json!(d);
            }
            ("valueCoding", c)
        }
    };
    PropertyValue {
        code: p.code.to_string(),
        key: key.to_string(),
        value,
    }
}

impl CodeSystemProvider for LoincProvider {
    fn system(&self) -> &str {
        LOINC_URL
    }

    fn version(&self) -> &str {
        &self.version
    }

    fn code_system(&self) -> Arc<CodeSystem> {
        Arc::new(CodeSystem::from_provider_meta(
            &self.meta,
            self.me(),
            Vec::new(),
        ))
    }

    fn compile(&self, codes: &[&str], _languages: Option<&str>, _detail: Detail) -> CodeSystem {
        // LOINC concepts are small: every detail gets every designation and property.
        let idx: Vec<u32> = codes.iter().filter_map(|c| self.store.find(c)).collect();
        self.compile_idx(&idx)
    }

    fn select(
        &self,
        filters: &[Value],
        only: Option<&[String]>,
        path: &str,
    ) -> Result<Selection, TxError> {
        Ok(Selection {
            codes: self
                .select_idx(filters, only, path)?
                .into_iter()
                .map(|i| self.store.code(i).to_string())
                .collect(),
            unclosed: None,
        })
    }

    fn expand_page(
        &self,
        filters: &[Value],
        req: &PageRequest<'_>,
        path: &str,
    ) -> Option<Result<Page, TxError>> {
        let selection = match self.select_idx(filters, None, path) {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        let selected = selection.len();
        let text = req.text.map(str::to_lowercase);
        // What the general path keeps: active concepts when asked, and the text filter over the code and
        // the display shown in the requested languages.
        let kept: Vec<u32> = selection
            .into_iter()
            .filter(|&i| !(req.active_only && self.inactive(i)))
            .filter(|&i| {
                text.as_deref().is_none_or(|f| {
                    let display = self.display_for(i, req.languages).unwrap_or_default();
                    crate::expansion::text_matches(self.store.code(i), display, f)
                })
            })
            .collect();
        Some(Ok(Page {
            selected,
            total: kept.len(),
            codes: kept
                .iter()
                .skip(req.offset)
                .take(req.count)
                .map(|&i| self.store.code(i).to_string())
                .collect(),
            unclosed: None,
        }))
    }

    fn quiet_inactive(&self) -> bool {
        false
    }

    /// The whole code system (no filter) holds every code spelled as stored; a code in another case, or a
    /// filter, is for [`Self::select`].
    fn contains(&self, filters: &[Value], code: &str) -> Option<bool> {
        (filters.is_empty() && self.store.find_exact(code).is_some()).then_some(true)
    }

    fn subsumes(&self, a: &str, b: &str) -> Result<&'static str, String> {
        let ia = self.store.find(a).ok_or_else(|| a.to_string())?;
        let ib = self.store.find(b).ok_or_else(|| b.to_string())?;
        Ok(if ia == ib {
            "equivalent"
        } else if self.subsumes_idx(ia, ib) {
            "subsumes"
        } else if self.subsumes_idx(ib, ia) {
            "subsumed-by"
        } else {
            "not-subsumed"
        })
    }

    fn lookup_codes(&self, code: &str) -> Option<Vec<String>> {
        // Unknown codes get the generic unknown-code answer.
        let Some(i) = self.store.find(code) else {
            return Some(Vec::new());
        };
        let mut codes = vec![self.store.code(i).to_string()];
        codes.extend(
            self.store
                .parents(i)
                .map(|p| self.store.code(p).to_string()),
        );
        codes.extend(
            self.store
                .children(i)
                .map(|c| self.store.code(c).to_string()),
        );
        Some(codes)
    }

    /// The generic answer (`lookup::concept_answer` over the code, its parents and children) written
    /// straight from the store: no CodeSystem compiled, no `Value`. A code in another spelling is the
    /// general path's (it answers with the stored one).
    fn lookup_text(&self, code: &str) -> Option<Vec<u8>> {
        let s = &self.store;
        let i = s.find_exact(code)?;
        let m = &self.meta;
        // LoincTable answers run to about 5 kB (designations in each language variant, parts as properties).
        let mut out = Out::with_capacity(8192);
        out.param_str("code", "valueCode", s.code(i));
        out.param_str("system", "valueUri", &m.url);
        if let Some(n) = m.name.as_ref().or(m.title.as_ref()) {
            out.param_str("name", "valueString", n);
        }
        if let Some(v) = &m.version {
            out.param_str("version", "valueString", v);
        }
        let display = s.display(i);
        if let Some(d) = display {
            out.param_str("display", "valueString", d);
        }
        if let Some(d) = s.definition(i) {
            out.param_str("definition", "valueString", d);
        }
        // By the codes' string ids: the other properties are not decoded for this.
        let is_abstract = self.abstract_codes.iter().any(|c| {
            s.property_values(i, c)
                .any(|p| p.kind == PropKind::Boolean && p.value == "true")
        });
        out.param_bool("abstract", is_abstract);
        for d in s.designations(i) {
            out.designation(
                d.language,
                None,
                Some(Json::Coding(LOINC_URL, d.use_, Some(d.use_))),
                d.value,
            );
        }
        if let Some(d) = display {
            out.designation(
                m.language.as_deref(),
                None,
                Some(Json::Text(crate::lookup::PREFERRED_FOR_LANGUAGE)),
                d,
            );
        }
        for p in s.parents(i) {
            out.property_code("parent", s.code(p), s.display(p));
        }
        for c in s.children(i) {
            out.property_code("child", s.code(c), s.display(c));
        }
        out.property_bool("inactive", self.compiled_inactive(i));
        for p in s.properties(i) {
            if matches!(p.code, "parent" | "child" | "inactive") {
                continue;
            }
            out.property_start(p.code, None);
            match p.kind {
                PropKind::String => {
                    out.raw(r#""valueString":"#);
                    out.string(p.value);
                }
                PropKind::Boolean => out.raw(if p.value == "true" {
                    r#""valueBoolean":true"#
                } else {
                    r#""valueBoolean":false"#
                }),
                PropKind::Code => {
                    out.raw(r#""valueCode":"#);
                    out.string(p.value);
                }
                PropKind::Coding => {
                    out.raw(r#""valueCoding":"#);
                    out.json(Json::Coding(LOINC_URL, p.value, p.display));
                }
            }
            out.property_value_end();
        }
        Some(out.finish())
    }

    /// `compile` keeps the codes `find` finds.
    fn lacks(&self, code: &str) -> bool {
        // `find` without its exact search first: a code found exactly is found ignoring case too, and a check
        // asks here only after `plain_display`'s exact search missed.
        self.store.find_any_case(code).is_none()
    }

    /// A code spelled as stored, neither deprecated (`inactive`, reported for LOINC) nor of a deprecated
    /// status: its display, as the compiled concept gives it.
    fn plain_display(&self, code: &str) -> Option<Option<String>> {
        let i = self.store.find_exact(code)?;
        if self.store.status_flags(i) != (false, false) {
            return None;
        }
        Some(self.store.display(i).map(str::to_string))
    }

    fn lookup(&self, code: &str, languages: Option<&str>, properties: &[String]) -> Option<Value> {
        let i = self.store.find(code)?;
        // The concept first, then its parents and children, so that the answer can name them.
        let mut idx = vec![i];
        idx.extend(self.store.parents(i));
        idx.extend(self.store.children(i));
        let cs = self.compile_idx(&idx);
        let display = crate::context::display_in(&cs, &cs.concepts[0], languages);
        Some(crate::lookup::concept_answer(&cs, 0, display, properties))
    }

    fn implicit_value_set(&self, _url: &str) -> Option<Arc<Value>> {
        // LOINC's implicit value sets have URLs of their own (`http://loinc.org/vs/LL...`), not `?fhir_vs`;
        // they are registered as resources (see `resources`).
        None
    }

    fn implicit_map(&self, _url: &str, _code: &str, _reverse: bool) -> Option<Vec<MapTarget>> {
        None
    }
}
