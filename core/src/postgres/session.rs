//! One Postgres connection without I/O: the bytes a binding's own socket sends and what the
//! bytes it receives mean (docs/postgres.md, "Paths").
//!
//! Why: a binding whose runtime is an event loop (Node) pays two thread hops per call when the
//! tokio store does the I/O, more than the statement costs the server. Such a binding writes
//! [`Session`]'s bytes on its own socket and feeds back what it reads; everything that decides
//! stays here and in [`super::call`]: the login (trust, cleartext, MD5, SCRAM-SHA-256, with
//! `postgres-protocol`'s codecs), the statements prepared once per connection, each call's
//! parameters ([`super::call::prepare`], [`Inline::bind`]) and the reading of its row
//! ([`super::call::read`]), so a decision comes from the same code as on the tokio store.
//!
//! The wire, as tokio-postgres speaks it: after the login, one `Parse` + `Describe` per statement
//! and a `Sync` (the parameter types come back in `ParameterDescription`); then each call is
//! `Bind` (binary parameters and result) + `Execute` + `Sync`, so calls pipeline freely and each
//! is its own implicit transaction: one call's error never aborts another's. Replies come back in
//! order, each ending at `ReadyForQuery`.
//!
//! A call is sent once. The step statement on a key with no row decides nothing (it inserts an
//! empty row, see [`super::schema::Statements::step`]); the session then sends the call as
//! [`super::schema::Statements::step_new`] itself, as the tokio store does, and that call's
//! reply comes after those pipelined behind it. Nothing else is ever sent again: when the
//! connection fails or a call times out, the driver drops the socket and [`Session::abort`]s what
//! is owed, each then `store_unavailable` (it may have committed).

use std::collections::VecDeque;

use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::authentication::sasl::{self, ChannelBinding, ScramSha256};
use postgres_protocol::message::{backend::Message, frontend};
use tokio_postgres::types::{FromSql, ToSql, Type};

use super::call::{self, StepCall};
use super::inline::Inline;
use super::schema::Statements;
use crate::error::{Error, ErrorCode, Result};
use crate::store::Reply;

/// Where a session connects and how it logs in, read from a libpq-style URL by tokio-postgres's
/// own parser (so both paths read a URL the same way).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The host name or address (TCP), or the Unix socket's full path (`<dir>/.s.PGSQL.<port>`).
    pub host: String,
    /// The TCP port (also in a Unix socket's path).
    pub port: u16,
    /// `host` is a Unix socket path.
    pub unix: bool,
    /// `sslmode`: `disable`, `prefer` (the default: TLS when the server offers it) or `require`.
    pub tls: Tls,
    user: String,
    password: Option<Vec<u8>>,
    dbname: Option<String>,
    options: Option<String>,
    application_name: Option<String>,
}

/// The URL's `sslmode`, as the tokio store reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tls {
    /// Plain TCP.
    Disable,
    /// Ask for TLS (`SSLRequest`); plain when the server declines.
    Prefer,
    /// Ask for TLS; a server that declines is `store_unavailable`.
    Require,
}

impl Endpoint {
    /// The endpoint of `url`: `config_invalid` (`postgres.url`) when it is not a Postgres URL;
    /// `None` for what a binding's socket does not do (more than one host: the tokio store
    /// tries them in turn).
    pub fn parse(url: &str) -> Result<Option<Endpoint>> {
        let config: tokio_postgres::Config =
            url.parse().map_err(|e| Error::config("postgres.url", &format!("is not a Postgres URL: {e}")))?;
        let (hosts, ports) = (config.get_hosts(), config.get_ports());
        if hosts.len() > 1 || ports.len() > 1 || !config.get_hostaddrs().is_empty() {
            return Ok(None);
        }
        let port = ports.first().copied().unwrap_or(5432);
        let (host, unix) = match hosts.first() {
            None => ("localhost".to_string(), false),
            Some(tokio_postgres::config::Host::Tcp(h)) => (h.clone(), false),
            #[cfg(unix)]
            Some(tokio_postgres::config::Host::Unix(dir)) => {
                (dir.join(format!(".s.PGSQL.{port}")).to_string_lossy().into_owned(), true)
            }
        };
        let tls = match config.get_ssl_mode() {
            tokio_postgres::config::SslMode::Disable => Tls::Disable,
            tokio_postgres::config::SslMode::Require => Tls::Require,
            _ => Tls::Prefer,
        };
        let user = match config.get_user() {
            Some(u) => u.to_string(),
            None => std::env::var("USER").map_err(|_| Error::config("postgres.url", "names no user"))?,
        };
        Ok(Some(Endpoint {
            host,
            port,
            unix,
            tls: if unix { Tls::Disable } else { tls },
            user,
            password: config.get_password().map(<[u8]>::to_vec),
            dbname: config.get_dbname().map(str::to_string),
            options: config.get_options().map(str::to_string),
            application_name: config.get_application_name().map(str::to_string),
        }))
    }
}

/// The `SSLRequest` a socket sends first when [`Endpoint::tls`] is not `Disable`; the server
/// answers one byte, `S` (start TLS on this socket, then the session's bytes) or `N`.
pub fn ssl_request() -> Vec<u8> {
    let mut buf = BytesMut::new();
    frontend::ssl_request(&mut buf);
    buf.to_vec()
}

/// The statements a session prepares, by their position (their names are `tk<position>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prepared {
    Inline(Inline),
    Step,
    StepNew,
}

impl Prepared {
    const ALL: [Prepared; 5] = [
        Prepared::Inline(Inline::Gcra),
        Prepared::Inline(Inline::TokenBucket),
        Prepared::Inline(Inline::FixedWindow),
        Prepared::Step,
        Prepared::StepNew,
    ];

    fn index(self) -> usize {
        match self {
            Prepared::Inline(i) => i.index(),
            Prepared::Step => 3,
            Prepared::StepNew => 4,
        }
    }

    fn name(self) -> &'static str {
        ["tk0", "tk1", "tk2", "tk3", "tk4"][self.index()]
    }

    fn sql(self, s: &Statements) -> &str {
        match self {
            Prepared::Inline(i) => &s.inline[i.index()],
            Prepared::Step => &s.step,
            Prepared::StepNew => &s.step_new,
        }
    }
}

/// One call the session owes a reply to.
struct Owed<T> {
    token: T,
    key: String,
    call: StepCall,
    statement: Prepared,
}

/// A call's outcome, with what the driver handed in: its token and the call (whose op and time
/// [`crate::Limiter::finish_sql`] reads).
pub struct Done<T> {
    /// The driver's token of the call.
    pub token: T,
    /// The call's parameters.
    pub call: StepCall,
    /// The store's reply: `store_unavailable` (or `config_invalid`) when the server refused it.
    pub reply: Result<Reply>,
}

enum State {
    /// Waiting for the server's authentication request.
    Startup,
    /// In a SCRAM exchange.
    Scram(Box<ScramSha256>),
    /// Logged in; waiting for `ReadyForQuery` before preparing.
    LoggedIn,
    /// The statements' `Parse`s are out; waiting for their descriptions.
    Preparing,
    /// Calls go out as they are made.
    Ready,
}

/// A reply being read: the row's `r`, or the error the server sent.
#[derive(Default)]
struct Reading {
    row: Option<Option<Vec<i64>>>,
    error: Option<Error>,
}

/// One connection's protocol state (see the module's text). `T` is the driver's token of a
/// call, handed back with its outcome.
pub struct Session<T> {
    endpoint: Endpoint,
    statements: Statements,
    synchronous_commit_off: bool,
    state: State,
    input: BytesMut,
    output: BytesMut,
    /// Each prepared statement's parameter types, from the server.
    types: Vec<Vec<Type>>,
    /// Calls made before the session was ready, encoded once it is.
    held: Vec<Owed<T>>,
    owed: VecDeque<Owed<T>>,
    /// Setup replies still due (each ends at a `ReadyForQuery`) before the owed calls'.
    setup_due: usize,
    reading: Reading,
}

/// `store_unavailable` (or `config_invalid` when the schema is missing) for an error the server
/// sent: one wording for both paths (the tokio store's `pg_error` says the same).
pub fn server_error(what: &str, code: &str, message: &str) -> Error {
    let described = format!("{message} (SQLSTATE {code})");
    match code {
        // undefined_function, undefined_table.
        "42883" | "42P01" => Error::new(
            ErrorCode::ConfigInvalid,
            format!(
                "postgres.table: {what}: {described} (the table or throttlekit's functions are missing: call migrate)"
            ),
        ),
        // invalid_password, invalid_authorization_specification.
        "28P01" | "28000" => {
            Error::store(format!("{what}: authentication failed: {described} (check the URL's user and password)"))
        }
        _ => Error::store(format!("{what}: {described}")),
    }
}

fn protocol(e: impl std::fmt::Display) -> Error {
    Error::store(format!("a malformed message from Postgres: {e}"))
}

/// The `SQLSTATE` and message of an `ErrorResponse`'s fields.
fn error_fields(fields: &mut postgres_protocol::message::backend::ErrorFields<'_>) -> (String, String) {
    let (mut code, mut message) = (String::new(), String::new());
    while let Ok(Some(f)) = fields.next() {
        let value = String::from_utf8_lossy(f.value_bytes()).into_owned();
        match f.type_() {
            b'C' => code = value,
            b'M' => message = value,
            _ => {}
        }
    }
    (code, message)
}

impl<T> Session<T> {
    /// A session to `endpoint` for `statements`' table; its first bytes (the startup message)
    /// are in [`Session::take_output`].
    pub fn new(endpoint: Endpoint, statements: Statements, synchronous_commit_off: bool) -> Result<Session<T>> {
        let mut output = BytesMut::new();
        let mut params: Vec<(&str, &str)> = vec![("user", &endpoint.user), ("client_encoding", "UTF8")];
        if let Some(db) = &endpoint.dbname {
            params.push(("database", db));
        }
        if let Some(o) = &endpoint.options {
            params.push(("options", o));
        }
        if let Some(a) = &endpoint.application_name {
            params.push(("application_name", a));
        }
        frontend::startup_message(params, &mut output).map_err(protocol)?;
        Ok(Session {
            endpoint,
            statements,
            synchronous_commit_off,
            state: State::Startup,
            input: BytesMut::new(),
            output,
            types: vec![Vec::new(); Prepared::ALL.len()],
            held: Vec::new(),
            owed: VecDeque::new(),
            setup_due: 0,
            reading: Reading::default(),
        })
    }

    /// The session is logged in and its statements are prepared.
    pub fn is_ready(&self) -> bool {
        matches!(self.state, State::Ready)
    }

    /// How many calls are owed a reply (made and not yet done or aborted).
    pub fn owed(&self) -> usize {
        self.owed.len() + self.held.len()
    }

    /// The bytes to write now (empty when there are none).
    pub fn take_output(&mut self) -> Vec<u8> {
        self.output.split().to_vec()
    }

    /// Makes a call of `c` on the full key `key`: its bytes are in [`Session::take_output`] at
    /// once when the session is ready, else once it is.
    pub fn call(&mut self, token: T, key: String, c: StepCall) -> Result<()> {
        let statement = match Inline::bind(&c) {
            Some((i, _)) => Prepared::Inline(i),
            None => Prepared::Step,
        };
        let owed = Owed { token, key, call: c, statement };
        if self.is_ready() {
            self.send(owed)?;
        } else {
            self.held.push(owed);
        }
        Ok(())
    }

    /// Encodes `o`'s `Bind` + `Execute` + `Sync` and owes it a reply.
    fn send(&mut self, o: Owed<T>) -> Result<()> {
        let types = &self.types[o.statement.index()];
        let c = &o.call;
        let encode = |params: &[&(dyn ToSql + Sync)], out: &mut BytesMut| -> Result<()> {
            if params.len() != types.len() {
                return Err(Error::store(format!(
                    "the prepared statement takes {} parameters, not {}",
                    types.len(),
                    params.len()
                )));
            }
            let values = params.iter().zip(types);
            let serialize = |(v, ty): (&&(dyn ToSql + Sync), &Type), buf: &mut BytesMut| {
                v.to_sql_checked(ty, buf).map(|n| match n {
                    tokio_postgres::types::IsNull::Yes => postgres_protocol::IsNull::Yes,
                    tokio_postgres::types::IsNull::No => postgres_protocol::IsNull::No,
                })
            };
            frontend::bind("", o.statement.name(), Some(1), values, serialize, Some(1), out).map_err(|e| match e {
                frontend::BindError::Conversion(e) => Error::store(format!("encoding a parameter: {e}")),
                frontend::BindError::Serialization(e) => protocol(e),
            })?;
            frontend::execute("", 0, out).map_err(protocol)?;
            frontend::sync(out);
            Ok(())
        };
        let key = o.key.as_str();
        match o.statement {
            Prepared::Inline(_) => {
                let (_, values) =
                    Inline::bind(c).ok_or_else(|| Error::store("an inline call that binds no statement"))?;
                let mut params: Vec<&(dyn ToSql + Sync)> = vec![&key];
                params.extend(values.iter().map(|v| &**v as &(dyn ToSql + Sync)));
                encode(&params, &mut self.output)?;
            }
            Prepared::Step | Prepared::StepNew => {
                let (op, floats) = (c.op as i16, &c.params[..]);
                encode(&[&key, &c.now, &op, &c.algo, &floats, &c.cost], &mut self.output)?;
            }
        }
        self.owed.push_back(o);
        Ok(())
    }

    /// Reads `bytes` from the server. The outcomes of the calls they complete are appended to
    /// `done`, in the order they complete; new bytes to send may be in
    /// [`Session::take_output`] (the login's answers, the statements once logged in, held
    /// calls, a step's follow-up). An `Err` is fatal to the connection: the driver drops the
    /// socket and [`Session::abort`]s what is still owed.
    pub fn feed(&mut self, bytes: &[u8], done: &mut Vec<Done<T>>) -> Result<()> {
        self.input.extend_from_slice(bytes);
        while let Some(m) = Message::parse(&mut self.input).map_err(protocol)? {
            self.message(m, done)?;
        }
        Ok(())
    }

    fn message(&mut self, m: Message, done: &mut Vec<Done<T>>) -> Result<()> {
        match m {
            Message::AuthenticationOk => {
                if matches!(self.state, State::Startup | State::Scram(_)) {
                    self.state = State::LoggedIn;
                }
            }
            Message::AuthenticationCleartextPassword => {
                let pw = self.password()?.to_vec();
                frontend::password_message(&pw, &mut self.output).map_err(protocol)?;
            }
            Message::AuthenticationMd5Password(body) => {
                let hash = postgres_protocol::authentication::md5_hash(
                    self.endpoint.user.as_bytes(),
                    self.password()?,
                    body.salt(),
                );
                frontend::password_message(hash.as_bytes(), &mut self.output).map_err(protocol)?;
            }
            Message::AuthenticationSasl(body) => {
                let mut mechanisms = body.mechanisms();
                let mut scram = false;
                while let Some(m) = mechanisms.next().map_err(protocol)? {
                    scram |= m == sasl::SCRAM_SHA_256;
                }
                if !scram {
                    return Err(Error::store("connecting to Postgres: the server offers no SASL mechanism we speak"));
                }
                let s = ScramSha256::new(self.password()?, ChannelBinding::unsupported());
                frontend::sasl_initial_response(sasl::SCRAM_SHA_256, s.message(), &mut self.output)
                    .map_err(protocol)?;
                self.state = State::Scram(Box::new(s));
            }
            Message::AuthenticationSaslContinue(body) => {
                let State::Scram(s) = &mut self.state else { return Err(protocol("an unasked SASL continuation")) };
                s.update(body.data()).map_err(|e| scram_failed(&e))?;
                frontend::sasl_response(s.message(), &mut self.output).map_err(protocol)?;
            }
            Message::AuthenticationSaslFinal(body) => {
                let State::Scram(s) = &mut self.state else { return Err(protocol("an unasked SASL final")) };
                s.finish(body.data()).map_err(|e| scram_failed(&e))?;
            }
            Message::AuthenticationGss
            | Message::AuthenticationKerberosV5
            | Message::AuthenticationScmCredential
            | Message::AuthenticationSspi
            | Message::AuthenticationGssContinue(_) => {
                return Err(Error::store(
                    "connecting to Postgres: the server asks for an authentication method we do not speak \
                     (trust, password, md5 and scram-sha-256 are supported)",
                ));
            }
            Message::ErrorResponse(body) => {
                let (code, message) = error_fields(&mut body.fields());
                match self.state {
                    State::Ready => {
                        self.reading.error = Some(server_error(
                            "the statement failed (not resent: it may have committed)",
                            &code,
                            &message,
                        ))
                    }
                    State::Preparing => return Err(server_error("preparing the statements", &code, &message)),
                    _ => return Err(server_error("connecting to Postgres", &code, &message)),
                }
            }
            Message::ParameterDescription(body) => {
                let i = self.types.iter().position(Vec::is_empty).filter(|_| matches!(self.state, State::Preparing));
                let Some(i) = i else { return Err(protocol("an unasked parameter description")) };
                let mut oids = body.parameters();
                let mut types = Vec::new();
                while let Some(oid) = oids.next().map_err(protocol)? {
                    types.push(Type::from_oid(oid).ok_or_else(|| protocol(format!("a parameter of type {oid}")))?);
                }
                self.types[i] = types;
            }
            Message::DataRow(body) => {
                let mut ranges = body.ranges();
                let first = ranges.next().map_err(protocol)?.ok_or_else(|| protocol("a row of no columns"))?;
                let raw = first.map(|r| &body.buffer()[r]);
                let r = <Option<Vec<i64>> as FromSql>::from_sql_nullable(&Type::INT8_ARRAY, raw)
                    .map_err(|e| Error::store(format!("reading the reply: {e}")))?;
                self.reading.row = Some(r);
            }
            Message::ReadyForQuery(_) => return self.ready_for_query(done),
            // BindComplete, CommandComplete, ParseComplete, RowDescription, NoData,
            // ParameterStatus, BackendKeyData, notices: nothing to do.
            _ => {}
        }
        Ok(())
    }

    fn password(&self) -> Result<&[u8]> {
        self.endpoint
            .password
            .as_deref()
            .ok_or_else(|| Error::store("connecting to Postgres: the server asks for a password and the URL has none"))
    }

    /// The end of one reply: the login's (prepare now), the statements' (ready: send what was
    /// held), a setup command's, or a call's.
    fn ready_for_query(&mut self, done: &mut Vec<Done<T>>) -> Result<()> {
        match self.state {
            State::LoggedIn => {
                if self.synchronous_commit_off {
                    frontend::query("SET synchronous_commit = off", &mut self.output).map_err(protocol)?;
                    self.setup_due += 1;
                }
                for p in Prepared::ALL {
                    frontend::parse(p.name(), p.sql(&self.statements), None, &mut self.output).map_err(protocol)?;
                    frontend::describe(b'S', p.name(), &mut self.output).map_err(protocol)?;
                }
                frontend::sync(&mut self.output);
                self.setup_due += 1;
                self.state = State::Preparing;
                Ok(())
            }
            State::Preparing => {
                self.setup_due -= 1;
                if self.setup_due == 0 {
                    if self.types.iter().any(Vec::is_empty) {
                        return Err(protocol("a statement without its parameter description"));
                    }
                    self.state = State::Ready;
                    for o in std::mem::take(&mut self.held) {
                        self.send(o)?;
                    }
                }
                Ok(())
            }
            State::Ready => {
                let reading = std::mem::take(&mut self.reading);
                let o = self.owed.pop_front().ok_or_else(|| protocol("a reply to no call"))?;
                let reply = match (reading.error, reading.row) {
                    (Some(e), _) => Err(e),
                    (None, Some(Some(r))) => call::read(&o.call, &r),
                    (None, Some(None)) if o.statement == Prepared::Step => {
                        // No row yet: nothing was decided; the call goes as step_new (module text).
                        return self.send(Owed { statement: Prepared::StepNew, ..o });
                    }
                    (None, _) => Err(Error::store("the statement returned no reply")),
                };
                done.push(Done { token: o.token, call: o.call, reply });
                Ok(())
            }
            State::Startup | State::Scram(_) => Err(protocol("ready before the login finished")),
        }
    }

    /// Every call still owed, failed with `reason` (a `store_unavailable`), in the order they
    /// were made: the driver dropped the connection, and none is sent again.
    pub fn abort(&mut self, reason: &Error) -> Vec<Done<T>> {
        let owed = std::mem::take(&mut self.owed).into_iter().chain(std::mem::take(&mut self.held));
        owed.map(|o| Done { token: o.token, call: o.call, reply: Err(reason.clone()) }).collect()
    }
}

fn scram_failed(e: &std::io::Error) -> Error {
    Error::store(format!("connecting to Postgres: authentication failed: {e} (check the URL's user and password)"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::Decision;
    use crate::postgres::schema::Table;

    /// A backend message: its tag, then its length (itself included) and body.
    fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![tag];
        m.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    fn auth(code: i32, rest: &[u8]) -> Vec<u8> {
        msg(b'R', &[&code.to_be_bytes()[..], rest].concat())
    }

    fn ready() -> Vec<u8> {
        msg(b'Z', b"I")
    }

    fn param_description(types: &[Type]) -> Vec<u8> {
        let mut body = (types.len() as i16).to_be_bytes().to_vec();
        for t in types {
            body.extend_from_slice(&t.oid().to_be_bytes());
        }
        msg(b't', &body)
    }

    /// A call's reply: the row of `r` (`None`: SQL NULL), as the server sends it in binary.
    fn row_reply(r: Option<&[i64]>) -> Vec<u8> {
        let mut body = 1i16.to_be_bytes().to_vec();
        match r {
            None => body.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(r) => {
                let mut v = BytesMut::new();
                r.to_vec().to_sql(&Type::INT8_ARRAY, &mut v).unwrap();
                body.extend_from_slice(&(v.len() as i32).to_be_bytes());
                body.extend_from_slice(&v);
            }
        }
        [msg(b'2', b""), msg(b'D', &body), msg(b'C', b"INSERT 0 1\0"), ready()].concat()
    }

    fn error_response(code: &str, message: &str) -> Vec<u8> {
        let body = format!("SERROR\0C{code}\0M{message}\0\0");
        msg(b'E', body.as_bytes())
    }

    /// The front-end messages in `bytes` (after a startup message), as `(tag, body)`.
    fn frontend_messages(bytes: &[u8]) -> Vec<(u8, Vec<u8>)> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let len = i32::from_be_bytes(bytes[at + 1..at + 5].try_into().unwrap()) as usize;
            out.push((bytes[at], bytes[at + 5..at + 1 + len].to_vec()));
            at += 1 + len;
        }
        out
    }

    fn session(url: &str) -> Session<u32> {
        let endpoint = Endpoint::parse(url).unwrap().unwrap();
        Session::new(endpoint, Statements::new(&Table::new("tk").unwrap()), false).unwrap()
    }

    const STEP: [Type; 6] = [Type::TEXT, Type::INT8, Type::INT2, Type::INT2, Type::FLOAT8_ARRAY, Type::INT8];

    /// The types the server describes each prepared statement with (GCRA's inline statement's
    /// as `inline::gcra_params` binds them).
    fn descriptions() -> Vec<u8> {
        let gcra = [Type::TEXT, Type::INT8, Type::FLOAT8, Type::FLOAT8, Type::FLOAT8, Type::FLOAT8, Type::INT8];
        let mut out = Vec::new();
        for p in Prepared::ALL {
            out.extend(msg(b'1', b""));
            out.extend(param_description(match p {
                Prepared::Inline(Inline::Gcra) => &gcra[..],
                Prepared::Step | Prepared::StepNew => &STEP[..],
                Prepared::Inline(_) => &[Type::TEXT],
            }));
            out.extend(msg(b'T', &[0, 0]));
        }
        out.extend(ready());
        out
    }

    /// A session logged in by trust and prepared.
    fn ready_session() -> Session<u32> {
        let mut s = session("postgres://u@h:1/db");
        s.take_output();
        let mut done = Vec::new();
        s.feed(&[auth(0, b""), ready()].concat(), &mut done).unwrap();
        s.take_output();
        s.feed(&descriptions(), &mut done).unwrap();
        assert!(s.is_ready() && done.is_empty());
        s
    }

    fn gcra_check(now: i64) -> StepCall {
        StepCall { now: Some(now), op: call::Op::Check, algo: 1, params: [100.0, 1000.0, 10.0, 0.0, 0.0, 0.0], cost: 1 }
    }

    fn sliding_check(now: i64) -> StepCall {
        StepCall {
            now: Some(now),
            op: call::Op::Check,
            algo: 4,
            params: [10.0, 1000.0, 10.0, 100.0, 0.0, 0.0],
            cost: 1,
        }
    }

    #[test]
    fn the_startup_message_names_the_user_database_and_options_of_the_url() {
        let mut s = session("postgres://alice:pw@db.example:6543/app?application_name=tk&options=-c%20x%3D1");
        let out = s.take_output();
        assert_eq!(i32::from_be_bytes(out[0..4].try_into().unwrap()) as usize, out.len());
        assert_eq!(i32::from_be_bytes(out[4..8].try_into().unwrap()), 196_608, "protocol 3.0");
        let text = String::from_utf8_lossy(&out[8..]).into_owned();
        for part in [
            "user\0alice\0",
            "database\0app\0",
            "client_encoding\0UTF8\0",
            "application_name\0tk\0",
            "options\0-c x=1\0",
        ] {
            assert!(text.contains(part), "{part:?} in {text:?}");
        }
        let e = Endpoint::parse("postgres://alice:pw@db.example:6543/app").unwrap().unwrap();
        assert_eq!((e.host.as_str(), e.port, e.unix, e.tls), ("db.example", 6543, false, Tls::Prefer));
        let e = Endpoint::parse("postgres://u@h/db?sslmode=require").unwrap().unwrap();
        assert_eq!((e.port, e.tls), (5432, Tls::Require));
        let e = Endpoint::parse("host=/run/pg port=5433 user=u sslmode=disable").unwrap().unwrap();
        assert_eq!((e.host.as_str(), e.unix, e.tls), ("/run/pg/.s.PGSQL.5433", true, Tls::Disable));
        assert_eq!(Endpoint::parse("host=a,b user=u").unwrap(), None, "several hosts: the tokio store's");
        let bad = Endpoint::parse("postgres://u@h:notaport/db").unwrap_err();
        assert_eq!(bad.code(), ErrorCode::ConfigInvalid);
        assert_eq!(ssl_request(), [0, 0, 0, 8, 4, 210, 22, 47]);
    }

    #[test]
    fn cleartext_and_md5_logins_answer_with_the_password_and_its_hash() {
        let mut s = session("postgres://alice:secret@h/db");
        s.take_output();
        let mut done = Vec::new();
        s.feed(&auth(3, b""), &mut done).unwrap();
        assert_eq!(frontend_messages(&s.take_output()), vec![(b'p', b"secret\0".to_vec())]);

        let mut s = session("postgres://alice:secret@h/db");
        s.take_output();
        s.feed(&auth(5, &[1, 2, 3, 4]), &mut done).unwrap();
        let hash = postgres_protocol::authentication::md5_hash(b"alice", b"secret", [1, 2, 3, 4]);
        assert!(hash.starts_with("md5") && hash.len() == 35);
        assert_eq!(frontend_messages(&s.take_output()), vec![(b'p', [hash.as_bytes(), b"\0"].concat())]);

        // No password in the URL: a clear error, not an empty password.
        let mut s = session("postgres://alice@h/db");
        let e = s.feed(&auth(3, b""), &mut done).unwrap_err();
        assert_eq!(e.code(), ErrorCode::StoreUnavailable);
        assert!(e.message().contains("the URL has none"), "{e}");
    }

    #[test]
    fn scram_starts_with_the_client_first_message_and_other_methods_are_refused() {
        let mut s = session("postgres://alice:secret@h/db");
        s.take_output();
        let mut done = Vec::new();
        s.feed(&auth(10, b"SCRAM-SHA-256\0\0"), &mut done).unwrap();
        let out = frontend_messages(&s.take_output());
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, b'p');
        let body = String::from_utf8_lossy(&out[0].1).into_owned();
        assert!(body.starts_with("SCRAM-SHA-256\0") && body.contains("n,,n=,r="), "{body:?}");
        // A server-final that does not verify fails the login.
        let e = s.feed(&auth(11, b"r=bogus,s=AAAA,i=4096"), &mut done).unwrap_err();
        assert!(e.message().contains("authentication failed"), "{e}");

        let mut s = session("postgres://alice:secret@h/db");
        let e = s.feed(&auth(10, b"SCRAM-SHA-256-PLUS-ONLY\0\0"), &mut done).unwrap_err();
        assert!(e.message().contains("no SASL mechanism"), "{e}");
        let mut s = session("postgres://alice:secret@h/db");
        let e = s.feed(&auth(7, b""), &mut done).unwrap_err();
        assert_eq!(e.code(), ErrorCode::StoreUnavailable);
        assert!(e.message().contains("scram-sha-256 are supported"), "{e}");
    }

    #[test]
    fn a_refused_login_is_coded_as_the_tokio_store_codes_it() {
        let mut s = session("postgres://alice:wrong@h/db");
        let e = s.feed(&error_response("28P01", "password authentication failed"), &mut Vec::new()).unwrap_err();
        assert_eq!(e.code(), ErrorCode::StoreUnavailable);
        assert!(e.message().contains("authentication failed") && e.message().contains("SQLSTATE 28P01"), "{e}");
        // A missing function while preparing: the schema's fault.
        let mut s = session("postgres://u@h/db");
        let mut done = Vec::new();
        s.feed(&[auth(0, b""), ready()].concat(), &mut done).unwrap();
        let e = s.feed(&error_response("42883", "function throttlekit_v1_step does not exist"), &mut done).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConfigInvalid);
    }

    #[test]
    fn once_logged_in_every_statement_is_parsed_and_described_in_one_round_trip() {
        let mut s = session("postgres://u@h/db");
        s.take_output();
        let mut done = Vec::new();
        // Calls made before the session is ready wait for it.
        s.call(7, "k".into(), gcra_check(1_000)).unwrap();
        assert!(s.take_output().is_empty());
        s.feed(&[auth(0, b""), msg(b'S', b"server_version\x0015\0"), msg(b'K', &[0; 8]), ready()].concat(), &mut done)
            .unwrap();
        let tags: Vec<u8> = frontend_messages(&s.take_output()).iter().map(|m| m.0).collect();
        assert_eq!(tags, [[b'P', b'D'].repeat(5), vec![b'S']].concat());
        assert!(!s.is_ready() && s.owed() == 1);
        s.feed(&descriptions(), &mut done).unwrap();
        assert!(s.is_ready());
        // The held call goes out: Bind of the inline GCRA statement, Execute, Sync.
        let out = frontend_messages(&s.take_output());
        assert_eq!(out.iter().map(|m| m.0).collect::<Vec<_>>(), [b'B', b'E', b'S']);
        assert!(out[0].1.starts_with(b"\0tk0\0"), "the unnamed portal of statement tk0");
    }

    #[test]
    fn replies_come_back_in_order_and_are_read_by_the_stores_reader() {
        let mut s = ready_session();
        let mut done = Vec::new();
        s.call(1, "a".into(), gcra_check(1_000)).unwrap();
        s.call(2, "b".into(), gcra_check(1_000)).unwrap();
        assert_eq!(frontend_messages(&s.take_output()).len(), 6, "both pipelined at once");
        // The first reply arrives in two pieces.
        let first = row_reply(Some(&[1, 10, 9, 1_100, 0]));
        s.feed(&first[..7], &mut done).unwrap();
        assert!(done.is_empty());
        s.feed(&[&first[7..], &row_reply(Some(&[0, 10, 0, 2_000, 100]))[..]].concat(), &mut done).unwrap();
        let got: Vec<(u32, Decision)> =
            done.drain(..).map(|d| (d.token, d.reply.unwrap().decision().unwrap())).collect();
        assert_eq!(got[0].0, 1);
        assert_eq!((got[0].1.allowed, got[0].1.remaining, got[0].1.reset_at), (true, 9, 1_100));
        assert_eq!((got[1].0, got[1].1.allowed, got[1].1.retry_after_ms), (2, false, 100));
        assert_eq!(s.owed(), 0);
    }

    #[test]
    fn a_step_on_a_new_key_goes_again_as_step_new_and_nothing_else_is_resent() {
        let mut s = ready_session();
        let mut done = Vec::new();
        s.call(1, "new".into(), sliding_check(1_000)).unwrap();
        s.call(2, "gcra".into(), gcra_check(1_000)).unwrap();
        let out = frontend_messages(&s.take_output());
        assert!(out[0].1.starts_with(b"\0tk3\0"), "the step statement");
        // step answers NULL: the call goes as step_new (tk4), owed after the GCRA call.
        s.feed(&row_reply(None), &mut done).unwrap();
        assert!(done.is_empty());
        let out = frontend_messages(&s.take_output());
        assert_eq!(out.iter().map(|m| m.0).collect::<Vec<_>>(), [b'B', b'E', b'S']);
        assert!(out[0].1.starts_with(b"\0tk4\0"));
        // The GCRA call's error is its own; the step_new reply decides the first call.
        s.feed(&[error_response("40P01", "deadlock detected"), ready()].concat(), &mut done).unwrap();
        s.feed(&row_reply(Some(&[1, 10, 9, 1_100, 0])), &mut done).unwrap();
        assert_eq!(done.len(), 2);
        assert_eq!(done[0].token, 2);
        let e = done[0].reply.as_ref().unwrap_err();
        assert_eq!(e.code(), ErrorCode::StoreUnavailable);
        assert!(e.message().contains("not resent") && e.message().contains("40P01"), "{e}");
        assert_eq!(done[1].token, 1);
        assert!(matches!(done[1].reply, Ok(Reply::Decision(ref d)) if d.allowed));
        // A NULL from step_new is an error, not a loop.
        s.call(3, "x".into(), sliding_check(1_000)).unwrap();
        s.feed(&row_reply(None), &mut done).unwrap();
        s.feed(&row_reply(None), &mut done).unwrap();
        assert_eq!(done.len(), 3);
        assert!(done[2].reply.is_err());
        assert!(!s.take_output().is_empty() && s.owed() == 0);
    }

    #[test]
    fn abort_fails_every_owed_call_in_order_and_keeps_nothing() {
        let mut s = ready_session();
        s.call(1, "a".into(), gcra_check(1)).unwrap();
        s.call(2, "b".into(), sliding_check(1)).unwrap();
        let reason = Error::store("the Postgres connection was lost");
        let failed = s.abort(&reason);
        assert_eq!(failed.iter().map(|d| d.token).collect::<Vec<_>>(), [1, 2]);
        assert!(failed.iter().all(|d| d.reply.as_ref().unwrap_err() == &reason));
        assert_eq!(s.owed(), 0);
        // A reply nothing asked for is fatal to the connection.
        let e = ready_session().feed(&ready(), &mut Vec::new()).unwrap_err();
        assert!(e.message().contains("a reply to no call"), "{e}");
    }
}
