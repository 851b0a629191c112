//! Records what built `syncbench` for the build description in reports (the
//! compiler, the commit, the optimization level, the peers' versions from
//! `Cargo.lock`, liburcu's version), and finds liburcu (the C peer of
//! `rcu-lite`).
//!
//! The commit is `git rev-parse HEAD` of the checkout being built, and
//! *dirty* means `git status` saw changes to the tracked sources compiled
//! into `syncbench` (the crates' `src`, their manifests, `Cargo.lock`, the C
//! shims, this script). It runs again when `HEAD` moves (its reflog) and when
//! any of those sources changes, so the flag is what the binary was built
//! from; without git or a checkout (a source archive) the commit is unknown.
//!
//! When `pkg-config` finds `liburcu-memb` and `liburcu-qsbr`, the C shims in
//! `csrc/` are compiled against them (so liburcu's inline read-side fast paths
//! are what syncbench measures), the libraries are linked, and
//! `cfg(syncbench_liburcu)` is set. Otherwise the workspace still builds and
//! the liburcu peers are listed as unavailable with the install hint and
//! pkg-config's answer; so they are, with `cfg(syncbench_liburcu_broken)` and
//! the compiler's or linker's complaint, when pkg-config finds liburcu but
//! the shims do not compile against its headers, or a small program linked
//! with its libraries does not link or (unless cross-compiling) run. Setting `SYNCBENCH_NO_LIBURCU` makes this script act as if
//! liburcu were absent, to test that path, and sets
//! `cfg(syncbench_liburcu_disabled)` so that the peers say they were disabled
//! rather than not found. Setting `SYNCPRIMS_REQUIRE_LIBURCU` (as `.ci/run`
//! does) turns "not found", "does not compile" and a failed link probe into a
//! build failure, so a
//! run that must test the FFI cannot pass without it; `SYNCBENCH_NO_LIBURCU`
//! still wins over it. Either counts as set with any value but an empty one
//! or `0`.

use std::path::Path;

/// The liburcu flavors syncbench measures, with their shims.
const FLAVORS: [(&str, &str); 2] = [
    ("liburcu-memb", "csrc/urcu_memb_shim.c"),
    ("liburcu-qsbr", "csrc/urcu_qsbr_shim.c"),
];

/// The package a flavor's library is also found under, where its own `.pc`
/// file is missing: liburcu 0.11.0-0.11.3, 0.12.0-0.12.2 and 0.13.0 (Ubuntu
/// 20.04, Debian 11) ship no `liburcu-memb.pc`, but their default library,
/// `liburcu`, is the memb flavor and exports the `urcu_memb_*` functions.
const ALSO_FOUND_AS: [(&str, &str); 1] = [("liburcu-memb", "liburcu")];

/// The program that checks that the shims, linked with the libraries
/// pkg-config named, link and load (`probe_links_and_loads`): a stale `.pc`
/// file, a library older than the headers, or one outside the loader's path
/// compiles the shims and then fails every link or every start of a
/// bench-suite binary. Calling one function of each shim links the whole of
/// it, so every liburcu function and variable either uses must resolve.
const PROBE: &str = "\
void syncbench_urcu_memb_register_thread(void);
void syncbench_urcu_memb_unregister_thread(void);
void syncbench_urcu_qsbr_register_thread(void);
void syncbench_urcu_qsbr_unregister_thread(void);
int main(void)
{
\tsyncbench_urcu_memb_register_thread();
\tsyncbench_urcu_memb_unregister_thread();
\tsyncbench_urcu_qsbr_register_thread();
\tsyncbench_urcu_qsbr_unregister_thread();
\treturn 0;
}
";

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|v| v.trim().to_owned())
        .unwrap_or_else(|| "unknown rustc".into());
    println!("cargo:rustc-env=SYNCBENCH_RUSTC_VERSION={version}");
    println!("cargo:rerun-if-env-changed=RUSTC");
    build_description();

    liburcu();
}

/// The peers whose versions a report names: bench-suite's dependencies of
/// those names in `Cargo.lock`.
const PEERS: [&str; 7] = [
    "crossbeam-epoch",
    "haphazard",
    "seize",
    "arc-swap",
    "seqlock",
    "parking_lot",
    "spin",
];

/// Sets `SYNCBENCH_COMMIT` (empty where unknown), `SYNCBENCH_OPT_LEVEL`,
/// `SYNCBENCH_TARGET` and `SYNCBENCH_PEER_VERSIONS` (`name version` pairs,
/// comma-separated).
fn build_description() {
    let manifest_dir = std::path::PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    let workspace = manifest_dir.parent().unwrap_or(&manifest_dir).to_owned();
    let env = |name: &str| std::env::var(name).unwrap_or_default();
    println!("cargo:rustc-env=SYNCBENCH_OPT_LEVEL={}", env("OPT_LEVEL"));
    println!("cargo:rustc-env=SYNCBENCH_TARGET={}", env("TARGET"));

    let lock = workspace.join("Cargo.lock");
    let peers = std::fs::read_to_string(&lock)
        .map(|text| peer_versions(&text))
        .unwrap_or_default();
    println!("cargo:rustc-env=SYNCBENCH_PEER_VERSIONS={peers}");

    let git = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(&workspace)
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    // The sources compiled into syncbench, relative to the workspace: what
    // the dirty flag looks at, and what makes this script run again.
    let mut sources: Vec<String> = vec!["Cargo.toml".into(), "Cargo.lock".into()];
    for crate_dir in [
        "bench-suite",
        "hazptr",
        "rcu-lite",
        "qrwlock",
        "membarrier-sim",
        "futex-word",
    ] {
        sources.push(format!("{crate_dir}/src"));
        sources.push(format!("{crate_dir}/Cargo.toml"));
    }
    sources.push("bench-suite/csrc".into());
    sources.push("bench-suite/build.rs".into());
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).map(|head| {
        // `--no-optional-locks`: no index refresh, so no `index.lock` that a
        // commit running meanwhile would trip over.
        let mut status = vec![
            "--no-optional-locks",
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--",
        ];
        status.extend(sources.iter().map(String::as_str));
        match git(&status) {
            Some(changes) if changes.is_empty() => head,
            Some(_) => format!("{head}-dirty"),
            // Not "clean" when git could not say.
            None => format!("{head}-unknown-state"),
        }
    });
    println!(
        "cargo:rustc-env=SYNCBENCH_COMMIT={}",
        commit.unwrap_or_default()
    );
    // Run again when HEAD moves: every move (a commit, a checkout, a reset)
    // appends to HEAD's reflog, wherever the refs themselves live (loose,
    // packed, reftable, a linked worktree's common directory). HEAD itself
    // too, for a repository without reflogs. Only files that exist: cargo
    // runs the script on every build for a path that does not.
    for name in ["logs/HEAD", "HEAD"] {
        // Relative to the directory git ran in (`-C`) unless absolute.
        if let Some(path) = git(&["rev-parse", "--git-path", name])
            .map(|p| workspace.join(p))
            .filter(|p| p.exists())
        {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    // And when a source changes, for the dirty flag.
    for source in &sources {
        let path = workspace.join(source);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}

/// `name version` of each of [`PEERS`] that `Cargo.lock`'s `bench-suite`
/// package depends on, comma-separated. A dependency entry names its version
/// only where the lock holds several of that name (`"parking_lot 0.13.0"`);
/// otherwise the one package of that name is it.
fn peer_versions(lock: &str) -> String {
    // (name, version, dependencies) of each [[package]].
    let packages: Vec<(String, String, Vec<String>)> = lock
        .split("[[package]]")
        .skip(1)
        .map(|block| {
            let field = |key: &str| {
                block
                    .lines()
                    .find_map(|line| line.strip_prefix(key)?.strip_prefix(" = "))
                    .map(|v| v.trim_matches('"').to_owned())
                    .unwrap_or_default()
            };
            let dependencies = block
                .split_once("dependencies = [")
                .map(|(_, rest)| {
                    rest.split(']')
                        .next()
                        .unwrap_or_default()
                        .split(',')
                        .map(|d| d.trim().trim_matches('"').to_owned())
                        .filter(|d| !d.is_empty())
                        .collect()
                })
                .unwrap_or_default();
            (field("name"), field("version"), dependencies)
        })
        .collect();
    let Some((_, _, ours)) = packages.iter().find(|(name, _, _)| name == "bench-suite") else {
        return String::new();
    };
    let mut found = Vec::new();
    for peer in PEERS {
        let Some(entry) = ours.iter().find(|d| d.split(' ').next() == Some(peer)) else {
            continue;
        };
        let version = match entry.split(' ').nth(1) {
            Some(version) => Some(version.to_owned()),
            None => {
                let mut named = packages.iter().filter(|(name, _, _)| name == peer);
                match (named.next(), named.next()) {
                    (Some((_, version, _)), None) => Some(version.clone()),
                    _ => None,
                }
            }
        };
        if let Some(version) = version {
            found.push(format!("{peer} {version}"));
        }
    }
    found.join(",")
}

fn liburcu() {
    println!("cargo::rustc-check-cfg=cfg(syncbench_liburcu)");
    println!("cargo::rustc-check-cfg=cfg(syncbench_liburcu_disabled)");
    println!("cargo::rustc-check-cfg=cfg(syncbench_liburcu_broken)");
    println!("cargo:rerun-if-env-changed=SYNCBENCH_NO_LIBURCU");
    println!("cargo:rerun-if-env-changed=SYNCPRIMS_REQUIRE_LIBURCU");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_LIBDIR");
    // Run again when a .pc file appears in or leaves a directory pkg-config
    // searches (liburcu installed after a first build, or removed): a
    // directory's time changes when a file is added, while dpkg keeps the
    // package's own file times. Only directories that exist: cargo reruns a
    // script on every build for a path that does not.
    for dir in pkg_config_dirs() {
        println!("cargo:rerun-if-changed={}", dir.display());
    }
    for (_, shim) in FLAVORS {
        println!("cargo:rerun-if-changed={shim}");
    }
    if flag_set("SYNCBENCH_NO_LIBURCU") {
        println!("cargo:warning=SYNCBENCH_NO_LIBURCU is set: building without the liburcu peers");
        // So that the peers say they were disabled, not missing.
        println!("cargo:rustc-cfg=syncbench_liburcu_disabled");
        return;
    }
    let required = flag_set("SYNCPRIMS_REQUIRE_LIBURCU");
    let mut libraries = Vec::new();
    for (package, _) in FLAVORS {
        match find(package) {
            Ok(library) => libraries.push(library),
            Err(why) => {
                assert!(
                    !required,
                    "SYNCPRIMS_REQUIRE_LIBURCU is set but pkg-config did not find {package} \
                     (apt-get install -y liburcu-dev pkg-config): {why}"
                );
                println!(
                    "cargo:warning={package} not found by pkg-config: the liburcu peers are \
                     unavailable (apt-get install -y liburcu-dev pkg-config): {why}"
                );
                println!("cargo:rustc-env=SYNCBENCH_LIBURCU_NOT_FOUND={why}");
                return;
            }
        }
    }
    let mut build = cc::Build::new();
    // liburcu's reader state is an `extern __thread` variable of a shared
    // library loaded at start-up. `cc` builds position-independent code, whose
    // default for such a variable is the general-dynamic TLS model (a call to
    // `__tls_get_addr` per access); a C program built as usual (PIE or not)
    // gets the initial-exec model. Ask for that, so liburcu's fast path is
    // measured as its users run it. The optimization level is cargo's, as
    // for the Rust contenders (3 in release and bench builds). The timed
    // loops are aligned to a 64-byte line: otherwise a loop of a few bytes
    // may straddle two lines, depending on the size of unrelated Rust code,
    // which made `liburcu-qsbr` up to twice as slow from one build to the
    // next (docs/measuring.md).
    build
        .warnings(true)
        .flag_if_supported("-ftls-model=initial-exec")
        .flag_if_supported("-falign-loops=64");
    for library in &libraries {
        build.includes(&library.include_paths);
    }
    for (_, shim) in FLAVORS {
        build.file(Path::new(shim));
    }
    // `try_compile`, not `compile`: headers pkg-config points at that do not
    // compile (a broken or mismatched liburcu install, no C compiler) leave
    // the peers unavailable, as a missing liburcu does, instead of failing
    // the whole workspace's build. The compiler's own messages are printed
    // as warnings by `cc`.
    let usable = match build.try_compile("syncbench_liburcu_shim") {
        Err(why) => Err(format!(
            "the shims in bench-suite/csrc/ did not compile against its headers ({})",
            compile_error_summary(&why.to_string())
        )),
        Ok(()) => probe_links_and_loads(&build, &libraries),
    };
    let needs_rpath = match usable {
        Ok(needs_rpath) => needs_rpath,
        Err(why) => {
            assert!(
                !required,
                "SYNCPRIMS_REQUIRE_LIBURCU is set but liburcu, found by pkg-config, cannot be \
                 used: {why}"
            );
            println!(
                "cargo:warning=liburcu was found by pkg-config, but {why}, so the liburcu peers \
                 are unavailable"
            );
            println!("cargo:rustc-cfg=syncbench_liburcu_broken");
            println!("cargo:rustc-env=SYNCBENCH_LIBURCU_BUILD_ERROR={why}");
            return;
        }
    };
    // After the shim's own link line, so the linker resolves its references.
    for library in &libraries {
        for path in &library.link_paths {
            println!("cargo:rustc-link-search=native={}", path.display());
            if needs_rpath {
                println!("cargo:rustc-link-arg=-Wl,-rpath,{}", path.display());
            }
        }
        for lib in &library.libs {
            println!("cargo:rustc-link-lib=dylib={lib}");
        }
    }
    // The version of the headers the shims were compiled against, which
    // the loader's library must match in its soname only.
    if let Some(library) = libraries.first() {
        println!(
            "cargo:rustc-env=SYNCBENCH_LIBURCU_VERSION={}",
            library.version
        );
    }
    println!("cargo:rustc-cfg=syncbench_liburcu");
}

/// Whether the environment variable `name` is set to something other than
/// nothing or `0`: `SYNCBENCH_NO_LIBURCU=0` leaves liburcu in, as a user
/// who writes it means.
fn flag_set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|value| !value.is_empty() && value != "0")
}

/// The oldest liburcu whose flavors have the `urcu_memb_*` and `urcu_qsbr_*`
/// names the shims call.
const OLDEST_LIBURCU: &str = "0.11";

/// pkg-config's library for `package`, or for the package it is also found
/// under ([`ALSO_FOUND_AS`]); else why neither was found, in one line: the
/// first one's reason, or that the second is too old.
fn find(package: &str) -> Result<pkg_config::Library, String> {
    let probe = |name: &str| {
        pkg_config::Config::new()
            .atleast_version(OLDEST_LIBURCU)
            .cargo_metadata(false)
            .probe(name)
    };
    probe(package).or_else(|why| {
        let why = not_found_reason(&why);
        let Some((_, other)) = ALSO_FOUND_AS.iter().find(|(flavor, _)| *flavor == package) else {
            return Err(why);
        };
        let library = probe(other).map_err(|_| {
            // An older liburcu (0.10 has no flavor packages and other
            // names) is installed, not missing: say so rather than give
            // the install hint alone.
            match pkg_config::Config::new().cargo_metadata(false).probe(other) {
                Ok(old) => format!(
                    "{}; {other} {} is installed, but syncbench needs {OLDEST_LIBURCU} or \
                     later (the urcu_memb_* names)",
                    why.trim_end_matches('.'),
                    old.version
                ),
                Err(_) => why,
            }
        })?;
        println!(
            "cargo:warning=pkg-config has no {package} (liburcu before 0.11.4, 0.12.3 or 0.13.1 \
             shipped none): using {other}, liburcu's default flavor, which is memb"
        );
        Ok(library)
    })
}

/// Why pkg-config found no library, in one short line (the crate's own
/// message spans many, with its command line and generic advice).
fn not_found_reason(error: &pkg_config::Error) -> String {
    match error {
        pkg_config::Error::Command { cause, .. }
            if cause.kind() == std::io::ErrorKind::NotFound =>
        {
            "pkg-config is not installed".to_owned()
        }
        pkg_config::Error::Failure { output, .. }
        | pkg_config::Error::ProbeFailure { output, .. } => {
            format!("pkg-config: {}", first_line(&output.stderr))
        }
        pkg_config::Error::CrossCompilation => {
            "pkg-config does not look for a cross-compiled library without \
             PKG_CONFIG_ALLOW_CROSS=1"
                .to_owned()
        }
        other => first_line(other.to_string().as_bytes()),
    }
}

/// Links [`PROBE`] against `libraries` with the compiler `build` uses and,
/// unless cross-compiling, runs it; the error says which step failed.
/// Returns whether the program ran only with an rpath to the libraries'
/// directories (liburcu installed outside the loader's default path, which
/// cargo does not tell the loader about outside its own target directory).
fn probe_links_and_loads(
    build: &cc::Build,
    libraries: &[pkg_config::Library],
) -> Result<bool, String> {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let source = out.join("liburcu_probe.c");
    let program = out.join("liburcu_probe");
    std::fs::write(&source, PROBE).map_err(|e| format!("the link probe was not written ({e})"))?;
    let link = |rpath: bool| {
        let mut link = build.get_compiler().to_command();
        link.arg(&source).arg("-o").arg(&program);
        // The shims `try_compile` archived in OUT_DIR, before the libraries
        // that resolve their references.
        link.arg(format!("-L{}", out.display()))
            .arg("-lsyncbench_liburcu_shim");
        for library in libraries {
            for path in &library.link_paths {
                link.arg(format!("-L{}", path.display()));
                if rpath {
                    link.arg(format!("-Wl,-rpath,{}", path.display()));
                }
            }
            for lib in &library.libs {
                link.arg(format!("-l{lib}"));
            }
        }
        let linked = link.output().map_err(|e| {
            format!("its libraries were not linked: the C compiler did not run ({e})")
        })?;
        if linked.status.success() {
            Ok(())
        } else {
            // The whole complaint in the warnings: its first line is often
            // only "in function ...", which names no missing symbol.
            for line in String::from_utf8_lossy(&linked.stderr).lines() {
                println!("cargo:warning=liburcu link probe: {line}");
            }
            Err(format!(
                "its libraries did not link ({})",
                link_error_line(&linked.stderr)
            ))
        }
    };
    // `None` where the probe could not be started at all (a build sandbox
    // that forbids running what it builds, an OUT_DIR mounted noexec): that
    // says nothing of liburcu.
    let run = || match std::process::Command::new(&program).output() {
        Ok(ran) if ran.status.success() => Some(Ok(())),
        Ok(ran) => Some(Err(format!(
            "a program linked with its libraries did not run ({}: {})",
            ran.status,
            first_line(&ran.stderr)
        ))),
        Err(e) => {
            println!(
                "cargo:warning=the liburcu link probe linked but could not be started ({e}): \
                 whether liburcu loads was not checked"
            );
            None
        }
    };
    link(false)?;
    if std::env::var("TARGET").ok() != std::env::var("HOST").ok() {
        return Ok(false);
    }
    let Some(Err(why)) = run() else {
        return Ok(false);
    };
    if libraries
        .iter()
        .all(|library| library.link_paths.is_empty())
    {
        return Err(why);
    }
    // With an rpath to the libraries' directories; the error, if that fails
    // too, is the first run's.
    match link(true).map(|()| run()) {
        Ok(Some(Ok(()))) => Ok(true),
        _ => Err(why),
    }
}

/// The line of a linker's error output that says what went wrong (an
/// undefined reference, a library not found), else its first line: GNU ld
/// begins with the function the reference is in, which names nothing
/// missing.
fn link_error_line(output: &[u8]) -> String {
    String::from_utf8_lossy(output)
        .lines()
        .map(str::trim)
        .find(|line| {
            line.contains("undefined reference")
                || line.contains("cannot find")
                || line.contains("error:")
        })
        .map_or_else(|| first_line(output), str::to_owned)
}

/// The first line of a tool's error output that says something.
fn first_line(output: &[u8]) -> String {
    String::from_utf8_lossy(output)
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("no message")
        .to_owned()
}

/// `cc`'s error in one line, without the compiler's command line (the
/// compiler's own messages, which `cc` prints as warnings, say what failed):
/// the error's kind and status, and the shim being compiled if the command
/// names one.
fn compile_error_summary(error: &str) -> String {
    let error = error.replace(['\n', '\r'], " ");
    let head = error.split(": \"").next().unwrap_or(&error).trim();
    match FLAVORS.iter().find(|(_, shim)| error.contains(shim)) {
        Some((_, shim)) => format!("{head}, compiling {shim}"),
        None => head.to_owned(),
    }
}

/// The directories pkg-config searches for .pc files that exist:
/// `PKG_CONFIG_PATH`'s, then `PKG_CONFIG_LIBDIR`'s or else pkg-config's own
/// default path.
fn pkg_config_dirs() -> Vec<std::path::PathBuf> {
    let mut dirs = Vec::new();
    let mut add = |list: &std::ffi::OsStr| {
        dirs.extend(std::env::split_paths(list).filter(|dir| dir.is_dir()));
    };
    if let Some(list) = std::env::var_os("PKG_CONFIG_PATH") {
        add(&list);
    }
    if let Some(list) = std::env::var_os("PKG_CONFIG_LIBDIR") {
        add(&list);
    } else if let Some(out) = std::process::Command::new("pkg-config")
        .args(["--variable", "pc_path", "pkg-config"])
        .output()
        .ok()
        .filter(|out| out.status.success())
    {
        let text = String::from_utf8_lossy(&out.stdout);
        add(std::ffi::OsStr::new(text.trim()));
    }
    dirs
}
