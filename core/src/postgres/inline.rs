//! The checks of the common strategies written out as plain SQL expressions in the step
//! statement itself, without a call to `throttlekit_v1_step`.
//!
//! Why: calling a PL/pgSQL function from the `SET` costs the server more than the upsert does
//! (its interpreter's per-call setup, docs/postgres.md "Numbers"); the same arithmetic as SQL
//! expressions costs a few operator calls. So a *check* on the *caller's clock* of a GCRA, a
//! token bucket or a fixed window (the strategies most limiters use) is one statement
//!
//! ```sql
//! INSERT INTO t AS s (key, kind, f, a, n, xs, deadline, r) VALUES ($1, <the transition on no state>)
//! ON CONFLICT (key) DO UPDATE SET kind = <the transition on s>, ... RETURNING r
//! ```
//!
//! whose `SET` reads the old state only through `s`, the conflicting row the statement has
//! locked (no CTE, no subquery: atomic under READ COMMITTED), and a new key is decided by the
//! `VALUES` in the same round trip. Every expression below is the line of `functions.sql` it
//! names, in the same order of float operations, so the decisions are the same bits as the
//! function's, the memory store's and the Lua scripts'. Every other op (peek, forecast, lease,
//! give-back, reservation), the other strategies (sliding window, log, quota periods: loops and
//! arrays, unreadable as expressions) and the server's clock (an expression cannot read
//! `clock_timestamp()` once and reuse it) call the function.
//!
//! Parameters: `$1` key, `$2` now (epoch ms), `$3` cost, `$4..` the strategy's parameters as
//! [`super::call::StepCall::params`] holds them.

use super::call::{Op, StepCall};

/// The strategies whose check is inline, by their algorithm number in `functions.sql`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inline {
    /// algo 1: `p = {t, tau, limit}`.
    Gcra,
    /// algo 2: `p = {capacity, refill_per_ms}`.
    TokenBucket,
    /// algo 3: `p = {limit, window_ms}`.
    FixedWindow,
}

impl Inline {
    /// Every inline strategy, in the order of [`Inline::index`].
    pub const ALL: [Inline; 3] = [Inline::Gcra, Inline::TokenBucket, Inline::FixedWindow];

    /// The inline statement that decides `c`, if one does: a check on the caller's clock of an
    /// inline strategy.
    pub fn of(c: &StepCall) -> Option<Inline> {
        if c.op != Op::Check || c.now.is_none() {
            return None;
        }
        match c.algo {
            1 => Some(Inline::Gcra),
            2 => Some(Inline::TokenBucket),
            3 => Some(Inline::FixedWindow),
            _ => None,
        }
    }

    /// The position in [`Inline::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// How many of [`StepCall::params`] the statement takes (`$4` on).
    pub fn params(self) -> usize {
        match self {
            Inline::Gcra => 3,
            Inline::TokenBucket | Inline::FixedWindow => 2,
        }
    }

    /// The statement on `table` (a validated name).
    pub fn statement(self, table: &str) -> String {
        let new: Vec<String> = self.columns(&NONE).into_iter().map(|(_, v)| v).collect();
        let set: Vec<String> = self.columns(&ROW).into_iter().map(|(c, v)| format!("{c} = {v}")).collect();
        format!(
            "INSERT INTO {table} AS s (key, kind, f, a, n, xs, deadline, r) VALUES ($1::text, {}) \
             ON CONFLICT (key) DO UPDATE SET {} RETURNING r",
            new.join(", "),
            set.join(", ")
        )
    }

    /// The transition's allowed outcome on `old`.
    fn transition(self, old: &Old) -> Transition {
        match self {
            Inline::Gcra => gcra(old),
            Inline::TokenBucket => token_bucket(old),
            Inline::FixedWindow => fixed_window(old),
        }
    }

    /// Every column's new value on `old`: the allowed outcome when allowed; otherwise the old
    /// state (a denial changes nothing) unless it has expired, which is gone for good (the
    /// function's "Expiry" lines: kind 0, every state column NULL).
    fn columns(self, old: &Old) -> [(&'static str, String); 7] {
        let t = self.transition(old);
        let allowed = &t.allowed;
        let gone = format!("({} = 0 OR {NOW} > {})", old.kind, old.deadline);
        let keep =
            |new: &str, col: &str| format!("CASE WHEN {allowed} THEN {new} WHEN {gone} THEN NULL ELSE {col} END");
        [
            (
                "kind",
                format!(
                    "CASE WHEN {allowed} THEN {}::smallint WHEN {gone} THEN 0::smallint ELSE {} END",
                    t.kind, old.kind
                ),
            ),
            ("f", keep(&t.f, old.f)),
            ("a", keep(&t.a, old.a)),
            ("n", keep(&t.n, old.n)),
            ("xs", format!("CASE WHEN {allowed} OR {gone} THEN NULL ELSE {} END", old.xs)),
            ("deadline", keep(&t.deadline, old.deadline)),
            ("r", format!("CASE WHEN {allowed} THEN {} ELSE {} END", t.allowed_reply, t.denied_reply)),
        ]
    }
}

/// The old state a transition reads: the conflicting row's columns, or a new key's none.
struct Old {
    kind: &'static str,
    f: &'static str,
    a: &'static str,
    n: &'static str,
    xs: &'static str,
    deadline: &'static str,
}

const ROW: Old = Old { kind: "s.kind", f: "s.f", a: "s.a", n: "s.n", xs: "s.xs", deadline: "s.deadline" };
const NONE: Old = Old {
    kind: "0::smallint",
    f: "NULL::float8",
    a: "NULL::bigint",
    n: "NULL::bigint",
    xs: "NULL::bigint[]",
    deadline: "NULL::bigint",
};

impl Old {
    /// The old state is of `kind` and has not expired (the function's state after its "Expiry"
    /// lines is of that kind).
    fn live(&self, kind: u8) -> String {
        format!("({} = {kind} AND {NOW} <= {})", self.kind, self.deadline)
    }
}

/// An allowed check's state and both replies, as expressions.
struct Transition {
    allowed: String,
    kind: u8,
    f: String,
    a: String,
    n: String,
    deadline: String,
    allowed_reply: String,
    denied_reply: String,
}

const NOW: &str = "$2::bigint";
/// Cast from `NOW`, so `$2` is a bigint wherever Postgres first meets it.
const NOW_F: &str = "$2::bigint::float8";
const COST: &str = "$3::bigint";
const P1: &str = "$4::float8";
const P2: &str = "$5::float8";
const P3: &str = "$6::float8";

/// `throttlekit_v1_ceil(v)`: Rust's saturating `as i64` of `ceil(v)`.
fn ceil(v: &str) -> String {
    format!(
        "CASE WHEN {v} <> {v} THEN 0::bigint WHEN {v} >= 9223372036854775807::float8 THEN 9223372036854775807 \
         WHEN {v} <= -9223372036854775808::float8 THEN -9223372036854775808 ELSE ceil({v})::bigint END"
    )
}

/// `throttlekit_v1_floor(v)`.
fn floor(v: &str) -> String {
    format!(
        "CASE WHEN {v} <> {v} THEN 0::bigint WHEN {v} >= 9223372036854775807::float8 THEN 9223372036854775807 \
         WHEN {v} <= -9223372036854775808::float8 THEN -9223372036854775808 ELSE floor({v})::bigint END"
    )
}

/// `throttlekit_v1_add(x, y)`: saturating.
fn add(x: &str, y: &str) -> String {
    format!(
        "CASE WHEN {y} > 0 AND {x} > 9223372036854775807 - {y} THEN 9223372036854775807 \
         WHEN {y} < 0 AND {x} < -9223372036854775808 - {y} THEN -9223372036854775808 ELSE {x} + {y} END"
    )
}

/// `functions.sql`, `IF algo = 1`: GCRA's check (src/algorithms/gcra.rs).
fn gcra(old: &Old) -> Transition {
    let (t, tau, lim) = (P1, P2, format!("{P3}::bigint"));
    // stored := CASE WHEN kind = 1 THEN f ELSE now_f END; tat := CASE WHEN stored > now_f
    // THEN stored ELSE now_f END.
    let tat = format!("(CASE WHEN {} AND {f} > {NOW_F} THEN {f} ELSE {NOW_F} END)", old.live(1), f = old.f);
    // inc := t * cost; new_tat := tat + inc; allow_at := new_tat - tau.
    let new_tat = format!("({tat} + {t} * {COST}::float8)");
    let allow_at = format!("({new_tat} - {tau})");
    Transition {
        allowed: format!("(NOT {NOW_F} < {allow_at})"),
        kind: 1,
        f: new_tat.clone(),
        a: "NULL".into(),
        n: "NULL".into(),
        deadline: add(NOW, &format!("greatest({}, 1)", ceil(&format!("({new_tat} - {NOW_F})")))),
        allowed_reply: format!(
            "ARRAY[1, {lim}, greatest({}, 0), {}, 0]",
            floor(&format!("(({tau} - ({new_tat} - {NOW_F})) / {t})")),
            ceil(&new_tat)
        ),
        denied_reply: format!(
            "ARRAY[0, {lim}, greatest({}, 0), {}, {}]",
            floor(&format!("(({tau} - ({tat} - {NOW_F})) / {t})")),
            ceil(&tat),
            ceil(&format!("({allow_at} - {NOW_F})"))
        ),
    }
}

/// `functions.sql`, `IF algo = 2`: the token bucket's check (src/algorithms/token_bucket.rs).
fn token_bucket(old: &Old) -> Transition {
    let (cap, rate, lim) = (P1, P2, format!("{P1}::bigint"));
    let tokens = format!(
        "(CASE WHEN {live} THEN least({cap}, {f} + greatest({NOW_F} - {a}::float8, 0.0) * {rate}) ELSE {cap} END)",
        live = old.live(2),
        f = old.f,
        a = old.a
    );
    let left = format!("({tokens} - {COST}::float8)");
    let reset = |v: &str| add(NOW, &ceil(&format!("(({cap} - {v}) / {rate})")));
    Transition {
        allowed: format!("({tokens} >= {COST}::float8)"),
        kind: 2,
        f: left.clone(),
        a: NOW.into(),
        n: "NULL".into(),
        deadline: add(NOW, &format!("greatest({}, 1)", ceil(&format!("({cap} / {rate})")))),
        allowed_reply: format!("ARRAY[1, {lim}, greatest({}, 0), {}, 0]", floor(&left), reset(&left)),
        denied_reply: format!(
            "ARRAY[0, {lim}, greatest({}, 0), {}, greatest({}, 1)]",
            floor(&tokens),
            reset(&tokens),
            ceil(&format!("(({COST}::float8 - {tokens}) / {rate})"))
        ),
    }
}

/// `functions.sql`, `IF algo = 3 OR algo = 6` with algo 3: the fixed window's check (an
/// epoch-aligned window; src/algorithms/period_counter.rs).
fn fixed_window(old: &Old) -> Transition {
    let (lim, window) = (format!("{P1}::bigint"), format!("{P2}::bigint"));
    let start = format!("({NOW} - ((({NOW} % {window}) + {window}) % {window}))");
    let end = format!("({start} + {window})");
    let count = format!("(CASE WHEN {} AND {} = {start} THEN {} ELSE 0 END)", old.live(3), old.a, old.n);
    let new_count = format!("({})", add(&count, COST));
    let until_end = format!("greatest({end} - {NOW}, 1)");
    Transition {
        allowed: format!("({new_count} <= {lim})"),
        kind: 3,
        f: "NULL".into(),
        a: start,
        n: new_count.clone(),
        deadline: add(NOW, &until_end),
        allowed_reply: format!("ARRAY[1, {lim}, {lim} - {new_count}, {end}, 0]"),
        denied_reply: format!("ARRAY[0, {lim}, greatest({lim} - {count}, 0), {end}, {until_end}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_statements_read_the_old_state_only_through_the_conflicting_row_and_call_no_function() {
        for inline in Inline::ALL {
            let sql = inline.statement("tk").to_uppercase();
            // No CTE or subquery (pecorino's over-admission), no PL/pgSQL call.
            assert!(!sql.contains("SELECT") && !sql.contains("WITH"), "{inline:?}: {sql}");
            assert!(!sql.contains("THROTTLEKIT_V1"), "{inline:?}: {sql}");
            assert_eq!(sql.matches(" FROM ").count(), 0, "{inline:?}: {sql}");
            // Every parameter it declares is used, and no other.
            let last = 3 + inline.params();
            assert!(sql.contains(&format!("${last}::")), "{inline:?} uses ${last}");
            assert!(!sql.contains(&format!("${}::", last + 1)), "{inline:?} uses no ${}", last + 1);
        }
    }

    #[test]
    fn only_checks_on_the_callers_clock_of_the_three_strategies_are_inline() {
        let call = |op, now, algo| StepCall { now, op, algo, params: [0.0; 6], cost: 1 };
        assert_eq!(Inline::of(&call(Op::Check, Some(1), 1)), Some(Inline::Gcra));
        assert_eq!(Inline::of(&call(Op::Check, Some(1), 2)), Some(Inline::TokenBucket));
        assert_eq!(Inline::of(&call(Op::Check, Some(1), 3)), Some(Inline::FixedWindow));
        assert_eq!(Inline::of(&call(Op::Check, None, 1)), None, "the server's clock");
        for algo in 4..=7 {
            assert_eq!(Inline::of(&call(Op::Check, Some(1), algo)), None);
        }
        for op in [Op::Forecast, Op::Peek, Op::Reserve, Op::Lease, Op::GiveBack] {
            assert_eq!(Inline::of(&call(op, Some(1), 1)), None, "{op:?}");
        }
        for (i, inline) in Inline::ALL.into_iter().enumerate() {
            assert_eq!(inline.index(), i);
        }
    }
}
