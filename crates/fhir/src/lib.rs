//! FHIR R4 resources: JSON, XML and a compact Protocol Buffers encoding, lossless.
