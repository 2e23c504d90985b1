//! Thoth from Python: the compiled module `thoth._native` behind the `thoth` package.
//!
//! Thin wrappers over the facades, nothing of their own: `hl7` over `hl7v2` (and `v2fhir` for `to_fhir`),
//! `fhir` over `fhir`, `terminology` over `terminology` and `snomed`. The Python package (`python/thoth`)
//! re-exports each submodule as `thoth.hl7`, `thoth.fhir` and `thoth.terminology` and carries the type stubs.
//!
//! Conventions kept by every wrapper:
//! - Work that can take long (a file, a conversion, a terminology operation) runs with the GIL released
//!   (`Python::detach`), so threads of one Python process parse and look up in parallel.
//! - Errors are `thoth.ThothError` (a `ValueError`) carrying the message the CLI prints for the same mistake;
//!   I/O errors are `OSError`.
//! - JSON answers become plain dicts and lists (`pythonize`), never model classes.

mod fhir_py;
mod hl7_py;
mod terminology_py;

use pyo3::prelude::*;

pyo3::create_exception!(
    thoth,
    ThothError,
    pyo3::exceptions::PyValueError,
    "An input Thoth cannot read or an operation it cannot do; the message is the CLI's."
);

/// A `ThothError` with `message`.
pub(crate) fn error(message: impl Into<String>) -> PyErr {
    ThothError::new_err(message.into())
}

/// A JSON value as Python objects (dict, list, str, int, float, bool, None).
pub(crate) fn to_py<'py>(
    py: Python<'py>,
    value: &serde_json::Value,
) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, value).map_err(|e| error(e.to_string()))
}

/// JSON text as Python objects, by the standard library's `json.loads`: a resource reads exactly as
/// `json.loads` reads its JSON (the same floats, to the last digit, and the same integers), and its C parser is
/// as fast as building the objects from Rust.
pub(crate) fn json_bytes_to_py<'py>(py: Python<'py>, json: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    static LOADS: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();
    let loads = LOADS.import(py, "json", "loads")?;
    loads.call1((pyo3::types::PyBytes::new(py, json),))
}

/// The compiled part of the `thoth` package.
#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("ThothError", py.get_type::<ThothError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    let hl7 = PyModule::new(py, "hl7")?;
    hl7_py::register(&hl7)?;
    m.add_submodule(&hl7)?;
    let fhir = PyModule::new(py, "fhir")?;
    fhir_py::register(&fhir)?;
    m.add_submodule(&fhir)?;
    let terminology = PyModule::new(py, "terminology")?;
    terminology_py::register(&terminology)?;
    m.add_submodule(&terminology)?;
    Ok(())
}
