//! The statig machine behind [`Lifecycle`](crate::Lifecycle): one statig state per lifecycle
//! state, the guard every request passes, and the hook that reports accepted transitions.
#![expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "statig's state handlers and hooks take the event and states by reference"
)]
//!
//! Everything statig is confined to this module. The policy (transition table, budgets and
//! usage) comes in with every request through the context, so changing it needs no access to
//! the machine's insides (which statig only gives out as `unsafe`).

use rein_policy::{Budget, RefusalRule, TransitionRefused, Transitions};
use rein_run::{BudgetUsage, State};
use statig::Outcome;
use statig::blocking::{InitializedStateMachine, IntoStateMachineExt as _};
use statig::state_machine;

use crate::Transition;

/// The machine's shared storage. Empty: the policy arrives with each request.
#[derive(Debug, Default)]
pub(crate) struct Machine;

/// A started machine, ready for requests.
pub(crate) type Running = InitializedStateMachine<Machine>;

/// One request: move to `to`, checked by the guard, or (`forced`) whatever the table and
/// budgets say (only a terminal state still refuses).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request {
    to: State,
    forced: bool,
}

/// What a request is checked against, and the machine's answer.
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    transitions: &'a Transitions,
    budget: &'a Budget,
    usage: &'a BudgetUsage,
    /// Set by `after_transition` once statig has moved.
    accepted: Option<Transition>,
    /// Set by the state handler that refused.
    refused: Option<TransitionRefused>,
}

/// What the machine answered to a request.
#[derive(Debug)]
pub(crate) enum Answer {
    /// It moved.
    Accepted(Transition),
    /// It refused, and stayed where it was.
    Refused(TransitionRefused),
    /// Neither: statig treated the request as handled without a handler answering. The
    /// handlers below always answer, so this never happens; the wrapper still turns it into
    /// an error so that a swallowed request can never pass for success.
    Unanswered,
}

#[state_machine(
    initial = "Node::intake()",
    state(name = "Node", derive(Debug, Clone, Copy, PartialEq, Eq)),
    superstate(name = "Group", derive(Debug)),
    after_transition = "Self::after_transition",
    visibility = "pub(crate)"
)]
impl Machine {
    #[state]
    fn intake(event: &Request, context: &mut Ctx<'_>) -> Outcome<Node> {
        guard(State::Intake, event, context)
    }

    #[state]
    fn explore(event: &Request, context: &mut Ctx<'_>) -> Outcome<Node> {
        guard(State::Explore, event, context)
    }

    #[state]
    fn decide(event: &Request, context: &mut Ctx<'_>) -> Outcome<Node> {
        guard(State::Decide, event, context)
    }

    #[state]
    fn act(event: &Request, context: &mut Ctx<'_>) -> Outcome<Node> {
        guard(State::Act, event, context)
    }

    #[state]
    fn validate(event: &Request, context: &mut Ctx<'_>) -> Outcome<Node> {
        guard(State::Validate, event, context)
    }

    /// Terminal: refuses everything, whatever the table says.
    #[state]
    fn done(event: &Request, context: &mut Ctx<'_>) -> Outcome<Node> {
        stay_ended(State::Done, event, context)
    }

    /// Terminal: refuses everything, whatever the table says.
    #[state]
    fn failed(event: &Request, context: &mut Ctx<'_>) -> Outcome<Node> {
        stay_ended(State::Failed, event, context)
    }
}

impl Machine {
    /// Reports the move statig made. `after_transition`, not `before_transition`: in statig
    /// 0.4.1's blocking flavour the latter gets source and target swapped.
    fn after_transition(&mut self, source: &Node, target: &Node, context: &mut Ctx<'_>) {
        context.accepted = Some(Transition {
            from: source.state(),
            to: target.state(),
        });
    }
}

/// A working state's answer: move if the table (and, into `act`, the budget) allows it.
fn guard(from: State, event: &Request, context: &mut Ctx<'_>) -> Outcome<Node> {
    if event.forced {
        return Outcome::Transition(Node::of(event.to));
    }
    match context.check(from, event.to) {
        Ok(()) => Outcome::Transition(Node::of(event.to)),
        Err(refused) => {
            context.refused = Some(refused);
            Outcome::Handled
        }
    }
}

/// A terminal state's answer: no.
fn stay_ended(from: State, event: &Request, context: &mut Ctx<'_>) -> Outcome<Node> {
    context.refused = Some(TransitionRefused {
        from,
        to: event.to,
        rule: RefusalRule::FromTerminal,
    });
    Outcome::Handled
}

impl Node {
    /// The statig state for a lifecycle state.
    const fn of(state: State) -> Self {
        match state {
            State::Intake => Self::Intake {},
            State::Explore => Self::Explore {},
            State::Decide => Self::Decide {},
            State::Act => Self::Act {},
            State::Validate => Self::Validate {},
            State::Done => Self::Done {},
            State::Failed => Self::Failed {},
        }
    }

    /// The lifecycle state of a statig state.
    pub(crate) const fn state(&self) -> State {
        match self {
            Self::Intake {} => State::Intake,
            Self::Explore {} => State::Explore,
            Self::Decide {} => State::Decide,
            Self::Act {} => State::Act,
            Self::Validate {} => State::Validate,
            Self::Done {} => State::Done,
            Self::Failed {} => State::Failed,
        }
    }
}

impl<'a> Ctx<'a> {
    fn new(transitions: &'a Transitions, budget: &'a Budget, usage: &'a BudgetUsage) -> Self {
        Self {
            transitions,
            budget,
            usage,
            accepted: None,
            refused: None,
        }
    }

    /// The table first, then the budget guard into `act`.
    fn check(&self, from: State, to: State) -> Result<(), TransitionRefused> {
        self.transitions.check(from, to)?;
        if to == State::Act
            && let Some(name) = self.budget.first_exhausted(self.usage)
        {
            return Err(TransitionRefused {
                from,
                to,
                rule: RefusalRule::BudgetExhausted { name: name.clone() },
            });
        }
        Ok(())
    }
}

/// Starts a machine in `at` (any state; the caller refuses terminal ones). No hook runs, so
/// nothing is reported: resuming is not a transition.
pub(crate) fn start(at: State) -> Running {
    let mut machine = Machine.uninitialized_state_machine();
    *machine.state_mut() = Node::of(at);
    let (budget, usage) = (Budget::new(), BudgetUsage::default());
    machine.init_with_context(&mut Ctx::new(&Transitions::default(), &budget, &usage))
}

/// Asks `machine` to move to `to` under `transitions`, `budget` and `usage`.
pub(crate) fn request(
    machine: &mut Running,
    to: State,
    transitions: &Transitions,
    budget: &Budget,
    usage: &BudgetUsage,
) -> Answer {
    let mut context = Ctx::new(transitions, budget, usage);
    machine.handle_with_context(&Request { to, forced: false }, &mut context);
    answer(context)
}

/// Moves `machine` to `to` whatever the table and budgets say; only a terminal state
/// refuses. For the engine's own ends of a run and for following recorded moves.
pub(crate) fn force(machine: &mut Running, to: State) -> Answer {
    let (transitions, budget, usage) = (
        Transitions::default(),
        Budget::new(),
        BudgetUsage::default(),
    );
    let mut context = Ctx::new(&transitions, &budget, &usage);
    machine.handle_with_context(&Request { to, forced: true }, &mut context);
    answer(context)
}

/// The machine's answer, from what its handlers and hook left in `context`.
fn answer(context: Ctx<'_>) -> Answer {
    match (context.accepted, context.refused) {
        (Some(transition), _) => Answer::Accepted(transition),
        (None, Some(refused)) => Answer::Refused(refused),
        (None, None) => Answer::Unanswered,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_maps_to_its_node_and_back() {
        for state in State::ALL {
            assert_eq!(Node::of(state).state(), state);
            assert_eq!(start(state).state().state(), state);
        }
    }

    #[test]
    fn terminal_nodes_refuse_even_what_a_table_cannot_contain() {
        // A table can never hold an edge out of `done`; the node refuses on its own anyway.
        let mut machine = start(State::Done);
        let answer = request(
            &mut machine,
            State::Intake,
            &Transitions::default(),
            &Budget::new(),
            &BudgetUsage::default(),
        );
        assert!(
            matches!(
                answer,
                Answer::Refused(TransitionRefused {
                    rule: RefusalRule::FromTerminal,
                    ..
                })
            ),
            "{answer:?}"
        );
        assert_eq!(machine.state().state(), State::Done);
    }
}
