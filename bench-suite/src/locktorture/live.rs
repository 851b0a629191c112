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
//! The queue holds at most [`QUEUED_LINES`] lines: a reader that stays away
//! for a long run would otherwise have them pile up in memory (about 26 KB a
//! second at the shortest interval). Lines past that are dropped and
//! counted, and [`LiveLines::finish`] says how many. A write error ends the
//! writing, not the run: later lines are dropped and `finish` returns the
//! error once every lock has run.

use std::cell::Cell;
use std::io::{self, Write};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::thread::JoinHandle;

/// Lines queued for a reader that is behind: minutes of lines at a person's
/// pace, under a megabyte.
pub const QUEUED_LINES: usize = 8192;

/// What the writer thread hands back: its output, and the first write error.
type Finished = (Box<dyn Write + Send>, io::Result<()>);

/// The queue to the writer thread, and the thread.
#[derive(Debug)]
pub struct LiveLines {
    lines: SyncSender<String>,
    writer: JoinHandle<Finished>,
    /// Lines dropped because the queue was full.
    dropped: Cell<u64>,
}

impl LiveLines {
    /// Starts the writer thread on `out`, with room for `capacity` queued
    /// lines.
    pub fn start(out: Box<dyn Write + Send>, capacity: usize) -> io::Result<LiveLines> {
        let (lines, queued) = mpsc::sync_channel::<String>(capacity);
        let writer = std::thread::Builder::new()
            .name("locktorture stats".into())
            .spawn(move || {
                let mut out = out;
                let mut first_error = Ok(());
                for line in queued {
                    if first_error.is_ok() {
                        first_error = writeln!(out, "{line}").and_then(|()| out.flush());
                    }
                }
                (out, first_error)
            })?;
        Ok(LiveLines {
            lines,
            writer,
            dropped: Cell::new(0),
        })
    }

    /// Queues `line` for the writer, or drops it if the queue is full; never
    /// blocks.
    pub fn send(&self, line: String) {
        match self.lines.try_send(line) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => self.dropped.set(self.dropped.get() + 1),
            // The writer only stops once `finish` drops the sender (or it
            // panicked, which `finish` reports).
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// Waits for every queued line to be written, then writes how many
    /// were dropped, if any; the first write error, if any.
    pub fn finish(self) -> io::Result<()> {
        drop(self.lines);
        let (mut out, written) = self
            .writer
            .join()
            .map_err(|_| io::Error::other("the statistics writer panicked"))?;
        written?;
        match self.dropped.get() {
            0 => Ok(()),
            n => writeln!(
                out,
                "locktorture: {n} statistics lines dropped: standard output was not read as \
                 fast as they came"
            )
            .and_then(|()| out.flush()),
        }
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

    impl Stalled {
        /// Lets every write through from now on.
        fn let_go(&self) {
            *self.let_go.0.lock().unwrap() = true;
            self.let_go.1.notify_all();
        }
    }

    /// Live lines with room for `capacity` queued, whose writer blocks until
    /// the returned handle lets it go (it shares the writer's state).
    fn behind_a_stalled_writer(capacity: usize) -> (LiveLines, Stalled) {
        let stalled = Stalled {
            let_go: Arc::new((Mutex::new(false), Condvar::new())),
            written: Arc::new(Mutex::new(Vec::new())),
        };
        let writer = Stalled {
            let_go: Arc::clone(&stalled.let_go),
            written: Arc::clone(&stalled.written),
        };
        (
            LiveLines::start(Box::new(writer), capacity).unwrap(),
            stalled,
        )
    }

    #[test]
    fn a_stalled_reader_does_not_block_the_sender_and_loses_no_line() {
        let (live, stalled) = behind_a_stalled_writer(2000);
        // Each send returns with the writer stuck on the first line (a
        // blocking send would hang here, the writer not yet let go).
        for i in 0..1000 {
            live.send(format!("line {i}"));
        }
        assert!(stalled.written.lock().unwrap().is_empty());
        stalled.let_go();
        live.finish().unwrap();
        let text = String::from_utf8(stalled.written.lock().unwrap().clone()).unwrap();
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
        let live = LiveLines::start(Box::new(Full), 8).unwrap();
        live.send("a".into());
        live.send("b".into());
        assert_eq!(
            live.finish().unwrap_err().kind(),
            io::ErrorKind::StorageFull
        );
    }

    /// Past its capacity the queue drops lines rather than grow, and the
    /// finish says how many.
    #[test]
    fn a_full_queue_drops_lines_and_says_how_many() {
        let (live, stalled) = behind_a_stalled_writer(10);
        for i in 0..100 {
            live.send(format!("line {i}"));
        }
        // The writer holds one line and the queue ten: the rest are dropped.
        let dropped = live.dropped.get();
        assert!((89..=90).contains(&dropped), "{dropped}");
        stalled.let_go();
        live.finish().unwrap();
        let text = String::from_utf8(stalled.written.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count() as u64, 100 - dropped + 1, "{text}");
        assert!(
            text.ends_with(&format!("locktorture: {dropped} statistics lines dropped: standard output was not read as fast as they came\n")),
            "{text}"
        );
    }
}
