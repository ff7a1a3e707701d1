//! Conformance vectors (in progress).
