//! CPU clocks for the dashboard's own cost: a thread's CPU time read from another thread
//! (`pthread_getcpuclockid`), the calling thread's, and the whole process's.

use std::time::Duration;

/// A thread's CPU clock, readable from any thread while that thread lives.
#[derive(Debug, Clone, Copy)]
pub struct ThreadClock(libc::clockid_t);

impl ThreadClock {
    /// The calling thread's clock.
    pub fn current() -> Option<ThreadClock> {
        let mut id: libc::clockid_t = 0;
        // SAFETY: pthread_self() is always valid for the calling thread; `id` is a valid out
        // pointer.
        let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
        (rc == 0).then_some(ThreadClock(id))
    }

    /// CPU time the thread has used so far (zero if it cannot be read).
    pub fn read(self) -> Duration {
        read_clock(self.0)
    }
}

/// CPU time the calling thread has used so far.
pub fn this_thread() -> Duration {
    read_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time the whole process has used so far (every thread, user and system).
pub fn process() -> Duration {
    read_clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn read_clock(id: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out pointer; an invalid clock id only makes the call fail.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        ts.tv_sec.max(0) as u64,
        ts.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_thread_reads_its_own_time_and_another_reads_it_too() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            tx.send(ThreadClock::current().expect("clock")).unwrap();
            // Busy until this thread's own clock says 20 ms, however the machine shares it.
            let mut x = 0u64;
            while this_thread() < Duration::from_millis(20) {
                x = x.wrapping_mul(31).wrapping_add(1);
            }
            std::hint::black_box(x);
            done_rx.recv().unwrap();
        });
        let clock = rx.recv().unwrap();
        while clock.read() < Duration::from_millis(20) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(process() >= clock.read());
        done_tx.send(()).unwrap();
        worker.join().unwrap();
    }
}
