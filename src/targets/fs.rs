//! `fs://DIR`: one file per key, the way file-based session stores keep sessions.
//!
//! Files live under `DIR/loadrig_kv/`, named by the SHA-1 of the key in hex. With
//! `shards=N` (16, 256, 4096 or 65536) they go into N folders named by the first hex digits
//! of the file name, as in `ab/abff1785…` (seed 003's FS2 layout). `sync=each` fsyncs every
//! write; `sync=batch` syncs the file system every `batch` writes (default 1000), like
//! calling /bin/sync after each thousand sessions. With `attachment=PATH` or
//! `attachment_size=N` (see [`super::attachment`]) each document's attachment is streamed
//! into a file beside it, named like it with `.att` added, and checked on `kv.get`. Options
//! come from the URL query or from workload parameters of the same name. Only files inside
//! `loadrig_kv` are ever touched.
//! Errors: every I/O failure is class `other`, with the path in the message.

use std::fs::{self, File, OpenOptions};
use std::future::{ready, Future};
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

use super::attachment::{self, Attachment, CHUNK};
use super::{Params, Session, Target, TargetUrl};
use crate::error::InputError;
use crate::vocab::{
    ErrorClass, Family, NativeOp, Op, OpError, OpFamily, Outcome, RecordOp, ValueKind, RECORD_TABLE,
};

/// The folder under DIR that holds everything this target creates.
pub const NAMESPACE: &str = "loadrig_kv";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sync {
    None,
    Each,
    Batch(u64),
}

pub struct Fs {
    root: PathBuf,
    /// `DIR/loadrig_usertable`: a file per record of the `record.*` operations.
    records: PathBuf,
    /// Hex digits of the shard folder name; 0 for a flat folder.
    shard_digits: usize,
    sync: Sync,
    attachment: Option<Attachment>,
}

impl Fs {
    pub fn open(
        url: &TargetUrl,
        params: &std::collections::BTreeMap<String, toml::Value>,
    ) -> Result<Fs, InputError> {
        url.check_options(&["shards", "sync", "batch", "attachment", "attachment_size"])?;
        if url.location.is_empty() {
            return Err(InputError::new(
                "fs:// needs a folder, like fs://./sessions",
            ));
        }
        let shards = url.option("shards", params).unwrap_or_else(|| "1".into());
        let shard_digits = match shards.as_str() {
            "1" | "0" => 0,
            "16" => 1,
            "256" => 2,
            "4096" => 3,
            "65536" => 4,
            other => {
                return Err(InputError::new(format!(
                    "fs:// shards={other}: expected 1, 16, 256, 4096 or 65536 (folders named by 1 to 4 hex digits)"
                )))
            }
        };
        let batch = match url.option("batch", params) {
            Some(b) => b.parse::<u64>().ok().filter(|b| *b > 0).ok_or_else(|| {
                InputError::new(format!(
                    "fs:// batch={b}: expected a positive number of writes"
                ))
            })?,
            None => 1000,
        };
        let sync = match url.option("sync", params).as_deref() {
            None | Some("none") => Sync::None,
            Some("each") => Sync::Each,
            Some("batch") => Sync::Batch(batch),
            Some(other) => {
                return Err(InputError::new(format!(
                    "fs:// sync={other}: expected none, each or batch"
                )))
            }
        };
        Ok(Fs {
            root: Path::new(&url.location).join(NAMESPACE),
            records: Path::new(&url.location).join(RECORD_TABLE),
            shard_digits,
            sync,
            attachment: Attachment::from_options(url, params)?,
        })
    }
}

/// Where the file for `key` lives under `root`, for a layout of `shard_digits`.
pub fn file_for(root: &Path, shard_digits: usize, key: &str) -> PathBuf {
    let name = sha1_smol::Sha1::from(key).digest().to_string();
    if shard_digits == 0 {
        root.join(name)
    } else {
        root.join(&name[..shard_digits]).join(name)
    }
}

pub struct FsSession {
    root: PathBuf,
    records: PathBuf,
    shard_digits: usize,
    sync: Sync,
    writes: u64,
    buf: Vec<u8>,
    attachment: Option<Attachment>,
    /// One piece of an attachment on its way in or out; empty until an attachment is written
    /// (sessions without attachments, and per-op connections, allocate nothing).
    chunk: Vec<u8>,
}

fn io_error(path: &Path, e: std::io::Error) -> OpError {
    OpError::new(ErrorClass::Other, format!("{}: {e}", path.display()))
}

impl Target for Fs {
    fn from_url(url: &TargetUrl, params: &Params) -> Result<Self, InputError> {
        Self::open(url, params)
    }

    type Session = FsSession;

    fn blocking(&self) -> bool {
        true
    }

    fn cannot_pipeline(&self) -> Option<&'static str> {
        Some("a client is a thread calling the file system, with no connection to keep several operations on")
    }

    /// A record file at a time, and a directory while scanning.
    fn files_per_client(&self) -> usize {
        2
    }

    fn families(&self) -> &'static [Family] {
        &[Family::Record]
    }

    /// Files have no order to scan in.
    fn refuses(&self, op: &NativeOp<ValueKind>) -> bool {
        matches!(op, NativeOp::Record(RecordOp::Scan { .. }))
    }

    fn connect(&self) -> impl Future<Output = Result<FsSession, OpError>> {
        let parent = self.root.parent().unwrap_or(Path::new("."));
        ready(match fs::create_dir_all(parent) {
            Ok(()) => Ok(FsSession {
                root: self.root.clone(),
                records: self.records.clone(),
                shard_digits: self.shard_digits,
                sync: self.sync,
                writes: 0,
                buf: Vec::new(),
                attachment: self.attachment.clone(),
                chunk: Vec::new(),
            }),
            Err(e) => Err(OpError::new(
                ErrorClass::Connect,
                format!("cannot use folder {}: {e}", parent.display()),
            )),
        })
    }
}

impl FsSession {
    fn write(&mut self, key: &str, value: &[u8], create: bool) -> Result<u64, OpError> {
        let path = file_for(&self.root, self.shard_digits, key);
        let mut file = match OpenOptions::new()
            .write(true)
            .truncate(true)
            .create(create)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if !create && e.kind() == ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(io_error(&path, e)),
        };
        file.write_all(value).map_err(|e| io_error(&path, e))?;
        if let Some(a) = &self.attachment {
            let att = path.with_extension("att");
            let mut out = File::create(&att).map_err(|e| io_error(&att, e))?;
            let mut chunks = a.chunks(key)?;
            while chunks.next_into(&mut self.chunk)? {
                out.write_all(&self.chunk).map_err(|e| io_error(&att, e))?;
            }
            if self.sync == Sync::Each {
                out.sync_data().map_err(|e| io_error(&att, e))?;
            }
        }
        self.writes += 1;
        match self.sync {
            Sync::None => {}
            Sync::Each => file.sync_data().map_err(|e| io_error(&path, e))?,
            Sync::Batch(n) => {
                if self.writes.is_multiple_of(n) {
                    sync_file_system(&file).map_err(|e| io_error(&path, e))?;
                }
            }
        }
        Ok(1)
    }

    /// Read a document, and check its attachment when there is one.
    fn read(&mut self, key: &str) -> Result<u64, OpError> {
        let path = file_for(&self.root, self.shard_digits, key);
        match File::open(&path) {
            Ok(mut f) => {
                self.buf.clear();
                f.read_to_end(&mut self.buf)
                    .map_err(|e| io_error(&path, e))?;
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return match self.attachment {
                    Some(_) => Err(attachment::missing(key)),
                    None => Ok(0),
                }
            }
            Err(e) => return Err(io_error(&path, e)),
        }
        let Some(a) = &self.attachment else {
            return Ok(1);
        };
        let att = path.with_extension("att");
        let mut file = File::open(&att)
            .map_err(|e| OpError::new(ErrorClass::Protocol, format!("{}: {e}", att.display())))?;
        let mut check = a.check(key)?;
        self.chunk.resize(CHUNK, 0);
        loop {
            let n = file.read(&mut self.chunk).map_err(|e| io_error(&att, e))?;
            if n == 0 {
                break;
            }
            check.feed(&self.chunk[..n])?;
        }
        check.finish()?;
        Ok(1)
    }

    fn run(&mut self, op: &Op<'_>) -> Result<Outcome, OpError> {
        let rows = match *op {
            Op::Nop => 0,
            Op::Native {
                op: NativeOp::Record(record),
                args,
                ..
            } => self.record(record, args)?,
            // Every other family: the runner refuses them before anything runs.
            Op::Native { op: other, .. } => return Err(not_run(other.label())),
            // Files have no transactions: a tx of record steps runs them in order, and a
            // rollback undoes nothing (docs/builtins.md, "YCSB built-ins").
            Op::Begin | Op::Commit | Op::Rollback => 0,
            Op::Put { key, value } => self.write(key, value, true)?,
            Op::Update { key, value } => self.write(key, value, false)?,
            Op::Get { key } => self.read(key)?,
            Op::Delete { key } => {
                let path = file_for(&self.root, self.shard_digits, key);
                if self.attachment.is_some() {
                    match fs::remove_file(path.with_extension("att")) {
                        Err(e) if e.kind() != ErrorKind::NotFound => {
                            return Err(io_error(&path.with_extension("att"), e))
                        }
                        _ => {}
                    }
                }
                match fs::remove_file(&path) {
                    Ok(()) => 1,
                    Err(e) if e.kind() == ErrorKind::NotFound => 0,
                    Err(e) => return Err(io_error(&path, e)),
                }
            }
        };
        Ok(Outcome::rows(rows))
    }
}

/// Flush every dirty page of the file system that holds `file` (Linux syncfs, else fsync).
impl FsSession {
    /// A record operation on the record's file: its fields one after the other, each as
    /// its length (4 bytes, little-endian) and its bytes. Rows: records read or written.
    fn record(&mut self, op: &RecordOp<ValueKind>, args: &[Vec<u8>]) -> Result<u64, OpError> {
        let key = String::from_utf8_lossy(&args[0]);
        let path = file_for(&self.records, 0, &key);
        let field = |at: usize| -> Result<usize, OpError> {
            let text = String::from_utf8_lossy(&args[at]);
            text.trim().parse::<usize>().map_err(|_| {
                OpError::new(
                    ErrorClass::Other,
                    format!("record field '{text}' is not a field number"),
                )
            })
        };
        match op {
            RecordOp::Insert { .. } => {
                let mut file = match OpenOptions::new().write(true).create_new(true).open(&path) {
                    Ok(f) => f,
                    Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                        return Err(OpError::new(
                            ErrorClass::Constraint,
                            format!("record {key} exists already"),
                        ))
                    }
                    Err(e) => return Err(io_error(&path, e)),
                };
                file.write_all(&encode_fields(&args[1..]))
                    .map_err(|e| io_error(&path, e))?;
                self.sync_record(&file, &path)?;
                Ok(1)
            }
            RecordOp::Read { field: f, .. } => {
                let Some(fields) = self.read_fields(&path)? else {
                    return Ok(0);
                };
                match f {
                    Some(_) => Ok(u64::from(field(1)? < fields.len())),
                    None => Ok(1),
                }
            }
            RecordOp::Update { field: f, .. } => {
                let Some(mut fields) = self.read_fields(&path)? else {
                    return Ok(0);
                };
                match f {
                    Some(_) => {
                        let n = field(1)?;
                        if n >= fields.len() {
                            return Ok(0);
                        }
                        fields[n] = args[2].clone();
                    }
                    None => fields = args[1..].to_vec(),
                }
                let mut file = File::create(&path).map_err(|e| io_error(&path, e))?;
                file.write_all(&encode_fields(&fields))
                    .map_err(|e| io_error(&path, e))?;
                self.sync_record(&file, &path)?;
                Ok(1)
            }
            RecordOp::Delete { .. } => match fs::remove_file(&path) {
                Ok(()) => Ok(1),
                Err(e) if e.kind() == ErrorKind::NotFound => Ok(0),
                Err(e) => Err(io_error(&path, e)),
            },
            // Refused before anything runs (`refuses`).
            RecordOp::Scan { .. } => Err(not_run(op.label())),
        }
    }

    /// A record's fields, `None` when it does not exist.
    fn read_fields(&mut self, path: &Path) -> Result<Option<Vec<Vec<u8>>>, OpError> {
        self.buf.clear();
        match File::open(path) {
            Ok(mut f) => f
                .read_to_end(&mut self.buf)
                .map_err(|e| io_error(path, e))?,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(path, e)),
        };
        decode_fields(&self.buf).map(Some).ok_or_else(|| {
            OpError::new(
                ErrorClass::Protocol,
                format!("{}: not a record file", path.display()),
            )
        })
    }

    fn sync_record(&mut self, file: &File, path: &Path) -> Result<(), OpError> {
        self.writes += 1;
        match self.sync {
            Sync::None => Ok(()),
            Sync::Each => file.sync_data().map_err(|e| io_error(path, e)),
            Sync::Batch(n) if self.writes.is_multiple_of(n) => {
                sync_file_system(file).map_err(|e| io_error(path, e))
            }
            Sync::Batch(_) => Ok(()),
        }
    }
}

/// Fields as a record file holds them: each its length (u32, little-endian), then its bytes.
pub fn encode_fields(fields: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(fields.iter().map(|f| f.len() + 4).sum());
    for f in fields {
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(f);
    }
    out
}

/// The error for an operation files cannot run.
fn not_run(label: &str) -> OpError {
    OpError::new(
        ErrorClass::Other,
        format!("fs:// targets do not run {label}"),
    )
}

/// The fields of a record file, `None` when it is not one.
pub fn decode_fields(mut bytes: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut fields = Vec::new();
    while !bytes.is_empty() {
        let len = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
        fields.push(bytes.get(4..4 + len)?.to_vec());
        bytes = &bytes[4 + len..];
    }
    Some(fields)
}

fn sync_file_system(file: &File) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: syncfs only reads the descriptor, which `file` keeps open.
        if unsafe { libc::syncfs(file.as_raw_fd()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    file.sync_all()
}

impl Session for FsSession {
    /// An empty `loadrig_usertable` folder.
    fn create_records(
        &mut self,
        _layout: crate::vocab::RecordLayout,
    ) -> impl Future<Output = Result<(), OpError>> {
        let records = &self.records;
        let result = match fs::remove_dir_all(records) {
            Err(e) if e.kind() != ErrorKind::NotFound => Err(io_error(records, e)),
            _ => fs::create_dir_all(records).map_err(|e| io_error(records, e)),
        };
        ready(result)
    }

    fn setup(&mut self) -> impl Future<Output = Result<(), OpError>> {
        let mut result = fs::create_dir_all(&self.root).map_err(|e| io_error(&self.root, e));
        if self.shard_digits > 0 && result.is_ok() {
            let shards = 16usize.pow(self.shard_digits as u32);
            for i in 0..shards {
                let dir = self.root.join(format!("{i:0w$x}", w = self.shard_digits));
                if let Err(e) = fs::create_dir_all(&dir) {
                    result = Err(io_error(&dir, e));
                    break;
                }
            }
        }
        ready(result)
    }

    fn execute(&mut self, op: &Op<'_>) -> impl Future<Output = Result<Outcome, OpError>> {
        ready(self.run(op))
    }

    /// Remove the `loadrig_kv` folder; files beside it are never touched.
    fn cleanup(&mut self) -> impl Future<Output = Result<u64, OpError>> {
        let count = |root: &Path| -> std::io::Result<u64> {
            let mut n = 0;
            let mut stack = vec![root.to_path_buf()];
            while let Some(dir) = stack.pop() {
                for e in fs::read_dir(&dir)? {
                    let e = e?;
                    if e.file_type()?.is_dir() {
                        stack.push(e.path());
                    } else {
                        n += 1;
                    }
                }
            }
            Ok(n)
        };
        let remove = |root: &Path| match count(root) {
            Ok(n) => fs::remove_dir_all(root)
                .map(|()| n)
                .map_err(|e| io_error(root, e)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(0),
            Err(e) => Err(io_error(root, e)),
        };
        ready(remove(&self.root).and_then(|kv| Ok(kv + remove(&self.records)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_files_round_trip_their_fields() {
        let fields = vec![b"abc".to_vec(), Vec::new(), vec![0u8, 255, 10]];
        let bytes = encode_fields(&fields);
        assert_eq!(&bytes[..7], &[3, 0, 0, 0, b'a', b'b', b'c']);
        assert_eq!(decode_fields(&bytes), Some(fields));
        assert_eq!(decode_fields(&[]), Some(Vec::new()));
        assert_eq!(decode_fields(&bytes[..5]), None, "cut short");
    }

    #[test]
    fn shard_folder_is_the_file_name_prefix() {
        let p = file_for(Path::new("/r"), 2, "session:1");
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        assert_eq!(name.len(), 40);
        assert_eq!(p.parent().unwrap(), Path::new("/r").join(&name[..2]));
        assert_eq!(
            file_for(Path::new("/r"), 0, "session:1"),
            Path::new("/r").join(name)
        );
    }
}
