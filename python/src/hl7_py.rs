//! `thoth.hl7`: HL7 v2 messages over the `hl7v2` facade (and `v2fhir` for `Message.to_fhir`).
//!
//! A Python `Message` owns a copy of its bytes and the parser's index over them (two offset arrays); values are
//! split and decoded only when read, as the Rust model does. Iterating a file reads it block by block, so a
//! file of any size is walked in memory bounded by its largest message.

use std::io::Read;
use std::sync::Mutex;

use hl7v2::{AckCode, ChunkKind, IssueSeverity, Message, Path, Profile, Version};
use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use crate::{error, json_bytes_to_py, to_py};

self_cell::self_cell!(
    /// The bytes of a message and its parse, borrowing them.
    struct Parsed {
        owner: Box<[u8]>,
        #[covariant]
        dependent: Message,
    }
);

impl Parsed {
    fn parse(bytes: Box<[u8]>) -> Parsed {
        Parsed::new(bytes, |b| Message::parse(b))
    }
}

/// Registers the classes and functions of `thoth.hl7` in `m`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyMessage>()?;
    m.add_class::<PySegment>()?;
    m.add_class::<MessageIter>()?;
    m.add_function(wrap_pyfunction!(parse, m)?)?;
    m.add_function(wrap_pyfunction!(iter_messages, m)?)?;
    m.add_function(wrap_pyfunction!(iter_file, m)?)?;
    m.add_function(wrap_pyfunction!(field_name, m)?)?;
    Ok(())
}

/// The bytes of `data`: `bytes`, `bytearray` or `memoryview` as they are, `str` as UTF-8.
fn input_bytes(data: &Bound<'_, PyAny>) -> PyResult<Box<[u8]>> {
    if let Ok(b) = data.cast::<PyBytes>() {
        return Ok(b.as_bytes().into());
    }
    if let Ok(s) = data.cast::<PyString>() {
        return Ok(s.to_cow()?.as_bytes().into());
    }
    // bytearray, memoryview and other buffers.
    match data.extract::<Vec<u8>>() {
        Ok(v) => Ok(v.into_boxed_slice()),
        Err(_) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "expected bytes or str, not {}",
            data.get_type().name()?
        ))),
    }
}

/// A path as the CLI reads it (`thoth hl7 get FILE PATH`), with its error message.
fn parse_path(path: &str) -> PyResult<Path> {
    Path::parse(path).map_err(|e| error(format!("path {path:?}: {e}")))
}

/// A version as the CLI reads it (`--version`), with its error message.
fn parse_version(text: &str) -> PyResult<Version> {
    Version::parse(text).ok_or_else(|| {
        let all: Vec<_> = Version::ALL.iter().map(|v| v.as_str()).collect();
        error(format!(
            "unknown HL7 v2 version {text:?}; one of {}",
            all.join(", ")
        ))
    })
}

/// Parses one HL7 v2 message.
///
/// Parsing never fails unless ``strict`` is true: what is wrong is reported in ``Message.diagnostics``. With
/// ``strict=True`` the first error-severity diagnostic raises ``ThothError``. ``str`` input is read as UTF-8;
/// segments may end with CR, LF or CRLF.
#[pyfunction]
#[pyo3(signature = (data, strict = false))]
fn parse(data: &Bound<'_, PyAny>, strict: bool) -> PyResult<PyMessage> {
    let msg = PyMessage::from_bytes(input_bytes(data)?);
    if strict
        && let Some(d) = msg
            .msg()
            .diagnostics()
            .iter()
            .find(|d| d.severity() == hl7v2::Severity::Error)
    {
        return Err(error(d.to_string()));
    }
    Ok(msg)
}

/// Iterates over the messages of ``data`` (many messages one after the other, or an FHS/BHS batch file);
/// batch and file header and trailer segments are skipped.
#[pyfunction]
fn iter_messages(data: &Bound<'_, PyAny>) -> PyResult<MessageIter> {
    let bytes = input_bytes(data)?;
    Ok(MessageIter::new(Box::new(std::io::Cursor::new(bytes))))
}

/// Iterates over the messages of the file at ``path``, reading it block by block: memory stays bounded by the
/// largest message whatever the size of the file. Raises ``OSError`` when the file cannot be read.
#[pyfunction]
fn iter_file(py: Python<'_>, path: std::path::PathBuf) -> PyResult<MessageIter> {
    let file = py.detach(|| std::fs::File::open(&path))?;
    Ok(MessageIter::new(Box::new(file)))
}

/// The name of the element at ``path`` (``"PID-5"`` → ``"Patient Name"``) in HL7 v2 ``version``
/// (default 2.5.1), or ``None`` when the version does not define it.
#[pyfunction]
#[pyo3(signature = (path, version = "2.5.1"))]
fn field_name(path: &str, version: &str) -> PyResult<Option<&'static str>> {
    let path = parse_path(path)?;
    Ok(parse_version(version)?
        .definitions()
        .element(&path)
        .map(|e| e.name))
}

/// A parsed HL7 v2 message (immutable). Read values with ``get``; ``encode()`` gives back the input bytes.
#[pyclass(frozen, module = "thoth.hl7", name = "Message")]
pub struct PyMessage {
    parsed: Parsed,
}

impl PyMessage {
    fn from_bytes(bytes: Box<[u8]>) -> PyMessage {
        PyMessage {
            parsed: Parsed::parse(bytes),
        }
    }

    fn msg(&self) -> &Message<'_> {
        self.parsed.borrow_dependent()
    }
}

#[pymethods]
impl PyMessage {
    #[new]
    #[pyo3(signature = (data))]
    fn py_new(data: &Bound<'_, PyAny>) -> PyResult<PyMessage> {
        Ok(PyMessage::from_bytes(input_bytes(data)?))
    }

    /// The decoded text at ``path`` (``"PID-5-1"``, ``"OBX[2]-5"``, ``"PID-3(1)-1"``, or a group path such as
    /// ``"/PATIENT_RESULT/ORDER_OBSERVATION/OBSERVATION(1)/OBX-5"``), or ``None`` when the message has no value
    /// there. Parentheses are 0-based as in HAPI, brackets 1-based. Raises ``ThothError`` for an invalid path.
    fn get<'py>(&self, py: Python<'py>, path: &str) -> PyResult<Option<Bound<'py, PyString>>> {
        let path = parse_path(path)?;
        Ok(self.msg().get(&path).map(|v| PyString::new(py, &v)))
    }

    /// The raw (still escaped) bytes at ``path``, at the depth the path names, or ``None``.
    fn raw<'py>(&self, py: Python<'py>, path: &str) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let path = parse_path(path)?;
        Ok(self.msg().raw(&path).map(|b| PyBytes::new(py, b)))
    }

    /// ``msg[path]``: the value at ``path``; ``KeyError`` when there is none.
    fn __getitem__<'py>(&self, py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyString>> {
        self.get(py, path)?
            .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err(path.to_owned()))
    }

    /// The name of the element at ``path`` in this message's version (MSH-12, else 2.5.1):
    /// ``msg.field_name("PID-5")`` → ``"Patient Name"``; ``None`` when the version does not define it.
    fn field_name(&self, path: &str) -> PyResult<Option<&'static str>> {
        let path = parse_path(path)?;
        let version = self.msg().group_tree().version();
        Ok(version.definitions().element(&path).map(|e| e.name))
    }

    /// The segments, in order; only those with identifier ``id`` when it is given (``msg.segments("OBX")``).
    #[pyo3(signature = (id = None))]
    fn segments(slf: &Bound<'_, Self>, id: Option<&str>) -> Vec<PySegment> {
        let this = slf.get();
        this.msg()
            .segments()
            .filter(|s| id.is_none_or(|id| s.id() == id))
            .map(|s| PySegment {
                msg: slf.clone().unbind(),
                index: s.index(),
            })
            .collect()
    }

    /// The number of segments.
    fn __len__(&self) -> usize {
        self.msg().segment_count()
    }

    /// The message's bytes, unchanged: what was parsed, byte for byte.
    fn encode<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.msg().encode())
    }

    fn __bytes__<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        self.encode(py)
    }

    /// The JSON view of the message as a dict (``thoth hl7 json``): ``{"delimiters", "charset", "segments":
    /// [{"id", "fields"}], "diagnostics"?}``; with ``names=True`` fields are keyed by their names too.
    #[pyo3(signature = (names = false))]
    fn to_json<'py>(&self, py: Python<'py>, names: bool) -> PyResult<Bound<'py, PyAny>> {
        let json = if names {
            hl7v2::to_json_with_names(self.msg())
        } else {
            hl7v2::to_json(self.msg())
        };
        to_py(py, &json)
    }

    /// What the parser noticed: a list of ``{"severity", "message", "offset", "segment", "field"}`` (segment and
    /// field 1-based, 0 when not inside one). Empty for a well-formed message.
    #[getter]
    fn diagnostics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for d in self.msg().diagnostics() {
            let item = PyDict::new(py);
            item.set_item(
                "severity",
                match d.severity() {
                    hl7v2::Severity::Error => "error",
                    hl7v2::Severity::Warning => "warning",
                },
            )?;
            item.set_item("message", d.kind.describe())?;
            item.set_item("offset", d.location.offset)?;
            item.set_item("segment", d.location.segment)?;
            item.set_item("field", d.location.field)?;
            list.append(item)?;
        }
        Ok(list)
    }

    /// An acknowledgement of this message (bytes): sender and receiver swapped, MSA-2 = MSH-10. ``code`` is
    /// ``AA``, ``AE``, ``AR`` or an enhanced-mode ``CA``/``CE``/``CR``; a non-success code carries one ERR per
    /// parse error. ``control_id`` and ``timestamp`` default to generated ones.
    #[pyo3(signature = (code = "AA", text = None, control_id = None, timestamp = None))]
    fn ack<'py>(
        &self,
        py: Python<'py>,
        code: &str,
        text: Option<String>,
        control_id: Option<String>,
        timestamp: Option<String>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let code = AckCode::parse(code)
            .ok_or_else(|| error(format!("unknown acknowledgement code {code:?}")))?;
        let mut ack = self.msg().ack(code);
        if let Some(t) = text {
            ack = ack.text(t);
        }
        if !code.is_success() {
            ack = ack.errors_from_diagnostics();
        }
        if let Some(c) = control_id {
            ack = ack.control_id(c);
        }
        if let Some(t) = timestamp {
            ack = ack.timestamp(t);
        }
        Ok(PyBytes::new(py, &ack.build()))
    }

    /// Validates against the message's version (MSH-12, or ``version``) and structure: a list of issues
    /// ``{"severity", "code", "rule", "path", "message"}`` (HL7 table 0357 code, HAPI-style path). The
    /// lenient profile reports what HAPI's default validation does; ``strict=True`` makes every rule an error.
    #[pyo3(signature = (strict = false, version = None))]
    fn validate<'py>(
        &self,
        py: Python<'py>,
        strict: bool,
        version: Option<&str>,
    ) -> PyResult<Bound<'py, PyList>> {
        let profile = if strict {
            Profile::strict()
        } else {
            Profile::lenient()
        };
        let report = match version {
            None => py.detach(|| hl7v2::validate(self.msg(), &profile)),
            Some(v) => {
                let options =
                    hl7v2::ParseOptions::default().with_tree_options(hl7v2::TreeOptions {
                        force_version: Some(parse_version(v)?),
                        ..hl7v2::TreeOptions::default()
                    });
                let bytes = self.msg().as_bytes();
                py.detach(|| hl7v2::validate(&Message::parse_with(bytes, &options), &profile))
            }
        };
        let list = PyList::empty(py);
        for issue in &report.issues {
            let item = PyDict::new(py);
            item.set_item(
                "severity",
                match issue.severity {
                    IssueSeverity::Error => "error",
                    _ => issue.severity.as_str(),
                },
            )?;
            item.set_item("code", issue.code().code().to_string())?;
            item.set_item("rule", issue.rule.name())?;
            item.set_item("path", &issue.path)?;
            item.set_item("message", &issue.message)?;
            list.append(item)?;
        }
        Ok(list)
    }

    /// The message as a FHIR R4 Bundle (a plain dict) by the HL7 v2-to-FHIR implementation guide, as
    /// ``thoth hl7 to-fhir`` converts it without a terminology. ``bundle`` is ``"message"``, ``"transaction"``
    /// or ``"collection"``; ``time_zone`` is the IANA zone (``"America/Chicago"``) of times sent without a UTC
    /// offset (without one, such a time keeps only its date).
    #[pyo3(signature = (bundle = "message", time_zone = None))]
    fn to_fhir<'py>(
        &self,
        py: Python<'py>,
        bundle: &str,
        time_zone: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let bundle = match bundle {
            "message" => v2fhir::BundleType::Message,
            "transaction" => v2fhir::BundleType::Transaction,
            "collection" => v2fhir::BundleType::Collection,
            other => {
                return Err(error(format!(
                    "bundle {other:?} is not message, transaction or collection"
                )));
            }
        };
        let zone = time_zone
            .map(v2fhir::time_zone)
            .transpose()
            .map_err(error)?;
        let options = v2fhir::Options {
            bundle,
            time_zone: zone.as_ref(),
            ..Default::default()
        };
        let json = py
            .detach(|| v2fhir::convert_json(self.msg(), &options))
            .map_err(|e| error(e.to_string()))?;
        json_bytes_to_py(py, &json)
    }

    /// MSH-9 as written (``"ADT^A01^ADT_A01"``), or ``None``.
    #[getter]
    fn message_type(&self) -> Option<String> {
        self.msg()
            .raw("MSH-9")
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }

    /// MSH-10, the message control ID, or ``None``.
    #[getter]
    fn control_id(&self) -> Option<String> {
        self.msg().get("MSH-10").map(|v| v.into_owned())
    }

    /// MSH-12, the version the message says it follows, or ``None``.
    #[getter]
    fn version(&self) -> Option<String> {
        self.msg().get("MSH-12").map(|v| v.into_owned())
    }

    fn __repr__(&self) -> String {
        format!(
            "<thoth.hl7.Message {} {} segments>",
            self.message_type().unwrap_or_default(),
            self.msg().segment_count()
        )
    }

    fn __str__(&self) -> String {
        String::from_utf8_lossy(self.msg().as_bytes()).into_owned()
    }
}

/// One segment of a ``Message`` (keeps the message alive). ``seg[n]`` is field ``n`` (1-based, as in HL7:
/// in MSH, ``seg[1]`` is the field separator).
#[pyclass(frozen, module = "thoth.hl7", name = "Segment")]
pub struct PySegment {
    msg: Py<PyMessage>,
    index: usize,
}

impl PySegment {
    fn with<R>(&self, f: impl FnOnce(hl7v2::Segment<'_, '_>) -> R) -> R {
        let msg = self.msg.get().msg();
        // The index came from this message's own segments.
        f(msg
            .segment(self.index)
            .expect("segment index within its message"))
    }
}

#[pymethods]
impl PySegment {
    /// The segment identifier (``"PID"``).
    #[getter]
    fn id(&self) -> String {
        self.with(|s| s.id().to_owned())
    }

    /// The segment's 0-based position in the message.
    #[getter]
    fn index(&self) -> usize {
        self.index
    }

    /// The decoded text of field ``n`` (1-based), or ``None`` when the segment has no such field.
    fn field(&self, n: usize) -> Option<String> {
        self.with(|s| s.field(n).map(|v| v.text().into_owned()))
    }

    /// The decoded text of every field, field 1 first.
    fn fields(&self) -> Vec<String> {
        self.with(|s| s.fields().map(|v| v.text().into_owned()).collect())
    }

    /// ``seg[n]``: field ``n`` (1-based); ``IndexError`` past the last field.
    fn __getitem__(&self, n: usize) -> PyResult<String> {
        self.field(n)
            .ok_or_else(|| PyIndexError::new_err(format!("field {n} out of range")))
    }

    /// The number of fields.
    fn __len__(&self) -> usize {
        self.with(|s| s.field_count())
    }

    /// The segment's bytes, without its terminator.
    fn raw<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        self.with(|s| PyBytes::new(py, s.raw()))
    }

    fn __str__(&self) -> String {
        self.with(|s| String::from_utf8_lossy(s.raw()).into_owned())
    }

    fn __repr__(&self) -> String {
        format!("<thoth.hl7.Segment {}>", self.id())
    }
}

/// Read size of the streaming iterator; a message longer than this grows the buffer to hold it.
const BLOCK: usize = 1 << 20;

/// A source read block by block and cut into messages by `hl7v2::split`.
struct Stream {
    reader: Box<dyn Read + Send + Sync>,
    buf: Vec<u8>,
    /// Where the unread part of `buf` starts.
    start: usize,
    eof: bool,
}

impl Stream {
    /// The bytes of the next message, or `None` at the end.
    fn next_message(&mut self) -> std::io::Result<Option<Box<[u8]>>> {
        loop {
            let mut chunks = hl7v2::split(&self.buf[self.start..]);
            if let Some(chunk) = chunks.next() {
                // A chunk ends where the next one starts, so only a chunk followed by another (or the end of the
                // input) is known to be whole; the last chunk of a block may continue in the next block.
                if self.eof || chunks.next().is_some() {
                    self.start += chunk.bytes.len();
                    if chunk.kind == ChunkKind::Message {
                        return Ok(Some(chunk.bytes.into()));
                    }
                    continue;
                }
            } else if self.eof {
                return Ok(None);
            }
            self.buf.drain(..self.start);
            self.start = 0;
            let have = self.buf.len();
            self.buf.resize(have + BLOCK, 0);
            let n = loop {
                match self.reader.read(&mut self.buf[have..]) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    r => break r,
                }
            };
            self.buf.truncate(have + n.as_ref().copied().unwrap_or(0));
            if n? == 0 {
                self.eof = true;
            }
        }
    }
}

/// An iterator of ``Message`` over a file or a buffer, in order (``iter_file``, ``iter_messages``).
#[pyclass(frozen, module = "thoth.hl7", name = "MessageIter")]
pub struct MessageIter {
    stream: Mutex<Stream>,
}

impl MessageIter {
    fn new(reader: Box<dyn Read + Send + Sync>) -> MessageIter {
        MessageIter {
            stream: Mutex::new(Stream {
                reader,
                buf: Vec::new(),
                start: 0,
                eof: false,
            }),
        }
    }
}

#[pymethods]
impl MessageIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<PyMessage>> {
        let mut guard = self
            .stream
            .lock()
            .map_err(|_| error("the iterator failed earlier"))?;
        // The guard itself cannot cross to the detached closure (it is not `Send`); the stream it guards can.
        let stream: &mut Stream = &mut guard;
        let next = py.detach(|| stream.next_message().map(|m| m.map(PyMessage::from_bytes)))?;
        Ok(next)
    }
}
