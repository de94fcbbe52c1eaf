//! `format = "csv"`: one line of comma-separated values (RFC 4180
//! quoting) into the fields named by `columns`.

use crate::protocol::msgpack::write;

/// Writes the line's values under `columns` as a map of strings into
/// `out` (empty); `None` if it does not parse: a value count other than
/// the number of columns, an unclosed quote, or text after a closing
/// quote.
///
/// A value in double quotes may hold commas, newlines and `""` (one
/// quote); outside quotes a value is taken as it is, spaces included.
pub(super) fn parse(text: &[u8], columns: &[String], out: &mut Vec<u8>) -> Option<usize> {
    let text = text.strip_suffix(b"\r").unwrap_or(text);
    let mut values: Vec<std::borrow::Cow<'_, [u8]>> = Vec::with_capacity(columns.len());
    let mut i = 0;
    loop {
        if values.len() == columns.len() {
            // one value too many
            return None;
        }
        if text.get(i) == Some(&b'"') {
            let mut value = Vec::new();
            i += 1;
            loop {
                match text.get(i)? {
                    b'"' if text.get(i + 1) == Some(&b'"') => {
                        value.push(b'"');
                        i += 2;
                    }
                    b'"' => {
                        i += 1;
                        break;
                    }
                    c => {
                        value.push(*c);
                        i += 1;
                    }
                }
            }
            values.push(value.into());
            match text.get(i) {
                None => break,
                Some(b',') => i += 1,
                Some(_) => return None,
            }
        } else {
            let end = memchr::memchr(b',', &text[i..]).map_or(text.len(), |e| i + e);
            values.push(text[i..end].into());
            if end == text.len() {
                break;
            }
            i = end + 1;
        }
    }
    if values.len() != columns.len() {
        return None;
    }
    write::map_len(out, columns.len());
    for (name, value) in columns.iter().zip(&values) {
        write::str(out, name.as_bytes());
        write::str(out, value);
    }
    Some(columns.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::msgpack::{Reader, Value};

    fn cols(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    fn strings(text: &[u8], columns: &[&str]) -> Option<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        let n = parse(text, &cols(columns), &mut out)?;
        let mut r = Reader::new(&out);
        assert_eq!(r.read_map_len().unwrap(), n);
        let mut values = Vec::new();
        for _ in 0..n {
            r.skip().unwrap();
            match r.read().unwrap() {
                Value::Str(v) => values.push(v.to_vec()),
                v => panic!("{v:?}"),
            }
        }
        Some(values)
    }

    #[test]
    fn plain_quoted_and_escaped_values() {
        let got = strings(br#"1,"a, b","say ""hi""",,x y"#, &["n", "s", "q", "e", "w"]).unwrap();
        let want: Vec<&[u8]> = vec![b"1", b"a, b", br#"say "hi""#, b"", b"x y"];
        assert_eq!(got, want);
        // an empty quoted value, a trailing empty value, CRLF
        let got = strings(b"\"\",\r", &["a", "b"]).unwrap();
        assert_eq!(got, vec![b"".to_vec(), b"".to_vec()]);
        // a quoted value may hold a newline
        let got = strings(b"\"l1\nl2\",z", &["a", "b"]).unwrap();
        assert_eq!(got[0], b"l1\nl2");
    }

    #[test]
    fn a_wrong_count_or_bad_quotes_do_not_parse() {
        let c = ["a", "b", "c"];
        for line in [
            &b"1,2"[..],
            b"1,2,3,4",
            b"1,2,3,",
            b"",
            b"1,\"2,3",
            b"1,\"2\"x,3",
            b"\"",
        ] {
            assert_eq!(
                strings(line, &c),
                None,
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
        // one column takes the whole line, commas outside quotes excepted
        assert_eq!(strings(b"a b", &["x"]), Some(vec![b"a b".to_vec()]));
    }

    #[test]
    fn non_utf8_bytes_and_huge_values_are_kept() {
        let huge = vec![b'x'; 1 << 20];
        let mut line = b"\xff\xfe,".to_vec();
        line.extend_from_slice(&huge);
        let got = strings(&line, &["bin", "big"]).unwrap();
        assert_eq!(got[0], b"\xff\xfe");
        assert_eq!(got[1].len(), 1 << 20);
    }
}
