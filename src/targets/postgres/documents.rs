//! Documents with attachments (`attachment=PATH` or `attachment_size=N`, see
//! [`crate::targets::attachment`]): the document as `jsonb` in
//! `loadrig_documents(k, doc, attachment)`, the attachment as a large object whose OID the
//! row holds. A large object, not `bytea`, because it can be written and read in pieces
//! (`lo_put`, `lo_get` of 64 KiB each): the driver binds and returns a `bytea` whole, so a
//! 2 MB attachment would sit whole in every client, and twice while it is encoded.

use tokio_postgres::Statement;

use super::{classify, TokioSession};
use crate::targets::attachment::{self, Attachment, CHUNK};
use crate::vocab::{ErrorClass, OpError};

pub const CREATE: &str = "CREATE TABLE IF NOT EXISTS loadrig_documents (k VARCHAR(255) PRIMARY KEY, doc JSONB NOT NULL, attachment OID NOT NULL)";
/// Unlink every attachment before the table goes (cleanup): large objects live outside it.
pub const UNLINK_ALL: &str = "SELECT lo_unlink(attachment) FROM loadrig_documents";

const SQL: [&str; 6] = [
    "SELECT lo_create(0)",
    "SELECT lo_put($1, $2, $3)",
    "INSERT INTO loadrig_documents (k, doc, attachment) VALUES ($1, $2::text::jsonb, $3)",
    "SELECT doc::text, attachment FROM loadrig_documents WHERE k = $1",
    "SELECT lo_get($1, $2, $3)",
    "SELECT lo_unlink(attachment) FROM loadrig_documents WHERE k = $1",
];
const CREATE_LO: usize = 0;
const PUT: usize = 1;
const INSERT: usize = 2;
const FIND: usize = 3;
const GET: usize = 4;
const UNLINK: usize = 5;
const DELETE: &str = "DELETE FROM loadrig_documents WHERE k = $1";

/// The statements, prepared once per connection.
pub struct Statements(Vec<Statement>);

fn db(e: tokio_postgres::Error) -> OpError {
    classify(&e)
}

impl TokioSession {
    async fn statements(&mut self) -> Result<&[Statement], OpError> {
        if self.documents.is_none() {
            let mut all = Vec::with_capacity(SQL.len() + 1);
            for sql in SQL.iter().chain([&DELETE]) {
                all.push(self.client.prepare(sql).await.map_err(db)?);
            }
            self.documents = Some(Statements(all));
        }
        Ok(self.documents.as_ref().map_or(&[], |s| s.0.as_slice()))
    }

    /// Store a document and stream its attachment into a new large object, in one
    /// transaction; a document already under `key` is replaced, its old attachment unlinked.
    pub(super) async fn put_document(
        &mut self,
        key: &str,
        value: &[u8],
        a: &Attachment,
    ) -> Result<u64, OpError> {
        let doc = std::str::from_utf8(value).map_err(|_| {
            OpError::new(
                ErrorClass::Other,
                format!("document {key} is not UTF-8 JSON"),
            )
        })?;
        self.batch("BEGIN").await?;
        let result = self.write_document(key, doc, a).await;
        let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
        self.batch(end).await?;
        result
    }

    async fn write_document(
        &mut self,
        key: &str,
        doc: &str,
        a: &Attachment,
    ) -> Result<u64, OpError> {
        let st = self.statements().await?.to_vec();
        self.client
            .execute(&st[UNLINK], &[&key])
            .await
            .map_err(db)?;
        self.client
            .execute(&st[DELETE_AT], &[&key])
            .await
            .map_err(db)?;
        let oid: u32 = self
            .client
            .query_one(&st[CREATE_LO], &[])
            .await
            .map_err(db)?
            .get(0);
        let mut chunks = a.chunks(key)?;
        let mut chunk = Vec::with_capacity(CHUNK);
        let mut offset = 0i64;
        while chunks.next_into(&mut chunk)? {
            self.client
                .execute(&st[PUT], &[&oid, &offset, &chunk.as_slice()])
                .await
                .map_err(db)?;
            offset += chunk.len() as i64;
        }
        self.client
            .execute(&st[INSERT], &[&key, &doc, &oid])
            .await
            .map_err(db)
    }

    /// Find a document and read its attachment back in pieces, checking each.
    pub(super) async fn get_document(&mut self, key: &str, a: &Attachment) -> Result<u64, OpError> {
        let st = self.statements().await?.to_vec();
        let Some(row) = self
            .client
            .query_opt(&st[FIND], &[&key])
            .await
            .map_err(db)?
        else {
            return Err(attachment::missing(key));
        };
        let oid: u32 = row.get(1);
        let mut check = a.check(key)?;
        let mut offset = 0i64;
        loop {
            let row = self
                .client
                .query_one(&st[GET], &[&oid, &offset, &(CHUNK as i32)])
                .await
                .map_err(db)?;
            let piece: &[u8] = row.get(0);
            check.feed(piece)?;
            offset += piece.len() as i64;
            if piece.len() < CHUNK {
                break;
            }
        }
        check.finish()?;
        Ok(1)
    }

    /// Delete a document and unlink its attachment.
    pub(super) async fn delete_document(&mut self, key: &str) -> Result<u64, OpError> {
        let st = self.statements().await?.to_vec();
        self.client
            .execute(&st[UNLINK], &[&key])
            .await
            .map_err(db)?;
        self.client
            .execute(&st[DELETE_AT], &[&key])
            .await
            .map_err(db)
    }
}

/// Where the delete statement sits among the prepared ones.
const DELETE_AT: usize = SQL.len();
