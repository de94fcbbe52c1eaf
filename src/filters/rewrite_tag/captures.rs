//! Which captures of a rule's regex can be empty in a match: those that
//! can match nothing (`(a*)`) and those a match can leave out (`(a)?`,
//! `(a)|b`). A tag made only of such captures can be empty.

use regex_syntax::hir::{Hir, HirKind};

/// Whether capture `n` (0: the whole match) of `hir` can be empty, or
/// missing, in a match. A capture the regex does not have can.
pub fn may_be_empty(hir: &Hir, n: usize) -> bool {
    if n == 0 {
        return can_match_nothing(hir);
    }
    find(hir, n, true).unwrap_or(true)
}

fn can_match_nothing(hir: &Hir) -> bool {
    hir.properties().minimum_len().is_none_or(|m| m == 0)
}

/// `Some(whether capture n can be empty or missing)` if it is in `hir`;
/// `certain`: every match of the regex goes through `hir`.
fn find(hir: &Hir, n: usize, certain: bool) -> Option<bool> {
    match hir.kind() {
        HirKind::Capture(c) if c.index as usize == n => Some(!certain || can_match_nothing(&c.sub)),
        HirKind::Capture(c) => find(&c.sub, n, certain),
        HirKind::Concat(parts) => parts.iter().find_map(|p| find(p, n, certain)),
        HirKind::Alternation(parts) => parts
            .iter()
            .find_map(|p| find(p, n, certain && parts.len() == 1)),
        HirKind::Repetition(r) => find(&r.sub, n, certain && r.min > 0),
        HirKind::Empty | HirKind::Literal(_) | HirKind::Class(_) | HirKind::Look(_) => None,
    }
}
