//! The SHA1s `EVALSHA` names the WebAssembly build's scripts by, computed ahead of time: that
//! build embeds the stripped Lua (`lua_min`), and with these it carries no SHA1 code (4.7 KB of
//! code). The native builds compute theirs from the text at start-up (`scripts::sha1_hex`).
//!
//! The test below assembles the stripped sources as that build does (the same `lua_min` walk
//! and `scripts::assemble_from`), hashes them and fails on any difference, printing the table
//! to paste here: a change to `core/lua/` or to the assembly must come with this table. (A stale
//! entry would not fail a decision, only cost it: Redis answers `NOSCRIPT` and the store sends
//! the source with `EVAL`, on every call.)
// The native builds read the table only from the test below.
#![cfg_attr(not(any(target_arch = "wasm32", test)), allow(dead_code))]

/// Each script's file, its SHA1, and the SHA1 of it after the REST store's key-locking shebang
/// (`rest::KEY_LOCKING_SHEBANG`), in `scripts::Scripts::all`'s order.
pub const SHAS: [(&str, &str, &str); 9] = [
    ("gcra.lua", "928b24d41e35357cdc941a14df94937291486994", "b32a909eff76bbf846ef10521d15deb4c8cae27d"),
    ("token_bucket.lua", "3036a582d9cb5014363582fbc2b9ae44f4e1a039", "2216c783ae4dbe59b0af0d5672fcb6eaea3a64b2"),
    ("fixed_window.lua", "a0f914202dc8b86ecadc0112f96363bb3c9e12bb", "e8fe9592f9d4d3e87dd7d54b91df0cc582ac2e15"),
    ("sliding_window.lua", "1c7b991d9dfb4b5dd9a295e551a2ca953d8d2fe1", "a608b2cbfd49534f557c3e5475989c2513521787"),
    ("sliding_window_log.lua", "93f9fc411f91e7041e05b345672e8f93b0879a0d", "efdd5c2f3d1056edba770187923167bfd8b9705a"),
    ("quota.lua", "ca06e665ec51b0ea585d31c8bd5eb9cfbd69eeca", "ee1f1db8d54c3491354485f391b18dec5e8101c8"),
    ("leaky_bucket.lua", "4a8c49f92d2b130f41da1e2046cfa28bc7c63786", "ead3640f42b71f435db404f048714076b73cdc56"),
    ("multi.lua", "6f095ae66c7859099fcf0fdd4658820d375b7693", "aac50361f67f32d90bb94b9d33c18824cb8c8717"),
    ("lease.lua", "ff9697aa5725780189017de14f49fbd64a7b7971", "da6861de84970102a7908f62915a09255ded0eb8"),
];

/// The Functions library's version: the first 12 hex digits of the SHA1 of every script's SHA1
/// in order (`scripts::library_version`).
pub const LIBRARY_VERSION: &str = "3805fcdc46f2";

/// The SHA1s of the script `name` (one of [`SHAS`]): plain and with the key-locking shebang.
pub fn of(name: &str) -> (&'static str, &'static str) {
    SHAS.iter().find(|s| s.0 == name).map_or(("", ""), |s| (s.1, s.2))
}

#[cfg(test)]
mod tests {
    use super::super::lua_min::stripped;
    use super::super::rest::KEY_LOCKING_SHEBANG;
    use super::super::scripts::{SCRIPTS, SOURCES, assemble_from, sha1_hex};
    use super::*;

    #[test]
    fn the_table_holds_the_sha1s_of_the_stripped_scripts() {
        let sources: Vec<(&str, String)> = SOURCES.iter().map(|(n, text)| (*n, stripped(text))).collect();
        let lookup = |name: &str| -> &str {
            sources.iter().find(|(n, _)| *n == name).map(|(_, t)| t.as_str()).expect("an embedded file")
        };
        let want: Vec<(&str, String, String)> = SCRIPTS
            .all()
            .iter()
            .map(|s| {
                let text = assemble_from(s.name, &lookup);
                (s.name, sha1_hex(&text), sha1_hex(&format!("{KEY_LOCKING_SHEBANG}{text}")))
            })
            .collect();
        let all: String = want.iter().map(|w| w.1.as_str()).collect();
        let version = sha1_hex(&all)[..12].to_string();
        let have: Vec<(&str, String, String)> =
            SHAS.iter().map(|(n, a, b)| (*n, a.to_string(), b.to_string())).collect();
        if have != want || LIBRARY_VERSION != version {
            let rows: String = want.iter().map(|(n, a, b)| format!("    (\"{n}\", \"{a}\", \"{b}\"),\n")).collect();
            panic!(
                "core/src/redis/script_shas.rs is stale; its table should read:\n\
                 pub const SHAS: [(&str, &str, &str); 9] = [\n{rows}];\n\
                 pub const LIBRARY_VERSION: &str = \"{version}\";"
            );
        }
        // Each row is found by its name.
        for (n, a, b) in SHAS {
            assert_eq!(of(n), (a, b));
        }
    }
}
