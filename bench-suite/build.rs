//! Records the compiler version for the machine description in reports, and
//! finds liburcu (the C peer of `rcu-lite`).
//!
//! When `pkg-config` finds `liburcu-memb` and `liburcu-qsbr`, the C shims in
//! `csrc/` are compiled against them (so liburcu's inline read-side fast paths
//! are what syncbench measures), the libraries are linked, and
//! `cfg(syncbench_liburcu)` is set. Otherwise the workspace still builds and
//! the liburcu peers are listed as unavailable with the install hint; so they
//! are, with `cfg(syncbench_liburcu_broken)` and the compiler's complaint,
//! when pkg-config finds liburcu but the shims do not compile against its
//! headers. Setting `SYNCBENCH_NO_LIBURCU` makes this script act as if
//! liburcu were absent, to test that path, and sets
//! `cfg(syncbench_liburcu_disabled)` so that the peers say they were disabled
//! rather than not found. Setting `SYNCPRIMS_REQUIRE_LIBURCU` (as `.ci/run`
//! does) turns "not found" and "does not compile" into a build failure, so a
//! run that must test the FFI cannot pass without it; `SYNCBENCH_NO_LIBURCU`
//! still wins over it.

use std::path::Path;

/// The liburcu flavors syncbench measures, with their shims.
const FLAVORS: [(&str, &str); 2] = [
    ("liburcu-memb", "csrc/urcu_memb_shim.c"),
    ("liburcu-qsbr", "csrc/urcu_qsbr_shim.c"),
];

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

    liburcu();
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
    if std::env::var_os("SYNCBENCH_NO_LIBURCU").is_some() {
        println!("cargo:warning=SYNCBENCH_NO_LIBURCU is set: building without the liburcu peers");
        // So that the peers say they were disabled, not missing.
        println!("cargo:rustc-cfg=syncbench_liburcu_disabled");
        return;
    }
    let required = std::env::var_os("SYNCPRIMS_REQUIRE_LIBURCU").is_some();
    let mut libraries = Vec::new();
    for (package, _) in FLAVORS {
        match pkg_config::Config::new()
            .atleast_version("0.11")
            .cargo_metadata(false)
            .probe(package)
        {
            Ok(library) => libraries.push(library),
            Err(why) => {
                assert!(
                    !required,
                    "SYNCPRIMS_REQUIRE_LIBURCU is set but pkg-config did not find {package} \
                     (apt-get install -y liburcu-dev pkg-config): {why}"
                );
                println!(
                    "cargo:warning={package} not found by pkg-config: the liburcu peers are \
                     unavailable (apt-get install -y liburcu-dev)"
                );
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
    if let Err(why) = build.try_compile("syncbench_liburcu_shim") {
        let why = compile_error_summary(&why.to_string());
        assert!(
            !required,
            "SYNCPRIMS_REQUIRE_LIBURCU is set but the liburcu shims in csrc/ did not compile \
             against the headers pkg-config found: {why}"
        );
        println!(
            "cargo:warning=liburcu was found by pkg-config but the shims in csrc/ did not \
             compile against it, so the liburcu peers are unavailable: {why}"
        );
        println!("cargo:rustc-cfg=syncbench_liburcu_broken");
        println!("cargo:rustc-env=SYNCBENCH_LIBURCU_BUILD_ERROR={why}");
        return;
    }
    // After the shim's own link line, so the linker resolves its references.
    for library in &libraries {
        for path in &library.link_paths {
            println!("cargo:rustc-link-search=native={}", path.display());
        }
        for lib in &library.libs {
            println!("cargo:rustc-link-lib=dylib={lib}");
        }
    }
    println!("cargo:rustc-cfg=syncbench_liburcu");
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
