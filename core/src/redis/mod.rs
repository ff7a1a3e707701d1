//! The Redis store: see the module docs once it lands.
