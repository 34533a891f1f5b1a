-- restproof operation journal, schema version 1 (forward-only: never edit a released migration;
-- add 0002_*.sql instead). Runs with search_path = <journal schema>, <schema of btree_gist>.

-- Journal epoch and the environment-wide mutation gate (one row).
CREATE TABLE journal_epoch (
    singleton           boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    journal_epoch       bigint NOT NULL CHECK (journal_epoch >= 1),
    mutation_gate       text NOT NULL CHECK (mutation_gate IN ('OPEN', 'BLOCKED')),
    gate_reason         text NOT NULL DEFAULT '',
    attested_by         text,
    attestation_digest  text,
    changed_at          timestamptz NOT NULL DEFAULT now()
);
INSERT INTO journal_epoch (journal_epoch, mutation_gate) VALUES (1, 'OPEN');

-- Immutable topology of an admitted parent, plus its promoted checkpoint frontier.
CREATE TABLE parents (
    parent_id                text PRIMARY KEY,
    operation_namespace      text NOT NULL,
    parent_delivery_key      text NOT NULL,
    parent_plan_digest       text NOT NULL,
    plan_ref                 text NOT NULL,
    profile_contract_digest  text NOT NULL,
    child_count              integer NOT NULL CHECK (child_count > 0),
    frontier_order           integer,
    frontier_scope_end       timestamptz,
    admitted_at              timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT parents_delivery_key_unique UNIQUE (operation_namespace, parent_delivery_key)
);

-- Physical effect-conflict domains: one lock row each, taken FOR UPDATE in canonical (sorted)
-- order by every code path that decides on overlap or raises the applied-generation map.
CREATE TABLE rest_delivery_effect_domain_lock (
    effect_conflict_domain  text PRIMARY KEY,
    created_at              timestamptz NOT NULL DEFAULT now()
);

-- Child operations: immutable descriptor, effect scope, five outcome axes and the CAS revision.
CREATE TABLE operations (
    operation_id                    text PRIMARY KEY,
    parent_id                       text NOT NULL REFERENCES parents (parent_id),
    operation_namespace             text NOT NULL,
    delivery_key                    text NOT NULL,
    child_ordinal                   integer NOT NULL CHECK (child_ordinal >= 0),
    mutation_intent_digest          text NOT NULL,
    payload_ref                     text NOT NULL,
    payload_digest                  text NOT NULL,
    frontier_order                  integer NOT NULL CHECK (frontier_order >= 0),
    coverage_proof_digest           text NOT NULL,
    effect_conflict_domain          text NOT NULL REFERENCES rest_delivery_effect_domain_lock,
    mutation_kind                   text NOT NULL CHECK (mutation_kind IN ('partition_replace', 'incremental_append')),
    -- effect scope, canonical half-open [start, end)
    scope_range                     tstzrange NOT NULL CHECK (lower_inc(scope_range) AND NOT upper_inc(scope_range)),
    generation_interval_end         timestamptz NOT NULL,
    generation_correction_revision  integer NOT NULL CHECK (generation_correction_revision >= 0),
    execution_state                 text NOT NULL,
    remote_effect                   text NOT NULL,
    acknowledgement_state           text NOT NULL,
    verification_state              text NOT NULL,
    checkpoint_state                text NOT NULL,
    revision                        bigint NOT NULL DEFAULT 0 CHECK (revision >= 0),
    attempt_count                   integer NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
    observation_count               integer NOT NULL DEFAULT 0 CHECK (observation_count >= 0),
    last_reconciliation_id          text,
    admitted_epoch                  bigint NOT NULL,
    updated_at                      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT operations_delivery_key_unique UNIQUE (operation_namespace, delivery_key),
    CONSTRAINT operations_child_ordinal_unique UNIQUE (parent_id, child_ordinal)
);
-- Overlap queries: same domain (btree_gist equality) and range && range.
CREATE INDEX operations_effect_scope_gist ON operations USING gist (effect_conflict_domain, scope_range);

-- Audit of every CAS transition: who moved which revision along which contract transition.
CREATE TABLE transition_log (
    operation_id       text NOT NULL REFERENCES operations (operation_id),
    revision           bigint NOT NULL,
    transition_id      text NOT NULL,
    actor_kind         text NOT NULL,
    actor_id           text NOT NULL,
    reconciliation_id  text,
    evidence_digest    text,
    recorded_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (operation_id, revision)
);

-- Append-only attempts, each bound to its MAY_ATTEMPT marker digest, expected revision and epoch.
CREATE TABLE attempts (
    operation_id        text NOT NULL REFERENCES operations (operation_id),
    attempt_ordinal     integer NOT NULL CHECK (attempt_ordinal >= 1),
    attempt_id          text NOT NULL UNIQUE,
    marker_digest       text NOT NULL,
    expected_revision   bigint NOT NULL,
    journal_epoch       bigint NOT NULL,
    capacity_scope      text NOT NULL,
    capacity_released   boolean NOT NULL DEFAULT false,
    created_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (operation_id, attempt_ordinal)
);

-- Receipt identity only (never a body); one per operation.
CREATE TABLE receipts (
    operation_id    text PRIMARY KEY REFERENCES operations (operation_id),
    receipt_id      text NOT NULL,
    receipt_digest  text NOT NULL,
    recorded_at     timestamptz NOT NULL DEFAULT now()
);

-- Verbose, read-only observations (retention may delete them once the operation is FINALIZED).
CREATE TABLE observations (
    operation_id           text NOT NULL REFERENCES operations (operation_id),
    observation_ordinal    integer NOT NULL CHECK (observation_ordinal >= 1),
    acknowledgement_state  text NOT NULL,
    evidence_digest        text NOT NULL,
    observed_at            timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (operation_id, observation_ordinal)
);

-- mutation / observation / checkpoint leases, decided on the database clock.
CREATE TABLE leases (
    lease_kind     text NOT NULL CHECK (lease_kind IN ('mutation', 'observation', 'checkpoint')),
    subject_id     text NOT NULL,
    owner          text,
    expires_at     timestamptz NOT NULL,
    fencing_token  bigint NOT NULL CHECK (fencing_token >= 1),
    PRIMARY KEY (lease_kind, subject_id)
);

-- Normalized interval map: highest FULLY_APPLIED generation per piece of conflict scope.
-- Pieces never overlap within a domain (exclusion constraint); retention never deletes them.
CREATE TABLE applied_generation_map (
    effect_conflict_domain          text NOT NULL REFERENCES rest_delivery_effect_domain_lock,
    scope_range                     tstzrange NOT NULL,
    generation_interval_end         timestamptz NOT NULL,
    generation_correction_revision  integer NOT NULL,
    CONSTRAINT applied_generation_map_no_overlap
        EXCLUDE USING gist (effect_conflict_domain WITH =, scope_range WITH &&)
);

-- Remote-job semaphore. One row per slot: a reservation claims a free row with
-- FOR UPDATE SKIP LOCKED, so concurrent submits never queue on one counter row. Total rows never
-- exceed `slots` except after a shrink below the held count; releases then delete rows.
CREATE TABLE capacity_scopes (
    capacity_scope  text PRIMARY KEY,
    slots           integer NOT NULL CHECK (slots >= 0)
);

CREATE TABLE capacity_slots (
    capacity_scope  text NOT NULL REFERENCES capacity_scopes (capacity_scope),
    slot_no         integer NOT NULL,
    attempt_id      text UNIQUE REFERENCES attempts (attempt_id),
    operation_id    text REFERENCES operations (operation_id),
    reserved_at     timestamptz,
    PRIMARY KEY (capacity_scope, slot_no)
);
CREATE INDEX capacity_slots_by_operation ON capacity_slots (operation_id) WHERE operation_id IS NOT NULL;
-- A reservation finds a free slot through this partial index, never by scanning held slots.
CREATE INDEX capacity_slots_free ON capacity_slots (capacity_scope, slot_no) WHERE attempt_id IS NULL;

-- Critical commits that committed locally while their synchronous replication was unconfirmed.
CREATE TABLE unconfirmed_critical_commits (
    detection_seq     bigserial PRIMARY KEY,
    transaction_name  text NOT NULL,
    subject_id        text NOT NULL,
    detected_at       timestamptz NOT NULL DEFAULT now()
);

-- Compact effect authority per operation. Operations, parents and receipts are never deleted by
-- retention, so this view outlives payloads and verbose observations.
CREATE VIEW operation_tombstones AS
SELECT o.operation_id, o.operation_namespace, o.delivery_key, o.mutation_intent_digest,
       o.generation_interval_end, o.generation_correction_revision, o.effect_conflict_domain,
       o.scope_range, o.mutation_kind, o.payload_digest, p.profile_contract_digest,
       o.remote_effect, o.verification_state, o.checkpoint_state, r.receipt_id
FROM operations o
JOIN parents p ON p.parent_id = o.parent_id
LEFT JOIN receipts r ON r.operation_id = o.operation_id;
