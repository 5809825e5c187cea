//! `http.fetch` against a loopback server only: the allowlist (empty allows nothing),
//! redirects (followed inside the list, refused outside it), size and time caps, and GET-only
//! tools that are read-only.

use std::time::Duration;

use rein_tool::{Tool, ToolError};
use rein_tools::{HttpConfig, HttpError, HttpFetch};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A loopback server: `/ok` answers "hello", `/big` a 2 MiB body, `/hop` redirects to `/ok`,
/// `/away` redirects to `localhost` (not on the list), `/echo` returns the request,
/// `/hang` never answers.
async fn server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = vec![0; 65536];
                let n = socket.read(&mut buf).await.unwrap_or(0);
                let request = String::from_utf8_lossy(&buf[..n]).into_owned();
                let path = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let (status, extra, body) = match path.as_str() {
                    "/ok" => ("200 OK", String::new(), "hello".to_owned()),
                    "/big" => ("200 OK", String::new(), "x".repeat(2 * 1024 * 1024)),
                    "/hop" => ("302 Found", "Location: /ok\r\n".to_owned(), String::new()),
                    "/away" => (
                        "302 Found",
                        format!("Location: http://localhost:{port}/ok\r\n"),
                        String::new(),
                    ),
                    "/echo" => ("200 OK", String::new(), request),
                    "/hang" => {
                        std::future::pending::<()>().await;
                        unreachable!()
                    }
                    _ => ("404 Not Found", String::new(), "nope".to_owned()),
                };
                let response = format!(
                    "HTTP/1.1 {status}\r\n{extra}Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    port
}

fn config() -> HttpConfig {
    HttpConfig::new(["127.0.0.1"]).with_max_bytes(1024 * 1024)
}

#[tokio::test]
async fn get_reaches_an_allowed_host_and_follows_redirects_inside_the_list() {
    let port = server().await;
    let tool = HttpFetch::get_only(config()).unwrap();
    let out = tool
        .run(json!({"url": format!("http://127.0.0.1:{port}/ok")}))
        .await
        .unwrap();
    assert_eq!(
        (out["status"].clone(), out["body"].clone()),
        (json!(200), json!("hello"))
    );
    let out = tool
        .run(json!({"url": format!("http://127.0.0.1:{port}/hop")}))
        .await
        .unwrap();
    assert_eq!(out["body"], "hello");
    assert!(out["url"].as_str().unwrap().ends_with("/ok"));
    let out = tool
        .run(json!({"url": format!("http://127.0.0.1:{port}/missing")}))
        .await
        .unwrap();
    assert_eq!(out["status"], 404);
}

#[tokio::test]
async fn hosts_outside_the_list_are_refused_before_any_connection() {
    let port = server().await;
    let tool = HttpFetch::get_only(config()).unwrap();
    for url in [
        format!("http://localhost:{port}/ok"),
        "http://example.invalid/".to_owned(),
        "http://127.0.0.1.nip.io/".to_owned(),
    ] {
        let e = tool.run(json!({"url": url})).await.unwrap_err();
        assert!(
            matches!(e, HttpError::HostNotAllowed { .. }),
            "{url}: {e:?}"
        );
        assert!(matches!(ToolError::from(e), ToolError::InvalidInput { .. }));
    }
    let nothing = HttpFetch::get_only(HttpConfig::new(Vec::<String>::new())).unwrap();
    let e = nothing
        .run(json!({"url": format!("http://127.0.0.1:{port}/ok")}))
        .await
        .unwrap_err();
    assert!(matches!(e, HttpError::HostNotAllowed { .. }), "{e:?}");
    for url in ["file:///etc/passwd", "not a url"] {
        let e = tool.run(json!({"url": url})).await.unwrap_err();
        assert!(matches!(e, HttpError::Input { .. }), "{url}: {e:?}");
    }
}

#[tokio::test]
async fn a_redirect_outside_the_list_is_not_followed() {
    let port = server().await;
    let tool = HttpFetch::get_only(config()).unwrap();
    let e = tool
        .run(json!({"url": format!("http://127.0.0.1:{port}/away")}))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, HttpError::RedirectNotAllowed { location, .. } if location.contains("localhost")),
        "{e:?}"
    );
}

#[tokio::test]
async fn a_body_over_the_cap_is_refused() {
    let port = server().await;
    let tool = HttpFetch::get_only(config()).unwrap();
    let e = tool
        .run(json!({"url": format!("http://127.0.0.1:{port}/big")}))
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            HttpError::TooLarge {
                limit: 1_048_576,
                ..
            }
        ),
        "{e:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_server_that_never_answers_times_out() {
    let port = server().await;
    let tool = HttpFetch::get_only(config().with_timeout(Duration::from_secs(5))).unwrap();
    let e = tool
        .run(json!({"url": format!("http://127.0.0.1:{port}/hang")}))
        .await
        .unwrap_err();
    assert!(matches!(ToolError::from(e), ToolError::TimedOut { .. }));
}

#[tokio::test]
async fn get_only_is_read_only_and_refuses_post() {
    let port = server().await;
    let get = HttpFetch::get_only(config()).unwrap();
    assert!(get.spec().annotations().is_read_only());
    let e = get
        .run(json!({"url": format!("http://127.0.0.1:{port}/echo"), "method": "POST", "body": "x"}))
        .await
        .unwrap_err();
    assert!(matches!(e, HttpError::MethodNotAllowed { .. }), "{e:?}");

    let post = HttpFetch::new(config()).unwrap();
    assert!(!post.spec().annotations().is_read_only());
    let out = post
        .run(json!({
            "url": format!("http://127.0.0.1:{port}/echo"),
            "method": "POST",
            "body": "payload",
            "headers": {"x-rein": "1"}
        }))
        .await
        .unwrap();
    let echoed = out["body"].as_str().unwrap();
    assert!(echoed.starts_with("POST /echo"), "{echoed}");
    assert!(
        echoed.contains("x-rein: 1") && echoed.ends_with("payload"),
        "{echoed}"
    );
    let out = post
        .call(json!({"url": format!("http://127.0.0.1:{port}/ok")}))
        .await
        .unwrap();
    assert_eq!(out.value()["body"], "hello");
}
