-- restproof operation journal, schema version 2: orphan MAY_ATTEMPT markers an operator retired
-- with evidence. Append-only (the journal never updates or deletes a row); a retired ordinal is
-- consumed for good. Forward-only: never edit once released.
CREATE TABLE retired_markers (
    operation_namespace  text NOT NULL,
    operation_id         text NOT NULL REFERENCES operations (operation_id),
    attempt_ordinal      integer NOT NULL CHECK (attempt_ordinal >= 1),
    attempt_id           text NOT NULL UNIQUE,
    marker_digest        text NOT NULL,
    reconciliation_id    text NOT NULL,
    evidence_digest      text NOT NULL,
    actor_id             text NOT NULL,
    retired_at           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (operation_id, attempt_ordinal),
    CONSTRAINT retired_markers_reconciliation_unique UNIQUE (operation_id, reconciliation_id)
);
CREATE INDEX retired_markers_by_namespace ON retired_markers (operation_namespace);
