-- restproof operation journal, schema version 4: what each move decided, stored with it
-- (sink.journal.outcome_records), so the result of a run is read from the journal, never from
-- process memory; the transition log keeps the history of decisions; audited operator decisions
-- (abandon a child, transfer its capacity to the incident reserve) are append-only.
-- Forward-only: never edit once released.
ALTER TABLE operations
    ADD COLUMN decided_error_code         text,
    ADD COLUMN decided_exit_class         smallint CHECK (decided_exit_class IN (2, 3, 4, 5)),
    ADD COLUMN decided_reason             text,
    ADD COLUMN accepted_rows              bigint CHECK (accepted_rows >= 0),
    ADD COLUMN rejected_rows              bigint CHECK (rejected_rows >= 0),
    ADD COLUMN rejection_proven           boolean NOT NULL DEFAULT false,
    ADD COLUMN receiver_reported_partial  boolean NOT NULL DEFAULT false,
    ADD COLUMN next_check_at              timestamptz,
    ADD COLUMN abandoned                  boolean NOT NULL DEFAULT false;
ALTER TABLE transition_log
    ADD COLUMN error_code  text,
    ADD COLUMN exit_class  smallint,
    ADD COLUMN reason      text;
CREATE TABLE operator_decisions (
    operation_id       text NOT NULL REFERENCES operations (operation_id),
    reconciliation_id  text NOT NULL,
    kind               text NOT NULL CHECK (kind IN ('abandon', 'transfer_capacity')),
    actor_id           text NOT NULL,
    evidence_digest    text NOT NULL,
    released_attempts  text[] NOT NULL,
    decided_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (operation_id, reconciliation_id)
);
