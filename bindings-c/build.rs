//! Gives the cdylib a versioned SONAME and, with `--features header`, regenerates
//! `include/throttlekit.h` with cbindgen (the committed header is checked against it in CI).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let major: u64 = env("CARGO_PKG_VERSION_MAJOR").parse().expect("numeric major version");
    let minor = env("CARGO_PKG_VERSION_MINOR");
    // Before 1.0 every minor release may break the ABI, so the soname carries it: libthrottlekit.so.0.1.
    let abi = if major == 0 { format!("0.{minor}") } else { major.to_string() };
    if env("CARGO_CFG_TARGET_OS") == "linux" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libthrottlekit.so.{abi}");
    }
    #[cfg(feature = "header")]
    header();
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("cargo sets {name}"))
}

#[cfg(feature = "header")]
fn header() {
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    let dir = env("CARGO_MANIFEST_DIR");
    let mut config = cbindgen::Config::from_file(format!("{dir}/cbindgen.toml")).expect("cbindgen.toml parses");
    config.after_includes = config.after_includes.map(|s| s.replace("@VERSION@", &env("CARGO_PKG_VERSION")));
    cbindgen::Builder::new()
        .with_crate(&dir)
        .with_config(config)
        .generate()
        .expect("cbindgen can read the crate")
        .write_to_file(format!("{dir}/include/throttlekit.h"));
}
