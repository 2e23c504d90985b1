//! The v2-to-FHIR converter's code checks, answered by the terminology service: the `v2fhir::CodeChecker` that
//! the server (`POST /hl7/to-fhir`) and `thoth hl7 to-fhir --data` hand to the converter.

use std::sync::Arc;
use terminology::{CodeVerdict, Operation, Params, Terminology};

/// Checks codes with `CodeSystem/$validate-code` on a terminology service.
pub struct TerminologyChecker(pub Arc<Terminology>);

impl v2fhir::CodeChecker for TerminologyChecker {
    fn check(&self, system: &str, code: &str) -> v2fhir::CodeCheck {
        // A valid code, one the code system lacks or a system not loaded, from the fast path (a microsecond);
        // the general path (its answer built as a value, then read) for the rest.
        match self.0.code_verdict_fast(system, code) {
            Some(CodeVerdict::Valid { display }) => return v2fhir::CodeCheck::Valid { display },
            Some(CodeVerdict::Unknown { message }) => {
                return v2fhir::CodeCheck::Invalid { message };
            }
            Some(CodeVerdict::UnknownSystem) => return v2fhir::CodeCheck::NotLoaded,
            None => {}
        }
        let params = Params::from_query(&[
            ("url".to_string(), system.to_string()),
            ("code".to_string(), code.to_string()),
        ]);
        let Ok(answer) = self.0.run(Operation::ValidateCs, &params, None) else {
            return v2fhir::CodeCheck::NotLoaded;
        };
        let answer = Params::from_json(&answer);
        if answer.bool("result") == Some(true) {
            return v2fhir::CodeCheck::Valid {
                display: answer.str("display"),
            };
        }
        // An unknown code system is not a wrong code: the converter says nothing it cannot know.
        let unknown_system = answer.resources("issues").iter().any(|oo| {
            oo.get("issue")
                .and_then(serde_json::Value::as_array)
                .is_some_and(|issues| {
                    issues.iter().any(|i| {
                        i.pointer("/details/coding")
                            .and_then(serde_json::Value::as_array)
                            .is_some_and(|c| {
                                c.iter().any(|c| {
                                    c.get("code").and_then(serde_json::Value::as_str)
                                        == Some("not-found")
                                })
                            })
                    })
                })
        });
        if unknown_system {
            return v2fhir::CodeCheck::NotLoaded;
        }
        v2fhir::CodeCheck::Invalid {
            message: answer
                .str("message")
                .unwrap_or_else(|| "not in the code system".to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use v2fhir::{CodeCheck, CodeChecker};

    #[test]
    fn answers_from_the_builtin_code_systems() {
        // UCUM is built in (a grammar, no data files needed).
        let checker = TerminologyChecker(Arc::new(Terminology::default()));
        assert!(matches!(
            checker.check("http://unitsofmeasure.org", "mg/dL"),
            CodeCheck::Valid { .. }
        ));
        assert!(matches!(
            checker.check("http://unitsofmeasure.org", "mg/dLx"),
            CodeCheck::Invalid { .. }
        ));
        assert_eq!(
            checker.check("http://example.org/unknown", "x"),
            CodeCheck::NotLoaded
        );
    }
}
