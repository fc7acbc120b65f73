//! Running an async request from a single-threaded caller (a PostgreSQL backend) so that it
//! can be interrupted: the request is polled on a current-thread runtime, and every tick the
//! caller's `interrupted` check runs on the caller's own thread. When it says yes, the request
//! future is dropped (closing its connection) and the caller raises the interrupt itself.

use std::future::Future;
use std::time::Duration;

/// The request was abandoned because the caller's interrupt check said so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

/// A current-thread runtime and an HTTP client with its connection pool, made once per
/// backend and reused by every call.
pub struct Runner {
    rt: tokio::runtime::Runtime,
    http: reqwest::Client,
}

/// How often the interrupt check runs while a request is in flight.
pub const TICK: Duration = Duration::from_millis(20);

impl Runner {
    pub fn new() -> std::io::Result<Runner> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            // DNS lookups run on helper threads: keep signals (query cancel, timeouts) for the
            // backend's main thread, where PostgreSQL's handlers expect them.
            .on_thread_start(block_signals_in_this_thread)
            .max_blocking_threads(2)
            .build()?;
        let http = {
            let _guard = rt.enter();
            reqwest::Client::builder().pool_idle_timeout(Duration::from_secs(60)).build().map_err(std::io::Error::other)?
        };
        Ok(Runner { rt, http })
    }

    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// Run `fut` to completion unless `interrupted()` turns true first (checked every
    /// [`TICK`]); then the future is dropped and `Err(Interrupted)` returned.
    pub fn block_on<F: Future>(&self, fut: F, interrupted: &dyn Fn() -> bool) -> Result<F::Output, Interrupted> {
        if interrupted() {
            return Err(Interrupted);
        }
        self.rt.block_on(async {
            tokio::pin!(fut);
            let mut tick = tokio::time::interval(TICK);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    biased;
                    out = &mut fut => return Ok(out),
                    _ = tick.tick() => {
                        if interrupted() {
                            return Err(Interrupted);
                        }
                    }
                }
            }
        })
    }
}

fn block_signals_in_this_thread() {
    // SAFETY: plain libc calls on a fresh, locally owned signal set; affects only this thread.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::time::Instant;

    #[test]
    fn completes_when_not_interrupted() {
        let r = Runner::new().unwrap();
        let out = r.block_on(async { 41 + 1 }, &|| false);
        assert_eq!(out, Ok(42));
    }

    #[test]
    fn interrupt_drops_the_future_within_ticks() {
        let r = Runner::new().unwrap();
        let start = Instant::now();
        let calls = Cell::new(0);
        let out = r.block_on(async { tokio::time::sleep(Duration::from_secs(30)).await }, &|| {
            calls.set(calls.get() + 1);
            start.elapsed() > Duration::from_millis(100)
        });
        assert_eq!(out, Err(Interrupted));
        assert!(start.elapsed() < Duration::from_secs(1), "took {:?}", start.elapsed());
        assert!(calls.get() >= 2);
    }

    #[test]
    fn already_interrupted_never_starts() {
        let r = Runner::new().unwrap();
        let started = Cell::new(false);
        let out = r.block_on(async { started.set(true) }, &|| true);
        assert_eq!(out, Err(Interrupted));
        assert!(!started.get());
    }
}
