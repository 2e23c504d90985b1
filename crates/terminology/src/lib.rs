//! Code systems, value sets and concept maps: lookup, validate, subsume, expand, translate.
