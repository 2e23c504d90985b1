//! Reading a FHIR `Parameters` resource: the input of every operation, whether it came as a POST body or was
//! built from a GET query string.

use serde_json::{Value, json};

/// An operation's input parameters.
#[derive(Debug, Clone, Default)]
pub struct Params {
    entries: Vec<Value>,
}

impl Params {
    /// Reads a Parameters resource; anything else has no parameters.
    pub fn from_json(v: &Value) -> Params {
        Params {
            entries: v
                .get("parameter")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        }
    }

    /// Builds parameters from query pairs (`name=value`), typing values by name.
    pub fn from_query(pairs: &[(String, String)]) -> Params {
        let mut entries = Vec::new();
        for (k, v) in pairs {
            let value = match k.as_str() {
                "activeOnly"
                | "includeDesignations"
                | "excludeNested"
                | "includeDefinition"
                | "abstract"
                | "lenient-display-validation"
                | "inferSystem"
                | "valueset-membership-only"
                | "excludeNotForUI"
                | "excludePostCoordinated" => {
                    json!({"name": k, "valueBoolean": v == "true"})
                }
                "count" | "offset" => match v.parse::<i64>() {
                    Ok(n) => json!({"name": k, "valueInteger": n}),
                    Err(_) => json!({"name": k, "valueString": v}),
                },
                "coding" => {
                    let (system, code) = v.split_once('|').unwrap_or(("", v));
                    json!({"name": k, "valueCoding": {"system": system, "code": code}})
                }
                _ => json!({"name": k, "valueString": v}),
            };
            entries.push(value);
        }
        Params { entries }
    }

    /// All entries.
    pub fn entries(&self) -> &[Value] {
        &self.entries
    }

    /// Adds an entry.
    pub fn push(&mut self, entry: Value) {
        self.entries.push(entry);
    }

    /// The entries named `name`.
    pub fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.entries.iter().filter(move |e| e["name"] == name)
    }

    fn named_owned(&self, name: &str) -> impl Iterator<Item = &Value> {
        let name = name.to_string();
        self.entries
            .iter()
            .filter(move |e| e["name"] == name.as_str())
    }

    /// These parameters without the entries named `names`.
    pub fn without(&self, names: &[&str]) -> Params {
        let mut out = Params::default();
        for e in self.entries() {
            if !e["name"].as_str().is_some_and(|n| names.contains(&n)) {
                out.push(e.clone());
            }
        }
        out
    }

    /// Whether a parameter `name` is present.
    pub fn has(&self, name: &str) -> bool {
        self.named(name).next().is_some()
    }

    /// The primitive value of the first `name` parameter, as text.
    pub fn str(&self, name: &str) -> Option<String> {
        self.named(name).find_map(primitive)
    }

    /// All primitive values of `name`.
    pub fn strs(&self, name: &str) -> Vec<String> {
        self.named(name).filter_map(primitive).collect()
    }

    /// A boolean parameter (`valueBoolean`, or the text `true`/`false`).
    pub fn bool(&self, name: &str) -> Option<bool> {
        let e = self.named(name).next()?;
        if let Some(b) = e["valueBoolean"].as_bool() {
            return Some(b);
        }
        primitive(e).map(|s| s == "true")
    }

    /// An integer parameter.
    pub fn int(&self, name: &str) -> Option<i64> {
        let e = self.named(name).next()?;
        e["valueInteger"]
            .as_i64()
            .or_else(|| primitive(e).and_then(|s| s.parse().ok()))
    }

    /// The resource of the first `name` parameter.
    pub fn resource(&self, name: &str) -> Option<&Value> {
        self.named_owned(name).find_map(|e| e.get("resource"))
    }

    /// The resources of all `name` parameters.
    pub fn resources(&self, name: &str) -> Vec<&Value> {
        self.named_owned(name)
            .filter_map(|e| e.get("resource"))
            .collect()
    }

    /// A complex value (`valueCoding`, `valueCodeableConcept`) of the first `name` parameter.
    pub fn complex(&self, name: &str, key: &str) -> Option<&Value> {
        self.named_owned(name).find_map(|e| e.get(key))
    }
}

/// The primitive `value[x]` of a parameter entry as text.
pub fn primitive(e: &Value) -> Option<String> {
    let o = e.as_object()?;
    for (k, v) in o {
        if k.starts_with("value") {
            return match v {
                Value::String(s) => Some(s.clone()),
                Value::Bool(b) => Some(b.to_string()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            };
        }
    }
    None
}
