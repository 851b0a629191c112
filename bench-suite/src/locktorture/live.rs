//! The live statistics lines of `locktorture --stat-interval-s`, written by
//! a thread of their own.
//!
//! Invariant: the thread that owns a run's deadline and its hang watch never
//! blocks on output. It hands each line to [`LiveLines::send`], which only
//! queues it; the writer thread blocks on the reader (a paused `less`, a full
//! pipe) instead. Before, the main thread wrote the lines itself, so a reader
//! that stopped reading held the run past `--duration-s` (a 0.5 s run took
//! 3 s behind a 4 KiB pipe nobody read) and left its hangs unwatched.
//!
//! The queue is unbounded but small: at most one batch of lines per
//! [`Config::MIN_STAT_INTERVAL`](super::Config::MIN_STAT_INTERVAL) of the
//! run, each under 100 bytes. A write error ends the writing, not the run:
//! later lines are dropped and [`LiveLines::finish`] returns the error once
//! every lock has run.

use std::io::{self, Write};
use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;

/// The queue to the writer thread, and the thread.
#[derive(Debug)]
pub struct LiveLines {
    lines: Sender<String>,
    writer: JoinHandle<io::Result<()>>,
}

impl LiveLines {
    /// Starts the writer thread on `out`.
    pub fn start(mut out: Box<dyn Write + Send>) -> io::Result<LiveLines> {
        let (lines, queued) = mpsc::channel::<String>();
        let writer = std::thread::Builder::new()
            .name("locktorture stats".into())
            .spawn(move || {
                let mut first_error = None;
                for line in queued {
                    if first_error.is_none()
                        && let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush())
                    {
                        first_error = Some(e);
                    }
                }
                first_error.map_or(Ok(()), Err)
            })?;
        Ok(LiveLines { lines, writer })
    }

    /// Queues `line` for the writer; never blocks.
    pub fn send(&self, line: String) {
        // The writer only stops once `finish` drops the sender: the send
        // cannot fail before then, and a line sent after would be dropped.
        let _ = self.lines.send(line);
    }

    /// Waits for every queued line to be written; the first write error, if
    /// any.
    pub fn finish(self) -> io::Result<()> {
        drop(self.lines);
        self.writer
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the statistics writer panicked")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Condvar, Mutex};

    /// A writer that blocks until it is let go, as a pipe nobody reads does.
    struct Stalled {
        let_go: Arc<(Mutex<bool>, Condvar)>,
        written: Arc<Mutex<Vec<u8>>>,
    }

    impl Write for Stalled {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let (lock, cvar) = &*self.let_go;
            let _gone = cvar
                .wait_while(lock.lock().unwrap(), |gone| !*gone)
                .unwrap();
            self.written.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_stalled_reader_does_not_block_the_sender_and_loses_no_line() {
        let let_go = Arc::new((Mutex::new(false), Condvar::new()));
        let written = Arc::new(Mutex::new(Vec::new()));
        let live = LiveLines::start(Box::new(Stalled {
            let_go: Arc::clone(&let_go),
            written: Arc::clone(&written),
        }))
        .unwrap();
        // Each send returns with the writer stuck on the first line (a
        // blocking send would hang here, the writer not yet let go).
        for i in 0..1000 {
            live.send(format!("line {i}"));
        }
        assert!(written.lock().unwrap().is_empty());
        *let_go.0.lock().unwrap() = true;
        let_go.1.notify_all();
        live.finish().unwrap();
        let text = String::from_utf8(written.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1000);
        assert_eq!(lines[999], "line 999");
    }

    struct Full;

    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::StorageFull))
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_write_error_is_returned_at_the_finish() {
        let live = LiveLines::start(Box::new(Full)).unwrap();
        live.send("a".into());
        live.send("b".into());
        assert_eq!(
            live.finish().unwrap_err().kind(),
            io::ErrorKind::StorageFull
        );
    }
}
