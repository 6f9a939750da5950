//! One test per rule.
