//! MLLP framing and transport over tokio, with TLS.
