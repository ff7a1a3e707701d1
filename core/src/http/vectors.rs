//! Replays the HTTP vectors (`conformance-vectors/http/*.json`, format `throttlekit-http/1`).
//!
//! Each case's `request` goes through the same JSON entry points the bindings call
//! ([`super::json::headers_json`], [`super::json::client_key_json`]), so a runner in any language
//! only has to hand the request's JSON text to its binding and compare.

use serde::Deserialize;
use serde_json::Value;

use super::json::{client_key_json, headers_json};
use crate::conformance::Report;
use crate::error::{Error, Result};

/// The `format` value that marks an HTTP vectors file.
pub const FORMAT: &str = "throttlekit-http/1";

/// An HTTP vectors file.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpVectorFile {
    /// Always [`FORMAT`].
    pub format: String,
    /// What the file covers.
    #[serde(default)]
    pub description: Option<String>,
    /// Decision(s) + options + now → header lines.
    #[serde(default)]
    pub header_cases: Vec<Case>,
    /// Peer + headers + options → client key.
    #[serde(default)]
    pub client_key_cases: Vec<Case>,
}

/// One case: a request object and either the expected result or an error code.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Case {
    /// Stable identifier printed on failure.
    pub id: String,
    /// The working.
    pub comment: String,
    /// The JSON request handed to the entry point.
    pub request: Value,
    /// Header cases: `[[name, value], ...]`; client key cases: the key string.
    #[serde(default)]
    pub expect: Option<Value>,
    /// The error code the call must fail with.
    #[serde(default)]
    pub expect_error: Option<String>,
}

/// Whether `text` is an HTTP vectors file (its top level has `"format": "throttlekit-http/1"`).
pub fn is_http_vectors(text: &str) -> bool {
    crate::conformance::file_format(text).as_deref() == Some(FORMAT)
}

/// Parses an HTTP vectors file strictly.
pub fn parse(text: &str) -> Result<HttpVectorFile> {
    let file: HttpVectorFile =
        serde_json::from_str(text).map_err(|e| Error::config("vectors", &format!("http file is not valid: {e}")))?;
    if file.format != FORMAT {
        return Err(Error::config("vectors", &format!("format must be {FORMAT}")));
    }
    for case in file.header_cases.iter().chain(&file.client_key_cases) {
        if case.expect.is_some() == case.expect_error.is_some() {
            return Err(Error::config(
                "vectors",
                &format!("case {} needs exactly one of expect, expectError", case.id),
            ));
        }
    }
    Ok(file)
}

fn check(report: &mut Report, kind: &str, case: &Case, got: Result<Value>) {
    let ok = match (&case.expect, &case.expect_error, &got) {
        (Some(want), None, Ok(v)) => want == v,
        (None, Some(code), Err(e)) => e.code().as_str() == code,
        _ => false,
    };
    if ok {
        report.passed += 1;
    } else {
        report.failed += 1;
        let want = match (&case.expect, &case.expect_error) {
            (Some(v), _) => v.to_string(),
            (_, Some(code)) => format!("error {code}"),
            _ => String::new(),
        };
        let got = match got {
            Ok(v) => v.to_string(),
            Err(e) => format!("error {}: {}", e.code(), e.message()),
        };
        report.failures.push(format!("{kind} {}: expected {want}, got {got}", case.id));
    }
}

/// Replays every case; one pass or failure per case.
pub fn replay(file: &HttpVectorFile) -> Report {
    let mut report = Report::default();
    for case in &file.header_cases {
        let got = headers_json(&case.request.to_string()).and_then(|text| {
            serde_json::from_str::<Value>(&text).map_err(|e| Error::config("headers", &e.to_string()))
        });
        check(&mut report, "header case", case, got);
    }
    for case in &file.client_key_cases {
        let got = client_key_json(&case.request.to_string()).map(Value::String);
        check(&mut report, "client key case", case, got);
    }
    report
}
