//! The binary's control protocol: one command per line, one reply line (`ok ...` or `err ...`).
//!
//! ```text
//! set <fault> [scope=all|scripts|connections|NAME,NAME] [every=N] [times=N]   replace every rule
//! add <fault> [...]                                                            add a rule
//! clear                        no rules, partition lifted
//! partition on|off             hold all traffic / let it flow
//! kill                         close every live connection
//! stats                        ok connections=A live=B commands=C scripts=D faults=E
//! routes                       ok LISTEN>UPSTREAM LISTEN>UPSTREAM ...
//! ```
//!
//! `<fault>` is `delay MS`, `stall MS`, `drop_request BYTES`, `drop_reply`, `reset` or `blackhole`.
//! Example: `set drop_reply scope=scripts every=5` lets one script call in five execute and
//! loses its reply.

use std::time::Duration;

use crate::{Commands, Fault, FaultProxy, Rule, Select};

/// Parses the words after `set`/`add` into a rule.
pub fn parse_rule(words: &[&str]) -> Result<Rule, String> {
    let (&kind, rest) = words.split_first().ok_or("a fault is needed")?;
    let number = |rest: &[&str]| -> Result<u64, String> {
        rest.first().and_then(|w| w.parse().ok()).ok_or_else(|| format!("{kind} needs a number"))
    };
    let (fault, rest) = match kind {
        "delay" => (Fault::Delay(Duration::from_millis(number(rest)?)), &rest[1..]),
        "stall" => (Fault::Stall(Duration::from_millis(number(rest)?)), &rest[1..]),
        "drop_request" => (Fault::DropRequest(number(rest)? as usize), &rest[1..]),
        "drop_reply" => (Fault::DropReply, rest),
        "reset" => (Fault::Reset, rest),
        "blackhole" => (Fault::BlackHole, rest),
        other => return Err(format!("unknown fault {other:?}")),
    };
    let mut rule = Rule::new(fault);
    for option in rest {
        let (key, value) = option.split_once('=').ok_or_else(|| format!("expected key=value, got {option:?}"))?;
        match key {
            "scope" => {
                rule.select = match value {
                    "all" => Select::Commands(Commands::All),
                    "scripts" => Select::Commands(Commands::Scripts),
                    "connections" => Select::Connections,
                    names => {
                        Select::Commands(Commands::Named(names.split(',').map(|n| n.to_ascii_uppercase()).collect()))
                    }
                }
            }
            "every" => rule = rule.every(value.parse().map_err(|_| format!("bad every={value}"))?),
            "times" => rule = rule.times(value.parse().map_err(|_| format!("bad times={value}"))?),
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(rule)
}

/// Runs one control line against `proxy` and returns the reply line (without newline).
pub fn execute(proxy: &FaultProxy, line: &str) -> String {
    let words: Vec<&str> = line.split_whitespace().collect();
    let Some((&cmd, rest)) = words.split_first() else { return "err empty command".into() };
    match cmd {
        "set" | "add" => match parse_rule(rest) {
            Ok(rule) => {
                if cmd == "set" {
                    proxy.set(vec![rule]);
                } else {
                    proxy.add(rule);
                }
                "ok".into()
            }
            Err(e) => format!("err {e}"),
        },
        "clear" => {
            proxy.clear();
            "ok".into()
        }
        "partition" => match rest.first() {
            Some(&"on") => {
                proxy.partition(true);
                "ok".into()
            }
            Some(&"off") => {
                proxy.partition(false);
                "ok".into()
            }
            _ => "err partition on|off".into(),
        },
        "kill" => {
            proxy.kill_connections();
            "ok".into()
        }
        "stats" => {
            let s = proxy.stats();
            format!(
                "ok connections={} live={} commands={} scripts={} faults={}",
                s.connections, s.live, s.commands, s.scripts, s.faults
            )
        }
        "routes" => {
            let routes: Vec<String> = proxy.routes().iter().map(|(l, u)| format!("{l}>{u}")).collect();
            format!("ok {}", routes.join(" "))
        }
        other => format!("err unknown command {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse() {
        let r = parse_rule(&["drop_reply", "scope=scripts", "every=5"]).unwrap();
        assert_eq!(r, Rule::new(Fault::DropReply).scripts().every(5));
        let r = parse_rule(&["delay", "200", "scope=connections", "times=2"]).unwrap();
        assert_eq!(r, Rule::new(Fault::Delay(Duration::from_millis(200))).connections().times(2));
        let r = parse_rule(&["reset", "scope=get,set"]).unwrap();
        assert_eq!(r, Rule::new(Fault::Reset).commands(&["GET", "SET"]));
        assert!(parse_rule(&["delay"]).is_err());
        assert!(parse_rule(&["explode"]).is_err());
        assert!(parse_rule(&["reset", "every"]).is_err());
    }
}
