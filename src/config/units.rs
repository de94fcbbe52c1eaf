//! Human-friendly durations (`"500ms"`, `"10s"`, `"5m"`, `"1h"`, or a number
//! of seconds) and byte sizes (`"64KiB"`, `"16MiB"`, `"1GB"`, or a number of
//! bytes) in the configuration.

use std::time::Duration;

use serde::{de, Deserialize, Deserializer};

#[derive(Deserialize)]
#[serde(untagged)]
enum NumberOrText {
    Int(u64),
    Float(f64),
    Text(String),
}

/// Splits `"1.5 MiB"` into `(1.5, "MiB")`.
fn number_and_unit(s: &str) -> Option<(f64, &str)> {
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    Some((num.parse().ok()?, unit.trim()))
}

/// Parses `"250ms"`, `"10s"`, `"1.5m"`, `"2h"`, `"1d"`; a bare number is seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (n, unit) = number_and_unit(s).ok_or_else(|| {
        format!("invalid duration {s:?}: expected e.g. \"500ms\", \"10s\", \"5m\"")
    })?;
    let scale = match unit {
        "ns" => 1e-9,
        "us" => 1e-6,
        "ms" => 1e-3,
        "" | "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        u => {
            return Err(format!(
                "invalid duration unit {u:?} in {s:?} (use ms, s, m, h or d)"
            ))
        }
    };
    seconds(n * scale).map_err(|e| format!("{e} (in {s:?})"))
}

/// Longest duration accepted: timers past it are the same as never, and
/// adding them to the clock must not overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(3650 * 86400);

/// `secs` as a duration, if it is one we accept.
fn seconds(secs: f64) -> Result<Duration, String> {
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if d <= MAX_DURATION => Ok(d),
        Ok(_) | Err(_) if secs.is_finite() && secs >= 0.0 => Err(format!(
            "duration of {secs} seconds is too long: the most is 3650d (ten years)"
        )),
        _ => Err(format!(
            "invalid duration {secs}: expected e.g. \"500ms\", \"10s\", \"5m\""
        )),
    }
}

/// Parses `"64KiB"`, `"16MiB"`, `"1GiB"`, `"10MB"`, `"512k"`; a bare number is bytes.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (n, unit) = number_and_unit(s)
        .ok_or_else(|| format!("invalid size {s:?}: expected e.g. \"64KiB\", \"16MiB\""))?;
    let scale: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "ki" | "kib" => 1024.0,
        "mi" | "mib" => 1024.0 * 1024.0,
        "gi" | "gib" => 1024.0 * 1024.0 * 1024.0,
        u => {
            return Err(format!(
                "invalid size unit {u:?} in {s:?} (use KiB, MiB, GiB, KB, MB, GB)"
            ))
        }
    };
    let bytes = n * scale;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(format!("size {s:?} is too large"));
    }
    Ok(bytes as u64)
}

/// serde `deserialize_with` for durations.
pub fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    match NumberOrText::deserialize(d)? {
        NumberOrText::Int(n) => seconds(n as f64).map_err(de::Error::custom),
        NumberOrText::Float(f) if f < 0.0 => {
            Err(de::Error::custom(format!("negative duration {f}")))
        }
        NumberOrText::Float(f) => seconds(f).map_err(de::Error::custom),
        NumberOrText::Text(s) => parse_duration(&s).map_err(de::Error::custom),
    }
}

/// serde `deserialize_with` for optional durations.
pub fn opt_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    duration(d).map(Some)
}

/// serde `deserialize_with` for byte sizes.
pub fn bytes<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    let n = match NumberOrText::deserialize(d)? {
        NumberOrText::Int(n) => n,
        NumberOrText::Float(f) if f < 0.0 => {
            return Err(de::Error::custom(format!("negative size {f}")))
        }
        NumberOrText::Float(f) if f.is_finite() && f < u64::MAX as f64 => f as u64,
        NumberOrText::Float(f) => return Err(de::Error::custom(format!("size {f} is too large"))),
        NumberOrText::Text(s) => parse_bytes(&s).map_err(de::Error::custom)?,
    };
    usize::try_from(n).map_err(|_| de::Error::custom(format!("size {n} is too large")))
}

/// serde `deserialize_with` for optional byte sizes.
pub fn opt_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    bytes(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("1.5m"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert!(parse_duration("10 parsecs").is_err());
        assert!(parse_duration("fast").is_err());
    }

    #[test]
    fn huge_values_are_errors_not_panics() {
        let e = parse_duration("99999999999999999999d").unwrap_err();
        assert!(e.contains("too long"), "{e}");
        assert!(parse_duration("3651d").is_err());
        assert_eq!(parse_duration("3650d"), Ok(MAX_DURATION));
        let e = parse_duration("1e400").unwrap_err();
        assert!(e.contains("1e400"), "{e}");
        let toml: toml::Value = toml::from_str("d = 18446744073709551615.0").unwrap();
        assert!(duration(toml["d"].clone()).is_err());
        for (text, want) in [
            ("inf", "invalid duration inf"),
            ("nan", "invalid duration NaN"),
        ] {
            let v: toml::Value = toml::from_str(&format!("d = {text}")).unwrap();
            let e = duration(v["d"].clone()).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
            let e = bytes(v["d"].clone()).unwrap_err().to_string();
            assert!(e.contains("too large"), "{e}");
        }
        let e = parse_bytes("99999999999999999999GiB").unwrap_err();
        assert!(e.contains("too large"), "{e}");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("64KiB"), Ok(65536));
        assert_eq!(parse_bytes("16MiB"), Ok(16 << 20));
        assert_eq!(parse_bytes("1GB"), Ok(1_000_000_000));
        assert_eq!(parse_bytes("100"), Ok(100));
        assert!(parse_bytes("12 bananas").is_err());
    }
}
