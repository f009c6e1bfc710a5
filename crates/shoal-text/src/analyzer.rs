//! Text analysis: the same tokens at index and query time, on every target.
//!
//! Steps, in order:
//! 1. **Segmentation** into words by Unicode word boundaries (UAX #29, `unicode-segmentation`).
//!    Segments without a letter or digit (spaces, punctuation) are dropped.
//! 2. **CJK runs**: adjacent segments made only of Han, Hiragana, Katakana or Hangul characters
//!    form a run, indexed as overlapping character bigrams (`東京都` → `東京`, `京都`); a run of one
//!    character is indexed as that character.
//! 3. **Lowercasing** as `char::to_lowercase` (full Unicode case mapping), from a compact table
//!    of the same mapping (`case.rs`).
//! 4. **Accent folding** (optional, on by default) by a fixed table, no NFKD: Latin-1
//!    Supplement and Latin Extended-A letters map to ASCII (`é` → `e`, `ß` → `ss`, `æ` → `ae`,
//!    `ł` → `l`, `þ` → `th`), combining marks U+0300–U+036F are dropped (so decomposed input
//!    folds the same way) and fullwidth ASCII letters and digits map to ASCII. Apostrophes
//!    (U+0027, U+2019, U+02BC) are dropped inside words (`don't` → `dont`).
//! 5. **Stop words** (optional, off by default): the 33 English words of Lucene's classic list.
//! 6. **Stemming** (optional, off by default): Snowball's English stemmer (Porter2, from the
//!    `snowstem` crate) on every token but CJK bigrams, after the stop-word check
//!    (`running` → `run`, `generously` → `generous`). Stemmed terms go in the dictionary, and
//!    queries are stemmed alike, so `"runs"` finds `running`.
//!
//! Every token gets a position, counting from 0; stop words and tokens longer than
//! `max_token_bytes` are not indexed but still take a position, so phrases keep their gaps.
//! Only integer and `char` operations are used: the output is the same on every target.
//!
//! ```
//! use shoal_text::Analyzer;
//! let a = Analyzer::default();
//! let toks: Vec<(String, u32)> = a.tokens("Crème Brûlée, don't!").into_iter().map(|t| (t.text, t.position)).collect();
//! assert_eq!(toks, [("creme".to_string(), 0), ("brulee".to_string(), 1), ("dont".to_string(), 2)]);
//! ```

use alloc::string::String;
use alloc::vec::Vec;

use snowstem::{Algorithm, Stemmer};

use crate::case::lowercase;

/// Switches of the [`Analyzer`]; stored in the index (`TextMeta`) so queries analyse alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AnalyzerOptions {
    /// Fold Latin accents to ASCII (default `true`).
    pub fold_accents: bool,
    /// Index CJK runs as character bigrams (default `true`); when off, each UAX #29 segment
    /// (one ideograph, a Katakana word, ...) is a token.
    pub cjk_bigrams: bool,
    /// Drop English stop words (default `false`).
    pub stop_words: bool,
    /// Stem tokens with Snowball's English stemmer (default `false`).
    pub stem_english: bool,
    /// Tokens longer than this many UTF-8 bytes are skipped (default 64, at most 255).
    pub max_token_bytes: u32,
}

impl Default for AnalyzerOptions {
    fn default() -> Self {
        AnalyzerOptions {
            fold_accents: true,
            cjk_bigrams: true,
            stop_words: false,
            stem_english: false,
            max_token_bytes: 64,
        }
    }
}

impl AnalyzerOptions {
    /// The `analyzer_flags` word of `TextMeta`.
    pub fn flags(&self) -> u32 {
        u32::from(self.fold_accents)
            | u32::from(self.cjk_bigrams) << 1
            | u32::from(self.stop_words) << 2
            | u32::from(self.stem_english) << 3
    }

    /// Options from `analyzer_flags` and `max_token_bytes`; `None` for unknown bits or a bad length.
    pub fn from_flags(flags: u32, max_token_bytes: u32) -> Option<Self> {
        if flags & !15 != 0 || !(1..=255).contains(&max_token_bytes) {
            return None;
        }
        Some(AnalyzerOptions {
            fold_accents: flags & 1 != 0,
            cjk_bigrams: flags & 2 != 0,
            stop_words: flags & 4 != 0,
            stem_english: flags & 8 != 0,
            max_token_bytes,
        })
    }
}

/// One token: its normalised text and its position in the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// Normalised text.
    pub text: String,
    /// Token number within the field, from 0.
    pub position: u32,
}

/// The text analyser (see the module documentation for the steps).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Analyzer {
    opts: AnalyzerOptions,
}

/// Lucene's classic English stop words, sorted.
const STOP_WORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
    "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
];

impl Analyzer {
    /// An analyser with these options (`max_token_bytes` is clamped to 1..=255).
    pub fn new(mut opts: AnalyzerOptions) -> Analyzer {
        opts.max_token_bytes = opts.max_token_bytes.clamp(1, 255);
        Analyzer { opts }
    }

    /// The options.
    pub fn options(&self) -> AnalyzerOptions {
        self.opts
    }

    /// Calls `f(term, position)` for every indexed token of `text`, in order, and returns the
    /// number of positions used (the next free position).
    pub fn analyze(&self, text: &str, mut f: impl FnMut(&str, u32)) -> u32 {
        let mut pos = 0u32;
        let mut buf = String::new();
        let mut run = String::new(); // the current CJK run
        let mut run_end = usize::MAX;
        let mut stemmed = self.opts.stem_english.then(String::new);
        // Every word `words` yields starts with a letter or digit, or is one CJK character.
        words(text, |start, seg| {
            if self.opts.cjk_bigrams && seg.starts_with(is_cjk_char) {
                if start != run_end {
                    self.flush_run(&run, &mut pos, &mut buf, &mut f);
                    run.clear();
                }
                run.push_str(seg);
                run_end = start + seg.len();
                return;
            }
            if !run.is_empty() {
                self.flush_run(&run, &mut pos, &mut buf, &mut f);
                run.clear();
                run_end = usize::MAX;
            }
            buf.clear();
            for c in seg.chars() {
                lowercase(c, &mut |l| {
                    if self.opts.fold_accents {
                        fold_into(l, &mut buf);
                    } else if !is_apostrophe(l) {
                        buf.push(l);
                    }
                });
            }
            self.emit(&buf, stemmed.as_mut(), &mut pos, &mut f);
        });
        self.flush_run(&run, &mut pos, &mut buf, &mut f);
        pos
    }

    /// The tokens of `text` (a convenience over [`Analyzer::analyze`]).
    pub fn tokens(&self, text: &str) -> Vec<Token> {
        let mut out = Vec::new();
        self.analyze(text, |t, p| out.push(Token { text: String::from(t), position: p }));
        out
    }

    /// Indexes `tok` at `*pos` unless it is too long or a stop word — stemmed into `stemmed`
    /// first when that buffer is given — and advances `*pos`.
    fn emit(&self, tok: &str, stemmed: Option<&mut String>, pos: &mut u32, f: &mut impl FnMut(&str, u32)) {
        if tok.is_empty() {
            return;
        }
        let keep = tok.len() <= self.opts.max_token_bytes as usize
            && !(self.opts.stop_words && STOP_WORDS.binary_search(&tok).is_ok());
        if keep {
            match stemmed {
                Some(out) => {
                    // A stem is never longer than its word, nor empty.
                    Stemmer::create(Algorithm::English).stem_into(tok, out);
                    f(out, *pos);
                }
                None => f(tok, *pos),
            }
        }
        *pos = pos.saturating_add(1);
    }

    fn flush_run(&self, run: &str, pos: &mut u32, buf: &mut String, f: &mut impl FnMut(&str, u32)) {
        let mut chars = run.char_indices().peekable();
        let Some(&(_, first)) = chars.peek() else { return };
        if run.len() == first.len_utf8() {
            self.emit(run, None, pos, f);
            return;
        }
        while let Some((i, c)) = chars.next() {
            let Some(&(_, d)) = chars.peek() else { break };
            buf.clear();
            buf.push_str(&run[i..i + c.len_utf8() + d.len_utf8()]);
            self.emit(buf, None, pos, f);
        }
    }
}

/// Calls `f(start, word)` for the words of `text`, in order: maximal runs of letters and
/// digits — with combining accents (U+0300–U+036F) inside them, an apostrophe or a full stop
/// between two letters (`can't`, `U.S.A`) and a full stop or a comma between two digits
/// (`3.14`, `1,000`) — and every CJK character on its own. Everything else separates words.
/// (A compact stand-in for Unicode word segmentation, UAX #29, whose tables would cost the
/// wasm build about 35 KB.)
pub fn words<'t>(text: &'t str, mut f: impl FnMut(usize, &'t str)) {
    let mut chars = text.char_indices().peekable();
    let mut start: Option<usize> = None;
    let mut prev = ' ';
    while let Some((i, c)) = chars.next() {
        if is_cjk_char(c) {
            if let Some(s) = start.take() {
                f(s, &text[s..i]);
            }
            f(i, &text[i..i + c.len_utf8()]);
            continue;
        }
        if c.is_alphanumeric() || (start.is_some() && ('\u{300}'..='\u{36F}').contains(&c)) {
            start.get_or_insert(i);
            prev = c;
            continue;
        }
        if let Some(s) = start {
            let next = chars.peek().map_or(' ', |&(_, n)| n);
            let joins = !is_cjk_char(next)
                && match c {
                    '.' => (prev.is_alphabetic() && next.is_alphabetic()) || (prev.is_numeric() && next.is_numeric()),
                    ',' => prev.is_numeric() && next.is_numeric(),
                    c if is_apostrophe(c) => prev.is_alphabetic() && next.is_alphabetic(),
                    _ => false,
                };
            if !joins {
                f(s, &text[s..i]);
                start = None;
            }
        }
    }
    if let Some(s) = start {
        f(s, &text[s..]);
    }
}

fn is_apostrophe(c: char) -> bool {
    matches!(c, '\'' | '\u{2019}' | '\u{02BC}')
}

/// Han, Hiragana, Katakana and Hangul characters: indexed as bigrams.
pub fn is_cjk_char(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF      // Hangul Jamo
        | 0x3005 | 0x3007    // iteration mark, ideographic zero
        | 0x3040..=0x30FF    // Hiragana, Katakana
        | 0x3130..=0x318F    // Hangul compatibility Jamo
        | 0x31F0..=0x31FF    // Katakana phonetic extensions
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFF66..=0xFF9F    // halfwidth Katakana
        | 0x20000..=0x323AF  // CJK extensions B..H
    )
}

/// Appends the folded form of the lowercase char `c` to `out`.
fn fold_into(c: char, out: &mut String) {
    let u = c as u32;
    if u < 0xAA {
        if !is_apostrophe(c) {
            out.push(c);
        }
        return;
    }
    let s: &str = match u {
        0xAA => "a",
        0xBA => "o",
        0xC0..=0xC5 | 0xE0..=0xE5 => "a",
        0xC6 | 0xE6 => "ae",
        0xC7 | 0xE7 => "c",
        0xC8..=0xCB | 0xE8..=0xEB => "e",
        0xCC..=0xCF | 0xEC..=0xEF => "i",
        0xD0 | 0xF0 => "d",
        0xD1 | 0xF1 => "n",
        0xD2..=0xD6 | 0xD8 | 0xF2..=0xF6 | 0xF8 => "o",
        0xD9..=0xDC | 0xF9..=0xFC => "u",
        0xDD | 0xFD | 0xFF => "y",
        0xDE | 0xFE => "th",
        0xDF => "ss",
        0x100..=0x105 => "a",
        0x106..=0x10D => "c",
        0x10E..=0x111 => "d",
        0x112..=0x11B => "e",
        0x11C..=0x123 => "g",
        0x124..=0x127 => "h",
        0x128..=0x131 => "i",
        0x132..=0x133 => "ij",
        0x134..=0x135 => "j",
        0x136..=0x138 => "k",
        0x139..=0x142 => "l",
        0x143..=0x14B => "n",
        0x14C..=0x151 => "o",
        0x152..=0x153 => "oe",
        0x154..=0x159 => "r",
        0x15A..=0x161 => "s",
        0x162..=0x167 => "t",
        0x168..=0x173 => "u",
        0x174..=0x175 => "w",
        0x176..=0x178 => "y",
        0x179..=0x17E => "z",
        0x17F => "s",
        0x2019 | 0x2BC => "",
        0x300..=0x36F => "",
        0xFF10..=0xFF19 => {
            out.push(char::from(b'0' + (u - 0xFF10) as u8));
            return;
        }
        0xFF41..=0xFF5A => {
            out.push(char::from(b'a' + (u - 0xFF41) as u8));
            return;
        }
        _ => {
            out.push(c);
            return;
        }
    };
    out.push_str(s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    fn toks(a: &Analyzer, s: &str) -> Vec<(String, u32)> {
        a.tokens(s).into_iter().map(|t| (t.text, t.position)).collect()
    }
    fn t(s: &str, p: u32) -> (String, u32) {
        (s.to_string(), p)
    }

    #[test]
    fn words_split_like_word_boundaries() {
        let split = |t| {
            let mut v = Vec::new();
            words(t, |i, w| v.push((i, w)));
            v
        };
        assert_eq!(
            split("can't stop, U.S.A. 3.14 1,000 e-mail"),
            [(0, "can't"), (6, "stop"), (12, "U.S.A"), (19, "3.14"), (24, "1,000"), (30, "e"), (32, "mail")]
        );
        assert_eq!(
            split("cafe\u{301} naïve x2 ..a.. 'quoted'"),
            [(0, "cafe\u{301}"), (7, "naïve"), (14, "x2"), (19, "a"), (24, "quoted")]
        );
        assert_eq!(split("東京abc"), [(0, "東"), (3, "京"), (6, "abc")]);
        assert!(split(" -- ").is_empty());
    }

    #[test]
    fn words_lowercase_fold() {
        let a = Analyzer::default();
        assert_eq!(
            toks(&a, "Hello, WORLD! Ça va? Straße"),
            vec![t("hello", 0), t("world", 1), t("ca", 2), t("va", 3), t("strasse", 4)]
        );
        // Decomposed input (e + combining acute) folds like the precomposed form.
        assert_eq!(toks(&a, "Cafe\u{301} café CAFÉ"), vec![t("cafe", 0), t("cafe", 1), t("cafe", 2)]);
        assert_eq!(
            toks(&a, "Łódź Œuvre ÆTHER þorn"),
            vec![t("lodz", 0), t("oeuvre", 1), t("aether", 2), t("thorn", 3)]
        );
        assert_eq!(toks(&a, "ＡＢＣ１２"), vec![t("abc12", 0)]);
        assert_eq!(toks(&a, "don't o\u{2019}clock 3.14"), vec![t("dont", 0), t("oclock", 1), t("3.14", 2)]);
        let plain = Analyzer::new(AnalyzerOptions { fold_accents: false, ..Default::default() });
        assert_eq!(toks(&plain, "Café"), vec![t("café", 0)]);
    }

    #[test]
    fn cjk_bigrams() {
        let a = Analyzer::default();
        assert_eq!(
            toks(&a, "東京都に住む"),
            vec![t("東京", 0), t("京都", 1), t("都に", 2), t("に住", 3), t("住む", 4)]
        );
        assert_eq!(toks(&a, "abc 中 def"), vec![t("abc", 0), t("中", 1), t("def", 2)]);
        assert_eq!(toks(&a, "中文 中文"), vec![t("中文", 0), t("中文", 1)]);
        assert_eq!(toks(&a, "한국어 텍스트"), vec![t("한국", 0), t("국어", 1), t("텍스", 2), t("스트", 3)]);
        let off = Analyzer::new(AnalyzerOptions { cjk_bigrams: false, ..Default::default() });
        assert_eq!(toks(&off, "東京"), vec![t("東", 0), t("京", 1)]);
    }

    #[test]
    fn stop_words_and_long_tokens_keep_positions() {
        let a = Analyzer::new(AnalyzerOptions { stop_words: true, max_token_bytes: 5, ..Default::default() });
        assert_eq!(toks(&a, "The cat is in the toolshed now"), vec![t("cat", 1), t("now", 6)]);
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(a.analyze("a b c", |_, _| {}), 3);
    }

    #[test]
    fn flags_round_trip() {
        for flags in 0..16 {
            let o = AnalyzerOptions::from_flags(flags, 64).unwrap();
            assert_eq!(o.flags(), flags);
        }
        assert!(AnalyzerOptions::from_flags(16, 64).is_none());
        assert!(AnalyzerOptions::from_flags(0, 0).is_none());
    }

    #[test]
    fn english_stemming_after_stop_words_not_on_cjk() {
        let a = Analyzer::new(AnalyzerOptions { stem_english: true, stop_words: true, ..Default::default() });
        // Snowball English: plurals, -ing, -ly, -ational; stop words dropped before stemming
        // ("this" would stem to "thi"); CJK bigrams and numbers untouched.
        assert_eq!(
            toks(&a, "This Running dogs generously relational 東京都 1990s"),
            vec![t("run", 1), t("dog", 2), t("generous", 3), t("relat", 4), t("東京", 5), t("京都", 6), t("1990s", 7)]
        );
        // Off by default: the same words unchanged.
        assert_eq!(toks(&Analyzer::default(), "Running dogs")[0], t("running", 0));
    }
}
