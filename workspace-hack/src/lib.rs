//! Nothing: this crate exists for its `Cargo.toml` (feature unification across `make test`'s
//! cargo invocations; see that file).
