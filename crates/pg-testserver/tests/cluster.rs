//! The harness itself: a cluster starts on loopback, takes a connection, keeps what was
//! committed across a stop and a start, and is gone when dropped.

use gatehouse_pg_testserver::Postgres;

#[test]
fn a_cluster_starts_keeps_its_data_across_a_restart_and_stops_when_dropped() {
    let Some(pg) = Postgres::start() else { return };
    assert_eq!(pg.psql("SELECT 1").unwrap(), "1");
    assert!(pg.url().starts_with(&format!("postgres://gatehouse@127.0.0.1:{}/", pg.port)));
    pg.psql("CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)").unwrap();
    pg.stop();
    assert!(pg.psql("SELECT 1").is_err(), "a stopped cluster refuses connections");
    assert!(std::net::TcpStream::connect(("127.0.0.1", pg.port)).is_err());
    pg.resume();
    assert_eq!(pg.psql("SELECT n FROM kept").unwrap(), "7");
    let (port, dir) = (pg.port, pg.dir().to_path_buf());
    drop(pg);
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err(), "dropped, it no longer listens");
    assert!(!dir.exists(), "its temp dir is gone");
}
