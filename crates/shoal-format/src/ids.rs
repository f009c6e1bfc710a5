//! Point ids: an unsigned 64-bit integer or a UUID (`docs/format.md`, "Point ids").

use core::fmt;

/// A point's external id: `Num < Uuid`, numbers by value, UUIDs by their 16 bytes (the order
/// of their text) — Qdrant's order. `Num(5)` and any UUID are different points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PointId {
    /// An integer id, `0..=2^64-1`.
    Num(u64),
    /// A UUID, as its 16 bytes (big-endian: byte `i` is hex digits `2i, 2i+1` of its text).
    Uuid([u8; 16]),
}

impl From<u64> for PointId {
    fn from(id: u64) -> PointId {
        PointId::Num(id)
    }
}

impl PartialEq<u64> for PointId {
    fn eq(&self, other: &u64) -> bool {
        *self == PointId::Num(*other)
    }
}

impl PointId {
    /// The integer, for a `Num` id.
    pub fn as_num(self) -> Option<u64> {
        match self {
            PointId::Num(n) => Some(n),
            PointId::Uuid(_) => None,
        }
    }

    /// Parses a UUID in any form Qdrant accepts: 32 hex digits; 36 with `-` at 8, 13, 18, 23;
    /// that form in `{}`; that form after `urn:uuid:`. Hex digits in either case.
    pub fn parse_uuid(s: &str) -> Option<[u8; 16]> {
        let s = s.as_bytes();
        let s = match s.len() {
            45 => s.strip_prefix(b"urn:uuid:")?,
            38 => s.strip_prefix(b"{")?.strip_suffix(b"}")?,
            _ => s,
        };
        let mut digits = [0u8; 32];
        let mut n = 0;
        match s.len() {
            32 => {
                for &c in s {
                    digits[n] = hex(c)?;
                    n += 1;
                }
            }
            36 => {
                for (i, &c) in s.iter().enumerate() {
                    if matches!(i, 8 | 13 | 18 | 23) {
                        if c != b'-' {
                            return None;
                        }
                    } else {
                        digits[n] = hex(c)?;
                        n += 1;
                    }
                }
            }
            _ => return None,
        }
        let mut out = [0u8; 16];
        for (i, b) in out.iter_mut().enumerate() {
            *b = digits[2 * i] << 4 | digits[2 * i + 1];
        }
        Some(out)
    }

    /// The canonical text of a UUID: 36 characters, lowercase, hyphenated.
    pub fn uuid_text(u: &[u8; 16]) -> [u8; 36] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = [b'-'; 36];
        let mut at = 0;
        for (i, &b) in u.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                at += 1;
            }
            out[at] = HEX[(b >> 4) as usize];
            out[at + 1] = HEX[(b & 15) as usize];
            at += 2;
        }
        out
    }

    /// Parses an id in a URL path as Qdrant does: as a `u64` first (Rust's integer syntax: an
    /// optional `+`, decimal digits, leading zeros allowed), then as a UUID.
    pub fn parse_path(s: &str) -> Option<PointId> {
        match s.parse::<u64>() {
            Ok(n) => Some(PointId::Num(n)),
            Err(_) => PointId::parse_uuid(s).map(PointId::Uuid),
        }
    }
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl fmt::Display for PointId {
    /// A number in decimal; a UUID in its canonical text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PointId::Num(n) => write!(f, "{n}"),
            PointId::Uuid(u) => {
                let text = PointId::uuid_text(u);
                // The text is ASCII hex digits and hyphens.
                f.write_str(core::str::from_utf8(&text).unwrap_or(""))
            }
        }
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for PointId {
    /// A JSON number for an integer, the canonical text for a UUID.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PointId::Num(n) => s.serialize_u64(*n),
            PointId::Uuid(u) => s.serialize_str(core::str::from_utf8(&PointId::uuid_text(u)).unwrap_or("")),
        }
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for PointId {
    /// An unsigned integer, or a string holding a UUID in any form [`PointId::parse_uuid`] reads.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<PointId, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = PointId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an unsigned integer or a UUID string")
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<PointId, E> {
                Ok(PointId::Num(n))
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<PointId, E> {
                u64::try_from(n).map(PointId::Num).map_err(|_| E::custom("a point id cannot be negative"))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<PointId, E> {
                PointId::parse_uuid(s).map(PointId::Uuid).ok_or_else(|| E::custom("a string point id must be a UUID"))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    const CANON: &str = "550e8400-e29b-41d4-a716-446655440000";

    #[test]
    fn every_accepted_form_reads_the_same_bytes_and_prints_canonically() {
        let want = PointId::parse_uuid(CANON).unwrap();
        assert_eq!(want[0], 0x55);
        assert_eq!(want[15], 0x00);
        for form in [
            CANON,
            "550E8400-E29B-41D4-A716-446655440000",
            "550e8400e29b41d4a716446655440000",
            "{550e8400-e29b-41d4-a716-446655440000}",
            "urn:uuid:550e8400-e29b-41d4-a716-446655440000",
        ] {
            assert_eq!(PointId::parse_uuid(form), Some(want), "{form}");
        }
        assert_eq!(PointId::Uuid(want).to_string(), CANON);
    }

    #[test]
    fn near_misses_are_refused() {
        for bad in [
            "",
            "550e8400-e29b-41d4-a716-44665544000",
            "550e8400-e29b-41d4-a716-4466554400000",
            "550e8400_e29b-41d4-a716-446655440000",
            "550e8400e29b-41d4-a716-446655440000-",
            "550e8400-e29b-41d4-a716-44665544000g",
            " 550e8400-e29b-41d4-a716-446655440000",
            "{550e8400-e29b-41d4-a716-446655440000",
            "URN:UUID:550e8400-e29b-41d4-a716-446655440000",
            "urn:uuid:550e8400e29b41d4a716446655440000",
            "{550e8400e29b41d4a716446655440000}",
            "550e8400-e29b41d4-a716-4466-55440000",
        ] {
            assert_eq!(PointId::parse_uuid(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn nil_and_max_round_trip() {
        for u in [[0u8; 16], [0xff; 16]] {
            let text = PointId::Uuid(u).to_string();
            assert_eq!(PointId::parse_uuid(&text), Some(u));
        }
        assert_eq!(PointId::Uuid([0; 16]).to_string(), "00000000-0000-0000-0000-000000000000");
    }

    #[test]
    fn order_is_numbers_then_uuids_by_bytes() {
        let u = |s: &str| PointId::Uuid(PointId::parse_uuid(s).unwrap());
        let mut ids = [
            u("ffffffff-ffff-ffff-ffff-ffffffffffff"),
            PointId::Num(u64::MAX),
            u("00000000-0000-0000-0000-000000000001"),
            PointId::Num(0),
            u("10000000-0000-0000-0000-000000000000"),
            PointId::Num(7),
        ];
        ids.sort();
        assert_eq!(
            ids.map(|i| i.to_string()),
            [
                "0",
                "7",
                "18446744073709551615",
                "00000000-0000-0000-0000-000000000001",
                "10000000-0000-0000-0000-000000000000",
                "ffffffff-ffff-ffff-ffff-ffffffffffff",
            ]
        );
    }

    #[test]
    fn path_ids_try_a_number_first() {
        assert_eq!(PointId::parse_path("42"), Some(PointId::Num(42)));
        assert_eq!(PointId::parse_path("18446744073709551615"), Some(PointId::Num(u64::MAX)));
        assert_eq!(PointId::parse_path("18446744073709551616"), None);
        assert_eq!(PointId::parse_path("+42"), Some(PointId::Num(42)));
        assert_eq!(PointId::parse_path("-1"), None);
        // 32 decimal digits are a number first, as in Qdrant (`u64::from_str` before a UUID).
        assert_eq!(PointId::parse_path("00000000000000000000000000000042"), Some(PointId::Num(42)));
        assert_eq!(PointId::parse_path("0000000000000000000000000000004a"), {
            let mut u = [0u8; 16];
            u[15] = 0x4a;
            Some(PointId::Uuid(u))
        });
        assert_eq!(PointId::parse_path(CANON), PointId::parse_uuid(CANON).map(PointId::Uuid));
    }
}
