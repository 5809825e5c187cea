//! Recording a person's answer or verdict without driving the run: for stores many
//! processes share, where a worker drives the run and the process that answered never runs
//! the agent's tools (nor holds its keys).

use rein_policy::ApprovalResponse;
use rein_run::{Run, RunId};

use crate::engine::Engine;
use crate::error::EngineError;
use crate::open;

impl Engine {
    /// Records `answer` to the question run `id` waits for (with who gave it, `by`, in the
    /// ledger's `human_input_received`) and saves the run, running again, **without driving
    /// it**: another engine on the same stores drives it on with [`Engine::resume`] (a
    /// worker that claims it from a queue), as after a restart. Nothing else runs here.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use rein_engine::Engine;
    /// use rein_planner::{ScriptStep, ScriptedPlanner};
    /// use rein_run::{Decision, RunStatus, State};
    ///
    /// let engine = Engine::builder()
    ///     .planner(ScriptedPlanner::new([
    ///         ScriptStep::expect(State::Intake, Decision::ask_human("ship it?", ["yes", "no"])),
    ///         ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "asked")),
    ///         ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "answered")),
    ///         ScriptStep::expect(State::Decide, Decision::finish("shipped", serde_json::json!("ok"))),
    ///     ]))
    ///     .build()?;
    /// let run = engine.run("Ship the release").await?; // paused on its question
    /// let run = engine.record_answer(run.id(), "yes", Some("alice")).await?;
    /// assert_eq!(run.status(), RunStatus::Running); // recorded, not driven
    /// let run = engine.resume(run.id()).await?; // a worker, on the same stores
    /// assert_eq!(run.status(), RunStatus::Completed);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`EngineError::InvalidAnswer`] for an answer not among the options, or a run that
    /// waits for no answer (nothing is recorded); [`EngineError::ChildAwaitsAnswer`] when
    /// the question is a child run's (drive the run with
    /// [`Engine::resume_with_input`] instead); or as [`Engine::resume`].
    pub async fn record_answer(
        &self,
        id: &RunId,
        answer: &str,
        by: Option<&str>,
    ) -> Result<Run, EngineError> {
        {
            let _guard = self.shared.acquire(id)?;
            let stopped = open::stopped(&self.shared, id).await?;
            // A child's question is answered by forwarding the answer as the run is
            // driven: recorded alone, it would reach no one.
            if let Some(child) = &stopped.rec.proj.tree.open {
                return Err(EngineError::ChildAwaitsAnswer {
                    id: id.clone(),
                    child: child.child.clone(),
                });
            }
        }
        let (driver, _guard) = open::reopen_by(&self.shared, id, Some(answer), by, None).await?;
        Ok(driver.run().clone())
    }

    /// Records the verdict on the durable approval run `id` waits for and saves the run,
    /// **without driving it**: as [`Engine::approve`], but the granted call is not run
    /// here; another engine on the same stores runs it when it drives the run on with
    /// [`Engine::resume`] (a worker), with exactly the input the verdict names. A denial
    /// is recorded and the call rejected at once (the run fails, or the planner is told
    /// when the run is next driven).
    ///
    /// # Errors
    /// As [`Engine::approve`].
    pub async fn record_verdict(
        &self,
        id: &RunId,
        verdict: &ApprovalResponse,
    ) -> Result<Run, EngineError> {
        let _guard = self.shared.acquire(id)?;
        let mut driver = open::stopped(&self.shared, id).await?;
        // The granted call's step is left unsettled on the ledger: the engine that drives
        // the run next completes it, as after a restart.
        crate::durable::record(&mut driver, verdict).await?;
        driver.rec.persist().await?;
        Ok(driver.run().clone())
    }
}
