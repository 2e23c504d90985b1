//! Issues and errors of terminology operations.
//!
//! Every finding is an [`Issue`]: a FHIR issue-type code, a tx-issue-type code (the vocabulary the HL7
//! terminology conformance tests check) and a human text. Operations that still answer (validate-code says
//! `result: false`) carry issues inside their result; operations that cannot answer fail with a [`TxError`].

use serde_json::{Value, json};

/// The system of the `details.coding` of every issue we raise.
pub const TX_ISSUE_TYPE: &str = "http://hl7.org/fhir/tools/CodeSystem/tx-issue-type";

/// How bad an issue is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Severity {
    /// The operation failed or the code is wrong.
    Error,
    /// Something to review.
    Warning,
    /// For information only.
    Information,
}

impl Severity {
    /// The FHIR code of this severity.
    pub fn code(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "information",
        }
    }
}

/// One finding, as it appears in an OperationOutcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Issue {
    /// Severity.
    pub severity: Severity,
    /// FHIR `issue-type` code (`code-invalid`, `not-found`, `invalid`, ...).
    pub code: &'static str,
    /// tx-issue-type code (`not-in-vs`, `invalid-code`, ...), if any.
    pub tx_code: Option<&'static str>,
    /// The message text.
    pub text: String,
    /// FHIRPath expressions of the elements concerned.
    pub expression: Vec<String>,
    /// The id of the message in the FHIR validator's message bundle (`operationoutcome-message-id`), for
    /// the messages whose id clients and the conformance tests rely on.
    pub message_id: Option<&'static str>,
}

impl Issue {
    /// An issue with the given parts and no expression.
    pub fn new(
        severity: Severity,
        code: &'static str,
        tx_code: Option<&'static str>,
        text: impl Into<String>,
    ) -> Self {
        Issue {
            severity,
            code,
            tx_code,
            text: text.into(),
            expression: Vec::new(),
            message_id: None,
        }
    }

    /// Sets the message id.
    pub fn with_id(mut self, id: &'static str) -> Self {
        self.message_id = Some(id);
        self
    }

    /// Adds an expression.
    pub fn at(mut self, expression: impl Into<String>) -> Self {
        self.expression.push(expression.into());
        self
    }

    /// The FHIR JSON of this issue.
    pub fn to_json(&self) -> Value {
        let mut details = json!({});
        if let Some(tx) = self.tx_code {
            details["coding"] = json!([{ "system": TX_ISSUE_TYPE, "code": tx }]);
        }
        details["text"] = json!(self.text);
        let mut v = json!({});
        if let Some(id) = self.message_id {
            v["extension"] = json!([{
                "url": "http://hl7.org/fhir/StructureDefinition/operationoutcome-message-id",
                "valueString": id,
            }]);
        }
        let v2 = json!({
            "severity": self.severity.code(),
            "code": self.code,
            "details": details,
        });
        if let (Value::Object(m), Value::Object(more)) = (&mut v, v2) {
            m.extend(more);
        }
        // `location` is deprecated in R5 and the conformance tests expect `expression` alone.
        if !self.expression.is_empty() {
            v["expression"] = json!(self.expression);
        }
        v
    }
}

/// An OperationOutcome holding `issues`.
pub fn operation_outcome(issues: &[Issue]) -> Value {
    json!({
        "resourceType": "OperationOutcome",
        "issue": issues.iter().map(Issue::to_json).collect::<Vec<_>>(),
    })
}

/// What kind of failure a [`TxError`] is; the server maps it to an HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Something named in the request does not exist (404 for reads, 422/400 for operations).
    NotFound,
    /// The request or the content it refers to is invalid (400).
    Invalid,
    /// The answer would exceed a configured limit.
    TooCostly,
    /// The request asks for something this server does not do.
    NotSupported,
}

/// Why a terminology operation could not answer.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", .issues.first().map(|i| i.text.as_str()).unwrap_or("terminology error"))]
#[non_exhaustive]
pub struct TxError {
    /// The kind of failure.
    pub kind: ErrorKind,
    /// What went wrong, most important first.
    pub issues: Vec<Issue>,
}

impl TxError {
    /// An error made of one issue.
    pub fn new(kind: ErrorKind, issue: Issue) -> Self {
        TxError {
            kind,
            issues: vec![issue],
        }
    }

    /// A bad request: the parameters themselves are wrong.
    pub fn invalid(text: impl Into<String>) -> Self {
        TxError::new(
            ErrorKind::Invalid,
            Issue::new(Severity::Error, "invalid", Some("invalid-data"), text),
        )
    }

    /// Something referenced was not found.
    pub fn not_found(text: impl Into<String>) -> Self {
        TxError::new(
            ErrorKind::NotFound,
            Issue::new(Severity::Error, "not-found", Some("not-found"), text),
        )
    }

    /// The OperationOutcome describing this error.
    pub fn operation_outcome(&self) -> Value {
        operation_outcome(&self.issues)
    }
}

/// Why content (a package, a release file) could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// Reading a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file was not what we expected.
    #[error("{path}: {message}")]
    Format {
        /// The file (and entry inside it, if any).
        path: String,
        /// What was wrong.
        message: String,
    },
}
