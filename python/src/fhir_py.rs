//! `thoth.fhir`: FHIR R4 resources in JSON, XML and the binary encoding, over the `fhir` facade.
//!
//! Every read validates against the R4 definitions (unknown elements, wrong types and bad primitives are
//! errors, as in `thoth fhir convert`); dicts come from the facade's own JSON, so decimals and primitive
//! extensions read as FHIR JSON says.

use std::io::BufReader;
use std::sync::Mutex;

use fhir::{Format, NdjsonReader, ReadOptions, Resource};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::{error, json_bytes_to_py};

/// Registers the classes and functions of `thoth.fhir` in `m`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NdjsonIter>()?;
    m.add_function(wrap_pyfunction!(convert, m)?)?;
    m.add_function(wrap_pyfunction!(loads, m)?)?;
    m.add_function(wrap_pyfunction!(dumps, m)?)?;
    m.add_function(wrap_pyfunction!(detect_format, m)?)?;
    m.add_function(wrap_pyfunction!(iter_ndjson, m)?)?;
    m.add("PROTO_SCHEMA", fhir::PROTO_SCHEMA)?;
    Ok(())
}

/// A format name as the CLI spells it (`--from`, `--to`).
fn format(name: &str) -> PyResult<Format> {
    match name {
        "json" => Ok(Format::Json),
        "xml" => Ok(Format::Xml),
        "pb" | "protobuf" => Ok(Format::Protobuf),
        other => Err(error(format!(
            "unknown FHIR format {other:?}; one of json, xml, pb"
        ))),
    }
}

fn format_name(f: Format) -> &'static str {
    match f {
        Format::Xml => "xml",
        Format::Protobuf => "pb",
        _ => "json",
    }
}

/// The bytes of `data` (`str` as UTF-8).
fn input_bytes(data: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = data.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(s) = data.cast::<PyString>() {
        return Ok(s.to_cow()?.as_bytes().to_vec());
    }
    data.extract::<Vec<u8>>().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err("expected bytes or str (FHIR JSON, XML or binary)")
    })
}

fn options(lenient: bool) -> ReadOptions {
    if lenient {
        ReadOptions::lenient()
    } else {
        ReadOptions::default()
    }
}

/// Reads `bytes` in `src` (detected when `None`), with the CLI's error message.
fn read(bytes: &[u8], src: Option<Format>, opts: &ReadOptions) -> Result<Resource, String> {
    let r = match src {
        None => Resource::from_bytes(bytes, opts),
        Some(Format::Xml) => Resource::from_xml_with(bytes, opts),
        Some(Format::Protobuf) => Resource::from_protobuf_with(bytes, opts),
        Some(_) => Resource::from_json_with(bytes, opts),
    };
    r.map_err(|e| e.to_string())
}

/// Converts a resource between formats: ``src`` is ``"json"``, ``"xml"`` or ``"pb"`` (detected when
/// ``None``), ``dst`` likewise; returns the bytes of the target encoding. Lossless in every direction.
/// ``lenient=True`` keeps unknown JSON properties (they can only be written as JSON).
#[pyfunction]
#[pyo3(signature = (data, src = None, dst = "json", pretty = false, lenient = false))]
fn convert<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    src: Option<&str>,
    dst: &str,
    pretty: bool,
    lenient: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = input_bytes(data)?;
    let src = src.map(format).transpose()?;
    let dst = format(dst)?;
    let out = py.detach(|| {
        let r = read(&bytes, src, &options(lenient))?;
        r.to_format(dst, pretty).map_err(|e| e.to_string())
    });
    Ok(PyBytes::new(py, &out.map_err(error)?))
}

/// Reads a resource (FHIR JSON, XML or binary, detected unless ``src`` says) and returns it as a plain dict,
/// validated against the R4 definitions. Raises ``ThothError`` with the element's path for invalid input.
#[pyfunction]
#[pyo3(signature = (data, src = None, lenient = false))]
fn loads<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    src: Option<&str>,
    lenient: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let bytes = input_bytes(data)?;
    let src = src.map(format).transpose()?;
    let json = py
        .detach(|| read(&bytes, src, &options(lenient)).map(|r| r.to_json()))
        .map_err(error)?;
    json_bytes_to_py(py, &json)
}

/// Writes a resource given as a dict (or FHIR JSON text) in ``dst`` (``"json"``, ``"xml"`` or ``"pb"``),
/// validating it first.
#[pyfunction]
#[pyo3(signature = (resource, dst = "json", pretty = false))]
fn dumps<'py>(
    py: Python<'py>,
    resource: &Bound<'py, PyAny>,
    dst: &str,
    pretty: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let dst = format(dst)?;
    let json = if resource.is_instance_of::<pyo3::types::PyDict>() {
        let value: serde_json::Value =
            pythonize::depythonize(resource).map_err(|e| error(e.to_string()))?;
        serde_json::to_vec(&value).map_err(|e| error(e.to_string()))?
    } else {
        input_bytes(resource)?
    };
    let out = py.detach(|| {
        let r = read(&json, Some(Format::Json), &ReadOptions::default())?;
        r.to_format(dst, pretty).map_err(|e| e.to_string())
    });
    Ok(PyBytes::new(py, &out.map_err(error)?))
}

/// The format of ``data`` by its first byte: ``"json"``, ``"xml"`` or ``"pb"``.
#[pyfunction]
fn detect_format(data: &Bound<'_, PyAny>) -> PyResult<&'static str> {
    Ok(format_name(fhir::detect_format(&input_bytes(data)?)))
}

/// Iterates over the resources of an NDJSON file (FHIR Bulk Data), one dict per line, reading line by line.
/// Raises ``ThothError`` at an invalid line (the message names the line), ``OSError`` when the file cannot be
/// read.
#[pyfunction]
#[pyo3(signature = (path, lenient = false))]
fn iter_ndjson(py: Python<'_>, path: std::path::PathBuf, lenient: bool) -> PyResult<NdjsonIter> {
    let file = py.detach(|| std::fs::File::open(&path))?;
    Ok(NdjsonIter {
        name: path.display().to_string(),
        reader: Mutex::new(NdjsonReader::new(BufReader::new(file), options(lenient))),
    })
}

/// An iterator of dicts over an NDJSON file (``iter_ndjson``).
#[pyclass(frozen, module = "thoth.fhir", name = "NdjsonIter")]
pub struct NdjsonIter {
    name: String,
    reader: Mutex<NdjsonReader<BufReader<std::fs::File>>>,
}

#[pymethods]
impl NdjsonIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let mut guard = self
            .reader
            .lock()
            .map_err(|_| error("the iterator failed earlier"))?;
        let reader: &mut NdjsonReader<_> = &mut guard;
        let next = py.detach(|| reader.next().map(|r| r.map(|r| r.to_json())));
        match next {
            None => Ok(None),
            Some(Err(e)) => Err(error(format!("reading {}: {e}", self.name))),
            Some(Ok(json)) => json_bytes_to_py(py, &json).map(Some),
        }
    }
}
