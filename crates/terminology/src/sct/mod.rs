//! SNOMED CT served from the memory-mapped `snomed` store: the [`SnomedProvider`] compiles only the concepts a
//! request touches, evaluates filters and ECL as bitmaps, and knows the implicit value sets (`?fhir_vs...`)
//! and concept maps (`?fhir_cm=...`) of the SNOMED CT URI standard.

mod expression;
mod lookup_text;
mod membership;
mod normal_form;
mod paging;
mod words;

use crate::codesystem::{CodeSystem, Concept, Designation, PropertyValue};
use crate::error::{ErrorKind, Issue, Severity, TxError};
use crate::provider::{
    CodeSystemProvider, Detail, MapTarget, Page, PageRequest, ProviderShell, Selection,
};
use serde_json::{Value, json};
use snomed::ecl_eval::{EclError, Limits, RoaringBitmap};
use snomed::{ConceptIdx, DescriptionKind, SctId, Store, consts};
use std::sync::{Arc, OnceLock};

use expression::Expression;

/// The canonical URL of SNOMED CT.
pub const SCT: &str = "http://snomed.info/sct";

/// |Concept model attribute| and |Linkage concept|: attribute names of expressions descend from one of them.
const ATTRIBUTE_ROOTS: [u64; 2] = [410662002, 106237007];
/// |Reference set|: the implicit value set of all reference sets is its descendants.
const REFSET_ROOT: u64 = 900000000000455006;
/// The reason an implicit value set of all of SNOMED CT is unclosed.
const GRAMMAR: &str =
    "The code System 'http://snomed.info/sct' has a grammar and so has infinite members";

/// SNOMED CT for the terminology operations, over an open [`Store`].
pub struct SnomedProvider {
    store: Arc<Store>,
    /// The version URI served, `http://snomed.info/{sct|xsct}/{module}/version/{date}`.
    version: String,
    /// The edition URI without the date.
    edition: String,
    label: Option<&'static str>,
    shell: ProviderShell,
    /// Active concepts outside the IS-A hierarchy (no path to the root): in a real release only the root,
    /// in an extracted subset also module concepts whose parents were left out. ECL results leave them out,
    /// as tx.fhir.org does (its `*` is the hierarchy).
    outside: RoaringBitmap,
    /// The active concepts.
    active: RoaringBitmap,
    /// Every concept (what an include without filters selects).
    all: RoaringBitmap,
    /// The display (preferred term) of every concept, as description indexes, per requested language list.
    displays: crate::cache::Lru<RoaringBitmap>,
    /// The words of every concept's display, per requested language list (see [`words`]).
    display_words: crate::cache::Lru<words::DisplayWords>,
    /// Concepts in expansion order, built on the first expansion that pages (a sort of every SCTID).
    text_order: OnceLock<paging::TextOrder>,
    /// Evaluated includes of recent expansions, by their definition (filters, text filter, activeOnly,
    /// languages): ECL or a text search over the edition costs milliseconds, a page of a cached set
    /// microseconds. They depend on the immutable store alone, so they are never stale.
    matches: crate::cache::Lru<paging::Matched>,
    /// Implicit value sets (`?fhir_vs...`) made for recent requests, by URL: a validation against
    /// `?fhir_vs=isa/X` names the same few value sets over and over.
    implicit_value_sets: crate::cache::Lru<Value>,
}

/// Bounds of the cache of evaluated includes: a full-scale edition's largest sets are ~50 KB as bitmaps, a
/// text filter's a few KB; the entries cover a typeahead's working set of prefixes.
const MATCH_CACHE_ENTRIES: usize = 4096;
const MATCH_CACHE_BYTES: usize = 64 << 20;

impl std::fmt::Debug for SnomedProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnomedProvider")
            .field("version", &self.version)
            .finish()
    }
}

impl SnomedProvider {
    /// SNOMED CT from `store`. The version URI names the edition module (the module of the release that
    /// depends on the others, from the module dependency refset) and its date; an `unpublished` release (a
    /// test subset) is named with `xsct`, as the URI standard asks.
    pub fn new(store: Arc<Store>) -> Arc<SnomedProvider> {
        let (module, date) = edition_of(&store);
        let scheme = if store.manifest().unpublished {
            "xsct"
        } else {
            "sct"
        };
        let edition = format!("http://snomed.info/{scheme}/{module}");
        let version = format!("{edition}/version/{date}");
        let label = edition_label(&store, module);
        let shell = Arc::new(json!({
            "resourceType": "CodeSystem",
            "url": SCT,
            "version": version,
            "name": "SNOMED_CT",
            "title": "SNOMED CT",
            "status": "active",
            "content": "complete",
            "caseSensitive": false,
        }));
        let active = store.active_concepts();
        let outside = match store.index_of(consts::ROOT) {
            Some(root) => &active - store.descendants_bitmap(root, true),
            None => RoaringBitmap::new(),
        };
        let all = store.all_concepts();
        Arc::new_cyclic(|me| SnomedProvider {
            outside,
            active,
            all,
            displays: crate::cache::Lru::new(16, 64 << 20),
            display_words: crate::cache::Lru::new(4, 256 << 20),
            store,
            version,
            edition,
            label,
            shell: ProviderShell::new(shell, me),
            text_order: OnceLock::new(),
            matches: crate::cache::Lru::new(MATCH_CACHE_ENTRIES, MATCH_CACHE_BYTES),
            implicit_value_sets: crate::cache::Lru::new(1024, 4 << 20),
        })
    }

    /// The implicit value set `url` (`?fhir_vs`, `=isa/X`, `=refset`, `=refset/X`, `=ecl/...`), made anew.
    fn make_implicit_value_set(&self, url: &str) -> Option<Value> {
        let query = url.strip_prefix(SCT)?.strip_prefix("?fhir_vs")?;
        let include = |filter: Option<Value>| {
            let mut inc = json!({"system": SCT});
            if let Some(f) = filter {
                inc["filter"] = json!([f]);
            }
            inc
        };
        let (title, inc) = if query.is_empty() {
            (
                "SNOMED CT Reference Set (All of SNOMED CT)".to_string(),
                include(None),
            )
        } else {
            let query = query.strip_prefix('=')?;
            if let Some(code) = query.strip_prefix("isa/") {
                let idx = self.idx(code)?;
                let term = self.term(idx, &self.refsets_for(None)).unwrap_or_default();
                (
                    format!("SNOMED CT Concept {code} and descendants ({term})"),
                    include(Some(
                        json!({"property": "concept", "op": "is-a", "value": code}),
                    )),
                )
            } else if query == "refset" {
                (
                    "SNOMED CT Reference Sets".to_string(),
                    include(Some(
                        json!({"property": "concept", "op": "descendent-of", "value": REFSET_ROOT.to_string()}),
                    )),
                )
            } else if let Some(code) = query.strip_prefix("refset/") {
                // Only a reference set with members in this edition defines a value set.
                let idx = self.idx(code)?;
                let id = self.store.id_of(idx);
                if !self.store.refsets().any(|r| r == id) {
                    return None;
                }
                (
                    format!("SNOMED CT Reference Set {code}"),
                    include(Some(
                        json!({"property": "concept", "op": "in", "value": code}),
                    )),
                )
            } else if let Some(ecl) = query.strip_prefix("ecl/") {
                (
                    format!("SNOMED CT Concepts matching {ecl}"),
                    include(Some(
                        json!({"property": "constraint", "op": "=", "value": ecl}),
                    )),
                )
            } else {
                return None;
            }
        };
        let name = if query.is_empty() {
            "ALLSNOMEDCT"
        } else {
            "SNOMEDCTImplicitValueSet"
        };
        Some(json!({
            "resourceType": "ValueSet",
            "url": url,
            "name": name,
            "title": title,
            "status": "active",
            "date": crate::time::now_instant(),
            "compose": {"include": [inc]},
        }))
    }

    /// The store served.
    pub fn store(&self) -> &Store {
        &self.store
    }

    fn idx(&self, code: &str) -> Option<ConceptIdx> {
        let id: u64 = code.trim().parse().ok()?;
        self.store.index_of(SctId::new_unchecked(id))
    }

    /// Whether concept `idx` (None: not a concept, never inside) passes the `concept`/`code` filter `op`
    /// `value`; `None` for an operator tested otherwise or an unknown `value` (an error the general path
    /// reports).
    fn concept_filter(&self, idx: Option<ConceptIdx>, op: &str, value: &str) -> Option<bool> {
        if !matches!(op, "is-a" | "descendent-of" | "=") {
            return None;
        }
        let target = self.idx(value)?;
        let Some(c) = idx else {
            return Some(false);
        };
        Some(match op {
            "is-a" => self.store.is_a(c, target),
            "descendent-of" => c != target && self.store.is_a(c, target),
            _ => c == target,
        })
    }

    fn idx_of_id(&self, id: u64) -> Option<ConceptIdx> {
        self.store.index_of(SctId::new_unchecked(id))
    }

    fn refsets_for(&self, languages: Option<&str>) -> Vec<SctId> {
        self.store.language_refsets_for(languages)
    }

    fn term(&self, idx: ConceptIdx, refsets: &[SctId]) -> Option<String> {
        self.store.preferred_term(idx, refsets).map(str::to_string)
    }

    fn term_of_id(&self, id: u64, refsets: &[SctId]) -> Option<String> {
        self.idx_of_id(id).and_then(|i| self.term(i, refsets))
    }

    /// Why `e` is not a valid expression here, if it is not.
    fn expression_problem(&self, e: &Expression) -> Option<String> {
        let roots: Vec<ConceptIdx> = ATTRIBUTE_ROOTS
            .iter()
            .filter_map(|&r| self.idx_of_id(r))
            .collect();
        for (id, role) in e.concepts() {
            let Some(idx) = self.idx_of_id(id) else {
                return Some(format!("Concept {id} not found"));
            };
            if role == expression::Role::Attribute
                && !roots.is_empty()
                && !roots.iter().any(|&r| self.store.is_a(idx, r))
            {
                let list: Vec<String> = ATTRIBUTE_ROOTS.iter().map(u64::to_string).collect();
                return Some(format!(
                    "Concept {id} is not valid in this context (must be a descendent of one of {})",
                    list.join(",")
                ));
            }
        }
        None
    }

    /// `$subsumes` where either code is a post-coordinated expression: compared through their normal forms
    /// (see [`normal_form::subsumed_by`]); an invalid expression is an unknown code.
    fn subsumes_expressions(&self, a: &str, b: &str) -> Result<&'static str, String> {
        let expression = |code: &str| {
            if is_plain_id(code) {
                self.idx(code).map(|idx| Expression {
                    focus: vec![self.store.id_of(idx).get()],
                    groups: Vec::new(),
                })
            } else {
                self.valid_expression(code)
            }
        };
        let ea = expression(a).ok_or_else(|| a.to_string())?;
        let eb = expression(b).ok_or_else(|| b.to_string())?;
        let store = &*self.store;
        Ok(
            match (
                normal_form::subsumed_by(store, &ea, &eb),
                normal_form::subsumed_by(store, &eb, &ea),
            ) {
                (true, true) => "equivalent",
                (false, true) => "subsumes",
                (true, false) => "subsumed-by",
                (false, false) => "not-subsumed",
            },
        )
    }

    /// A valid expression (not a plain concept id) and its parse.
    fn valid_expression(&self, code: &str) -> Option<Expression> {
        if is_plain_id(code) {
            return None;
        }
        let e = expression::parse(code).ok()?;
        self.expression_problem(&e).is_none().then_some(e)
    }

    fn concept(&self, idx: ConceptIdx, refsets: &[SctId], detail: Detail) -> Concept {
        let c = self.store.concept(idx);
        let mut designations = Vec::new();
        let use_of = |kind: DescriptionKind, type_id: SctId| {
            let display = match kind {
                DescriptionKind::Fsn => "Fully specified name",
                DescriptionKind::Synonym => "Synonym",
                DescriptionKind::Definition => "Definition",
                _ => "Other",
            };
            json!({"system": SCT, "code": type_id.get().to_string(), "display": display})
        };
        match detail {
            Detail::Display => {}
            Detail::Expansion => {
                // What an expansion shows: the preferred FSN and the preferred term.
                let fsn = self.store.fully_specified_name(idx, refsets);
                let pt = self.store.preferred_synonym(idx, refsets);
                for d in [fsn, pt].into_iter().flatten() {
                    designations.push(Designation::new(
                        Some(d.language.to_string()),
                        Some(use_of(d.kind, d.type_id)),
                        d.term,
                    ));
                }
            }
            Detail::Validation => {
                for d in self.store.descriptions(idx) {
                    if d.kind == DescriptionKind::Definition {
                        continue;
                    }
                    designations.push(Designation {
                        inactive: !d.active,
                        ..Designation::new(
                            Some(d.language.to_string()),
                            Some(use_of(d.kind, d.type_id)),
                            d.term,
                        )
                    });
                }
            }
        }
        Concept {
            code: c.id.get().to_string(),
            display: self.term(idx, refsets),
            definition: None,
            designations,
            properties: vec![PropertyValue {
                code: "inactive".into(),
                key: "valueBoolean".into(),
                value: json!(!c.active),
            }],
            parents: Vec::new(),
            children: Vec::new(),
            extensions: Vec::new(),
        }
    }

    fn expression_concept(&self, code: &str, e: &Expression, refsets: &[SctId]) -> Concept {
        let display = e.render(&|id| self.term_of_id(id, refsets));
        Concept {
            code: code.to_string(),
            display: Some(display.clone()),
            definition: None,
            designations: vec![Designation::new(
                Some("en-US".into()),
                Some(preferred_for_language()),
                display,
            )],
            properties: vec![PropertyValue {
                code: "inactive".into(),
                key: "valueBoolean".into(),
                value: json!(false),
            }],
            parents: Vec::new(),
            children: Vec::new(),
            extensions: Vec::new(),
        }
    }

    /// The concept a filter names (`value`), or an error naming the filter.
    fn filter_concept(&self, value: &str, path: &str) -> Result<ConceptIdx, TxError> {
        self.idx(value).ok_or_else(|| {
            TxError::new(
                ErrorKind::NotFound,
                Issue::new(
                    Severity::Error,
                    "not-found",
                    Some("vs-invalid"),
                    format!("The SNOMED CT concept {value} is not known (filter {path})"),
                )
                .at(path.to_string()),
            )
        })
    }

    /// Parses and evaluates an ECL filter value: the selected concepts and the tree (to test expressions).
    fn ecl(&self, text: &str) -> Result<(RoaringBitmap, ecl::Expression), TxError> {
        let invalid = |detail: String| {
            TxError::new(
                ErrorKind::Invalid,
                Issue::new(
                    Severity::Error,
                    "invalid",
                    Some("vs-invalid"),
                    format!("Invalid ECL expression: '{text}': ({detail})"),
                )
                .with_id("INVALID_ECL"),
            )
        };
        let tree = ecl::parse(text).map_err(|e| invalid(e.to_string()))?;
        // The evaluator lets an unknown concept select nothing (a choice the specification leaves open); as a
        // value set definition, naming a concept the edition does not have is a mistake worth reporting.
        for id in concept_ids_in(text) {
            if self.idx_of_id(id).is_none() {
                return Err(invalid(format!("Unknown SNOMED Concept Id: {id}")));
            }
        }
        let mut set = snomed::ecl_eval::evaluate(&*self.store, &tree, &Limits::default())
            .map_err(|e| ecl_failure(e, &invalid))?;
        set -= &self.outside;
        Ok((set, tree))
    }

    /// The concepts an include's `filters` select (every concept, active or not, without filters), with what
    /// decides whether they admit a post-coordinated expression.
    fn filter_set(&self, filters: &[Value], path: &str) -> Result<Filtered, TxError> {
        let store = &*self.store;
        let mut set: Option<RoaringBitmap> = None;
        let mut expressions = true;
        let mut rules: Vec<ExprRule> = Vec::new();
        for (i, f) in filters.iter().enumerate() {
            let fpath = format!("{path}.filter[{i}]");
            let property = f["property"].as_str().unwrap_or_default();
            let op = f["op"].as_str().unwrap_or_default();
            let value = f["value"].as_str().unwrap_or_default();
            let bits = match (property, op) {
                ("expressions" | "expression", "=") if matches!(value, "true" | "false") => {
                    expressions = value == "true";
                    continue;
                }
                ("concept" | "code", "is-a") => {
                    let b = store.descendants_bitmap(self.filter_concept(value, &fpath)?, true);
                    rules.push(ExprRule::Below(b.clone()));
                    b
                }
                ("concept" | "code", "descendent-of") => {
                    let idx = self.filter_concept(value, &fpath)?;
                    rules.push(ExprRule::Below(store.descendants_bitmap(idx, true)));
                    store.descendants_bitmap(idx, false)
                }
                ("concept" | "code", "is-not-a") => {
                    let below = store.descendants_bitmap(self.filter_concept(value, &fpath)?, true);
                    let b = &self.all - &below;
                    rules.push(ExprRule::NotBelow(below));
                    b
                }
                ("concept" | "code", "generalizes") => {
                    rules.push(ExprRule::Never);
                    store.ancestors_bitmap(self.filter_concept(value, &fpath)?, true)
                }
                ("concept" | "code", "child-of") | ("parent", "=") => {
                    rules.push(ExprRule::Never);
                    let idx = self.filter_concept(value, &fpath)?;
                    store.children(idx).iter().map(|c| c.0).collect()
                }
                ("child", "=") => {
                    rules.push(ExprRule::Never);
                    let idx = self.filter_concept(value, &fpath)?;
                    store.parents(idx).iter().map(|c| c.0).collect()
                }
                ("concept" | "code", "in") => {
                    rules.push(ExprRule::Never);
                    let mut b = RoaringBitmap::new();
                    for r in value.split(',').map(str::trim) {
                        if let Some(idx) = self.idx(r) {
                            b |= store.refset_concepts(store.id_of(idx));
                        }
                    }
                    b
                }
                ("concept" | "code", "=") => {
                    rules.push(ExprRule::Never);
                    let idx = self.filter_concept(value, &fpath)?;
                    std::iter::once(idx.0).collect()
                }
                ("constraint" | "expression", "=") => {
                    let (b, tree) = self.ecl(value)?;
                    rules.push(ExprRule::Ecl(tree));
                    b
                }
                ("inactive", "=") => {
                    rules.push(ExprRule::Never);
                    if value == "true" {
                        &self.all - &self.active
                    } else {
                        self.active.clone()
                    }
                }
                ("moduleId", "=") => {
                    rules.push(ExprRule::Never);
                    let module: u64 = value.parse().unwrap_or(0);
                    (0..store.concept_count())
                        .filter(|&i| store.concept(ConceptIdx(i)).module.get() == module)
                        .collect()
                }
                _ => {
                    return Err(TxError::new(
                        ErrorKind::NotSupported,
                        Issue::new(
                            Severity::Error,
                            "not-supported",
                            Some("vs-invalid"),
                            format!(
                                "The filter {property} {op} {value} is not supported for SNOMED CT"
                            ),
                        )
                        .at(fpath),
                    ));
                }
            };
            set = Some(match set {
                None => bits,
                Some(s) => s & bits,
            });
        }
        let unclosed = if filters.is_empty() {
            Some(Some(GRAMMAR.to_string()))
        } else if expressions {
            Some(None)
        } else {
            None
        };
        // Without filters: every concept of the edition, active or not.
        let set = set.unwrap_or_else(|| self.all.clone());
        Ok(Filtered {
            set,
            rules,
            expressions,
            unclosed,
        })
    }

    /// The descriptions that are concepts' displays in `languages` (what `compile` shows), worked out once
    /// per language list (a preferred-term lookup per concept, ~0.1-0.2 s at full scale).
    fn displays(&self, languages: Option<&str>) -> Arc<RoaringBitmap> {
        let refsets = self.refsets_for(languages);
        let key = format!("{refsets:?}");
        if let Some(b) = self.displays.get(&key) {
            return b;
        }
        let mut ids: Vec<u32> = (0..self.store.concept_count())
            .filter_map(|i| self.store.preferred_synonym(ConceptIdx(i), &refsets))
            .map(|d| d.idx.0)
            .collect();
        ids.sort_unstable();
        let b = Arc::new(RoaringBitmap::from_sorted_iter(ids).unwrap_or_default());
        self.displays.put(key, b.clone(), b.serialized_size());
        b
    }

    /// The words of the displays in `languages`, worked out once per language list (~0.5 s at full scale).
    fn display_words(&self, languages: Option<&str>) -> Arc<words::DisplayWords> {
        let refsets = self.refsets_for(languages);
        let key = format!("{refsets:?}");
        if let Some(w) = self.display_words.get(&key) {
            return w;
        }
        let w = Arc::new(words::DisplayWords::build(&self.store, &refsets));
        self.display_words.put(key, w.clone(), w.size());
        w
    }

    fn text_order(&self) -> &paging::TextOrder {
        self.text_order
            .get_or_init(|| paging::TextOrder::new(&self.store))
    }

    /// An include's concepts for an expansion: the filters' set, narrowed by the text filter (the search
    /// index, then the generic rule on the display in the requested languages) and by `activeOnly`.
    fn match_include(
        &self,
        filters: &[Value],
        req: &PageRequest<'_>,
        path: &str,
    ) -> Result<paging::Matched, TxError> {
        let Filtered { set, unclosed, .. } = self.filter_set(filters, path)?;
        let store = &*self.store;
        let (mut set, selected) = match req.text {
            None => {
                let n = set.len() as usize;
                (set, n)
            }
            Some(text) => 'text: {
                let lower = text.to_lowercase();
                // One word: the display words answer the rule exactly (the code part cannot match: the
                // filter has a letter, codes are digits).
                // (Checked first so that a phrase does not build the words it cannot use.)
                if let Some(mut kept) = words::is_word(&lower)
                    .then(|| self.display_words(req.languages).matching(&lower))
                    .flatten()
                {
                    if !kept.is_empty() && set.len() != u64::from(store.concept_count()) {
                        kept &= &set;
                    }
                    if req.active_only {
                        kept &= &self.active;
                    }
                    break 'text (kept, set.len() as usize);
                }
                // A concept passes when its display passes the generic rule. The index finds every
                // description that rule could keep, so searching only the displays (the preferred terms in
                // the requested languages) and testing each found term decides exactly, without working
                // out the display of every concept some other description of which matched.
                let displays = self.displays(req.languages);
                let mut search = snomed::SearchRequest::new(text);
                search.max_hits = usize::MAX;
                search.inactive_concepts = true;
                search.descriptions = Some(&displays);
                // Every concept selected: no constraint to test per hit.
                let everything = set.len() == u64::from(store.concept_count());
                if !everything {
                    search.constraint = Some(&set);
                }
                let hits = store.search(&search).map_err(|e| match e {
                    snomed::SearchError::TooCostly(why) => TxError::new(
                        ErrorKind::TooCostly,
                        Issue::new(Severity::Error, "too-costly", None, why),
                    ),
                    e => TxError::invalid(format!("The filter '{text}' cannot be searched: {e}")),
                })?;
                let mut ids: Vec<u32> = hits
                    .iter()
                    .filter(|h| !req.active_only || self.active.contains(h.concept.0))
                    // The code part of the rule cannot match: the filter has a letter, codes are digits.
                    .filter(|h| {
                        crate::expansion::text_matches(
                            "",
                            store.description_term(h.description),
                            &lower,
                        )
                    })
                    .map(|h| h.concept.0)
                    .collect();
                // Sorted first: a bitmap built in order appends instead of searching its containers.
                ids.sort_unstable();
                ids.dedup();
                let kept = RoaringBitmap::from_sorted_iter(ids).unwrap_or_default();
                (kept, set.len() as usize)
            }
        };
        if req.active_only && req.text.is_none() {
            set &= &self.active;
        }
        Ok(paging::Matched::new(set, selected, unclosed))
    }
}

/// What an include's filters select (see [`SnomedProvider::filter_set`]).
struct Filtered {
    set: RoaringBitmap,
    rules: Vec<ExprRule>,
    expressions: bool,
    unclosed: Option<Option<String>>,
}

/// An evaluation error as the operation's error: limits are too costly, the rest invalid.
fn ecl_failure(e: EclError, invalid: &dyn Fn(String) -> TxError) -> TxError {
    match e {
        EclError::TooLarge { .. } | EclError::Timeout(_) => TxError::new(
            ErrorKind::TooCostly,
            Issue::new(Severity::Error, "too-costly", None, e.to_string()),
        ),
        other => invalid(other.to_string()),
    }
}

/// How a filter admits a post-coordinated expression.
enum ExprRule {
    /// When a focus concept is in the set (the descendants-or-self of the filter's concept).
    Below(RoaringBitmap),
    /// When no focus concept is in the set.
    NotBelow(RoaringBitmap),
    /// When the expression satisfies the ECL constraint.
    Ecl(ecl::Expression),
    /// Never: the filter selects concepts by what only listed concepts have (membership, status, module).
    Never,
}

fn preferred_for_language() -> Value {
    json!({
        "system": "http://terminology.hl7.org/CodeSystem/hl7TermMaintInfra",
        "code": "preferredForLanguage",
        "display": "Preferred For Language"
    })
}

fn is_plain_id(code: &str) -> bool {
    !code.is_empty() && code.bytes().all(|b| b.is_ascii_digit())
}

/// Concept ids written in an ECL text: runs of 6 to 18 digits outside terms (`|...|`), strings and concrete
/// values (`#5`).
fn concept_ids_in(text: &str) -> Vec<u64> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'|' | b'"' => {
                let close = b[i];
                i += 1;
                while i < b.len() && b[i] != close {
                    i += 1;
                }
                i += 1;
            }
            b'#' => {
                i += 1;
                while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.' || b[i] == b'-') {
                    i += 1;
                }
            }
            c if c.is_ascii_digit() => {
                let start = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                let alnum_before = start > 0 && b[start - 1].is_ascii_alphanumeric();
                let alnum_after = i < b.len() && b[i].is_ascii_alphabetic();
                if (6..=18).contains(&(i - start))
                    && !alnum_before
                    && !alnum_after
                    && let Ok(id) = text[start..i].parse()
                {
                    out.push(id);
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// The edition module (the module that depends on others and on which none depends, from the module
/// dependency refset; else the module with the most concepts) and the release date (`YYYYMMDD`).
fn edition_of(store: &Store) -> (u64, u32) {
    let rows: Vec<(u64, u64, u32)> = store
        .refset_members(consts::MODULE_DEPENDENCY)
        .filter(|m| m.active)
        .map(|m| (m.module.get(), m.referenced_component, m.effective_time))
        .collect();
    let top = rows
        .iter()
        .map(|r| r.0)
        .filter(|&m| !rows.iter().any(|r| r.1 == m && r.0 != m))
        .max_by_key(|&m| {
            rows.iter()
                .filter(|r| r.0 == m)
                .map(|r| r.2)
                .max()
                .unwrap_or(0)
        });
    let latest_concept = || {
        (0..store.concept_count())
            .map(|i| store.concept(ConceptIdx(i)).effective_time)
            .max()
            .unwrap_or(0)
    };
    match top {
        Some(m) => {
            let date = rows
                .iter()
                .filter(|r| r.0 == m)
                .map(|r| r.2)
                .max()
                .unwrap_or_else(latest_concept);
            (m, date)
        }
        None => {
            let module = store
                .manifest()
                .modules
                .iter()
                .max_by_key(|(_, n)| **n)
                .and_then(|(m, _)| m.parse().ok())
                .unwrap_or(consts::CORE_MODULE.get());
            (module, latest_concept())
        }
    }
}

/// How people name the edition of `module`: the known editions by module, and for other modules built on
/// the International Edition (test subsets, unpublished releases) that edition's name.
fn edition_label(store: &Store, module: u64) -> Option<&'static str> {
    let known = match module {
        900000000000207008 => Some("International Edition"),
        731000124108 => Some("US Edition"),
        83821000000107 | 999000041000000102 => Some("UK Edition"),
        32506021000036107 => Some("Australian Edition"),
        20611000087101 => Some("Canadian Edition"),
        554471000005108 => Some("Danish Edition"),
        11000146104 => Some("Netherlands Edition"),
        45991000052106 => Some("Swedish Edition"),
        449081005 => Some("Spanish Edition"),
        _ => None,
    };
    known.or_else(|| {
        store
            .refset_members(consts::MODULE_DEPENDENCY)
            .any(|m| {
                m.active
                    && m.module.get() == module
                    && m.referenced_component == consts::CORE_MODULE.get()
            })
            .then_some("International Edition")
    })
}

impl CodeSystemProvider for SnomedProvider {
    fn system(&self) -> &str {
        SCT
    }

    fn version(&self) -> &str {
        &self.version
    }

    /// The version URI, the edition URI without a date, or the edition's module id alone.
    fn accepts_version(&self, version: &str) -> bool {
        version == self.version
            || version == self.edition
            || self.edition.rsplit('/').next() == Some(version)
    }

    fn version_label(&self) -> Option<&str> {
        self.label
    }

    fn code_system(&self) -> Arc<CodeSystem> {
        self.shell.empty()
    }

    fn compile(&self, codes: &[&str], languages: Option<&str>, detail: Detail) -> CodeSystem {
        let refsets = self.refsets_for(languages);
        let mut concepts = Vec::with_capacity(codes.len());
        for &code in codes {
            if is_plain_id(code) {
                if let Some(idx) = self.idx(code) {
                    concepts.push(self.concept(idx, &refsets, detail));
                }
            } else if let Some(e) = self.valid_expression(code) {
                concepts.push(self.expression_concept(code, &e, &refsets));
            }
        }
        self.shell.with(concepts)
    }

    fn plain_display(&self, code: &str) -> Option<Option<String>> {
        // A plain id of an active concept, spelled as the store writes it (no leading zeros): nothing to say
        // but its display, which is what compiling it would give (the default language refsets).
        if !is_plain_id(code) {
            return None;
        }
        let idx = self.idx(code)?;
        let concept = self.store.concept(idx);
        if !concept.active || itoa::Buffer::new().format(concept.id.get()) != code {
            return None;
        }
        Some(self.store.default_term(idx).map(str::to_string))
    }

    fn expansion_display(&self, code: &str) -> Option<Option<String>> {
        // An active concept compiles to its display and `inactive = false`, which an expansion does not show.
        self.plain_display(code)
    }

    fn code_notes(&self, code: &str) -> Vec<Issue> {
        if is_plain_id(code) {
            return Vec::new();
        }
        let problem = match expression::parse(code) {
            Err(e) => Some(e),
            Ok(e) => self.expression_problem(&e),
        };
        let text = match problem {
            Some(p) => format!("Not a valid expression: {p}"),
            None => {
                return vec![Issue::new(
                    Severity::Information,
                    "informational",
                    Some("process-note"),
                    "The expression is grammatically correct and the concepts are valid, but the expression has not been checked against the SNOMED CT concept model (MRCM)",
                )];
            }
        };
        vec![Issue::new(
            Severity::Information,
            "code-invalid",
            Some("invalid-code"),
            text,
        )]
    }

    /// Every description whose tokens all start with the filter's tokens (the store's search index, all
    /// languages, active and inactive), then the selected codes of those concepts.
    fn text_candidates(
        &self,
        codes: &[String],
        filter: &str,
    ) -> Result<Option<Vec<String>>, TxError> {
        if !filter.chars().any(char::is_alphabetic) {
            return Ok(None);
        }
        let selected: RoaringBitmap = codes
            .iter()
            .filter_map(|c| self.idx(c))
            .map(|c| c.0)
            .collect();
        let mut req = snomed::SearchRequest::new(filter);
        req.max_hits = usize::MAX;
        req.inactive_concepts = true;
        req.constraint = Some(&selected);
        let hits = match self.store.search(&req) {
            Ok(hits) => hits,
            Err(snomed::SearchError::TooCostly(why)) => {
                return Err(TxError::new(
                    ErrorKind::TooCostly,
                    Issue::new(Severity::Error, "too-costly", None, why),
                ));
            }
            // The generic filter over the displays still answers.
            Err(_) => return Ok(None),
        };
        let matched: RoaringBitmap = hits.iter().map(|h| h.concept.0).collect();
        Ok(Some(
            codes
                .iter()
                .filter(|c| self.idx(c).is_some_and(|i| matched.contains(i.0)))
                .cloned()
                .collect(),
        ))
    }

    /// Filters evaluate to a bitmap, a text filter goes through the search index and then the generic rule on
    /// each candidate's display; the page comes from the bitmap in code-as-text order, and only its concepts
    /// are compiled by the caller. Evaluated includes are cached.
    fn expand_page(
        &self,
        filters: &[Value],
        req: &PageRequest<'_>,
        path: &str,
    ) -> Option<Result<Page, TxError>> {
        // A filter without letters matches codes by prefix: the generic path handles it.
        if req
            .text
            .is_some_and(|t| !t.chars().any(char::is_alphabetic))
        {
            return None;
        }
        let key =
            serde_json::to_string(&json!([filters, req.text, req.active_only, req.languages]))
                .unwrap_or_default();
        let matched = match self.matches.get(&key) {
            Some(m) => m,
            None => {
                let m = match self.match_include(filters, req, path) {
                    Ok(m) => Arc::new(m),
                    Err(e) => return Some(Err(e)),
                };
                self.matches.put(key, m.clone(), m.cache_size());
                m
            }
        };
        let codes = matched
            .page(self.text_order(), req.offset, req.count)
            .into_iter()
            .map(|i| self.store.id_of(i).get().to_string())
            .collect();
        Some(Ok(Page {
            selected: matched.selected,
            total: matched.set.len() as usize,
            codes,
            unclosed: matched.unclosed.clone(),
        }))
    }

    fn select(
        &self,
        filters: &[Value],
        only: Option<&[String]>,
        path: &str,
    ) -> Result<Selection, TxError> {
        let store = &*self.store;
        // A validation asks about a few plain codes: a subsumption test per code answers `is-a` without
        // building the descendants bitmap (122,081 concepts under |Clinical finding|, milliseconds a request).
        if let Some(codes) = only
            && let Some(found) = codes
                .iter()
                .map(|c| self.contains(filters, c).map(|inside| (c, inside)))
                .collect::<Option<Vec<_>>>()
        {
            let unclosed = if filters.is_empty() {
                Some(Some(GRAMMAR.to_string()))
            } else {
                Some(None)
            };
            let codes = found
                .into_iter()
                .filter(|(_, inside)| *inside)
                .map(|(c, _)| c.clone())
                .collect();
            return Ok(Selection { codes, unclosed });
        }
        let Filtered {
            set,
            rules,
            expressions,
            unclosed,
        } = self.filter_set(filters, path)?;
        let matcher = membership::Matcher {
            store,
            limits: Limits::default(),
        };
        let focus_in = |e: &Expression, b: &RoaringBitmap| {
            e.focus
                .iter()
                .any(|&f| self.idx_of_id(f).is_some_and(|i| b.contains(i.0)))
        };
        let codes = match only {
            Some(codes) => {
                let mut out = Vec::new();
                for code in codes {
                    let inside = if is_plain_id(code) {
                        self.idx(code).is_some_and(|i| set.contains(i.0))
                    } else if let (true, Some(e)) = (expressions, self.valid_expression(code)) {
                        let mut ok = true;
                        for r in &rules {
                            ok = match r {
                                ExprRule::Below(b) => focus_in(&e, b),
                                ExprRule::NotBelow(b) => !focus_in(&e, b),
                                ExprRule::Ecl(tree) => {
                                    matcher.matches(tree, &e).map_err(|err| {
                                        ecl_failure(err, &|d| {
                                            TxError::invalid(format!(
                                                "Invalid ECL expression: ({d})"
                                            ))
                                        })
                                    })?
                                }
                                ExprRule::Never => false,
                            };
                            if !ok {
                                break;
                            }
                        }
                        ok
                    } else {
                        false
                    };
                    if inside {
                        out.push(code.clone());
                    }
                }
                out
            }
            // As tx.fhir.org lists SNOMED CT expansions: by code, as text.
            None => self
                .text_order()
                .page(&set, 0, set.len() as usize)
                .into_iter()
                .map(|i| store.id_of(i).get().to_string())
                .collect(),
        };
        Ok(Selection { codes, unclosed })
    }

    /// Plain concept ids against `concept`/`code` filters `is-a`, `descendent-of` and `=` (the implicit
    /// `isa/X` value sets), and against no filter (all of SNOMED CT, active or not); anything else (expressions,
    /// other filters, an unknown filter concept, which is an error) is left to [`Self::select`].
    fn contains(&self, filters: &[Value], code: &str) -> Option<bool> {
        if !is_plain_id(code) {
            return None;
        }
        let idx = self.idx(code);
        let mut inside = idx.is_some();
        for f in filters {
            let property = f["property"].as_str()?;
            if !matches!(property, "concept" | "code") {
                return None;
            }
            inside &= self.concept_filter(idx, f["op"].as_str()?, f["value"].as_str()?)?;
        }
        Some(inside)
    }

    fn implicit_contains(&self, url: &str, code: &str) -> Option<bool> {
        // The shapes of `make_implicit_value_set` whose include `contains` answers: all of SNOMED CT (no
        // filter) and `isa/X` (one `concept is-a X` filter).
        let query = url.strip_prefix(SCT)?.strip_prefix("?fhir_vs")?;
        if !is_plain_id(code) {
            return None;
        }
        let idx = self.idx(code);
        match query.strip_prefix("=isa/") {
            None if query.is_empty() => Some(idx.is_some()),
            None => None,
            Some(target) => self.concept_filter(idx, "is-a", target),
        }
    }

    fn subsumes(&self, a: &str, b: &str) -> Result<&'static str, String> {
        if !is_plain_id(a) || !is_plain_id(b) {
            return self.subsumes_expressions(a, b);
        }
        let ia = self.idx(a).ok_or_else(|| a.to_string())?;
        let ib = self.idx(b).ok_or_else(|| b.to_string())?;
        Ok(if ia == ib {
            "equivalent"
        } else if self.store.is_a(ib, ia) {
            "subsumes"
        } else if self.store.is_a(ia, ib) {
            "subsumed-by"
        } else {
            "not-subsumed"
        })
    }

    fn lookup(&self, code: &str, languages: Option<&str>, properties: &[String]) -> Option<Value> {
        let refsets = self.refsets_for(languages);
        let store = &*self.store;
        let (focus, designations, display, extra): (
            ConceptIdx,
            Vec<Value>,
            String,
            Vec<(u64, u64)>,
        ) = if is_plain_id(code) {
            let idx = self.idx(code)?;
            let mut descs: Vec<_> = store
                .descriptions(idx)
                .filter(|d| d.active && d.kind != DescriptionKind::Definition)
                .collect();
            descs.sort_by_key(|d| d.id.get());
            let designations = descs
                    .iter()
                    .map(|d| {
                        let display = if d.kind == DescriptionKind::Fsn {
                            "Fully specified name"
                        } else {
                            "Synonym"
                        };
                        json!({"name": "designation", "part": [
                            {"name": "language", "valueCode": d.language},
                            {"name": "use", "valueCoding": {"system": SCT, "code": d.type_id.get().to_string(), "display": display}},
                            {"name": "value", "valueString": d.term},
                        ]})
                    })
                    .collect();
            (
                idx,
                designations,
                self.term(idx, &refsets).unwrap_or_default(),
                Vec::new(),
            )
        } else {
            let e = self.valid_expression(code)?;
            let idx = self.idx_of_id(*e.focus.first()?)?;
            let display = e.render(&|id| self.term_of_id(id, &refsets));
            let designation = json!({"name": "designation", "part": [
                {"name": "language", "valueCode": "en-US"},
                {"name": "use", "valueCoding": preferred_for_language()},
                {"name": "value", "valueString": display},
            ]});
            let extra = e
                .groups
                .iter()
                .flat_map(|g| g.attributes.iter())
                .filter_map(|(n, v)| match v {
                    expression::AttrValue::Concept(c) => Some((*n, *c)),
                    _ => None,
                })
                .collect();
            (idx, vec![designation], display, extra)
        };
        let want = |p: &str| properties.is_empty() || properties.iter().any(|w| w == p || w == "*");
        let concept = store.concept(focus);
        // (code, value code) for sorting, and the part list.
        let mut props: Vec<(String, String, Value)> = Vec::new();
        let mut coded = |code: String, code_display: Option<String>, value: u64| {
            let mut parts = vec![json!({"name": "code", "valueCode": code})];
            if let Some(d) = code_display {
                parts.push(json!({"name": "code-display", "valueString": d}));
            }
            if let Some(d) = self.term_of_id(value, &refsets) {
                parts.push(json!({"name": "description", "valueString": d}));
            }
            parts.push(json!({"name": "value", "valueCode": value.to_string()}));
            props.push((
                code,
                value.to_string(),
                json!({"name": "property", "part": parts}),
            ));
        };
        let mut attributes: Vec<(u64, u64)> = store
            .relationships(focus)
            .filter(|r| r.is_inferred_active() && r.type_id != consts::IS_A)
            .map(|r| (r.type_id.get(), r.destination_id.get()))
            .chain(extra)
            .collect();
        attributes.sort_unstable();
        attributes.dedup();
        for (t, v) in attributes {
            if want(&t.to_string()) {
                coded(t.to_string(), self.term_of_id(t, &refsets), v);
            }
        }
        if want("parent") {
            for p in store.parents(focus) {
                coded("parent".into(), None, store.id_of(*p).get());
            }
        }
        if want("child") {
            for c in store.children(focus) {
                coded("child".into(), None, store.id_of(*c).get());
            }
        }
        if want("module") {
            coded("module".into(), None, concept.module.get());
        }
        if want("effectiveTime") {
            props.push((
                "effectiveTime".into(),
                String::new(),
                json!({"name": "property", "part": [
                    {"name": "code", "valueCode": "effectiveTime"},
                    {"name": "value", "valueDateTime": snomed::format_date(concept.effective_time)},
                ]}),
            ));
        }
        if want("inactive") {
            props.push((
                "inactive".into(),
                String::new(),
                json!({"name": "property", "part": [
                    {"name": "code", "valueCode": "inactive"},
                    {"name": "value", "valueBoolean": !concept.active},
                ]}),
            ));
        }
        // Not among the default properties (tx.fhir.org does not show them unasked).
        let asked = |p: &str| properties.iter().any(|w| w == p || w == "*");
        if asked("sufficientlyDefined") {
            props.push((
                "sufficientlyDefined".into(),
                String::new(),
                json!({"name": "property", "part": [
                    {"name": "code", "valueCode": "sufficientlyDefined"},
                    {"name": "value", "valueBoolean": concept.definition_status == consts::DEFINED},
                ]}),
            ));
        }
        // A concept's only: an expression has no stored definition.
        if is_plain_id(code) && (asked("normalForm") || asked("normalFormTerse")) {
            let form = normal_form::normal_form(store, focus);
            for (name, text) in [
                (
                    "normalForm",
                    asked("normalForm").then(|| form.render(&|id| self.term_of_id(id, &refsets))),
                ),
                (
                    "normalFormTerse",
                    asked("normalFormTerse").then(|| form.render(&|_| None)),
                ),
            ] {
                if let Some(text) = text {
                    props.push((
                        name.into(),
                        String::new(),
                        json!({"name": "property", "part": [
                            {"name": "code", "valueCode": name},
                            {"name": "value", "valueString": text},
                        ]}),
                    ));
                }
            }
        }
        props.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        let mut out = vec![
            json!({"name": "abstract", "valueBoolean": false}),
            json!({"name": "code", "valueCode": code}),
        ];
        out.extend(designations);
        out.push(json!({"name": "display", "valueString": display}));
        out.push(json!({"name": "name", "valueString": format!("{SCT}|{}", self.version)}));
        out.extend(props.into_iter().map(|(_, _, p)| p));
        out.push(json!({"name": "system", "valueUri": SCT}));
        out.push(json!({"name": "version", "valueString": self.version}));
        Some(json!({"resourceType": "Parameters", "parameter": out}))
    }

    /// [`Self::lookup`] of a plain concept id with every default property, written as the text
    /// `serde_json` makes of that `Value` (the parts in the same order) without building it: the lookup answer
    /// is the largest of the single-code operations, dozens of objects. Expressions take the `Value` path.
    fn lookup_text(&self, code: &str) -> Option<Vec<u8>> {
        if !is_plain_id(code) {
            return self
                .lookup(code, None, &[])
                .and_then(|v| serde_json::to_vec(&v).ok());
        }
        self.lookup_answer(code)
    }

    fn implicit_value_set(&self, url: &str) -> Option<Arc<Value>> {
        if let Some(vs) = self.implicit_value_sets.get(url) {
            return Some(vs);
        }
        let vs = Arc::new(self.make_implicit_value_set(url)?);
        // A URL with ECL is as long as the client makes it; the definition holds it about twice.
        self.implicit_value_sets
            .put(url.to_string(), vs.clone(), 512 + 2 * url.len());
        Some(vs)
    }

    fn implicit_map(&self, url: &str, code: &str, reverse: bool) -> Option<Vec<MapTarget>> {
        let query = url.strip_prefix(SCT)?.strip_prefix("?fhir_cm=")?;
        let refset = SctId::new_unchecked(query.parse().ok()?);
        let store = &*self.store;
        let fields = store.refset_fields(refset)?;
        let refsets = self.refsets_for(None);
        if refset == consts::ICD10_COMPLEX_MAP || fields.names.contains(&"mapTarget") {
            // The ICD-10 extended map: mapTarget per member, forward only (targets are not concepts).
            let target = fields.names.iter().position(|n| *n == "mapTarget")?;
            if reverse {
                return Some(Vec::new());
            }
            let id: u64 = code.parse().ok()?;
            let mut out: Vec<MapTarget> = Vec::new();
            for m in store.refset_members_for(refset, id).filter(|m| m.active) {
                if let Some(t) = m.field(target).filter(|t| !t.is_empty()) {
                    let t = MapTarget {
                        equivalence: "inexact",
                        system: "http://hl7.org/fhir/sid/icd-10".into(),
                        code: t.to_string(),
                        display: None,
                    };
                    if !out.contains(&t) {
                        out.push(t);
                    }
                }
            }
            return Some(out);
        }
        // Historical associations: targetComponentId is the concept that replaces the inactive one.
        let target = fields
            .names
            .iter()
            .position(|n| *n == "targetComponentId")?;
        let equivalence = match refset {
            consts::SAME_AS => "equal",
            consts::REPLACED_BY => "equivalent",
            consts::POSSIBLY_EQUIVALENT_TO => "inexact",
            consts::WAS_A => "wider",
            _ => "relatedto",
        };
        let mut out = Vec::new();
        if reverse {
            for m in store.refset_members(refset).filter(|m| m.active) {
                if m.field(target) == Some(code) {
                    let id = m.referenced_component;
                    out.push(MapTarget {
                        equivalence,
                        system: SCT.into(),
                        code: id.to_string(),
                        display: self.term_of_id(id, &refsets),
                    });
                }
            }
        } else {
            let id: u64 = code.parse().ok()?;
            for m in store.refset_members_for(refset, id).filter(|m| m.active) {
                if let Some(t) = m.field(target).and_then(|t| t.parse::<u64>().ok()) {
                    out.push(MapTarget {
                        equivalence,
                        system: SCT.into(),
                        code: t.to_string(),
                        display: self.term_of_id(t, &refsets),
                    });
                }
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecl_concept_ids_skip_terms_values_and_cardinalities() {
        assert_eq!(
            concept_ids_in("<< 64572001 |Disease 123456789|: [1..3] 363698007 = #1234567"),
            vec![64572001, 363698007]
        );
    }

    #[test]
    fn expressions_render_with_terms() {
        let e = expression::parse("367430006 |x| :{272741003=24028007}").unwrap();
        assert_eq!(e.focus, vec![367430006]);
        assert_eq!(
            e.render(&|id| Some(format!("t{id}"))),
            "367430006|t367430006|:{272741003|t272741003|=24028007|t24028007|}"
        );
        let e = expression::parse("11204002 : 272741003 = 24028007").unwrap();
        assert_eq!(e.render(&|_| None), "11204002:272741003=24028007");
        assert!(expression::parse("367430006:").is_err());
        assert!(expression::parse("12 : 3 = 4").is_err());
    }
}
