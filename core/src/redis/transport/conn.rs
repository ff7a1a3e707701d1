//! One connection of a binding-owned socket, without the socket: the replies it owes, in
//! order, and what each one read back means (the binding-owned-socket driver's state; the
//! engine's rules apply to each call, [`super`]).
//!
//! Why here and not in the binding: the order of the replies owed, the login's replies, the one
//! resend after a missing script, the deadlines and which calls fail when the connection goes
//! are rules, and rules live once, in the core. A binding (Node's event loop) keeps the socket,
//! one timer armed at [`Conn::deadline`], and the calls' own objects under the numbers it gave
//! them; it hands each read's bytes to [`Conn::read`], which answers, once per read, what to do
//! with every frame in it ([`Event`]).
//!
//! The rules:
//!
//! - **In order**: a connection owes one reply per command written, answered in order. The
//!   login ([`Conn::open`]: `AUTH`, `SELECT` or `HELLO 3`) comes first, and an error reply to
//!   it refuses the connection ([`Action::Refused`]); the scripts loaded after it owe replies
//!   that are read and dropped, errors too (a failed load only costs the call its fallback).
//! - **At most once**: only a reply that says the server lacks the call's script or function
//!   ([`super::is_missing`]) asks for the call again ([`Action::Retry`]), once
//!   ([`Conn::resent`]); on a cluster every error reply goes to the routes first
//!   ([`Action::Follow`], [`super::super::routed::Routes::follow`]). A call whose connection
//!   failed or timed out after it was written fails and is never sent again ([`Conn::lost`]).
//! - **Bounded**: a call's deadline is `timeout_ms` after it was made ([`Conn::sent`]); past
//!   it [`Conn::expire`] times it out, and the connection must go (a server that stopped
//!   answering would time out every later call too), failing every other call owed on it.
//!
//! Nothing here does I/O or reads a clock: times are the binding's, in ms.

use std::collections::VecDeque;

use super::{Garbage, frame_len, is_missing};
use crate::redis::engine::resp;

/// What a connection's calls need from their store, fixed when the socket is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setup {
    /// Replies to the login commands ([`super::Endpoint::handshake`]).
    pub login_replies: usize,
    /// Replies to the scripts loaded after the login ([`super::preload_for`]).
    pub preload_replies: usize,
    /// Replies to a call's resend after a miss ([`super::replies`] of the fallback); the call's
    /// is the last.
    pub retry_replies: usize,
    /// How long a call may wait for its reply, from when it was made, ms.
    pub timeout_ms: u64,
    /// A cluster master's socket: error replies go to the routes ([`Action::Follow`]).
    pub cluster: bool,
}

/// A reply the connection owes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Owed {
    /// A login command's: an error refuses the connection.
    Login,
    /// One that is read and dropped (a script load, the first replies of a resend or a redirect).
    Dropped,
    /// Call `id`'s, due by `deadline` (ms); `retried` once it was sent again after a miss.
    Call { id: u32, deadline: f64, retried: bool },
}

/// What a frame read back asks of the binding ([`Conn::read`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Action {
    /// The frame is call `id`'s reply: finish it with the frame.
    Reply = 0,
    /// The server lacked call `id`'s script or function: send its resend, once, and tell
    /// [`Conn::resent`]; a call that has none is finished with the frame instead.
    Retry = 1,
    /// (A cluster) the error frame came for call `id`: ask the routes what it means
    /// ([`super::super::routed::Routes::follow`]); if it is the call's reply, finish it with it.
    Follow = 2,
    /// The login was refused (the frame says why): drop the connection.
    Refused = 3,
    /// A reply came that nothing asked for: the stream is out of step, drop the connection.
    Unasked = 4,
}

/// One frame's verdict: what to do ([`Action`]), for which call, and where the frame is in the
/// bytes handed to [`Conn::read`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// What to do.
    pub action: Action,
    /// The call's number, as the binding gave it ([`Conn::sent`]); 0 for a refusal.
    pub id: u32,
    /// Where the frame starts.
    pub start: usize,
    /// Where it ends.
    pub end: usize,
}

/// The state of one connection ([`self`]).
#[derive(Debug)]
pub struct Conn {
    setup: Setup,
    owed: VecDeque<Owed>,
}

impl Conn {
    /// A connection with nothing owed; [`Conn::open`] once its socket is made.
    pub fn new(setup: Setup) -> Conn {
        Conn { setup, owed: VecDeque::new() }
    }

    /// A new socket, on which the login and the scripts were just written: forgets whatever
    /// the last one owed (fail it first with [`Conn::lost`]) and owes their replies. Answers
    /// how many replies are owed.
    pub fn open(&mut self) -> usize {
        self.owed.clear();
        self.owed.extend(std::iter::repeat_n(Owed::Login, self.setup.login_replies));
        self.owed.extend(std::iter::repeat_n(Owed::Dropped, self.setup.preload_replies));
        self.owed.len()
    }

    /// Call `id`, made at `made` (ms; its deadline is `timeout_ms` later, however many times it
    /// is sent), was written: it owes `replies` replies, its own the last. Answers how many
    /// replies are owed.
    pub fn sent(&mut self, id: u32, made: f64, replies: usize) -> usize {
        self.push(id, made + self.setup.timeout_ms as f64, replies, false)
    }

    /// Call `id`, answered [`Action::Retry`], was written again (its resend): it owes
    /// `retry_replies` replies and is never sent again. Answers how many replies are owed.
    pub fn resent(&mut self, id: u32, made: f64) -> usize {
        self.push(id, made + self.setup.timeout_ms as f64, self.setup.retry_replies, true)
    }

    fn push(&mut self, id: u32, deadline: f64, replies: usize, retried: bool) -> usize {
        self.owed.extend(std::iter::repeat_n(Owed::Dropped, replies.saturating_sub(1)));
        self.owed.push_back(Owed::Call { id, deadline, retried });
        self.owed.len()
    }

    /// How many replies are owed (0: every reply is in).
    pub fn owed(&self) -> usize {
        self.owed.len()
    }

    /// The earliest deadline of a call owed (ms), for the binding's one timer; `None` when no
    /// call is owed.
    pub fn deadline(&self) -> Option<f64> {
        self.calls().map(|(_, d)| d).reduce(f64::min)
    }

    fn calls(&self) -> impl Iterator<Item = (u32, f64)> + '_ {
        self.owed.iter().filter_map(|o| match *o {
            Owed::Call { id, deadline, .. } => Some((id, deadline)),
            _ => None,
        })
    }

    /// Reads the complete frames of `buf` from `from` (the engine's one scanner, RESP3 pushes
    /// passed over), at most `max` verdicts: hands each frame's [`Event`] to `each`, in order,
    /// and answers where it stopped (the rest waits for more bytes, or for the next call when
    /// `max` were handed). Stops after a refusal or an unasked reply (the connection must go).
    /// `Err` when the bytes start no RESP frame: drop the connection.
    pub fn read(&mut self, buf: &[u8], from: usize, max: usize, mut each: impl FnMut(Event)) -> Result<usize, Garbage> {
        let mut at = from;
        let mut handed = 0;
        while handed < max && at < buf.len() {
            let Some(n) = frame_len(&buf[at..])? else { break };
            let (start, end) = (at, at + n);
            at = end;
            let frame = &buf[start..end];
            if resp::is_push(frame) {
                continue;
            }
            let event = |action, id| Event { action, id, start, end };
            let Some(owed) = self.owed.pop_front() else {
                each(event(Action::Unasked, 0));
                return Ok(at);
            };
            // An error reply (`-`, or RESP3's blob error `!`); a miss is one.
            let error = resp::error(frame).is_some();
            match owed {
                Owed::Dropped => continue,
                Owed::Login if !error => continue,
                Owed::Login => {
                    each(event(Action::Refused, 0));
                    return Ok(at);
                }
                Owed::Call { id, .. } if error && self.setup.cluster => each(event(Action::Follow, id)),
                Owed::Call { id, retried: false, .. } if is_missing(frame) => each(event(Action::Retry, id)),
                Owed::Call { id, .. } => each(event(Action::Reply, id)),
            }
            handed += 1;
        }
        Ok(at)
    }

    /// The binding's timer fired at `now` (ms): hands every call past its deadline to
    /// `timed_out`, and answers whether any was (then the connection must go: drop it and
    /// fail the rest with [`Conn::lost`]).
    pub fn expire(&mut self, now: f64, mut timed_out: impl FnMut(u32)) -> bool {
        let mut any = false;
        self.owed.retain(|o| match *o {
            Owed::Call { id, deadline, .. } if deadline <= now => {
                timed_out(id);
                any = true;
                false
            }
            _ => true,
        });
        any
    }

    /// The connection went away (or was dropped): hands every call still owed to `failed`, in
    /// order, and owes nothing. The binding fails each (`store_unavailable`): it may have run,
    /// so it is never sent again. (Only a cluster socket that never connected wrote nothing, and
    /// its calls may go to another master: [`super::super::routed::Routes::reroute`].)
    pub fn lost(&mut self, mut failed: impl FnMut(u32)) {
        for (id, _) in self.calls() {
            failed(id);
        }
        self.owed.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETUP: Setup =
        Setup { login_replies: 1, preload_replies: 2, retry_replies: 2, timeout_ms: 100, cluster: false };

    /// Each verdict of a read (its action, call and frame's text), and where the read stopped.
    type Read = (Vec<(Action, u32, &'static str)>, Result<usize, Garbage>);

    fn read(c: &mut Conn, buf: &[u8]) -> Read {
        let mut out = Vec::new();
        let stop = c.read(buf, 0, 64, |e| {
            let text: &'static str = String::from_utf8_lossy(&buf[e.start..e.end]).into_owned().leak();
            out.push((e.action, e.id, text));
        });
        (out, stop)
    }

    #[test]
    fn replies_answer_calls_in_order_after_the_login_and_the_loads() {
        let mut c = Conn::new(SETUP);
        assert_eq!(c.open(), 3);
        assert_eq!(c.sent(7, 0.0, 1), 4);
        assert_eq!(c.sent(8, 0.0, 1), 5);
        // The login's OK and both loads' replies (an error among them) are read and dropped.
        let buf = b"+OK\r\n$2\r\nab\r\n-ERR no\r\n:1\r\n>2\r\n+p\r\n+q\r\n:2\r\n:3";
        let (events, stop) = read(&mut c, buf);
        assert_eq!(events, vec![(Action::Reply, 7, ":1\r\n"), (Action::Reply, 8, ":2\r\n")]);
        assert_eq!(stop, Ok(buf.len() - 2), "the partial frame waits");
        assert_eq!(c.owed(), 0);
        // A reply nobody asked for: the stream is out of step.
        assert_eq!(read(&mut c, b":3\r\n").0, vec![(Action::Unasked, 0, ":3\r\n")]);
    }

    #[test]
    fn resp3_pushes_are_passed_over_and_blob_errors_read() {
        let mut c = Conn::new(Setup { login_replies: 0, preload_replies: 0, ..SETUP });
        c.sent(1, 0.0, 1);
        c.sent(2, 0.0, 1);
        let push = &b">3\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n$0\r\n\r\n"[..];
        let buf = [push, b"%1\r\n+server\r\n+redis\r\n", push, b"!22\r\nERR Function not found\r\n"].concat();
        let (events, stop) = read(&mut c, &buf);
        assert_eq!(
            events,
            vec![
                (Action::Reply, 1, "%1\r\n+server\r\n+redis\r\n"),
                (Action::Retry, 2, "!22\r\nERR Function not found\r\n")
            ]
        );
        assert_eq!(stop, Ok(buf.len()));
        // A push alone is read (its bytes consumed) and hands nothing.
        assert_eq!(read(&mut c, push), (vec![], Ok(push.len())));
    }

    #[test]
    fn a_refused_login_stops_the_read() {
        let mut c = Conn::new(SETUP);
        c.open();
        c.sent(1, 0.0, 1);
        let (events, stop) = read(&mut c, b"-WRONGPASS no\r\n+OK\r\n");
        assert_eq!(events, vec![(Action::Refused, 0, "-WRONGPASS no\r\n")]);
        assert_eq!(stop, Ok(15));
    }

    #[test]
    fn a_miss_asks_for_one_resend_whose_own_miss_is_the_reply() {
        let mut c = Conn::new(Setup { login_replies: 0, preload_replies: 0, ..SETUP });
        c.sent(1, 0.0, 1);
        c.sent(2, 0.0, 1);
        let miss = b"-NOSCRIPT No matching script\r\n";
        let (events, _) = read(&mut c, &[&miss[..], b"-ERR boom\r\n"].concat());
        assert_eq!(
            events,
            vec![(Action::Retry, 1, "-NOSCRIPT No matching script\r\n"), (Action::Reply, 2, "-ERR boom\r\n")]
        );
        // The resend owes two replies (FUNCTION LOAD's dropped), and a second miss ends the call.
        assert_eq!(c.resent(1, 0.0), 2);
        let (events, _) = read(&mut c, &[&b"+OK\r\n"[..], miss].concat());
        assert_eq!(events, vec![(Action::Reply, 1, "-NOSCRIPT No matching script\r\n")]);
    }

    #[test]
    fn on_a_cluster_every_error_goes_to_the_routes() {
        let mut c = Conn::new(Setup { cluster: true, login_replies: 0, preload_replies: 0, ..SETUP });
        c.sent(1, 0.0, 2); // ASKING, then the call
        c.sent(2, 0.0, 1);
        c.sent(3, 0.0, 1);
        let (events, _) = read(&mut c, b"+OK\r\n-MOVED 1 h:1\r\n-NOSCRIPT x\r\n:1\r\n");
        assert_eq!(
            events,
            vec![
                (Action::Follow, 1, "-MOVED 1 h:1\r\n"),
                (Action::Follow, 2, "-NOSCRIPT x\r\n"),
                (Action::Reply, 3, ":1\r\n")
            ]
        );
    }

    #[test]
    fn past_its_deadline_a_call_times_out_and_the_rest_fail_never_resent() {
        let mut c = Conn::new(Setup { login_replies: 0, preload_replies: 0, ..SETUP });
        c.sent(1, 0.0, 1);
        c.sent(2, 50.0, 1);
        c.sent(3, 10.0, 1);
        assert_eq!(c.deadline(), Some(100.0));
        let mut timed_out = Vec::new();
        assert!(!c.expire(99.0, |id| timed_out.push(id)));
        assert!(c.expire(110.0, |id| timed_out.push(id)));
        assert_eq!(timed_out, [1, 3]);
        assert_eq!(c.deadline(), Some(150.0));
        let mut failed = Vec::new();
        c.lost(|id| failed.push(id));
        assert_eq!((failed, c.owed(), c.deadline()), (vec![2], 0, None));
    }

    #[test]
    fn at_most_max_verdicts_per_read_and_bytes_that_are_no_resp_refused() {
        let mut c = Conn::new(Setup { login_replies: 0, preload_replies: 0, ..SETUP });
        c.sent(1, 0.0, 1);
        c.sent(2, 0.0, 1);
        let mut ids = Vec::new();
        assert_eq!(c.read(b":1\r\n:2\r\n", 0, 1, |e| ids.push(e.id)), Ok(4));
        assert_eq!(c.read(b":1\r\n:2\r\n", 4, 1, |e| ids.push(e.id)), Ok(8));
        assert_eq!(ids, [1, 2]);
        c.sent(3, 0.0, 1);
        assert!(c.read(b"HTTP/1.1 400\r\n", 0, 8, |_| {}).is_err());
    }
}
