//! The SSE decoder the SSE + HTTP transport reads its command stream with: the WHATWG
//! `text/event-stream` rules (LF, CR and CRLF line ends, comments, multi-line `data`, `event`,
//! `id`, `retry`, a leading BOM), fed with byte chunks split anywhere, UTF-8 sequences included.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, `"message"` when the event named none.
    pub event: String,
    pub data: String,
    /// The last event id seen on the stream (ids carry over to later events).
    pub id: Option<String>,
}

/// The decoder refused its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseError(pub String);

impl std::fmt::Display for SseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SseError {}

/// Longest line (and event) accepted: big enough for any command, bounded all the same.
pub const MAX_LINE: usize = 32 << 20;

#[derive(Debug, Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    /// The previous chunk ended in CR: an LF at the start of the next one belongs to it.
    after_cr: bool,
    started: bool,
    event: String,
    data: String,
    has_data: bool,
    last_id: Option<String>,
    retry: Option<u32>,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// The reconnection time the stream asked for (`retry:`), in milliseconds.
    pub fn retry(&self) -> Option<u32> {
        self.retry
    }

    /// Feeds a chunk; returns the events it completed.
    pub fn push(&mut self, mut chunk: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let mut out = Vec::new();
        // Only the first byte after a CR can be its LF: once a byte arrived (even an LF
        // that was dropped), the CR is settled, or a later LF would be dropped too.
        if self.after_cr && !chunk.is_empty() {
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
            self.after_cr = false;
        }
        let mut start = 0;
        for (i, &b) in chunk.iter().enumerate() {
            if b != b'\n' && b != b'\r' {
                continue;
            }
            // The LF of a CRLF whose CR ended the previous line.
            if b == b'\n' && i > 0 && chunk[i - 1] == b'\r' && start == i {
                start = i + 1;
                continue;
            }
            self.line.extend_from_slice(&chunk[start..i]);
            self.check_len()?;
            self.finish_line(&mut out)?;
            start = i + 1;
            self.after_cr = b == b'\r' && i + 1 == chunk.len();
        }
        self.line.extend_from_slice(&chunk[start..]);
        self.check_len()?;
        Ok(out)
    }

    fn check_len(&self) -> Result<(), SseError> {
        if self.line.len() + self.data.len() > MAX_LINE {
            return Err(SseError(format!(
                "an SSE event is longer than {} MiB",
                MAX_LINE >> 20
            )));
        }
        Ok(())
    }

    fn finish_line(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let mut bytes = std::mem::take(&mut self.line);
        if !self.started {
            self.started = true;
            if bytes.starts_with(b"\xEF\xBB\xBF") {
                bytes.drain(..3);
            }
        }
        // Line ends are ASCII, so a complete line holds whole UTF-8 sequences.
        let line = String::from_utf8_lossy(&bytes);
        if line.is_empty() {
            if self.has_data {
                let mut data = std::mem::take(&mut self.data);
                if data.ends_with('\n') {
                    data.pop();
                }
                let event = std::mem::take(&mut self.event);
                out.push(SseEvent {
                    event: if event.is_empty() {
                        "message".into()
                    } else {
                        event
                    },
                    data,
                    id: self.last_id.clone(),
                });
            }
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            return Ok(());
        }
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_ref(), ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.last_id = Some(value.to_string()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry = value.parse().ok();
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str, id: Option<&str>) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
            id: id.map(Into::into),
        }
    }

    /// The events of `input` fed whole, and fed one byte at a time: both must agree.
    fn decode(input: &[u8]) -> Vec<SseEvent> {
        let whole = SseDecoder::new().push(input).unwrap();
        let mut d = SseDecoder::new();
        let mut bytewise = Vec::new();
        for b in input {
            bytewise.extend(d.push(std::slice::from_ref(b)).unwrap());
        }
        assert_eq!(whole, bytewise, "byte-split decoding differs");
        whole
    }

    #[test]
    fn the_protocol_command_event() {
        let got = decode(b"data: {\"id\":\"1\",\"tool\":\"t\",\"args\":{}}\n\n");
        assert_eq!(
            got,
            vec![ev("message", r#"{"id":"1","tool":"t","args":{}}"#, None)]
        );
    }

    #[test]
    fn disconnect_event() {
        assert_eq!(
            decode(b"event: disconnect\ndata: bye\n\n"),
            vec![ev("disconnect", "bye", None)]
        );
    }

    #[test]
    fn multi_line_data_crlf_cr_and_comments() {
        let got = decode(b": hello\r\ndata: a\r\ndata:b\r\rdata:  c\rdata\n\n");
        assert_eq!(
            got,
            vec![ev("message", "a\nb", None), ev("message", " c\n", None)]
        );
    }

    #[test]
    fn ids_carry_over_and_retry_is_read() {
        let mut d = SseDecoder::new();
        let got = d
            .push(b"id: 7\nretry: 1500\ndata: x\n\ndata: y\n\nretry: soon\nid\ndata: z\n\n")
            .unwrap();
        assert_eq!(
            got,
            vec![
                ev("message", "x", Some("7")),
                ev("message", "y", Some("7")),
                ev("message", "z", Some(""))
            ]
        );
        assert_eq!(d.retry(), Some(1500));
    }

    #[test]
    fn utf8_split_across_chunks_and_bom() {
        let text = "\u{feff}data: é✓🦀\n\n".as_bytes();
        assert_eq!(decode(text), vec![ev("message", "é✓🦀", None)]);
    }

    #[test]
    fn event_without_data_is_not_dispatched_and_partial_event_waits() {
        let mut d = SseDecoder::new();
        assert!(d.push(b"event: x\n\ndata: part").unwrap().is_empty());
        assert_eq!(
            d.push(b"ial\n\n").unwrap(),
            vec![ev("message", "partial", None)]
        );
    }

    #[test]
    fn unknown_fields_are_ignored() {
        assert_eq!(
            decode(b"foo: bar\ndata: 1\nevent\n\n"),
            vec![ev("message", "1", None)]
        );
    }

    #[test]
    fn oversized_events_are_refused() {
        let mut d = SseDecoder::new();
        let big = vec![b'a'; MAX_LINE + 1];
        assert!(d.push(&big).is_err());
    }
}
