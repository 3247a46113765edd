//! Stop strings over streamed text: what may be sent now, and where the text ends.
//!
//! Generated text arrives in pieces, and a stop string can straddle two of them, so the
//! last bytes that could still begin one are held back until the next piece decides.

/// Feeds pieces of text and hands back what is safe to send.
#[derive(Debug, Default)]
pub struct StopMatcher {
    stops: Vec<String>,
    /// Text received but not yet released (it might begin a stop string).
    held: String,
    stopped: bool,
}

impl StopMatcher {
    /// Empty stop strings are ignored.
    pub fn new(stops: &[String]) -> Self {
        StopMatcher {
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
            held: String::new(),
            stopped: false,
        }
    }

    /// Whether a stop string has been seen (nothing more will be released).
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Takes a piece; returns the text that can be sent now. After a stop string it
    /// returns the text before it and then only empty strings.
    pub fn push(&mut self, piece: &str) -> String {
        if self.stopped {
            return String::new();
        }
        self.held.push_str(piece);
        // The earliest stop string in what is held ends the text there.
        if let Some(at) = self
            .stops
            .iter()
            .filter_map(|s| self.held.find(s.as_str()))
            .min()
        {
            self.stopped = true;
            let out = self.held[..at].to_string();
            self.held.clear();
            return out;
        }
        // Keep the longest tail that is a proper prefix of some stop string.
        let keep = self
            .stops
            .iter()
            .map(|s| longest_suffix_prefix(&self.held, s))
            .max()
            .unwrap_or(0);
        let cut = self.held.len() - keep;
        let out = self.held[..cut].to_string();
        self.held.drain(..cut);
        out
    }

    /// The end of the text: whatever is still held (empty after a stop string).
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

/// Bytes of the longest suffix of `text` that is a proper prefix of `stop`, on a character
/// boundary of `text`.
fn longest_suffix_prefix(text: &str, stop: &str) -> usize {
    let max = (stop.len() - 1).min(text.len());
    (1..=max)
        .rev()
        .find(|&n| {
            text.is_char_boundary(text.len() - n) && stop.starts_with(&text[text.len() - n..])
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stops: &[&str], pieces: &[&str]) -> (String, bool) {
        let stops: Vec<String> = stops.iter().map(|s| s.to_string()).collect();
        let mut m = StopMatcher::new(&stops);
        let mut out = String::new();
        for p in pieces {
            out.push_str(&m.push(p));
        }
        out.push_str(&m.finish());
        (out, m.stopped())
    }

    #[test]
    fn without_stop_strings_everything_passes_at_once() {
        let mut m = StopMatcher::new(&[]);
        assert_eq!(m.push("Hello"), "Hello");
        assert_eq!(m.push(" world"), " world");
        assert_eq!(m.finish(), "");
        assert!(!m.stopped());
    }

    #[test]
    fn a_stop_string_split_over_pieces_ends_the_text_before_it() {
        assert_eq!(
            run(&["\nUser:"], &["Paris.", "\nUs", "er:", " more"]),
            ("Paris.".to_string(), true)
        );
    }

    #[test]
    fn a_partial_match_that_fails_is_released() {
        let stops = vec!["STOP".to_string()];
        let mut m = StopMatcher::new(&stops);
        assert_eq!(m.push("a ST"), "a ");
        assert_eq!(m.push("AR"), "STAR");
        assert_eq!(m.finish(), "");
        assert!(!m.stopped());
    }

    #[test]
    fn the_earliest_of_several_stop_strings_wins() {
        assert_eq!(run(&["c", "b"], &["abcd"]), ("a".to_string(), true));
    }

    #[test]
    fn held_text_at_the_end_is_released() {
        assert_eq!(run(&["END"], &["the EN"]), ("the EN".to_string(), false));
    }

    #[test]
    fn multibyte_text_is_never_cut_inside_a_character() {
        // "é" is two bytes; a stop string starting with its second byte cannot split it.
        assert_eq!(
            run(&["\u{a9}x"], &["caf\u{e9}", "!"]),
            ("caf\u{e9}!".to_string(), false)
        );
        assert_eq!(
            run(&["\u{e9}!"], &["caf\u{e9}", "!"]),
            ("caf".to_string(), true)
        );
    }
}
