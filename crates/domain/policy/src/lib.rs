//! rein's policy domain: budgets, eligibility, transitions, approvals and the Approver port
