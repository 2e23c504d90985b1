//! HL7 v2 messages to FHIR R4 Bundles, by the HL7 Version 2 to FHIR implementation guide (STU1).
//!
//! The guide's maps (message, segment, data type and vocabulary maps) are compiled from its published CSVs by
//! `cargo xtask codegen` into `src/generated/` and interpreted here: a message's segments are walked in their
//! group tree ([`hl7v2::Message::group_tree`]), each message-map row that matches a segment's group path applies
//! its segment map to the resource it names, data type maps build the values, vocabulary maps translate codes,
//! and the References column links the resources. Resource ids are deterministic (the sender, MSH-10 and the
//! element's place), so converting a message twice gives the same Bundle, and a reference is written only when
//! its target exists, so every reference resolves inside the Bundle.
//!
//! Codes are checked through [`CodeChecker`], a trait the caller implements over its terminology (Thoth's
//! server does, over its own), so that this crate does not own one.
//!
//! ```
//! let msg = hl7v2::Message::parse(b"MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240315143000+0100||ADT^A01^ADT_A01|M1|P|2.5\rPID|1||123^^^HOSP^MR||DOE^JANE||19800315|F\r");
//! let out = v2fhir::convert(&msg, &v2fhir::Options::default())?;
//! let bundle = fhir::Resource::from_json(&out.json)?;
//! assert_eq!(bundle.bundle_entries()[0].resource_type(), "MessageHeader");
//! assert!(bundle.bundle_entries().iter().any(|r| r.resource_type() == "Patient"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod concept_maps;
mod condition;
mod convert;
mod maps;
mod systems;
mod tree;
mod value;

pub use concept_maps::{CONCEPT_MAP_BASE, concept_maps};
/// An IANA time zone ([`Options::time_zone`]).
pub use jiff::tz::TimeZone;

/// The IANA time zone `name` (`America/New_York`, `Europe/Berlin`, `UTC`), from the system's time zone database
/// or, without one, the copy built in; an error that names the zone when there is none of that name.
pub fn time_zone(name: &str) -> Result<TimeZone, String> {
    TimeZone::get(name).map_err(|e| format!("time zone {name:?}: {e}"))
}

/// The kind of Bundle a message becomes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BundleType {
    /// `message`: MessageHeader first (the guide's default).
    #[default]
    Message,
    /// `transaction`: each entry a conditional create on its first business identifier.
    Transaction,
    /// `collection`: the resources only.
    Collection,
}

/// What a terminology says of one code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodeCheck {
    /// The code system is not loaded: nothing can be said.
    NotLoaded,
    /// The code is valid; its display, when the code system has one.
    Valid {
        /// The code system's display for the code.
        display: Option<String>,
    },
    /// The code is not in the code system.
    Invalid {
        /// Why, as the terminology says it.
        message: String,
    },
}

/// Checks codes against a terminology (implemented by the caller).
///
/// The verdict is a function of the pair: a conversion asks about each (system, code) pair once and applies the
/// answer to every coding that has it.
pub trait CodeChecker: Sync {
    /// Checks `code` in the code system `system` (a FHIR URI).
    fn check(&self, system: &str, code: &str) -> CodeCheck;
}

/// How to convert.
#[derive(Clone, Copy)]
pub struct Options<'c> {
    /// The kind of Bundle.
    pub bundle: BundleType,
    /// The terminology that checks codes; `None` converts without checks.
    pub checker: Option<&'c dyn CodeChecker>,
    /// The memory a conversion may take, in bytes: its Bundle while it is built and its report. A message
    /// that needs more is not converted ([`Error::TooLarge`]). The Bundle of a message of many small elements
    /// takes about a hundred times the message's size while it is built (an ORU^R01 of 120,000 OBX, 8 MB,
    /// took 850 MB); a large attachment (a PDF in one OBX-5) takes little more than its own size.
    pub max_memory: usize,
    /// The zone of times sent without a UTC offset. v2 reads such a time as the sender's local time; FHIR's
    /// `dateTime` with a time and its `instant` need an offset. With a zone, each such time gets the offset the
    /// zone had at that time (summer time included); without one, a `dateTime` keeps only its date and an
    /// `instant` is left out, each reported.
    pub time_zone: Option<&'c TimeZone>,
}

/// [`Options::max_memory`] unless set otherwise: an ORU^R01 of 60,000 OBX (4 MB) converts. What is counted is
/// the arena's chunks, which grow by doubling (so a message stops at the same place under 256 and 512 MiB).
pub const DEFAULT_MAX_MEMORY: usize = 512 << 20;

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            bundle: BundleType::default(),
            checker: None,
            max_memory: DEFAULT_MAX_MEMORY,
            time_zone: None,
        }
    }
}

/// Why a message was not converted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// Converting the message would take more memory than [`Options::max_memory`]: the conversion stopped at
    /// `segment` (1-based) of the message's `segments`.
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
        /// The segment being converted when the limit was passed.
        segment: usize,
        /// The message's segments.
        segments: usize,
    },
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::TooLarge {
                limit,
                segment,
                segments,
            } => write!(
                f,
                "the message is too large to convert: its Bundle passed the limit of {} MiB at segment {segment} \
                 of {segments}",
                limit >> 20
            ),
        }
    }
}

impl std::error::Error for Error {}

/// How much a report line matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Something in the message that the guide does not map (kept in the report, not in the Bundle).
    Information,
    /// Something converted differently from what was sent, or not at all: also an OperationOutcome issue in the
    /// Bundle.
    Warning,
}

impl Severity {
    /// The FHIR issue severity.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Information => "information",
            Severity::Warning => "warning",
        }
    }
}

/// One line of the conversion report: what was not mapped, or mapped differently, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// How much it matters.
    pub severity: Severity,
    /// The v2 element (`PID-10`, `MSH-9`, `OBX: CWE.3`).
    pub path: String,
    /// What happened.
    pub message: String,
}

/// A converted message.
#[derive(Clone, Debug)]
pub struct Conversion {
    /// The Bundle as FHIR JSON.
    pub json: Vec<u8>,
    /// The conversion report.
    pub notes: Vec<Note>,
}

impl Conversion {
    /// The report as JSON lines (`{"severity":...,"path":...,"message":...}`), one per note.
    pub fn report_json(&self) -> String {
        let mut s = String::new();
        for n in &self.notes {
            s.push_str(&format!(
                "{{\"severity\":\"{}\",\"path\":{},\"message\":{}}}\n",
                n.severity.as_str(),
                convert::json_str(&n.path),
                convert::json_str(&n.message)
            ));
        }
        s
    }
}

/// Converts a parsed message to a FHIR R4 Bundle by the guide. What cannot be mapped is reported, not an error;
/// the one error is a message too large for [`Options::max_memory`].
pub fn convert(msg: &hl7v2::Message<'_>, options: &Options<'_>) -> Result<Conversion, Error> {
    convert::convert(msg, options, true)
}

/// Converts a parsed message to the Bundle's JSON alone: the same bytes as [`convert`]'s `json`, sooner, as the
/// report's information notes are not written (the warnings are: the Bundle's OperationOutcome holds them).
pub fn convert_json(msg: &hl7v2::Message<'_>, options: &Options<'_>) -> Result<Vec<u8>, Error> {
    convert::convert(msg, options, false).map(|c| c.json)
}

/// Rows of the guide whose condition could not be read (`map element: condition`): they are never applied.
pub fn unread_conditions() -> &'static [String] {
    &maps::maps().unparsed
}
