//! The store on PostgreSQL (a team's gate): a pool of connections, each driven by the
//! store's own small runtime, and queried synchronously like SQLite.
//!
//! A query's future only talks to its connection's task through channels, so the caller
//! waits for it on its own thread (as it waits for SQLite) wherever it is called from,
//! async workers included; the connections' sockets live on the store's runtime, which
//! no caller ever blocks.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use bytes::BytesMut;
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type};
use tokio_postgres::Statement;

use crate::value::{to_pg, Arg, Val};
use crate::{Result, StoreError};

pub(crate) mod accept;
mod listen;
mod schema;
mod schema_later;
pub(crate) mod tls;
pub(crate) use schema::{migrate, ADMISSION_LOCK};

/// Connections one store opens at most (PostgreSQL's default allows 100 in all).
pub(crate) const MAX_CONNECTIONS: usize = 16;

/// Statements prepared per connection before the cache starts over.
const MAX_STATEMENTS: usize = 512;

/// How long a caller waits for a free connection, or for the server to answer a connect.
const WAIT: Duration = Duration::from_secs(10);

/// One connection, checked out by one caller at a time.
pub(crate) struct Conn {
    client: tokio_postgres::Client,
    /// The server process serving this connection (`pg_backend_pid()`).
    backend: i64,
    statements: RefCell<HashMap<String, Statement>>,
    /// The `BEGIN` of the open transaction, until a statement takes it to the server.
    begin: RefCell<Option<String>>,
    driver: Driver,
}

/// Awaits a pooled connection's answer (its socket driven by the pool's runtime); a `Conn`
/// waits through [`Conn::wait`], which knows how its socket is driven.
fn pool_wait<F: std::future::Future>(f: F) -> F::Output {
    futures_executor::block_on(f)
}

/// How a connection's socket is driven.
enum Driver {
    /// By the pool's runtime: the caller waits for answers on its own thread.
    Pool,
    /// By its caller's own thread, while it waits (the committer's connection): no other
    /// thread wakes per round trip.
    Own(tokio::runtime::Runtime),
}

/// A query's arguments as the values both engines share...
fn values<'a>(args: &'a [&dyn Arg]) -> Vec<Val<'a>> {
    args.iter().map(|a| a.val()).collect()
}

/// ...and as tokio-postgres binds them.
fn params<'v>(vals: &'v [Val<'_>]) -> Vec<&'v (dyn ToSql + Sync)> {
    vals.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

impl Conn {
    fn new(client: tokio_postgres::Client, backend: i64, driver: Driver) -> Conn {
        Conn { client, backend, statements: RefCell::new(HashMap::new()), begin: RefCell::new(None), driver }
    }

    /// The server process serving this connection: no other connection's transaction
    /// writes under this number while this one lives.
    pub(crate) fn backend(&self) -> i64 {
        self.backend
    }

    fn wait<F: std::future::Future>(&self, f: F) -> F::Output {
        match &self.driver {
            Driver::Pool => pool_wait(f),
            Driver::Own(rt) => rt.block_on(f),
        }
    }

    /// Whether the server has gone (its connection's task has ended). A connection driven
    /// by its caller first takes in what arrived while it was idle.
    pub(crate) fn is_closed(&self) -> bool {
        if let Driver::Own(rt) = &self.driver {
            rt.block_on(tokio::task::yield_now());
        }
        self.client.is_closed()
    }

    fn statement(&self, sql: &str) -> Result<Statement> {
        if let Some(s) = self.statements.borrow().get(sql) {
            return Ok(s.clone());
        }
        let s = self.wait(self.client.prepare(&to_pg(sql)))?;
        let mut cache = self.statements.borrow_mut();
        if cache.len() >= MAX_STATEMENTS {
            cache.clear();
        }
        cache.insert(sql.to_owned(), s.clone());
        Ok(s)
    }

    /// Awaits `f`, sent after what the open transaction still owes the server: its
    /// `BEGIN` (held back by [`Conn::within`] to travel with the first statement) and
    /// `first` (a statement without arguments, e.g. a lock), all in one round trip. The
    /// server runs them in order; `f`'s snapshot is taken after `first` has run. `first`
    /// is prepared once per connection like any other statement: sent as text, the
    /// server parsed and planned it again for every batch (4% of its CPU with three
    /// nodes, measured).
    fn after<T>(&self, first: Option<&str>, f: impl std::future::Future<Output = std::result::Result<T, tokio_postgres::Error>>) -> Result<T> {
        let first = first.map(|sql| self.statement(sql)).transpose()?;
        let begin = self.begin.borrow_mut().take();
        if begin.is_none() && first.is_none() {
            return Ok(self.wait(f)?);
        }
        // Each request is queued when its future is first polled, and `try_join3` polls
        // them in this order.
        let begin = async {
            match &begin {
                Some(b) => self.client.batch_execute(b).await,
                None => Ok(()),
            }
        };
        let first = async {
            match &first {
                Some(st) => self.client.execute(st, &[]).await.map(|_| ()),
                None => Ok(()),
            }
        };
        let (_, _, out) = self.wait(futures_util::future::try_join3(begin, first, f))?;
        Ok(out)
    }

    pub(crate) fn execute(&self, sql: &str, args: &[&dyn Arg]) -> Result<usize> {
        let (st, vals) = (self.statement(sql)?, values(args));
        Ok(self.after(None, self.client.execute(&st, &params(&vals)))? as usize)
    }

    pub(crate) fn query(&self, sql: &str, args: &[&dyn Arg]) -> Result<Vec<tokio_postgres::Row>> {
        let (st, vals) = (self.statement(sql)?, values(args));
        self.after(None, self.client.query(&st, &params(&vals)))
    }

    /// One statement whose arguments are whole columns (each an array): a batch of rows
    /// in one round trip and one execution, after `first` (see [`Conn::after`]).
    pub(crate) fn query_columns(&self, first: Option<&str>, sql: &str, columns: &[Vec<Val<'_>>]) -> Result<Vec<tokio_postgres::Row>> {
        let st = self.statement(sql)?;
        let bound: Vec<&(dyn ToSql + Sync)> = columns.iter().map(|c| c as &(dyn ToSql + Sync)).collect();
        self.after(first, self.client.query(&st, &bound))
    }

    /// Runs `f` in a transaction opened by `begin` (`BEGIN` and its options): committed
    /// if `f` returns Ok, rolled back otherwise. `BEGIN` goes with `f`'s first statement
    /// (a round trip fewer per transaction); a transaction that ran none sends nothing.
    pub(crate) fn within<T>(&self, begin: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.begin.replace(Some(begin.to_owned()));
        let out = f();
        let opened = self.begin.take().is_none();
        match out {
            Ok(v) => {
                if opened {
                    self.batch("COMMIT")?;
                }
                Ok(v)
            }
            Err(e) => {
                if opened {
                    let _ = self.batch("ROLLBACK");
                }
                Err(e)
            }
        }
    }

    pub(crate) fn batch(&self, sql: &str) -> Result<()> {
        match self.begin.borrow_mut().take() {
            Some(begin) => Ok(self.wait(self.client.batch_execute(&format!("{begin}; {sql}")))?),
            None => Ok(self.wait(self.client.batch_execute(sql))?),
        }
    }
}

/// What PostgreSQL said, for an error's message (the client's own Display says only
/// "db error").
pub(crate) fn message(e: &tokio_postgres::Error) -> String {
    match (e.as_db_error(), std::error::Error::source(e)) {
        (Some(db), _) => format!("{} ({})", db.message(), db.code().code()),
        // "error connecting to server" says nothing of why: the cause does.
        (None, Some(cause)) => format!("{e}: {cause}"),
        (None, None) => e.to_string(),
    }
}

/// A database by host, port and name, for messages (never its password).
pub(crate) fn describe(config: &tokio_postgres::Config) -> String {
    use tokio_postgres::config::Host;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        #[cfg(unix)]
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("PostgreSQL database {} on {host}:{port}", config.get_dbname().unwrap_or("(default)"))
}

/// Connects, on the runtime this is awaited on, and asks which server process serves the
/// connection ([`Conn::backend`]).
async fn open(config: &tokio_postgres::Config, tls: &tls::Tls) -> Result<(tokio_postgres::Client, i64)> {
    let unreachable = |e: tokio_postgres::Error| StoreError::Unavailable(format!("cannot reach the database: {}", message(&e)));
    let client = tls::connect(config, tls).await.map_err(unreachable)?;
    let backend: i32 = client.query_one("SELECT pg_backend_pid()", &[]).await.map_err(unreachable)?.try_get(0)?;
    Ok((client, backend.into()))
}

/// The pool, and the runtime its connections' sockets run on.
pub(crate) struct Pg {
    config: tokio_postgres::Config,
    tls: tls::Tls,
    runtime: Option<tokio::runtime::Runtime>,
    idle: Mutex<(Vec<Conn>, usize)>,
    freed: Condvar,
}

impl Drop for Pg {
    fn drop(&mut self) {
        // The store may be dropped on an async worker, where a runtime may not block.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl Pg {
    pub(crate) fn new(url: &str) -> Result<Pg> {
        let (mut config, tls) = tls::parse(url)?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(WAIT);
        }
        config.application_name("gatehouse");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("gatehouse-pg")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Unavailable(format!("cannot start the database runtime: {e}")))?;
        Ok(Pg { config, tls, runtime: Some(runtime), idle: Mutex::new((Vec::new(), 0)), freed: Condvar::new() })
    }

    pub(crate) fn describe(&self) -> String {
        describe(&self.config)
    }

    /// Calls `on` whenever a node NOTIFYs `channel` (and whenever listening starts again
    /// after the connection was lost), on the pool's runtime, for as long as it runs.
    pub(crate) fn listen(&self, channel: &'static str, on: std::sync::Arc<dyn Fn() + Send + Sync>) {
        let (config, tls) = (self.config.clone(), self.tls.clone());
        if let Some(rt) = self.runtime.as_ref() {
            rt.spawn(listen::listen(config, tls, channel, on));
        }
    }

    /// A connection of its own for a thread that is no async worker (the committer): its
    /// socket is driven by that thread while it waits for an answer.
    pub(crate) fn own_connection(&self) -> Result<Conn> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StoreError::Unavailable(format!("cannot start the database runtime: {e}")))?;
        let (client, backend) = rt.block_on(open(&self.config, &self.tls))?;
        Ok(Conn::new(client, backend, Driver::Own(rt)))
    }

    fn connect(&self) -> Result<Conn> {
        let (config, tls) = (self.config.clone(), self.tls.clone());
        let rt = self.runtime.as_ref().expect("the runtime lives as long as the pool");
        let (client, backend) = pool_wait(rt.spawn(async move { open(&config, &tls).await }))
            .map_err(|e| StoreError::Unavailable(format!("the database connection task failed: {e}")))??;
        Ok(Conn::new(client, backend, Driver::Pool))
    }

    fn checkout(&self) -> Result<Conn> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            while let Some(c) = idle.0.pop() {
                if !c.client.is_closed() {
                    return Ok(c);
                }
                idle.1 -= 1;
            }
            if idle.1 < MAX_CONNECTIONS {
                idle.1 += 1;
                drop(idle);
                return self.connect().inspect_err(|_| {
                    self.idle.lock().unwrap_or_else(|p| p.into_inner()).1 -= 1;
                    self.freed.notify_one();
                });
            }
            let (guard, timeout) = self.freed.wait_timeout(idle, WAIT).unwrap_or_else(|p| p.into_inner());
            idle = guard;
            if timeout.timed_out() && idle.0.is_empty() {
                return Err(StoreError::Unavailable("every database connection stayed busy".into()));
            }
        }
    }

    fn checkin(&self, c: Conn) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if c.client.is_closed() {
            idle.1 -= 1;
        } else {
            idle.0.push(c);
        }
        self.freed.notify_one();
    }

    /// A pooled connection, held until the lease is dropped.
    pub(crate) fn lease(&self) -> Result<Lease<'_>> {
        Ok(Lease { pool: self, conn: Some(self.checkout()?) })
    }

    /// Runs `f` on a pooled connection, each statement on its own.
    pub(crate) fn with<T>(&self, f: impl FnOnce(&Conn) -> Result<T>) -> Result<T> {
        let c = self.checkout()?;
        let out = f(&c);
        self.checkin(c);
        out
    }
}

/// A connection out of the pool.
pub(crate) struct Lease<'p> {
    pool: &'p Pg,
    conn: Option<Conn>,
}

impl Lease<'_> {
    pub(crate) fn conn(&self) -> &Conn {
        self.conn.as_ref().expect("a lease holds its connection until dropped")
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.conn.take() {
            self.pool.checkin(c);
        }
    }
}

impl ToSql for Val<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match *self {
            Val::Null => Ok(IsNull::Yes),
            Val::Int(i) => match *ty {
                Type::INT4 => i32::try_from(i)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(i)?.to_sql(ty, out),
                Type::BOOL => (i != 0).to_sql(ty, out),
                Type::FLOAT8 => (i as f64).to_sql(ty, out),
                _ => i.to_sql(ty, out),
            },
            Val::Real(f) => f.to_sql(ty, out),
            Val::Text(s) => s.to_sql(ty, out),
            Val::Blob(b) => b.to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

/// A column of any type the schema uses, read as the values SQLite has.
pub(crate) struct Any<'a>(pub(crate) Val<'a>);

impl<'a> FromSql<'a> for Any<'a> {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> std::result::Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Any(match *ty {
            Type::INT8 => Val::Int(i64::from_sql(ty, raw)?),
            Type::INT4 => Val::Int(i32::from_sql(ty, raw)?.into()),
            Type::INT2 => Val::Int(i16::from_sql(ty, raw)?.into()),
            Type::BOOL => Val::Int(bool::from_sql(ty, raw)?.into()),
            Type::FLOAT8 => Val::Real(f64::from_sql(ty, raw)?),
            Type::FLOAT4 => Val::Real(f32::from_sql(ty, raw)?.into()),
            Type::BYTEA => Val::Blob(<&[u8]>::from_sql(ty, raw)?),
            _ => Val::Text(<&str>::from_sql(ty, raw)?),
        }))
    }

    fn from_sql_null(_: &Type) -> std::result::Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Any(Val::Null))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}
