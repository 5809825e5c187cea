//! `Lifecycle`: where a run is in its seven states, and the guarded way to move it.

use std::fmt;

use rein_policy::{Budget, Transitions};
use rein_run::{BudgetUsage, State};

use crate::machine::{self, Answer, Running};
use crate::{LifecycleError, TransitionError};

/// A run's lifecycle: its current [`State`] and the [`Transitions`] table that guards it.
///
/// Every move goes through [`Lifecycle::transition`], which either moves and returns the
/// [`Transition`] it made, or refuses with a [`TransitionError`] and stays put. A refusal is
/// never silent.
///
/// The table is the run's for its whole life (narrowing a live run's policy never changes
/// it); budgets and their use are passed with each request, so the guard into `act` always
/// sees the run's current figures. [`Lifecycle::fail`] ends the run in
/// `failed` from any working state, whatever the table says: a run's policy fails it
/// (a budget, a deadline, a tool error, an abort) without the planner asking to move.
///
/// ```
/// use rein_policy::{Budget, Transitions};
/// use rein_run::{BudgetUsage, State};
/// use rein_statemachine::Lifecycle;
///
/// // Resume a run persisted in `act`.
/// let mut run = Lifecycle::new(State::Act, Transitions::default())?;
/// let t = run.transition(State::Validate, &Budget::new(), &BudgetUsage::default())?;
/// assert_eq!((t.from, t.to), (State::Act, State::Validate));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Lifecycle {
    machine: Running,
    transitions: Transitions,
}

/// An accepted move, as the state machine reported it after making it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Transition {
    /// The state the run left.
    pub from: State,
    /// The state the run entered.
    pub to: State,
}

impl Lifecycle {
    /// A lifecycle in `start`, guarded by `transitions`.
    ///
    /// `start` is `intake` for a new run, or the state a persisted run was in when it is
    /// resumed. Starting is not a transition: nothing is reported.
    ///
    /// # Errors
    /// [`LifecycleError::TerminalStart`] when `start` is `done` or `failed`.
    pub fn new(start: State, transitions: Transitions) -> Result<Self, LifecycleError> {
        if start.is_terminal() {
            return Err(LifecycleError::TerminalStart { state: start });
        }
        Ok(Self {
            machine: machine::start(start),
            transitions,
        })
    }

    /// The current state.
    #[must_use]
    pub fn state(&self) -> State {
        self.machine.state().state()
    }

    /// The table that guards the moves.
    #[must_use]
    pub const fn transitions(&self) -> &Transitions {
        &self.transitions
    }

    /// Ends the run in `failed` from any working state, whatever the table says, and reports
    /// the move: how the engine fails a run its policy stops (a budget, a deadline, a tool
    /// error, an abort), which is no move a planner asked for.
    ///
    /// ```
    /// use rein_policy::{Budget, Transitions};
    /// use rein_run::{BudgetUsage, State};
    /// use rein_statemachine::{Lifecycle, Transition};
    ///
    /// // A table without intake → failed: a run's policy can still fail it there.
    /// let table = Transitions::from_edges([(State::Intake, State::Done)])?;
    /// let mut run = Lifecycle::new(State::Intake, table)?;
    /// assert!(run.transition(State::Failed, &Budget::new(), &BudgetUsage::default()).is_err());
    /// assert_eq!(run.fail()?, Transition { from: State::Intake, to: State::Failed });
    /// assert!(run.fail().is_err(), "a terminal state has no way out");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`TransitionError::Refused`] from a terminal state (`done`, or `failed` already).
    pub fn fail(&mut self) -> Result<Transition, TransitionError> {
        self.force(State::Failed)
    }

    /// A lifecycle rebuilt from the moves a run's record shows, in order: it starts in
    /// `intake` and follows each move as it was made (each was checked when it was made, and
    /// the engine's own failures are in no table), then is guarded by `transitions`. It may end in a terminal state: a run whose end is on record, or
    /// whose move to its end is and whose last entry is not.
    ///
    /// ```
    /// use rein_policy::Transitions;
    /// use rein_run::State;
    /// use rein_statemachine::{Lifecycle, Transition};
    ///
    /// let moves = [
    ///     Transition { from: State::Intake, to: State::Explore },
    ///     Transition { from: State::Explore, to: State::Done },
    /// ];
    /// let run = Lifecycle::rebuild(moves, Transitions::default())?;
    /// assert_eq!(run.state(), State::Done);
    /// let gap = [Transition { from: State::Decide, to: State::Act }];
    /// assert!(Lifecycle::rebuild(gap, Transitions::default()).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`LifecycleError::Unfollowable`] naming the first move that does not start where the
    /// one before it ended, or that leaves a terminal state.
    pub fn rebuild(
        moves: impl IntoIterator<Item = Transition>,
        transitions: Transitions,
    ) -> Result<Self, LifecycleError> {
        let mut lifecycle = Self {
            machine: machine::start(State::Intake),
            transitions,
        };
        for (index, recorded) in moves.into_iter().enumerate() {
            let state = lifecycle.state();
            let followed = (recorded.from == state)
                .then(|| lifecycle.force(recorded.to).ok())
                .flatten();
            if followed != Some(recorded) {
                return Err(LifecycleError::Unfollowable {
                    index,
                    from: recorded.from,
                    to: recorded.to,
                    state,
                });
            }
        }
        Ok(lifecycle)
    }

    /// Moves to `to` whatever the table and budgets say (a terminal state still refuses).
    fn force(&mut self, to: State) -> Result<Transition, TransitionError> {
        match machine::force(&mut self.machine, to) {
            Answer::Accepted(transition) => Ok(transition),
            Answer::Refused(refused) => Err(TransitionError::Refused(refused)),
            Answer::Unanswered => Err(TransitionError::Unanswered {
                from: self.state(),
                to,
            }),
        }
    }

    /// Moves to `to` if the rules allow it, and reports the move.
    ///
    /// The rules, in order: nothing leaves a terminal state; the table must have the edge
    /// `state → to`; and when `to` is `act`, no limited budget of `budget` may be exhausted
    /// in `usage`.
    ///
    /// # Errors
    /// [`TransitionError::Refused`] naming from, to and the
    /// [`RefusalRule`](rein_policy::RefusalRule) that refused; the state is unchanged.
    pub fn transition(
        &mut self,
        to: State,
        budget: &Budget,
        usage: &BudgetUsage,
    ) -> Result<Transition, TransitionError> {
        match machine::request(&mut self.machine, to, &self.transitions, budget, usage) {
            Answer::Accepted(transition) => Ok(transition),
            Answer::Refused(refused) => Err(TransitionError::Refused(refused)),
            Answer::Unanswered => Err(TransitionError::Unanswered {
                from: self.state(),
                to,
            }),
        }
    }
}

#[expect(
    clippy::missing_fields_in_debug,
    reason = "the statig machine is shown as the state it is in"
)]
impl fmt::Debug for Lifecycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lifecycle")
            .field("state", &self.state())
            .field("transitions", &self.transitions)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use rein_policy::RefusalRule;
    use rein_run::BudgetName;

    use super::*;

    const WORKING: [State; 5] = [
        State::Intake,
        State::Explore,
        State::Decide,
        State::Act,
        State::Validate,
    ];

    fn unlimited() -> (Budget, BudgetUsage) {
        (Budget::new(), BudgetUsage::default())
    }

    /// A budget of one tool call, spent.
    fn exhausted() -> (Budget, BudgetUsage) {
        let budget = Budget::new().with_limit(BudgetName::TOOL_CALLS, 1);
        let mut usage = BudgetUsage::default();
        budget
            .charge(&mut usage, &BudgetName::TOOL_CALLS, 1)
            .unwrap();
        (budget, usage)
    }

    /// Asks `lifecycle` to move to `to` and checks the answer: `Ok(())` for an accepted move
    /// (reported as from → to, state now `to`), `Err(rule)` for a refusal (naming from, to
    /// and `rule`, state unchanged).
    fn check(
        lifecycle: &mut Lifecycle,
        to: State,
        (budget, usage): &(Budget, BudgetUsage),
        expect: Result<(), RefusalRule>,
    ) {
        let from = lifecycle.state();
        let got = lifecycle.transition(to, budget, usage);
        match expect {
            Ok(()) => {
                assert_eq!(got, Ok(Transition { from, to }), "{from} → {to}");
                assert_eq!(lifecycle.state(), to);
            }
            Err(rule) => {
                let err = got.expect_err("refused");
                let refused = err.refusal().expect("refused by a rule");
                assert_eq!((refused.from, refused.to), (from, to));
                assert_eq!(refused.rule, rule, "{err}");
                assert_eq!(lifecycle.state(), from, "a refusal must not move the run");
            }
        }
    }

    fn not_in_table(allowed: impl Into<Vec<State>>) -> Result<(), RefusalRule> {
        Err(RefusalRule::NotInTable {
            allowed: allowed.into(),
        })
    }

    #[test]
    fn the_default_path_is_accepted_and_reported() {
        let mut lc = Lifecycle::new(State::Intake, Transitions::default()).unwrap();
        let budget = unlimited();
        for to in [
            State::Explore,
            State::Decide,
            State::Act,
            State::Validate,
            State::Explore,
            State::Decide,
            State::Act,
            State::Validate,
            State::Done,
        ] {
            check(&mut lc, to, &budget, Ok(()));
        }
    }

    #[test]
    fn a_move_not_in_the_table_is_refused_and_the_run_stays() {
        let mut lc = Lifecycle::new(State::Explore, Transitions::default()).unwrap();
        check(
            &mut lc,
            State::Act,
            &unlimited(),
            not_in_table([State::Decide, State::Failed]),
        );
        let err = lc
            .transition(State::Act, &Budget::new(), &BudgetUsage::default())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "transition explore → act refused: not in the transition table; from explore the run may go to decide, failed"
        );
    }

    #[test]
    fn a_self_transition_is_refused() {
        for state in WORKING {
            let mut lc = Lifecycle::new(state, Transitions::default()).unwrap();
            let allowed: Vec<State> = Transitions::default().targets(state).collect();
            check(&mut lc, state, &unlimited(), not_in_table(allowed));
        }
    }

    #[test]
    fn terminal_states_refuse_every_move() {
        for end in [State::Done, State::Failed] {
            let mut lc = Lifecycle::new(State::Decide, Transitions::default()).unwrap();
            check(&mut lc, end, &unlimited(), Ok(()));
            for to in State::ALL {
                check(&mut lc, to, &unlimited(), Err(RefusalRule::FromTerminal));
            }
            let err = lc
                .transition(State::Explore, &Budget::new(), &BudgetUsage::default())
                .unwrap_err();
            assert!(
                err.to_string().contains("terminal states have no way out"),
                "{err}"
            );
        }
    }

    #[test]
    fn an_exhausted_budget_refuses_act_and_nothing_else() {
        let mut lc = Lifecycle::new(State::Decide, Transitions::default()).unwrap();
        let spent = exhausted();
        check(
            &mut lc,
            State::Act,
            &spent,
            Err(RefusalRule::BudgetExhausted {
                name: BudgetName::TOOL_CALLS,
            }),
        );
        let err = lc.transition(State::Act, &spent.0, &spent.1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "transition decide → act refused: budget `tool_calls` is exhausted, so the run may not enter act"
        );
        // With budget left, act is fine; once there, leaving act does not need budget.
        check(&mut lc, State::Act, &unlimited(), Ok(()));
        check(&mut lc, State::Validate, &spent, Ok(()));
        check(&mut lc, State::Done, &spent, Ok(()));
    }

    #[test]
    fn the_table_is_checked_before_the_budget() {
        let mut lc = Lifecycle::new(State::Intake, Transitions::default()).unwrap();
        check(
            &mut lc,
            State::Act,
            &exhausted(),
            not_in_table([State::Explore, State::Failed]),
        );
    }

    #[test]
    fn a_run_resumes_in_any_working_state() {
        for start in WORKING {
            let mut lc = Lifecycle::new(start, Transitions::default()).unwrap();
            assert_eq!(lc.state(), start);
            for to in Transitions::default().targets(start) {
                let mut again = Lifecycle::new(start, Transitions::default()).unwrap();
                check(&mut again, to, &unlimited(), Ok(()));
            }
            check(&mut lc, State::Failed, &unlimited(), Ok(()));
        }
    }

    #[test]
    fn a_terminal_start_is_refused() {
        for end in [State::Done, State::Failed] {
            let err = Lifecycle::new(end, Transitions::default()).unwrap_err();
            assert_eq!(err, LifecycleError::TerminalStart { state: end });
            assert!(
                err.to_string()
                    .starts_with(&format!("cannot start a lifecycle in {end}"))
            );
        }
    }

    #[test]
    fn fail_ends_a_working_state_whatever_the_table_and_budget() {
        let only_done = Transitions::from_edges([
            (State::Intake, State::Explore),
            (State::Explore, State::Done),
        ])
        .unwrap();
        for start in [State::Intake, State::Explore] {
            let mut lc = Lifecycle::new(start, only_done).unwrap();
            let spent = exhausted();
            check(
                &mut lc,
                State::Failed,
                &spent,
                Err(RefusalRule::NotInTable {
                    allowed: only_done.targets(start).collect(),
                }),
            );
            assert_eq!(
                lc.fail(),
                Ok(Transition {
                    from: start,
                    to: State::Failed
                })
            );
            assert_eq!(lc.state(), State::Failed);
        }
    }

    #[test]
    fn fail_is_refused_from_a_terminal_state() {
        for end in [State::Done, State::Failed] {
            let mut lc = Lifecycle::new(State::Validate, Transitions::default()).unwrap();
            check(&mut lc, end, &unlimited(), Ok(()));
            let err = lc.fail().unwrap_err();
            assert_eq!(
                err.refusal().map(|r| (&r.rule, r.from)),
                Some((&RefusalRule::FromTerminal, end))
            );
            assert_eq!(lc.state(), end);
        }
    }

    #[test]
    fn a_rebuilt_lifecycle_follows_the_recorded_moves_whatever_the_table_says_now() {
        let moves = [
            Transition {
                from: State::Intake,
                to: State::Explore,
            },
            Transition {
                from: State::Explore,
                to: State::Decide,
            },
        ];
        // A table without intake → explore: the record is followed anyway (each move was
        // checked when it was made; the engine's own failures are in no table).
        let narrowed =
            Transitions::from_edges([(State::Decide, State::Done), (State::Intake, State::Failed)])
                .unwrap();
        let mut lc = Lifecycle::rebuild(moves, narrowed).unwrap();
        assert_eq!(lc.state(), State::Decide);
        check(
            &mut lc,
            State::Act,
            &unlimited(),
            not_in_table([State::Done]),
        );
        check(&mut lc, State::Done, &unlimited(), Ok(()));
        assert_eq!(
            Lifecycle::rebuild([], Transitions::default())
                .unwrap()
                .state(),
            State::Intake
        );
    }

    #[test]
    fn a_rebuild_refuses_a_move_that_does_not_follow() {
        let moves = [
            Transition {
                from: State::Intake,
                to: State::Failed,
            },
            Transition {
                from: State::Failed,
                to: State::Explore,
            },
        ];
        let err = Lifecycle::rebuild(moves, Transitions::default()).unwrap_err();
        assert_eq!(
            err,
            LifecycleError::Unfollowable {
                index: 1,
                from: State::Failed,
                to: State::Explore,
                state: State::Failed,
            }
        );
        let gap = [Transition {
            from: State::Explore,
            to: State::Decide,
        }];
        let err = Lifecycle::rebuild(gap, Transitions::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "recorded move 0 (explore → decide) cannot be followed from intake: the record of the \
             run's states is broken"
        );
    }

    #[test]
    fn lifecycle_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<Lifecycle>();
        assert_send_sync::<TransitionError>();
        assert_send_sync::<LifecycleError>();
    }

    #[test]
    fn debug_shows_the_state_and_the_table() {
        let lc = Lifecycle::new(State::Validate, Transitions::default()).unwrap();
        let text = format!("{lc:?}");
        assert!(text.starts_with("Lifecycle { state: Validate"), "{text}");
    }
}
