//! The Apache access-log presets (`apache`, `apache2`) read without the
//! regex engine, for the lines whose shape leaves their regex no choice:
//! printable ASCII with a `METHOD PATH PROTOCOL` request. Such a line is
//! read in one pass and gives exactly the fields the regex gives; any
//! other line gets `None` here and goes to the regex, so what a user sees
//! never depends on which of the two read it (the tests below check the
//! two against each other on lines bent every way).
//!
//! Why the fields are the regex's: at every choice the regex has, the
//! first choice a backtracking match tries is the one taken here, and it
//! succeeds; the one exception, the protocol's `\S*`, first takes the
//! request's closing quote too, fails on the space after it, and gives
//! the quote back, which is what is done here.

/// The regex's named captures, in order: host, user, time, method, path,
/// code, size, referer, agent. The last two are absent for a line that
/// ends after the size.
pub(super) type Fields<'a> = [Option<&'a [u8]>; 9];

/// Which preset: they differ in their agent only (`[^"]*` for `apache`,
/// `.*` for `apache2`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Preset {
    Apache,
    Apache2,
}

/// The fields of `line`, or `None` when the regex must decide.
pub(super) fn scan(line: &[u8], preset: Preset) -> Option<Fields<'_>> {
    // the regex's `.` and classes read UTF-8 and `.` stops at a newline:
    // plain ASCII without one keeps every class a byte test
    if !line.iter().all(|&b| b.is_ascii() && b != b'\n') {
        return None;
    }
    let find = |from: usize, byte: u8| -> Option<usize> {
        memchr::memchr(byte, line.get(from..)?).map(|i| from + i)
    };
    // `^(?<host>[^ ]*) [^ ]* (?<user>[^ ]*) `
    let host_end = find(0, b' ')?;
    let ident_end = find(host_end + 1, b' ')?;
    let user_end = find(ident_end + 1, b' ')?;
    // `\[(?<time>[^\]]*)\] "`
    if line.get(user_end + 1) != Some(&b'[') {
        return None;
    }
    let time_end = find(user_end + 2, b']')?;
    if line.get(time_end + 1..time_end + 3) != Some(b" \"") {
        return None;
    }
    // `(?<method>\S+)(?: +(?<path>[^ ]*) +\S*)?" `: three words of
    // printable characters, one space between, then `" `
    let request_start = time_end + 3;
    let request_end = find(request_start, b'"')?;
    if line.get(request_end + 1) != Some(&b' ') {
        return None;
    }
    let request = &line[request_start..request_end];
    let mut words = request.split(|&b| b == b' ');
    let (method, path, protocol) = (words.next()?, words.next()?, words.next()?);
    if words.next().is_some()
        || [method, path, protocol]
            .iter()
            .any(|w| w.is_empty() || !w.iter().all(|b| (0x21..=0x7e).contains(b)))
    {
        return None;
    }
    // `(?<code>[^ ]*) (?<size>[^ ]*)`
    let code_start = request_end + 2;
    let code_end = find(code_start, b' ')?;
    let size_start = code_end + 1;
    let size_end = find(size_start, b' ').unwrap_or(line.len());
    let mut fields: Fields<'_> = [
        Some(&line[..host_end]),
        Some(&line[ident_end + 1..user_end]),
        Some(&line[user_end + 2..time_end]),
        Some(method),
        Some(path),
        Some(&line[code_start..code_end]),
        Some(&line[size_start..size_end]),
        None,
        None,
    ];
    if size_end == line.len() {
        // the optional `(?: "…" "…")?` cannot start at the end; `$` holds
        return Some(fields);
    }
    // `(?: "(?<referer>[^\"]*)" "(?<agent>…)")?$`, which must match now:
    // without it `$` would have to follow the size, and a space does
    if line.get(size_end + 1) != Some(&b'"') {
        return None;
    }
    let referer_end = find(size_end + 2, b'"')?;
    if line.get(referer_end + 1..referer_end + 3) != Some(b" \"") {
        return None;
    }
    let agent_start = referer_end + 3;
    // the agent runs to the quote that ends the line
    let last = line.len() - 1;
    if last < agent_start || line[last] != b'"' {
        return None;
    }
    if preset == Preset::Apache && find(agent_start, b'"') != Some(last) {
        return None;
    }
    fields[7] = Some(&line[size_end + 2..referer_end]);
    fields[8] = Some(&line[agent_start..last]);
    Some(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex::bytes::Regex;

    const SEEDS: &[&str] = &[
        r#"10.0.0.1 - frank [27/Nov/2026:10:00:00 +0000] "GET /api/v1/items?page=2 HTTP/1.1" 200 5123 "https://example.com/start" "Mozilla/5.0 (X11; Linux x86_64)""#,
        r#"10.0.0.1 - - [27/Nov/2026:10:00:00 +0000] "POST /login HTTP/1.0" 302 -"#,
        r#"::1 - - [27/Nov/2026:10:00:00 +0000] "-" 400 0 "-" "-""#,
        r#"10.0.0.1 - - [27/Nov/2026:10:00:00 +0000] "GET /a "quoted" HTTP/1.1" 200 1 "-" "a "b" c""#,
        r#"h i u [t] "M P V" c s "r" "a""#,
        r#" - - [] "M P V" 200 1 "" """#,
    ];

    /// What the regex gives, in the scanner's shape.
    fn by_regex(re: &Regex, line: &[u8]) -> Option<Vec<Option<Vec<u8>>>> {
        let caps = re.captures(line)?;
        Some(
            (1..=9)
                .map(|i| caps.get(i).map(|m| m.as_bytes().to_vec()))
                .collect(),
        )
    }

    fn owned(f: Fields<'_>) -> Vec<Option<Vec<u8>>> {
        f.iter().map(|v| v.map(<[u8]>::to_vec)).collect()
    }

    /// A small deterministic generator (xorshift), so a failure repeats.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    fn check(preset: Preset, pattern: &str) {
        let re = Regex::new(pattern).unwrap();
        // the characters every part of the regex turns on
        const ALPHABET: &[u8] = b" \"[]-aZ/\t\n\r\x0b.\xc3\xa9\x80";
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut fast, mut checked) = (0, 0);
        for seed in SEEDS {
            for _ in 0..20_000 {
                let mut line = seed.as_bytes().to_vec();
                for _ in 0..1 + rng.next(3) {
                    let at = rng.next(line.len() + 1);
                    let c = ALPHABET[rng.next(ALPHABET.len())];
                    match rng.next(3) {
                        0 => line.insert(at, c),
                        1 if at < line.len() => line[at] = c,
                        _ if at < line.len() => {
                            line.remove(at);
                        }
                        _ => {}
                    }
                }
                checked += 1;
                if let Some(f) = scan(&line, preset) {
                    fast += 1;
                    assert_eq!(
                        Some(owned(f)),
                        by_regex(&re, &line),
                        "{preset:?}: {:?}",
                        String::from_utf8_lossy(&line)
                    );
                }
            }
            // the seed itself, when it is of the simple shape
            if let Some(f) = scan(seed.as_bytes(), preset) {
                assert_eq!(Some(owned(f)), by_regex(&re, seed.as_bytes()), "{seed}");
            }
        }
        // the test must exercise the fast path, not only the fallback
        assert!(
            fast > checked / 10,
            "{fast} of {checked} read by the scanner"
        );
    }

    #[test]
    fn apache2_gives_what_its_regex_gives() {
        check(Preset::Apache2, super::super::formats::APACHE2);
    }

    #[test]
    fn apache_gives_what_its_regex_gives() {
        check(Preset::Apache, super::super::formats::APACHE);
    }

    #[test]
    fn the_usual_line_is_read_by_the_scanner() {
        let f = scan(SEEDS[0].as_bytes(), Preset::Apache2).unwrap();
        assert_eq!(f[0], Some(&b"10.0.0.1"[..]));
        assert_eq!(f[1], Some(&b"frank"[..]));
        assert_eq!(f[4], Some(&b"/api/v1/items?page=2"[..]));
        assert_eq!(f[8], Some(&b"Mozilla/5.0 (X11; Linux x86_64)"[..]));
        let short = scan(SEEDS[1].as_bytes(), Preset::Apache).unwrap();
        assert_eq!(short[6], Some(&b"-"[..]));
        assert_eq!(short[7], None);
        // a request of one word leaves the regex a choice: it decides
        assert!(scan(SEEDS[2].as_bytes(), Preset::Apache2).is_none());
    }
}
