//! Scalar values of the scenario language: durations, addresses, names.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

/// The longest duration a scenario may name (a `wait` this long on real hardware is a mistake).
pub const MAX_DURATION: Duration = Duration::from_secs(3600);

/// Parse `300ms`, `2s`, `1.5s`, `40s`, `2m`, `250us`, `10ns`, `1h`: a decimal number and a unit,
/// at most [`MAX_DURATION`], exact to the nanosecond.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let nanos_per_unit: u128 = match unit.trim() {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "" => return Err("a duration needs a unit (ns, us, ms, s, m or h)".into()),
        other => return Err(format!("unknown unit `{other}` (use ns, us, ms, s, m or h)")),
    };
    let (whole, fraction) = match number.split_once('.') {
        Some((w, f)) => (w, f),
        None => (number, ""),
    };
    if whole.is_empty() || (number.contains('.') && fraction.is_empty()) {
        return Err("expected a number before the unit".into());
    }
    let too_long = || format!("longer than the {}s a scenario may name", MAX_DURATION.as_secs());
    let whole: u128 = whole.parse().map_err(|_| too_long())?;
    let mut nanos = whole.checked_mul(nanos_per_unit).ok_or_else(too_long)?;
    let mut scale = nanos_per_unit;
    for digit in fraction.chars() {
        let d = u128::from(digit.to_digit(10).ok_or("expected a number before the unit")?);
        if !scale.is_multiple_of(10) {
            return Err("more precise than a nanosecond".into());
        }
        scale /= 10;
        nanos += d * scale;
    }
    if nanos > MAX_DURATION.as_nanos() {
        return Err(too_long());
    }
    Ok(Duration::from_nanos(nanos as u64))
}

/// Write a duration the way scenarios do (`300ms`, `1.5s`, `40s`, `2.70224s`), exactly.
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    let (unit, per) = if ns >= 1_000_000_000 || ns == 0 {
        ("s", 1_000_000_000)
    } else if ns >= 1_000_000 {
        ("ms", 1_000_000)
    } else if ns >= 1_000 {
        ("us", 1_000)
    } else {
        ("ns", 1)
    };
    let (whole, fraction) = (ns / per, ns % per);
    if fraction == 0 {
        return format!("{whole}{unit}");
    }
    let digits = per.ilog10() as usize;
    let fraction = format!("{fraction:0digits$}");
    format!("{whole}.{}{unit}", fraction.trim_end_matches('0'))
}

/// The largest size a scenario may name: a message is at most 2^31 bytes (the contract), so a
/// region needs at most twice that; more is a mistake on a test machine, where the runner may
/// run scenarios side by side (`--jobs`) and every region is real memory.
pub const MAX_SIZE: u64 = 1 << 32;

/// Parse a size: a whole number of bytes (`4096`) or a number with a binary suffix
/// (`4KiB`, `2MiB`, `1.5MiB`, `1GiB`), exact to the byte, at most [`MAX_SIZE`].
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let per: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        decimal @ ("k" | "K" | "kB" | "KB" | "M" | "MB" | "G" | "GB") => {
            let binary = match decimal.chars().next() {
                Some('k' | 'K') => "KiB",
                Some('M') => "MiB",
                _ => "GiB",
            };
            return Err(format!("write `{binary}` for a power of two (`{decimal}` is ambiguous)"));
        }
        other => return Err(format!("unknown unit `{other}` (use KiB, MiB or GiB, or none for bytes)")),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() || (number.contains('.') && fraction.is_empty()) {
        return Err("expected a number, as 4096, 64KiB or 1.5MiB".into());
    }
    let too_large = || format!("larger than the {} GiB a scenario may name", MAX_SIZE >> 30);
    let whole: u64 = whole.parse().map_err(|_| too_large())?;
    let mut bytes = u128::from(whole) * u128::from(per);
    // The fraction of a unit, exact or refused.
    let mut numerator: u128 = 0;
    let mut denominator: u128 = 1;
    for digit in fraction.chars() {
        numerator =
            numerator * 10 + u128::from(digit.to_digit(10).ok_or("expected a number, as 4096, 64KiB or 1.5MiB")?);
        denominator *= 10;
        if denominator > 1 << 40 {
            return Err("too many digits after the point".into());
        }
    }
    let part = numerator * u128::from(per);
    if !part.is_multiple_of(denominator) {
        return Err("not a whole number of bytes".into());
    }
    bytes += part / denominator;
    if bytes > u128::from(MAX_SIZE) {
        return Err(too_large());
    }
    Ok(bytes as u64)
}

/// Write a size the way scenarios do: with the largest binary suffix that keeps it whole
/// (`2MiB`, `4097`, `64KiB`).
pub fn format_size(bytes: u64) -> String {
    for (per, unit) in [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")] {
        if bytes >= per && bytes.is_multiple_of(per) {
            return format!("{}{unit}", bytes / per);
        }
    }
    bytes.to_string()
}

/// Check a PCI bus address as Linux writes it: `DDDD:BB:DD.F`, hexadecimal
/// ([`bnxt::sysfs::parse_bus_address`]).
pub fn parse_bus(text: &str) -> Result<(), String> {
    bnxt::sysfs::parse_bus_address(text).map(|_| ()).ok_or_else(|| "not of the form DDDD:BB:DD.F (hexadecimal)".into())
}

/// Parse a MAC address written `02:00:00:00:00:01` (or with `-`).
pub fn parse_mac(text: &str) -> Result<[u8; 6], String> {
    let parts: Vec<&str> = text.split([':', '-']).collect();
    if parts.len() != 6 {
        return Err("a MAC address has six bytes, as 02:00:00:00:00:01".into());
    }
    let mut mac = [0u8; 6];
    for (byte, part) in mac.iter_mut().zip(&parts) {
        if part.len() != 2 {
            return Err("each byte is two hex digits".into());
        }
        *byte = u8::from_str_radix(part, 16).map_err(|_| "each byte is two hex digits".to_string())?;
    }
    Ok(mac)
}

/// Write a MAC address as `02:00:00:00:00:01`.
pub fn format_mac(mac: &[u8; 6]) -> String {
    mac.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// Parse an IPv4 address.
pub fn parse_ipv4(text: &str) -> Result<Ipv4Addr, String> {
    text.parse().map_err(|_| "an IPv4 address is written as 10.0.0.1".to_string())
}

/// Parse a GID written as an IPv6 address (`::ffff:10.0.0.1`).
pub fn parse_gid(text: &str) -> Result<[u8; 16], String> {
    text.parse::<Ipv6Addr>()
        .map(|a| a.octets())
        .map_err(|_| "a GID is written as an IPv6 address, as ::ffff:10.0.0.1".to_string())
}

/// Write a GID as an IPv6 address.
pub fn format_gid(gid: &[u8; 16]) -> String {
    let a = Ipv6Addr::from(*gid);
    match a.to_ipv4_mapped() {
        Some(v4) => format!("::ffff:{v4}"),
        None => a.to_string(),
    }
}

/// Whether `name` is a valid scenario name: letters, digits, `-`, `_`, `.`, starting with a
/// letter or digit, at most 100 characters.
pub fn check_scenario_name(name: &str) -> Result<(), String> {
    let ok_first = name.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
    if !ok_first || name.len() > 100 || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
        return Err("use letters, digits, `-`, `_` and `.`, starting with a letter or digit (at most 100)".into());
    }
    Ok(())
}

/// Whether `alias` is a valid alias or tag: letters, digits, `-` and `_`, starting with a
/// letter, at most 40 characters.
pub fn check_word(alias: &str) -> Result<(), String> {
    let ok_first = alias.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
    if !ok_first || alias.len() > 40 || !alias.chars().all(|c| c.is_ascii_alphanumeric() || "-_".contains(c)) {
        return Err("use letters, digits, `-` and `_`, starting with a letter (at most 40)".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_exactly() {
        assert_eq!(parse_duration("300ms"), Ok(Duration::from_millis(300)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("40s"), Ok(Duration::from_secs(40)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("0.001ms"), Ok(Duration::from_micros(1)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
    }

    #[test]
    fn bad_durations_say_why() {
        assert!(parse_duration("300").unwrap_err().contains("unit"));
        assert!(parse_duration("3 parsecs").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("ms").unwrap_err().contains("number"));
        assert!(parse_duration("1.s").unwrap_err().contains("number"));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("1.2.3s").is_err());
        assert!(parse_duration("0.5ns").unwrap_err().contains("nanosecond"));
        assert!(parse_duration("2h").unwrap_err().contains("longer"));
        assert!(parse_duration("99999999999999999999999999999999999999999s").unwrap_err().contains("longer"));
    }

    #[test]
    fn durations_print_as_written() {
        for text in ["300ms", "2s", "1.5s", "250us", "10ns", "2.70224s", "701.32ms", "0s"] {
            assert_eq!(format_duration(parse_duration(text).unwrap()), text);
        }
    }

    #[test]
    fn sizes_parse_exactly_and_print_back() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("1"), Ok(1));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("2MiB"), Ok(2 << 20));
        assert_eq!(parse_size("1.5MiB"), Ok(3 << 19));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("64 MiB"), Ok(64 << 20));
    }

    #[rstest::rstest]
    #[case("2MiB", "2MiB")]
    #[case("4097", "4097")]
    #[case("65536", "64KiB")]
    #[case("1536KiB", "1536KiB")]
    #[case("0", "0")]
    fn a_size_is_written_back_in_its_largest_whole_unit(#[case] text: &str, #[case] back: &str) {
        assert_eq!(format_size(parse_size(text).unwrap()), back);
    }

    #[test]
    fn bad_sizes_say_why() {
        assert!(parse_size("4MB").unwrap_err().contains("`MiB`"));
        assert!(parse_size("4k").unwrap_err().contains("`KiB`"));
        assert!(parse_size("4 parsecs").unwrap_err().contains("unknown unit"));
        assert!(parse_size("MiB").unwrap_err().contains("expected a number"));
        assert!(parse_size("1.MiB").unwrap_err().contains("expected a number"));
        assert!(parse_size("0.3KiB").unwrap_err().contains("whole number of bytes"));
        assert!(parse_size("17GiB").unwrap_err().contains("larger"));
        assert!(parse_size("99999999999999999999999").unwrap_err().contains("larger"));
        assert!(parse_size("-1").is_err());
    }

    #[test]
    fn addresses_parse_and_print() {
        assert_eq!(parse_mac("02:00:0a:0B:0c:01"), Ok([2, 0, 10, 11, 12, 1]));
        assert!(parse_mac("02:00:0a:0b:0c").is_err());
        assert!(parse_mac("02:00:0a:0b:0c:1").is_err());
        assert_eq!(format_mac(&[2, 0, 10, 11, 12, 1]), "02:00:0a:0b:0c:01");
        let gid = parse_gid("::ffff:10.11.12.1").unwrap();
        assert_eq!(format_gid(&gid), "::ffff:10.11.12.1");
        assert!(parse_ipv4("10.1.2").is_err());
    }

    #[test]
    fn names_and_words() {
        assert!(check_scenario_name("firmware-never-answers-registration").is_ok());
        assert!(check_scenario_name("-x").is_err());
        assert!(check_scenario_name("a b").is_err());
        assert!(check_word("a").is_ok());
        assert!(check_word("nic_0").is_ok());
        assert!(check_word("0").is_err());
        assert!(check_word("").is_err());
    }
}
