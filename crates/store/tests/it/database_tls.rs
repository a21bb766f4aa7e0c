//! Nodes on other machines reach a team's database over TLS: `sslmode=require` (or
//! libpq's `verify-full`) encrypts and verifies the server's certificate against the CA
//! `sslrootcert` names; a server it cannot verify, or one without TLS, is refused, never
//! used in the clear.

use crate::common::{envelope_at, postgres, Place};
use gatehouse_store::{RateLimit, Store};

#[test]
fn a_database_reached_over_tls_is_verified_and_never_used_in_the_clear() {
    let Some((pg, ca)) = gatehouse_pg_testserver::Postgres::start_tls() else { return };
    let (url, ca) = (pg.url(), ca.display().to_string());

    let node = Store::open_url(&format!("{url}?sslmode=require&sslrootcert={ca}")).expect("a server the CA vouches for");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    assert!(node.accept(envelope_at(b"over tls", 1, now), &RateLimit::default()).unwrap().is_ok());
    assert_eq!(node.count_envelopes().unwrap(), 1);
    let ours = |encrypted: bool| {
        pg.psql(&format!(
            "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'gatehouse' AND s.ssl = {encrypted}"
        ))
        .unwrap()
    };
    assert_ne!(ours(true), "0", "the node's connections are encrypted");
    assert_eq!(ours(false), "0", "no connection of the node is in the clear");
    drop(node);

    let node = Store::open_url(&format!("{url}?sslmode=verify-full&sslrootcert={ca}")).expect("libpq's verify-full: the same");
    assert_eq!(node.count_envelopes().unwrap(), 1);
    drop(node);

    // Messages name a TLS URL's database as any other's (libpq's options read, not refused).
    let named = Store::describe_url(&format!("{url}?sslmode=verify-full&sslrootcert={ca}"));
    assert!(named.starts_with("PostgreSQL database postgres on 127.0.0.1:"), "{named}");

    // A certificate no one vouches for: refused, saying why.
    let e = Store::open_url(&format!("{url}?sslmode=require")).err().expect("refused");
    assert!(e.to_string().contains("certificate"), "{e}");
    // A CA named without asking for TLS is a mistake, not a request for the clear.
    let e = Store::open_url(&format!("{url}?sslrootcert={ca}")).err().expect("refused");
    assert!(e.to_string().contains("sslmode=require"), "{e}");

    // A server without TLS, asked for it: refused, not used in the clear.
    let Some(Place::Pg(plain)) = postgres() else { unreachable!("PostgreSQL ran above") };
    let e = Store::open_url(&format!("{plain}?sslmode=require&sslrootcert={ca}")).err().expect("refused");
    assert!(e.to_string().contains("TLS"), "{e}");
}
