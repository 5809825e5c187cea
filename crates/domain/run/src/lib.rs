//! rein's run domain: the Run aggregate, states, decisions, evidence, and the Planner and RunStore ports
