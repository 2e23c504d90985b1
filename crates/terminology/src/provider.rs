//! The seam for code systems that are not FHIR CodeSystem resources: a [`CodeSystemProvider`] answers from its
//! own store (SNOMED CT from the memory-mapped `snomed` store) and hands the operations only the concepts a
//! request touches, compiled as a small [`CodeSystem`], instead of the whole terminology as FHIR JSON.

use crate::codesystem::CodeSystem;
use crate::error::{Issue, TxError};
use serde_json::Value;
use std::sync::Arc;

/// How much of each concept to compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Detail {
    /// Display and the preferred designations (what an expansion shows).
    Expansion,
    /// Every description, active and inactive (what display validation needs).
    Validation,
    /// The display and status alone, no designations (what a validation with no display to check and no
    /// language asked for reads).
    Display,
}

/// The codes an include's filters select.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// The codes, in expansion order.
    pub codes: Vec<String>,
    /// The value set is not closed: the code system has a grammar (SNOMED CT expressions) and the filters
    /// allow expressions, so more codes than the listed ones are members. The text says why, when it should.
    pub unclosed: Option<Option<String>>,
}

/// What an expansion asks of a provider's include when the provider pages it itself (see
/// [`CodeSystemProvider::expand_page`]).
#[derive(Debug, Clone, Copy)]
pub struct PageRequest<'a> {
    /// The expansion's text `filter`, as given.
    pub text: Option<&'a str>,
    /// Leave inactive concepts out (`activeOnly`, or the value set's `compose.inactive = false`).
    pub active_only: bool,
    /// The display languages (an Accept-Language list), as [`CodeSystemProvider::compile`] takes them.
    pub languages: Option<&'a str>,
    /// Codes skipped before the page (`offset`).
    pub offset: usize,
    /// Codes in the page (`count`).
    pub count: usize,
}

/// One page of an include's expansion.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    /// Codes the include's filters select, before the text filter and `activeOnly`.
    pub selected: usize,
    /// Codes in the whole expansion (`expansion.total`).
    pub total: usize,
    /// The page's codes, in expansion order.
    pub codes: Vec<String>,
    /// As [`Selection::unclosed`].
    pub unclosed: Option<Option<String>>,
}

/// A code system served from a store of its own.
pub trait CodeSystemProvider: Send + Sync + std::fmt::Debug {
    /// The canonical URL (`http://snomed.info/sct`).
    fn system(&self) -> &str;

    /// The version served (for SNOMED CT the edition version URI).
    fn version(&self) -> &str;

    /// Whether a requested `version` names what this provider serves (an edition URI without a date, say).
    fn accepts_version(&self, version: &str) -> bool {
        version == self.version()
    }

    /// The code system's metadata, without concepts; operations compile concepts with [`Self::compile`].
    fn code_system(&self) -> Arc<CodeSystem>;

    /// The concepts `codes` (unknown codes left out), with displays in the preferred `languages`
    /// (an Accept-Language list) when the provider has them.
    fn compile(&self, codes: &[&str], languages: Option<&str>, detail: Detail) -> CodeSystem;

    /// The codes an include with these `filters` selects. When `only` is given, only those codes are of
    /// interest (a validation), and the result may leave the others out. `path` locates the include in
    /// messages.
    fn select(
        &self,
        filters: &[Value],
        only: Option<&[String]>,
        path: &str,
    ) -> Result<Selection, TxError>;

    /// Whether inactive concepts are reported as tx.fhir.org reports SNOMED CT's: validated without a status
    /// note and shown with their status in expansions unasked. A code system whose inactive concepts are
    /// reported like any FHIR CodeSystem's (LOINC's deprecated terms) answers false.
    fn quiet_inactive(&self) -> bool {
        true
    }

    /// Whether `code`'s display is its only right name. A code without a fixed name (an ISO 3166 user-assigned
    /// code element) takes any display, with only a hint to define one in a supplement.
    fn display_is_fixed(&self, code: &str) -> bool {
        let _ = code;
        true
    }

    /// Whether `code` is among the codes an include with these `filters` selects, when the provider can tell
    /// without evaluating the selection (for SNOMED CT `is-a` is one subsumption test); `None` when it cannot,
    /// and then [`Self::select`] decides.
    fn contains(&self, filters: &[Value], code: &str) -> Option<bool> {
        let _ = (filters, code);
        None
    }

    /// Whether an include without concepts expands to a fixed list of examples standing for an infinite
    /// grammar (UCUM's common units): such an expansion is unclosed and returned whole, never refused as too
    /// costly.
    fn expands_to_examples(&self) -> bool {
        false
    }

    /// Why `code`, a valid code, is not among those an include with these `filters` selects, when
    /// tx.fhir.org says so in `$validate-code`'s message (UCUM: `Code mL has canonical form m3, not g as
    /// required`); None when there is nothing to say.
    fn filter_note(&self, filters: &[Value], code: &str) -> Option<String> {
        let _ = (filters, code);
        None
    }

    /// The value set (`url|version`) those examples come from, named by an expansion's status warnings.
    fn examples_source(&self) -> Option<String> {
        None
    }

    /// A name for the version served, shown after it in messages (`International Edition`).
    fn version_label(&self) -> Option<&str> {
        None
    }

    /// Notes about `code` for `CodeSystem/$validate-code` beyond its validity (for SNOMED CT expressions:
    /// why it is not valid, or that it was not checked against the concept model).
    fn code_notes(&self, code: &str) -> Vec<Issue> {
        let _ = code;
        Vec::new()
    }

    /// `$subsumes` of `a` and `b`: `equivalent`, `subsumes`, `subsumed-by`, `not-subsumed`; the unknown code
    /// as the error.
    fn subsumes(&self, a: &str, b: &str) -> Result<&'static str, String>;

    /// The `$lookup` answer for `code` (a Parameters resource), None when the code is unknown.
    fn lookup(&self, code: &str, languages: Option<&str>, properties: &[String]) -> Option<Value>;

    /// The codes to compile for the generic `$lookup` answer of `code` (the code first, then the parents and
    /// children it names); `None` when the provider answers `$lookup` itself ([`Self::lookup`]). The generic
    /// answer takes the request's supplements into account.
    fn lookup_codes(&self, code: &str) -> Option<Vec<String>> {
        let _ = code;
        None
    }

    /// The JSON text of [`Self::lookup`] without languages or properties asked for (the common request), for
    /// the fast path; a provider may write it directly instead of building the `Value`. For a provider that
    /// asks for the generic answer ([`Self::lookup_codes`]), it is that answer without supplements. `None`
    /// when the code is unknown, or whenever the provider leaves the answer to the general path.
    fn lookup_text(&self, code: &str) -> Option<Vec<u8>> {
        self.lookup(code, None, &[])
            .and_then(|v| serde_json::to_vec(&v).ok())
    }

    /// For the fast path's `$validate-code`, told without compiling the concept: `Some(display)` (the
    /// concept's display, None when it has none) when `code` is known with exactly this spelling and
    /// validation has nothing to say about it (no code notes, no status that
    /// [`Self::quiet_inactive`] would leave unreported). `None` when the provider does not tell or there is
    /// something to say; the fast path then checks the compiled concept.
    fn plain_display(&self, code: &str) -> Option<Option<String>> {
        let _ = code;
        None
    }

    /// For the fast path's `$validate-code`: `true` when the code system has no concept of `code` in any case,
    /// told without compiling (what [`Self::compile`] of the code would show by having no concept). `false`
    /// when it has one or the provider does not tell.
    fn lacks(&self, code: &str) -> bool {
        let _ = code;
        false
    }

    /// For an expansion's page compiled at [`Detail::Display`] in the code system's own language: `Some(display)`
    /// when the concept `code` would carry nothing an expansion shows but its code and display (active, not
    /// abstract, no status, extensions or properties shown unasked), so that the page need not be compiled.
    /// `None` when the provider does not tell or there is more to show; the page is then compiled.
    fn expansion_display(&self, code: &str) -> Option<Option<String>> {
        let _ = code;
        None
    }

    /// The codes among `codes` (in their order) that the expansion's text `filter` could match, found through the
    /// provider's own text index: a superset of what the generic filter over displays keeps, so an expansion
    /// compiles only the candidates instead of every selected concept. `None` when the provider has no index
    /// or the filter is not text (codes are matched by prefix); an error when the filter is beyond what the index
    /// searches in one request (too many or too long words).
    fn text_candidates(
        &self,
        codes: &[String],
        filter: &str,
    ) -> Result<Option<Vec<String>>, TxError> {
        let _ = (codes, filter);
        Ok(None)
    }

    /// One page of the expansion of an include with these `filters`, with the total, computed without
    /// compiling the concepts outside the page. The codes are those [`Self::select`] lists, in the same order,
    /// less the inactive ones when asked, and less those the text filter rejects: a code is kept when the code
    /// or its display in `languages` passes the generic text rule (`expansion::text_matches`). `None` when the
    /// provider does not page (the expansion then compiles the whole selection).
    fn expand_page(
        &self,
        filters: &[Value],
        req: &PageRequest<'_>,
        path: &str,
    ) -> Option<Result<Page, TxError>> {
        let _ = (filters, req, path);
        None
    }

    /// An implicit value set (`?fhir_vs...`) of this code system, None when the URL names none or names an
    /// unknown concept or reference set.
    fn implicit_value_set(&self, url: &str) -> Option<Arc<Value>>;

    /// Whether `code` is in the implicit value set `url`, when that value set is one include of this whole
    /// system whose filters [`Self::contains`] tests directly (`?fhir_vs`, `?fhir_vs=isa/X`): the answer
    /// [`Self::contains`] gives over [`Self::implicit_value_set`]'s include, without making the definition.
    /// `None` for any other URL, an unknown concept included.
    fn implicit_contains(&self, url: &str, code: &str) -> Option<bool> {
        let _ = (url, code);
        None
    }

    /// An implicit concept map (`?fhir_cm=...`): the targets of `code` (with `reverse`, the sources that map
    /// to `code`); None when the URL names no map of this provider.
    fn implicit_map(&self, url: &str, code: &str, reverse: bool) -> Option<Vec<MapTarget>>;
}

/// One target (or, reversed, one source) of an implicit concept map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapTarget {
    /// The FHIR R4 `equivalence` (`equivalent`, `wider`, `inexact`, ...).
    pub equivalence: &'static str,
    /// The target system.
    pub system: String,
    /// The target code.
    pub code: String,
    /// Its display, if known.
    pub display: Option<String>,
}

/// What a provider keeps to make the small [`CodeSystem`]s it hands out: its resource without concepts, and
/// the provider itself, which every such `CodeSystem` holds. The provider owns this, so it refers to itself
/// weakly (set by `Arc::new_cyclic` in the provider's constructor).
pub(crate) struct ProviderShell {
    resource: Arc<Value>,
    me: std::sync::Weak<dyn CodeSystemProvider>,
}

impl ProviderShell {
    /// `me`: the weak reference `Arc::new_cyclic` hands the provider's constructor.
    pub(crate) fn new<P: CodeSystemProvider + 'static>(
        resource: Arc<Value>,
        me: &std::sync::Weak<P>,
    ) -> ProviderShell {
        let me: std::sync::Weak<dyn CodeSystemProvider> = me.clone();
        ProviderShell { resource, me }
    }

    /// The provider's code system with `concepts` (what [`CodeSystemProvider::compile`] returns).
    pub(crate) fn with(&self, concepts: Vec<crate::codesystem::Concept>) -> CodeSystem {
        // The provider is only ever reached through the Arc its constructor made, so the upgrade cannot fail
        // while one of its methods runs.
        let me = match self.me.upgrade() {
            Some(me) => me,
            None => unreachable!("a code system provider used after its last Arc was dropped"),
        };
        CodeSystem::from_provider(self.resource.clone(), me, concepts)
    }

    /// The provider's code system without concepts (what [`CodeSystemProvider::code_system`] returns).
    pub(crate) fn empty(&self) -> Arc<CodeSystem> {
        Arc::new(self.with(Vec::new()))
    }
}
