//! Reading a tool's arguments, with errors an assistant can act on.

use crate::api::ToolError;
use serde_json::{Map, Value};

/// The arguments of one tool call.
pub(crate) struct Args<'a>(pub(crate) &'a Map<String, Value>);

impl Args<'_> {
    /// A required string argument, non-empty.
    pub(crate) fn string(&self, name: &str) -> Result<String, ToolError> {
        self.opt_string(name)?
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| {
                ToolError::new(format!("missing argument `{name}` (a non-empty string)"))
            })
    }

    /// An optional string argument; numbers are accepted as their decimal text (identifiers).
    pub(crate) fn opt_string(&self, name: &str) -> Result<Option<String>, ToolError> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(other) => Err(ToolError::new(format!(
                "argument `{name}` must be a string, not {other}"
            ))),
        }
    }

    /// An optional non-negative integer argument (numbers or their text).
    pub(crate) fn opt_u64(&self, name: &str) -> Result<Option<u64>, ToolError> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64()),
            Some(Value::String(s)) if s.trim().parse::<u64>().is_ok() => Ok(s.trim().parse().ok()),
            Some(other) => Err(ToolError::new(format!(
                "argument `{name}` must be a non-negative integer, not {other}"
            ))),
        }
    }

    /// An optional boolean argument.
    pub(crate) fn opt_bool(&self, name: &str) -> Result<Option<bool>, ToolError> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
            Some(other) => Err(ToolError::new(format!(
                "argument `{name}` must be true or false, not {other}"
            ))),
        }
    }

    /// Concept identifiers: one (an integer or its text) or an array of them, as Hermes's tools take them. The
    /// flag says whether an array was given (the answer is then an array too).
    pub(crate) fn ids(&self, name: &str) -> Result<(Vec<String>, bool), ToolError> {
        let one = |v: &Value| match v {
            Value::Number(n) if n.as_u64().is_some() => Ok(n.to_string()),
            Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
            other => Err(ToolError::new(format!(
                "argument `{name}` must hold SNOMED CT identifiers (integers), not {other}"
            ))),
        };
        match self.0.get(name) {
            None | Some(Value::Null) => Err(ToolError::new(format!(
                "missing argument `{name}` (a SNOMED CT identifier or an array of them)"
            ))),
            Some(Value::Array(items)) if items.is_empty() => Err(ToolError::new(format!(
                "argument `{name}` is an empty array"
            ))),
            Some(Value::Array(items)) if items.len() > crate::tools::MAX_IDS => {
                Err(ToolError::new(format!(
                    "argument `{name}` has {} identifiers; at most {} per call",
                    items.len(),
                    crate::tools::MAX_IDS
                )))
            }
            Some(Value::Array(items)) => {
                Ok((items.iter().map(one).collect::<Result<_, _>>()?, true))
            }
            Some(v) => Ok((vec![one(v)?], false)),
        }
    }

    /// A list of strings: an array, or one string.
    pub(crate) fn strings(&self, name: &str) -> Result<Vec<String>, ToolError> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(vec![s.clone()]),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str().map(str::to_string).ok_or_else(|| {
                        ToolError::new(format!("argument `{name}` must hold strings, not {v}"))
                    })
                })
                .collect(),
            Some(other) => Err(ToolError::new(format!(
                "argument `{name}` must be a string or an array of strings, not {other}"
            ))),
        }
    }
}

/// A query string of the pairs whose value is present.
pub(crate) fn query(pairs: &[(&str, Option<String>)]) -> String {
    let mut q = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        if let Some(v) = v {
            q.append_pair(k, v);
        }
    }
    q.finish()
}

/// One path segment, percent-encoded.
pub(crate) fn segment(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}
