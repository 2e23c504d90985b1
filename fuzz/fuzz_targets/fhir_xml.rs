//! Property: for any bytes, the FHIR XML reader never panics (no DTDs, bounded depth); a resource it accepts
//! writes back to XML, JSON and binary that all read as the same resource.
#![no_main]

use fhir::Resource;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(r) = Resource::from_xml(data) else { return };
    let xml = r.to_xml(false).expect("a resource read from XML writes as XML");
    assert_eq!(Resource::from_xml(&xml).expect("own XML"), r);
    assert_eq!(Resource::from_json(&r.to_json()).expect("own JSON"), r);
    assert_eq!(Resource::from_protobuf(&r.to_protobuf().expect("binary")).expect("own binary"), r);
});
