//! `$validate-code` for value sets and code systems: is this code (Coding, CodeableConcept) valid, what is its
//! display, and which issues explain a negative answer.

use crate::codesystem::{CodeSystem, Content};
use crate::context::{Ctx, lang_matches, parse_languages, split_canonical};
use crate::error::{Issue, Severity, TxError, operation_outcome};
use crate::expand::{evaluate, vs_canonical, vs_supplements};
use crate::params::Params;
use crate::registry::version_matches;
use serde_json::{Value, json};
use std::sync::Arc;

/// One coding to check, with the FHIRPath of where it came from.
#[derive(Debug, Clone)]
struct Coding {
    system: Option<String>,
    version: Option<String>,
    code: String,
    display: Option<String>,
    /// Prefix of expressions: "" (code/system params), "Coding.", "CodeableConcept.coding[0].".
    path: String,
}

impl Coding {
    fn expr(&self, element: &str) -> String {
        if self.path.is_empty() {
            element.to_string()
        } else {
            format!("{}{element}", self.path)
        }
    }

    fn whole(&self) -> String {
        if self.path.is_empty() {
            "code".to_string()
        } else {
            self.path.trim_end_matches('.').to_string()
        }
    }

    fn label(&self) -> String {
        format!("{}#{}", self.system.as_deref().unwrap_or(""), self.code)
    }

    /// `system|version#code`, as not-in-value-set messages show a coding.
    fn versioned_label(&self) -> String {
        match &self.version {
            Some(v) => format!("{}|{v}#{}", self.system.as_deref().unwrap_or(""), self.code),
            None => self.label(),
        }
    }
}

/// The outcome of checking one coding.
#[derive(Debug, Default)]
struct Check {
    ok: bool,
    /// Texts for the answer's `message` alone (no issue says them): a provider's reason why a filter leaves
    /// the code out.
    message_notes: Vec<String>,
    system: Option<String>,
    version: Option<String>,
    code: Option<String>,
    display: Option<String>,
    inactive: bool,
    status: Option<String>,
    issues: Vec<Issue>,
    unknown_system: Option<String>,
    /// `x-caused-by-unknown-system`: a code system (version) the value set depends on is unknown.
    caused_by_unknown: Option<String>,
    /// The coding's version conflicts with the value set's, or a version rule refused the version used.
    version_error: bool,
    /// The code is in the value set (possibly in another version of its code system).
    in_vs: bool,
    /// The code system's own form of a code matched without regard to case.
    normalized_code: Option<String>,
    /// The code is not in the code system, which is only a fragment: it may be a code of the full system.
    unknown_in_fragment: bool,
    /// The concept is abstract (not selectable).
    is_abstract: bool,
    /// The value set could not be evaluated (an import is missing): nothing can be said of the code.
    vs_unresolved: bool,
}

fn read_codings(params: &Params) -> Result<(Vec<Coding>, Option<Value>, bool), TxError> {
    if let Some(cc) = params.complex("codeableConcept", "valueCodeableConcept") {
        let codings = cc["coding"]
            .as_array()
            .map(|a| {
                a.iter()
                    .enumerate()
                    .map(|(i, c)| Coding {
                        system: c["system"].as_str().map(str::to_string),
                        version: c["version"].as_str().map(str::to_string),
                        code: c["code"].as_str().unwrap_or_default().to_string(),
                        display: c["display"].as_str().map(str::to_string),
                        path: format!("CodeableConcept.coding[{i}]."),
                    })
                    .collect()
            })
            .unwrap_or_default();
        return Ok((codings, Some(cc.clone()), true));
    }
    if let Some(c) = params.complex("coding", "valueCoding") {
        return Ok((
            vec![Coding {
                system: c["system"].as_str().map(str::to_string),
                version: c["version"].as_str().map(str::to_string),
                code: c["code"].as_str().unwrap_or_default().to_string(),
                display: c["display"].as_str().map(str::to_string),
                path: "Coding.".to_string(),
            }],
            None,
            false,
        ));
    }
    let Some(code) = params.str("code") else {
        // tx.fhir.org's text as clients see it (no closing parenthesis), and no tx-issue-type code.
        return Err(TxError::new(
            crate::error::ErrorKind::Invalid,
            Issue::new(
                Severity::Error,
                "invalid",
                None,
                "Unable to find code to validate (looked for coding | codeableConcept | code+system | code+inferSystem in parameters",
            ),
        ));
    };
    Ok((
        vec![Coding {
            system: params.str("system"),
            version: params
                .str("systemVersion")
                .or_else(|| params.str("version")),
            code,
            display: params.str("display"),
            path: String::new(),
        }],
        None,
        false,
    ))
}

/// ValueSet/$validate-code.
pub fn validate_vs(ctx: &Ctx<'_>, params: &Params) -> Result<Value, TxError> {
    let vs = ctx.requested_value_set(params)?;
    let (codings, cc, is_cc) = read_codings(params)?;
    // A value set without a url (one sent inline) is named as tx.fhir.org names it.
    let vs_label = if vs["url"].is_string() {
        vs_canonical(&vs)
    } else {
        "(unidentified)".to_string()
    };
    let mut stack = Vec::new();
    ctx.lenient_includes.set(true);
    // Providers test only the codes asked about instead of listing all they select.
    *ctx.probe.borrow_mut() = Some(codings.iter().map(|c| c.code.clone()).collect());
    let ev = evaluate(ctx, &vs, &mut stack);
    *ctx.probe.borrow_mut() = None;
    ctx.lenient_includes.set(false);
    let ev = ev?;
    let supplements = vs_supplements(&vs);

    let mut checks = Vec::new();
    let clean = |c: &Check| c.ok && !c.issues.iter().any(|i| i.severity == Severity::Error);
    for coding in &codings {
        let mut check = check_coding_in_vs(ctx, &vs, &ev, &supplements, &vs_label, is_cc, coding)?;
        // A coding without a version, in a value set that includes several versions of its system, is valid
        // when it is valid in one of them (tx.fhir.org tries each, newest first): its code or its display
        // may belong to an older version only.
        if !clean(&check) && coding.version.is_none() {
            let system = coding.system.as_deref().unwrap_or_default();
            for v in candidate_versions(&vs, system, &coding.code) {
                let trial = Coding {
                    version: Some(v),
                    ..coding.clone()
                };
                let c = check_coding_in_vs(ctx, &vs, &ev, &supplements, &vs_label, is_cc, &trial)?;
                if clean(&c) {
                    check = c;
                    break;
                }
            }
        }
        checks.push(check);
    }

    if let (Some(i), Some(first)) = (status_issue(&vs, "ValueSet"), checks.first_mut()) {
        first.issues.push(i);
    }
    // Value sets imported on the way deserve the same notes as the one asked about.
    for u in &ev.used_vs {
        let imported = ctx.find_vs(u);
        if let (Some(i), Some(first)) = (
            imported.and_then(|v| status_issue(&v, "ValueSet")),
            checks.first_mut(),
        ) {
            first.issues.push(i);
        }
    }
    Ok(render(ctx, checks, cc, is_cc, Some(&vs_label)))
}

/// Checks one coding against the evaluated value set `ev`.
fn check_coding_in_vs(
    ctx: &Ctx<'_>,
    vs: &Arc<Value>,
    ev: &crate::expand::Evaluated,
    supplements: &[String],
    vs_label: &str,
    is_cc: bool,
    coding: &Coding,
) -> Result<Check, TxError> {
    let mut coding = coding.clone();
    let mut check = Check::default();
    if coding.system.is_none() && !coding.path.is_empty() {
        // A Coding (alone or in a CodeableConcept) without a system has no defined meaning: tx.fhir.org
        // does not infer one (that is only for a bare `code`), it reports the code as not in the value set
        // and warns about the missing system.
        check.issues.push(
            Issue::new(
                Severity::Error,
                "code-invalid",
                Some("not-in-vs"),
                format!(
                    "The provided code '#{}' was not found in the value set '{vs_label}'",
                    coding.code
                ),
            )
            .with_id("None_of_the_provided_codes_are_in_the_value_set_one")
            .at(coding.expr("code")),
        );
        check.issues.push(
            Issue::new(
                Severity::Warning,
                "invalid",
                Some("invalid-data"),
                "Coding has no system. A code with no system has no defined meaning, and it cannot be validated. A system should be provided",
            )
            .with_id("Coding_has_no_system__cannot_validate")
            .at(coding.whole()),
        );
        check.code = Some(coding.code.clone());
        return Ok(check);
    }
    if coding.system.is_none() {
        // Infer the system from the value set's codes.
        let systems: Vec<&str> = ev
            .set
            .entries
            .iter()
            .filter(|e| e.code == coding.code)
            .map(|e| e.system.as_str())
            .collect();
        if systems.len() == 1 {
            coding.system = Some(systems[0].to_string());
        } else {
            let text = if systems.is_empty() {
                format!(
                    "The System URI could not be determined for the code '{}' in the ValueSet '{vs_label}'",
                    coding.code
                )
            } else {
                format!(
                    "The System URI could not be determined for the code '{}' in the ValueSet '{vs_label}': value set expansion has multiple matches: [{}]",
                    coding.code,
                    systems.join(", ")
                )
            };
            check.issues.push(
                Issue::new(Severity::Error, "not-found", Some("cannot-infer"), text)
                    .at(coding.expr("code")),
            );
            check.issues.push(
                Issue::new(
                    Severity::Error,
                    "code-invalid",
                    Some("not-in-vs"),
                    format!(
                        "The provided code '#{}' was not found in the value set '{vs_label}'",
                        coding.code
                    ),
                )
                .at(coding.expr("code")),
            );
            check.code = Some(coding.code.clone());
            return Ok(check);
        }
    }
    let system = coding.system.clone().unwrap_or_default();
    check.system = Some(system.clone());
    check.code = Some(coding.code.clone());
    let cs = match resolve_versions(ctx, vs, &coding, &mut check) {
        Some(cs) => Some(ctx.with_supplements(cs, supplements)?),
        None => None,
    };
    if let Some(i) = cs
        .as_ref()
        .and_then(|cs| status_issue(&cs.resource, "CodeSystem"))
    {
        check.issues.push(i);
    }
    // Membership is per version only where the value set names several versions of the system; a
    // version pattern or a versionless include admits the codes of every version it matches.
    let version = cs
        .as_ref()
        .and_then(|cs| cs.version.as_deref())
        .filter(|_| stated_versions(vs, &system) > 1);
    let in_vs = ev.set.contains_in(&system, &coding.code, version)
        || cs
            .as_ref()
            .and_then(|cs| cs.find(&coding.code).map(|i| cs.concepts[i].code.clone()))
            .is_some_and(|c| ev.set.contains_in(&system, &c, version));
    let mut in_vs = in_vs;
    let mut inactive_excluded = false;
    let mut abstract_refused = false;
    if let Some(cs) = &cs {
        let before = check.issues.len();
        check_in_cs(ctx, cs, &coding, &mut check);
        // Why a provider's code is not valid (a UCUM parse error), after the unknown-code error.
        if !check.ok
            && let Some(p) = &cs.provider
        {
            check.issues.extend(
                p.code_notes(&coding.code)
                    .into_iter()
                    .map(|i| i.at(coding.expr("code"))),
            );
        }
        if ctx.opts.membership_only {
            // `valueset-membership-only`: only membership is asked, so what the code system says of the code
            // (unknown, wrong display, status) is neither checked nor reported.
            check.issues.truncate(before);
            check.display = None;
            check.ok = true;
        }
        // A code we cannot find in a fragment may still belong to a value set that takes the whole code
        // system: it is given the benefit of the doubt (the fragment warning says so), as tx.fhir.org does.
        if check.unknown_in_fragment && includes_whole_system(vs, &system) {
            in_vs = true;
        }
        if in_vs && let Some(i) = deprecated_in_vs(ev, &system, &coding, vs_label) {
            check.issues.push(i);
        }
        // activeOnly, or a value set that leaves inactive codes out: an inactive code is outside the value set,
        // and the answer says that this is why.
        let left_out = ev
            .inactive_left_out
            .iter()
            .any(|(s, c)| *s == system && *c == coding.code);
        if check.inactive && ((ctx.opts.active_only == Some(true) && in_vs) || left_out) {
            inactive_excluded = true;
            in_vs = false;
        }
        // `abstract = false`: an abstract (not selectable) code is not acceptable here.
        if check.is_abstract && ctx.opts.abstract_allowed == Some(false) && in_vs {
            abstract_refused = true;
            in_vs = false;
        }
        if !in_vs || check.version_error {
            check.ok = false;
        }
    }
    check.in_vs = in_vs && cs.is_some();
    if !ev.unresolved.is_empty() {
        // The value set could not be evaluated: that is the answer, whatever the code.
        check.issues = ev.unresolved.clone();
        check.ok = false;
        check.in_vs = true;
        check.vs_unresolved = true;
        return Ok(check);
    }
    // A value set that could not be evaluated for want of a code system says so through that issue.
    if !in_vs && check.caused_by_unknown.is_none() {
        let shown = match &coding.display {
            Some(d) => format!("{} ('{d}')", coding.versioned_label()),
            None => coding.versioned_label(),
        };
        let severity = if is_cc {
            Severity::Information
        } else {
            Severity::Error
        };
        let tx = if is_cc {
            "this-code-not-in-vs"
        } else {
            "not-in-vs"
        };
        check.issues.insert(
            0,
            Issue::new(
                severity,
                "code-invalid",
                Some(tx),
                format!("The provided code '{shown}' was not found in the value set '{vs_label}'"),
            )
            .with_id("None_of_the_provided_codes_are_in_the_value_set_one")
            .at(coding.expr("code")),
        );
    }
    // Why the filters of the system's includes leave a valid code out, in the provider's words (a provider
    // says nothing of a code it does not know).
    if !in_vs && let Some(p) = cs.as_ref().and_then(|cs| cs.provider.as_ref()) {
        for inc in vs["compose"]["include"].as_array().into_iter().flatten() {
            if inc["system"].as_str() != Some(system.as_str()) {
                continue;
            }
            let filters = inc["filter"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            if !filters.is_empty()
                && let Some(note) = p.filter_note(filters, &coding.code)
            {
                check.message_notes.push(note);
            }
        }
    }
    if inactive_excluded {
        check.issues.insert(
            0,
            Issue::new(
                Severity::Error,
                "business-rule",
                Some("code-rule"),
                format!("The concept '{}' is valid but is not active", coding.code),
            )
            .with_id("STATUS_CODE_WARNING_CODE")
            .at(coding.expr("code")),
        );
    }
    if abstract_refused {
        check.issues.insert(
            0,
            Issue::new(
                Severity::Error,
                "business-rule",
                Some("code-rule"),
                format!(
                    "Code '{}' is abstract, and not allowed in this context",
                    coding.label()
                ),
            )
            .with_id("ABSTRACT_CODE_NOT_ALLOWED")
            .at(coding.expr("code")),
        );
    }
    Ok(check)
}

/// The warning for a code that the value set itself marks as deprecated (the `valueset-deprecated` extension or a
/// standards status of `deprecated` on its concept reference), whatever its status in the code system.
fn deprecated_in_vs(
    ev: &crate::expand::Evaluated,
    system: &str,
    coding: &Coding,
    vs_label: &str,
) -> Option<Issue> {
    let entry = ev
        .set
        .entries
        .iter()
        .find(|e| e.system == system && e.code == coding.code)?;
    let deprecated = entry.vs_extensions.iter().any(|x| match x["url"].as_str() {
        Some("http://hl7.org/fhir/StructureDefinition/valueset-deprecated") => {
            x["valueBoolean"] == Value::Bool(true) || x["valueCode"] == "true"
        }
        Some("http://hl7.org/fhir/StructureDefinition/structuredefinition-standards-status") => {
            x["valueCode"] == "deprecated"
        }
        _ => false,
    });
    deprecated.then(|| {
        Issue::new(
            Severity::Warning,
            "business-rule",
            Some("code-comment"),
            format!(
                "The presence of the concept '{}' in the system '{system}' in the value set {vs_label} is marked with a status of deprecated and its use should be reviewed",
                coding.code
            ),
        )
        .with_id("CONCEPT_DEPRECATED_IN_VALUESET")
        .at(coding.expr("code"))
    })
}

/// Whether the value set includes every code of `system` (an include of the system without concepts or filters).
fn includes_whole_system(vs: &Value, system: &str) -> bool {
    vs["compose"]["include"].as_array().is_some_and(|a| {
        a.iter().any(|i| {
            i["system"] == system
                && i.get("concept").is_none()
                && i.get("filter").is_none()
                && i.get("valueSet").is_none()
        })
    })
}

/// The version of the coding's code system the value set asks for: the include's version (preferring an include
/// that lists the code, for value sets that use several versions), before request rules.
fn include_version(vs: &Value, system: &str, code: &str, wanted: Option<&str>) -> Option<String> {
    let includes: Vec<&Value> = vs["compose"]["include"]
        .as_array()
        .map(|a| a.iter().filter(|i| i["system"] == system).collect())
        .unwrap_or_default();
    let lists = |i: &&&Value| {
        i["concept"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["code"] == code))
    };
    let listing: Vec<&&Value> = includes.iter().filter(lists).collect();
    let candidates: Vec<&&Value> = if listing.is_empty() {
        includes.iter().collect()
    } else {
        listing
    };
    // Several versions of the system: the one the coding names, else the newest stated one.
    let named = wanted.and_then(|w| {
        candidates
            .iter()
            .filter_map(|i| i["version"].as_str())
            .find(|v| version_matches(v, w))
    });
    if let Some(v) = named {
        return Some(v.to_string());
    }
    candidates
        .iter()
        .filter_map(|i| i["version"].as_str())
        .max_by(|a, b| crate::registry::compare_versions(a, b))
        .map(str::to_string)
}

/// The versions of `system` that the value set's includes state and that may hold `code` (an include of the
/// whole system or one listing the code), newest first; empty unless there are several.
fn candidate_versions(vs: &Value, system: &str, code: &str) -> Vec<String> {
    let mut versions: Vec<String> = vs["compose"]["include"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["system"] == system && i.get("filter").is_none())
        .filter(|i| {
            i["concept"]
                .as_array()
                .is_none_or(|cs| cs.iter().any(|c| c["code"] == code))
        })
        .filter_map(|i| i["version"].as_str().map(str::to_string))
        .collect();
    versions.sort_by(|a, b| crate::registry::compare_versions(b, a));
    versions.dedup();
    if versions.len() > 1 {
        versions
    } else {
        Vec::new()
    }
}

/// How many distinct versions of `system` the value set's includes state.
fn stated_versions(vs: &Value, system: &str) -> usize {
    let mut versions: Vec<&str> = vs["compose"]["include"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["system"] == system)
        .filter_map(|i| i["version"].as_str())
        .collect();
    versions.sort_unstable();
    versions.dedup();
    versions.len()
}

/// Chooses the code system version to validate `coding` against in value set `vs`, as tx.fhir.org does: the
/// coding's own version when the value set allows it, else the value set's (with an issue saying they differ).
/// Unknown versions become issues; returns None when no version can be used.
fn resolve_versions(
    ctx: &Ctx<'_>,
    vs: &Value,
    coding: &Coding,
    check: &mut Check,
) -> Option<Arc<CodeSystem>> {
    let system = coding.system.clone().unwrap_or_default();
    let stated = include_version(vs, &system, &coding.code, coding.version.as_deref());
    // The version the value set ends up with once force/default/check rules apply.
    let vs_version = ctx.effective_version(&system, stated.as_deref());
    let vs_cs = ctx.find_cs(&system, vs_version.as_deref());
    let vs_depends = vs["compose"]["include"]
        .as_array()
        .is_some_and(|a| a.iter().any(|i| i["system"] == system.as_str()));
    let used = match (&coding.version, &vs_version) {
        (None, _) => {
            if vs_cs.is_none() {
                unknown_system(ctx, coding, vs_version.as_deref(), vs_depends, check);
            }
            vs_cs
        }
        (Some(cv), None) => match ctx.find_cs(&system, Some(cv)) {
            Some(cs) => Some(cs),
            None => {
                unknown_system(ctx, coding, Some(cv), vs_depends, check);
                if let Some(latest) = vs_cs.as_ref() {
                    check.issues.push(
                        Issue::new(
                            Severity::Warning,
                            "invalid",
                            Some("vs-invalid"),
                            format!(
                                "The code system '{system}' version '{}' for the versionless include in the ValueSet include is different to the one in the value ('{cv}')",
                                latest.version.as_deref().unwrap_or("")
                            ),
                        )
                        .at(coding.expr("version")),
                    );
                }
                check.version_error = true;
                vs_cs
            }
        },
        (Some(cv), Some(pattern)) if version_matches(pattern, cv) => {
            let cs = ctx.find_cs(&system, Some(cv));
            if cs.is_none() {
                unknown_system(ctx, coding, Some(cv), vs_depends, check);
            }
            cs
        }
        (Some(cv), Some(pattern)) => {
            let origin = if stated.as_deref() == Some(pattern.as_str()) {
                String::new()
            } else {
                format!(
                    " resulting from the version '{}'",
                    stated.as_deref().unwrap_or("")
                )
            };
            check.issues.push(
                Issue::new(
                    Severity::Error,
                    "invalid",
                    Some("vs-invalid"),
                    format!(
                        "The code system '{system}' version '{pattern}'{origin} in the ValueSet include is different to the one in the value ('{cv}')"
                    ),
                )
                .at(coding.expr("version")),
            );
            if ctx.find_cs(&system, Some(cv)).is_none() {
                unknown_system(ctx, coding, Some(cv), vs_depends, check);
            } else if vs_cs.is_none() {
                unknown_system(ctx, coding, Some(pattern), vs_depends, check);
            }
            check.version_error = true;
            vs_cs
        }
    };
    if let Some(Err(e)) = used.as_ref().map(|cs| ctx.check_version(cs)) {
        check.issues.splice(
            0..0,
            e.issues.into_iter().map(|i| i.at(coding.expr("version"))),
        );
        check.version_error = true;
    }
    used
}

/// CodeSystem/$validate-code.
pub fn validate_cs(ctx: &Ctx<'_>, params: &Params) -> Result<Value, TxError> {
    let (mut codings, cc, is_cc) = read_codings(params)?;
    let cs_resource = params.resource("codeSystem").cloned();
    let url = params.str("url");
    let mut checks = Vec::new();
    for coding in codings.iter_mut() {
        if coding.system.is_none() {
            coding.system = url.clone().or_else(|| {
                cs_resource
                    .as_ref()
                    .and_then(|r| r["url"].as_str().map(str::to_string))
            });
        }
        let mut check = Check {
            system: coding.system.clone(),
            code: Some(coding.code.clone()),
            ..Check::default()
        };
        let system = coding.system.clone().unwrap_or_default();
        let cs = match &cs_resource {
            Some(r) => Some(Arc::new(CodeSystem::from_json(Arc::new(r.clone())))),
            None => {
                let (u, v) = split_canonical(&system);
                let version = coding
                    .version
                    .clone()
                    .or(v.map(str::to_string))
                    .or_else(|| params.str("version"));
                let version = ctx.effective_version(u, version.as_deref());
                match ctx.find_cs(u, version.as_deref()) {
                    Some(cs) => Some(ctx.with_supplements(cs, &[])?),
                    None => {
                        unknown_system(ctx, coding, version.as_deref(), false, &mut check);
                        None
                    }
                }
            }
        };
        if let Some(cs) = cs {
            check_in_cs(ctx, &cs, coding, &mut check);
            // What a provider has to say about the code beyond its validity (expression notes).
            if let Some(p) = &cs.provider {
                check.issues.extend(
                    p.code_notes(&coding.code)
                        .into_iter()
                        .map(|i| i.at(coding.expr("code"))),
                );
            }
            if let Some(i) = status_issue(&cs.resource, "CodeSystem") {
                check.issues.push(i);
            }
        }
        checks.push(check);
    }
    Ok(render(ctx, checks, cc, is_cc, None))
}

/// Why a resource deserves a note when used: `deprecated` or `withdrawn` (standards status), `draft`,
/// `experimental`.
pub fn status_label(resource: &Value) -> Option<&str> {
    let standards = resource["extension"].as_array().and_then(|a| {
        a.iter()
            .find(|e| {
                e["url"] == "http://hl7.org/fhir/StructureDefinition/structuredefinition-standards-status"
            })
            .and_then(|e| e["valueCode"].as_str())
    });
    match standards {
        Some(s @ ("deprecated" | "withdrawn")) => Some(s),
        _ if resource["status"] == "draft" => Some("draft"),
        _ if resource["experimental"] == Value::Bool(true) => Some("experimental"),
        _ => None,
    }
}

/// "Reference to draft/experimental/deprecated/withdrawn ..." notes for a resource used by the operation.
fn status_issue(resource: &Value, kind: &str) -> Option<Issue> {
    let label = status_label(resource)?;
    let url = resource["url"].as_str().unwrap_or_default();
    let canonical = match resource["version"].as_str() {
        Some(v) => format!("{url}|{v}"),
        None => url.to_string(),
    };
    Some(Issue::new(
        Severity::Information,
        "business-rule",
        Some("status-check"),
        format!("Reference to {label} {kind} {canonical}"),
    ))
}

fn unknown_system(
    ctx: &Ctx<'_>,
    coding: &Coding,
    version: Option<&str>,
    vs_depends: bool,
    check: &mut Check,
) {
    let system = coding.system.clone().unwrap_or_default();
    if ctx.find_vs(&system).is_some() {
        check.issues.push(
            Issue::new(
                Severity::Error,
                "invalid",
                Some("invalid-data"),
                format!("The Coding references a value set, not a code system ('{system}')"),
            )
            .at(coding.expr("system")),
        );
        check.ok = false;
        return;
    }
    // A supplement only adds to another code system: it cannot be the system of a code.
    if let Some(sup) = ctx.find_supplement(&system) {
        check.issues.push(
            Issue::new(
                Severity::Error,
                "invalid",
                Some("invalid-data"),
                format!(
                    "CodeSystem {} is a supplement, so can't be used as a value in {}",
                    sup.versioned_url(),
                    coding.expr("system")
                ),
            )
            .with_id("CODESYSTEM_CS_NO_SUPPLEMENT")
            .at(coding.expr("system")),
        );
        check.ok = false;
        return;
    }
    let known = ctx.known_versions(&system);
    // A system that is not a URI at all (no scheme) is a local reference, which a Coding may not use.
    if !system.is_empty() && !system.contains(':') {
        check.issues.push(
            Issue::new(
                Severity::Error,
                "invalid",
                Some("invalid-data"),
                "Coding.system must be an absolute reference, not a local reference",
            )
            .with_id("Terminology_TX_System_Relative")
            .at(coding.expr("system")),
        );
    }
    // The message ids are those of the FHIR validator's bundle, which tx.fhir.org puts on each variant.
    let (text, id) = match version {
        Some(v) if !known.is_empty() => (
            format!(
                "A definition for CodeSystem '{system}' version '{v}' could not be found, so the code cannot be validated. Valid versions: {}",
                known.join(" or ")
            ),
            "UNKNOWN_CODESYSTEM_VERSION",
        ),
        Some(v) => (
            format!(
                "A definition for CodeSystem '{system}' version '{v}' could not be found, so the code cannot be validated. No versions of this code system are known"
            ),
            "UNKNOWN_CODESYSTEM_VERSION_NONE",
        ),
        None => (
            format!(
                "A definition for CodeSystem '{system}' could not be found, so the code cannot be validated"
            ),
            "UNKNOWN_CODESYSTEM",
        ),
    };
    check.issues.push(
        Issue::new(Severity::Error, "not-found", Some("not-found"), text)
            .with_id(id)
            .at(coding.expr("system")),
    );
    // A value set that includes the system cannot be evaluated without it; a coding from elsewhere only names
    // a system we do not know.
    if vs_depends || !known.is_empty() {
        check.caused_by_unknown = Some(match version {
            Some(v) => format!("{system}|{v}"),
            None => system,
        });
    } else {
        check.unknown_system = Some(system);
    }
    check.ok = false;
}

/// Checks the code, display and status of `coding` in `cs`, filling `check`.
fn check_in_cs(ctx: &Ctx<'_>, cs: &CodeSystem, coding: &Coding, check: &mut Check) {
    check.version = cs.version.clone();
    let compiled;
    let cs = match &cs.provider {
        Some(p) => {
            compiled = crate::context::with_sources(
                cs,
                p.compile(
                    &[coding.code.as_str()],
                    ctx.opts.display_language.as_deref(),
                    crate::provider::Detail::Validation,
                ),
            );
            &compiled
        }
        None => cs,
    };
    let Some(i) = cs.find(&coding.code) else {
        if cs.content == Content::Fragment {
            check.issues.push(
                Issue::new(
                    Severity::Warning,
                    "code-invalid",
                    Some("invalid-code"),
                    format!(
                        "Unknown Code '{}' in the CodeSystem '{}' version '{}' - note that the code system is labeled as a fragment, so the code may be valid in some other fragment",
                        coding.code,
                        cs.url,
                        cs.version.as_deref().unwrap_or("")
                    ),
                )
                .with_id("UNKNOWN_CODE_IN_FRAGMENT")
                .at(coding.expr("code")),
            );
            check.ok = true;
            check.unknown_in_fragment = true;
            return;
        }
        // A provider may name its version for people: "... version '<edition URI>' (International Edition)".
        let label = cs
            .provider
            .as_ref()
            .and_then(|p| p.version_label())
            .map(|l| format!(" ({l})"))
            .unwrap_or_default();
        let text = match &cs.version {
            Some(v) => format!(
                "Unknown code '{}' in the CodeSystem '{}' version '{v}'{label}",
                coding.code, cs.url
            ),
            None => format!(
                "Unknown code '{}' in the CodeSystem '{}'",
                coding.code, cs.url
            ),
        };
        let id = if cs.version.is_some() {
            "Unknown_Code_in_Version"
        } else {
            "Unknown_Code_in"
        };
        check.issues.push(
            Issue::new(Severity::Error, "code-invalid", Some("invalid-code"), text)
                .with_id(id)
                .at(coding.expr("code")),
        );
        check.ok = false;
        return;
    };
    let concept = &cs.concepts[i];
    check.ok = true;
    check.is_abstract = cs.is_abstract(i);
    // The code is echoed as given; a case-insensitive match reports the stored form as `normalized-code`.
    check.code = Some(coding.code.clone());
    if concept.code != coding.code {
        check.normalized_code = Some(concept.code.clone());
        check.issues.push(
            Issue::new(
                Severity::Information,
                "business-rule",
                Some("code-rule"),
                format!(
                    "The code '{}' differs from the correct code '{}' by case. Although the code system '{}' is case insensitive, implementers are strongly encouraged to use the correct case anyway",
                    coding.code,
                    concept.code,
                    cs.versioned_url()
                ),
            )
            .with_id("CODE_CASE_DIFFERENCE")
            .at(coding.expr("code")),
        );
    }
    check.display = ctx.display(cs, concept);
    // tx.fhir.org validates inactive SNOMED CT concepts without a status note (the conformance tests expect
    // none); the status still matters to `activeOnly`.
    if concept.is_inactive() && cs.provider.as_ref().is_some_and(|p| p.quiet_inactive()) {
        check.inactive = ctx.opts.active_only == Some(true);
    } else if concept.is_inactive() {
        check.inactive = true;
        check.status = concept.status();
        let status = match concept.status().as_deref() {
            Some(s) if s != "inactive" => format!("{s} and inactive"),
            _ => "inactive".to_string(),
        };
        check.issues.push(
            Issue::new(
                Severity::Warning,
                "business-rule",
                Some("code-comment"),
                format!(
                    "The concept '{}' has a status of {status} and its use should be reviewed",
                    concept.code
                ),
            )
            .with_id("INACTIVE_CONCEPT_FOUND")
            .at(coding.whole()),
        );
    } else if concept.is_deprecated() {
        check.status = Some("deprecated".to_string());
        check.issues.push(
            Issue::new(
                Severity::Warning,
                "business-rule",
                Some("code-comment"),
                format!(
                    "The concept '{}' is deprecated and its use should be reviewed",
                    concept.code
                ),
            )
            .with_id("DEPRECATED_CONCEPT_FOUND")
            .at(coding.whole()),
        );
    }
    if let Some(display) = &coding.display {
        check_display(ctx, cs, concept, display, coding, check);
    }
}

fn check_display(
    ctx: &Ctx<'_>,
    cs: &CodeSystem,
    concept: &crate::codesystem::Concept,
    display: &str,
    coding: &Coding,
    check: &mut Check,
) {
    // The display is in the code system's language. A FHIR code system that states none has displays of no
    // particular language, valid whatever language is asked for; a provider's displays are English terms.
    let cs_lang = cs
        .language
        .clone()
        .or_else(|| cs.provider.as_ref().map(|_| "en".to_string()));
    let mut candidates: Vec<(Option<String>, String)> = Vec::new();
    if let Some(d) = &concept.display {
        candidates.push((cs_lang.clone(), d.clone()));
    }
    // Designations without a language are other kinds of names (synonyms of a special use), not displays;
    // retired ones (inactive, or deprecated/withdrawn by a standards-status extension) are no longer valid.
    for d in concept
        .designations
        .iter()
        .filter(|d| d.retired().is_none())
    {
        if let Some(l) = &d.language {
            candidates.push((Some(l.clone()), d.value.clone()));
        }
    }
    let langs: Vec<String> = ctx
        .opts
        .display_language
        .as_deref()
        .map(parse_languages)
        .unwrap_or_default();
    let in_lang = |l: &Option<String>| match l {
        None => true,
        Some(l) => langs.is_empty() || langs.iter().any(|r| r == "*" || lang_matches(r, l)),
    };
    let eq = |a: &str, b: &str| {
        if cs.case_sensitive {
            a == b
        } else {
            a.eq_ignore_ascii_case(b)
        }
    };
    if candidates.iter().any(|(l, d)| in_lang(l) && eq(d, display)) {
        return;
    }
    // A display that used to be right (an inactive or retired designation) is a warning, not an error.
    if let Some(status) = concept
        .designations
        .iter()
        .filter(|d| eq(&d.value, display))
        .find_map(|d| d.retired())
    {
        let mut valid: Vec<&str> = candidates.iter().map(|(_, d)| d.as_str()).collect();
        valid.sort_unstable();
        valid.dedup();
        let list: Vec<String> = valid
            .iter()
            .map(|d| {
                if d.contains(' ') {
                    format!("\"{d}\"")
                } else {
                    d.to_string()
                }
            })
            .collect();
        check.issues.push(
            Issue::new(
                Severity::Warning,
                "invalid",
                Some("display-comment"),
                format!(
                    "'{display}' is no longer considered a correct display for code '{}' (status = {status}). The correct display is one of {}.",
                    coding.code,
                    list.join(",")
                ),
            )
            .with_id("INACTIVE_DISPLAY_FOUND")
            .at(coding.expr("display")),
        );
        return;
    }
    let normalize = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let lang_label = if langs.is_empty() {
        "--".to_string()
    } else {
        langs.join(",")
    };
    if let Some(p) = &cs.provider
        && !p.display_is_fixed(&concept.code)
    {
        // The name a supplement gives such a code is right, whatever its language.
        if concept
            .designations
            .iter()
            .any(|d| d.source.is_some() && eq(&d.value, display))
        {
            return;
        }
        let known = concept.display.as_deref().unwrap_or_default();
        let text = format!(
            "The display name '{display}' is not a known display name for {}#{}. Known display is '{known}' ({}) (for the language(s) '{lang_label}'). Use a supplement to define displays for user assigned codes",
            cs.url,
            concept.code,
            cs_lang.as_deref().unwrap_or("en")
        );
        check.issues.push(
            Issue::new(
                Severity::Information,
                "invalid",
                Some("invalid-display"),
                text,
            )
            .with_id("Display_Name_Not_Fixed_use_Supplement")
            .at(coding.expr("display")),
        );
        return;
    }
    let valid: Vec<&(Option<String>, String)> =
        candidates.iter().filter(|(l, _)| in_lang(l)).collect();
    if valid.is_empty() {
        if candidates.iter().any(|(_, d)| eq(d, display)) {
            check.issues.push(
                Issue::new(
                    Severity::Information,
                    "invalid",
                    Some("invalid-display"),
                    format!(
                        "There are no valid display names found for the code {} for language(s) '{lang_label}'. The display is '{display}' which is a valid display for the default language",
                        coding.label()
                    ),
                )
                .with_id("NO_VALID_DISPLAY_FOUND_NONE_FOR_LANG_OK")
                .at(coding.expr("display")),
            );
            return;
        }
        check.issues.push(
            Issue::new(
                Severity::Error,
                "invalid",
                Some("invalid-display"),
                format!(
                    "Wrong Display Name '{display}' for {}. There are no valid display names found for language(s) '{lang_label}'. Default display is '{}'",
                    coding.label(),
                    concept.display.as_deref().unwrap_or("")
                ),
            )
            .with_id("NO_VALID_DISPLAY_FOUND_NONE_FOR_LANG_ERR")
            .at(coding.expr("display")),
        );
        check.ok = false;
        return;
    }
    let ws = valid
        .iter()
        .any(|(_, d)| normalize(d) == normalize(display));
    let list = valid
        .iter()
        .map(|(l, d)| match l {
            Some(l) => format!("'{d}' ({l})"),
            None => format!("'{d}'"),
        })
        .collect::<Vec<_>>();
    let shown = if list.len() == 1 {
        format!("Valid display is {}", list[0])
    } else {
        format!(
            "Valid display is one of {} choices: {}",
            list.len(),
            list.join(" or ")
        )
    };
    let text = if ws {
        format!(
            "Wrong whitespace in Display Name '{display}' for {}. {shown} (for the language(s) '{lang_label}')",
            coding.label()
        )
    } else {
        format!(
            "Wrong Display Name '{display}' for {}. {shown} (for the language(s) '{lang_label}')",
            coding.label()
        )
    };
    let severity = if ctx.opts.lenient_display {
        Severity::Warning
    } else {
        check.ok = false;
        Severity::Error
    };
    check.issues.push(
        Issue::new(severity, "invalid", Some("invalid-display"), text)
            .with_id(if ws {
                "Display_Name_WS_for__should_be_one_of__instead_of"
            } else {
                "Display_Name_for__should_be_one_of__instead_of"
            })
            .at(coding.expr("display")),
    );
}

fn render(
    _ctx: &Ctx<'_>,
    checks: Vec<Check>,
    cc: Option<Value>,
    is_cc: bool,
    vs_label: Option<&str>,
) -> Value {
    let mut out = Vec::new();
    let ok = if is_cc {
        // One valid coding suffices, unless another coding is outright wrong (an error of its own).
        checks.iter().any(|c| c.ok)
            && !checks
                .iter()
                .flat_map(|c| &c.issues)
                .any(|i| i.severity == Severity::Error)
    } else {
        checks.iter().all(|c| c.ok)
    };
    let mut issues: Vec<Issue> = Vec::new();
    // The coding whose details we report: the first valid one, else the first in the value set, else the first.
    let main = checks
        .iter()
        .position(|c| c.ok)
        .or_else(|| checks.iter().position(|c| c.in_vs))
        .unwrap_or(0);
    // A coding in the value set whose version conflicts is reported by its own issues.
    let any_in_vs = checks
        .iter()
        .any(|c| c.in_vs || c.caused_by_unknown.is_some());
    if let (true, false, false, Some(vs)) = (is_cc, ok, any_in_vs, vs_label) {
        {
            issues.push(Issue::new(
                Severity::Error,
                "code-invalid",
                Some("not-in-vs"),
                format!("No valid coding was found for the value set '{vs}'"),
            ));
        }
    }
    for c in &checks {
        for i in &c.issues {
            if is_cc && ok && i.tx_code == Some("this-code-not-in-vs") {
                continue;
            }
            issues.push(i.clone());
        }
    }
    if let Some(c) = checks.get(main) {
        // A CodeableConcept checked against a value set that could not be evaluated is echoed alone: none of
        // its codings was looked at closely enough to report one.
        let shown = (!is_cc || ok || c.in_vs) && !(is_cc && c.vs_unresolved);
        if let (Some(code), true) = (&c.code, shown) {
            out.push(json!({"name": "code", "valueCode": code}));
        }
        // A CodeableConcept none of whose codings is in the value set reports no display either.
        if let (Some(d), true) = (&c.display, shown || !is_cc) {
            out.push(json!({"name": "display", "valueString": d}));
        }
        if c.inactive {
            out.push(json!({"name": "inactive", "valueBoolean": true}));
        }
        if let (Some(n), true) = (&c.normalized_code, shown) {
            out.push(json!({"name": "normalized-code", "valueCode": n}));
        }
        if let (Some(s), true) = (&c.system, shown) {
            out.push(json!({"name": "system", "valueUri": s}));
        }
        if let (Some(v), true) = (&c.version, shown) {
            out.push(json!({"name": "version", "valueString": v}));
        }
        // An inactive or deprecated concept says which status it has.
        if let Some(s) = &c.status {
            out.push(json!({"name": "status", "valueCode": s}));
        }
    }
    for c in &checks {
        if let Some(u) = &c.unknown_system {
            out.push(json!({"name": "x-unknown-system", "valueCanonical": u}));
        }
        if let Some(u) = &c.caused_by_unknown {
            out.push(json!({"name": "x-caused-by-unknown-system", "valueCanonical": u}));
        }
    }
    if let Some(cc) = cc {
        out.push(json!({"name": "codeableConcept", "valueCodeableConcept": cc}));
    }
    if !issues.is_empty() {
        let mut texts: Vec<&str> = issues
            .iter()
            // What tx.fhir.org puts in `message`: errors, warnings other than version notes, and a
            // display note when the code is valid.
            .filter(|i| match i.severity {
                Severity::Error => true,
                // A code unknown to a fragment is only a doubt: the answer is still valid.
                Severity::Warning => {
                    !matches!(i.tx_code, Some("vs-invalid" | "display-comment"))
                        && !matches!(
                            i.message_id,
                            Some("UNKNOWN_CODE_IN_FRAGMENT" | "CONCEPT_DEPRECATED_IN_VALUESET")
                        )
                }
                Severity::Information => ok && i.tx_code == Some("invalid-display"),
            })
            .map(|i| i.text.as_str())
            .chain(
                checks
                    .iter()
                    .flat_map(|c| c.message_notes.iter().map(String::as_str)),
            )
            .collect();
        texts.sort();
        texts.dedup();
        if !texts.is_empty() {
            out.push(json!({"name": "message", "valueString": texts.join("; ")}));
        }
        out.push(json!({"name": "issues", "resource": operation_outcome(&issues)}));
    }
    out.push(json!({"name": "result", "valueBoolean": ok}));
    json!({"resourceType": "Parameters", "parameter": out})
}
