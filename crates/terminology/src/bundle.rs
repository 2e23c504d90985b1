//! Writing imported content (LOINC, ICD-10-CM) into the data directory as a FHIR `collection` Bundle, the form
//! [`crate::load_data_dir`] reads back from `<data>/terminology`.

use crate::error::LoadError;
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;

/// Writes `resources` to `path` as a collection Bundle. The file is written beside its final name and renamed
/// into place, so a server starting meanwhile sees the old content or the new, never half a file.
pub fn write_bundle(path: &Path, resources: Vec<Value>) -> Result<(), LoadError> {
    let io = |source| LoadError::Io {
        path: path.display().to_string(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let tmp = path.with_extension("json.partial");
    let bundle = json!({
        "resourceType": "Bundle",
        "type": "collection",
        "entry": resources.into_iter().map(|r| json!({"resource": r})).collect::<Vec<_>>(),
    });
    let file = std::fs::File::create(&tmp).map_err(io)?;
    let mut w = std::io::BufWriter::new(file);
    serde_json::to_writer(&mut w, &bundle).map_err(|e| io(e.into()))?;
    w.flush().map_err(io)?;
    w.get_ref().sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}
