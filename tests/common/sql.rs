//! The first row of a query, read straight from the database the tests put load on:
//! SQLite by its file, PostgreSQL and MariaDB by their URLs. Columns come as text (NULL as
//! empty), as the servers print them; [`ints`] reads a row of numbers.

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
