//! The stdio server's inbound messages, checked before rmcp parses them: rmcp drops a line it
//! cannot parse without a word (a request nested deeper than its JSON parser goes, or longer
//! than its line limit), so the client waits for an answer that never comes. Here such a
//! line is answered with an error naming the request's id, and every other line passes on
//! untouched.

use rmcp::RoleServer;
use rmcp::model::{ErrorData, RequestId, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;

/// The deepest nesting of arrays and objects a message may have (JSON's parser stops at 128;
/// the arguments of a tool call sit three levels down).
pub(crate) const MAX_DEPTH: usize = 100;

/// The longest message, in bytes (rmcp's own limit for a line).
pub(crate) const MAX_LINE: usize = 16 * 1024 * 1024;

/// How many bytes of lines in flight sit between the check and rmcp.
const PIPE: usize = 64 * 1024;

/// A stdio transport for the server side whose inbound lines pass [`check`] first: a line
/// that fails it is answered with an error, the rest reach rmcp's own transport.
pub(crate) struct CheckedStdio<W: AsyncWrite> {
    inner: AsyncRwTransport<RoleServer, DuplexStream, W>,
    refused: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: tokio::task::JoinHandle<()>,
}

impl<W> CheckedStdio<W>
where
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// Reads messages from `input` and writes answers to `output`.
    pub(crate) fn new(input: impl AsyncRead + Send + Unpin + 'static, output: W) -> Self {
        let (to_rmcp, from_check) = tokio::io::duplex(PIPE);
        let (refuse, refused) = mpsc::channel(16);
        let reader = tokio::spawn(pass_checked(input, to_rmcp, refuse));
        Self {
            inner: AsyncRwTransport::new_server(from_check, output),
            refused,
            reader,
        }
    }
}

impl<W> Transport<RoleServer> for CheckedStdio<W>
where
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // A refusal is queued before the lines after it are passed on, and before the
            // end of input closes the pipe: preferring it answers every refused line.
            tokio::select! {
                biased;
                Some(answer) = self.refused.recv() => {
                    if self.inner.send(answer).await.is_err() {
                        return None;
                    }
                }
                message = self.inner.receive() => return message,
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        self.inner.close().await
    }
}

/// Copies `input` to `to_rmcp` line by line, sending the answer to each line [`check`]
/// refuses to `refuse` instead; ends at the end of `input` (closing the pipe).
async fn pass_checked(
    input: impl AsyncRead + Unpin,
    mut to_rmcp: DuplexStream,
    refuse: mpsc::Sender<ServerJsonRpcMessage>,
) {
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let Ok(Some(oversized)) = read_line(&mut input, &mut line).await else {
            return;
        };
        let passed = match check(&line, oversized) {
            None => to_rmcp.write_all(&line).await.is_ok(),
            Some(answer) => refuse.send(answer).await.is_ok(),
        };
        if !passed {
            return;
        }
    }
}

/// Reads one line (with its `\n`) into `line`, keeping at most [`MAX_LINE`] bytes of it;
/// `Some(true)` when more was dropped, `None` at the end of input.
async fn read_line(
    input: &mut (impl AsyncBufReadExt + Unpin),
    line: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    let mut oversized = false;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Ok((!line.is_empty() || oversized).then_some(oversized));
        }
        let newline = available.iter().position(|b| *b == b'\n');
        let take = newline.map_or(available.len(), |i| i + 1);
        let room = MAX_LINE.saturating_sub(line.len());
        line.extend_from_slice(&available[..take.min(room)]);
        oversized |= take > room;
        input.consume(take);
        if newline.is_some() {
            return Ok(Some(oversized));
        }
    }
}

/// The error answering `line` when rmcp could not read it (`None`: pass it on).
fn check(line: &[u8], oversized: bool) -> Option<ServerJsonRpcMessage> {
    let shape = Shape::of(line);
    let problem = if oversized {
        format!(
            "the message is longer than {} MiB, the most rein reads; send less in one request",
            MAX_LINE / (1024 * 1024)
        )
    } else if shape.depth > MAX_DEPTH {
        format!(
            "the message nests arrays and objects more than {MAX_DEPTH} levels deep, the most rein reads; flatten the arguments"
        )
    } else {
        return None;
    };
    Some(ServerJsonRpcMessage::error(
        ErrorData::invalid_request(problem, None),
        shape.id,
    ))
}

/// What a scan of a JSON text finds without parsing it (no recursion, one pass): how deep
/// arrays and objects nest, and the `id` member of the top-level object.
#[derive(Debug, PartialEq)]
struct Shape {
    depth: usize,
    id: Option<RequestId>,
}

impl Shape {
    fn of(text: &[u8]) -> Self {
        let (mut depth, mut deepest) = (0_usize, 0_usize);
        let (mut in_string, mut escaped, mut string_start) = (false, false, 0);
        // Inside the top-level object (depth 1): whether the next string is a key, whether
        // the last key was `id`, and where the `id` value starts.
        let (mut key_next, mut key_is_id) = (false, false);
        let mut id_start: Option<usize> = None;
        let mut id = None;
        let mut end_id = |start: &mut Option<usize>, end: usize| {
            if let Some(start) = start.take() {
                id = serde_json::from_slice::<RequestId>(text[start..end].trim_ascii()).ok();
            }
        };
        for (i, &b) in text.iter().enumerate() {
            if in_string {
                if escaped {
                    escaped = false;
                } else if b == b'\\' {
                    escaped = true;
                } else if b == b'"' {
                    in_string = false;
                    if depth == 1 && key_next {
                        key_is_id = &text[string_start..i] == b"id";
                        key_next = false;
                    }
                }
                continue;
            }
            match b {
                b'"' => {
                    in_string = true;
                    string_start = i + 1;
                }
                b'{' | b'[' => {
                    key_next = depth == 0 && b == b'{';
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                b'}' | b']' => {
                    if depth == 1 {
                        end_id(&mut id_start, i);
                    }
                    depth = depth.saturating_sub(1);
                }
                b':' if depth == 1 && key_is_id => id_start = Some(i + 1),
                b',' if depth == 1 => {
                    end_id(&mut id_start, i);
                    key_next = true;
                    key_is_id = false;
                }
                _ => {}
            }
        }
        Self { depth: deepest, id }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"x","arguments":{{"a":{}1{}}}}},"id":7}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        )
    }

    #[test]
    fn the_scan_finds_the_depth_and_the_top_level_id() {
        let shape = Shape::of(nested(3000).as_bytes());
        assert_eq!(shape.depth, 3003);
        assert_eq!(shape.id, Some(RequestId::Number(7)));
        let named = Shape::of(br#"{"id": "a,}b", "params": {"id": 9, "s": "{[\"}"}}"#);
        assert_eq!(named.id, Some(RequestId::String("a,}b".into())));
        assert_eq!(named.depth, 2);
        assert_eq!(Shape::of(b"[1, [2]]").id, None);
        assert_eq!(Shape::of(br#"{"x": 1}"#).id, None);
    }

    #[test]
    fn a_deep_message_is_refused_with_its_id_and_a_shallow_one_passes() {
        assert!(check(nested(MAX_DEPTH - 3).as_bytes(), false).is_none());
        let answer = check(nested(3000).as_bytes(), false).expect("refused");
        let answer = serde_json::to_value(answer).expect("serializes");
        assert_eq!(answer["id"], 7);
        assert_eq!(answer["error"]["code"], -32600);
        let message = answer["error"]["message"].as_str().expect("a message");
        assert!(message.contains("levels deep"), "{message}");
        let long = check(br#"{"id": 3, "params": "#, true).expect("refused");
        assert_eq!(serde_json::to_value(long).expect("serializes")["id"], 3);
    }
}
