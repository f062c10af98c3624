//! A line's text read back as words and named fields, each with whether it may differ between
//! two runs of one scenario.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::Field;

/// One whitespace-separated piece of a line's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token<'a> {
    /// A word that is not a named field (an event's name, a request's name, `4154B`).
    Word(&'a str),
    /// `name=value`: a field of the vocabulary ([`Field`]) or a name a writer chose (`bar0`).
    Named {
        /// The name as written.
        name: &'a str,
        /// The field it is, if it is one of the vocabulary's.
        field: Option<Field>,
        /// The value.
        value: &'a str,
    },
}

/// Why a token's value may differ between two runs of one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Varies {
    /// It is in a field whose values do ([`Field::varies`]).
    Field(Field),
    /// It is a MAC address.
    Mac,
    /// It is an IPv4 address.
    Ipv4,
    /// It is an IPv6 address (a GID).
    Ipv6,
    /// It is a PCI bus address (`0000:01:00.0`).
    Bus,
    /// It is a number of eight hex digits or more (`0x` first): a DMA or bus address.
    Address,
}

impl Varies {
    /// How a comparison writes a value that varies for this reason.
    pub fn placeholder(self) -> &'static str {
        match self {
            Varies::Field(_) => "…",
            Varies::Mac => "<mac>",
            Varies::Ipv4 => "<ipv4>",
            Varies::Ipv6 => "<gid>",
            Varies::Bus => "<bus>",
            Varies::Address => "<addr>",
        }
    }
}

impl<'a> Token<'a> {
    /// The token written `text` (no whitespace in it).
    pub fn read(text: &'a str) -> Token<'a> {
        match text.split_once('=') {
            Some((name, value)) if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') => {
                Token::Named { name, field: Field::from_name(name), value }
            }
            _ => Token::Word(text),
        }
    }

    /// The value: a field's, or the word itself.
    pub fn value(&self) -> &'a str {
        match self {
            Token::Word(w) => w,
            Token::Named { value, .. } => value,
        }
    }

    /// Whether, and why, the value may differ between two runs: by its field, else by its type
    /// (punctuation around a word, as in `(port 1)` or `a,`, is not part of it).
    pub fn varies(&self) -> Option<Varies> {
        if let Token::Named { field: Some(f), .. } = self
            && f.varies()
        {
            return Some(Varies::Field(*f));
        }
        kind_of(bare(self.value()))
    }

    /// The token as a comparison sees it: a value that varies is replaced by its placeholder.
    pub fn masked(&self) -> String {
        let Some(why) = self.varies() else { return self.to_string() };
        match self {
            Token::Named { name, .. } => format!("{name}={}", why.placeholder()),
            Token::Word(w) => {
                let inner = bare(w);
                let start = w.len() - w.trim_start_matches(OPENING).len();
                format!("{}{}{}", &w[..start], why.placeholder(), &w[start + inner.len()..])
            }
        }
    }
}

impl std::fmt::Display for Token<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Token::Word(w) => f.write_str(w),
            Token::Named { name, value, .. } => write!(f, "{name}={value}"),
        }
    }
}

/// The tokens of a line's text, in order.
pub fn tokens(text: &str) -> impl Iterator<Item = Token<'_>> {
    text.split_whitespace().map(Token::read)
}

const OPENING: &[char] = &['(', '[', '{', '<', '"', '\''];
const CLOSING: &[char] = &[')', ']', '}', '>', '"', '\'', ',', ';', ':', '.'];

/// `word` without the punctuation around it.
fn bare(word: &str) -> &str {
    let inner = word.trim_start_matches(OPENING);
    // A trailing `.` or `:` ends a sentence or a label, but an IPv6 address keeps its own (`fe80::`).
    if inner.parse::<Ipv6Addr>().is_ok() { inner } else { inner.trim_end_matches(CLOSING) }
}

/// What kind of run-specific value `value` is, if it is one.
fn kind_of(value: &str) -> Option<Varies> {
    if is_mac(value) {
        Some(Varies::Mac)
    } else if is_bus(value) {
        Some(Varies::Bus)
    } else if value.parse::<Ipv4Addr>().is_ok() {
        Some(Varies::Ipv4)
    } else if value.contains(':') && value.parse::<Ipv6Addr>().is_ok() {
        Some(Varies::Ipv6)
    } else if value.strip_prefix("0x").is_some_and(|h| h.len() >= 8 && h.bytes().all(|b| b.is_ascii_hexdigit())) {
        Some(Varies::Address)
    } else {
        None
    }
}

fn hex_groups(value: &str, sep: char, lens: &[usize]) -> bool {
    let groups: Vec<&str> = value.split(sep).collect();
    groups.len() == lens.len()
        && groups.iter().zip(lens).all(|(g, n)| g.len() == *n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `00:0a:f7:01:02:03`.
fn is_mac(value: &str) -> bool {
    hex_groups(value, ':', &[2; 6])
}

/// `0000:01:00.0`: domain, bus, device, function.
fn is_bus(value: &str) -> bool {
    let Some((head, function)) = value.rsplit_once('.') else { return false };
    hex_groups(head, ':', &[4, 2, 2]) && function.len() == 1 && function.bytes().all(|b| (b'0'..=b'7').contains(&b))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::a_varying_field("qp=1088", Some(Varies::Field(Field::Qp)), "qp=…")]
    #[case::a_steady_field("bytes=64", None, "bytes=64")]
    #[case::a_name_no_field_has("bar0=0xfe800000", Some(Varies::Address), "bar0=<addr>")]
    #[case::a_short_number("0x1234", None, "0x1234")]
    #[case::a_mac("00:0a:f7:01:02:03", Some(Varies::Mac), "<mac>")]
    #[case::a_bus_address_in_parentheses("(0000:81:00.0)", Some(Varies::Bus), "(<bus>)")]
    #[case::an_ipv4_ending_a_clause("10.1.2.3,", Some(Varies::Ipv4), "<ipv4>,")]
    #[case::a_gid("::ffff:10.1.2.3", Some(Varies::Ipv6), "<gid>")]
    #[case::an_ipv6_ending_in_a_colon("fe80::", Some(Varies::Ipv6), "<gid>")]
    #[case::a_duration("took=7ns", Some(Varies::Field(Field::Took)), "took=…")]
    #[case::a_word("SEND_ONLY", None, "SEND_ONLY")]
    #[case::a_yaml_mapping("{nic:", None, "{nic:")]
    #[case::an_equals_sign_alone("=5", None, "=5")]
    fn a_token_varies_by_its_field_or_its_type(
        #[case] text: &str,
        #[case] varies: Option<Varies>,
        #[case] masked: &str,
    ) {
        let t = Token::read(text);
        assert_eq!(t.varies(), varies, "{text}");
        assert_eq!(t.masked(), masked, "{text}");
        assert_eq!(t.to_string(), text);
    }

    #[test]
    fn a_line_reads_as_its_words_and_fields_in_order() {
        let t: Vec<Token<'_>> = tokens("pkt-out qp=7 ACKNOWLEDGE psn=40 62B aeth=ack").collect();
        assert_eq!(t[0], Token::Word("pkt-out"));
        assert_eq!(t[1], Token::Named { name: "qp", field: Some(Field::Qp), value: "7" });
        assert_eq!(t[5], Token::Named { name: "aeth", field: Some(Field::Aeth), value: "ack" });
        assert_eq!(t.len(), 6);
    }
}
