//! The Lua sources as the WebAssembly build embeds them: without their comment lines, blank lines
//! and indentation, stripped at compile time (`const fn`), so the module carries 28 KB of Lua
//! instead of 53 KB. The native builds embed `core/lua/` as written.
//!
//! Only whole-line comments go (a line whose first non-blank characters are `--`), except the
//! assembler's directives (`-- #include`, `-- #main`), which [`super::scripts`] still reads; a
//! comment after code stays, as does every line of code, so what Lua runs is unchanged. The
//! sources have no long strings or long comments (`[[ ... ]]`) and no string continued across
//! lines, where a line's indentation or a `--` would be text: `core/lua/` keeping it that way is
//! checked by the tests below. The REST store's tests (bindings-wasm/tests/rest.test.mjs) run the
//! stripped scripts against a real `redis-server` and hold their decisions to the native RESP
//! store's, which runs the scripts as written.
// The native builds call the stripping only from the tests below.
#![cfg_attr(not(any(target_arch = "wasm32", test)), allow(dead_code))]

/// The stripped text of `lua`, `LEN` bytes long (`LEN` is [`stripped_len`] of it).
pub const fn strip<const LEN: usize>(lua: &str) -> [u8; LEN] {
    let mut out = [0u8; LEN];
    let n = walk(lua.as_bytes(), &mut out, true);
    assert!(n == LEN, "stripped_len disagrees with strip");
    out
}

/// The length of [`strip`]'s text of `lua`.
pub const fn stripped_len(lua: &str) -> usize {
    walk(lua.as_bytes(), &mut [], false)
}

/// Walks `src` line by line, copying the kept lines (and a newline each) into `out` when
/// `write`; the stripped length.
const fn walk(src: &[u8], out: &mut [u8], write: bool) -> usize {
    let mut n = 0;
    let mut at = 0;
    while at < src.len() {
        let (start, end, next) = line(src, at);
        if kept(src, start, end) {
            if write {
                let mut i = start;
                while i < end {
                    out[n + i - start] = src[i];
                    i += 1;
                }
                out[n + end - start] = b'\n';
            }
            n += end - start + 1;
        }
        at = next;
    }
    n
}

/// The line starting at `at`: where its text starts (after the indentation), where it ends
/// (before trailing blanks and the newline), and where the next line starts.
const fn line(src: &[u8], at: usize) -> (usize, usize, usize) {
    let mut next = at;
    while next < src.len() && src[next] != b'\n' {
        next += 1;
    }
    let mut start = at;
    while start < next && (src[start] == b' ' || src[start] == b'\t') {
        start += 1;
    }
    let mut end = next;
    while end > start && (src[end - 1] == b' ' || src[end - 1] == b'\t' || src[end - 1] == b'\r') {
        end -= 1;
    }
    (start, end, if next < src.len() { next + 1 } else { next })
}

/// Whether the line `src[start..end]` stays: not blank, and not a comment unless a directive.
const fn kept(src: &[u8], start: usize, end: usize) -> bool {
    if start == end {
        return false;
    }
    let comment = end - start >= 2 && src[start] == b'-' && src[start + 1] == b'-';
    let directive = end - start >= 4 && src[start + 2] == b' ' && src[start + 3] == b'#';
    !comment || directive
}

/// `include_str!` of a file of `core/lua/`: stripped ([`strip`]) in the WebAssembly build, as
/// written elsewhere.
macro_rules! lua_source {
    ($path:literal) => {{
        #[cfg(target_arch = "wasm32")]
        {
            const RAW: &str = include_str!($path);
            const LEN: usize = $crate::redis::lua_min::stripped_len(RAW);
            const TEXT: [u8; LEN] = $crate::redis::lua_min::strip::<LEN>(RAW);
            match std::str::from_utf8(&TEXT) {
                Ok(text) => text,
                Err(_) => panic!("a stripped Lua source is not UTF-8"),
            }
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            include_str!($path)
        }
    }};
}
pub(crate) use lua_source;

/// [`strip`] at run time (its length is only known once computed): the WebAssembly build's text
/// of `lua`, for the tests here and of its script SHA1s (`script_shas`).
#[cfg(test)]
pub fn stripped(lua: &str) -> String {
    let mut out = vec![0; stripped_len(lua)];
    assert_eq!(walk(lua.as_bytes(), &mut out, true), out.len());
    String::from_utf8(out).expect("UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCES: &[&str] = &[
        include_str!("../../lua/lib.lua"),
        include_str!("../../lua/gcra.lua"),
        include_str!("../../lua/token_bucket.lua"),
        include_str!("../../lua/period_counter.lua"),
        include_str!("../../lua/fixed_window.lua"),
        include_str!("../../lua/sliding_window.lua"),
        include_str!("../../lua/sliding_window_log.lua"),
        include_str!("../../lua/calendar.lua"),
        include_str!("../../lua/quota.lua"),
        include_str!("../../lua/leaky_bucket.lua"),
        include_str!("../../lua/multi.lua"),
        include_str!("../../lua/lease.lua"),
    ];

    #[test]
    fn keeps_code_and_directives_and_drops_comments_blanks_and_indentation() {
        let lua = "-- header\n--\n\n  local a = 1 -- trailing\n\t-- #include lib.lua\n    if a then\n      -- why\n      return a\n    end\n-- #main standalone\nreturn 0";
        let want =
            "local a = 1 -- trailing\n-- #include lib.lua\nif a then\nreturn a\nend\n-- #main standalone\nreturn 0\n";
        assert_eq!(stripped(lua), want);
        const SHORT: &str = "  -- a\n  x = 1\n";
        assert_eq!(&strip::<{ stripped_len(SHORT) }>(SHORT), b"x = 1\n");
    }

    #[test]
    fn the_sources_have_nothing_the_stripping_could_change_the_meaning_of() {
        for lua in SOURCES {
            // No long strings or comments, whose lines are text; no string continued across lines.
            assert!(!lua.contains("[[") && !lua.contains("[=") && !lua.contains("--["), "a long bracket");
            assert!(lua.lines().all(|l| !l.trim_end().ends_with('\\')), "a string continued across lines");
            // Every line of code survives, in order, with its text as written.
            let code: Vec<&str> = lua
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && (!l.starts_with("--") || l.starts_with("-- #")))
                .collect();
            let out = stripped(lua);
            let kept: Vec<&str> = out.lines().collect();
            assert_eq!(kept, code);
            assert!(stripped_len(lua) < lua.len());
        }
    }
}
