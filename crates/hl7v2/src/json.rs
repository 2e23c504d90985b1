//! The JSON view of a message: a documented, lossless-for-values shape for people and scripts.

use serde_json::{Map, Value as Json, json};

use crate::message::{Level, Value};
use crate::{Message, Severity};

/// The JSON view of a message.
///
/// ```json
/// {
///   "delimiters": "|^~\\&",
///   "charset": "UNICODE UTF-8",
///   "segments": [
///     { "id": "MSH", "fields": ["|", "^~\\&", "HIS", "", ..., ["ADT", "A01", "ADT_A01"], ...] },
///     { "id": "PID", "fields": ["1", "", {"repetitions": [["7", "", "", "H"], "8"]}, "", ["DOE", "JOHN"]] }
///   ],
///   "diagnostics": [ { "severity": "warning", "kind": "...", "message": "...", "offset": 0, "segment": 1, "field": 0 } ]
/// }
/// ```
///
/// - `fields[i]` is field `i + 1` (so in MSH, `fields[0]` is MSH-1, the field separator); every field up to the
///   last present one is listed, empty ones as `""`.
/// - A field with one repetition is that repetition; a field with several is `{"repetitions": [...]}`.
/// - A repetition with one component is a string, else an array of components.
/// - A component with one subcomponent is a string, else an array of subcomponent strings.
/// - Strings are decoded text (escape sequences resolved, character set applied); MSH-1 and MSH-2 are verbatim.
/// - `diagnostics` is present only when the parser reported something.
pub fn to_json(msg: &Message<'_>) -> Json {
    let segments: Vec<Json> = msg
        .segments()
        .map(|seg| {
            let fields: Vec<Json> = seg.fields().map(field).collect();
            json!({ "id": String::from_utf8_lossy(seg.id_bytes()), "fields": fields })
        })
        .collect();
    let d = msg.delimiters();
    let mut delims = vec![d.field];
    delims.extend(d.encoding_characters());
    let mut out = Map::new();
    out.insert("delimiters".into(), String::from_utf8_lossy(&delims).into());
    out.insert("charset".into(), msg.charset().msh18_name().into());
    out.insert("segments".into(), segments.into());
    if !msg.diagnostics().is_empty() {
        let diags: Vec<Json> = msg
            .diagnostics()
            .iter()
            .map(|d| {
                json!({
                    "severity": match d.severity() { Severity::Error => "error", Severity::Warning => "warning" },
                    "kind": format!("{:?}", d.kind),
                    "message": d.kind.describe(),
                    "offset": d.location.offset,
                    "segment": d.location.segment,
                    "field": d.location.field,
                })
            })
            .collect();
        out.insert("diagnostics".into(), diags.into());
    }
    Json::Object(out)
}

/// The JSON view of [`to_json`], carrying names: `structure` and `version` at the top (from the group tree), and
/// per segment its group `path` (`/PATIENT_RESULT(0)/PATIENT(0)/PID(0)`), its readable `name` and `names`, the
/// readable name of each field (`names[i]` names `fields[i]`; `""` where the version does not define the field).
pub fn to_json_with_names(msg: &Message<'_>) -> Json {
    let mut out = to_json(msg);
    let tree = msg.group_tree();
    let defs = tree.version().definitions();
    if let Some(obj) = out.as_object_mut() {
        obj.insert("structure".into(), tree.structure_id().into());
        obj.insert("version".into(), tree.version().as_str().into());
        if let Some(Json::Array(segments)) = obj.get_mut("segments") {
            for (placed, seg) in tree.segments(msg).zip(segments.iter_mut()) {
                let def = defs.segment(placed.segment.id());
                let count = seg
                    .get("fields")
                    .and_then(Json::as_array)
                    .map_or(0, Vec::len);
                let names: Vec<Json> = (0..count)
                    .map(|i| {
                        def.and_then(|d| d.fields.get(i))
                            .map_or("", |f| &*f.name)
                            .into()
                    })
                    .collect();
                if let Some(s) = seg.as_object_mut() {
                    s.insert("path".into(), placed.path().into());
                    s.insert("name".into(), def.map_or("", |d| &*d.name).into());
                    s.insert("names".into(), names.into());
                }
            }
        }
    }
    out
}

fn field(v: Value<'_>) -> Json {
    if v.level() == Level::Verbatim {
        return v.text().into_owned().into();
    }
    let mut reps = v.parts();
    let first = reps.next().map(repetition).unwrap_or_default();
    let rest: Vec<Json> = reps.map(repetition).collect();
    if rest.is_empty() {
        first
    } else {
        let mut all = vec![first];
        all.extend(rest);
        json!({ "repetitions": all })
    }
}

fn repetition(v: Value<'_>) -> Json {
    collapse(v.parts().map(component).collect())
}

fn component(v: Value<'_>) -> Json {
    collapse(
        v.parts()
            .map(|s| Json::from(s.text().into_owned()))
            .collect(),
    )
}

/// One part stands for itself; several make an array.
fn collapse(mut parts: Vec<Json>) -> Json {
    if parts.len() == 1 {
        parts.pop().unwrap_or_default()
    } else {
        Json::Array(parts)
    }
}
