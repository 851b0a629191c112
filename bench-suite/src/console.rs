//! Where `syncbench` writes: its results to standard output, its notes and
//! failures to standard error, neither of which may end a run early.
//!
//! Invariants:
//! - A reader that closes standard output early (`syncbench list | head -1`)
//!   is not an error of the run: [`ResultsOut`] drops what follows, and the
//!   exit status stays the run's own (0, or 1 for a failed run), so that a
//!   `compare --fail-on-regression | head` gate still reports the gate and
//!   not the pipe. Any other write error (a full disk) is returned, as before.
//! - A message to standard error never panics ([`note`]): `eprintln!` does
//!   when standard error is closed or full, which turned a note printed
//!   before a measurement into status 101 with no message.
//! - [`ResultsOut`] takes standard output's lock for one write at a time, not
//!   for the whole command, so that another thread (locktorture's live
//!   statistics lines) can write to it while the main thread runs.

use std::fmt;
use std::io::{self, ErrorKind, Write};

/// Standard output, less the error of a reader that went away (see the
/// module docs).
#[derive(Debug, Default)]
pub struct ResultsOut {
    /// Set at the first write the closed pipe refused; later writes are
    /// dropped without trying.
    closed: bool,
}

impl ResultsOut {
    /// Standard output.
    pub fn new() -> ResultsOut {
        ResultsOut::default()
    }

    /// Whether its reader closed it: what was written since was dropped.
    pub fn closed(&self) -> bool {
        self.closed
    }

    /// `result`, with a broken pipe taken as the end of the output, and
    /// any other error saying that it is standard output's.
    fn unless_closed<T>(&mut self, result: io::Result<T>, dropped: T) -> io::Result<T> {
        match result {
            Err(e) if e.kind() == ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(dropped)
            }
            Err(e) => Err(io::Error::new(
                e.kind(),
                format!("cannot write to standard output: {e}"),
            )),
            ok => ok,
        }
    }
}

impl Write for ResultsOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        let result = io::stdout().write(buf);
        self.unless_closed(result, buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let result = io::stdout().write_all(buf);
        self.unless_closed(result, ())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let result = io::stdout().flush();
        self.unless_closed(result, ())
    }
}

/// Writes `message` and a newline to standard error, ignoring a standard
/// error that cannot take it (closed, or a full file): there is nowhere left
/// to say so, and the exit status still tells the run's outcome.
pub fn note(message: fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr().lock(), "{message}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_pipe_ends_the_output_quietly_and_other_errors_stay_errors() {
        let mut out = ResultsOut::new();
        let broken = io::Error::from(ErrorKind::BrokenPipe);
        assert_eq!(out.unless_closed(Err(broken), 7).unwrap(), 7);
        assert!(out.closed());
        // Dropped without trying once closed.
        assert_eq!(out.write(b"abc").unwrap(), 3);
        let mut open = ResultsOut::new();
        let full = io::Error::from(ErrorKind::StorageFull);
        let err = open.unless_closed::<usize>(Err(full), 0).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::StorageFull);
        assert!(
            err.to_string()
                .starts_with("cannot write to standard output: "),
            "{err}"
        );
        assert!(!open.closed());
    }
}
