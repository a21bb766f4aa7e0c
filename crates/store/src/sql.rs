//! One way to speak SQL to either engine: every query in the store is written once, in
//! the SQL both SQLite and PostgreSQL read, and runs on whichever the store was opened on.
//!
//! - [`Db`]: a connection (or the transaction it is in) of either engine;
//! - [`Arg`] and [`args!`]: what a query binds, as the few values both engines share;
//! - [`Row`] and [`Col`]: a result row and the Rust values read from its columns.
//!
//! Placeholders are SQLite's (`?1`, `?`); PostgreSQL gets them as `$1` (translated once
//! per statement and cached with it). `LIKE` is case-blind in SQLite, so PostgreSQL runs
//! it as `ILIKE`. PostgreSQL's integers are all BIGINT, so an integer binds and reads the
//! same on both.

pub(crate) use crate::value::{args, Arg, Val};
use crate::{Result, StoreError};
use rusqlite::types::ValueRef;

/// A value read from a column.
pub(crate) trait Col: Sized {
    fn col(v: Val<'_>) -> Result<Self>;
}

fn mismatch<T>(want: &str, got: Val<'_>) -> Result<T> {
    let got = match got {
        Val::Null => "NULL",
        Val::Int(_) => "an integer",
        Val::Real(_) => "a real",
        Val::Text(_) => "text",
        Val::Blob(_) => "a blob",
    };
    Err(StoreError::Invalid(format!("a stored column holds {got} where {want} was expected")))
}

impl Col for i64 {
    fn col(v: Val<'_>) -> Result<Self> {
        match v {
            Val::Int(i) => Ok(i),
            v => mismatch("an integer", v),
        }
    }
}
macro_rules! int_col {
    ($($t:ty),*) => {$(
        impl Col for $t {
            fn col(v: Val<'_>) -> Result<Self> {
                let i = i64::col(v)?;
                <$t>::try_from(i).map_err(|_| StoreError::Invalid(format!("a stored count {i} is out of range")))
            }
        }
    )*};
}
int_col!(i32, u32, u64, usize, u16, u8);
impl Col for bool {
    fn col(v: Val<'_>) -> Result<Self> {
        Ok(i64::col(v)? != 0)
    }
}
impl Col for f64 {
    fn col(v: Val<'_>) -> Result<Self> {
        match v {
            Val::Real(f) => Ok(f),
            Val::Int(i) => Ok(i as f64),
            v => mismatch("a number", v),
        }
    }
}
impl Col for String {
    fn col(v: Val<'_>) -> Result<Self> {
        match v {
            Val::Text(s) => Ok(s.to_owned()),
            v => mismatch("text", v),
        }
    }
}
impl Col for Vec<u8> {
    fn col(v: Val<'_>) -> Result<Self> {
        match v {
            Val::Blob(b) => Ok(b.to_vec()),
            Val::Text(s) => Ok(s.as_bytes().to_vec()),
            v => mismatch("bytes", v),
        }
    }
}
impl<T: Col> Col for Option<T> {
    fn col(v: Val<'_>) -> Result<Self> {
        match v {
            Val::Null => Ok(None),
            v => T::col(v).map(Some),
        }
    }
}

/// A result row of either engine.
pub(crate) enum Row<'a> {
    Lite(&'a rusqlite::Row<'a>),
    Pg(&'a tokio_postgres::Row),
}

impl Row<'_> {
    pub(crate) fn get<T: Col>(&self, i: usize) -> Result<T> {
        match self {
            Row::Lite(r) => T::col(match r.get_ref(i)? {
                ValueRef::Null => Val::Null,
                ValueRef::Integer(i) => Val::Int(i),
                ValueRef::Real(f) => Val::Real(f),
                ValueRef::Text(t) => Val::Text(std::str::from_utf8(t).map_err(|e| StoreError::Invalid(format!("stored text is not UTF-8: {e}")))?),
                ValueRef::Blob(b) => Val::Blob(b),
            }),
            Row::Pg(r) => T::col(r.try_get::<_, crate::pg::Any<'_>>(i)?.0),
        }
    }
}

/// What `query_map` returns: each row made into a `T`, in order.
pub(crate) type Rows<T> = std::vec::IntoIter<Result<T>>;

/// A connection of either engine, or the transaction it is in.
#[derive(Clone, Copy)]
pub(crate) enum Db<'a> {
    Lite(&'a rusqlite::Connection),
    Pg(&'a crate::pg::Conn),
}

/// A statement about to run: SQLite's comes from the connection's statement cache,
/// PostgreSQL's is prepared on the server once per connection.
pub(crate) struct Stmt<'a> {
    db: Db<'a>,
    sql: String,
}

impl<'a> Db<'a> {
    pub(crate) fn prepare_cached(self, sql: &str) -> Result<Stmt<'a>> {
        Ok(Stmt { db: self, sql: sql.to_owned() })
    }

    pub(crate) fn prepare(self, sql: &str) -> Result<Stmt<'a>> {
        self.prepare_cached(sql)
    }

    pub(crate) fn execute(&self, sql: &str, args: &[&dyn Arg]) -> Result<usize> {
        match self {
            Db::Lite(c) => Ok(c.prepare_cached(sql)?.execute(rusqlite::params_from_iter(args.iter().map(|a| a.val())))?),
            Db::Pg(c) => c.execute(sql, args),
        }
    }

    /// The one row a query returns (`QueryReturnedNoRows` when there is none; see
    /// [`Optional`]).
    pub(crate) fn query_row<T>(&self, sql: &str, args: &[&dyn Arg], f: impl FnOnce(&Row<'_>) -> Result<T>) -> Result<T> {
        match self {
            Db::Lite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                let mut rows = stmt.query(rusqlite::params_from_iter(args.iter().map(|a| a.val())))?;
                match rows.next()? {
                    Some(r) => f(&Row::Lite(r)),
                    None => Err(rusqlite::Error::QueryReturnedNoRows.into()),
                }
            }
            Db::Pg(c) => match c.query(sql, args)?.first() {
                Some(r) => f(&Row::Pg(r)),
                None => Err(rusqlite::Error::QueryReturnedNoRows.into()),
            },
        }
    }

    /// Every row a query returns, each made into a `T` (or the error making it).
    pub(crate) fn query_map<T>(&self, sql: &str, args: &[&dyn Arg], mut f: impl FnMut(&Row<'_>) -> Result<T>) -> Result<Rows<T>> {
        let mut out = Vec::new();
        match self {
            Db::Lite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                let mut rows = stmt.query(rusqlite::params_from_iter(args.iter().map(|a| a.val())))?;
                loop {
                    match rows.next() {
                        Ok(Some(r)) => out.push(f(&Row::Lite(r))),
                        Ok(None) => break,
                        Err(e) => {
                            out.push(Err(e.into()));
                            break;
                        }
                    }
                }
            }
            Db::Pg(c) => out.extend(c.query(sql, args)?.iter().map(|r| f(&Row::Pg(r)))),
        }
        Ok(out.into_iter())
    }

    /// Runs reads that must agree with each other in one snapshot.
    pub(crate) fn snapshot<T>(&self, f: impl FnOnce(&Db<'_>) -> Result<T>) -> Result<T> {
        match self {
            Db::Lite(c) => {
                let tx = c.unchecked_transaction()?;
                let out = f(&Db::Lite(&tx))?;
                tx.finish()?;
                Ok(out)
            }
            Db::Pg(c) => c.within("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", || f(self)),
        }
    }

    /// Who is writing, for counters that concurrent transactions would otherwise wait on
    /// each other to update (`usage_minutes`): on PostgreSQL the connection's server
    /// process, which no concurrent transaction shares; on SQLite, whose writes take turns, 0.
    pub(crate) fn writer(&self) -> i64 {
        match self {
            Db::Lite(_) => 0,
            Db::Pg(c) => c.backend(),
        }
    }

    pub(crate) fn is_pg(&self) -> bool {
        matches!(self, Db::Pg(_))
    }
}

impl Stmt<'_> {
    pub(crate) fn execute(&self, args: &[&dyn Arg]) -> Result<usize> {
        self.db.execute(&self.sql, args)
    }
    pub(crate) fn query_row<T>(&self, args: &[&dyn Arg], f: impl FnOnce(&Row<'_>) -> Result<T>) -> Result<T> {
        self.db.query_row(&self.sql, args, f)
    }
    pub(crate) fn query_map<T>(&self, args: &[&dyn Arg], f: impl FnMut(&Row<'_>) -> Result<T>) -> Result<Rows<T>> {
        self.db.query_map(&self.sql, args, f)
    }
}

/// `query_row`'s "no row" as `None`.
pub(crate) trait Optional<T> {
    fn optional(self) -> Result<Option<T>>;
}
impl<T> Optional<T> for Result<T> {
    fn optional(self) -> Result<Option<T>> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(StoreError::Sqlite(rusqlite::Error::QueryReturnedNoRows)) => Ok(None),
            Err(e) => Err(e),
        }
    }
}
