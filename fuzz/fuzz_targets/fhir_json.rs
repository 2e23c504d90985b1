//! Property: for any bytes, the FHIR JSON reader never panics; a resource it accepts writes back to JSON that
//! reads as the same resource, the lenient reader accepts it too (lenient ⊇ strict), and whenever the XML or
//! binary writers accept it, reading their output gives the same resource again.
#![no_main]

use fhir::{ReadOptions, Resource};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(r) = Resource::from_json(data) else {
        let _ = Resource::from_json_with(data, &ReadOptions::lenient());
        return;
    };
    let lenient = Resource::from_json_with(data, &ReadOptions::lenient()).expect("lenient accepts what strict does");
    assert_eq!(lenient, r);
    assert_eq!(Resource::from_json(&r.to_json()).expect("own compact JSON"), r);
    assert_eq!(Resource::from_json(&r.to_json_pretty()).expect("own pretty JSON"), r);
    if let Ok(pb) = r.to_protobuf() {
        assert_eq!(Resource::from_protobuf(&pb).expect("own binary"), r);
    }
    if let Ok(xml) = r.to_xml(false) {
        // Narrative divs are carried as text; a div that is not well-formed XHTML cannot be read back as XML.
        if let Ok(back) = Resource::from_xml(&xml) {
            assert_eq!(back, r);
        }
    }
});
