//! `--shard I/N` and `--start-at TIME`: one process's share of a run split over N
//! processes, and the wall-clock instant they all start at (docs/distributed.md).

use std::time::{Duration, SystemTime};

use crate::duration;
use crate::engine::{share, LoadPlan, Mode, Shard};
use crate::error::InputError;

/// `I/N` as written: (I, N), with 0 ≤ I < N.
pub fn parse_shard(text: &str) -> Result<(usize, usize), InputError> {
    let bad = || {
        InputError::new(format!(
            "--shard {text}: expected I/N, this process's share I (from 0) of N"
        ))
        .help("for example --shard 0/4 ... --shard 3/4 for a run split over 4 processes")
    };
    let (i, n) = text.trim().split_once('/').ok_or_else(bad)?;
    let i: usize = i.trim().parse().map_err(|_| bad())?;
    let n: usize = n.trim().parse().map_err(|_| bad())?;
    if n == 0 || i >= n {
        return Err(InputError::new(format!(
            "--shard {text}: the share must be 0 to {} of {n}",
            n.saturating_sub(1)
        ))
        .help("shares are numbered from 0: --shard 0/4 ... --shard 3/4"));
    }
    Ok((i, n))
}

/// Give `load` (the whole run's) only share `index` of `count`: its clients (closed loop)
/// or its workers and their part of the rate (open loop). Every share needs a client. With
/// `--pipeline P` the shares are of connections, each with its P client streams, numbered
/// as in the unsharded run.
pub fn apply_shard(load: &mut LoadPlan, (index, count): (usize, usize)) -> Result<(), InputError> {
    let all = load.connections();
    let p = load.pipeline.max(1);
    if all < count {
        let what = if load.is_open() {
            "--max-in-flight"
        } else {
            "--clients"
        };
        return Err(InputError::new(format!(
            "--shard {index}/{count}: the run has {all} {} for {count} shards",
            if load.is_open() { "workers" } else { "clients" }
        ))
        .help(format!(
            "give every shard one at least: {what} {count} or more"
        )));
    }
    let (first, mine) = share(all, count, index);
    let rate = match &mut load.mode {
        Mode::Closed { clients, .. } => {
            *clients = mine;
            None
        }
        Mode::Open { rate, workers, .. } => {
            let whole = *rate;
            // Each worker serves R/M of the schedule, so a share of m workers is m·R/M.
            *rate = whole * mine as f64 / all as f64;
            *workers = mine;
            Some(whole)
        }
    };
    load.shard = Some(Shard {
        index,
        count,
        first_client: first * p,
        clients: all * p,
        rate,
    });
    Ok(())
}

/// `--start-at`: RFC 3339, or `+DURATION` from `now`; rounded up to a wall-clock multiple
/// of `interval`, so that shards given `+10s` a moment apart mostly agree, and interval
/// boundaries fall on round times.
pub fn parse_start_at(
    text: &str,
    interval: Duration,
    now: SystemTime,
) -> Result<SystemTime, InputError> {
    let t = text.trim();
    let at = match t.strip_prefix('+') {
        Some(d) => now + duration::parse(d, "--start-at +")?,
        None => humantime::parse_rfc3339_weak(t).map_err(|e| {
            InputError::new(format!(
                "--start-at {text}: not an RFC 3339 time or +DURATION ({e})"
            ))
            .help("for example --start-at 2026-11-24T03:00:00Z or --start-at +30s")
        })?,
    };
    let since = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_err(|_| InputError::new(format!("--start-at {text}: before 1970")))?;
    let step = interval.as_nanos().max(1);
    let rounded = since.as_nanos().div_ceil(step) * step;
    let rounded = Duration::new(
        (rounded / 1_000_000_000) as u64,
        (rounded % 1_000_000_000) as u32,
    );
    if rounded
        > now
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            + DAY
    {
        return Err(InputError::new(format!(
            "--start-at {text}: more than a day ahead"
        ))
        .help("a shard waits for the start with its connections open; give a time within the next hours"));
    }
    Ok(SystemTime::UNIX_EPOCH + rounded)
}

const DAY: Duration = Duration::from_secs(86_400);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_even_and_cover_the_run() {
        let mut next = 0;
        for i in 0..4 {
            let (first, n) = share(10, 4, i);
            assert_eq!(first, next);
            assert!(n == 2 || n == 3);
            next += n;
        }
        assert_eq!(next, 10);
        assert_eq!(parse_shard("3/8").unwrap(), (3, 8));
        assert!(parse_shard("8/8").unwrap_err().message.contains("0 to 7"));
        assert!(parse_shard("x").unwrap_err().message.contains("I/N"));
    }

    #[test]
    fn start_at_rounds_up_to_the_interval() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_millis(1_000_000_300);
        let at = parse_start_at("+2s", Duration::from_secs(1), now).unwrap();
        assert_eq!(at, SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_003));
        let at = parse_start_at("1970-01-12T13:46:42Z", Duration::from_secs(1), now).unwrap();
        assert_eq!(at, SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_002));
        assert!(parse_start_at("soon", Duration::from_secs(1), now).is_err());
    }
}
