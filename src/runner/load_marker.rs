//! Shards wait for shard 0's data load (docs/distributed.md): shard 0 removes the run's
//! marker before its setup and load and writes it after them; the other shards poll for
//! it before they connect their clients, for at most `--load-timeout`. The marker is a kv
//! key in the target's own namespace, so `loadrig cleanup` removes it with the rest.

use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};

use crate::plan::LoadMarker;
use crate::targets::{Session, Target};
use crate::vocab::Op;

/// How often a waiting shard looks for the marker.
const POLL: Duration = Duration::from_millis(100);

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// One session with the target's namespace set up (the kv table on SQL targets).
async fn session<T: Target>(target: &T) -> Result<T::Session> {
    let mut s = target
        .connect()
        .await
        .map_err(|e| anyhow!("load marker: {}", e.message))?;
    s.setup()
        .await
        .map_err(|e| anyhow!("load marker: {}", e.message))?;
    Ok(s)
}

/// Shard 0, before its setup and load: no marker of this run is left from an earlier one.
pub fn clear<T: Target>(target: &T, marker: &LoadMarker) -> Result<()> {
    let key = marker.key();
    runtime()?.block_on(async {
        let mut s = session(target).await?;
        s.execute(&Op::Delete { key: &key })
            .await
            .map_err(|e| anyhow!("load marker '{key}': {}", e.message))?;
        Ok(())
    })
}

/// Shard 0, after its setup and load: the data is there.
pub fn write<T: Target>(target: &T, marker: &LoadMarker) -> Result<()> {
    let key = marker.key();
    runtime()?.block_on(async {
        let mut s = session(target).await?;
        s.execute(&Op::Put {
            key: &key,
            value: b"loaded",
        })
        .await
        .map_err(|e| anyhow!("load marker '{key}': {}", e.message))?;
        Ok(())
    })
}

/// The other shards: wait until shard 0's marker is there, or fail after the timeout.
/// A target busy with shard 0's load (SQLite's lock) or not up yet is asked again.
pub fn wait<T: Target>(target: &T, marker: &LoadMarker) -> Result<Duration> {
    let key = marker.key();
    let started = Instant::now();
    runtime()?.block_on(async {
        let mut last_error = None;
        loop {
            match found(target, &key).await {
                Ok(true) => return Ok(started.elapsed()),
                Ok(false) => {}
                Err(e) => last_error = Some(e),
            }
            if started.elapsed() >= marker.timeout {
                let why = last_error.map_or(String::new(), |e| format!("; last error: {e}"));
                return Err(anyhow!(
                    "shard 0 did not finish loading within {}: no marker '{key}' on the target{why} (start shard 0 with the same --start-at and --seed, or raise --load-timeout)",
                    humantime::format_duration(marker.timeout)
                ));
            }
            tokio::time::sleep(POLL).await;
        }
    })
}

/// Whether the marker is there, on a new session (a failed one is not reused).
async fn found<T: Target>(target: &T, key: &str) -> Result<bool> {
    let mut s = session(target).await?;
    let got = s
        .execute(&Op::Get { key })
        .await
        .map_err(|e| anyhow!("{}", e.message))?;
    Ok(got.rows > 0)
}
