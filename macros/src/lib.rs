//! Procedural macros for `csp`. Use them through the `csp` crate.
