//! The values both engines share: what a query binds ([`Arg`], [`args!`]) and what a
//! column holds ([`Val`]), and SQLite's SQL as PostgreSQL reads it ([`to_pg`]). Below
//! both `sql` (queries) and `pg` (connections).

use rusqlite::types::{ToSqlOutput, ValueRef};

/// A value bound to a query or read from a column: what both engines store.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Val<'a> {
    Null,
    Int(i64),
    Real(f64),
    Text(&'a str),
    Blob(&'a [u8]),
}

/// What a query binds.
pub(crate) trait Arg: Sync {
    fn val(&self) -> Val<'_>;
}

/// The arguments of one query, each borrowed.
#[macro_export]
#[doc(hidden)]
macro_rules! args {
    () => { &[] as &[&dyn $crate::value::Arg] };
    ($($a:expr),+ $(,)?) => { &[$(&$a as &dyn $crate::value::Arg),+] as &[&dyn $crate::value::Arg] };
}
pub(crate) use args;

macro_rules! int_arg {
    ($($t:ty),*) => {$(
        impl Arg for $t {
            fn val(&self) -> Val<'_> {
                // Counts and sizes are far below i64::MAX; one that is not is stored as
                // the largest value rather than wrapped to a negative one.
                Val::Int(i64::try_from(*self).unwrap_or(i64::MAX))
            }
        }
    )*};
}
int_arg!(i64, i32, u32, u64, usize, u16, u8);

impl Arg for bool {
    fn val(&self) -> Val<'_> {
        Val::Int(*self as i64)
    }
}
impl Arg for f64 {
    fn val(&self) -> Val<'_> {
        Val::Real(*self)
    }
}
impl Arg for str {
    fn val(&self) -> Val<'_> {
        Val::Text(self)
    }
}
impl Arg for String {
    fn val(&self) -> Val<'_> {
        Val::Text(self)
    }
}
impl Arg for [u8] {
    fn val(&self) -> Val<'_> {
        Val::Blob(self)
    }
}
impl Arg for Vec<u8> {
    fn val(&self) -> Val<'_> {
        Val::Blob(self)
    }
}
impl<const N: usize> Arg for [u8; N] {
    fn val(&self) -> Val<'_> {
        Val::Blob(self)
    }
}
impl<T: Arg + ?Sized> Arg for &T {
    fn val(&self) -> Val<'_> {
        (**self).val()
    }
}
impl<T: Arg> Arg for Option<T> {
    fn val(&self) -> Val<'_> {
        self.as_ref().map_or(Val::Null, Arg::val)
    }
}
impl Arg for Val<'_> {
    fn val(&self) -> Val<'_> {
        *self
    }
}
/// For queries whose arguments are built up at run time.
#[derive(Debug, Clone)]
pub(crate) enum Owned {
    Int(i64),
    Text(String),
}
impl Arg for Owned {
    fn val(&self) -> Val<'_> {
        match self {
            Owned::Int(i) => Val::Int(*i),
            Owned::Text(s) => Val::Text(s),
        }
    }
}
impl From<String> for Owned {
    fn from(s: String) -> Self {
        Owned::Text(s)
    }
}
impl From<i64> for Owned {
    fn from(i: i64) -> Self {
        Owned::Int(i)
    }
}

impl rusqlite::ToSql for Val<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match *self {
            Val::Null => ValueRef::Null,
            Val::Int(i) => ValueRef::Integer(i),
            Val::Real(f) => ValueRef::Real(f),
            Val::Text(s) => ValueRef::Text(s.as_bytes()),
            Val::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

/// SQLite's placeholders as PostgreSQL's, and its case-blind `LIKE` as `ILIKE`; quoted
/// text is left alone.
pub(crate) fn to_pg(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut next = 1usize;
    let mut chars = sql.char_indices().peekable();
    let mut quoted = false;
    while let Some((i, ch)) = chars.next() {
        if ch == '\'' {
            quoted = !quoted;
            out.push(ch);
            continue;
        }
        if quoted {
            out.push(ch);
            continue;
        }
        match ch {
            '?' => {
                let mut digits = String::new();
                while let Some(&(_, d)) = chars.peek().filter(|(_, d)| d.is_ascii_digit()) {
                    digits.push(d);
                    chars.next();
                }
                out.push('$');
                if digits.is_empty() {
                    out.push_str(&next.to_string());
                    next += 1;
                } else {
                    out.push_str(&digits);
                }
            }
            'L' | 'l' if sql[i..].len() >= 5 && sql[i..i + 4].eq_ignore_ascii_case("like") => {
                let before = sql[..i].chars().next_back().is_none_or(|c| !c.is_alphanumeric() && c != '_');
                let after = sql[i + 4..].chars().next().is_none_or(|c| !c.is_alphanumeric() && c != '_');
                if before && after {
                    out.push_str("ILIKE");
                    for _ in 0..3 {
                        chars.next();
                    }
                } else {
                    out.push(ch);
                }
            }
            _ => out.push(ch),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::to_pg;

    #[test]
    fn placeholders_and_like_translate_outside_quotes() {
        assert_eq!(to_pg("SELECT 1 FROM t WHERE a = ?1 AND b = ?12"), "SELECT 1 FROM t WHERE a = $1 AND b = $12");
        assert_eq!(to_pg("a = ? AND b = ?"), "a = $1 AND b = $2");
        assert_eq!(to_pg("x LIKE ?1 ESCAPE '\\' AND likes = '?' AND y like ?2"), "x ILIKE $1 ESCAPE '\\' AND likes = '?' AND y ILIKE $2");
    }
}
