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
use super::inline::{Inline, Param};
use super::schema::Statements;
pub use super::tls::Tls;
use crate::error::{Error, ErrorCode, Result};
use crate::store::Reply;

/// Where a session connects and how it logs in, read from a libpq-style URL by
/// [`super::tls`]'s reading (tokio-postgres's parser for all but `sslmode` and `sslrootcert`),
/// so both paths read a URL the same way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The host name or address (TCP), or the Unix socket's full path (`<dir>/.s.PGSQL.<port>`).
    pub host: String,
    /// The TCP port (also in a Unix socket's path).
    pub port: u16,
    /// `host` is a Unix socket path.
    pub unix: bool,
    /// `sslmode` (libpq's meaning; `Disable` on a Unix socket): whether to ask for TLS, insist
    /// on it, and what of the certificate to verify.
    pub tls: Tls,
    /// `sslrootcert`'s PEM, the roots `verify-ca`/`verify-full` check the chain against
    /// (`None`: the system's).
    pub root_certs: Option<Vec<u8>>,
    user: String,
    password: Option<Vec<u8>>,
    dbname: Option<String>,
    options: Option<String>,
    application_name: Option<String>,
}

impl Endpoint {
    /// The endpoint of `url`: `config_invalid` (`postgres.url`) when it is not a Postgres URL,
    /// has an unknown `sslmode` or an unreadable `sslrootcert`; `None` for what a binding's
    /// socket does not do (more than one host: the tokio store tries them in turn).
    pub fn parse(url: &str) -> Result<Option<Endpoint>> {
        let super::tls::Url { config, tls, root_certs } = super::tls::read_url(url)?;
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
        let user = match config.get_user() {
            Some(u) => u.to_string(),
            None => std::env::var("USER").map_err(|_| Error::config("postgres.url", "names no user"))?,
        };
        Ok(Some(Endpoint {
            host,
            port,
            unix,
            tls: if unix { Tls::Disable } else { tls },
            root_certs,
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
    const ALL: [Prepared; 6] = [
        Prepared::Inline(Inline::Gcra),
        Prepared::Inline(Inline::TokenBucket),
        Prepared::Inline(Inline::FixedWindow),
        Prepared::Inline(Inline::FixedWindowUnit),
        Prepared::Step,
        Prepared::StepNew,
    ];

    fn index(self) -> usize {
        match self {
            Prepared::Inline(i) => i.index(),
            Prepared::Step => 4,
            Prepared::StepNew => 5,
        }
    }

    fn name(self) -> &'static str {
        ["tk0", "tk1", "tk2", "tk3", "tk4", "tk5"][self.index()]
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

/// A reply being read: what its row said, or the error the server sent.
#[derive(Default)]
struct Reading {
    row: Option<Row>,
    error: Option<Error>,
}

/// A row read, decoded as the call owed at the front asked (the row arrives before the
/// `ReadyForQuery` that ends its reply).
enum Row {
    /// An inline statement's five fields ([`Inline::reply`]), or why they could not be read.
    Inline(Result<[i64; 5]>),
    /// The step statements' `r`: `None` (SQL NULL) from [`Prepared::Step`] on a key with no row.
    Step(Option<Vec<i64>>),
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
        self.drain_output(<[u8]>::to_vec)
    }

    /// Hands the bytes to write now (empty when there are none) to `f`, then forgets them: for
    /// a driver that writes or copies them at once, with no buffer made per call.
    pub fn drain_output<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> R {
        let r = f(&self.output);
        self.output.clear();
        r
    }

    /// Makes a call of `c` on the full key `key`: its bytes are in [`Session::take_output`] at
    /// once when the session is ready, else once it is.
    pub fn call(&mut self, token: T, key: String, c: StepCall) -> Result<()> {
        let (statement, values) = match Inline::bind(&c) {
            Some((i, values)) => (Prepared::Inline(i), Some(values)),
            None => (Prepared::Step, None),
        };
        let owed = Owed { token, key, call: c, statement };
        if self.is_ready() {
            self.send(owed, values)?;
        } else {
            self.held.push(owed);
        }
        Ok(())
    }

    /// Encodes `o`'s `Bind` + `Execute` + `Sync` and owes it a reply; an inline statement's
    /// parameters are `values` when the caller has bound them already.
    fn send(&mut self, o: Owed<T>, values: Option<Vec<Param>>) -> Result<()> {
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
                let values = match values {
                    Some(v) => v,
                    None => Inline::bind(c).ok_or_else(|| Error::store("an inline call that binds no statement"))?.1,
                };
                let mut params: Vec<&(dyn ToSql + Sync)> = vec![&key];
                params.extend(values.iter().map(|v| v as &(dyn ToSql + Sync)));
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
                let o = self.owed.front().ok_or_else(|| protocol("a row for no call"))?;
                self.reading.row = Some(match o.statement {
                    Prepared::Inline(i) => Row::Inline(i.reply(&o.call, Some(raw))),
                    Prepared::Step | Prepared::StepNew => Row::Step(
                        <Option<Vec<i64>> as FromSql>::from_sql_nullable(&Type::INT8_ARRAY, raw)
                            .map_err(|e| Error::store(format!("reading the reply: {e}")))?,
                    ),
                });
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
                        self.send(o, None)?;
                    }
                }
                Ok(())
            }
            State::Ready => {
                let reading = std::mem::take(&mut self.reading);
                let o = self.owed.pop_front().ok_or_else(|| protocol("a reply to no call"))?;
                let reply = match (reading.error, reading.row) {
                    (Some(e), _) => Err(e),
                    (None, Some(Row::Inline(r))) => r.and_then(|r| call::read(&o.call, &r)),
                    (None, Some(Row::Step(Some(r)))) => call::read(&o.call, &r),
                    (None, Some(Row::Step(None))) if o.statement == Prepared::Step => {
                        // No row yet: nothing was decided; the call goes as step_new (module text).
                        return self.send(Owed { statement: Prepared::StepNew, ..o }, None);
                    }
                    // No row: a denial of the statement that writes only when it admits.
                    (None, None) => match o.statement {
                        Prepared::Inline(i) => i.reply(&o.call, None).and_then(|r| call::read(&o.call, &r)),
                        _ => Err(Error::store("the statement returned no reply")),
                    },
                    (None, Some(Row::Step(None))) => Err(Error::store("the statement returned no reply")),
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
mod tests;
