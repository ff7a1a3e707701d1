//! Node bindings (in progress).
