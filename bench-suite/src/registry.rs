//! The registry of implementations: every contender of every kind of
//! measurement, by name.
//!
//! A kind's module lists its contenders as a slice of [`Implementation`]s; the
//! CLI validates names against that slice and `syncbench list` prints all of
//! them. An implementation that cannot run on this machine (a C library that is
//! not installed) stays listed, with the reason and how to fix it.

use std::fmt;

/// Where an implementation comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// One of this workspace's crates.
    Workspace,
    /// A crate or library we measure against.
    Peer,
    /// Broken on purpose, to check the harness (torture's `busted`): chosen
    /// only by name, never by `all`, and never a contender of the report.
    SelfCheck,
}

/// Why an implementation cannot run here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable {
    /// What is missing.
    pub reason: String,
    /// How to make it available.
    pub hint: String,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.reason, self.hint)
    }
}

/// One contender of a kind `T` (a trait object type such as `dyn ReadSide`),
/// built from the kind's options `O` (`()` for kinds without options).
pub struct Implementation<T: ?Sized, O = ()> {
    /// The name used on the command line.
    pub name: &'static str,
    /// What exactly is measured, in a few words.
    pub summary: &'static str,
    /// Ours or a peer.
    pub origin: Origin,
    /// Builds a fresh instance for the given options, or says why it cannot.
    pub make: fn(&O) -> Result<Box<T>, Unavailable>,
}

impl<T: ?Sized, O: Default> Implementation<T, O> {
    /// Whether [`Implementation::make`] would succeed with default options,
    /// without keeping the instance.
    pub fn availability(&self) -> Result<(), Unavailable> {
        (self.make)(&O::default()).map(drop)
    }

    /// Builds an instance with `options`, panicking with the reason if it is
    /// unavailable (callers select available implementations first).
    pub fn build(&self, options: &O) -> Box<T> {
        (self.make)(options).unwrap_or_else(|why| panic!("{} is unavailable: {why}", self.name))
    }
}

/// Finds `name` in `list`.
pub fn find<'a, T: ?Sized, O>(
    list: &'a [Implementation<T, O>],
    name: &str,
) -> Option<&'a Implementation<T, O>> {
    list.iter().find(|i| i.name == name)
}

/// The names in `list`, plus `all`, for argument validation.
pub fn names_with_all<T: ?Sized, O>(list: &[Implementation<T, O>]) -> Vec<&'static str> {
    let mut names: Vec<_> = list.iter().map(|i| i.name).collect();
    names.push("all");
    names
}

/// Expands the names given on the command line (`all` means every available
/// one, self-checks excepted) into implementations, in the order given,
/// without duplicates.
pub fn select<'a, T: ?Sized, O: Default>(
    list: &'a [Implementation<T, O>],
    names: &[String],
) -> Result<Vec<&'a Implementation<T, O>>, String> {
    select_noting(list, names).map(|(chosen, _)| chosen)
}

/// What [`select_noting`] returns: the implementations chosen, and what
/// `all` left out, each as "name (why)".
pub type Chosen<'a, T, O> = (Vec<&'a Implementation<T, O>>, Vec<String>);

/// [`select`], and what `all` left out because it cannot run here
/// (self-checks, which `all` never includes, are not named).
pub fn select_noting<'a, T: ?Sized, O: Default>(
    list: &'a [Implementation<T, O>],
    names: &[String],
) -> Result<Chosen<'a, T, O>, String> {
    let mut chosen: Vec<&Implementation<T, O>> = Vec::new();
    let mut left_out = Vec::new();
    for name in names {
        if name == "all" {
            for imp in list {
                if imp.origin == Origin::SelfCheck || chosen.iter().any(|c| c.name == imp.name) {
                    continue;
                }
                match imp.availability() {
                    Ok(()) => chosen.push(imp),
                    Err(why) => {
                        let note = format!("{} ({why})", imp.name);
                        if !left_out.contains(&note) {
                            left_out.push(note);
                        }
                    }
                }
            }
            continue;
        }
        let imp = find(list, name).ok_or_else(|| {
            format!(
                "unknown implementation '{name}' (valid: {})",
                names_with_all(list).join(", ")
            )
        })?;
        if let Err(why) = imp.availability() {
            return Err(format!("'{name}' cannot run here: {why}"));
        }
        if !chosen.iter().any(|c| c.name == imp.name) {
            chosen.push(imp);
        }
    }
    Ok((chosen, left_out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OURS: Implementation<()> = Implementation {
        name: "ours",
        summary: "",
        origin: Origin::Workspace,
        make: |_| Ok(Box::new(())),
    };
    const MISSING_PEER: Implementation<()> = Implementation {
        name: "missing-peer",
        summary: "",
        origin: Origin::Peer,
        make: |_| {
            Err(Unavailable {
                reason: "not linked".into(),
                hint: "install it".into(),
            })
        },
    };
    const MISSING_CHECK: Implementation<()> = Implementation {
        name: "missing-check",
        summary: "",
        origin: Origin::SelfCheck,
        ..MISSING_PEER
    };

    /// `all` chooses what can run here and names what it leaves out, but
    /// not the self-checks, which it never includes; names given one by
    /// one leave nothing out, and one that cannot run is refused.
    #[test]
    fn all_names_what_it_leaves_out() {
        let list = [OURS, MISSING_PEER, MISSING_CHECK];
        let all = ["all".to_owned()];
        let (chosen, left_out) = select_noting(&list, &all).unwrap();
        let chosen: Vec<_> = chosen.iter().map(|i| i.name).collect();
        assert_eq!(chosen, ["ours"]);
        assert_eq!(left_out, ["missing-peer (not linked (install it))"]);
        let (_, left_out) = select_noting(&list, &["ours".to_owned()]).unwrap();
        assert!(left_out.is_empty());
        let refused = select(&list, &["missing-peer".to_owned()]).err().unwrap();
        assert_eq!(
            refused,
            "'missing-peer' cannot run here: not linked (install it)"
        );
    }
}
