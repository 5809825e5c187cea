//! Artifact offload and integrity: an output larger than the inline limit goes to the artifact
//! store; evidence and ledger hold a reference whose id, size and checksum match the stored
//! bytes, and the store hands those bytes back verified.

mod support;

use std::sync::Arc;

use rein::ledger::EntryKind;
use rein::run::{EvidenceKind, Payload};
use rein::store::{
    ArtifactError, ArtifactId, ArtifactRef, ArtifactStore, Checksum, FsStores, MemoryArtifactStore,
    StoreOptions,
};
use rein::{
    Annotations, Decision, Engine, RunStatus, ScriptStep, ScriptedPlanner, State, Value, json,
};
use support::{constant, walk_to};

/// A memory artifact store the test can read after the engine wrote to it.
#[derive(Debug, Clone, Default)]
struct Shared(Arc<MemoryArtifactStore>);

impl ArtifactStore for Shared {
    async fn put(
        &self,
        bytes: Vec<u8>,
        options: StoreOptions,
    ) -> Result<ArtifactRef, ArtifactError> {
        self.0.put(bytes, options).await
    }
    async fn get(&self, id: &ArtifactId) -> Result<(ArtifactRef, Vec<u8>), ArtifactError> {
        self.0.get(id).await
    }
    async fn stat(&self, id: &ArtifactId) -> Result<ArtifactRef, ArtifactError> {
        self.0.stat(id).await
    }
}

fn big_output() -> Value {
    json!({"report": "x".repeat(1_000), "rows": (0..50).collect::<Vec<_>>()})
}

fn script() -> ScriptedPlanner {
    let mut steps = walk_to(State::Explore);
    steps.extend([
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("report", json!({}), "fetch"),
        ),
        ScriptStep::expect(
            State::Explore,
            Decision::transition(State::Decide, "have it"),
        ),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!(null))),
    ]);
    ScriptedPlanner::new(steps)
}

/// Runs the script on `engine` and returns the payload the evidence holds, after checking the
/// ledger holds the same and the run replays.
async fn payload_of(engine: &Engine) -> Payload {
    let run = engine.run("offload").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    let evidence = run
        .evidence()
        .iter()
        .find_map(|e| match &e.kind {
            EvidenceKind::ToolResult { output, .. } => Some(output.clone()),
            _ => None,
        })
        .expect("a tool result");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let recorded = ledger
        .entries()
        .iter()
        .find_map(|e| match e.event() {
            EntryKind::ToolResult { output, .. } => Some(output.clone()),
            _ => None,
        })
        .expect("a tool result entry");
    assert_eq!(recorded, evidence);
    let report = engine.replay(&ledger).await.expect("replay");
    assert!(report.matches(), "{:?}", report.divergence());
    evidence
}

/// Checks that `payload` references exactly the JSON of `output`, as stored in `store`.
async fn check(payload: &Payload, output: &Value, store: &impl ArtifactStore) {
    let Payload::Artifact(link) = payload else {
        panic!("expected an artifact, got {payload:?}");
    };
    let expected = serde_json::to_vec(output).expect("json");
    assert_eq!(link.size, expected.len() as u64);
    assert_eq!(link.content_type, "application/json");
    assert_eq!(link.id, ArtifactId::of(&expected).as_str());
    assert_eq!(link.checksum, Checksum::of(&expected).to_string());

    let id: ArtifactId = link.id.parse().expect("an artifact id");
    let (reference, bytes) = store.get(&id).await.expect("stored");
    assert_eq!(bytes, expected);
    reference.verify(&bytes).expect("checksum verifies");
    assert_eq!(reference.checksum().to_string(), link.checksum);
    assert_eq!(
        serde_json::from_slice::<Value>(&bytes).expect("json"),
        *output
    );
}

#[tokio::test]
async fn a_large_output_goes_to_the_artifact_store_and_comes_back_verified() {
    let (report, _) = constant("report", Annotations::read_only(), big_output());
    let store = Shared::default();
    let engine = Engine::builder()
        .tool(report)
        .planner(script())
        .artifact_store(store.clone())
        .inline_output_limit(64)
        .build()
        .expect("engine builds");
    let payload = payload_of(&engine).await;
    check(&payload, &big_output(), &store).await;
}

#[tokio::test]
async fn an_output_within_the_limit_stays_inline() {
    let small = json!({"ok": true});
    let (report, _) = constant("report", Annotations::read_only(), small.clone());
    let engine = Engine::builder()
        .tool(report)
        .planner(script())
        .inline_output_limit(64)
        .build()
        .expect("engine builds");
    assert_eq!(payload_of(&engine).await, Payload::Inline(small));
}

#[tokio::test]
async fn artifacts_on_disk_are_verified_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (report, _) = constant("report", Annotations::read_only(), big_output());
    let engine = Engine::builder()
        .tool(report)
        .planner(script())
        .filesystem(dir.path())
        .inline_output_limit(64)
        .build()
        .expect("engine builds");
    let payload = payload_of(&engine).await;
    let stores = FsStores::open(dir.path()).expect("stores");
    check(&payload, &big_output(), stores.artifacts()).await;

    // A damaged artifact is refused on the way out, never handed back.
    let Payload::Artifact(link) = &payload else {
        panic!("expected an artifact");
    };
    let id: ArtifactId = link.id.parse().expect("id");
    let path = stores.artifacts().content_path(&id);
    std::fs::write(&path, b"tampered").expect("overwrite");
    assert!(stores.artifacts().get(&id).await.is_err());
}

/// A tool that returns a small JSON output naming two attachments.
#[derive(Debug)]
struct Screenshot(rein::ToolSpec);

impl rein::tool::Tool for Screenshot {
    fn spec(&self) -> &rein::ToolSpec {
        &self.0
    }
    async fn call(&self, _input: Value) -> Result<rein::ToolOutput, rein::ToolError> {
        let png = rein::tool::Attachment::new("screen.png", "image/png", PNG.to_vec())
            .map_err(|e| rein::ToolError::failed(e.to_string()))?;
        let log = rein::tool::Attachment::new("log", "text/plain", b"line 1\nline 2\n".to_vec())
            .map_err(|e| rein::ToolError::failed(e.to_string()))?;
        rein::ToolOutput::new(json!({"see": ["screen.png", "log"]}))
            .with_attachment(png)
            .and_then(|o| o.with_attachment(log))
            .map_err(|e| rein::ToolError::failed(e.to_string()))
    }
}

const PNG: &[u8] = b"\x89PNG\r\n\x1a\nnot really an image";

#[tokio::test]
async fn attachments_become_artifacts_linked_in_the_ledger_before_the_result() {
    let spec = rein::ToolSpec::new("report".parse().expect("name"), "screenshots")
        .with_annotations(Annotations::read_only());
    let store = Shared::default();
    let engine = Engine::builder()
        .tool(Screenshot(spec))
        .planner(script())
        .artifact_store(store.clone())
        .build()
        .expect("engine builds");
    let run = engine.run("attach").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("the ledger verifies");
    let kinds: Vec<&str> = ledger.entries().iter().map(|e| e.event().name()).collect();
    let result = kinds
        .iter()
        .position(|k| *k == "tool_result")
        .expect("a result");
    // The links are on record before the result that names them (the result ends the step).
    assert_eq!(
        kinds[result - 2..result],
        ["tool_attachment", "tool_attachment"]
    );
    let mut seen = Vec::new();
    for entry in ledger.entries() {
        if let EntryKind::ToolAttachment {
            tool,
            attempt,
            name,
            link,
        } = entry.event()
        {
            assert_eq!((tool.as_str(), *attempt), ("report", 1));
            let id: ArtifactId = link.id.parse().expect("an artifact id");
            let (reference, bytes) = store.get(&id).await.expect("stored");
            reference.verify(&bytes).expect("checksum verifies");
            assert_eq!(link.size, bytes.len() as u64);
            assert_eq!(link.content_type, reference.content_type());
            assert_eq!(reference.name(), Some(name.as_str()));
            seen.push((name.clone(), link.content_type.clone(), bytes));
        }
    }
    assert_eq!(
        seen,
        [
            (
                "screen.png".to_owned(),
                "image/png".to_owned(),
                PNG.to_vec()
            ),
            (
                "log".to_owned(),
                "text/plain".to_owned(),
                b"line 1\nline 2\n".to_vec()
            ),
        ]
    );
    // The output itself stays inline and small; replay serves it from the ledger.
    let report = engine.replay(&ledger).await.expect("replay");
    assert!(report.matches(), "{:?}", report.divergence());
}

/// A batch's calls keep their attachments too: each call's links come before its result,
/// in the batch's order.
#[tokio::test]
async fn the_calls_of_a_batch_keep_their_attachments() {
    let spec = |name: &str| {
        rein::ToolSpec::new(name.parse().expect("name"), "screenshots")
            .with_annotations(Annotations::read_only())
    };
    let mut steps = walk_to(State::Explore);
    steps.extend([
        ScriptStep::expect(
            State::Explore,
            Decision::call_tools(
                [
                    rein::planner::ProposedCall::new("front", json!({}), "front page"),
                    rein::planner::ProposedCall::new("back", json!({}), "back page"),
                ],
                "both pages",
            ),
        ),
        ScriptStep::expect(
            State::Explore,
            Decision::transition(State::Decide, "have them"),
        ),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!(null))),
    ]);
    let store = Shared::default();
    let engine = Engine::builder()
        .tool(Screenshot(spec("front")))
        .tool(Screenshot(spec("back")))
        .planner(ScriptedPlanner::new(steps))
        .artifact_store(store.clone())
        .build()
        .expect("engine builds");
    let run = engine.run("attach in a batch").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("the ledger verifies");
    let trail: Vec<String> = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ToolAttachment { tool, name, .. } => Some(format!("{tool} {name}")),
            EntryKind::ToolResult { tool, .. } => Some(format!("{tool} result")),
            _ => None,
        })
        .collect();
    assert_eq!(
        trail,
        [
            "front screen.png",
            "front log",
            "front result",
            "back screen.png",
            "back log",
            "back result"
        ]
    );
    for entry in ledger.entries() {
        if let EntryKind::ToolAttachment { link, .. } = entry.event() {
            let id: ArtifactId = link.id.parse().expect("an artifact id");
            let (reference, bytes) = store.get(&id).await.expect("stored");
            reference.verify(&bytes).expect("checksum verifies");
        }
    }
}

#[test]
fn an_oversized_attachment_is_a_typed_error_not_a_buffer() {
    let over = vec![0; rein::tool::Attachment::MAX_BYTES + 1];
    assert!(matches!(
        rein::tool::Attachment::new("big", "application/octet-stream", over),
        Err(rein::tool::AttachmentError::TooLarge { size, limit, .. })
            if size == rein::tool::Attachment::MAX_BYTES + 1 && limit == rein::tool::Attachment::MAX_BYTES
    ));
    let mut output = rein::ToolOutput::new(json!(null));
    for i in 0..rein::ToolOutput::MAX_ATTACHMENTS {
        let a = rein::tool::Attachment::new(format!("a{i}"), "text/plain", vec![]).expect("valid");
        output = output.with_attachment(a).expect("room");
    }
    let one_more = rein::tool::Attachment::new("late", "text/plain", vec![]).expect("valid");
    assert!(matches!(
        output.with_attachment(one_more),
        Err(rein::tool::AttachmentError::TooMany { .. })
    ));
}

#[tokio::test]
async fn shell_output_past_its_cap_goes_to_an_artifact_the_inline_output_names() {
    use rein::shell::{ShellConfig, ShellGuard, ShellRun};
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = rein::tools::Workspace::open(dir.path()).expect("workspace");
    let guard = ShellGuard::new(["seq"], Vec::<&str>::new());
    let shell = ShellRun::new(ws, ShellConfig::new(guard).with_output_cap(100));
    let mut steps = walk_to(State::Act);
    steps.extend([
        ScriptStep::expect(
            State::Act,
            Decision::call_tool("shell.run", json!({"argv": ["seq", "1", "20000"]}), "count"),
        ),
        ScriptStep::expect(State::Act, Decision::fail("enough")),
    ]);
    let store = Shared::default();
    let engine = Engine::builder()
        .tool(shell)
        .approver(rein::AutoApprover)
        .planner(ScriptedPlanner::new(steps))
        .artifact_store(store.clone())
        .build()
        .expect("engine builds");
    let run = engine.run("count").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("the ledger verifies");
    let expected: String = (1..=20_000).map(|n| format!("{n}\n")).collect();
    let output = ledger
        .entries()
        .iter()
        .find_map(|e| match e.event() {
            EntryKind::ToolResult {
                output: Payload::Inline(v),
                ..
            } => Some(v.clone()),
            _ => None,
        })
        .expect("an inline result");
    assert_eq!(output["stdout"], expected[..100]);
    assert_eq!(output["stdout_bytes"], expected.len());
    assert_eq!(output["stdout_truncated"], true);
    assert_eq!(output["stdout_attachment"], "stdout");
    assert!(
        output["stdout_note"]
            .as_str()
            .is_some_and(|n| n.contains("attachment `stdout`")),
        "{output}"
    );
    assert_eq!(output.get("stderr_attachment"), None);
    let links: Vec<_> = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ToolAttachment { name, link, .. } => Some((name.clone(), link.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(links.len(), 1, "{links:?}");
    assert_eq!(links[0].0, "stdout");
    let id: ArtifactId = links[0].1.id.parse().expect("id");
    let (_, bytes) = store.get(&id).await.expect("stored");
    assert_eq!(bytes, expected.as_bytes());
}
