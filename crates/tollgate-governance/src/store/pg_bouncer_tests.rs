//! Postgres through PgBouncer in transaction pooling mode (`pool_mode = transaction`), with one
//! server connection for every client: the store with `pgbouncer=true` migrates, round-trips
//! every entity and writes spend from three stores at once, while a store without it breaks.
//! The test starts `pgbouncer` itself on a free loopback port (stopped by its PID) in front of
//! the server of `TOLLGATE_TEST_DATABASE_URL`, on a fresh database dropped afterwards; it skips,
//! saying why, when that variable is unset or `pgbouncer` is not installed.

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection};

use super::pg_fleet_tests::{N, assert_schema_complete, migrate_at_once, spend_at_once};
use super::*;

/// A `pgbouncer` child process and its config directory; killed by PID on drop.
struct Bouncer {
    child: Child,
    port: u16,
    dir: std::path::PathBuf,
}

impl Drop for Bouncer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts PgBouncer (transaction pooling, `pool_size` server connections) in front of
/// `server`; `None` (after saying so) when `pgbouncer` is not installed.
fn start_bouncer(server: &PgConnectOptions, pool_size: u32) -> Option<Bouncer> {
    if Command::new("pgbouncer")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_err()
    {
        let _ = writeln!(
            std::io::stderr().lock(),
            "SKIPPED {}: pgbouncer is not installed (apt-get install -y pgbouncer)",
            crate::test_support::test_name("pg_bouncer_tests")
        );
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = std::env::temp_dir().join(format!("tg-gov-pgbouncer-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let users = dir.join("users.txt");
    std::fs::write(&users, format!("\"{}\" \"\"\n", server.get_username())).unwrap();
    let ini = dir.join("pgbouncer.ini");
    std::fs::write(
        &ini,
        format!(
            "[databases]\n* = host={} port={}\n[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\nauth_type = trust\nauth_file = {}\npool_mode = transaction\ndefault_pool_size = {pool_size}\nmax_client_conn = 100\n",
            server.get_host(),
            server.get_port(),
            users.display()
        ),
    )
    .unwrap();
    let mut cmd = Command::new("pgbouncer");
    // PgBouncer will not run as root
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if root {
        cmd.args(["-u", "nobody"]);
    }
    let child = cmd
        .arg(&ini)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let b = Bouncer { child, port, dir };
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "pgbouncer did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(b)
}

/// A fresh database on `server` (dropped by [`drop_database`]).
async fn create_database(server: &PgConnectOptions, name: &str) {
    let mut c = PgConnection::connect_with(&server.clone().database("postgres"))
        .await
        .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
        .execute(&mut c)
        .await
        .unwrap();
    let _ = c.close().await;
}

async fn drop_database(server: &PgConnectOptions, name: &str) {
    let mut c = PgConnection::connect_with(&server.clone().database("postgres"))
        .await
        .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
    )))
    .execute(&mut c)
    .await
    .unwrap();
    let _ = c.close().await;
}

/// Three stores with `pgbouncer=true` share one PgBouncer server connection: they migrate a
/// fresh database at once, round-trip every entity and write spend at once with exact totals
/// (read straight from Postgres). Two stores without `pgbouncer=true` fail there.
#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn pg_through_pgbouncer_transaction_pooling() {
    let Some(url) = crate::test_support::postgres_url("pg_through_pgbouncer_transaction_pooling")
    else {
        return;
    };
    let server: PgConnectOptions = url.parse().unwrap();
    let Some(bouncer) = start_bouncer(&server, 1) else {
        return;
    };
    let db = format!("tg_gov_pgbouncer_{}", std::process::id());
    drop_database(&server, &db).await;
    create_database(&server, &db).await;
    let through = format!(
        "postgres://{}@127.0.0.1:{}/{db}?pgbouncer=true",
        server.get_username(),
        bouncer.port
    );
    let small = PgPoolSettings {
        max_connections: Some(3),
        acquire_timeout_secs: Some(30.0),
    };
    let mut stores = Vec::new();
    for _ in 0..N {
        let s = PostgresStore::connect_pooled(&through, &small)
            .await
            .unwrap();
        assert!(s.pgbouncer());
        stores.push(s);
    }
    let direct = PostgresStore::connect_with(server.clone().database(&db))
        .await
        .unwrap();
    migrate_at_once(&stores, 0).await;
    assert_schema_complete(&direct).await;
    super::tests::round_trip(&stores[1]).await;
    spend_at_once(&stores, &direct).await;

    // Without `pgbouncer=true`: PgBouncer refuses sqlx's `extra_float_digits` startup
    // parameter; without that parameter, sqlx's named, cached statements break as soon as two
    // clients share the server connection.
    let plain = through.replace("?pgbouncer=true", "");
    let e = PostgresStore::connect(&plain)
        .await
        .err()
        .map(|e| e.to_string());
    assert!(
        e.as_deref()
            .is_some_and(|e| e.contains("unsupported startup parameter: extra_float_digits")),
        "{e:?}"
    );
    let named = async {
        let opts: PgConnectOptions = plain.parse()?;
        let opts = opts.extra_float_digits(None::<i8>);
        let a = PostgresStore::connect_with(opts.clone()).await?;
        let b = PostgresStore::connect_with(opts).await?;
        a.load().await?;
        b.load().await?;
        a.load().await?;
        Ok::<_, StoreError>(())
    };
    let e = named.await.err().map(|e| e.to_string());
    assert!(
        e.as_deref()
            .is_some_and(|e| e.contains("prepared statement")),
        "{e:?}"
    );

    for s in &stores {
        s.pool().close().await;
    }
    direct.pool().close().await;
    drop(bouncer);
    drop_database(&server, &db).await;
}
