//! rcuscale's CPU time of the other threads covers the timed window, not the
//! threads' set-up. Its own test binary: the figure is the process's CPU
//! time less the writers' and readers', so other tests running in the same
//! process would count as "other threads" too.
#![cfg(not(any(miri, loom)))]

use bench_suite::cpu_time;
use bench_suite::progress::Progress;
use bench_suite::rcuscale::{self, Config, GracePeriod, IdleGate, Options};
use bench_suite::registry::{Implementation, Origin};
use bench_suite::start_gate::StartGate;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

/// Spins until the calling thread has used `cpu` of CPU time.
fn use_cpu(cpu: Duration) {
    let start = cpu_time::this_thread().expect("Linux has thread clocks");
    while cpu_time::this_thread().unwrap() - start < cpu {
        std::hint::spin_loop();
    }
}

/// An implementation with a helper thread, as hazptr's scanner or
/// rcu-lite's grace-period worker: it costs 40 ms of CPU to start (in the
/// writer's set-up, before the start gate), and 20 ms in the timed window,
/// which the writer's first wait asks of it and waits for. Each idle thread
/// costs 40 ms of CPU to set up. The waits and the reader sleep.
struct CostlyHelper {
    /// Requests to the helper: each carries where to say it is done.
    requests: Mutex<Option<mpsc::Sender<mpsc::Sender<()>>>>,
    helper: Mutex<Option<JoinHandle<()>>>,
    asked: AtomicBool,
}

impl GracePeriod for CostlyHelper {
    fn prepare_writer(&self) {
        let (requests, incoming) = mpsc::channel::<mpsc::Sender<()>>();
        let (started, start_told) = mpsc::channel();
        let helper = std::thread::spawn(move || {
            use_cpu(Duration::from_millis(40));
            started.send(()).unwrap();
            for done in incoming {
                use_cpu(Duration::from_millis(20));
                done.send(()).unwrap();
            }
        });
        start_told.recv().unwrap();
        *self.requests.lock().unwrap() = Some(requests);
        *self.helper.lock().unwrap() = Some(helper);
    }
    fn update_and_wait(&self, _writer: usize) {
        if !self.asked.swap(true, Relaxed) {
            let (done, done_told) = mpsc::channel();
            let requests = self.requests.lock().unwrap();
            requests.as_ref().unwrap().send(done).unwrap();
            drop(requests);
            done_told.recv().unwrap();
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    fn read_until(&self, ready: &StartGate, stop: &AtomicBool) -> u64 {
        if !ready.wait() {
            return 0;
        }
        while !stop.load(Relaxed) {
            std::thread::sleep(Duration::from_millis(1));
        }
        1
    }
    fn idle_until(&self, ready: &IdleGate, stop: &AtomicBool) {
        use_cpu(Duration::from_millis(40));
        rcuscale::idle_wait(ready, stop);
    }
}

impl Drop for CostlyHelper {
    fn drop(&mut self) {
        // The helper's loop ends with its channel.
        drop(self.requests.lock().unwrap().take());
        if let Some(helper) = self.helper.lock().unwrap().take() {
            helper.join().unwrap();
        }
    }
}

/// What the helper used in the window (20 ms), not what it and the idle
/// threads used to start (3 x 40 ms, which rcuscale counted as well until
/// 2026-12-05: 140 ms here).
#[test]
fn other_threads_cpu_time_is_the_windows_not_their_set_up() {
    const COSTLY: Implementation<dyn GracePeriod, Options> = Implementation {
        name: "costly-helper",
        summary: "",
        origin: Origin::Workspace,
        make: |_| {
            Ok(Box::new(CostlyHelper {
                requests: Mutex::new(None),
                helper: Mutex::new(None),
                asked: AtomicBool::new(false),
            }))
        },
    };
    let config = Config {
        writers: 1,
        readers: 1,
        idle_threads: 2,
        duration: Duration::from_millis(50),
        waits_per_writer: None,
    };
    let out = rcuscale::measure(&COSTLY, config, &mut Progress::new(1, "test")).unwrap();
    let cpu = out.cpu.unwrap_or_else(|| panic!("no CPU time: {out:?}"));
    let others_ms = cpu.others_us * out.gps as f64 / 1e3;
    // The run's own thread and the sleeping threads' wake-ups add a little
    // to the helper's 20 ms.
    assert!((19.0..35.0).contains(&others_ms), "{others_ms} ms: {out:?}");
    // The writer slept through its waits.
    assert!(cpu.writers_us * (out.gps as f64) < 10_000.0, "{out:?}");
}
