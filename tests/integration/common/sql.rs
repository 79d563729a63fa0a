//! The first row of a query, read straight from the database the tests put load on:
//! SQLite by its file, PostgreSQL and MariaDB by their URLs. Columns come as text (NULL as
//! empty), as the servers print them; [`ints`] reads a row of numbers. And a PostgreSQL fault:
//! [`terminate_run_backends`] ends a running rig's sessions from the server's side.

/// The first row of `sql` on the SQLite file `path`.
pub fn sqlite_row(path: &std::path::Path, sql: &str) -> Vec<String> {
    use rusqlite::types::ValueRef;
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut st = conn.prepare(sql).unwrap();
    let n = st.column_count();
    st.query_row([], |r| {
        (0..n)
            .map(|i| {
                Ok(match r.get_ref(i)? {
                    ValueRef::Null => String::new(),
                    ValueRef::Integer(v) => v.to_string(),
                    ValueRef::Real(v) => v.to_string(),
                    ValueRef::Text(t) | ValueRef::Blob(t) => {
                        String::from_utf8_lossy(t).into_owned()
                    }
                })
            })
            .collect()
    })
    .unwrap()
}

/// The first row of `sql` on the PostgreSQL server at `url` (empty when there is none).
pub fn pg_row(url: &str, sql: &str) -> Vec<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        for m in client.simple_query(sql).await.unwrap() {
            if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
                return (0..r.len())
                    .map(|i| r.get(i).unwrap_or("").to_string())
                    .collect();
            }
        }
        Vec::new()
    })
}

/// The first row of `sql` on the MariaDB/MySQL server at `url`.
pub fn mysql_row(url: &str, sql: &str) -> Vec<String> {
    use mysql_async::prelude::Queryable;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let opts = mysql_async::Opts::from_url(url).unwrap();
        let opts = mysql_async::OptsBuilder::from_opts(opts).prefer_socket(false);
        let mut conn = mysql_async::Conn::new(opts).await.unwrap();
        let row: mysql_async::Row = conn.query_first(sql).await.unwrap().unwrap();
        row.unwrap()
            .into_iter()
            .map(|v| match v {
                mysql_async::Value::NULL => String::new(),
                mysql_async::Value::Int(i) => i.to_string(),
                mysql_async::Value::UInt(u) => u.to_string(),
                mysql_async::Value::Bytes(b) => String::from_utf8(b).unwrap(),
                other => panic!("unexpected value {other:?}"),
            })
            .collect()
    })
}

/// A row of numbers (an empty column reads as 0).
pub fn ints(row: Vec<String>) -> Vec<i64> {
    row.iter()
        .map(|v| if v.is_empty() { 0 } else { v.parse().unwrap() })
        .collect()
}

/// Ends, with `pg_terminate_backend`, the sessions of the run `child` (started with
/// `application_name=app`, writing `r.json` in `d`) whose last statement is `LIKE like`: the
/// run's own sessions, never the setup session before them, whose loss fails a run before
/// it starts. Tries every 100 ms for 4 s until `want` were ended, then checks that the run
/// outlived it: exit 0, every error of class `connect`, at least one reconnect and
/// operations in its last interval. Returns the result and how many sessions were ended.
pub fn terminate_run_backends(
    d: &super::Dir,
    child: std::process::Child,
    url: &str,
    app: &str,
    like: &str,
    want: i64,
) -> (loadrig::result::RunResult, i64) {
    let kill = format!(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
         WHERE application_name = '{app}' AND query LIKE '{like}'"
    );
    let mut killed = 0;
    for _ in 0..40 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        killed += ints(pg_row(url, &kill))[0];
        if killed >= want {
            break;
        }
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(killed >= want, "{killed} of the run's sessions found");
    let r = d.result("r.json");
    assert!(r.total.reconnects >= 1, "reconnects {}", r.total.reconnects);
    let classes: Vec<_> = r.total.errors_by_class.keys().collect();
    assert!(
        classes
            .iter()
            .all(|c| **c == loadrig::vocab::ErrorClass::Connect),
        "{classes:?}"
    );
    assert!(r.intervals.last().unwrap().ok > 0, "the run went on");
    (r, killed)
}
