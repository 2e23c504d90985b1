//! The SNOMED CT Expression Constraint Language: grammar, AST and printer.
