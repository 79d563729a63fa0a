//! The CPU time slice the client threads ask the kernel for.
//!
//! Linux's EEVDF scheduler (6.6+) lets a task that wakes run before the one on its CPU
//! only if the woken task's deadline, its virtual runtime plus its slice, comes first.
//! With the default slice (0.7 ms × (1 + log2 CPUs), 1.4 ms on 2 CPUs) a client woken by
//! a reply often waits until the server process on its CPU has used its own slice, and that
//! wait lands in every latency the rig measures (pgbench's tpcb-like at 4 clients on 2
//! cores: 4-15 % of the rate; docs/performance.md). Since 6.12 a thread may ask for a shorter slice
//! (`sched_setattr`'s `sched_runtime` for SCHED_OTHER, 0.1-100 ms), which moves its deadline
//! earlier without giving it a larger share of the CPU. Kernels before 6.12 ignore the
//! field, so a request is read back ([`takes`]) before a run records it.

use std::time::Duration;

/// The slice client threads ask for unless `--client-slice` says otherwise. 100-500 µs
/// did equally well against pgbench (docs/performance.md) and 1 ms hardly better than the
/// default; 300 µs rather than the shortest, so a client thread that is busy (an in-process
/// target) is not switched out every 100 µs when it shares its CPU.
pub const DEFAULT: Duration = Duration::from_micros(300);
/// The slices the kernel accepts for SCHED_OTHER threads (it clamps others to these).
pub const SHORTEST: Duration = Duration::from_micros(100);
pub const LONGEST: Duration = Duration::from_millis(100);

/// `struct sched_attr` as of its first version (`SCHED_ATTR_SIZE_VER0`, 48 bytes).
#[cfg(target_os = "linux")]
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// The scheduling of thread `tid` (0: the calling thread).
#[cfg(target_os = "linux")]
fn attr_of(tid: i32) -> Option<SchedAttr> {
    let mut attr = SchedAttr::default();
    let size = std::mem::size_of::<SchedAttr>() as libc::c_uint;
    // SAFETY: the kernel writes at most `size` bytes into `attr`, a SchedAttr of that size.
    let got = unsafe { libc::syscall(libc::SYS_sched_getattr, tid, &mut attr, size, 0) };
    (got == 0).then_some(attr)
}

/// Ask the kernel to run this thread with `slice`, keeping its policy and nice value.
/// True when the kernel now reports that slice (Linux 6.12+); false elsewhere, for a
/// thread that is not SCHED_OTHER or SCHED_BATCH, or when the kernel refuses.
pub fn request(slice: Duration) -> bool {
    #[cfg(target_os = "linux")]
    {
        let Some(mut attr) = attr_of(0) else {
            return false;
        };
        if attr.policy != libc::SCHED_OTHER as u32 && attr.policy != libc::SCHED_BATCH as u32 {
            return false;
        }
        attr.size = std::mem::size_of::<SchedAttr>() as u32;
        attr.runtime = slice.as_nanos() as u64;
        // SAFETY: `attr` is a complete SchedAttr whose `size` says so; the call only changes
        // the calling thread's scheduling.
        let set = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr, 0) };
        set == 0 && slice_of(0) == Some(slice)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = slice;
        false
    }
}

/// The slice the kernel runs thread `tid` (a thread id; 0: the calling thread) with, when
/// it says: Linux 6.12+ reports it for SCHED_OTHER threads, earlier kernels report none.
pub fn slice_of(tid: i32) -> Option<Duration> {
    #[cfg(target_os = "linux")]
    {
        attr_of(tid)
            .filter(|a| a.runtime > 0)
            .map(|a| Duration::from_nanos(a.runtime))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = tid;
        None
    }
}

/// Whether client threads asking for `slice` get it here: asked on a scratch thread, so
/// the caller's own scheduling is untouched.
pub fn takes(slice: Duration) -> bool {
    std::thread::spawn(move || request(slice))
        .join()
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `uname -r`'s major and minor version.
    fn kernel() -> (u32, u32) {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        let mut parts = release.trim().split(['.', '-']);
        let mut next = || parts.next().and_then(|p| p.parse().ok()).unwrap();
        (next(), next())
    }

    #[test]
    fn a_thread_gets_the_slice_it_asks_for_on_kernels_with_custom_slices() {
        let custom = kernel() >= (6, 12);
        let slice = Duration::from_micros(250);
        let (granted, seen) = std::thread::spawn(move || (request(slice), slice_of(0)))
            .join()
            .unwrap();
        assert_eq!(granted, custom);
        if custom {
            assert_eq!(seen, Some(slice));
        }
        assert_eq!(takes(DEFAULT), custom);
    }

    #[test]
    fn asking_on_a_scratch_thread_leaves_the_callers_slice_alone() {
        let before = slice_of(0);
        takes(Duration::from_micros(300));
        assert_eq!(slice_of(0), before);
        assert_ne!(before, Some(Duration::from_micros(300)));
    }
}
