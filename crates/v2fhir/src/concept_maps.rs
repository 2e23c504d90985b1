//! The guide's vocabulary maps as FHIR R4 ConceptMaps, for a terminology service to serve (`$translate`): the
//! same tables the converter applies, so a client can ask what a v2 code becomes.

use crate::tree::write_str;

/// The canonical URL base of the ConceptMaps: Thoth's own namespace, since the guide's tables are published as
/// CSV, not as FHIR resources with canonical URLs.
pub const CONCEPT_MAP_BASE: &str = "https://thoth-health.github.io/fhir/ConceptMap/v2-to-fhir-";

const VOCABULARY: &str = include_str!("generated/vocabulary.tsv");

/// A ConceptMap group: source system, target system, and (code, target code, display) per element.
type Group<'a> = (String, &'a str, Vec<(&'a str, &'a str, &'a str)>);

/// One ConceptMap (JSON) per vocabulary map of the guide: source system the v2 table (`HL70001` →
/// `http://terminology.hl7.org/CodeSystem/v2-0001`), target the FHIR code system of the map's rows.
pub fn concept_maps() -> Vec<Vec<u8>> {
    // map → groups, in the tables' order.
    let mut maps: Vec<(&str, Vec<Group<'_>>)> = Vec::new();
    for line in VOCABULARY
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let cols: Vec<&str> = line.split('\t').collect();
        let [map, code, v2system, _cond, fcode, display, fsystem] = cols[..] else {
            continue;
        };
        if fcode.is_empty() || fsystem.is_empty() {
            continue;
        }
        let source = source_system(v2system);
        let entry = match maps.iter_mut().position(|(m, _)| *m == map) {
            Some(i) => &mut maps[i].1,
            None => {
                maps.push((map, Vec::new()));
                &mut maps.last_mut().expect("just pushed").1
            }
        };
        let group = match entry
            .iter_mut()
            .position(|(s, t, _)| *s == source && *t == fsystem)
        {
            Some(i) => &mut entry[i].2,
            None => {
                entry.push((source, fsystem, Vec::new()));
                &mut entry.last_mut().expect("just pushed").2
            }
        };
        if !group.iter().any(|(c, _, _)| *c == code) {
            group.push((code, fcode, display));
        }
    }
    maps.into_iter()
        .map(|(name, groups)| {
            let id = id_of(name);
            let mut out = Vec::with_capacity(1024);
            out.extend_from_slice(b"{\"resourceType\":\"ConceptMap\",\"id\":");
            write_str(&id, &mut out);
            out.extend_from_slice(b",\"url\":");
            write_str(&format!("{CONCEPT_MAP_BASE}{id}"), &mut out);
            out.extend_from_slice(b",\"name\":");
            write_str(&id.replace('-', "_"), &mut out);
            out.extend_from_slice(b",\"title\":");
            write_str(
                &format!("HL7 v2-to-FHIR guide vocabulary map {name}"),
                &mut out,
            );
            out.extend_from_slice(b",\"status\":\"active\",\"group\":[");
            for (gi, (source, target, elements)) in groups.iter().enumerate() {
                if gi > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"{\"source\":");
                write_str(source, &mut out);
                out.extend_from_slice(b",\"target\":");
                write_str(target, &mut out);
                out.extend_from_slice(b",\"element\":[");
                for (ei, (code, fcode, display)) in elements.iter().enumerate() {
                    if ei > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(b"{\"code\":");
                    write_str(code, &mut out);
                    out.extend_from_slice(b",\"target\":[{\"code\":");
                    write_str(fcode, &mut out);
                    if !display.is_empty() {
                        out.extend_from_slice(b",\"display\":");
                        write_str(display, &mut out);
                    }
                    out.extend_from_slice(b",\"equivalence\":\"equivalent\"}]}");
                }
                out.extend_from_slice(b"]}");
            }
            out.extend_from_slice(b"]}");
            out
        })
        .collect()
}

/// `HL70001` / `HL7-0354` → THO's URI for the table; another name as written (the rows name systems by URI when
/// they are not HL7 tables).
fn source_system(v2: &str) -> String {
    let digits: String = v2
        .trim_start_matches("HL7")
        .trim_start_matches('-')
        .to_string();
    if v2.starts_with("HL7") && digits.len() == 4 && digits.bytes().all(|c| c.is_ascii_digit()) {
        format!("http://terminology.hl7.org/CodeSystem/v2-{digits}")
    } else {
        v2.to_string()
    }
}

/// `AllergenType[AllergyIntoleranceCategory]` → `allergentype-allergyintolerancecategory`: a FHIR id.
fn id_of(name: &str) -> String {
    let mut id = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            id.push(c.to_ascii_lowercase());
        } else if !id.ends_with('-') {
            id.push('-');
        }
    }
    id.trim_matches('-').chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_vocabulary_map_is_an_r4_concept_map() {
        let maps = super::concept_maps();
        // 99 maps in the guide; 76 have FHIR codes and a target system (the rest map to nothing yet).
        assert!(maps.len() >= 76, "{} maps", maps.len());
        for m in &maps {
            let r = fhir::Resource::from_json(m)
                .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(m)));
            assert_eq!(r.resource_type(), "ConceptMap");
        }
        let sex = maps
            .iter()
            .map(|m| String::from_utf8_lossy(m).to_string())
            .find(|m| m.contains("\"id\":\"administrativesex\""))
            .expect("the AdministrativeSex map");
        assert!(
            sex.contains("\"source\":\"http://terminology.hl7.org/CodeSystem/v2-0001\""),
            "{sex}"
        );
        assert!(
            sex.contains("{\"code\":\"F\",\"target\":[{\"code\":\"female\""),
            "{sex}"
        );
    }
}
