use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// Codes from the FHIR `issue-type` value set used in our OperationOutcomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IssueType {
    /// Content invalid against the specification or a profile.
    Invalid,
    /// The reference provided was not found.
    NotFound,
    /// The operation is not supported.
    NotSupported,
    /// Too costly: the request would exceed a limit.
    TooCostly,
    /// An unexpected internal error.
    Exception,
    /// A transient condition: the server is busy, starting or draining; the request may be tried again.
    Transient,
    /// The server refuses the operation (a read-only replica asked to write).
    Forbidden,
}

impl IssueType {
    fn code(self) -> &'static str {
        match self {
            IssueType::Invalid => "invalid",
            IssueType::NotFound => "not-found",
            IssueType::NotSupported => "not-supported",
            IssueType::TooCostly => "too-costly",
            IssueType::Exception => "exception",
            IssueType::Transient => "transient",
            IssueType::Forbidden => "forbidden",
        }
    }
}

/// Every way a request can fail. Converted to an OperationOutcome in [`IntoResponse`], the one place that decides
/// status codes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// The client sent something malformed (400).
    #[error("{0}")]
    BadRequest(String),
    /// The thing asked for does not exist (404).
    #[error("{0}")]
    NotFound(String),
    /// The request is valid but this server does not do it (501 is for servers; we say 400 with not-supported).
    #[error("{0}")]
    NotSupported(String),
    /// The answer would exceed a configured limit (422).
    #[error("{0}")]
    TooCostly(String),
    /// The request body is larger than the route accepts (413).
    #[error("{0}")]
    PayloadTooLarge(String),
    /// The server has as much expensive work queued as it takes; try again shortly (503, `Retry-After: 1`).
    #[error("{0}")]
    Busy(String),
    /// Our fault (500); logged with its detail.
    #[error("{0}")]
    Internal(String),
    /// Not now: the server is starting or draining (503; not logged, it is a state, not a failure).
    #[error("{0}")]
    Unavailable(String),
    /// Never here: this server does not do it by configuration, such as a write on a read-only replica (403).
    #[error("{0}")]
    Forbidden(String),
    /// A terminology operation could not answer; its issues carry tx-issue-type codes.
    #[error("{0}")]
    Terminology(#[from] terminology::TxError),
}

impl ApiError {
    /// HTTP status and FHIR issue type for this error.
    pub fn classify(&self) -> (StatusCode, IssueType) {
        match self {
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, IssueType::Invalid),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, IssueType::NotFound),
            ApiError::NotSupported(_) => (StatusCode::BAD_REQUEST, IssueType::NotSupported),
            ApiError::TooCostly(_) => (StatusCode::UNPROCESSABLE_ENTITY, IssueType::TooCostly),
            ApiError::PayloadTooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, IssueType::TooCostly),
            ApiError::Busy(_) => (StatusCode::SERVICE_UNAVAILABLE, IssueType::Transient),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, IssueType::Exception),
            ApiError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, IssueType::Transient),
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, IssueType::Forbidden),
            ApiError::Terminology(e) => match e.kind {
                terminology::ErrorKind::NotFound => (StatusCode::NOT_FOUND, IssueType::NotFound),
                terminology::ErrorKind::TooCostly => {
                    (StatusCode::UNPROCESSABLE_ENTITY, IssueType::TooCostly)
                }
                terminology::ErrorKind::NotSupported => {
                    (StatusCode::BAD_REQUEST, IssueType::NotSupported)
                }
                _ => (StatusCode::BAD_REQUEST, IssueType::Invalid),
            },
        }
    }

    /// The FHIR OperationOutcome that describes this error.
    pub fn operation_outcome(&self) -> serde_json::Value {
        if let ApiError::Terminology(e) = self {
            // Terminology issues keep their own codes and tx-issue-type details.
            return e.operation_outcome();
        }
        let (_, issue) = self.classify();
        json!({
            "resourceType": "OperationOutcome",
            "issue": [{
                "severity": "error",
                "code": issue.code(),
                "diagnostics": self.to_string(),
            }]
        })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, _) = self.classify();
        if status.is_server_error() && !matches!(self, ApiError::Unavailable(_)) {
            tracing::error!(error = %self, "request failed");
        }
        let body = self.operation_outcome().to_string();
        let mut response =
            (status, [("content-type", "application/fhir+json")], body).into_response();
        if matches!(self, ApiError::Busy(_)) {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("1"),
            );
        }
        response
    }
}
