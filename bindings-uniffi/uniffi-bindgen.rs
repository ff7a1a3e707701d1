//! uniffi's generator, pinned to the same uniffi as the library it reads.
fn main() {
    uniffi::uniffi_bindgen_main()
}
