//! One module per subcommand family. Each exposes `Args` (or `Command`) and `run(&GlobalArgs, ...)`.

pub mod dev;
pub mod fhir;
pub mod hl7;
pub mod import;
pub mod mcp;
pub mod messages;
pub mod mllp;
pub mod replica;
pub mod serve;
pub mod snomed;
pub mod terminology;
