//! The HL7 v2 tools that have no HTTP route: the named view of a message and the meaning of a field path.

use crate::api::ToolError;
use crate::args::Args;
use serde_json::{Value, json};

/// How many codes of a table `hl7_explain` lists.
const MAX_TABLE_CODES: usize = 100;

/// The message as a v2 parser wants it: an assistant pastes segments separated by LF or CRLF, v2 separates them
/// by CR.
pub(crate) fn message_bytes(text: &str) -> Vec<u8> {
    let text = text.trim().replace("\r\n", "\r").replace('\n', "\r");
    let mut bytes = text.into_bytes();
    bytes.push(b'\r');
    bytes
}

fn version(a: &Args<'_>) -> Result<Option<hl7v2::Version>, ToolError> {
    match a.opt_string("version")? {
        None => Ok(None),
        Some(v) => hl7v2::Version::parse(&v).map(Some).ok_or_else(|| {
            let all: Vec<_> = hl7v2::Version::ALL.iter().map(|v| v.as_str()).collect();
            ToolError::new(format!("version {v:?}: expected one of {}", all.join(", ")))
        }),
    }
}

/// `hl7_parse`: `hl7v2::to_json_with_names` of the first message of the text.
pub(crate) fn parse(a: &Args<'_>) -> Result<Value, ToolError> {
    let bytes = message_bytes(&a.string("message")?);
    let options = server::validation_parse_options(version(a)?);
    let chunk = hl7v2::split(&bytes)
        .find(|c| c.kind == hl7v2::ChunkKind::Message)
        .ok_or_else(|| {
            ToolError::new("the text holds no HL7 v2 message: no segment starts with MSH")
        })?;
    let msg = chunk.parse_with(&options);
    Ok(hl7v2::to_json_with_names(&msg))
}

/// `hl7_explain`: what a path names in a version's definitions, and its value in the message when given.
pub(crate) fn explain(a: &Args<'_>) -> Result<Value, ToolError> {
    let text = a.string("path")?;
    let path = hl7v2::Path::parse(text.trim()).map_err(|e| {
        ToolError::new(format!(
            "{e}; a path is SEGMENT-field[-component[-subcomponent]], e.g. PID-8 or PID-11-3"
        ))
    })?;
    let message = a.opt_string("message")?.map(|m| message_bytes(&m));
    let parsed = message.as_deref().map(hl7v2::Message::parse);
    // The version: the argument, else the message's MSH-12, else 2.5.1.
    let version = match version(a)? {
        Some(v) => v,
        None => parsed
            .as_ref()
            .and_then(|m| m.get("MSH-12"))
            .and_then(|v| hl7v2::Version::parse(&v))
            .unwrap_or(hl7v2::Version::V2_5_1),
    };
    let defs = version.definitions();
    let seg = defs.segment(path.segment_id()).ok_or_else(|| {
        ToolError::new(format!(
            "HL7 v{} defines no segment {}",
            version.as_str(),
            path.segment_id()
        ))
    })?;
    let element = defs.element(&path).ok_or_else(|| {
        ToolError::new(format!(
            "{} has {} fields in v{}; {text} names none of them (or a component its data type lacks)",
            seg.id,
            seg.fields.len(),
            version.as_str()
        ))
    })?;
    let field = seg.fields.get(path.field.saturating_sub(1));
    let mut out = json!({
        "path": text.trim(),
        "version": version.as_str(),
        "segment": {"id": &*seg.id, "name": &*seg.name},
        "name": element.name,
        "data_type": element.data_type,
        "max_length": element.length,
    });
    if path.component.is_none()
        && let Some(f) = field
    {
        out["required"] = json!(f.min > 0);
        out["repeats"] = json!(match f.max {
            None => "unbounded".to_string(),
            Some(0) => "withdrawn".to_string(),
            Some(n) => format!("at most {n}"),
        });
    }
    if let Some(dt) = defs.data_type(element.data_type)
        && !dt.components.is_empty()
    {
        let comps: Vec<Value> = dt
            .components
            .iter()
            .enumerate()
            .map(|(i, c)| json!({"component": i + 1, "name": &*c.name, "data_type": &*c.data_type, "table": c.table}))
            .collect();
        out["components"] = json!(comps);
    }
    if let Some(t) = element.table {
        let mut table = json!({"id": format!("{t:04}")});
        if let Some(def) = defs.table(t) {
            table["name"] = json!(&*def.name);
            let codes: Vec<Value> = def
                .codes
                .iter()
                .take(MAX_TABLE_CODES)
                .map(|c| json!({"code": &*c.code, "display": c.display.as_deref()}))
                .collect();
            table["codes"] = json!(codes);
            if def.codes.len() > MAX_TABLE_CODES {
                table["note"] = json!(format!(
                    "the first {MAX_TABLE_CODES} of {} codes",
                    def.codes.len()
                ));
            }
        }
        out["table"] = table;
    }
    if let Some(msg) = &parsed {
        let value = msg.get(&path).map(|v| v.into_owned());
        if let (Some(v), Some(t)) = (&value, element.table.and_then(|t| defs.table(t))) {
            out["value_display"] = json!(t.display(v));
            out["value_in_table"] = json!(t.contains(v));
        }
        out["value"] = json!(value);
    }
    Ok(out)
}
