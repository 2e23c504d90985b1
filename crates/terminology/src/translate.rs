//! `ConceptMap/$translate`, forward (source code to targets) and reverse (target code to sources), over R4
//! (`equivalence`) and R5 (`relationship`) shaped concept maps.

use crate::context::Ctx;
use crate::error::TxError;
use crate::params::Params;
use serde_json::{Value, json};
use std::sync::Arc;

/// ConceptMap/$translate.
pub fn translate(ctx: &Ctx<'_>, params: &Params) -> Result<Value, TxError> {
    let coding = params
        .complex("coding", "valueCoding")
        .or_else(|| params.complex("sourceCoding", "valueCoding"))
        .cloned();
    let (mut code, mut system) = (
        params.str("code").or_else(|| params.str("sourceCode")),
        params.str("system").or_else(|| params.str("sourceSystem")),
    );
    if let Some(c) = &coding {
        code = c["code"].as_str().map(str::to_string);
        system = c["system"].as_str().map(str::to_string);
    }
    let reverse_code = params.str("targetCode");
    // R5 spells it `targetSystem`; R4 `targetsystem`. In R4, `target` is the value set in which a translation
    // is sought (not a code system), and `reverse=true` asks for the sources of `code`.
    let target_system = params
        .str("targetSystem")
        .or_else(|| params.str("targetsystem"))
        .filter(|_| reverse_code.is_none());
    let target_value_set = params.str("target");
    let r4_reverse = params.bool("reverse") == Some(true);
    let reverse = (reverse_code.is_some() && code.is_none()) || r4_reverse;
    let (code, system) = if reverse && !r4_reverse {
        (reverse_code, params.str("targetSystem"))
    } else {
        (code, system)
    };
    let Some(code) = code else {
        return Err(TxError::invalid(
            "No code to translate (sourceCode, sourceCoding, code, coding or targetCode)",
        ));
    };

    // Implicit maps of a provider (`http://snomed.info/sct?fhir_cm=900000000000526001`).
    if let Some(url) = params.str("url").filter(|u| u.contains("?fhir_cm=")) {
        let system_of_map = url.split('?').next().unwrap_or_default();
        if let Some(p) = ctx.providers.iter().find(|p| p.system() == system_of_map) {
            let targets = p.implicit_map(&url, &code, reverse).ok_or_else(|| {
                TxError::not_found(format!(
                    "A definition for the ConceptMap '{url}' could not be found"
                ))
            })?;
            let mut out = vec![json!({"name": "result", "valueBoolean": !targets.is_empty()})];
            if targets.is_empty() {
                out.push(json!({"name": "message", "valueString": format!("No translations found for code '{code}'")}));
            }
            for t in targets {
                let mut concept = json!({"system": t.system, "code": t.code});
                if let Some(d) = t.display {
                    concept["display"] = json!(d);
                }
                out.push(json!({"name": "match", "part": [
                    {"name": "equivalence", "valueCode": t.equivalence},
                    {"name": "concept", "valueCoding": concept},
                    {"name": "originMap", "valueCanonical": url},
                ]}));
            }
            return Ok(json!({"resourceType": "Parameters", "parameter": out}));
        }
    }
    let maps: Vec<Arc<Value>> = match params.resource("conceptMap") {
        Some(m) => vec![Arc::new(m.clone())],
        None => match params.str("url") {
            Some(u) => ctx.find_cm(&u).into_iter().collect(),
            // Every map the request carries counts, even two with one url and version (the overlay keeps the
            // last of those), then the server's.
            None => params
                .resources("tx-resource")
                .into_iter()
                .filter(|r| r["resourceType"] == "ConceptMap")
                .map(|r| Arc::new(r.clone()))
                .chain(ctx.base.concept_maps().cloned())
                .collect(),
        },
    };
    let mut matches = Vec::new();
    for map in &maps {
        if let Some(vs) = target_value_set.as_deref()
            && target_scope(map).is_some_and(|scope| Some(scope) != vs.split('|').next())
        {
            continue;
        }
        let origin = match map["version"].as_str() {
            Some(v) => format!("{}|{v}", map["url"].as_str().unwrap_or("")),
            None => map["url"].as_str().unwrap_or("").to_string(),
        };
        for group in map["group"].as_array().into_iter().flatten() {
            let source = group["source"].as_str().unwrap_or("");
            let target = group["target"].as_str().unwrap_or("");
            let (from, to) = if reverse {
                (target, source)
            } else {
                (source, target)
            };
            if system.as_deref().is_some_and(|s| s != from) {
                continue;
            }
            if !reverse && target_system.as_deref().is_some_and(|t| t != to) {
                continue;
            }
            if reverse && params.str("sourceSystem").is_some_and(|s| s != to) {
                continue;
            }
            for element in group["element"].as_array().into_iter().flatten() {
                for t in element["target"].as_array().into_iter().flatten() {
                    let (here, there) = if reverse {
                        (t["code"].as_str(), element["code"].as_str())
                    } else {
                        (element["code"].as_str(), t["code"].as_str())
                    };
                    if here != Some(code.as_str()) {
                        continue;
                    }
                    let equivalence = t["equivalence"]
                        .as_str()
                        .or_else(|| t["relationship"].as_str())
                        .unwrap_or("equivalent");
                    let mut concept = json!({"system": to});
                    if let Some(c) = there {
                        concept["code"] = json!(c);
                    }
                    let display = if reverse {
                        element["display"].as_str()
                    } else {
                        t["display"].as_str()
                    };
                    if let Some(d) = display {
                        concept["display"] = json!(d);
                    }
                    let mut parts = vec![
                        json!({"name": "equivalence", "valueCode": r4_equivalence(equivalence)}),
                        json!({"name": "concept", "valueCoding": concept}),
                        json!({"name": "originMap", "valueCanonical": origin}),
                    ];
                    if reverse {
                        // As tx.fhir.org answers a reverse translation: `concept` is the target coding asked
                        // about, `source` the source coding that maps to it.
                        parts[1] = json!({"name": "concept", "valueCoding": {"system": from, "code": code}});
                        parts.push(json!({"name": "source", "valueCoding": concept}));
                    }
                    matches.push(json!({"name": "match", "part": parts}));
                }
            }
        }
    }
    let result = !matches.is_empty();
    let mut out = vec![json!({"name": "result", "valueBoolean": result})];
    if !result {
        out.push(json!({"name": "message", "valueString": format!("No translations found for code '{code}'")}));
    }
    out.extend(matches);
    Ok(json!({"resourceType": "Parameters", "parameter": out}))
}

/// The value set a map translates into (R4 `targetUri`/`targetCanonical`, R5 `targetScope*`), without a
/// version, if the map declares one.
fn target_scope(map: &Value) -> Option<&str> {
    [
        "targetUri",
        "targetCanonical",
        "targetScopeUri",
        "targetScopeCanonical",
    ]
    .iter()
    .find_map(|k| map[*k].as_str())
    .map(|u| u.split('|').next().unwrap_or(u))
}

/// R5 relationship codes in R4's equivalence vocabulary.
fn r4_equivalence(code: &str) -> &str {
    match code {
        "related-to" => "relatedto",
        "source-is-narrower-than-target" => "narrower",
        "source-is-broader-than-target" => "wider",
        "not-related-to" => "unmatched",
        other => other,
    }
}
