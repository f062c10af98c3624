//! Repeated log lines, limited: a client can make the server refuse a thousand commands a
//! second, and each refusal logs a warning; written out, they would flood the log (and a log
//! piped to a reader that does not keep up blocks the server in write(2)). [`RateLimit`], a
//! layer of the `bnxt-model` binary's subscriber, lets [`PER_SECOND`] events of each call site
//! at INFO, WARN and ERROR through per second and counts the rest; [`report_suppressed`],
//! called by the serve loops between inputs, logs each site's count once a second as a warning
//! naming the call site ([`report_all_suppressed`] at exit), so nothing is lost without a trace. DEBUG and TRACE are asked for
//! explicitly and are never limited.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tracing::callsite::Identifier;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// Events of one call site let through per second.
pub const PER_SECOND: u32 = 10;

const WINDOW: Duration = Duration::from_secs(1);

/// One call site's window.
struct Site {
    window_start: Instant,
    passed: u32,
    suppressed: u64,
    name: &'static str,
    file: Option<&'static str>,
    line: Option<u32>,
}

static SITES: Mutex<Option<HashMap<Identifier, Site>>> = Mutex::new(None);
/// Whether some site has suppressed events not yet reported (so that the loops' call costs an
/// atomic load while nothing is suppressed).
static PENDING: AtomicBool = AtomicBool::new(false);

/// The layer that limits events (see the module documentation).
#[derive(Debug, Default, Clone, Copy)]
pub struct RateLimit;

impl<S: Subscriber> Layer<S> for RateLimit {
    fn event_enabled(&self, event: &Event<'_>, _cx: Context<'_, S>) -> bool {
        let meta = event.metadata();
        if *meta.level() > Level::INFO || meta.target() == module_path!() {
            return true;
        }
        let now = Instant::now();
        let mut sites = SITES.lock().unwrap_or_else(|p| p.into_inner());
        let site = sites.get_or_insert_with(HashMap::new).entry(meta.callsite()).or_insert_with(|| Site {
            window_start: now,
            passed: 0,
            suppressed: 0,
            name: meta.name(),
            file: meta.file(),
            line: meta.line(),
        });
        if now.duration_since(site.window_start) >= WINDOW {
            site.window_start = now;
            site.passed = 0;
        }
        if site.passed < PER_SECOND {
            site.passed += 1;
            true
        } else {
            site.suppressed += 1;
            PENDING.store(true, Ordering::Relaxed);
            false
        }
    }
}

/// Log, for each call site whose window of a second has ended, how many of its events were
/// suppressed in it (so a flood costs one line a second per site, besides the lines let
/// through).
pub fn report_suppressed() {
    report(false);
}

/// Log every count not yet reported, windows ended or not (when the server stops).
pub fn report_all_suppressed() {
    report(true);
}

fn report(all: bool) {
    if !PENDING.load(Ordering::Relaxed) {
        return;
    }
    let now = Instant::now();
    let counts: Vec<(u64, &'static str, String)> = {
        let mut sites = SITES.lock().unwrap_or_else(|p| p.into_inner());
        let sites = sites.get_or_insert_with(HashMap::new);
        let due: Vec<(u64, &'static str, String)> = sites
            .values_mut()
            .filter(|s| s.suppressed > 0 && (all || now.duration_since(s.window_start) >= WINDOW))
            .map(|s| {
                let place = match (s.file, s.line) {
                    (Some(f), Some(l)) => format!("{f}:{l}"),
                    _ => String::from("?"),
                };
                (std::mem::take(&mut s.suppressed), s.name, place)
            })
            .collect();
        PENDING.store(sites.values().any(|s| s.suppressed > 0), Ordering::Relaxed);
        due
    };
    for (n, name, place) in counts {
        tracing::warn!("suppressed {n} more log lines like the last of {name} ({place}): over {PER_SECOND} a second");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use tracing_subscriber::layer::SubscriberExt;

    /// Counts the events that reach it, and the suppression reports.
    #[derive(Default, Clone)]
    struct Count(Arc<Mutex<(u64, u64)>>);

    impl<S: Subscriber> Layer<S> for Count {
        fn on_event(&self, event: &Event<'_>, _cx: Context<'_, S>) {
            let mut c = self.0.lock().unwrap();
            if event.metadata().target() == module_path!().trim_end_matches("::tests") {
                struct Msg(u64);
                impl tracing::field::Visit for Msg {
                    fn record_debug(&mut self, _f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                        let text = format!("{v:?}");
                        self.0 = text.split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or(0);
                    }
                }
                let mut m = Msg(0);
                event.record(&mut m);
                c.1 += m.0;
            } else {
                c.0 += 1;
            }
        }
    }

    #[test]
    fn a_flood_from_one_site_is_cut_to_the_limit_and_counted_and_debug_is_never_cut() {
        let count = Count::default();
        let subscriber = tracing_subscriber::registry().with(RateLimit).with(count.clone());
        tracing::subscriber::with_default(subscriber, || {
            for i in 0..1000 {
                tracing::warn!(i, "refused");
            }
            for i in 0..100 {
                tracing::debug!(i, "every one");
            }
            report_suppressed();
            report_all_suppressed();
            report_all_suppressed();
        });
        let (passed, suppressed) = *count.0.lock().unwrap();
        // The flood takes well under a second here; were it to cross a window, more pass, and
        // the sum still holds.
        assert!((PER_SECOND as u64 + 100..1000).contains(&passed), "{passed}");
        assert_eq!(passed - 100 + suppressed, 1000, "every warning passed or was counted");
    }
}
