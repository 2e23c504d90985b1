//! `CodeSystem/$lookup` and `CodeSystem/$subsumes`.

use crate::codesystem::CodeSystem;
use crate::context::{Ctx, split_canonical};
use crate::error::{ErrorKind, Issue, Severity, TxError};
use crate::fast::{Json, Out};
use crate::params::Params;
use serde_json::{Value, json};
use std::sync::Arc;

fn coding_of(params: &Params) -> (Option<String>, Option<String>, Option<String>) {
    if let Some(c) = params.complex("coding", "valueCoding") {
        return (
            c["system"].as_str().map(str::to_string),
            c["code"].as_str().map(str::to_string),
            c["version"].as_str().map(str::to_string),
        );
    }
    (
        params.str("system"),
        params.str("code"),
        params.str("version"),
    )
}

fn resolve(ctx: &Ctx<'_>, system: &str, version: Option<&str>) -> Result<Arc<CodeSystem>, TxError> {
    let (url, v) = split_canonical(system);
    let version = ctx.effective_version(url, version.or(v));
    match ctx.find_cs(url, version.as_deref()) {
        Some(cs) => ctx.with_supplements(cs, &[]),
        None => {
            let text = match &version {
                Some(v) => format!(
                    "A definition for CodeSystem '{url}' version '{v}' could not be found, so the code cannot be validated"
                ),
                None => format!(
                    "A definition for CodeSystem '{url}' could not be found, so the code cannot be validated"
                ),
            };
            Err(TxError::new(
                ErrorKind::NotFound,
                Issue::new(Severity::Error, "not-found", Some("not-found"), text).at("system"),
            ))
        }
    }
}

/// CodeSystem/$lookup.
pub fn lookup(ctx: &Ctx<'_>, params: &Params) -> Result<Value, TxError> {
    let (system, code, version) = coding_of(params);
    let (Some(system), Some(code)) = (system, code) else {
        return Err(TxError::invalid(
            "Unable to find code to look up (need system and code, or coding)",
        ));
    };
    let cs = resolve(ctx, &system, version.as_deref())?;
    if let Some(p) = &cs.provider {
        let properties = params.strs("property");
        if let Some(codes) = p.lookup_codes(&code) {
            let codes: Vec<&str> = codes.iter().map(String::as_str).collect();
            let compiled = ctx.compile(&cs, &codes, crate::provider::Detail::Validation);
            let Some(i) = compiled.find(&code) else {
                return Err(unknown_code(&cs, &code));
            };
            let display = ctx.display(&compiled, &compiled.concepts[i]);
            return Ok(concept_answer(&compiled, i, display, &properties));
        }
        return p
            .lookup(&code, ctx.opts.display_language.as_deref(), &properties)
            .ok_or_else(|| unknown_code(&cs, &code));
    }
    let Some(i) = cs.find(&code) else {
        let text = match &cs.version {
            Some(v) => format!(
                "Unknown code '{code}' in the CodeSystem '{}' version '{v}'",
                cs.url
            ),
            None => format!("Unknown code '{code}' in the CodeSystem '{}'", cs.url),
        };
        return Err(TxError::new(
            ErrorKind::NotFound,
            Issue::new(Severity::Error, "code-invalid", Some("invalid-code"), text).at("code"),
        ));
    };
    let display = ctx.display(&cs, &cs.concepts[i]);
    Ok(concept_answer(&cs, i, display, &params.strs("property")))
}

/// The `$lookup` answer for concept `i` of `cs` shown as `display`, with the properties `wanted` (all when
/// empty or `*`): parents and children need to be concepts of `cs` to be listed.
pub(crate) fn concept_answer(
    cs: &CodeSystem,
    i: usize,
    display: Option<String>,
    wanted: &[String],
) -> Value {
    let c = &cs.concepts[i];
    let want = |p: &str| wanted.is_empty() || wanted.iter().any(|w| w == p || w == "*");
    let mut out = vec![
        json!({"name": "code", "valueCode": c.code}),
        json!({"name": "system", "valueUri": cs.url}),
    ];
    if let Some(n) = cs.name.as_ref().or(cs.title.as_ref()) {
        out.push(json!({"name": "name", "valueString": n}));
    }
    if let Some(v) = &cs.version {
        out.push(json!({"name": "version", "valueString": v}));
    }
    if let Some(d) = display {
        out.push(json!({"name": "display", "valueString": d}));
    }
    if let Some(d) = &c.definition {
        out.push(json!({"name": "definition", "valueString": d}));
    }
    out.push(json!({"name": "abstract", "valueBoolean": cs.is_abstract(i)}));
    // The code system's own designations, then its display as the preferred designation of its language,
    // then what supplements add (each naming its `source`), as tx.fhir.org lists them.
    let (own, supplemented): (Vec<_>, Vec<_>) =
        c.designations.iter().partition(|d| d.source.is_none());
    let display_designation = c.display.as_ref().map(|value| {
        crate::codesystem::Designation::new(
            cs.language.clone(),
            Some(crate::expansion::preferred_for_language()),
            value.clone(),
        )
    });
    for d in own
        .into_iter()
        .chain(display_designation.as_ref())
        .chain(supplemented)
    {
        let mut parts = Vec::new();
        if let Some(l) = &d.language {
            parts.push(json!({"name": "language", "valueCode": l}));
        }
        if let Some(s) = &d.source {
            parts.push(json!({"name": "source", "valueCanonical": s}));
        }
        if let Some(u) = &d.use_ {
            parts.push(json!({"name": "use", "valueCoding": u}));
        }
        parts.push(json!({"name": "value", "valueString": d.value}));
        out.push(json!({"name": "designation", "part": parts}));
    }
    for s in &cs.applied_supplements {
        out.push(json!({"name": "used-supplement", "valueCanonical": s}));
    }
    let prop = |code: &str, value: Value, description: Option<&str>| {
        let mut parts = vec![json!({"name": "code", "valueCode": code})];
        if let Some(d) = description {
            parts.push(json!({"name": "description", "valueString": d}));
        }
        let mut v = value;
        v["name"] = json!("value");
        parts.push(v);
        json!({"name": "property", "part": parts})
    };
    if want("parent") {
        for &p in &c.parents {
            let pc = &cs.concepts[p];
            out.push(prop(
                "parent",
                json!({"valueCode": pc.code}),
                pc.display.as_deref(),
            ));
        }
    }
    if want("child") {
        for &ch in &c.children {
            let cc = &cs.concepts[ch];
            out.push(prop(
                "child",
                json!({"valueCode": cc.code}),
                cc.display.as_deref(),
            ));
        }
    }
    if want("inactive") {
        out.push(prop(
            "inactive",
            json!({"valueBoolean": c.is_inactive()}),
            None,
        ));
    }
    for p in &c.properties {
        if matches!(p.code.as_str(), "parent" | "child" | "inactive") || !want(&p.code) {
            continue;
        }
        let mut v = json!({});
        v[p.key.as_str()] = p.value.clone();
        out.push(prop(&p.code, v, None));
    }
    json!({"resourceType": "Parameters", "parameter": out})
}

/// The JSON text of [`concept_answer`] with every property (`wanted` empty), written without building the
/// `Value`: the fast path's `$lookup` of a FHIR code system. The bytes are those of `serde_json::to_vec` of the
/// `Value` (`tests/it/fast.rs` holds the two to that over every code of real code systems).
pub(crate) fn concept_answer_text(cs: &CodeSystem, i: usize, display: Option<&str>) -> Vec<u8> {
    let c = &cs.concepts[i];
    let mut out = Out::new();
    out.param_str("code", "valueCode", &c.code);
    out.param_str("system", "valueUri", &cs.url);
    if let Some(n) = cs.name.as_ref().or(cs.title.as_ref()) {
        out.param_str("name", "valueString", n);
    }
    if let Some(v) = &cs.version {
        out.param_str("version", "valueString", v);
    }
    if let Some(d) = display {
        out.param_str("display", "valueString", d);
    }
    if let Some(d) = &c.definition {
        out.param_str("definition", "valueString", d);
    }
    out.param_bool("abstract", cs.is_abstract(i));
    let designation = |out: &mut Out, d: &crate::codesystem::Designation| {
        out.designation(
            d.language.as_deref(),
            d.source.as_deref(),
            d.use_.as_ref().map(Json::Value),
            &d.value,
        )
    };
    for d in c.designations.iter().filter(|d| d.source.is_none()) {
        designation(&mut out, d);
    }
    if let Some(value) = &c.display {
        out.designation(
            cs.language.as_deref(),
            None,
            Some(Json::Text(PREFERRED_FOR_LANGUAGE)),
            value,
        );
    }
    for d in c.designations.iter().filter(|d| d.source.is_some()) {
        designation(&mut out, d);
    }
    for s in &cs.applied_supplements {
        out.param_str("used-supplement", "valueCanonical", s);
    }
    for &p in &c.parents {
        let pc = &cs.concepts[p];
        out.property_code("parent", &pc.code, pc.display.as_deref());
    }
    for &ch in &c.children {
        let cc = &cs.concepts[ch];
        out.property_code("child", &cc.code, cc.display.as_deref());
    }
    out.property_bool("inactive", c.is_inactive());
    for p in &c.properties {
        if matches!(p.code.as_str(), "parent" | "child" | "inactive") {
            continue;
        }
        out.property_start(&p.code, None);
        out.string(&p.key);
        out.raw(":");
        out.value(&p.value);
        out.property_value_end();
    }
    out.finish()
}

/// `expansion::preferred_for_language()` as JSON text.
pub(crate) const PREFERRED_FOR_LANGUAGE: &str = r#"{"system":"http://terminology.hl7.org/CodeSystem/hl7TermMaintInfra","code":"preferredForLanguage","display":"Preferred For Language"}"#;

/// CodeSystem/$subsumes.
pub fn subsumes(ctx: &Ctx<'_>, params: &Params) -> Result<Value, TxError> {
    let (a, b, system) = match (
        params.complex("codingA", "valueCoding"),
        params.complex("codingB", "valueCoding"),
    ) {
        (Some(a), Some(b)) => (
            a["code"].as_str().unwrap_or_default().to_string(),
            b["code"].as_str().unwrap_or_default().to_string(),
            a["system"].as_str().map(str::to_string),
        ),
        _ => (
            params.str("codeA").unwrap_or_default(),
            params.str("codeB").unwrap_or_default(),
            params.str("system"),
        ),
    };
    let Some(system) = system else {
        return Err(TxError::invalid("No system provided for $subsumes"));
    };
    let cs = resolve(ctx, &system, params.str("version").as_deref())?;
    let find = |code: &str, name: &str| {
        cs.find(code).ok_or_else(|| {
            TxError::new(
                ErrorKind::NotFound,
                Issue::new(
                    Severity::Error,
                    "code-invalid",
                    Some("invalid-code"),
                    format!("Unknown code '{code}' in the CodeSystem '{}'", cs.url),
                )
                .at(name.to_string()),
            )
        })
    };
    if let Some(p) = &cs.provider {
        let outcome = p.subsumes(&a, &b).map_err(|code| {
            let name = if code == a { "codeA" } else { "codeB" };
            let mut e = unknown_code(&cs, &code);
            for i in e.issues.iter_mut() {
                i.expression = vec![name.to_string()];
            }
            e
        })?;
        return Ok(
            json!({"resourceType": "Parameters", "parameter": [{"name": "outcome", "valueCode": outcome}]}),
        );
    }
    let ia = find(&a, "codeA")?;
    let ib = find(&b, "codeB")?;
    let outcome = if ia == ib {
        "equivalent"
    } else if cs.subsumes(ia, ib) {
        "subsumes"
    } else if cs.subsumes(ib, ia) {
        "subsumed-by"
    } else {
        "not-subsumed"
    };
    Ok(
        json!({"resourceType": "Parameters", "parameter": [{"name": "outcome", "valueCode": outcome}]}),
    )
}

fn unknown_code(cs: &CodeSystem, code: &str) -> TxError {
    let text = match &cs.version {
        Some(v) => format!(
            "Unknown code '{code}' in the CodeSystem '{}' version '{v}'",
            cs.url
        ),
        None => format!("Unknown code '{code}' in the CodeSystem '{}'", cs.url),
    };
    TxError::new(
        ErrorKind::NotFound,
        Issue::new(Severity::Error, "code-invalid", Some("invalid-code"), text).at("code"),
    )
}
