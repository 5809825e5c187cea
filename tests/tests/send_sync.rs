//! Compile-time guarantees of the facade: the types users hold across `.await`s and threads
//! are `Send + Sync`, the futures the engine returns are `Send` (so they can be spawned), and
//! every port is usable as a trait object. If this file compiles, the test has passed; the
//! `#[test]` functions only make sure the assertions are instantiated.

use std::sync::Arc;

use rein::ledger::ReplayReport;
use rein::planner::DynPlanner;
use rein::policy::DynApprover;
use rein::store::{
    DynArtifactStore, DynLedgerStore, DynRunStore, MemoryArtifactStore, MemoryLedgerStore,
    MemoryRunStore,
};
use rein::tool::DynTool;
use rein::{
    BuildError, Engine, EngineBuilder, EngineError, FnTool, Ledger, Run, RunEvent, RunEvents,
    RunHandle, RunId, ScriptedPlanner,
};

fn send_sync<T: Send + Sync>() {}
fn send<T: Send>() {}
fn static_error<E: std::error::Error + Send + Sync + 'static>() {}
fn send_value<T: Send>(_: &T) {}

#[test]
fn facade_types_are_send_and_sync() {
    send_sync::<Engine>();
    send_sync::<RunHandle>();
    send_sync::<Run>();
    send_sync::<RunId>();
    send_sync::<Ledger>();
    send_sync::<RunEvent>();
    send_sync::<ReplayReport>();
    send_sync::<FnTool>();
    send::<RunEvents>();
    send::<EngineBuilder>();
}

#[test]
fn errors_can_cross_threads_and_be_boxed() {
    static_error::<EngineError>();
    static_error::<BuildError>();
    static_error::<rein::ToolError>();
    static_error::<rein::PlannerError>();
    static_error::<rein::ApproverError>();
    static_error::<rein::store::LedgerStoreError>();
    static_error::<rein::store::RunStoreError>();
    static_error::<rein::store::ArtifactError>();
}

#[test]
fn engine_futures_are_send() {
    let engine = Engine::builder()
        .planner(ScriptedPlanner::new([]))
        .build()
        .expect("engine builds");
    let id: RunId = "r".parse().expect("run id");
    let ledger = Ledger::new(id.clone());
    // Built, checked, and dropped unpolled.
    send_value(&engine.run("goal"));
    send_value(&engine.start("goal"));
    send_value(&engine.resume(&id));
    send_value(&engine.resume_with_input(&id, "yes"));
    send_value(&engine.start_resume(&id, None));
    send_value(&engine.ledger(&id));
    send_value(&engine.load_run(&id));
    send_value(&engine.list_runs());
    send_value(&engine.replay(&ledger));
}

/// Every port has an object-safe twin, implemented for every implementation of the port.
fn ports_are_dyn_compatible(
    _: &dyn DynTool,
    _: &dyn DynPlanner,
    _: &dyn DynApprover,
    _: &dyn DynRunStore,
    _: &dyn DynLedgerStore,
    _: &dyn DynArtifactStore,
) {
}

#[test]
fn implementations_coerce_to_their_ports() {
    let tool = FnTool::builder("t")
        .handler(|v: rein::Value| async move { Ok(v) })
        .build()
        .expect("a tool");
    let tool: Arc<dyn DynTool> = Arc::new(tool);
    let planner: Arc<dyn DynPlanner> = Arc::new(ScriptedPlanner::new([]));
    let approver: Arc<dyn DynApprover> = Arc::new(rein::AutoApprover);
    let runs: Arc<dyn DynRunStore> = Arc::new(MemoryRunStore::new());
    let ledgers: Arc<dyn DynLedgerStore> = Arc::new(MemoryLedgerStore::new());
    let artifacts: Arc<dyn DynArtifactStore> = Arc::new(MemoryArtifactStore::new());
    ports_are_dyn_compatible(
        &*tool,
        &*planner,
        &*approver,
        &*runs,
        &*ledgers,
        &*artifacts,
    );
    // The engine takes shared ports as they are.
    let engine = Engine::builder()
        .shared_tool(tool)
        .shared_planner(planner)
        .shared_approver(approver)
        .build();
    assert!(engine.is_ok());
}

/// The closure tool's old names still compile for one release, as deprecated aliases:
/// `rein::Tool::builder(..)` builds the same `FnTool`.
#[test]
#[allow(deprecated)]
fn the_old_closure_tool_names_are_aliases_of_fn_tool() {
    let builder: rein::ToolBuilder = rein::Tool::builder("old");
    let tool: rein::Tool = builder
        .handler(|v: rein::Value| async move { Ok(v) })
        .build()
        .expect("a tool");
    let tool: FnTool = tool;
    assert_eq!(tool.spec().name().as_str(), "old");
}
