//! The loaded configuration: one descriptor tree per domain, from a YAML file or a directory
//! of them, in envoyproxy/ratelimit's format (accepted unchanged) plus our extensions.
//!
//! Load errors are envoyproxy/ratelimit's (unknown field, empty domain or key, duplicate
//! key/value at one level, `unlimited` with a unit, an empty or self-naming `replaces`,
//! `share_threshold` without `*`), each naming the file and the path inside it.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub mod limit;
pub mod yaml;

pub use limit::{LimitDef, Unit};
use yaml::{RawDescriptor, RawFile, RawLimit};

use crate::matching::Pattern;

/// A config load error: the file, the path in it, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The file (or directory) that failed.
    pub file: String,
    /// Where in the file (`descriptors[0].rate_limit`), empty for the whole file.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.path, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

/// The limits a descriptor node carries.
#[derive(Debug)]
pub struct LimitSet {
    /// Every limit that must admit; empty when `unlimited`.
    pub limits: Vec<LimitDef>,
    /// envoyproxy/ratelimit's `unlimited: true`.
    pub unlimited: bool,
    /// Names of the limits this node's limits replace.
    pub replaces: Vec<String>,
    /// Shadow mode: decided and reported, never refused.
    pub shadow_mode: bool,
    /// Where it was configured (`file: descriptors[0]`), for logs and the JSON API.
    pub origin: String,
}

/// A wildcard child: `key` exactly, the value matching `pattern`.
#[derive(Debug)]
pub struct WildcardChild {
    /// The entry key.
    pub key: String,
    /// The value pattern.
    pub pattern: Pattern,
    /// The pattern as written (the shared counter's name under `share_threshold`).
    pub raw: String,
    /// Whether every matching value shares one counter.
    pub share_threshold: bool,
    /// The node.
    pub node: Node,
}

/// One level of the descriptor tree.
#[derive(Debug, Default)]
pub struct Node {
    /// Children by exact `(key, value)`.
    pub exact: HashMap<(String, String), Node>,
    /// Children with a wildcard value, in declaration order.
    pub wildcards: Vec<WildcardChild>,
    /// Children by key alone (any value).
    pub key_only: HashMap<String, Node>,
    /// This node's limits.
    pub limits: Option<Arc<LimitSet>>,
}

impl Node {
    /// Whether the node has children to descend into.
    pub fn has_children(&self) -> bool {
        !self.exact.is_empty() || !self.wildcards.is_empty() || !self.key_only.is_empty()
    }
}

/// Every domain's tree.
#[derive(Debug, Default)]
pub struct Config {
    /// Domain → root node.
    pub domains: HashMap<String, Node>,
    /// The files it was loaded from.
    pub files: Vec<PathBuf>,
}

impl Config {
    /// Loads `path`: one YAML file, or every `*.yaml`/`*.yml` file of a directory (sorted by
    /// name, not recursive). A domain defined twice is an error, as in envoyproxy/ratelimit.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let files = config_files(path)?;
        let mut config = Config::default();
        for f in &files {
            let text = std::fs::read_to_string(f).map_err(|e| ConfigError {
                file: f.display().to_string(),
                path: String::new(),
                message: format!("cannot read: {e}"),
            })?;
            config.add_file(&f.display().to_string(), &text)?;
        }
        config.files = files;
        Ok(config)
    }

    /// Parses one file's text (named `file` in errors) and adds its domain.
    pub fn add_file(&mut self, file: &str, text: &str) -> Result<(), ConfigError> {
        let err = |path: &str, message: String| ConfigError { file: file.to_string(), path: path.to_string(), message };
        let raw: RawFile =
            serde_yaml::from_str(text).map_err(|e| err("", format!("error loading config file: {e}")))?;
        if raw.domain.is_empty() {
            return Err(err("domain", "config file cannot have empty domain".into()));
        }
        if self.domains.contains_key(&raw.domain) {
            return Err(err("domain", format!("duplicate domain '{}' in config file", raw.domain)));
        }
        let mut root = Node::default();
        load_level(file, "descriptors", &raw.descriptors, &mut root)?;
        self.domains.insert(raw.domain, root);
        Ok(())
    }

    /// Parses configs given as `(file name, text)` pairs (tests, the JSON API).
    pub fn from_texts(texts: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let mut c = Config::default();
        for (name, text) in texts {
            c.add_file(name, text)?;
        }
        Ok(c)
    }

    /// How many limits (descriptor nodes with a rate limit) the config holds.
    pub fn limit_count(&self) -> usize {
        fn count(n: &Node) -> usize {
            usize::from(n.limits.is_some())
                + n.exact.values().map(count).sum::<usize>()
                + n.key_only.values().map(count).sum::<usize>()
                + n.wildcards.iter().map(|w| count(&w.node)).sum::<usize>()
        }
        self.domains.values().map(count).sum()
    }
}

/// The files `path` names: itself, or a directory's YAML files sorted by name.
pub fn config_files(path: &Path) -> Result<Vec<PathBuf>, ConfigError> {
    let err = |message: String| ConfigError { file: path.display().to_string(), path: String::new(), message };
    let meta = std::fs::metadata(path).map_err(|e| err(format!("cannot read: {e}")))?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| err(format!("cannot list: {e}")))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(err("no *.yaml or *.yml file in this directory".into()));
    }
    Ok(files)
}

fn load_level(file: &str, at: &str, descriptors: &[RawDescriptor], node: &mut Node) -> Result<(), ConfigError> {
    for (i, d) in descriptors.iter().enumerate() {
        let path = format!("{at}[{i}]");
        let err = |sub: &str, message: String| ConfigError {
            file: file.to_string(),
            path: if sub.is_empty() { path.clone() } else { format!("{path}.{sub}") },
            message,
        };
        if d.key.is_empty() {
            return Err(err("key", "descriptor has empty key".into()));
        }
        let mut child = Node { limits: load_limits(file, &path, d)?, ..Node::default() };
        load_level(file, &format!("{path}.descriptors"), &d.descriptors, &mut child)?;
        let value = d.value.as_deref().filter(|v| !v.is_empty());
        if d.share_threshold && !value.is_some_and(|v| v.contains('*')) {
            return Err(err("share_threshold", "share_threshold needs a value with a '*' wildcard".into()));
        }
        let duplicate = || {
            let composite = match value {
                Some(v) => format!("{}_{v}", d.key),
                None => d.key.clone(),
            };
            err("", format!("duplicate descriptor composite key '{composite}'"))
        };
        match value {
            Some(v) if v.contains('*') => {
                if node.wildcards.iter().any(|w| w.key == d.key && w.raw == v) {
                    return Err(duplicate());
                }
                node.wildcards.push(WildcardChild {
                    key: d.key.clone(),
                    pattern: Pattern::new(v),
                    raw: v.to_string(),
                    share_threshold: d.share_threshold,
                    node: child,
                });
            }
            Some(v) => {
                if node.exact.insert((d.key.clone(), v.to_string()), child).is_some() {
                    return Err(duplicate());
                }
            }
            None => {
                if node.key_only.insert(d.key.clone(), child).is_some() {
                    return Err(duplicate());
                }
            }
        }
    }
    Ok(())
}

fn load_limits(file: &str, path: &str, d: &RawDescriptor) -> Result<Option<Arc<LimitSet>>, ConfigError> {
    let err =
        |sub: String, message: String| ConfigError { file: file.to_string(), path: format!("{path}.{sub}"), message };
    let raws: Vec<(String, &RawLimit)> = match (&d.rate_limit, &d.rate_limits) {
        (Some(_), Some(_)) => {
            return Err(err("rate_limits".into(), "give either `rate_limit` or `rate_limits`, not both".into()));
        }
        (Some(r), None) => vec![("rate_limit".into(), r)],
        (None, Some(list)) => {
            if list.is_empty() {
                return Err(err("rate_limits".into(), "must list at least one limit".into()));
            }
            list.iter().enumerate().map(|(i, r)| (format!("rate_limits[{i}]"), r)).collect()
        }
        (None, None) => return Ok(None),
    };
    let mut set = LimitSet {
        limits: Vec::new(),
        unlimited: false,
        replaces: Vec::new(),
        shadow_mode: d.shadow_mode,
        origin: format!("{file}: {path}"),
    };
    for (sub, raw) in &raws {
        for (j, r) in raw.replaces.iter().enumerate() {
            if r.name.is_empty() {
                return Err(err(format!("{sub}.replaces[{j}]"), "should not have an empty replaces entry".into()));
            }
            if raw.name.as_deref() == Some(r.name.as_str()) {
                return Err(err(
                    format!("{sub}.replaces[{j}]"),
                    "replaces should not contain name of same descriptor".into(),
                ));
            }
            set.replaces.push(r.name.clone());
        }
        if raw.unlimited {
            if raw.unit.is_some() || raw.period.is_some() {
                return Err(err(sub.clone(), "should not specify rate limit unit when unlimited".into()));
            }
            if raws.len() > 1 {
                return Err(err(sub.clone(), "an unlimited limit cannot be listed with others".into()));
            }
            set.unlimited = true;
            continue;
        }
        set.limits.push(LimitDef::from_raw(raw).map_err(|m| err(sub.clone(), m))?);
    }
    Ok(Some(Arc::new(set)))
}
