//! The checks of the common strategies written out as plain SQL expressions in the step
//! statement itself, without a call to `throttlekit_v1_step`.
//!
//! Why: calling a PL/pgSQL function from the `SET` costs the server more than the upsert does
//! (its interpreter's per-call setup, docs/postgres.md "Numbers"). So a *check* on the *caller's
//! clock* of a GCRA, a token bucket or a fixed window (the strategies most limiters use) is one
//! statement
//!
//! ```sql
//! INSERT INTO t AS s (key, kind, f, a, n, xs, deadline, r) VALUES ($1, <the transition on no state>)
//! ON CONFLICT (key) DO UPDATE SET kind = <the transition on s>, ... RETURNING r
//! ```
//!
//! whose `SET` reads the old state only through `s`, the conflicting row the statement has
//! locked (no CTE, no subquery: atomic under READ COMMITTED); a new key is decided by the
//! `VALUES` in the same round trip.
//!
//! The statement must stay small: Postgres compiles its expressions afresh at every execution,
//! so their size, not only the path evaluated, is paid per call. Hence everything that does not
//! read the row is computed here, in Rust, with Postgres's own operations (its float-to-bigint
//! rounding, its errors on overflow: where Postgres would raise, the call goes to the function,
//! which raises the same), and sent as parameters; the SQL keeps only what reads the row. Each
//! part names the line of `functions.sql` it is, so the decisions are the same bits as the
//! function's, the memory store's and the Lua scripts'.
//!
//! Every other op (peek, forecast, lease, give-back, reservation), the other strategies
//! (sliding window, log, quota periods: loops over arrays, unreadable as expressions) and the
//! server's clock (an expression cannot read `clock_timestamp()` once and reuse it) call the
//! function.

use fallible_iterator::FallibleIterator;
use tokio_postgres::types::{FromSql, ToSql, Type};

use super::call::{Op, StepCall};
use crate::error::{Error, Result};

/// The strategies whose check is inline, by their algorithm number in `functions.sql`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inline {
    /// algo 1.
    Gcra,
    /// algo 2.
    TokenBucket,
    /// algo 3.
    FixedWindow,
    /// algo 3 at a cost of 0 or 1 within the limit (what nearly every fixed window is asked):
    /// then a denial finds the current window's live count and leaves it as it is, and its
    /// remaining is 0, so the statement writes only when it admits (`DO UPDATE ... WHERE`) and a
    /// denial returns no row ([`Inline::reply`]). Its `SET` reads the count twice, not seven
    /// times, and a denial writes no new row version.
    FixedWindowUnit,
}

/// One parameter of an inline statement: a `bigint` or a `float8` (a value, not a box: a call
/// binds up to eight, on every check).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Param {
    /// A `bigint`.
    Int(i64),
    /// A `float8`.
    Float(f64),
}

impl ToSql for Param {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> std::result::Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Param::Int(v) => v.to_sql(ty, out),
            Param::Float(v) => v.to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        <i64 as ToSql>::accepts(ty) || <f64 as ToSql>::accepts(ty)
    }

    /// Checked against the value's own type, so a `float8` never goes where a `bigint` is
    /// asked (the statements' explicit casts fix each parameter's type).
    fn to_sql_checked(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> std::result::Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Param::Int(v) => v.to_sql_checked(ty, out),
            Param::Float(v) => v.to_sql_checked(ty, out),
        }
    }
}

impl Inline {
    /// Every inline strategy, in the order of [`Inline::index`].
    pub const ALL: [Inline; 4] = [Inline::Gcra, Inline::TokenBucket, Inline::FixedWindow, Inline::FixedWindowUnit];

    /// The inline statement that decides `c` and its parameters after the key (`$2` on), if
    /// one does: a check on the caller's clock of an inline strategy whose parameters Postgres
    /// would accept.
    pub fn bind(c: &StepCall) -> Option<(Inline, Vec<Param>)> {
        let now = c.now?;
        if c.op != Op::Check || c.cost < 0 {
            return None;
        }
        let p = &c.params;
        match c.algo {
            1 => gcra_params(now, c.cost, p[0], p[1], p[2]).map(|v| (Inline::Gcra, v)),
            2 => token_bucket_params(now, c.cost, p[0], p[1]).map(|v| (Inline::TokenBucket, v)),
            3 => match unit_window_params(now, c.cost, p[0], p[1]) {
                Some(v) => Some((Inline::FixedWindowUnit, v)),
                None => fixed_window_params(now, c.cost, p[0], p[1]).map(|v| (Inline::FixedWindow, v)),
            },
            _ => None,
        }
    }

    /// The position in [`Inline::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The five fields of call `c`'s reply (allowed, limit, remaining, reset, retry) from what
    /// its statement returned: `row` is `None` when it returned no row, else the row's one
    /// column as the server sent it in binary (`None`: SQL NULL). The one decoder of both paths
    /// (the tokio store's, through [`Column`], and the session's).
    ///
    /// [`Inline::FixedWindowUnit`] returns only the new count (`int8`): an allowed check's
    /// reply is `1, limit, limit - count, end, 0`, and no row is a denial (`0, limit, 0, end, ms
    /// to the end`), made here from the parameters (what reads no row). The others return the
    /// reply as a `bigint[]` of five.
    pub fn reply(self, c: &StepCall, row: Option<Option<&[u8]>>) -> Result<[i64; 5]> {
        fn column(row: Option<Option<&[u8]>>) -> Result<&[u8]> {
            row.ok_or_else(|| Error::store("the statement returned no reply"))?
                .ok_or_else(|| Error::store("the statement returned a NULL reply"))
        }
        if self != Inline::FixedWindowUnit {
            return fields(column(row)?);
        }
        let w = window_of(c).ok_or_else(|| Error::store("a fixed window's reply to a call that binds no statement"))?;
        let Some(raw) = row else { return Ok([0, w.lim, 0, w.end, w.until_end]) };
        let n = i64::from_sql(&Type::INT8, column(Some(raw))?)
            .map_err(|e| Error::store(format!("reading the reply: {e}")))?;
        let remaining = w.lim.checked_sub(n).ok_or_else(|| Error::store(format!("a count of {n} from Postgres")))?;
        Ok([1, w.lim, remaining, w.end, 0])
    }

    /// The statement on `table` (a validated name).
    pub fn statement(self, table: &str) -> String {
        if self == Inline::FixedWindowUnit {
            return unit_window_statement(table);
        }
        let t = self.transition(&NONE);
        let new = |col: &str| {
            if col == "kind" {
                return format!("CASE WHEN {} THEN {}::smallint ELSE 0::smallint END", t.allowed, t.kind);
            }
            if col == "r" {
                return flag(&t.allowed);
            }
            match t.set.iter().find(|(c, _)| *c == col) {
                Some((_, v)) => format!("CASE WHEN {} THEN {v} END", t.allowed),
                None => format!("NULL::{}", type_of(col)),
            }
        };
        let values: Vec<String> = ["kind", "f", "a", "n", "xs", "deadline", "r"].into_iter().map(new).collect();
        format!(
            "INSERT INTO {table} AS s (key, kind, f, a, n, xs, deadline, r) VALUES ($1::text, {}) \
             ON CONFLICT (key) DO UPDATE SET {} RETURNING {}",
            values.join(", "),
            self.set().join(", "),
            self.returning()
        )
    }

    /// The transition's allowed outcome on `old`.
    fn transition(self, old: &Old) -> Transition {
        match self {
            Inline::Gcra => gcra(old),
            Inline::TokenBucket => token_bucket(old),
            Inline::FixedWindow | Inline::FixedWindowUnit => fixed_window(old),
        }
    }

    /// The `SET` on the conflicting row: an allowed check writes its state and kind; a denied
    /// one writes back what it found (a denial changes nothing) unless that has expired, which
    /// is gone for good (the function's "Expiry" lines: kind 0). Either way `r` records whether
    /// it was allowed, for [`Self::returning`]. The columns this strategy does not use are left as
    /// they are: every reader (these statements, the function) reads a column only under the
    /// kind that owns it, and kind 0 reads as no state.
    fn set(self) -> Vec<String> {
        let t = self.transition(&ROW);
        let allowed = &t.allowed;
        let mut set = vec![format!(
            "kind = CASE WHEN {allowed} THEN {}::smallint WHEN s.kind = 0 OR $2::bigint > s.deadline \
             THEN 0::smallint ELSE s.kind END",
            t.kind
        )];
        set.extend(t.set.iter().map(|(c, v)| format!("{c} = CASE WHEN {allowed} THEN {v} ELSE s.{c} END")));
        set.push(format!("r = {}", flag(allowed)));
        set
    }

    /// The reply, computed in `RETURNING` from the row as the statement left it: an allowed
    /// check's new state, or (denied) the state it found, unchanged or gone; so the old state's
    /// expressions are not repeated in the `SET`.
    fn returning(self) -> String {
        let (allowed, denied) = match self {
            Inline::Gcra => gcra_reply(),
            Inline::TokenBucket => token_bucket_reply(),
            Inline::FixedWindow | Inline::FixedWindowUnit => fixed_window_reply(),
        };
        format!("CASE WHEN s.r[1] = 1 THEN {allowed} ELSE {denied} END")
    }
}

/// One column of a returned row as the server sent it (binary; `None`: SQL NULL), for
/// [`Inline::reply`], whatever its type: what the tokio store reads a row's column as.
pub struct Column<'a>(pub Option<&'a [u8]>);

impl<'a> FromSql<'a> for Column<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> std::result::Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Column(Some(raw)))
    }

    fn from_sql_null(_: &Type) -> std::result::Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Column(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// A `bigint[]` reply of five fields (binary), read without building a `Vec`.
fn fields(raw: &[u8]) -> Result<[i64; 5]> {
    let bad = |e: &dyn std::fmt::Display| Error::store(format!("reading the reply: {e}"));
    let array = postgres_protocol::types::array_from_sql(raw).map_err(|e| bad(&e))?;
    if array.element_type() != Type::INT8.oid() {
        return Err(bad(&format!("an array of type {}, not bigint", array.element_type())));
    }
    let mut out = [0; 5];
    let mut values = array.values();
    let mut n = 0;
    while let Some(v) = values.next().map_err(|e| bad(&e))? {
        let v = v.ok_or_else(|| bad(&"a NULL field"))?;
        let slot = out.get_mut(n).ok_or_else(|| bad(&"more than five fields"))?;
        *slot = postgres_protocol::types::int8_from_sql(v).map_err(|e| bad(&e))?;
        n += 1;
    }
    if n != 5 {
        return Err(Error::store(format!("a reply of {n} fields from Postgres")));
    }
    Ok(out)
}

/// `r` as an inline check leaves it: `{1}` allowed, `{0}` denied.
fn flag(allowed: &str) -> String {
    format!("CASE WHEN {allowed} THEN '{{1}}'::bigint[] ELSE '{{0}}'::bigint[] END")
}

/// A column's SQL type, for its NULL.
fn type_of(col: &str) -> &'static str {
    match col {
        "f" => "float8",
        "xs" => "bigint[]",
        _ => "bigint",
    }
}

/// The old state a transition reads: the conflicting row's columns, or a new key's none.
struct Old {
    kind: &'static str,
    f: &'static str,
    a: &'static str,
    n: &'static str,
    deadline: &'static str,
}

/// The conflicting row in the `SET`; in `RETURNING` the same names read the row as the
/// statement left it.
const ROW: Old = Old { kind: "s.kind", f: "s.f", a: "s.a", n: "s.n", deadline: "s.deadline" };
const NONE: Old =
    Old { kind: "0::smallint", f: "NULL::float8", a: "NULL::bigint", n: "NULL::bigint", deadline: "NULL::bigint" };

impl Old {
    /// The old state is of `kind` and has not expired (what the function's state is after its
    /// "Expiry" lines).
    fn live(&self, kind: u8) -> String {
        format!("{} = {kind} AND $2::bigint <= {}", self.kind, self.deadline)
    }
}

/// An allowed check: when it is allowed, its kind and the columns it writes (the others of its
/// kind are NULL in the function; these statements leave them, as no reader of the kind reads
/// them).
struct Transition {
    allowed: String,
    kind: u8,
    set: Vec<(&'static str, String)>,
}

const MAX: &str = "9223372036854775807";

/// `throttlekit_v1_ceil(v)` (Rust's saturating `as i64` of `ceil(v)`) with `v` written twice,
/// not four times: `ceil(v)` clamped to [-2^63, 2^63] is exact there (a double that large is an
/// integer) and 2^63 stands for the saturated maximum; NaN, which Postgres orders above every
/// number, saturates as in the function.
fn ceil(v: &str) -> String {
    round("ceil", v)
}

/// `throttlekit_v1_floor(v)`, as [`ceil`].
fn floor(v: &str) -> String {
    round("floor", v)
}

fn round(f: &str, v: &str) -> String {
    let x = format!("least(greatest({f}({v}), -{MAX}::float8), {MAX}::float8)");
    format!("CASE WHEN {x} >= {MAX}::float8 THEN {MAX} ELSE {x}::bigint END")
}

/// `throttlekit_v1_add($2, y)`, saturating, with `y` written once (numeric is exact for bigints).
fn add_now(y: &str) -> String {
    format!("least(greatest($2::bigint::numeric + {y}, -{MAX} - 1), {MAX})::bigint")
}

/// Postgres's `float8::bigint`: rounded half to even, an error out of range (`None`).
fn rint(v: f64) -> Option<i64> {
    let r = v.round_ties_even();
    (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&r).then_some(r as i64)
}

/// Postgres's `float8 * float8` (float.h's `float8_mul`): an error (`None`) where finite
/// operands overflow to an infinity or nonzero ones underflow to zero.
fn mul(a: f64, b: f64) -> Option<f64> {
    let r = a * b;
    let raises = (r.is_infinite() && !a.is_infinite() && !b.is_infinite()) || (r == 0.0 && a != 0.0 && b != 0.0);
    (!raises).then_some(r)
}

/// Postgres's `float8 / float8` (`float8_div`): an error (`None`) dividing by zero, and on
/// overflow or underflow as [`mul`].
fn div(a: f64, b: f64) -> Option<f64> {
    if b == 0.0 && !a.is_nan() {
        return None;
    }
    let r = a / b;
    let raises = (r.is_infinite() && !a.is_infinite()) || (r == 0.0 && a != 0.0 && !b.is_infinite());
    (!raises).then_some(r)
}

/// `throttlekit_v1_ceil` in Rust (for parameters that read no row).
fn ceil_sat(v: f64) -> i64 {
    if v.is_nan() || v >= 9_223_372_036_854_775_807.0 {
        i64::MAX
    } else if v <= -9_223_372_036_854_775_808.0 {
        i64::MIN
    } else {
        v.ceil() as i64
    }
}

fn int(v: i64) -> Param {
    Param::Int(v)
}

fn float(v: f64) -> Param {
    Param::Float(v)
}

/// GCRA's parameters: `$2` now, `$3` now as a double, `$4` inc (`t * cost`), `$5` t, `$6` tau,
/// `$7` the limit.
fn gcra_params(now: i64, cost: i64, t: f64, tau: f64, limit: f64) -> Option<Vec<Param>> {
    // inc := p[1] * cost::float8; lim := p[3]::bigint.
    let inc = mul(t, cost as f64)?;
    Some(vec![int(now), float(now as f64), float(inc), float(t), float(tau), int(rint(limit)?)])
}

/// GCRA's `tat` on `old`: `functions.sql`'s `stored := CASE WHEN kind = 1 THEN f ELSE now_f
/// END; tat := CASE WHEN stored > now_f THEN stored ELSE now_f END`.
fn gcra_tat(old: &Old) -> String {
    format!("(CASE WHEN {} AND {f} > $3::float8 THEN {f} ELSE $3::float8 END)", old.live(1), f = old.f)
}

/// `functions.sql`, `IF algo = 1`: GCRA's check (src/algorithms/gcra.rs): `new_tat := tat +
/// inc; allow_at := new_tat - p[2]`, allowed unless `now_f < allow_at`.
fn gcra(old: &Old) -> Transition {
    let new_tat = format!("({} + $4::float8)", gcra_tat(old));
    Transition {
        allowed: format!("(NOT $3::float8 < ({new_tat} - $6::float8))"),
        kind: 1,
        set: vec![
            ("f", new_tat.clone()),
            ("deadline", add_now(&format!("greatest({}, 1)", ceil(&format!("{new_tat} - $3::float8"))))),
        ],
    }
}

/// GCRA's replies on the row as the check left it: allowed, `f` is `new_tat`; denied, the
/// state is the one the check read, so its `tat` is the same.
fn gcra_reply() -> (String, String) {
    let (now, inc, t, tau) = ("$3::float8", "$4::float8", "$5::float8", "$6::float8");
    let tat = gcra_tat(&ROW);
    (
        format!(
            "ARRAY[1, $7::bigint, greatest({}, 0), {}, 0]",
            floor(&format!("({tau} - (s.f - {now})) / {t}")),
            ceil("s.f")
        ),
        format!(
            "ARRAY[0, $7::bigint, greatest({}, 0), {}, {}]",
            floor(&format!("({tau} - ({tat} - {now})) / {t}")),
            ceil(&tat),
            ceil(&format!("(({tat} + {inc}) - {tau}) - {now}"))
        ),
    )
}

/// The token bucket's parameters: `$2` now, `$3` now as a double, `$4` the cost as a double,
/// `$5` capacity, `$6` refill per ms, `$7` the limit, `$8` an allowed check's deadline.
fn token_bucket_params(now: i64, cost: i64, capacity: f64, rate: f64) -> Option<Vec<Param>> {
    // o_deadline := throttlekit_v1_add(now_i, greatest(throttlekit_v1_ceil(p[1] / p[2]), 1)).
    let life = ceil_sat(div(capacity, rate)?).max(1);
    let (lim, deadline) = (rint(capacity)?, now.saturating_add(life));
    Some(vec![int(now), float(now as f64), float(cost as f64), float(capacity), float(rate), int(lim), int(deadline)])
}

/// The token bucket's tokens on `old`: `tokens := least(p[1], f + greatest(now_f - a::float8,
/// 0.0) * p[2])` on a live bucket, else `p[1]`.
fn bucket_tokens(old: &Old) -> String {
    format!(
        "(CASE WHEN {} THEN least($5::float8, {f} + greatest($3::float8 - {a}::float8, 0.0) * $6::float8) \
         ELSE $5::float8 END)",
        old.live(2),
        f = old.f,
        a = old.a
    )
}

/// `functions.sql`, `IF algo = 2`: the token bucket's check (src/algorithms/token_bucket.rs).
fn token_bucket(old: &Old) -> Transition {
    let tokens = bucket_tokens(old);
    Transition {
        allowed: format!("({tokens} >= $4::float8)"),
        kind: 2,
        set: vec![
            ("f", format!("({tokens} - $4::float8)")),
            ("a", "$2::bigint".into()),
            ("deadline", "$8::bigint".into()),
        ],
    }
}

/// The token bucket's replies on the row as the check left it: allowed, `f` is what is left;
/// denied, the state is the one the check read, so its tokens are the same.
fn token_bucket_reply() -> (String, String) {
    let (cost, cap, rate) = ("$4::float8", "$5::float8", "$6::float8");
    let reset = |v: &str| add_now(&ceil(&format!("({cap} - {v}) / {rate}")));
    let tokens = bucket_tokens(&ROW);
    (
        format!("ARRAY[1, $7::bigint, greatest({}, 0), {}, 0]", floor("s.f"), reset("s.f")),
        format!(
            "ARRAY[0, $7::bigint, greatest({}, 0), {}, greatest({}, 1)]",
            floor(&tokens),
            reset(&tokens),
            ceil(&format!("({cost} - {tokens}) / {rate}"))
        ),
    )
}

/// The fixed window's parameters: `$2` now, `$3` the cost, `$4` the limit, `$5` the limit less
/// the cost, `$6` the window's start, `$7` its end, `$8` the ms to its end (at least 1), `$9` an
/// allowed check's deadline.
fn fixed_window_params(now: i64, cost: i64, limit: f64, window_ms: f64) -> Option<Vec<Param>> {
    let w = window(now, cost, limit, window_ms)?;
    Some(vec![
        int(now),
        int(cost),
        int(w.lim),
        int(w.room),
        int(w.start),
        int(w.end),
        int(w.until_end),
        int(w.deadline),
    ])
}

/// What a fixed window's check computes before it reads the row.
struct Window {
    lim: i64,
    /// The limit less the cost: a count up to it admits.
    room: i64,
    start: i64,
    end: i64,
    until_end: i64,
    /// An allowed check's deadline.
    deadline: i64,
}

fn window(now: i64, cost: i64, limit: f64, window_ms: f64) -> Option<Window> {
    // lim := p[1]::bigint; w_start := now_i - (((now_i % p[2]::bigint) + p[2]::bigint) % p[2]::bigint);
    // w_end := w_start + p[2]::bigint (Postgres raises where these overflow: so does checked).
    let (lim, w) = (rint(limit)?, rint(window_ms)?);
    let start = now.checked_sub(now.checked_rem(w)?.checked_add(w)?.checked_rem(w)?)?;
    let end = start.checked_add(w)?;
    let until_end = end.checked_sub(now)?.max(1);
    let room = lim.checked_sub(cost)?;
    Some(Window { lim, room, start, end, until_end, deadline: now.saturating_add(until_end) })
}

/// [`Inline::FixedWindowUnit`]'s parameters, when it decides the call (a cost of 0 or 1 and
/// room for it): `$2` now, `$3` the cost, `$4` the limit less the cost, `$5` an allowed check's
/// deadline, `$6` the window's start (where [`window_count`] reads it). The limit and the
/// window's end are not sent: the reply is made in Rust ([`Inline::reply`]).
fn unit_window_params(now: i64, cost: i64, limit: f64, window_ms: f64) -> Option<Vec<Param>> {
    let w = unit_window(now, cost, limit, window_ms)?;
    Some(vec![int(now), int(cost), int(w.room), int(w.deadline), int(w.start)])
}

/// The window of a [`Inline::FixedWindowUnit`] call: a cost of at most 1 with room for it.
fn unit_window(now: i64, cost: i64, limit: f64, window_ms: f64) -> Option<Window> {
    window(now, cost, limit, window_ms).filter(|w| cost <= 1 && w.room >= 0)
}

/// The window of call `c` (a fixed window's check on the caller's clock).
fn window_of(c: &StepCall) -> Option<Window> {
    window(c.now?, c.cost, c.params[0], c.params[1])
}

/// [`Inline::FixedWindowUnit`]'s statement: [`fixed_window`]'s transition, written where it
/// admits only. With a cost of at most 1 and room for it (`$4 >= 0`, checked in Rust), a
/// denial reads a count above `$4`, so a live row of this window (kind 3, `a = $6`) whose
/// count is at least the limit: the function would write it back unchanged and answer
/// remaining `greatest(limit - count, 0) = 0`. So the `WHERE` skips the write (the row stays
/// locked to the statement's end, as for any `DO UPDATE`) and the denial's reply is made in
/// Rust from no row ([`Inline::reply`]). A new key is admitted by the `VALUES` (count 0 is
/// within `$4`); `r` is not written (nothing reads it after this statement: the others write
/// it before reading). It returns only the new count, a plain `int8`: building the reply's
/// array in `RETURNING` and sending it cost the server more than the count (docs/postgres.md,
/// "Numbers"), and the rest of the reply reads no row.
fn unit_window_statement(table: &str) -> String {
    let count = window_count(&ROW);
    format!(
        "INSERT INTO {table} AS s (key, kind, a, n, deadline) \
         VALUES ($1::text, 3::smallint, $6::bigint, $3::bigint, $5::bigint) \
         ON CONFLICT (key) DO UPDATE SET kind = 3::smallint, a = $6::bigint, n = {count} + $3::bigint, \
         deadline = $5::bigint WHERE {count} <= $4::bigint \
         RETURNING s.n"
    )
}

/// The fixed window's count on `old`: `cnt := CASE WHEN kind = 3 AND a = w_start THEN n ELSE 0
/// END`.
fn window_count(old: &Old) -> String {
    format!("(CASE WHEN {} AND {} = $6::bigint THEN {} ELSE 0 END)", old.live(3), old.a, old.n)
}

/// `functions.sql`, `IF algo = 3 OR algo = 6` with algo 3: the fixed window's check (an
/// epoch-aligned window; src/algorithms/period_counter.rs).
fn fixed_window(old: &Old) -> Transition {
    // new_cnt := throttlekit_v1_add(cnt, cost); allowed when new_cnt <= lim. With cost >= 0 and
    // lim < 2^63 - 1 (a rounded double), that is cnt <= lim - cost, and new_cnt does not
    // saturate when it holds.
    let count = window_count(old);
    Transition {
        allowed: format!("({count} <= $5::bigint)"),
        kind: 3,
        set: vec![
            ("a", "$6::bigint".into()),
            ("n", format!("{count} + $3::bigint")),
            ("deadline", "$9::bigint".into()),
        ],
    }
}

/// The fixed window's replies on the row as the check left it: allowed, `n` is the new count,
/// so the limit less it is `$5 - cnt` (exact: it is at most the limit); denied, the state is
/// the one the check read, so its count is the same.
fn fixed_window_reply() -> (String, String) {
    (
        "ARRAY[1, $4::bigint, $4::bigint - s.n, $7::bigint, 0]".into(),
        format!("ARRAY[0, $4::bigint, greatest($4::bigint - {}, 0), $7::bigint, $8::bigint]", window_count(&ROW)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(op: Op, now: Option<i64>, algo: i16, params: [f64; 4], cost: i64) -> StepCall {
        let [a, b, c, d] = params;
        StepCall { now, op, algo, params: [a, b, c, d, 0.0, 0.0], cost }
    }

    #[test]
    fn the_statements_read_the_old_state_only_through_the_conflicting_row_and_call_no_function() {
        for (inline, params, cost) in [
            (Inline::Gcra, 7, 1),
            (Inline::TokenBucket, 8, 1),
            (Inline::FixedWindow, 9, 2),
            (Inline::FixedWindowUnit, 6, 1),
        ] {
            let sql = inline.statement("tk").to_uppercase();
            // No CTE or subquery (pecorino's over-admission), no PL/pgSQL call.
            assert!(!sql.contains("SELECT") && !sql.contains("WITH"), "{inline:?}: {sql}");
            assert!(!sql.contains("THROTTLEKIT_V1") && !sql.contains(" FROM "), "{inline:?}: {sql}");
            // Every parameter bound is used, and no other.
            assert!(sql.contains(&format!("${params}::")), "{inline:?} uses ${params}");
            assert!(!sql.contains(&format!("${}::", params + 1)), "{inline:?} uses no ${}", params + 1);
            let good = call(
                Op::Check,
                Some(1_765_000_000_000),
                inline.index().min(2) as i16 + 1,
                [10.0, 1000.0, 10.0, 0.0],
                cost,
            );
            let (bound, values) = Inline::bind(&good).expect("inline");
            assert_eq!((bound, values.len() + 1), (inline, params));
            // Small: Postgres compiles these expressions at every execution.
            assert!(sql.len() < 12_000, "{inline:?}: {} bytes", sql.len());
        }
    }

    #[test]
    fn only_checks_on_the_callers_clock_of_the_three_strategies_are_inline() {
        let p = [10.0, 1000.0, 10.0, 0.0];
        let of = |op, now, algo| Inline::bind(&call(op, now, algo, p, 1)).map(|(i, _)| i);
        assert_eq!(of(Op::Check, Some(1), 1), Some(Inline::Gcra));
        assert_eq!(of(Op::Check, Some(1), 2), Some(Inline::TokenBucket));
        assert_eq!(of(Op::Check, Some(1), 3), Some(Inline::FixedWindowUnit));
        assert_eq!(of(Op::Check, None, 1), None, "the server's clock");
        for algo in 4..=7 {
            assert_eq!(of(Op::Check, Some(1), algo), None);
        }
        for op in [Op::Forecast, Op::Peek, Op::Reserve, Op::Lease, Op::GiveBack] {
            assert_eq!(of(op, Some(1), 1), None, "{op:?}");
        }
        for (i, inline) in Inline::ALL.into_iter().enumerate() {
            assert_eq!(inline.index(), i);
        }
    }

    #[test]
    fn only_the_unit_window_reads_no_row_as_a_denial_at_remaining_zero_and_a_count_as_its_admission() {
        // The window [1000, 2000) at 1500, limit 10.
        let c = call(Op::Check, Some(1_500), 3, [10.0, 1000.0, 0.0, 0.0], 1);
        let unit = Inline::FixedWindowUnit;
        assert_eq!(unit.reply(&c, None).unwrap(), [0, 10, 0, 2_000, 500]);
        assert_eq!(unit.reply(&c, Some(Some(&4i64.to_be_bytes()))).unwrap(), [1, 10, 6, 2_000, 0]);
        assert!(unit.reply(&c, Some(None)).unwrap_err().message().contains("NULL"));
        assert!(unit.reply(&c, Some(Some(&[1, 2]))).is_err(), "not an int8");
        let mut five = bytes::BytesMut::new();
        vec![1i64, 10, 9, 1_100, 0].to_sql(&Type::INT8_ARRAY, &mut five).unwrap();
        for i in [Inline::Gcra, Inline::TokenBucket, Inline::FixedWindow] {
            let e = i.reply(&c, None).unwrap_err();
            assert!(e.message().contains("no reply"), "{i:?}: {e}");
            assert_eq!(i.reply(&c, Some(Some(&five))).unwrap(), [1, 10, 9, 1_100, 0], "{i:?}");
        }
        for wrong in [vec![1i64, 2, 3, 4], vec![1, 2, 3, 4, 5, 6]] {
            let mut raw = bytes::BytesMut::new();
            wrong.to_sql(&Type::INT8_ARRAY, &mut raw).unwrap();
            assert!(Inline::Gcra.reply(&c, Some(Some(&raw))).is_err(), "{} fields", wrong.len());
        }
        let mut floats = bytes::BytesMut::new();
        vec![1.0f64; 5].to_sql(&Type::FLOAT8_ARRAY, &mut floats).unwrap();
        assert!(Inline::Gcra.reply(&c, Some(Some(&floats))).is_err(), "not bigints");
    }

    #[test]
    fn parameters_postgres_would_refuse_go_to_the_function_which_raises() {
        let bind = |algo, p, cost| Inline::bind(&call(Op::Check, Some(1_000), algo, p, cost)).map(|(i, _)| i);
        // A limit past bigint: `p[..]::bigint` raises in the function.
        assert_eq!(bind(1, [1.0, 10.0, 1e19, 0.0], 1), None);
        assert_eq!(bind(2, [1e19, 1.0, 0.0, 0.0], 1), None);
        assert_eq!(bind(3, [1e19, 1000.0, 0.0, 0.0], 1), None);
        // A zero window or refill rate: division by zero.
        assert_eq!(bind(3, [10.0, 0.0, 0.0, 0.0], 1), None);
        assert_eq!(bind(2, [10.0, 0.0, 0.0, 0.0], 1), None);
        // t * cost overflowing a double: Postgres's float overflow error.
        assert_eq!(bind(1, [1e300, 1e300, 10.0, 0.0], i64::MAX), None);
        // The limit less the cost overflowing.
        assert_eq!(bind(3, [-9.2e18, 1000.0, 0.0, 0.0], i64::MAX), None);
        // In range: inline, with the rounding of Postgres's float8::bigint.
        assert_eq!(bind(3, [10.0, 1000.0, 0.0, 0.0], i64::MAX), Some(Inline::FixedWindow));
        // The unit statement only where a denial's remaining is 0 and a new key is admitted.
        assert_eq!(bind(3, [10.0, 1000.0, 0.0, 0.0], 0), Some(Inline::FixedWindowUnit));
        assert_eq!(bind(3, [10.0, 1000.0, 0.0, 0.0], 1), Some(Inline::FixedWindowUnit));
        assert_eq!(bind(3, [10.0, 1000.0, 0.0, 0.0], 2), Some(Inline::FixedWindow));
        assert_eq!(bind(3, [0.0, 1000.0, 0.0, 0.0], 1), Some(Inline::FixedWindow), "no room");
        assert_eq!((rint(2.5), rint(3.5), rint(-2.5)), (Some(2), Some(4), Some(-2)));
        assert_eq!(rint(9_223_372_036_854_775_807.0), None, "2^63");
        assert_eq!(rint(f64::NAN), None);
        assert_eq!(
            (ceil_sat(f64::NAN), ceil_sat(1e300), ceil_sat(-1e300), ceil_sat(1.2)),
            (i64::MAX, i64::MAX, i64::MIN, 2)
        );
    }
}
