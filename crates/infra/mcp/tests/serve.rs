//! `serve_http` seen by rmcp's client: the tool list comes in pages of `TOOLS_PAGE` with a
//! cursor, a cursor rein did not hand out is refused, and `listChanged` is `false`.

use std::sync::Arc;

use rein_mcp::{Governor, Progress, Refusal, Session, TOOLS_PAGE, serve_http};
use rein_tool::{BoxFuture, ToolName, ToolSpec};
use rmcp::ServiceExt;
use rmcp::model::PaginatedRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::Value;

/// Offers `count` tools; calls answer nothing.
struct Many(usize);

struct Idle;

impl Session for Idle {
    fn call(&self, _: String, _: Value, _: Progress) -> BoxFuture<'_, Result<Value, Refusal>> {
        Box::pin(async { Err(Refusal::new("idle")) })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

impl Governor for Many {
    fn tools(&self) -> Vec<ToolSpec> {
        (0..self.0)
            .map(|i| ToolSpec::new(ToolName::new(format!("t.tool{i}")).unwrap(), "a tool"))
            .collect()
    }

    fn open(&self) -> BoxFuture<'_, Result<Box<dyn Session>, Refusal>> {
        Box::pin(async { Ok(Box::new(Idle) as Box<dyn Session>) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_served_tool_list_is_paged_and_never_changes() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_http(Arc::new(Many(250)), listener, async {
        let _ = stopped.await;
    }));

    let client = ().serve(StreamableHttpClientTransport::from_uri(url)).await.unwrap();
    let info = client.peer_info().expect("the server's info");
    let capabilities = serde_json::to_value(&info.capabilities).unwrap();
    assert_eq!(
        capabilities["tools"]["listChanged"], false,
        "{capabilities}"
    );

    let first = client.list_tools(None).await.unwrap();
    assert_eq!(first.tools.len(), TOOLS_PAGE);
    assert_eq!(first.next_cursor.as_deref(), Some("100"));
    let all = client.list_all_tools().await.unwrap();
    assert_eq!(all.len(), 250);
    assert_eq!(all[249].name, "t.tool249");
    let bad = client
        .list_tools(Some(
            PaginatedRequestParams::default().with_cursor(Some("999".into())),
        ))
        .await;
    assert!(bad.is_err(), "{bad:?}");

    let _ = client.cancel().await;
    let _ = stop.send(());
    server.await.unwrap().unwrap();
}
