//! The two-tier modes as a transition system, model-checked with `stateright` (`cargo test -p
//! throttlekit --lib lease::model`): N nodes, the store (L2), credits, clock ticks, in-flight
//! leases, late replies, failed leases, crashes and give-backs, over N up to 4 and small limits.
//!
//! Each test asserts the bound of docs/leasing.md for its strategy (an `always` property) and
//! that it is tight: a state that reaches the bound exists (a `sometimes` property the checker
//! must discover), i.e. "admitted <= bound − 1" has a counterexample.
//!
//! Time is discrete: a tick is the smallest interval; fixed windows are `W` ticks long. Every
//! admission is stamped with the tick it happens at: a credit's spend when the node spends it,
//! the asking request of a lease (or a strict check) when the store decides it, as in strict
//! mode. Each action names the function it stands for:
//!
//! | action | stands for |
//! |---|---|
//! | `Spend(i)` | `Tier::local` answering from credits; with `low_water` > 0, a spend that leaves `low_water` credits or fewer while no lease is in flight is `Local::AnswerThenTopUp`: it also sends a top-up lease (`check_sync`/`check_async`'s top-up arm) |
//! | `SendLease(i)` | `Tier::local` returning `Local::Lease` (one lease in flight per node) |
//! | `Grant(i)` | `lease.lua` / `grant::lease`: the store takes up to `batch` units (a top-up admits no request: all of them are credits) |
//! | `Deliver(i)` | `Tier::absorb`: credits kept until `sent + expiresInMs` (merged with live ones: the earlier expiry), a late grant dropped; a denied top-up leaves the credits held spendable |
//! | `Fail(i)` | a lease whose call failed: `finish` hands the error to the fail policy |
//! | `Strict(i)` | `Limiter::strict_sync` (a request while a lease is in flight, or cost > batch) |
//! | `GiveBack(i)` | `release` / `grant::give_back` (close, idle, eviction) |
//! | `Crash(i)` | the process dies: its credits and its in-flight lease are lost |
//! | `Tick` | time passes: a window resets, a bucket refills, credits expire |

use stateright::{Checker, Model, Property};

/// The store-side strategy, abstracted.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// Fixed window (and fixed/calendar quota): `limit` per window of `w` ticks.
    Window { coupled: bool },
    /// Sliding-window log: `limit` per any `w` consecutive ticks.
    Log,
    /// Token bucket / GCRA: capacity `limit`, `rate` units a tick.
    Bucket { rate: u8 },
}

#[derive(Clone, Debug)]
struct Lease {
    kind: Kind,
    nodes: usize,
    limit: u8,
    batch: u8,
    /// `low_water`: a spend leaving this many credits or fewer sends a top-up (0: never).
    low: u8,
    /// Window length in ticks (windows, log); a lease's lifetime when uncoupled.
    w: u8,
    /// The last tick.
    horizon: u8,
}

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, PartialOrd, Ord)]
enum Flight {
    Idle,
    Sent {
        at: u8,
        /// A `low_water` top-up (no request waits on it) rather than an on-demand lease.
        topup: bool,
    },
    /// Granted, the reply on its way: `extra` credits, void from `mine` by the node's
    /// reckoning (`sent + expiresInMs`).
    Granted {
        extra: u8,
        mine: u8,
    },
    Denied,
}

/// Nodes are interchangeable: states keep them sorted (symmetry reduction by hand).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, PartialOrd, Ord)]
struct Node {
    credits: u8,
    /// The tick from which the credits are void (the node's own reckoning).
    expires: u8,
    flight: Flight,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct State {
    t: u8,
    nodes: Vec<Node>,
    /// Windows: units counted in the current window. Bucket: tokens. Log: unused.
    l2: u8,
    /// Log: units the store counted at each tick.
    stamps: Vec<u8>,
    /// Units admitted (by anyone) at each tick; ticks no future interval of the property
    /// covers are zeroed, so states differing only in old history merge.
    admitted: Vec<u8>,
    /// Some interval reached the bound / went past it (sticky).
    reached: bool,
    exceeded: bool,
}

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
enum Action {
    Spend(usize),
    SendLease(usize),
    Grant(usize),
    Deliver(usize),
    Fail(usize),
    Strict(usize),
    GiveBack(usize),
    Crash(usize),
    Tick,
}

impl Lease {
    /// `nodes` nodes leasing `batch` at a time from `limit` under `kind`, with no low water,
    /// windows (and uncoupled leases' lifetimes) of 2 ticks, over 3 ticks: the shape every case
    /// starts from (the state space grows fast with `w` and `horizon`).
    fn new(kind: Kind, nodes: usize, limit: u8, batch: u8) -> Lease {
        Lease { kind, nodes, limit, batch, low: 0, w: 2, horizon: 3 }
    }

    fn window_end(&self, t: u8) -> u8 {
        (t / self.w + 1) * self.w
    }

    /// Units the store would admit now.
    fn available(&self, s: &State) -> u8 {
        match self.kind {
            Kind::Window { .. } | Kind::Bucket { .. } => {
                if matches!(self.kind, Kind::Bucket { .. }) {
                    s.l2
                } else {
                    self.limit - s.l2
                }
            }
            Kind::Log => {
                let from = (s.t + 1).saturating_sub(self.w) as usize;
                self.limit - s.stamps[from..=s.t as usize].iter().sum::<u8>()
            }
        }
    }

    /// The store takes `n` units at the current tick.
    fn take(&self, s: &mut State, n: u8) {
        match self.kind {
            Kind::Window { .. } => s.l2 += n,
            Kind::Bucket { .. } => s.l2 -= n,
            Kind::Log => s.stamps[s.t as usize] += n,
        }
    }

    /// The bound of docs/leasing.md over `ticks` consecutive ticks. A node holds at most
    /// `batch − 1` credits, or `low_water + batch` once a top-up lands on credits at the mark.
    fn bound(&self, ticks: u8) -> u32 {
        let held = if self.low == 0 { self.batch as u32 - 1 } else { self.low as u32 + self.batch as u32 };
        let carried = self.nodes as u32 * held;
        match self.kind {
            Kind::Window { coupled: true } => self.limit as u32,
            Kind::Window { coupled: false } | Kind::Log => self.limit as u32 + carried,
            Kind::Bucket { rate } => self.limit as u32 + rate as u32 * (ticks as u32 - 1) + carried,
        }
    }

    /// The largest excess over the bound of any interval the property speaks of (<= 0 when it holds), and
    /// whether some interval reaches the bound exactly.
    fn worst(&self, s: &State) -> (i64, bool) {
        let (mut worst, mut tight) = (i64::MIN, false);
        let mut check = |sum: u32, bound: u32| {
            worst = worst.max(sum as i64 - bound as i64);
            tight |= sum == bound;
        };
        let a = &s.admitted;
        match self.kind {
            Kind::Window { .. } => {
                for start in (0..a.len()).step_by(self.w as usize) {
                    let end = (start + self.w as usize).min(a.len());
                    check(a[start..end].iter().map(|&x| x as u32).sum(), self.bound(self.w));
                }
            }
            Kind::Log => {
                for start in 0..a.len() {
                    let end = (start + self.w as usize).min(a.len());
                    check(a[start..end].iter().map(|&x| x as u32).sum(), self.bound(self.w));
                }
            }
            Kind::Bucket { .. } => {
                for start in 0..a.len() {
                    for end in start + 1..=a.len() {
                        check(a[start..end].iter().map(|&x| x as u32).sum(), self.bound((end - start) as u8));
                    }
                }
            }
        }
        (worst, tight)
    }
}

impl Model for Lease {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let l2 = if matches!(self.kind, Kind::Bucket { .. }) { self.limit } else { 0 };
        let n = self.horizon as usize + 1;
        vec![State {
            t: 0,
            nodes: vec![Node { credits: 0, expires: 0, flight: Flight::Idle }; self.nodes],
            l2,
            stamps: vec![0; n],
            admitted: vec![0; n],
            reached: false,
            exceeded: false,
        }]
    }

    fn actions(&self, s: &State, out: &mut Vec<Action>) {
        let live = |n: &Node| n.credits > 0 && s.t < n.expires;
        for (i, n) in s.nodes.iter().enumerate() {
            if live(n) {
                out.push(Action::Spend(i));
                out.push(Action::GiveBack(i));
            }
            match n.flight {
                Flight::Idle if !live(n) => out.push(Action::SendLease(i)),
                Flight::Sent { .. } => {
                    out.push(Action::Grant(i));
                    out.push(Action::Fail(i));
                }
                Flight::Granted { .. } | Flight::Denied => out.push(Action::Deliver(i)),
                _ => {}
            }
            if n.credits > 0 || n.flight != Flight::Idle {
                out.push(Action::Crash(i));
            }
        }
        // A request sent strict while a lease is in flight (any node's: they are alike).
        if s.nodes.iter().any(|n| n.flight != Flight::Idle) && self.available(s) > 0 {
            out.push(Action::Strict(0));
        }
        if s.t < self.horizon {
            out.push(Action::Tick);
        }
    }

    fn next_state(&self, s: &State, action: Action) -> Option<State> {
        let mut s = s.clone();
        let t = s.t;
        match action {
            Action::Spend(i) => {
                s.nodes[i].credits -= 1;
                s.admitted[t as usize] += 1;
                if self.low > 0 && s.nodes[i].credits <= self.low && s.nodes[i].flight == Flight::Idle {
                    s.nodes[i].flight = Flight::Sent { at: t, topup: true };
                }
            }
            Action::SendLease(i) => {
                s.nodes[i].credits = 0;
                s.nodes[i].flight = Flight::Sent { at: t, topup: false };
            }
            Action::Grant(i) => {
                let Flight::Sent { at, topup } = s.nodes[i].flight else { return None };
                let granted = self.batch.min(self.available(&s));
                if granted == 0 {
                    s.nodes[i].flight = Flight::Denied;
                } else {
                    self.take(&mut s, granted);
                    if !topup {
                        s.admitted[t as usize] += 1; // the asking request, decided here
                    }
                    let expires = match self.kind {
                        Kind::Window { coupled: true } => self.window_end(t),
                        _ => t + self.w,
                    };
                    // expiresInMs = expires - t on the store's clock, added to the send time.
                    let mine = at + (expires - t);
                    s.nodes[i].flight = Flight::Granted { extra: granted - u8::from(!topup), mine };
                }
            }
            Action::Deliver(i) => {
                if let Flight::Granted { extra, mine } = s.nodes[i].flight
                    && t < mine
                    && extra > 0
                {
                    let n = &mut s.nodes[i];
                    if n.credits > 0 && t < n.expires {
                        n.expires = n.expires.min(mine);
                    } else {
                        n.credits = 0;
                        n.expires = mine;
                    }
                    n.credits += extra;
                }
                s.nodes[i].flight = Flight::Idle;
            }
            Action::Fail(i) => s.nodes[i].flight = Flight::Idle,
            Action::Strict(_) => {
                if self.available(&s) == 0 {
                    return None;
                }
                self.take(&mut s, 1);
                s.admitted[t as usize] += 1;
            }
            Action::GiveBack(i) => {
                let n = s.nodes[i].credits;
                match self.kind {
                    // Only the credits of this window go back to its counter (the coupled
                    // ones always are; an uncoupled grant of the previous window is dropped).
                    Kind::Window { coupled } => {
                        if coupled || s.nodes[i].expires <= self.window_end(t) {
                            s.l2 = s.l2.saturating_sub(n);
                        }
                    }
                    Kind::Bucket { .. } => s.l2 = (s.l2 + n).min(self.limit),
                    Kind::Log => {}
                }
                s.nodes[i].credits = 0;
            }
            Action::Crash(i) => s.nodes[i] = Node { credits: 0, expires: 0, flight: Flight::Idle },
            Action::Tick => {
                s.t += 1;
                match self.kind {
                    Kind::Window { .. } if s.t.is_multiple_of(self.w) => s.l2 = 0,
                    Kind::Bucket { rate } => s.l2 = (s.l2 + rate).min(self.limit),
                    _ => {}
                }
                for n in &mut s.nodes {
                    if s.t >= n.expires {
                        n.credits = 0;
                        n.expires = 0;
                    }
                }
            }
        }
        s.nodes.sort();
        let (worst, tight) = self.worst(&s);
        s.exceeded |= worst > 0;
        s.reached |= tight;
        // Forget what no later interval covers: before the current window (windows), before
        // the last `w` ticks (log and its stamps). A bucket's intervals start anywhere.
        let keep_from = match self.kind {
            Kind::Window { .. } => (s.t / self.w * self.w) as usize,
            Kind::Log => (s.t + 1).saturating_sub(self.w) as usize,
            Kind::Bucket { .. } => 0,
        };
        for a in &mut s.admitted[..keep_from] {
            *a = 0;
        }
        for a in &mut s.stamps[..keep_from] {
            *a = 0;
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("admitted <= bound", |_: &Lease, s: &State| !s.exceeded),
            Property::sometimes("admitted == bound (tight)", |_: &Lease, s: &State| s.reached),
        ]
    }
}

/// Checks `model` exhaustively: the bound always holds and is reached.
fn check(model: Lease) {
    check_bound(model, true)
}

/// Checks `model` exhaustively: the bound always holds, and when `tight`, is reached.
fn check_bound(model: Lease, tight: bool) {
    let name = format!("{model:?}");
    let checker = model.checker().spawn_bfs().join();
    assert!(checker.is_done(), "{name}: the state space was not exhausted");
    assert!(
        checker.discovery("admitted <= bound").is_none(),
        "{name}: the bound is broken: {:?}",
        checker.discovery("admitted <= bound")
    );
    if tight {
        assert!(
            checker.discovery("admitted == bound (tight)").is_some(),
            "{name}: the bound is never reached (not tight)"
        );
    }
    eprintln!("{name}: {} states", checker.unique_state_count());
}

#[test]
fn fixed_window_coupled_admits_exactly_the_limit_per_window() {
    for nodes in 1..=4 {
        check(Lease::new(Kind::Window { coupled: true }, nodes, 4, 2));
    }
}

#[test]
fn fixed_window_uncoupled_admits_at_most_limit_plus_n_times_batch_minus_one() {
    // Tightness needs limit >= N·batch (every node carries a full lease over the boundary).
    for nodes in 1..=3 {
        check(Lease::new(Kind::Window { coupled: false }, nodes, 2 * nodes as u8, 2));
    }
    check(Lease::new(Kind::Window { coupled: false }, 2, 6, 3));
}

#[test]
fn sliding_log_admits_at_most_limit_plus_n_times_batch_minus_one_per_any_window() {
    for nodes in 1..=3 {
        check(Lease::new(Kind::Log, nodes, 2 * nodes as u8, 2));
    }
}

#[test]
fn bucket_admits_at_most_burst_plus_rate_t_plus_n_times_batch_minus_one() {
    // Capacity 2N refilling N a tick: a full refill takes 2 ticks. Credits that live as long
    // (w = 2: the token bucket's lease lifetime, capacity / rate) keep the bound; credits that
    // outlive the refill (w = 3: like GCRA's lifetime, one period, which outlasts the refill of a
    // burst below the limit) reach it.
    for nodes in 1..=2u8 {
        let lease = Lease::new(Kind::Bucket { rate: nodes }, nodes as usize, 2 * nodes, 2);
        check_bound(lease.clone(), false);
        check(Lease { w: 3, ..lease });
    }
}

#[test]
fn low_water_coupled_still_admits_exactly_the_limit_per_window() {
    for nodes in 1..=3 {
        check(Lease { low: 1, ..Lease::new(Kind::Window { coupled: true }, nodes, 4, 2) });
    }
}

#[test]
fn low_water_uncoupled_admits_at_most_limit_plus_n_times_batch_plus_low_water() {
    // A top-up lands on up to `low` credits: a node carries `low + batch` over the boundary.
    // Tightness needs three leases per node in one window (a lease, then two top-ups).
    for nodes in 1..=2 {
        check(Lease { low: 1, ..Lease::new(Kind::Window { coupled: false }, nodes, 6 * nodes as u8, 2) });
    }
}

#[test]
fn low_water_sliding_log_and_bucket_keep_their_bounds() {
    check(Lease { low: 1, ..Lease::new(Kind::Log, 1, 6, 2) });
    check_bound(Lease { low: 1, w: 3, ..Lease::new(Kind::Bucket { rate: 1 }, 1, 2, 2) }, false);
}

/// `Lease` with its successor function or its one property replaced: a model the checker must
/// find broken, or it proves nothing.
#[derive(Clone, Debug)]
struct Variant {
    lease: Lease,
    next_state: fn(&Lease, &State, Action) -> Option<State>,
    property: &'static str,
    holds: fn(&Lease, &State) -> bool,
}

impl Model for Variant {
    type State = State;
    type Action = Action;
    fn init_states(&self) -> Vec<State> {
        self.lease.init_states()
    }
    fn actions(&self, s: &State, out: &mut Vec<Action>) {
        self.lease.actions(s, out)
    }
    fn next_state(&self, s: &State, a: Action) -> Option<State> {
        (self.next_state)(&self.lease, s, a)
    }
    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::always(self.property, |m: &Variant, s: &State| (m.holds)(&m.lease, s))]
    }
}

/// Checks `variant` exhaustively: its property must be broken somewhere.
fn check_broken(variant: Variant) {
    let property = variant.property;
    let checker = variant.checker().spawn_bfs().join();
    assert!(checker.discovery(property).is_some(), "{property}: never broken");
}

#[test]
fn low_water_breaks_the_bound_without_it() {
    // The same fleet checked against `limit + N·(batch − 1)`: a top-up carries more.
    check_broken(Variant {
        lease: Lease { low: 1, ..Lease::new(Kind::Window { coupled: false }, 1, 6, 2) },
        next_state: <Lease as Model>::next_state,
        property: "admitted <= limit + N(batch-1)",
        holds: |lease, s| {
            let old = Lease { low: 0, ..lease.clone() };
            let sums = s.admitted.chunks(lease.w as usize).map(|c| c.iter().map(|&x| x as u32).sum::<u32>());
            sums.max().unwrap_or(0) <= old.bound(lease.w)
        },
    });
}

#[test]
fn the_checker_finds_a_broken_bound() {
    // A node that kept a late grant's credits (the original's gap) breaks the coupled bound:
    // the checker must say so, or it proves nothing.
    check_broken(Variant {
        lease: Lease::new(Kind::Window { coupled: true }, 2, 4, 2),
        next_state: |lease, s, a| {
            if let Action::Deliver(i) = a
                && let Flight::Granted { extra, .. } = s.nodes[i].flight
            {
                let mut s = s.clone();
                s.nodes[i].credits += extra;
                s.nodes[i].expires = lease.horizon + 1; // credited whenever it lands, kept on
                s.nodes[i].flight = Flight::Idle;
                return Some(s);
            }
            lease.next_state(s, a)
        },
        property: "admitted <= bound",
        holds: |lease, s| lease.worst(s).0 <= 0 && !s.exceeded,
    });
}
