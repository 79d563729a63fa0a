//! The server's processes on this machine, from /proc: the process that holds the listening
//! socket of the target's port and its whole tree (children such as PostgreSQL's backends,
//! and every thread), read at each interval boundary.
//!
//! How processes that start or end inside an interval count: CPU time and bytes read and
//! written are exact, because a parent that reaps a child adds the child's totals to its
//! own (`cutime`/`cstime` in /proc/PID/stat, the I/O counters of /proc/PID/io), so the sum
//! over the tree at each boundary grows by exactly what the tree did. Run-queue waits and
//! context switches are per thread with no such inheritance: a thread that ended since the
//! last boundary loses what it did after that boundary, and one that lived only between two
//! boundaries is not seen at all (`ended` counts the processes that left).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::net::{ToSocketAddrs, UdpSocket};
use std::os::unix::fs::MetadataExt;

use super::listen;
use super::record::ProcessFigures;

/// Whether `host` is this machine: a loopback address or one of its own (an address this
/// machine can bind to).
pub fn is_local(host: &str, port: u16) -> bool {
    let Ok(addrs) = (host, port).to_socket_addrs() else {
        return false;
    };
    addrs
        .into_iter()
        .any(|a| a.ip().is_loopback() || UdpSocket::bind((a.ip(), 0)).is_ok())
}

/// Why the server's processes cannot be read, and what would let them be.
#[derive(Debug, Clone, PartialEq)]
pub struct NotFound {
    pub why: String,
    pub enable: String,
}

/// Programs that hold a port only to forward it: their processes are not the server's.
const FORWARDERS: &[&str] = &[
    "docker-proxy",
    "rootlessport",
    "rootlesskit",
    "slirp4netns",
    "kubectl",
    "ssh",
    "sshd",
    "socat",
];

/// Every process id under /proc.
fn pids() -> Vec<u32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// Whether `pid` holds one of the sockets `wanted` (`socket:[INODE]`); None when its
/// descriptors are not readable.
fn holds(pid: u32, wanted: &HashSet<String>) -> Option<bool> {
    let fds = fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(fds.filter_map(Result::ok).any(|fd| {
        fs::read_link(fd.path())
            .ok()
            .and_then(|l| l.to_str().map(|s| wanted.contains(s)))
            .unwrap_or(false)
    }))
}

/// The process that holds the socket listening on `port`: of the processes holding it
/// (nginx's master and workers all do), the one whose parent does not. `hint` is a process
/// the server named itself (PostgreSQL's backend of the observer's connection, MariaDB's
/// pid file): it and its ancestors are looked at first, which spares reading every other
/// process's descriptors.
pub fn find_server(port: u16, hint: Option<u32>) -> Result<u32, NotFound> {
    let listeners = listen::listeners(port);
    if listeners.is_empty() {
        return Err(NotFound {
            why: format!(
                "no socket listens on port {port} in this machine's network namespace (the server runs in a container, a VM or elsewhere)"
            ),
            enable: "running loadrig in the server's network and process namespaces".into(),
        });
    }
    let wanted: HashSet<String> = listeners
        .iter()
        .map(|l| format!("socket:[{}]", l.inode))
        .collect();
    let hinted = hint.and_then(|pid| ancestry(pid).find(|&p| holds(p, &wanted) == Some(true)));
    let mut denied = 0;
    let holder = hinted.or_else(|| {
        // Reading every descriptor of every process is the costly part: the processes of
        // the sockets' owners go first, lowest pid first (a server's root usually is), and
        // the search ends at the first that holds one.
        let uids: HashSet<u32> = listeners.iter().map(|l| l.uid).collect();
        let mut all = pids();
        all.sort_unstable();
        let (owners, others): (Vec<u32>, Vec<u32>) = all.into_iter().partition(|&p| {
            fs::metadata(format!("/proc/{p}")).is_ok_and(|m| uids.contains(&m.uid()))
        });
        owners.into_iter().chain(others).find(|&pid| {
            holds(pid, &wanted).unwrap_or_else(|| {
                denied += 1;
                false
            })
        })
    });
    // Up to the holder's ancestor that holds it too (nginx's master above its workers).
    let root = holder.map(|mut pid| {
        while let Some(parent) = stat(pid).map(|s| s.ppid).filter(|&p| p > 0) {
            if holds(parent, &wanted) != Some(true) {
                break;
            }
            pid = parent;
        }
        pid
    });
    if let Some(pid) = root {
        let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let comm = comm.trim();
        if FORWARDERS.contains(&comm) {
            return Err(NotFound {
                why: format!(
                    "port {port} is held by {comm} (pid {pid}), which forwards it to a server elsewhere (a container, a VM, a tunnel)"
                ),
                enable: "running loadrig where the server's own processes are".into(),
            });
        }
    }
    root.ok_or_else(|| NotFound {
        why: format!(
            "the process listening on port {port} is not readable ({denied} processes' file descriptors were not): it belongs to another user"
        ),
        enable: "running loadrig as the server's user or as root".into(),
    })
}

/// `pid`, its parent, its parent's parent, ... up to (not including) init.
fn ancestry(pid: u32) -> impl Iterator<Item = u32> {
    std::iter::successors(Some(pid), |&p| stat(p).map(|s| s.ppid))
        .take_while(|&p| p > 1)
        .take(8)
}

/// The fields of /proc/PID/stat the observer uses.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Stat {
    ppid: u32,
    /// utime + cutime, stime + cstime: clock ticks of the process and its reaped children.
    user: u64,
    system: u64,
    /// Ticks after boot at which it started, which tells a reused pid apart.
    start: u64,
}

fn stat(pid: u32) -> Option<Stat> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// /proc/PID/stat: `pid (comm) state ppid ...`; the name may hold spaces and parentheses,
/// so the fields are counted from the last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let n = |i: usize| f.get(i)?.parse::<u64>().ok();
    Some(Stat {
        ppid: n(1)? as u32,
        user: n(11)? + n(13)?,
        system: n(12)? + n(14)?,
        start: n(19)?,
    })
}

/// /proc/PID/io: bytes read from and written to storage.
fn io(pid: u32) -> Option<(u64, u64)> {
    let text = fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse::<u64>().ok())
    };
    Some((field("read_bytes:")?, field("write_bytes:")?))
}

/// One thread's run-queue wait (ns), context switches and, when the kernel's delay
/// accounting is on, the clock ticks it waited for block I/O.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Task {
    run_queue_ns: u64,
    voluntary: u64,
    involuntary: u64,
    io_wait_ticks: u64,
}

/// Whether the kernel accounts tasks' block I/O delays (`kernel.task_delayacct`, off by
/// default since Linux 5.14): without it every thread's I/O wait reads 0.
fn delay_accounting() -> bool {
    fs::read_to_string("/proc/sys/kernel/task_delayacct").is_ok_and(|s| s.trim() == "1")
}

/// /proc/PID/task/TID/stat's `delayacct_blkio_ticks` (field 42), counted from the last `)`.
fn io_wait_ticks(text: &str) -> Option<u64> {
    let rest = &text[text.rfind(')')? + 1..];
    rest.split_whitespace().nth(39)?.parse().ok()
}

fn task(pid: u32, tid: u32, delays: bool) -> Option<Task> {
    let dir = format!("/proc/{pid}/task/{tid}");
    let sched = fs::read_to_string(format!("{dir}/schedstat")).ok()?;
    let status = fs::read_to_string(format!("{dir}/status")).ok()?;
    let switches = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    Some(Task {
        run_queue_ns: sched.split_whitespace().nth(1)?.parse().ok()?,
        voluntary: switches("voluntary_ctxt_switches:"),
        involuntary: switches("nonvoluntary_ctxt_switches:"),
        io_wait_ticks: if delays {
            fs::read_to_string(format!("{dir}/stat"))
                .ok()
                .and_then(|t| io_wait_ticks(&t))
                .unwrap_or(0)
        } else {
            0
        },
    })
}

fn tids(pid: u32) -> Vec<u32> {
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// The tree under `root`, root first, each process with its threads: through each thread's
/// `children` file, or where the kernel has none, from every process's parent.
fn tree(root: u32) -> Vec<(u32, Vec<u32>)> {
    let has_children_files = fs::metadata(format!("/proc/{root}/task/{root}/children")).is_ok();
    let mut by_parent: HashMap<u32, Vec<u32>> = HashMap::new();
    if !has_children_files {
        for pid in pids() {
            if let Some(s) = stat(pid) {
                by_parent.entry(s.ppid).or_default().push(pid);
            }
        }
    }
    let mut out: Vec<(u32, Vec<u32>)> = vec![(root, tids(root))];
    let mut i = 0;
    while i < out.len() {
        let pid = out[i].0;
        i += 1;
        let mut children = Vec::new();
        if has_children_files {
            for tid in &out[i - 1].1 {
                if let Ok(text) = fs::read_to_string(format!("/proc/{pid}/task/{tid}/children")) {
                    children.extend(
                        text.split_whitespace()
                            .filter_map(|c| c.parse::<u32>().ok()),
                    );
                }
            }
        } else if let Some(c) = by_parent.get(&pid) {
            children.extend(c);
        }
        out.extend(children.into_iter().map(|c| (c, tids(c))));
    }
    out
}

/// One process's figures: its stat, and its bytes read and written when readable.
#[derive(Debug, Clone, Copy)]
struct Proc {
    stat: Stat,
    io: Option<(u64, u64)>,
}

/// The tree's figures at one instant.
#[derive(Debug, Clone, Default)]
struct TreeReading {
    /// By (pid, start).
    procs: HashMap<(u32, u64), Proc>,
    tasks: HashMap<u32, Task>,
}

fn read_tree(root: u32, delays: bool) -> TreeReading {
    let mut r = TreeReading::default();
    for (pid, tids) in tree(root) {
        let Some(s) = stat(pid) else { continue };
        r.procs.insert(
            (pid, s.start),
            Proc {
                stat: s,
                io: io(pid),
            },
        );
        for tid in tids {
            if let Some(t) = task(pid, tid, delays) {
                r.tasks.insert(tid, t);
            }
        }
    }
    r
}

/// A counter's growth; a smaller value is a new thread under a reused id.
fn grew(now: u64, before: Option<u64>) -> u64 {
    match before {
        Some(b) if now >= b => now - b,
        _ => now,
    }
}

fn figures(
    root: u32,
    tick: f64,
    delays: bool,
    before: &TreeReading,
    now: &TreeReading,
) -> ProcessFigures {
    let sum =
        |r: &TreeReading, f: fn(&Stat) -> u64| r.procs.values().map(|p| f(&p.stat)).sum::<u64>();
    let ticks = |f: fn(&Stat) -> u64| sum(now, f).saturating_sub(sum(before, f)) as f64 / tick;
    let io_sum = |r: &TreeReading| {
        r.procs
            .values()
            .map(|p| p.io)
            .try_fold((0u64, 0u64), |acc, io| {
                io.map(|(rd, wr)| (acc.0 + rd, acc.1 + wr))
            })
    };
    let io = io_sum(now).zip(io_sum(before));
    let mut f = ProcessFigures {
        pid: root,
        processes: now.procs.len() as u64,
        threads: now.tasks.len() as u64,
        started: now
            .procs
            .keys()
            .filter(|k| !before.procs.contains_key(k))
            .count() as u64,
        ended: before
            .procs
            .keys()
            .filter(|k| !now.procs.contains_key(k))
            .count() as u64,
        user_s: ticks(|s| s.user),
        system_s: ticks(|s| s.system),
        read_bytes: io.map(|(n, b)| n.0.saturating_sub(b.0)),
        write_bytes: io.map(|(n, b)| n.1.saturating_sub(b.1)),
        ..ProcessFigures::default()
    };
    let mut run_queue_ns = 0;
    let mut io_wait_ticks = 0;
    for (tid, t) in &now.tasks {
        let b = before.tasks.get(tid);
        run_queue_ns += grew(t.run_queue_ns, b.map(|b| b.run_queue_ns));
        io_wait_ticks += grew(t.io_wait_ticks, b.map(|b| b.io_wait_ticks));
        f.voluntary_switches += grew(t.voluntary, b.map(|b| b.voluntary));
        f.involuntary_switches += grew(t.involuntary, b.map(|b| b.involuntary));
    }
    f.run_queue_s = run_queue_ns as f64 / 1e9;
    f.io_wait_s = delays.then(|| io_wait_ticks as f64 / tick);
    f
}

/// The server's process tree, sampled at each boundary.
pub struct ServerProcesses {
    root: u32,
    tick: f64,
    /// Whether the kernel's delay accounting was on when the first reading was taken.
    delays: bool,
    before: Option<TreeReading>,
}

impl ServerProcesses {
    pub fn new(root: u32) -> ServerProcesses {
        // SAFETY: sysconf only reads a system constant.
        let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        ServerProcesses {
            root,
            tick: if tick > 0 { tick as f64 } else { 100.0 },
            delays: delay_accounting(),
            before: None,
        }
    }

    /// Read the tree; the figures since the last read (none at the first). `Err` when the
    /// server's process is gone.
    pub fn sample(&mut self) -> Result<Option<ProcessFigures>, String> {
        let now = read_tree(self.root, self.delays);
        if !now.procs.keys().any(|&(pid, _)| pid == self.root) {
            return Err(format!("the server's process {} has ended", self.root));
        }
        let out = self
            .before
            .as_ref()
            .map(|b| figures(self.root, self.tick, self.delays, b, &now));
        self.before = Some(now);
        Ok(out)
    }

    /// Whether /proc/PID/io of the root could be read (it needs the server's user or root).
    pub fn io_readable(&self) -> bool {
        io(self.root).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_after_a_name_with_parentheses() {
        let line = "42 (a (b) c) S 7 42 42 0 -1 4194560 100 0 0 0 11 22 33 44 20 0 3 0 555 1000 10";
        let s = parse_stat(line).unwrap();
        assert_eq!(s.ppid, 7);
        assert_eq!(s.user, 11 + 33);
        assert_eq!(s.system, 22 + 44);
        assert_eq!(s.start, 555);
        let fields: Vec<String> = (4..=52).map(|n| n.to_string()).collect();
        let line = format!("9 (x) y) S {}", fields.join(" "));
        assert_eq!(io_wait_ticks(&line), Some(42));
    }

    #[test]
    fn this_process_is_found_by_its_listening_socket() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert_eq!(find_server(port, None), Ok(std::process::id()));
        // A hint that is not the holder (init's child or not) still finds it.
        assert_eq!(find_server(port, Some(1)), Ok(std::process::id()));
        assert_eq!(
            find_server(port, Some(std::process::id())),
            Ok(std::process::id())
        );
        let mut p = ServerProcesses::new(std::process::id());
        assert_eq!(p.sample(), Ok(None));
        let spin = std::time::Instant::now();
        while spin.elapsed() < std::time::Duration::from_millis(30) {
            std::hint::black_box(0u64);
        }
        let f = p.sample().unwrap().unwrap();
        assert!(f.threads >= 1 && f.processes >= 1);
        assert!(is_local("127.0.0.1", port));
        assert!(
            !is_local("192.0.2.1", port),
            "TEST-NET-1 is not this machine"
        );
    }
}
