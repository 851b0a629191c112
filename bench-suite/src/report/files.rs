//! Writes a report's files all or nothing: each to a temporary beside it,
//! then, once every one is written, renamed into place (see
//! [`write`](super::write) for what a failure leaves).
//!
//! Invariants: a temporary lives in its destination's own folder, so the
//! rename stays on one filesystem and is atomic; its name starts with a
//! dot and ends with this process's id, which no report file's does; a
//! destination that is a directory is refused before anything is renamed;
//! and a termination signal (Ctrl-C, `kill`, a closed terminal) that
//! arrives while the files are written and renamed takes effect once they
//! all are, or once a failure has removed the temporaries
//! ([`TerminationHeld`]), so that it cannot leave a mix of two reports.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, PoisonError};

/// Writes every file's contents (destination, bytes) to its temporary, then
/// renames them all, in order, onto their destinations. Every error names
/// the path it is about, and no temporary is left behind. A termination
/// signal meanwhile is held until the end (see the module docs).
pub(super) fn write_all(files: &[(PathBuf, Vec<u8>)]) -> std::io::Result<()> {
    write_all_observed(files, &mut |_| {})
}

/// [`write_all`], calling `renamed` with each report file once it is
/// renamed into place: the tests' window into the renames.
fn write_all_observed(
    files: &[(PathBuf, Vec<u8>)],
    renamed: &mut dyn FnMut(&Path),
) -> std::io::Result<()> {
    let _held = TerminationHeld::new();
    let staged = stage(files)?;
    rename_all(&staged, renamed)
}

/// The signals that ask a process to end and, left to their default
/// action, end it at once: a user's Ctrl-C, `kill` or a CI timeout, a
/// terminal that went away.
const TERMINATION_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The first termination signal that arrived while held, or 0. Written by
/// the handler, read once the last hold ends; Relaxed, both: the handler
/// runs on some thread of the process, and nothing else is published with
/// it.
static PENDING_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Notes a termination signal for [`TerminationHeld`] to deliver at its
/// end. Async-signal-safe: one atomic compare-exchange (a later signal
/// does not replace the first).
extern "C" fn note_termination(signal: libc::c_int) {
    let _ = PENDING_SIGNAL.compare_exchange(0, signal, Ordering::Relaxed, Ordering::Relaxed);
}

/// The holds alive in the process, and the actions the first of them
/// replaced: the first hold installs the handler, the last one puts the
/// actions back. So holds on several threads at once (the tests write
/// reports in parallel), or nested on one, neither take one another's
/// handler for the action to restore, which would leave it installed for
/// good, nor restore the default under a hold still alive.
static HOLDS: Mutex<Holds> = Mutex::new(Holds {
    alive: 0,
    installed: Vec::new(),
});

/// What [`HOLDS`] guards.
struct Holds {
    /// How many [`TerminationHeld`] are alive.
    alive: usize,
    /// The signals whose handler the first hold installed, with the action
    /// to put back.
    installed: Vec<(libc::c_int, libc::sigaction)>,
}

/// While any is alive, the termination signals whose disposition was the
/// default (ending the process) are noted instead; when the last one is
/// dropped, their default is restored and the first one that arrived is
/// raised again, ending the process as it would have (status 130 for
/// SIGINT, 143 for SIGTERM, in a shell). A signal that was ignored
/// (`nohup`, a background job's SIGINT) or had a handler of someone
/// else's is left as it was. Process-wide, as signal dispositions are:
/// whichever thread the kernel picks runs the note. A `SIGKILL` cannot be
/// held: killed with it during the renames, the folder keeps the files
/// renamed so far. (A handler already running on another thread as the
/// last hold ends may note its signal only after the check: that signal
/// is then lost, a window of a few instructions.)
struct TerminationHeld {
    /// Only [`TerminationHeld::new`] makes one.
    _private: (),
}

impl TerminationHeld {
    fn new() -> TerminationHeld {
        let mut holds = HOLDS.lock().unwrap_or_else(PoisonError::into_inner);
        if holds.alive == 0 {
            for signal in TERMINATION_SIGNALS {
                if let Some(previous) = install_note(signal) {
                    holds.installed.push((signal, previous));
                }
            }
        }
        holds.alive += 1;
        TerminationHeld { _private: () }
    }
}

/// Installs [`note_termination`] for `signal` if its disposition is the
/// default, and returns the action it replaced; `None` if it left it.
fn install_note(signal: libc::c_int) -> Option<libc::sigaction> {
    // SAFETY: a zeroed `sigaction` is a valid value of the plain C struct
    // (SIG_DFL, no flags, an empty mask), which the calls fill in or read.
    let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a query (null new action) of a valid signal number into a
    // writable `sigaction`.
    if unsafe { libc::sigaction(signal, std::ptr::null(), &mut previous) } != 0
        || previous.sa_sigaction != libc::SIG_DFL
    {
        return None;
    }
    // SAFETY: as above.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    // Without SA_SIGINFO, `sa_sigaction` is the plain one-argument handler.
    action.sa_sigaction = note_termination as extern "C" fn(libc::c_int) as usize;
    // SA_RESTART: a system call the signal lands in (a write, a rename)
    // goes on rather than failing with EINTR.
    action.sa_flags = libc::SA_RESTART;
    // SAFETY: `action` is initialised (an empty mask from the zeroing,
    // emptied again here), its handler is async-signal-safe, and the old
    // action goes to a writable `sigaction`.
    let installed = unsafe {
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(signal, &action, &mut previous) == 0
    };
    installed.then_some(previous)
}

impl Drop for TerminationHeld {
    fn drop(&mut self) {
        let mut holds = HOLDS.lock().unwrap_or_else(PoisonError::into_inner);
        holds.alive -= 1;
        if holds.alive > 0 {
            return;
        }
        for (signal, previous) in holds.installed.drain(..).rev() {
            // SAFETY: puts back the action the query returned for this
            // signal, a valid `sigaction`.
            unsafe { libc::sigaction(signal, &previous, std::ptr::null_mut()) };
        }
        drop(holds);
        let signal = PENDING_SIGNAL.swap(0, Ordering::Relaxed);
        if signal != 0 {
            // Its default action is back: this ends the process as the
            // signal would have when it arrived.
            // SAFETY: raising a valid signal number.
            unsafe { libc::raise(signal) };
        }
    }
}

/// A report file written to its temporary, not yet renamed into place.
struct Staged {
    /// The temporary file holding the contents.
    temporary: PathBuf,
    /// The report file it becomes.
    destination: PathBuf,
}

/// Where the contents of `destination` wait to be renamed onto it: in the
/// same folder, so that the rename stays on one filesystem and is atomic.
/// The name starts with a dot and ends with this process's id, which no
/// report file does, so it cannot overwrite one.
pub(super) fn temporary_path(destination: &Path) -> PathBuf {
    let name = destination
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    destination.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Creates and removes an empty file in `folder`, under a
/// [`TerminationHeld`]: a signal meanwhile leaves no probe behind (until
/// 2026-12-08 one that landed between the two left a hidden
/// `.write-probe.tmp-PID`).
pub(super) fn probe(folder: &Path) -> std::io::Result<()> {
    let _held = TerminationHeld::new();
    let probe = temporary_path(&folder.join("write-probe"));
    std::fs::write(&probe, b"").and_then(|()| std::fs::remove_file(&probe))
}

/// An exclusive `flock(2)` on a report's folder, held from before the
/// measuring until its files are renamed: a second report into the same
/// folder at once is refused, where its renames could interleave with the
/// first's and leave one run's `results.json` beside the other's pages
/// (each process's renames are atomic, the two together were not), and
/// where each would measure under the other's load. The lock is on the
/// folder itself, so no lock file is left in it; the kernel drops it when
/// the process ends, however it ends.
pub(super) struct FolderLock {
    /// The folder, open; its lock goes with the descriptor.
    _folder: std::fs::File,
}

/// Takes [`FolderLock`] on `folder`, or names the conflict. Where the
/// filesystem refuses `flock` (some network filesystems), nothing is
/// locked, a note says so, and the report goes on as before the lock was
/// taken.
pub(super) fn lock_folder(folder: &Path) -> std::io::Result<Option<FolderLock>> {
    use std::os::fd::AsRawFd as _;
    let file = std::fs::File::open(folder).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("cannot open the folder {}: {e}", folder.display()),
        )
    })?;
    // SAFETY: `file` is an open descriptor for the call's duration.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(Some(FolderLock { _folder: file }));
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
        crate::console::note(format_args!(
            "note: the folder {} cannot be locked ({e}): another report written into it at \
             the same time would not be refused",
            folder.display()
        ));
        return Ok(None);
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::ResourceBusy,
        format!(
            "another syncbench report is writing into {} (it holds the folder's lock): \
             wait for it to end, or choose another --out",
            folder.display()
        ),
    ))
}

/// Writes every file's contents to its temporary. If one cannot be written,
/// the temporaries already written are removed, and no report file has
/// been touched.
fn stage(files: &[(PathBuf, Vec<u8>)]) -> std::io::Result<Vec<Staged>> {
    let mut staged = Vec::with_capacity(files.len());
    for (destination, contents) in files {
        match stage_one(destination, contents) {
            Ok(file) => staged.push(file),
            Err(e) => {
                remove_temporaries(&staged);
                return Err(e);
            }
        }
    }
    Ok(staged)
}

/// Writes `contents` to the temporary of `destination`; the error names
/// `destination`, and no partial temporary is left.
fn stage_one(destination: &Path, contents: &[u8]) -> std::io::Result<Staged> {
    refuse_a_directory(destination)?;
    let temporary = temporary_path(destination);
    if let Err(e) = std::fs::write(&temporary, contents) {
        // A write that failed part-way (a full disk) leaves a partial file.
        // If something else was in the way (a directory), this fails and
        // leaves it alone.
        let _ = std::fs::remove_file(&temporary);
        return Err(std::io::Error::new(
            e.kind(),
            format!(
                "cannot write {} (to its temporary {}): {e}",
                destination.display(),
                temporary.display()
            ),
        ));
    }
    Ok(Staged {
        temporary,
        destination: destination.to_owned(),
    })
}

/// Refuses a `destination` that is a directory: a file cannot be renamed
/// onto it, and that would only show after the files before it had been
/// renamed, so it is caught while nothing has been.
fn refuse_a_directory(destination: &Path) -> std::io::Result<()> {
    // `symlink_metadata`: a rename replaces a symbolic link to a directory
    // rather than following it, so that is no obstacle.
    match std::fs::symlink_metadata(destination) {
        Ok(meta) if meta.is_dir() => Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            format!("cannot write {}: it is a directory", destination.display()),
        )),
        _ => Ok(()),
    }
}

/// Renames every temporary onto its report file, in order, calling
/// `renamed` after each. If one rename fails, it and the temporaries after
/// it are removed; the files renamed before it stay renamed (see [`write`]).
fn rename_all(staged: &[Staged], renamed: &mut dyn FnMut(&Path)) -> std::io::Result<()> {
    for (i, file) in staged.iter().enumerate() {
        if let Err(e) = std::fs::rename(&file.temporary, &file.destination) {
            remove_temporaries(&staged[i..]);
            return Err(std::io::Error::new(
                e.kind(),
                format!(
                    "cannot write {} (renaming {} onto it): {e}",
                    file.destination.display(),
                    file.temporary.display()
                ),
            ));
        }
        renamed(&file.destination);
    }
    Ok(())
}

/// Removes the temporaries of `staged` after a failure. A removal that
/// fails too is not reported: the first failure is the one to fix, and
/// a temporary's name says which process left it.
fn remove_temporaries(staged: &[Staged]) {
    for file in staged {
        let _ = std::fs::remove_file(&file.temporary);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt as _;

    /// The child's case: what the parent asks it to do.
    const CASE: &str = "SYNCBENCH_TEST_TERMINATION_HELD";
    /// The test's path, for the child to run it alone.
    const TEST: &str = "report::files::tests::a_termination_signal_waits_for_the_files";

    /// The disposition of `signal` now.
    fn disposition(signal: libc::c_int) -> libc::sighandler_t {
        // SAFETY: as in `install_note`: a zeroed `sigaction`, filled in by a
        // query of a valid signal.
        let mut now: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let queried = unsafe { libc::sigaction(signal, std::ptr::null(), &mut now) };
        assert_eq!(queried, 0, "signal {signal}");
        now.sa_sigaction
    }

    /// The dispositions of the termination signals now.
    fn dispositions() -> [libc::sighandler_t; 3] {
        TERMINATION_SIGNALS.map(disposition)
    }

    /// The note's address, as a disposition.
    fn note() -> libc::sighandler_t {
        note_termination as extern "C" fn(libc::c_int) as libc::sighandler_t
    }

    /// In children, each case in a process of its own (signal dispositions
    /// are process-wide, and the parent may have inherited an ignored
    /// SIGINT or SIGHUP, as a background job or under `nohup` does):
    /// - `raised`: a SIGTERM raised after `write_all` renamed its first file
    ///   lets it rename the second, then ends the process before
    ///   `write_all` returns, leaving no temporary;
    /// - `ignored`: a SIGTERM the process ignores gets no note while held,
    ///   and stays ignored;
    /// - `nested`: the termination signals that had their default action
    ///   get the note from the first hold to the last, two of them alive
    ///   at once and ended in the order they began (as on two threads),
    ///   and then their actions back.
    #[test]
    #[cfg_attr(miri, ignore = "installs signal handlers and spawns a process")]
    fn a_termination_signal_waits_for_the_files() {
        let Ok(case) = std::env::var(CASE) else {
            let dir = std::env::temp_dir()
                .join(format!("syncbench-termination-held-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("the test's folder");
            let folder = dir.to_str().expect("a UTF-8 temporary path");
            let (status, stderr) = test_support::run_in_a_child_process_with(
                TEST,
                CASE,
                "raised",
                &[("SYNCBENCH_TEST_FOLDER", folder)],
            );
            assert_eq!(
                status.signal(),
                Some(libc::SIGTERM),
                "the held SIGTERM did not end the child ({status:?}); stderr:\n{stderr}"
            );
            for (file, contents) in [("a.json", "new a"), ("b.md", "new b")] {
                assert_eq!(
                    std::fs::read_to_string(dir.join(file)).as_deref().ok(),
                    Some(contents),
                    "{file} after the held signal"
                );
            }
            assert!(
                !dir.join("returned").exists(),
                "write_all returned although a SIGTERM arrived during it"
            );
            let leftovers: Vec<_> = std::fs::read_dir(&dir)
                .expect("the folder lists")
                .map(|e| e.expect("an entry").file_name())
                .filter(|n| n.to_string_lossy().starts_with('.'))
                .collect();
            assert!(leftovers.is_empty(), "temporaries left: {leftovers:?}");
            std::fs::remove_dir_all(&dir).expect("the test's folder goes");
            for case in ["ignored", "nested"] {
                test_support::in_a_child_process(TEST, CASE, case);
            }
            return;
        };
        match case.as_str() {
            "raised" => {
                let folder = PathBuf::from(std::env::var("SYNCBENCH_TEST_FOLDER").expect("set"));
                for (file, old) in [("a.json", "old a"), ("b.md", "old b")] {
                    std::fs::write(folder.join(file), old).expect("the old report");
                }
                // SAFETY: SIGTERM's default action, whatever the child
                // inherited.
                unsafe { libc::signal(libc::SIGTERM, libc::SIG_DFL) };
                let files = [
                    (folder.join("a.json"), b"new a".to_vec()),
                    (folder.join("b.md"), b"new b".to_vec()),
                ];
                let mut first = true;
                write_all_observed(&files, &mut |_| {
                    if std::mem::take(&mut first) {
                        // SAFETY: raising a valid signal number.
                        unsafe { libc::raise(libc::SIGTERM) };
                    }
                })
                .expect("the files are written");
                std::fs::write(folder.join("returned"), "").expect("the marker");
            }
            "ignored" => {
                // SAFETY: sets a valid signal's disposition to SIG_IGN.
                unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
                let held = TerminationHeld::new();
                assert_eq!(
                    disposition(libc::SIGTERM),
                    libc::SIG_IGN,
                    "held over SIG_IGN"
                );
                // SAFETY: raising a valid signal number.
                unsafe { libc::raise(libc::SIGTERM) };
                drop(held);
                assert_eq!(
                    disposition(libc::SIGTERM),
                    libc::SIG_IGN,
                    "the hold unignored it"
                );
            }
            _ => {
                // SAFETY: SIGTERM's default action, whatever the child
                // inherited, so that there is a signal to hold.
                unsafe { libc::signal(libc::SIGTERM, libc::SIG_DFL) };
                let before = dispositions();
                let while_held = before.map(|d| if d == libc::SIG_DFL { note() } else { d });
                assert!(
                    while_held.contains(&note()),
                    "no signal to hold: {before:?}"
                );
                let first = TerminationHeld::new();
                let second = TerminationHeld::new();
                assert_eq!(dispositions(), while_held, "two holds");
                drop(first);
                assert_eq!(
                    dispositions(),
                    while_held,
                    "the first hold ended, not the second"
                );
                drop(second);
                assert_eq!(dispositions(), before, "both holds ended");
            }
        }
    }
}
