//! The smallest Redis ACL a throttlekit user needs, as `ACL SETUSER` rules. `docs/redis.md`
//! prints them and `core/tests/redis_acl.rs` runs the store under exactly these rules (a key
//! outside the pattern is refused).

use super::options::{RedisMode, Scripting};

/// Commands the Lua in `lua/` calls (`redis.call`/`redis.pcall`). Redis checks the calling
/// user's ACL for them too.
const SCRIPT_COMMANDS: &[&str] = &[
    "get",
    "set",
    "del",
    "pexpire",
    "hset",
    "hmget",
    "hgetall",
    "zadd",
    "zcard",
    "zcount",
    "zrange",
    "zremrangebyscore",
    "time",
];

/// `ACL SETUSER <user>` rules (after the user's name and `>password`) for a store whose
/// limiters all use key prefix `prefix`: keys `prefix:*` only, no channels, and only the
/// commands the store sends (`del` also serves `reset`) and the scripts call. `scripting`
/// picks `fcall` + `function|load` or `evalsha` + `eval` (`auto` needs both: it tries
/// functions first); cluster mode adds `cluster|slots`, which the client reads the slot map
/// with.
pub fn acl_rules(prefix: &str, scripting: Scripting, mode: RedisMode) -> Vec<String> {
    let mut rules = vec!["on".to_string(), "resetkeys".to_string(), format!("~{prefix}:*"), "resetchannels".into()];
    rules.push("-@all".into());
    if scripting != Scripting::Eval {
        rules.extend(["+fcall".to_string(), "+function|load".to_string()]);
    }
    if scripting != Scripting::Functions {
        rules.extend(["+evalsha".to_string(), "+eval".to_string()]);
    }
    rules.extend(SCRIPT_COMMANDS.iter().map(|c| format!("+{c}")));
    if mode == RedisMode::Cluster {
        // `ASKING` before a call to a slot being migrated; the slot map.
        rules.push("+asking".into());
        rules.push("+cluster|slots".into());
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_print_exactly_these_rules() {
        let docs = include_str!("../../../docs/redis.md");
        let line = format!(
            "ACL SETUSER throttlekit >PASSWORD {}",
            acl_rules("api", Scripting::Auto, RedisMode::Standalone).join(" ")
        );
        assert!(docs.contains(&line), "docs/redis.md should print:\n{line}");
        let cluster = acl_rules("api", Scripting::Auto, RedisMode::Cluster);
        assert_eq!(cluster.last().map(String::as_str), Some("+cluster|slots"));
        assert!(!acl_rules("api", Scripting::Eval, RedisMode::Standalone).contains(&"+fcall".to_string()));
        assert!(!acl_rules("api", Scripting::Functions, RedisMode::Standalone).contains(&"+eval".to_string()));
    }
}
