//! The stdio transport under the MCP server: every line the client sends gets either to rmcp or an answer.
//!
//! rmcp's own stdio transport drops what it cannot read without a word: a line that is not JSON, and a line over
//! its 16 MiB cap, get no reply, so the client waits forever; a message of another JSON-RPC version gets an error
//! without its id. This transport reads the lines itself, bounded, and answers as JSON-RPC 2.0 says:
//! - a line over [`MAX_LINE_BYTES`]: `-32600` Invalid Request (id null: the line is not kept, so its id is unknown),
//!   its bytes dropped as they come, never held;
//! - a line that is not JSON: `-32700` Parse error (id null);
//! - JSON that is not a JSON-RPC 2.0 message (not an object, `jsonrpc` missing or not `"2.0"`, no method): `-32600`
//!   with the message's id when it has one, else null;
//! - a `tools/call` whose params do not decode (`arguments` that is not an object, no tool name): `-32602`
//!   Invalid params, with its id (rmcp would answer `-32601` Method not found);
//! - a notification rmcp cannot read: nothing (JSON-RPC never answers a notification; rmcp ignores unknown ones);
//! - anything else goes to rmcp as it is.
//!
//! Replies and rmcp's own messages go out through one writer task, one whole line at a time, in order. Reading is
//! safe to cancel between lines and inside one (rmcp polls `receive` in a `select!`): a partial line stays in the
//! buffer, and a reply is queued without waiting.
//!
//! What it is not: the tools and their errors are the server's ([`super::WorkerServer`]); an error storm cannot
//! start here, since the replies are valid JSON-RPC 2.0 responses, which a client that echoes them back gets
//! through to rmcp (which ignores responses to nothing it asked).

use std::io;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
// `transport-io` of rmcp turns on tokio's `io-util` (BufReader, the async read and write traits).
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

/// The longest line (one JSON-RPC message) read, as rmcp's own cap: 16 MiB.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// JSON-RPC's code for a line that is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for JSON that is not a valid request.
const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC's code for a request whose params are not what the method takes.
const INVALID_PARAMS: i64 = -32602;

/// One line out: its bytes (the newline included), and who waits for it to be written.
type Outgoing = (Vec<u8>, Option<oneshot::Sender<io::Result<()>>>);

/// The transport over a reader and a writer (stdin and stdout).
pub struct Lines<R> {
    read: BufReader<R>,
    /// The line being read (without its end yet).
    line: Vec<u8>,
    /// While a line over the cap is dropped: its bytes so far.
    dropped: Option<usize>,
    /// To the writer task; `None` once closed.
    out: Option<mpsc::UnboundedSender<Outgoing>>,
    writer: Option<tokio::task::JoinHandle<()>>,
    /// Told when the client closes its input (so calls in flight are cancelled at once).
    closed: Option<tokio::sync::watch::Sender<bool>>,
}

/// What one line read gave.
enum Read {
    /// A whole line is in the buffer.
    Line,
    /// A line over the cap ended; it was this many bytes long (its newline left out).
    Oversized(usize),
    /// The client closed the stream (or it failed).
    End,
}

/// What to do with one line.
#[derive(Debug)]
enum Verdict {
    /// A message for rmcp.
    Pass(Box<RxJsonRpcMessage<RoleServer>>),
    /// The error response to send back (one line, newline included).
    Reply(Vec<u8>),
    /// Nothing: a blank line, or a notification nobody reads.
    Ignore,
}

impl<R: AsyncRead + Send + Unpin> Lines<R> {
    /// The transport reading `read` and writing `write`; its writer task runs on the current tokio runtime.
    pub fn new<W: AsyncWrite + Send + Unpin + 'static>(read: R, mut write: W) -> Lines<R> {
        let (tx, mut rx) = mpsc::unbounded_channel::<Outgoing>();
        let writer = tokio::spawn(async move {
            while let Some((bytes, done)) = rx.recv().await {
                let written = match write.write_all(&bytes).await {
                    Ok(()) => write.flush().await,
                    Err(e) => Err(e),
                };
                if let Some(done) = done {
                    let _ = done.send(written);
                }
            }
        });
        Lines {
            read: BufReader::new(read),
            line: Vec::new(),
            dropped: None,
            out: Some(tx),
            writer: Some(writer),
            closed: None,
        }
    }

    /// Set `closed` to true when the client closes its input.
    pub fn on_close(mut self, closed: tokio::sync::watch::Sender<bool>) -> Lines<R> {
        self.closed = Some(closed);
        self
    }

    /// Queue `bytes` to be written, without waiting (a reply to a line that rmcp never sees).
    fn queue(&self, bytes: Vec<u8>) {
        if let Some(out) = &self.out {
            let _ = out.send((bytes, None));
        }
    }

    /// Read the next line into `self.line`, never holding more than [`MAX_LINE_BYTES`] of it. Cancel-safe: bytes
    /// are taken from the reader's buffer only together with their copy (no await in between).
    async fn next_line(&mut self) -> Read {
        loop {
            let (taken, ended) = {
                let available = match self.read.fill_buf().await {
                    Ok(a) if !a.is_empty() => a,
                    _ => return Read::End,
                };
                let newline = memchr::memchr(b'\n', available);
                let take = newline.map_or(available.len(), |i| i + 1);
                if let Some(dropped) = self.dropped.as_mut() {
                    *dropped += take;
                } else if self.line.len() + take > MAX_LINE_BYTES {
                    self.dropped = Some(self.line.len() + take);
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(&available[..take]);
                }
                (take, newline.is_some())
            };
            self.read.consume(taken);
            if ended {
                return match self.dropped.take() {
                    Some(n) => Read::Oversized(n - 1),
                    None => Read::Line,
                };
            }
        }
    }
}

/// The error response to a line: `id` (null when unknown), `code`, `message`; one line, newline included.
fn error_line(id: serde_json::Value, code: i64, message: String) -> Vec<u8> {
    let reply = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    });
    let mut bytes = reply.to_string().into_bytes();
    bytes.push(b'\n');
    bytes
}

/// What to do with one whole line (its newline, a `\r` and a byte-order mark ignored).
fn classify(line: &[u8]) -> Verdict {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Ignore;
    }
    let value: serde_json::Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return Verdict::Reply(error_line(
                serde_json::Value::Null,
                PARSE_ERROR,
                format!(
                    "Parse error: the line is not JSON ({e}); send one JSON-RPC 2.0 message per line"
                ),
            ));
        }
    };
    let Some(object) = value.as_object() else {
        return Verdict::Reply(error_line(
            serde_json::Value::Null,
            INVALID_REQUEST,
            "Invalid Request: a message must be a JSON object (batches are not supported)".into(),
        ));
    };
    // The id, when it is one JSON-RPC allows (a string or a number).
    let id = object
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
        .cloned();
    let invalid = |why: String| {
        Verdict::Reply(error_line(
            id.clone().unwrap_or(serde_json::Value::Null),
            INVALID_REQUEST,
            format!("Invalid Request: {why}"),
        ))
    };
    match object.get("jsonrpc") {
        Some(v) if v == "2.0" => {}
        Some(v) => return invalid(format!("\"jsonrpc\" must be \"2.0\", not {v}")),
        None => return invalid("the message has no \"jsonrpc\": \"2.0\"".into()),
    }
    let is_notification = !object.contains_key("id") && object.contains_key("method");
    // rmcp reads a `tools/call` whose params it cannot decode as an unknown method (-32601): they are invalid
    // params (-32602), and the reply says which.
    if !is_notification && object.get("method").is_some_and(|m| m == "tools/call") {
        let params = object.get("params").cloned().unwrap_or_default();
        if let Err(e) = serde_json::from_value::<rmcp::model::CallToolRequestParams>(params) {
            return Verdict::Reply(error_line(
                id.clone().unwrap_or(serde_json::Value::Null),
                INVALID_PARAMS,
                format!(
                    "Invalid params: tools/call takes {{\"name\": TOOL, \"arguments\": {{...}}}} with arguments an \
                     object ({e})"
                ),
            ));
        }
    }
    match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value) {
        Ok(message) => Verdict::Pass(Box::new(message)),
        Err(_) if is_notification => Verdict::Ignore,
        Err(e) => invalid(format!(
            "not a JSON-RPC 2.0 request, notification or response ({e})"
        )),
    }
}

impl<R: AsyncRead + Send + Unpin> Transport<RoleServer> for Lines<R> {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        async move {
            let mut bytes = serde_json::to_vec(&item)?;
            bytes.push(b'\n');
            let (done, written) = oneshot::channel();
            let closed = || io::Error::new(io::ErrorKind::NotConnected, "the transport is closed");
            out.ok_or_else(closed)?
                .send((bytes, Some(done)))
                .map_err(|_| closed())?;
            written.await.map_err(|_| closed())?
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.next_line().await {
                Read::End => {
                    if let Some(closed) = &self.closed {
                        closed.send_replace(true);
                    }
                    return None;
                }
                Read::Oversized(n) => self.queue(error_line(
                    serde_json::Value::Null,
                    INVALID_REQUEST,
                    format!(
                        "Invalid Request: a message of {n} bytes, over the limit of {MAX_LINE_BYTES} bytes (16 MiB) \
                         for one message, was dropped unread; send smaller arguments (the server goes on)"
                    ),
                )),
                Read::Line => {
                    let verdict = classify(&self.line);
                    self.line.clear();
                    match verdict {
                        Verdict::Pass(message) => return Some(*message),
                        Verdict::Reply(bytes) => self.queue(bytes),
                        Verdict::Ignore => {}
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // The writer ends once every queued line is written.
        self.out = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(v: Verdict) -> serde_json::Value {
        match v {
            Verdict::Reply(bytes) => {
                assert!(bytes.ends_with(b"\n") && !bytes[..bytes.len() - 1].contains(&b'\n'));
                serde_json::from_slice(&bytes).unwrap()
            }
            other => panic!("expected a reply, got {other:?}"),
        }
    }

    #[test]
    fn mcp_input_dropped_without_a_word_each_bad_line_gets_its_error() {
        let r = reply(classify(b"{not json\n"));
        assert_eq!(r["error"]["code"], PARSE_ERROR);
        assert_eq!(r["id"], serde_json::Value::Null);
        assert_eq!(r["jsonrpc"], "2.0");
        let r = reply(classify(
            br#"{"jsonrpc":"1.0","id":7,"method":"tools/list"}"#,
        ));
        assert_eq!(
            (r["error"]["code"].clone(), r["id"].clone()),
            (INVALID_REQUEST.into(), 7.into())
        );
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("must be \"2.0\""),
            "{r}"
        );
        let r = reply(classify(br#"{"id":"x","method":"tools/list"}"#));
        assert_eq!(
            (r["error"]["code"].clone(), r["id"].clone()),
            (INVALID_REQUEST.into(), "x".into())
        );
        for line in [
            &b"[]"[..],
            b"42",
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
        ] {
            let r = reply(classify(line));
            assert_eq!(
                (r["error"]["code"].clone(), r["id"].clone()),
                (INVALID_REQUEST.into(), serde_json::Value::Null)
            );
        }
        let r = reply(classify(br#"{"jsonrpc":"2.0","id":10}"#));
        assert_eq!(
            (r["error"]["code"].clone(), r["id"].clone()),
            (INVALID_REQUEST.into(), 10.into())
        );
        // An id JSON-RPC does not allow is not echoed.
        let r = reply(classify(
            br#"{"jsonrpc":"1.0","id":{"a":1},"method":"ping"}"#,
        ));
        assert_eq!(r["id"], serde_json::Value::Null);
        // Blank lines and unknown notifications get nothing; messages go to rmcp, CRLF and a BOM aside.
        assert!(matches!(classify(b"  \r\n"), Verdict::Ignore));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","method":"notifications/whatever","params":5}"#),
            Verdict::Ignore | Verdict::Pass(_)
        ));
        assert!(matches!(
            classify(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\r\n"),
            Verdict::Pass(_)
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":3,"method":"no/such"}"#),
            Verdict::Pass(_)
        ));
    }

    #[test]
    fn refusals_every_client_shows_arguments_not_an_object_are_invalid_params() {
        for line in [
            &br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"apply_patch","arguments":"x"}}"#[..],
            br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"apply_patch","arguments":[1]}}"#,
            br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"arguments":{}}}"#,
            br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":7}"#,
        ] {
            let r = reply(classify(line));
            assert_eq!(
                (r["error"]["code"].clone(), r["id"].clone()),
                (INVALID_PARAMS.into(), 5.into()),
                "{r}"
            );
        }
        assert!(matches!(
            classify(
                br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"apply_patch","arguments":{}}}"#
            ),
            Verdict::Pass(_)
        ));
    }

    #[test]
    fn mcp_input_dropped_without_a_word_an_oversized_line_is_counted_and_never_held() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let big = format!("{}\n", "x".repeat(MAX_LINE_BYTES + 10));
            let input = format!("{big}{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}}\n");
            let (client, server) = tokio::io::duplex(1 << 16);
            let mut lines = Lines::new(input.as_bytes(), server);
            match lines.next_line().await {
                Read::Oversized(n) => assert_eq!(n, MAX_LINE_BYTES + 10),
                Read::Line | Read::End => panic!("the oversized line was not reported"),
            }
            assert!(lines.line.is_empty(), "none of it is held");
            assert!(matches!(lines.next_line().await, Read::Line));
            assert!(matches!(classify(&lines.line), Verdict::Pass(_)));
            drop(client);
        });
    }
}
