//! rein's ledger domain: the hash-chained, append-only audit trail of a run and the LedgerStore port
