//! What the benchmarks share: the command line, timing with repeated trials, and the memcpy
//! reference every figure is a ratio of.
//!
//! The machine these run on is shared, so a figure is the best of several short trials, and the
//! trials of every figure (memcpy included) are interleaved: each figure gets the same chances at
//! the quiet moments, and the ratios compare like with like.

use std::hint::black_box;
use std::time::Instant;

/// What the command line asked for: `-- [seconds] [trials] [words...]`.
pub struct Args {
    /// Seconds of measurement per figure, split over the trials.
    pub secs: f64,
    /// Trials per figure.
    pub trials: u32,
    words: Vec<String>,
}

impl Args {
    /// Read the arguments after `--` (cargo's `--bench` flag is ignored): the first number is
    /// the seconds per figure, a second one the trials, other words select figures.
    pub fn parse(default_secs: f64) -> Args {
        let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
        let numbers: Vec<f64> = args.iter().filter_map(|a| a.parse().ok()).collect();
        Args {
            secs: numbers.first().copied().unwrap_or(default_secs),
            trials: numbers.get(1).map_or(5, |t| (*t as u32).max(1)),
            words: args.into_iter().filter(|a| a.parse::<f64>().is_err()).collect(),
        }
    }

    /// Whether the figure called `name` was asked for (all are when no word is given).
    pub fn want(&self, name: &str) -> bool {
        self.words.is_empty() || self.words.iter().any(|w| w == name)
    }
}

/// Seconds of CPU time some threads or processes have had so far (a figure whose work is
/// spread over processes is also measured by the CPU time they all take, which other load on
/// the machine changes far less than the wall-clock rate).
pub type CpuClock = Box<dyn Fn() -> f64>;

/// A measured figure: a closure that moves `units` per call, and the best rate seen.
pub struct Figure<'a> {
    /// Printed before the figure.
    pub name: &'static str,
    units: f64,
    run: Box<dyn FnMut() + 'a>,
    /// Best rate over the trials so far (units per second).
    pub best: f64,
    cpu: Option<CpuClock>,
    /// With a CPU clock: best rate over the trials per second of CPU time (units per second).
    pub best_cpu: f64,
}

impl<'a> Figure<'a> {
    /// A figure whose closure moves `units` (bytes, messages) per call.
    pub fn new(name: &'static str, units: f64, run: impl FnMut() + 'a) -> Figure<'a> {
        Figure { name, units, run: Box::new(run), best: 0.0, cpu: None, best_cpu: 0.0 }
    }

    /// Measure the figure's rate per second of `clock`'s CPU time as well.
    #[allow(dead_code, reason = "only the benches whose work spans processes use it")]
    pub fn with_cpu(self, clock: CpuClock) -> Figure<'a> {
        Figure { cpu: Some(clock), ..self }
    }

    /// One trial of about `secs`, after three warm-up calls.
    fn trial(&mut self, secs: f64) {
        for _ in 0..3 {
            (self.run)();
        }
        let cpu = self.cpu.as_ref().map(|c| c());
        let start = Instant::now();
        let mut calls = 0u64;
        while start.elapsed().as_secs_f64() < secs {
            (self.run)();
            calls += 1;
        }
        let rate = calls as f64 * self.units / start.elapsed().as_secs_f64();
        self.best = self.best.max(rate);
        if let (Some(before), Some(clock)) = (cpu, self.cpu.as_ref()) {
            let spent = clock() - before;
            if spent > 0.0 {
                self.best_cpu = self.best_cpu.max(calls as f64 * self.units / spent);
            }
        }
    }
}

/// A 1 MiB memcpy on one core: the reference of every ratio.
pub fn memcpy_figure<'a>(src: &'a [u8], dst: &'a mut [u8]) -> Figure<'a> {
    let len = src.len();
    Figure::new("memcpy 1 MiB (single core)", len as f64, move || {
        dst.copy_from_slice(black_box(src));
        black_box(&mut *dst);
    })
}

/// Run `args.trials` rounds, each giving every figure one trial of its share of `args.secs`.
pub fn measure(args: &Args, figures: &mut [Figure<'_>]) {
    let per_trial = args.secs / f64::from(args.trials);
    for _ in 0..args.trials {
        for f in figures.iter_mut() {
            f.trial(per_trial);
        }
    }
}
