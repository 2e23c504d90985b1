//! `[validation]`: whether received messages are validated against their HL7 v2 definitions, what counts as an
//! error (a profile per message type and sender), and what an invalid message gets.

use crate::route::Header;
use hl7v2::{IssueSeverity, Profile, Rule};
use serde::Deserialize;

/// What the engine does with the validation of a received message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ValidationMode {
    /// No validation on receipt (the default: what the engine did before validation existed).
    #[default]
    Off,
    /// Validate; log the issues, note their count on the stored message, accept it as usual.
    Warn,
    /// Validate; a message with an error-severity issue is stored (status `rejected`, not routed) and answered
    /// AE/CE with one ERR per error.
    Reject,
}

impl ValidationMode {
    /// `"off"`, `"warn"` or `"reject"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ValidationMode::Off => "off",
            ValidationMode::Warn => "warn",
            ValidationMode::Reject => "reject",
        }
    }
}

/// The severity a `[[validation.rule]]` gives its rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum RuleSeverity {
    /// The rule is not checked.
    Ignore,
    /// Issues of the rule are warnings.
    Warning,
    /// Issues of the rule are errors.
    Error,
}

impl RuleSeverity {
    fn issue_severity(self) -> Option<IssueSeverity> {
        match self {
            RuleSeverity::Ignore => None,
            RuleSeverity::Warning => Some(IssueSeverity::Warning),
            RuleSeverity::Error => Some(IssueSeverity::Error),
        }
    }
}

/// `[validation]`.
///
/// ```toml
/// [validation]
/// mode = "reject"                 # "off" (default), "warn" or "reject"
/// strict = false                  # strict: Z-segments, user-table values, lengths, extra fields are errors
///
/// [[validation.rule]]
/// rule = "table-value"            # a rule name, as `thoth hl7 validate --format json` prints it
/// severity = "ignore"             # "ignore", "warning" or "error"
/// message_type = "ADT^A01"        # optional: MSH-9-1, or MSH-9-1^MSH-9-2
/// sender = "LAB"                  # optional: MSH-3-1, or "APP@FACILITY" with MSH-4-1
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct ValidationConfig {
    /// What happens on receipt.
    pub mode: ValidationMode,
    /// The strict profile instead of the lenient one.
    pub strict: bool,
    /// Per-rule severities, for every message or for one message type or sender; a later matching entry wins.
    #[serde(rename = "rule")]
    pub rules: Vec<RuleOverride>,
}

/// `[[validation.rule]]`: one rule's severity, for the messages it matches.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleOverride {
    /// The rule's name (`required-field`, `table-value`, ...: `hl7v2::Rule::name`).
    pub rule: String,
    /// Its severity.
    pub severity: RuleSeverity,
    /// Only messages of this type: MSH-9-1 (`ADT`) or MSH-9-1^MSH-9-2 (`ADT^A01`).
    pub message_type: Option<String>,
    /// Only messages from this sender: MSH-3-1, or `APP@FACILITY`.
    pub sender: Option<String>,
}

impl ValidationConfig {
    /// Checks the rule names; the error names the first unknown one and lists the known ones.
    pub(crate) fn check(&self) -> Result<(), String> {
        for r in &self.rules {
            if Rule::from_name(&r.rule).is_none() {
                let all: Vec<_> = Rule::ALL.iter().map(|r| r.name()).collect();
                return Err(format!(
                    "validation.rule: unknown rule {:?}; one of {}",
                    r.rule,
                    all.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// The profile for a message with this header: strict or lenient, then every matching override in order.
    pub(crate) fn profile(&self, header: &Header) -> Profile {
        let mut profile = if self.strict {
            Profile::strict()
        } else {
            Profile::lenient()
        };
        for r in &self.rules {
            let type_matches = r
                .message_type
                .as_deref()
                .is_none_or(|t| match t.split_once('^') {
                    Some((ty, trigger)) => ty == header.message_type && trigger == header.trigger,
                    None => t == header.message_type,
                });
            let sender_matches = r
                .sender
                .as_deref()
                .is_none_or(|s| s == header.sender || s == header.sender_app);
            if let (true, true, Some(rule)) =
                (type_matches, sender_matches, Rule::from_name(&r.rule))
            {
                profile = profile.with(rule, r.severity.issue_severity());
            }
        }
        profile
    }
}
