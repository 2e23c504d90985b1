//! HL7 v2 coding system names (table 0396, CWE.3) to FHIR code system URIs, as HL7 Terminology (THO) registers
//! them. `HL7nnnn` is any HL7-defined table; the rest are the systems v2 feeds carry in practice.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The FHIR URI for a v2 coding system name, or `None` when it has no registered URI (local codes: `L`, `99zzz`).
pub(crate) fn system_uri(name: &str) -> Option<&'static str> {
    if let Some(table) = name
        .strip_prefix("HL7")
        .filter(|t| t.len() == 4 && t.bytes().all(|c| c.is_ascii_digit()))
    {
        return Some(hl7_table(table));
    }
    Some(match name {
        "LN" | "LOINC" => "http://loinc.org",
        "SCT" | "SNM" | "SNOMED" | "SNOMEDCT" | "SNM3" => "http://snomed.info/sct",
        "I10" | "ICD10" => "http://hl7.org/fhir/sid/icd-10",
        "I10C" | "ICD10CM" | "I10CM" => "http://hl7.org/fhir/sid/icd-10-cm",
        "I10P" | "ICD10PCS" => "http://www.cms.gov/Medicare/Coding/ICD10",
        "I9" | "I9C" | "I9CDX" | "ICD9" | "ICD9CM" => "http://hl7.org/fhir/sid/icd-9-cm",
        "UCUM" | "ANS+" | "ISO+" => "http://unitsofmeasure.org",
        "CVX" => "http://hl7.org/fhir/sid/cvx",
        "MVX" => "http://hl7.org/fhir/sid/mvx",
        "NDC" => "http://hl7.org/fhir/sid/ndc",
        "RXNORM" | "RxNorm" => "http://www.nlm.nih.gov/research/umls/rxnorm",
        "CPT" | "C4" | "CPT4" => "http://www.ama-assn.org/go/cpt",
        "HCPCS" | "HCPT" => "urn:oid:2.16.840.1.113883.6.285",
        "NUBC" => "http://www.nubc.org/patient-discharge",
        "ISO3166_1" | "ISO3166" => "urn:iso:std:iso:3166",
        "ISO639" => "urn:ietf:bcp:47",
        "NPI" => "http://hl7.org/fhir/sid/us-npi",
        "CDCREC" => "urn:oid:2.16.840.1.113883.6.238",
        "NCIT" => "http://ncithesaurus-stage.nci.nih.gov",
        "HL7" => "http://terminology.hl7.org/CodeSystem/v2-0396",
        _ => return None,
    })
}

/// `0001` → the THO URI of table 0001. A static string per table would need a table of all of them; the URIs
/// are leaked once per distinct table (a few hundred at most, for the life of the process).
fn hl7_table(table: &str) -> &'static str {
    static CACHE: Interned = Interned::new();
    CACHE.get(table, || {
        format!("http://terminology.hl7.org/CodeSystem/v2-{table}")
    })
}

/// Strings made once per distinct key and kept for the life of the process (`&'static`, as the compiled maps'
/// strings are): for a small, bounded set of keys, such as the v2 tables a message names or the element names of
/// the maps' paths.
pub(crate) struct Interned(OnceLock<Mutex<HashMap<String, &'static str>>>);

impl Interned {
    pub(crate) const fn new() -> Interned {
        Interned(OnceLock::new())
    }

    /// The string kept for `key`, made by `make` the first time.
    pub(crate) fn get(&self, key: &str, make: impl FnOnce() -> String) -> &'static str {
        let mut cache = self
            .0
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        cache
            .entry(key.to_string())
            .or_insert_with(|| Box::leak(make().into_boxed_str()))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_to_uris() {
        assert_eq!(super::system_uri("LN"), Some("http://loinc.org"));
        assert_eq!(
            super::system_uri("HL70203"),
            Some("http://terminology.hl7.org/CodeSystem/v2-0203")
        );
        assert_eq!(super::system_uri("HL7ABCD"), None);
        assert_eq!(super::system_uri("L"), None);
    }
}
