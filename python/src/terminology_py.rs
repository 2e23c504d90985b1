//! `thoth.terminology`: a data directory made by `thoth import`, read-only, over the `terminology` and `snomed`
//! facades.
//!
//! `Terminology.open` composes the facades as `thoth serve` does (SNOMED CT store, LOINC store, FHIR packages
//! and terminology files, the built-in code systems, the v2-to-FHIR vocabulary maps), so every answer is the
//! HTTP API's: the FHIR operations return the same `Parameters` (as dicts), and `search` the rows of
//! `GET /v1/snomed/search`. The object is immutable and shared across threads; each call releases the GIL.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::{Value, json};
use terminology::{Operation, Params};

use crate::{error, json_bytes_to_py, to_py};

/// The SNOMED CT code system URI, the default `system` of every method.
const SNOMED: &str = "http://snomed.info/sct";

/// Registers the classes of `thoth.terminology` in `m`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyTerminology>()?;
    m.add("SNOMED", SNOMED)?;
    Ok(())
}

/// The read-only terminology of a data directory made by ``thoth import`` (``Terminology.open(path)``).
/// Safe to share across threads; every method releases the GIL while it works.
#[pyclass(frozen, module = "thoth.terminology", name = "Terminology")]
pub struct PyTerminology {
    tx: Arc<terminology::Terminology>,
    snomed: Option<Arc<snomed::Store>>,
    path: PathBuf,
}

/// `thoth serve`'s terminology, from the data directory `dir` (the CLI's `load_service`, without its logging).
fn load(dir: &Path, max_expansion: usize) -> Result<PyTerminology, String> {
    if !dir.is_dir() {
        return Err(format!("{}: not a directory", dir.display()));
    }
    let snomed_root = dir.join("snomed");
    let snomed = if snomed_root.exists() {
        Some(Arc::new(
            snomed::Store::open(&snomed_root).map_err(|e| format!("SNOMED CT: {e}"))?,
        ))
    } else {
        None
    };
    let mut registry = terminology::Registry::new();
    for (path, result) in terminology::load_data_dir(dir, &mut registry) {
        result.map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let loinc_store = dir.join("terminology").join("loinc.store");
    let loinc = if loinc_store.exists() {
        Some(terminology::LoincProvider::open(&loinc_store).map_err(|e| format!("LOINC: {e}"))?)
    } else {
        None
    };
    if let Some(p) = &loinc {
        for r in p.resources() {
            registry.add(r);
        }
    }
    for cm in v2fhir::concept_maps() {
        if let Ok(v) = serde_json::from_slice(&cm) {
            registry.add(v);
        }
    }
    let (builtin, _problems) = terminology::load_builtin_data(dir);
    let mut tx = terminology::Terminology::with_builtin_data(
        registry,
        terminology::Config {
            max_expansion,
            ..Default::default()
        },
        &builtin,
    );
    if let Some(store) = &snomed {
        tx = tx.with_provider(terminology::SnomedProvider::new(store.clone()));
    }
    if let Some(provider) = loinc {
        tx = tx.with_provider(provider);
    }
    Ok(PyTerminology {
        tx: Arc::new(tx),
        snomed,
        path: dir.to_path_buf(),
    })
}

impl PyTerminology {
    /// Runs `op` as a GET with `query` would over HTTP: the fast path when it applies, else the general one.
    fn run<'py>(
        &self,
        py: Python<'py>,
        op: Operation,
        query: &[(&str, &str)],
    ) -> PyResult<Bound<'py, PyAny>> {
        let answer = py.detach(|| {
            if let Some(json) = self.tx.run_fast(op, query, None) {
                return Ok(Answer::Text(json));
            }
            let pairs: Vec<(String, String)> = query
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            self.tx
                .run(op, &Params::from_query(&pairs), None)
                .map(Answer::Value)
                .map_err(|e| {
                    e.issues
                        .iter()
                        .map(|i| i.text.as_str())
                        .collect::<Vec<_>>()
                        .join("; ")
                })
        });
        match answer.map_err(error)? {
            Answer::Text(json) => json_bytes_to_py(py, &json),
            Answer::Value(v) => to_py(py, &v),
        }
    }

    fn store(&self) -> PyResult<&snomed::Store> {
        self.snomed.as_deref().ok_or_else(|| {
            error(format!(
                "no SNOMED CT in {}: import a release with `thoth import snomed`",
                self.path.display()
            ))
        })
    }
}

enum Answer {
    Text(Vec<u8>),
    Value(Value),
}

#[pymethods]
impl PyTerminology {
    /// Opens a data directory made by ``thoth import`` (``thoth --data PATH import snomed ...``). Raises
    /// ``ThothError`` when it cannot be read. ``max_expansion`` is the largest ValueSet expansion returned.
    #[staticmethod]
    #[pyo3(signature = (path, max_expansion = 1000))]
    fn open(py: Python<'_>, path: PathBuf, max_expansion: usize) -> PyResult<PyTerminology> {
        py.detach(|| load(&path, max_expansion)).map_err(error)
    }

    /// ``CodeSystem/$lookup``: the FHIR ``Parameters`` (as a dict) of ``code`` in ``system`` (default SNOMED CT):
    /// name, version, display, designations, properties. Raises ``ThothError`` for an unknown code.
    #[pyo3(signature = (code, system = SNOMED))]
    fn lookup<'py>(
        &self,
        py: Python<'py>,
        code: &str,
        system: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.run(py, Operation::Lookup, &[("system", system), ("code", code)])
    }

    /// A SNOMED CT concept straight from the store, the cheap lookup for bulk work: ``{"code", "display",
    /// "active", "fsn"}`` (``display`` is the preferred term in the store's default language refsets, as
    /// ``$lookup`` gives it), or ``None`` when the store has no such concept. Raises ``ThothError`` for a code
    /// that is not an SCTID.
    fn concept<'py>(&self, py: Python<'py>, code: &str) -> PyResult<Option<Bound<'py, PyDict>>> {
        let store = self.store()?;
        let id = snomed::SctId::parse(code).map_err(|e| error(format!("{code:?}: {e}")))?;
        let Some(idx) = store.index_of(id) else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item("code", code)?;
        d.set_item("display", store.default_term(idx))?;
        d.set_item("active", store.is_active(idx))?;
        d.set_item(
            "fsn",
            store
                .fully_specified_name(idx, &store.default_refsets())
                .map(|f| f.term),
        )?;
        Ok(Some(d))
    }

    /// ``$validate-code``: in the code system ``system`` (default SNOMED CT), or in the value set ``url`` when
    /// given; ``display`` is checked too when given. Returns the ``Parameters`` (``result``, ``message``, ...)
    /// as a dict.
    #[pyo3(signature = (code, system = SNOMED, url = None, display = None))]
    fn validate_code<'py>(
        &self,
        py: Python<'py>,
        code: &str,
        system: &str,
        url: Option<&str>,
        display: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut query = vec![("code", code)];
        let op = match url {
            Some(url) => {
                query.push(("url", url));
                query.push(("system", system));
                Operation::ValidateVs
            }
            None => {
                query.push(("url", system));
                Operation::ValidateCs
            }
        };
        if let Some(d) = display {
            query.push(("display", d));
        }
        self.run(py, op, &query)
    }

    /// ``CodeSystem/$subsumes``: ``"equivalent"``, ``"subsumes"`` (A subsumes B), ``"subsumed-by"`` or
    /// ``"not-subsumed"``.
    #[pyo3(signature = (code_a, code_b, system = SNOMED))]
    fn subsumes(
        &self,
        py: Python<'_>,
        code_a: &str,
        code_b: &str,
        system: &str,
    ) -> PyResult<String> {
        let answer = self.run(
            py,
            Operation::Subsumes,
            &[("system", system), ("codeA", code_a), ("codeB", code_b)],
        )?;
        let answer: Value = pythonize::depythonize(&answer).map_err(|e| error(e.to_string()))?;
        answer["parameter"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"] == "outcome")
            .and_then(|p| p["valueCode"].as_str())
            .map(str::to_owned)
            .ok_or_else(|| error("$subsumes gave no outcome"))
    }

    /// ``ConceptMap/$translate`` of ``code`` in ``system``, through the concept map ``url`` when given, else every
    /// map from ``system``; returns the ``Parameters`` (``result``, ``match``) as a dict.
    #[pyo3(signature = (code, system, url = None))]
    fn translate<'py>(
        &self,
        py: Python<'py>,
        code: &str,
        system: &str,
        url: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut query = vec![("system", system), ("code", code)];
        if let Some(url) = url {
            query.push(("url", url));
        }
        self.run(py, Operation::Translate, &query)
    }

    /// The concepts an ECL expression selects, as ``ValueSet/$expand`` of
    /// ``http://snomed.info/sct?fhir_vs=ecl/<ecl>`` gives them: a list of ``{"system", "code", "display"}``.
    /// Raises ``ThothError`` for invalid ECL or an expansion above ``max_expansion``.
    fn expand_ecl<'py>(&self, py: Python<'py>, ecl: &str) -> PyResult<Bound<'py, PyAny>> {
        let url = format!("{SNOMED}?fhir_vs=ecl/{ecl}");
        let vs = self.run(py, Operation::Expand, &[("url", &url)])?;
        match vs
            .get_item("expansion")
            .and_then(|e| e.get_item("contains"))
        {
            Ok(contains) => Ok(contains),
            Err(_) => Ok(PyList::empty(py).into_any()),
        }
    }

    /// Text search over SNOMED CT descriptions (every word matches as a prefix), optionally within the concepts
    /// an ECL expression selects: the rows of ``GET /v1/snomed/search``, ``{"id", "conceptId", "term",
    /// "preferredTerm"}``, shortest term first.
    #[pyo3(signature = (text, ecl = None, limit = 10))]
    fn search<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        ecl: Option<&str>,
        limit: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let store = self.store()?;
        let rows = py.detach(|| -> Result<Vec<Value>, String> {
            use snomed::ecl_eval::{AttributeCounting, Options, evaluate_str_with};
            let constraint = ecl
                .map(|ecl| {
                    let options = Options {
                        counting: AttributeCounting::Distinct,
                        ..Options::default()
                    };
                    evaluate_str_with(store, ecl, &options).map_err(|e| e.to_string())
                })
                .transpose()?;
            let mut req = snomed::SearchRequest::new(text);
            req.max_hits = limit;
            req.kinds = vec![snomed::DescriptionKind::Synonym];
            req.constraint = constraint.as_ref();
            let hits = store.search(&req).map_err(|e| e.to_string())?;
            let refsets = store.language_refsets_for(None);
            Ok(hits
                .iter()
                .map(|h| {
                    json!({
                        "id": h.description_id.get(),
                        "conceptId": h.concept_id.get(),
                        "term": store.description(h.description).term,
                        "preferredTerm": store.preferred_synonym(h.concept, &refsets).map(|p| p.term).unwrap_or(""),
                    })
                })
                .collect())
        });
        let list = PyList::empty(py);
        for row in rows.map_err(error)? {
            list.append(to_py(py, &row)?)?;
        }
        Ok(list)
    }

    /// What the directory holds: ``{"path", "snomed": {"concepts", "releases"}?, "resources"}``.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("path", self.path.display().to_string())?;
        d.set_item("resources", self.tx.registry().len())?;
        if let Some(s) = &self.snomed {
            d.set_item("snomed_concepts", s.concept_count())?;
        }
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!("<thoth.terminology.Terminology {}>", self.path.display())
    }
}
