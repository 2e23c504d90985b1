//! SNOMED CT: RF2 import, the memory-mapped store, text search and ECL evaluation.
