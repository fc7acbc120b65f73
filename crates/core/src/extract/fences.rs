//! Markdown code fences in a reply: the fenced blocks, and the body of the last one.

/// The body of the last fenced code block of `reply`, trimmed, or the whole reply trimmed when
/// it has none. For stages that expect one payload (a JSON answer, a plan) in any fence.
pub fn strip_fences(reply: &str) -> &str {
    fenced_blocks(reply).last().map_or(reply, |block| block.body).trim()
}

/// A fenced code block of a Markdown reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FencedBlock<'a> {
    /// The info string after the opening fence (`sql`, `postgresql`, empty), trimmed.
    pub info: &'a str,
    /// The text between the fences, untrimmed.
    pub body: &'a str,
    /// Whether a closing fence was found (a truncated reply may lack it).
    pub closed: bool,
}

impl FencedBlock<'_> {
    /// Whether the info string names a SQL language (`sql`, `postgresql`, `pgsql`, `psql`, …).
    pub fn is_tagged_sql(&self) -> bool {
        is_sql_language(self.info.split_whitespace().next().unwrap_or(""))
    }
}

/// The fenced code blocks of `text`, in order. A fence is a run of three or more backticks or
/// tildes; it closes at the next run of the same character at least as long. Models are less
/// tidy than CommonMark, so fences are also recognised in mid-line and on a single line
/// (```` ```sql SELECT 1``` ````), and an unclosed fence runs to the end.
pub fn fenced_blocks(text: &str) -> Vec<FencedBlock<'_>> {
    let mut blocks = Vec::new();
    let mut from = 0;
    while let Some(open) = find_fence(text, from, None) {
        let after_open = open.end;
        let line_end = text[after_open..].find('\n').map_or(text.len(), |i| after_open + i);
        let first_line = &text[after_open..line_end];
        if let Some(close) = find_fence(first_line, 0, Some(open.clone())) {
            // A block on a single line: an optional language word, then the body.
            let inner = &first_line[..close.start];
            let (info, body) = match inner.split_once(char::is_whitespace) {
                Some((word, rest)) if is_sql_language(word) => (word, rest),
                _ => ("", inner),
            };
            blocks.push(FencedBlock { info, body, closed: true });
            from = after_open + close.end;
            continue;
        }
        let info = first_line.trim();
        let body_start = (line_end + 1).min(text.len());
        match find_fence(text, body_start, Some(open)) {
            Some(close) => {
                blocks.push(FencedBlock { info, body: &text[body_start..close.start], closed: true });
                from = close.end;
            }
            None => {
                blocks.push(FencedBlock { info, body: &text[body_start..], closed: false });
                break;
            }
        }
    }
    blocks
}

/// A fence run: its character and its byte range.
#[derive(Debug, Clone)]
struct Fence {
    marker: char,
    start: usize,
    end: usize,
}

/// The next run of at least three backticks or tildes in `text` from `from`; when `opening`
/// is given, only a run that can close it (same character, at least as long).
fn find_fence(text: &str, from: usize, opening: Option<Fence>) -> Option<Fence> {
    let bytes = text.as_bytes();
    let mut i = from;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'`' || b == b'~' {
            let run = bytes[i..].iter().take_while(|&&c| c == b).count();
            let fits = match &opening {
                Some(open) => open.marker == char::from(b) && run >= open.end - open.start,
                None => run >= 3,
            };
            if fits {
                return Some(Fence { marker: char::from(b), start: i, end: i + run });
            }
            i += run;
        } else {
            i += 1;
        }
    }
    None
}

fn is_sql_language(word: &str) -> bool {
    let word = word.to_ascii_lowercase();
    word.contains("sql") || word.starts_with("postgres") || word == "pg"
}
