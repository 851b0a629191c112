//! Writes a report's files all or nothing: each to a temporary beside it,
//! then, once every one is written, renamed into place (see
//! [`write`](super::write) for what a failure leaves).
//!
//! Invariants: a temporary lives in its destination's own folder, so the
//! rename stays on one filesystem and is atomic; its name starts with a
//! dot and ends with this process's id, which no report file's does; and
//! a destination that is a directory is refused before anything is renamed.

use std::path::{Path, PathBuf};

/// Writes every file's contents (destination, bytes) to its temporary, then
/// renames them all, in order, onto their destinations. Every error names
/// the path it is about, and no temporary is left behind.
pub(super) fn write_all(files: &[(PathBuf, Vec<u8>)]) -> std::io::Result<()> {
    let staged = stage(files)?;
    rename_all(&staged)
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

/// Renames every temporary onto its report file, in order. If one rename
/// fails, it and the temporaries after it are removed; the files renamed
/// before it stay renamed (see [`write`]).
fn rename_all(staged: &[Staged]) -> std::io::Result<()> {
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
