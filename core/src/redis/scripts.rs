//! The Lua scripts, embedded from `core/lua/` (inside the crate, so it packages) and assembled once.
//!
//! `core/lua/` is the single source: each strategy file is a complete script whose `-- #include x.lua`
//! lines stand for shared fragments (helpers, the period counter, the calendar). The fused multi
//! script includes every strategy file the same way, minus each file's `-- #main` section, so the
//! multi path runs the very functions the single-key scripts run. Assembly is plain text
//! splicing, done once per process; the SHA1 Redis caches each script under is computed from the
//! assembled text.
//!
//! A file whose main section opens with `-- #main standalone` has a straight-line single-key
//! entry point that calls none of the file's functions: its single-key script is the file's
//! header and that section only, so Redis does not re-create functions it would never call on
//! every `EVALSHA` (see core/lua/lib.lua, "Standalone mains").

use std::sync::LazyLock;

use super::lua_min::lua_source;

/// Every file in `core/lua/`, by name (without comments in the WebAssembly build: `lua_min`).
pub(super) const SOURCES: &[(&str, &str)] = &[
    ("lib.lua", lua_source!("../../lua/lib.lua")),
    ("gcra.lua", lua_source!("../../lua/gcra.lua")),
    ("token_bucket.lua", lua_source!("../../lua/token_bucket.lua")),
    ("period_counter.lua", lua_source!("../../lua/period_counter.lua")),
    ("fixed_window.lua", lua_source!("../../lua/fixed_window.lua")),
    ("sliding_window.lua", lua_source!("../../lua/sliding_window.lua")),
    ("sliding_window_log.lua", lua_source!("../../lua/sliding_window_log.lua")),
    ("calendar.lua", lua_source!("../../lua/calendar.lua")),
    ("quota.lua", lua_source!("../../lua/quota.lua")),
    ("leaky_bucket.lua", lua_source!("../../lua/leaky_bucket.lua")),
    ("multi.lua", lua_source!("../../lua/multi.lua")),
    ("lease.lua", lua_source!("../../lua/lease.lua")),
];

const INCLUDE: &str = "-- #include ";
const MAIN: &str = "-- #main";
const STANDALONE: &str = "-- #main standalone";

/// One assembled script: its source, the SHA1 that `EVALSHA` names it by, and the name `FCALL`
/// calls it by once [`LIBRARY`] is loaded.
#[derive(Debug)]
pub struct LoadedScript {
    /// The file it was assembled from.
    pub name: &'static str,
    /// The assembled Lua source.
    pub source: String,
    /// Hex SHA1 of `source`.
    pub sha: String,
    /// Its function in [`LIBRARY`]: `tk_<file stem>_<library version>`.
    pub function: String,
    /// Where its main section starts in `source` (the `-- #main` line): what precedes it is
    /// definitions only, which the library runs once per load instead of once per call.
    pub main_at: usize,
}

impl LoadedScript {
    fn new(name: &'static str) -> LoadedScript {
        let source = assemble(name);
        let sha = script_sha(name, &source);
        let main_at = main_at(&source);
        LoadedScript { name, source, sha, function: String::new(), main_at }
    }
}

/// Every script as one Redis Functions library (Redis >= 7: `FUNCTION LOAD`, then `FCALL`).
///
/// Generated from the very text `EVAL` sends, so `lua/` stays the single source: each script
/// becomes
/// `do <definitions> redis.register_function('tk_<stem>_<version>', function(KEYS, ARGV) <main> end) end`,
/// where the definitions are the script up to its `-- #main` line (the
/// spliced fragments' functions and tables, which read no `KEYS` or `ARGV`) and the main the
/// rest. `EVAL` runs the whole script as the body of a function whose `KEYS` and `ARGV` are the
/// call's, so it builds every helper closure on every call (25 in the fused multi script: a
/// fifth of its server time); the library builds them once, at `FUNCTION LOAD`, and the
/// registered function runs the main alone, with the helpers as upvalues. Function names are
/// global on a server, so they carry the library's version (a hash of every script): two
/// throttlekit versions in one fleet each load their own library and never replace the other's.
#[cfg(feature = "redis")]
#[derive(Debug)]
pub struct Library {
    /// `throttlekit_<version>`.
    pub name: String,
    /// The `FUNCTION LOAD` payload, `#!lua name=...` first.
    pub source: String,
}

#[cfg(feature = "redis")]
impl Library {
    /// `FUNCTION LOAD REPLACE <library>`, as arguments: idempotent, so every process, every
    /// new connection and every fallback after a miss may send it.
    pub(crate) fn load_command(&self) -> [&[u8]; 4] {
        [b"FUNCTION", b"LOAD", b"REPLACE", self.source.as_bytes()]
    }
}

/// The library, generated on first use (the RESP store's: see `engine::Invoke::Functions`).
#[cfg(feature = "redis")]
pub static LIBRARY: LazyLock<Library> = LazyLock::new(|| {
    let version = library_version(&SCRIPTS);
    let name = format!("throttlekit_{version}");
    let mut source = format!("#!lua name={name}\n");
    for s in SCRIPTS.all() {
        let (definitions, main) = s.source.split_at(s.main_at);
        source.push_str("do\n");
        source.push_str(definitions);
        source.push_str(&format!("redis.register_function('{}', function(KEYS, ARGV)\n", s.function));
        source.push_str(main);
        source.push_str("end)\nend\n");
    }
    Library { name, source }
});

/// 12 hex digits of the SHA1 over every script's SHA1, in order.
#[cfg(not(target_arch = "wasm32"))]
fn library_version(scripts: &Scripts) -> String {
    let all: String = scripts.all().iter().map(|s| s.sha.as_str()).collect();
    sha1_hex(&all)[..12].to_string()
}

/// The WebAssembly build's library version: [`super::script_shas::LIBRARY_VERSION`].
#[cfg(target_arch = "wasm32")]
fn library_version(_scripts: &Scripts) -> String {
    super::script_shas::LIBRARY_VERSION.to_string()
}

/// The SHA1 of the script `name`, whose assembled text is `source`.
#[cfg(not(target_arch = "wasm32"))]
fn script_sha(_name: &str, source: &str) -> String {
    sha1_hex(source)
}

/// The WebAssembly build's SHA1 of the script `name`: its entry in [`super::script_shas::SHAS`]
/// (the module carries no SHA1 code).
#[cfg(target_arch = "wasm32")]
fn script_sha(name: &str, _source: &str) -> String {
    super::script_shas::of(name).0.to_string()
}

/// The SHA1 of the script `name` with `prefix` (the REST store's key-locking shebang) before its
/// text `source`: [`sha1_hex`] of both, or the WebAssembly build's table entry.
pub fn prefixed_sha(name: &str, prefix: &str, source: &str) -> String {
    #[cfg(target_arch = "wasm32")]
    {
        let _ = (prefix, source);
        super::script_shas::of(name).1.to_string()
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = name;
        sha1_hex(&format!("{prefix}{source}"))
    }
}

/// The hex SHA1 of `source`: the name `EVALSHA` and `SCRIPT LOAD` know a script by.
#[cfg(not(target_arch = "wasm32"))]
pub fn sha1_hex(source: &str) -> String {
    sha1_smol::Sha1::from(source).digest().to_string()
}

fn source(name: &str) -> &'static str {
    SOURCES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| *s)
        .unwrap_or_else(|| panic!("core/lua/{name} is not embedded (scripts.rs SOURCES)"))
}

/// A file of `core/lua/` by name, from [`SOURCES`] or (the SHA table's test) another set.
pub(super) type Lookup<'a> = &'a dyn Fn(&str) -> &'a str;

/// `name` with its includes spliced in (each fragment once).
pub fn assemble(name: &str) -> String {
    assemble_from(name, &source)
}

/// [`assemble`] from the files `source` gives.
pub(super) fn assemble_from<'a>(name: &str, source: Lookup<'a>) -> String {
    let mut out = String::new();
    let mut seen = vec![name.to_string()];
    let text = source(name);
    match text.lines().position(|l| l.trim_end() == STANDALONE) {
        // The header (the leading comment block up to the first include), then the standalone
        // main alone.
        Some(at) => {
            let header = text.lines().take_while(|l| l.starts_with("--") && !l.starts_with(INCLUDE));
            let kept: Vec<&str> = header.chain(text.lines().skip(at)).collect();
            splice(&(kept.join("\n") + "\n"), true, &mut seen, &mut out, source);
        }
        None => splice(text, true, &mut seen, &mut out, source),
    }
    out
}

/// The offset of the assembled script's `-- #main` line: the top file's own (a fragment's main
/// never survives splicing), or 0 for a script without one.
fn main_at(source: &str) -> usize {
    if source.starts_with(MAIN) {
        return 0;
    }
    source.find(&format!("\n{MAIN}")).map_or(0, |at| at + 1)
}

/// Appends `text` to `out`, expanding includes; a fragment (`whole == false`) loses its leading
/// comment header and its `-- #main` section.
fn splice<'a>(text: &str, whole: bool, seen: &mut Vec<String>, out: &mut String, source: Lookup<'a>) {
    let mut in_header = !whole;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix(INCLUDE) {
            let name = name.trim();
            if !seen.iter().any(|s| s == name) {
                seen.push(name.to_string());
                splice(source(name), false, seen, out, source);
            }
            in_header = false;
            continue;
        }
        if !whole && line.trim_end().starts_with(MAIN) {
            break;
        }
        if in_header && line.starts_with("--") {
            continue;
        }
        in_header = false;
        out.push_str(line);
        out.push('\n');
    }
}

/// Every script the store runs.
#[derive(Debug)]
pub struct Scripts {
    /// GCRA.
    pub gcra: LoadedScript,
    /// Token bucket.
    pub token_bucket: LoadedScript,
    /// Fixed window.
    pub fixed_window: LoadedScript,
    /// Sliding window (and the rolling quota).
    pub sliding_window: LoadedScript,
    /// Sliding-window log.
    pub sliding_window_log: LoadedScript,
    /// Calendar and fixed quotas.
    pub quota: LoadedScript,
    /// The shaper's reservation.
    pub leaky_bucket: LoadedScript,
    /// The fused all/any check.
    pub multi: LoadedScript,
    /// The leased mode's grant and give-back (`crate::lease`).
    pub lease: LoadedScript,
}

/// The scripts, assembled on first use.
pub static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| {
    let mut s = Scripts {
        gcra: LoadedScript::new("gcra.lua"),
        token_bucket: LoadedScript::new("token_bucket.lua"),
        fixed_window: LoadedScript::new("fixed_window.lua"),
        sliding_window: LoadedScript::new("sliding_window.lua"),
        sliding_window_log: LoadedScript::new("sliding_window_log.lua"),
        quota: LoadedScript::new("quota.lua"),
        leaky_bucket: LoadedScript::new("leaky_bucket.lua"),
        multi: LoadedScript::new("multi.lua"),
        lease: LoadedScript::new("lease.lua"),
    };
    let version = library_version(&s);
    for script in s.all_mut() {
        script.function = format!("tk_{}_{version}", script.name.trim_end_matches(".lua"));
    }
    s
});

impl Scripts {
    fn all_mut(&mut self) -> [&mut LoadedScript; 9] {
        [
            &mut self.gcra,
            &mut self.token_bucket,
            &mut self.fixed_window,
            &mut self.sliding_window,
            &mut self.sliding_window_log,
            &mut self.quota,
            &mut self.leaky_bucket,
            &mut self.multi,
            &mut self.lease,
        ]
    }

    /// Every script, for `SCRIPT LOAD` and for tests.
    pub fn all(&self) -> [&LoadedScript; 9] {
        [
            &self.gcra,
            &self.token_bucket,
            &self.fixed_window,
            &self.sliding_window,
            &self.sliding_window_log,
            &self.quota,
            &self.leaky_bucket,
            &self.multi,
            &self.lease,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_opens_with_its_header_and_has_no_include_left() {
        for s in SCRIPTS.all() {
            assert!(s.source.starts_with(&format!("-- {} ", s.name)), "{} header", s.name);
            assert!(!s.source.contains(INCLUDE), "{} still has an include", s.name);
            assert_eq!(s.sha.len(), 40);
        }
    }

    #[test]
    fn the_library_registers_every_script_verbatim_under_a_versioned_name() {
        let lib = &*LIBRARY;
        assert!(lib.source.starts_with(&format!("#!lua name={}\n", lib.name)));
        for s in SCRIPTS.all() {
            assert!(s.function.starts_with("tk_") && s.function.ends_with(&lib.name["throttlekit_".len()..]));
            let (definitions, main) = s.source.split_at(s.main_at);
            let registered = format!(
                "do\n{definitions}redis.register_function('{}', function(KEYS, ARGV)\n{main}end)\nend\n",
                s.function
            );
            assert!(lib.source.contains(&registered), "{} is not registered verbatim", s.name);
        }
        assert_eq!(lib.source.matches("redis.register_function(").count(), SCRIPTS.all().len());
    }

    #[test]
    fn the_definitions_a_library_hoists_read_no_call_arguments() {
        for s in SCRIPTS.all() {
            let (definitions, main) = s.source.split_at(s.main_at);
            assert!(main.starts_with(MAIN), "{}: the main starts at its -- #main line", s.name);
            // Run once per FUNCTION LOAD, outside the registered function: KEYS and ARGV are
            // not in scope there (a helper takes the arguments it reads as a parameter).
            for line in definitions.lines().map(|l| l.split("--").next().unwrap_or("")) {
                assert!(!line.contains("KEYS") && !line.contains("ARGV"), "{}: {line}", s.name);
            }
        }
        // The fused script's main builds no closure per call.
        let main = &SCRIPTS.multi.source[SCRIPTS.multi.main_at..];
        assert!(!main.contains("function(") && !main.contains("local function"), "a closure in multi's main");
    }

    #[test]
    fn the_fused_script_holds_each_fragment_once_and_one_main() {
        let multi = &SCRIPTS.multi.source;
        assert_eq!(multi.matches("local function read_now").count(), 1);
        assert_eq!(multi.matches("local function gcra_decide(").count(), 1);
        assert_eq!(multi.matches("local function period_counter_decide(").count(), 1);
        assert!(!multi.contains("local key, now, mode = KEYS[1]"), "a single-key main leaked into multi.lua");
    }

    #[test]
    fn standalone_scripts_are_their_header_and_main_only() {
        let s = &*SCRIPTS;
        for script in [&s.gcra, &s.token_bucket, &s.fixed_window, &s.sliding_window_log] {
            let src = &script.source;
            assert!(!src.contains("local function"), "{} defines a function", script.name);
            assert_eq!(src.matches(STANDALONE).count(), 1, "{}", script.name);
            assert_eq!(src.matches("local key, now, mode = KEYS[1]").count(), 1, "{}", script.name);
        }
        // The fused script still has every strategy's functions.
        for f in ["gcra_decide(", "token_bucket_commit(", "fixed_window_decide(", "sliding_window_log_commit("] {
            assert_eq!(s.multi.source.matches(&format!("local function {f}")).count(), 1, "{f}");
        }
    }
}
