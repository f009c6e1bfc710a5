//! A reader for the header of NumPy `.npy` files (format versions 1.0, 2.0 and 3.0).
//!
//! Only what `shoal build` accepts is accepted: a 2-D, C-order (row-major), little-endian
//! `float32` array. Everything else is rejected with a message that says what was found.
//! The header is a Python dict literal; it is parsed here by a small recursive-descent parser
//! (no `eval`, no allocation proportional to anything but the header).
//!
//! ```
//! let mut file = b"\x93NUMPY\x01\x00".to_vec();
//! let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }";
//! let header = format!("{dict:<117}\n"); // 10 + 118 = 128 bytes before the data
//! file.extend_from_slice(&(header.len() as u16).to_le_bytes());
//! file.extend_from_slice(header.as_bytes());
//! let h = shoal_host::npy::parse_header(&file).unwrap();
//! assert_eq!((h.rows, h.dim, h.data_offset), (3, 2, 128));
//! ```

/// The part of an `.npy` header `shoal build` needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NpyHeader {
    /// Number of rows (`shape[0]`).
    pub rows: usize,
    /// Vector dimension (`shape[1]`).
    pub dim: usize,
    /// Byte offset of the first element.
    pub data_offset: usize,
}

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Parses and checks the header at the start of `file`.
///
/// The error is a sentence for the user (the caller adds the file name).
pub fn parse_header(file: &[u8]) -> Result<NpyHeader, String> {
    parse_header_of(file, &["<f4"]).map(|(h, _)| h)
}

/// [`parse_header`] for a 2-D array of one of `dtypes` (numpy's `descr` strings, e.g. `"<i4"`);
/// returns the header and the array's dtype.
pub fn parse_header_of(file: &[u8], dtypes: &[&'static str]) -> Result<(NpyHeader, &'static str), String> {
    if file.len() < 8 || &file[..6] != MAGIC {
        return Err("not an .npy file (missing the \\x93NUMPY magic)".into());
    }
    let (major, minor) = (file[6], file[7]);
    let (len_size, utf8) = match major {
        1 => (2, false),
        2 => (4, false),
        3 => (4, true),
        _ => {
            return Err(format!("unsupported .npy format version {major}.{minor} (supported: 1, 2, 3)"));
        }
    };
    let start = 8 + len_size;
    if file.len() < start {
        return Err("truncated .npy header".into());
    }
    let header_len = if len_size == 2 {
        u16::from_le_bytes([file[8], file[9]]) as usize
    } else {
        u32::from_le_bytes([file[8], file[9], file[10], file[11]]) as usize
    };
    let data_offset = start
        .checked_add(header_len)
        .filter(|&end| end <= file.len())
        .ok_or_else(|| format!("truncated .npy header: it declares {header_len} bytes, the file is shorter"))?;
    let text = &file[start..data_offset];
    let text = if utf8 {
        std::str::from_utf8(text).map_err(|_| "the .npy header is not valid UTF-8".to_string())?
    } else {
        // Versions 1 and 2 use latin-1; every header numpy writes for a plain dtype is ASCII.
        if !text.is_ascii() {
            return Err("the .npy header holds non-ASCII bytes".into());
        }
        std::str::from_utf8(text).expect("ASCII is UTF-8")
    };
    let dict = Parser { s: text.as_bytes(), at: 0 }.dict()?;
    check(&dict, data_offset, dtypes)
}

/// A value of the header dict.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Str(String),
    Bool(bool),
    Int(u64),
    Tuple(Vec<u64>),
}

fn check(
    dict: &[(String, Value)],
    data_offset: usize,
    dtypes: &[&'static str],
) -> Result<(NpyHeader, &'static str), String> {
    let get = |key: &str| dict.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    if let Some((k, _)) = dict.iter().find(|(k, _)| !matches!(k.as_str(), "descr" | "fortran_order" | "shape")) {
        return Err(format!("unexpected key '{k}' in the .npy header"));
    }
    let wanted = || {
        if dtypes == ["<f4"] {
            "only little-endian float32 ('<f4') is supported (convert with numpy: a.astype('<f4'))".to_string()
        } else {
            format!("expected one of {}", dtypes.iter().map(|d| format!("'{d}'")).collect::<Vec<_>>().join(", "))
        }
    };
    let dtype = match get("descr") {
        Some(Value::Str(d)) => match dtypes.iter().find(|&&t| t == d) {
            Some(&t) => t,
            None => return Err(format!("unsupported dtype '{d}': {}", wanted())),
        },
        Some(_) => return Err(format!("unsupported dtype: {}", wanted())),
        None => return Err("the .npy header has no 'descr'".into()),
    };
    match get("fortran_order") {
        Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => {
            return Err("Fortran-order (column-major) arrays are not supported: save a C-order copy \
                        (numpy.ascontiguousarray)"
                .into());
        }
        Some(_) => return Err("'fortran_order' in the .npy header is not a boolean".into()),
        None => return Err("the .npy header has no 'fortran_order'".into()),
    }
    let shape = match get("shape") {
        Some(Value::Tuple(s)) => s,
        Some(_) => return Err("'shape' in the .npy header is not a tuple".into()),
        None => return Err("the .npy header has no 'shape'".into()),
    };
    let &[rows, dim] = shape.as_slice() else {
        let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
        return Err(format!("expected a 2-D array (rows, dim), got shape ({})", dims.join(", ")));
    };
    let (Ok(rows), Ok(dim)) = (usize::try_from(rows), usize::try_from(dim)) else {
        return Err("the array shape does not fit in memory".into());
    };
    Ok((NpyHeader { rows, dim, data_offset }, dtype))
}

/// Recursive-descent parser for the Python literals numpy writes in headers.
struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn err(&self, what: &str) -> String {
        format!("cannot parse the .npy header at byte {}: {what}", self.at)
    }

    fn skip_ws(&mut self) {
        while self.at < self.s.len() && self.s[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.at).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.err(&format!("expected '{}'", c as char)))
        }
    }

    fn dict(mut self) -> Result<Vec<(String, Value)>, String> {
        self.expect(b'{')?;
        let mut out: Vec<(String, Value)> = Vec::new();
        loop {
            if self.peek() == Some(b'}') {
                self.at += 1;
                break;
            }
            let key = match self.value()? {
                Value::Str(k) => k,
                _ => return Err(self.err("dict keys must be strings")),
            };
            if out.iter().any(|(k, _)| *k == key) {
                return Err(self.err(&format!("key '{key}' appears twice")));
            }
            self.expect(b':')?;
            let value = self.value()?;
            out.push((key, value));
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {}
                _ => return Err(self.err("expected ',' or '}'")),
            }
        }
        self.skip_ws();
        if self.at != self.s.len() {
            return Err(self.err("unexpected bytes after the dict"));
        }
        Ok(out)
    }

    fn value(&mut self) -> Result<Value, String> {
        match self.peek() {
            Some(q @ (b'\'' | b'"')) => {
                self.at += 1;
                let start = self.at;
                while self.at < self.s.len() && self.s[self.at] != q {
                    if self.s[self.at] == b'\\' {
                        return Err(self.err("escapes in strings are not supported"));
                    }
                    self.at += 1;
                }
                if self.at == self.s.len() {
                    return Err(self.err("unterminated string"));
                }
                let text = String::from_utf8_lossy(&self.s[start..self.at]).into_owned();
                self.at += 1;
                Ok(Value::Str(text))
            }
            Some(b'(') => {
                self.at += 1;
                let mut items = Vec::new();
                loop {
                    if self.peek() == Some(b')') {
                        self.at += 1;
                        break;
                    }
                    items.push(self.int()?);
                    match self.peek() {
                        Some(b',') => self.at += 1,
                        Some(b')') => {}
                        _ => return Err(self.err("expected ',' or ')' in a tuple")),
                    }
                }
                Ok(Value::Tuple(items))
            }
            Some(b'0'..=b'9') => Ok(Value::Int(self.int()?)),
            Some(_) if self.s[self.at..].starts_with(b"True") => {
                self.at += 4;
                Ok(Value::Bool(true))
            }
            Some(_) if self.s[self.at..].starts_with(b"False") => {
                self.at += 5;
                Ok(Value::Bool(false))
            }
            _ => Err(self.err("unsupported value (expected a string, a boolean, an integer or a tuple)")),
        }
    }

    /// A non-negative integer, with the `L` suffix Python 2 wrote for longs.
    fn int(&mut self) -> Result<u64, String> {
        self.skip_ws();
        let start = self.at;
        let mut n: u64 = 0;
        while let Some(&c @ b'0'..=b'9') = self.s.get(self.at) {
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(u64::from(c - b'0')))
                .ok_or_else(|| self.err("integer too large"))?;
            self.at += 1;
        }
        if self.at == start {
            return Err(self.err("expected a non-negative integer"));
        }
        if self.s.get(self.at) == Some(&b'L') {
            self.at += 1;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(version: u8, dict: &str) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[version, 0]);
        let len_size = if version == 1 { 2 } else { 4 };
        let mut header = dict.to_string();
        while !(8 + len_size + header.len() + 1).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        if version == 1 {
            out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        } else {
            out.extend_from_slice(&(header.len() as u32).to_le_bytes());
        }
        out.extend_from_slice(header.as_bytes());
        out
    }

    const OK: &str = "{'descr': '<f4', 'fortran_order': False, 'shape': (400000, 50), }";

    #[test]
    fn accepts_every_version() {
        for v in 1..=3 {
            let f = file(v, OK);
            let h = parse_header(&f).unwrap();
            assert_eq!(h, NpyHeader { rows: 400000, dim: 50, data_offset: f.len() });
        }
        let f = file(1, "{\"shape\":(3L,4L),\"fortran_order\":False,\"descr\":\"<f4\"}");
        assert_eq!(parse_header(&f).unwrap().dim, 4);
    }

    #[test]
    fn rejects_what_build_cannot_read() {
        let cases = [
            ("{'descr': '<f8', 'fortran_order': False, 'shape': (4, 5), }", "'<f8'"),
            ("{'descr': '>f4', 'fortran_order': False, 'shape': (4, 5), }", "'>f4'"),
            ("{'descr': '<f4', 'fortran_order': True, 'shape': (4, 5), }", "Fortran"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (20,), }", "2-D"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 5), }", "2-D"),
            ("{'descr': '<f4', 'fortran_order': False, }", "no 'shape'"),
            ("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,5)}", "unsupported value"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 5), 'x': 1}", "'x'"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 5)", "expected"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 5)}", "too large"),
        ];
        for (dict, needle) in cases {
            let err = parse_header(&file(1, dict)).unwrap_err();
            assert!(err.contains(needle), "{dict}: {err}");
        }
        assert!(parse_header(b"PK\x03\x04").unwrap_err().contains("magic"));
        assert!(parse_header(&file(4, OK)).unwrap_err().contains("version 4"));
        let f = file(1, OK);
        assert!(parse_header(&f[..40]).unwrap_err().contains("truncated"));
    }

    #[test]
    fn never_panics_on_prefixes_or_flips() {
        let f = file(2, OK);
        for n in 0..f.len() {
            let _ = parse_header(&f[..n]);
        }
        for i in 0..f.len() {
            for bit in 0..8 {
                let mut g = f.clone();
                g[i] ^= 1 << bit;
                let _ = parse_header(&g);
            }
        }
    }
}
