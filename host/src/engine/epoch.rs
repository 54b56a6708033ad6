//! The clock that bounds every evaluation. wasmtime interrupts a store when the engine's epoch
//! passes the store's deadline; a background thread advances the epoch once per tick of
//! wall-clock time. Under load that thread runs late and then catches up in a burst, so the
//! epoch lags wall-clock time by however many ticks it owes. A deadline is relative to the
//! epoch at the moment it is set: set it during a lag and the burst eats into the budget (seen:
//! a 200 ms budget interrupted after 197 ms on a machine at load 10). So a deadline adds the
//! ticks the thread owes, and counts the budget in whole ticks rounded up, plus one for the
//! tick in progress: an evaluation is never interrupted before its budget has passed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use wasmtime::Engine;

/// The epoch ticker of one engine.
pub struct EpochClock {
    start: Instant,
    tick: Duration,
    /// Epoch increments made so far (incremented after the engine's epoch).
    done: AtomicU64,
    stop: AtomicBool,
}

impl EpochClock {
    /// Starts advancing `engine`'s epoch once per `tick`.
    pub fn start(engine: Engine, tick: Duration) -> Arc<EpochClock> {
        let clock = Arc::new(EpochClock {
            start: Instant::now(),
            tick: tick.max(Duration::from_nanos(1)),
            done: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let ticking = clock.clone();
        thread::Builder::new()
            .name("wasm-epoch".into())
            .spawn(move || ticking.run(&engine))
            .expect("spawning the epoch ticker thread");
        clock
    }

    /// Stops the ticker thread (at its next tick).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// The epoch deadline to give a store so that it is interrupted no earlier than `budget`
    /// from now.
    pub fn deadline_ticks(&self, budget: Duration) -> u64 {
        let owed = self.due().saturating_sub(self.done.load(Ordering::Acquire));
        ticks_covering(budget, self.tick) + 1 + owed
    }

    /// Ticks that should have happened by now.
    fn due(&self) -> u64 {
        let due = self.start.elapsed().as_nanos() / self.tick.as_nanos();
        u64::try_from(due).unwrap_or(u64::MAX)
    }

    fn run(&self, engine: &Engine) {
        while !self.stop.load(Ordering::Relaxed) {
            thread::sleep(self.tick);
            let due = self.due();
            while self.done.load(Ordering::Relaxed) < due {
                engine.increment_epoch();
                self.done.fetch_add(1, Ordering::Release);
            }
        }
    }
}

/// Whole ticks of `tick` that cover `budget` (rounded up).
fn ticks_covering(budget: Duration, tick: Duration) -> u64 {
    let ticks = budget.as_nanos().div_ceil(tick.as_nanos().max(1));
    u64::try_from(ticks).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_covered_by_whole_ticks_rounded_up() {
        let tick = Duration::from_millis(5);
        assert_eq!(ticks_covering(Duration::from_millis(200), tick), 40);
        assert_eq!(ticks_covering(Duration::from_millis(201), tick), 41);
        assert_eq!(ticks_covering(Duration::ZERO, tick), 0);
    }

    #[test]
    fn a_deadline_adds_the_ticks_the_ticker_owes() {
        let clock = EpochClock {
            start: Instant::now() - Duration::from_millis(50),
            tick: Duration::from_millis(5),
            done: AtomicU64::new(4),
            stop: AtomicBool::new(true),
        };
        // 10 ticks due, 4 done: 6 owed, on top of 40 for the budget and 1 in progress.
        let ticks = clock.deadline_ticks(Duration::from_millis(200));
        assert!((47..=48).contains(&ticks), "{ticks}");
    }
}
