//! The hand-written spec reader and writer (`StrategySpec::from_value`, `to_value`, the
//! WebAssembly build's) against serde's (`serde_json::from_value`, `to_value`, the native
//! bindings'): over generated JSON values shaped like specs, valid and broken in every way
//! serde tells apart, both accept the same specs and fail with the same message.

use proptest::prelude::*;
use serde_json::{Map, Number, Value, json};
use throttlekit::Error;
use throttlekit::StrategySpec;
use throttlekit::spec::Data;

/// serde's outcome, worded as `from_value`'s.
fn serde_read(v: &Value) -> Result<StrategySpec, String> {
    serde_json::from_value::<StrategySpec>(v.clone())
        .map_err(|e| Error::config("strategy", &format!("is not a valid spec: {e}")).to_string())
}

fn hand_read(v: &Value) -> Result<StrategySpec, String> {
    StrategySpec::from_value(&Data::from(v)).map_err(|e| e.to_string())
}

fn same(v: &Value) {
    let want = serde_read(v);
    assert_eq!(hand_read(v), want, "{v}");
    if let Ok(spec) = want {
        assert_eq!(spec.to_value(), serde_json::to_value(&spec).unwrap(), "{v}");
    }
}

const NAMES: &[&str] = &[
    "kind",
    "options",
    "limit",
    "periodMs",
    "burst",
    "capacity",
    "refillPerSec",
    "windowMs",
    "buckets",
    "resetCadence",
    "anchor",
    "offsetMinutes",
    "weekStartsOn",
    "gcra",
    "tokenBucket",
    "fixedWindow",
    "slidingWindow",
    "slidingWindowLog",
    "quota",
    "calendar-month",
    "calendar-week",
    "calendar-day",
    "fixed",
    "rolling",
    "brust",
    "a",
    "zz",
    "leaky",
    "",
];

fn name() -> impl Strategy<Value = String> {
    prop_oneof![4 => prop::sample::select(NAMES).prop_map(str::to_owned), 1 => "[a-zA-Z\"\\\\\n é]{0,6}"]
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (0u64..20).prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        (-20i64..0).prop_map(|n| json!(n)),
        prop_oneof![Just(1.5), Just(-0.5), Just(1e300), Just(2.0f64.powi(60)), Just(1e-7), Just(0.1), any::<f64>()]
            .prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
        name().prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(3, 24, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..9).prop_map(Value::Array),
            prop::collection::vec((name(), inner), 0..9).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Options for `kind`: mostly the right fields with numbers, sometimes broken.
fn options() -> impl Strategy<Value = Value> {
    let field = (name(), prop_oneof![3 => (0u32..2000).prop_map(|n| json!(n)), 1 => scalar(), 1 => value()]);
    prop_oneof![
        4 => prop::collection::vec(field, 0..8).prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        1 => prop::collection::vec(prop_oneof![3 => (0u32..2000).prop_map(|n| json!(n)), 1 => scalar()], 0..9)
            .prop_map(Value::Array),
        1 => value(),
    ]
}

fn spec() -> impl Strategy<Value = Value> {
    let kind = prop_oneof![6 => name().prop_map(Value::String), 1 => value()];
    prop_oneof![
        6 => (kind.clone(), options(), prop::collection::vec((name(), value()), 0..2)).prop_map(|(k, o, extra)| {
            let mut m: Map<String, Value> = extra.into_iter().collect();
            m.insert("kind".into(), k);
            m.insert("options".into(), o);
            Value::Object(m)
        }),
        1 => (kind.clone(), options(), prop::collection::vec(value(), 0..2)).prop_map(|(k, o, extra)| {
            let mut a = vec![k, o];
            a.extend(extra);
            Value::Array(a)
        }),
        1 => value(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 20_000, ..ProptestConfig::default() })]

    #[test]
    fn reads_as_serde_does(v in spec()) {
        same(&v);
    }
}

/// Each form and message at least once, whatever the generator hits.
#[test]
fn every_form_and_message() {
    let cases = [
        json!({"kind": "gcra", "options": {"limit": 10, "periodMs": 1000}}),
        json!({"kind": "gcra", "options": {"limit": 10, "periodMs": 1000, "burst": null}}),
        json!({"kind": {"gcra": null}, "options": [10, 1000, 5]}),
        json!({"kind": {"gcra": 1}, "options": [10, 1000]}),
        json!({"kind": {}, "options": [10, 1000]}),
        json!({"kind": {"a": null, "b": null}, "options": [10, 1000]}),
        json!(["tokenBucket", {"capacity": 1, "refillPerSec": 0.5}]),
        json!(["tokenBucket", [1]]),
        json!(["tokenBucket", [1, 2, 3]]),
        json!(["tokenBucket", {"capacity": 1, "refillPerSec": 0.5}, 1]),
        json!(["tokenBucket"]),
        json!([]),
        json!([1, {}]),
        json!({"kind": "quota", "options": {"limit": 1, "resetCadence": "hourly"}}),
        json!({"kind": "quota", "options": {"limit": 1, "resetCadence": {"fixed": null}, "periodMs": 5}}),
        json!({"kind": "quota", "options": {"limit": 1, "resetCadence": 1.5}}),
        json!({"kind": "quota", "options": [1, "rolling", 1000, null, 0, 1, 10]}),
        json!({"kind": "quota", "options": [1]}),
        json!({"kind": "leaky", "options": {}}),
        json!({"kind": "gcra"}),
        json!({"options": {}}),
        json!({"kind": "gcra", "options": {"limit": 1, "periodMs": 1}, "extra": 1}),
        json!({"a": 1, "kind": "gcra"}),
        json!({}),
        json!("gcra"),
        json!(null),
        json!({"kind": "gcra", "options": {"limit": "10", "periodMs": 1}}),
        json!({"kind": "gcra", "options": {"limit": null, "periodMs": 1}}),
        json!({"kind": "gcra", "options": {"limit": 1}}),
        json!({"kind": "gcra", "options": {"brust": 1, "limit": true}}),
        json!({"kind": "fixedWindow", "options": {"limit": 1, "windowMs": 1, "x": 1}}),
        json!({"kind": "slidingWindow", "options": {"limit": 1, "windowMs": 1, "buckets": -3}}),
        json!({"kind": "slidingWindowLog", "options": null}),
        json!({"kind": 1e300, "options": null}),
        json!({"kind": -1, "options": null}),
        json!({"kind": "gcra", "options": {"limit": 1, "periodMs": 1, "burst": "x\"\n"}}),
    ];
    for v in &cases {
        same(v);
    }
}
