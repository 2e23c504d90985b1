//! ValueSet `compose.include.filter`: compiled once per include, then tested against each concept.

use crate::codesystem::CodeSystem;
use crate::error::{ErrorKind, Issue, Severity, TxError};
use serde_json::Value;

/// A compiled filter.
#[derive(Debug)]
pub struct Filter {
    property: String,
    op: Op,
}

#[derive(Debug)]
enum Op {
    IsA(Option<usize>),
    DescendentOf(Option<usize>),
    IsNotA(Option<usize>),
    Generalizes(Option<usize>),
    ChildOf(Option<usize>),
    Equals(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Regex(regex::Regex),
    Exists(bool),
    /// LOINC's `LIST = LL...` and `answers-for = <term or LL>`: answers whose `AnswerList` is one of these.
    AnswerOf(Vec<String>),
}

impl Filter {
    /// Compiles `f` (a `compose.include.filter` element) for code system `cs`; `path` locates it in messages.
    pub fn compile(cs: &CodeSystem, f: &Value, path: &str) -> Result<Filter, TxError> {
        let property = f["property"].as_str().unwrap_or_default().to_string();
        // R5-only operators (`child-of`, ...) reach an R4 server as the cross-version extension on `_op`.
        let op_name = f["op"].as_str().unwrap_or_else(|| {
            f["_op"]["extension"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|e| {
                    e["url"]
                        == "http://hl7.org/fhir/5.0/StructureDefinition/extension-ValueSet.compose.include.filter.op"
                })
                .and_then(|e| e["valueCode"].as_str())
                .unwrap_or_default()
        });
        let Some(value) = f["value"].as_str().filter(|v| !v.is_empty()) else {
            return Err(TxError::new(
                ErrorKind::Invalid,
                Issue::new(
                    Severity::Error,
                    "invalid",
                    Some("vs-invalid"),
                    format!(
                        "The system {} filter with property = {property}, op = {op_name} has no value",
                        cs.url
                    ),
                )
                .at(path.to_string()),
            ));
        };
        let concept = || cs.find(value);
        let list = || value.split(',').map(|s| s.trim().to_string()).collect();
        let op = match op_name {
            "=" if matches!(property.as_str(), "LIST" | "answers-for") => {
                // A term stands for its answer lists.
                let lists: Vec<String> = concept()
                    .map(|i| {
                        cs.concepts[i]
                            .properties
                            .iter()
                            .filter(|p| p.code == "answer-list")
                            .map(|p| p.text())
                            .collect()
                    })
                    .filter(|l: &Vec<String>| !l.is_empty())
                    .unwrap_or_else(|| vec![value.to_string()]);
                Op::AnswerOf(lists)
            }
            "is-a" => Op::IsA(concept()),
            "descendent-of" => Op::DescendentOf(concept()),
            "is-not-a" => Op::IsNotA(concept()),
            "generalizes" => Op::Generalizes(concept()),
            "child-of" => Op::ChildOf(concept()),
            "=" => Op::Equals(value.to_string()),
            "in" => Op::In(list()),
            "not-in" => Op::NotIn(list()),
            "exists" => Op::Exists(value == "true"),
            "regex" => match regex::Regex::new(&format!("^(?:{value})$")) {
                Ok(r) => Op::Regex(r),
                Err(e) => {
                    return Err(TxError::new(
                        ErrorKind::Invalid,
                        Issue::new(
                            Severity::Error,
                            "invalid",
                            Some("vs-invalid"),
                            format!("The regex '{value}' is not valid: {e}"),
                        )
                        .at(path.to_string()),
                    ));
                }
            },
            other => {
                return Err(TxError::new(
                    ErrorKind::NotSupported,
                    Issue::new(
                        Severity::Error,
                        "not-supported",
                        Some("vs-invalid"),
                        format!(
                            "The filter operation '{other}' is not supported for the code system {}",
                            cs.url
                        ),
                    )
                    .at(path.to_string()),
                ));
            }
        };
        Ok(Filter { property, op })
    }

    /// Whether concept `i` of `cs` passes.
    pub fn matches(&self, cs: &CodeSystem, i: usize) -> bool {
        let is_concept = matches!(self.property.as_str(), "concept" | "code");
        match &self.op {
            Op::IsA(t) => t.is_some_and(|t| cs.subsumes(t, i)),
            Op::DescendentOf(t) => t.is_some_and(|t| t != i && cs.subsumes(t, i)),
            Op::IsNotA(t) => !t.is_some_and(|t| cs.subsumes(t, i)),
            Op::Generalizes(t) => t.is_some_and(|t| cs.subsumes(i, t)),
            Op::ChildOf(t) => t.is_some_and(|t| cs.concepts[i].parents.contains(&t)),
            Op::Equals(v) => self.values(cs, i, is_concept).iter().any(|x| x == v),
            Op::In(vs) => self
                .values(cs, i, is_concept)
                .iter()
                .any(|x| vs.contains(x)),
            Op::NotIn(vs) => !self
                .values(cs, i, is_concept)
                .iter()
                .any(|x| vs.contains(x)),
            Op::Regex(r) => self.values(cs, i, is_concept).iter().any(|x| r.is_match(x)),
            Op::Exists(want) => self.values(cs, i, is_concept).is_empty() != *want,
            Op::AnswerOf(lists) => cs.concepts[i]
                .properties
                .iter()
                .any(|p| p.code == "AnswerList" && lists.contains(&p.text())),
        }
    }

    fn values(&self, cs: &CodeSystem, i: usize, is_concept: bool) -> Vec<String> {
        let c = &cs.concepts[i];
        if is_concept {
            return vec![c.code.clone()];
        }
        match self.property.as_str() {
            "display" => c.display.clone().into_iter().collect(),
            "definition" => c.definition.clone().into_iter().collect(),
            "inactive" if c.property("inactive").is_none() => vec![c.is_inactive().to_string()],
            "parent" => c
                .parents
                .iter()
                .map(|&p| cs.concepts[p].code.clone())
                .collect(),
            "child" => c
                .children
                .iter()
                .map(|&p| cs.concepts[p].code.clone())
                .collect(),
            // A Coding value matches by code or by display (LOINC axes: `COMPONENT = LP14635-4` or `= Glucose`).
            p => c
                .properties
                .iter()
                .filter(|v| v.code == p)
                .flat_map(|v| {
                    let display = v.value["display"].as_str().map(str::to_string);
                    std::iter::once(v.text()).chain(display)
                })
                .collect(),
        }
    }
}
