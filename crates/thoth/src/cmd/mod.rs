//! One module per subcommand family.

pub mod serve;
